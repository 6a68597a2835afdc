// `benchfleet merge` (cli/merge.h, docs/sites.md) on real stores: each site's store made
// by a coordinator in process as its agents fill it (coordinator/coordinator_fixture.h),
// closed, then merged, and the merged store read by the read commands with --db.
#include "cli/merge.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/merge_tables.h"
#include "cli/reads.h"
#include "cli/report.h"
#include "common/median.h"
#include "coordinator/coordinator_fixture.h"
#include "coordinator/store/store.h"
#include "sqlite/schema.h"

namespace benchfleet {
namespace {

using namespace testing_fixture;

// Two configurations (batch 1 and 32), enough raw samples a side for the rank test.
const json kPullRequest = json::parse(
    R"({"name": "pr", "placement": "any", "matrix": {"model": "mlp", "batch_size": [1, 32]}})");
constexpr int kSamples = 30;

struct Output {
  int code;
  std::string out, err;
};

// Runs a command, capturing what it prints.
Output Capture(const std::function<int()>& command) {
  std::stringstream out, err;
  std::streambuf* old_out = std::cout.rdbuf(out.rdbuf());
  std::streambuf* old_err = std::cerr.rdbuf(err.rdbuf());
  const int code = command();
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  return {code, out.str(), err.str()};
}

double Steady(const json&) { return 10.0; }
double BatchSlower(const json& spec) { return spec.value("batch_size", 1) == 32 ? 13.0 : 10.0; }

class MergeTest : public CoordinatorTest {
 protected:
  // Starts the coordinator of site `name` on its store (made, or as a previous call
  // left it), runs `fill` against it, and closes it; returns the store's path.
  std::string Site(const std::string& name, const std::function<void()>& fill) {
    const std::filesystem::path path = dir_ / (name + ".db");
    sent_.clear();  // each store numbers its jobs from 1: offers of another are not its own
    answered_.clear();
    StartWithStoreAt(path);
    fill();
    coordinator_.reset();
    return path.string();
  }
  // Answers every job offered to agent `name` with kSamples samples around
  // `median_ms(spec)`; returns how many.
  int AnswerAll(const std::string& name, const std::function<double(const json&)>& median_ms,
                int at_most = 1000) {
    int answered = 0;
    for (int round = 0; round < 50 && answered < at_most; ++round) {
      coordinator_->Tick();
      const Sent* offer = LastTo(name + "/1", "job");
      if (!offer || answered_.count(offer->message.body["job_id"].get<int64_t>())) break;
      const json body = offer->message.body;  // a copy: sending moves sent_
      std::vector<double> samples;
      for (int i = 0; i < kSamples; ++i)
        samples.push_back(median_ms(body["spec"]) * (0.995 + 0.01 * i / (kSamples - 1)));
      json result = GoodResult(body["spec"]);
      result["stats"]["n"] = kSamples;
      result["stats"]["median_ms"] = Median(samples);
      result["stats"]["mean_ms"] = Median(samples);
      result["stats"]["min_ms"] = samples.front();
      result["stats"]["max_ms"] = samples.back();
      result["samples_ms"] = samples;
      FromAgent(name + "/1", {{"v", 1},
                              {"type", "result"},
                              {"job_id", body["job_id"]},
                              {"attempt", body["attempt"]},
                              {"result", result}});
      answered_.insert(body["job_id"].get<int64_t>());
      ++answered;
    }
    return answered;
  }
  // A sweep of kPullRequest, run by `agent` to its end (with the reruns of a regression
  // candidate, if it makes one).
  void Sweep(const std::string& agent, const std::function<double(const json&)>& median_ms) {
    Submit(kPullRequest);
    EXPECT_GE(AnswerAll(agent, median_ms), 2);
  }
  std::string out() const { return (dir_ / "merged.db").string(); }
  static json Rows(const std::string& path, const std::string& sql) {
    std::unique_ptr<Reads> reads = StoreFileReads(path);
    auto rows = reads->Query(sql);
    EXPECT_TRUE(rows.ok()) << sql << ": " << rows.status().ToString();
    return rows.ok() ? json(rows->rows) : json();
  }
  // Every row of every table of the merged store, as text: what "adds nothing" compares.
  static std::string Contents(const std::string& path) {
    std::string all;
    for (const json& table :
         Rows(path, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")) {
      if (table[0] == "sites") continue;  // merged_at and source say when and from where
      all +=
          table[0].get<std::string>() + ": " +
          Rows(path, "SELECT * FROM \"" + table[0].get<std::string>() + "\" ORDER BY 1, 2").dump() +
          "\n";
    }
    return all;
  }
  std::set<int64_t> answered_;
};

TEST_F(MergeTest, TwoFleetsMergeAndTheirSweepsCompare) {
  const std::string berlin = Site("berlin", [&] {
    Register("node-a", 0, "machine-1");
    Sweep("node-a", Steady);
  });
  const std::string boston = Site("boston", [&] {
    Register("node-a", 0, "machine-1");  // the same machine, seen by the second fleet too
    Sweep("node-a", BatchSlower);
    Register("node-b", 0, "machine-2");
  });
  Output merged = Capture([&] { return MergeCommand(out(), {berlin, boston}); });
  ASSERT_EQ(merged.code, 0) << merged.err;
  EXPECT_NE(merged.out.find("site berlin (" + berlin + "): 1 sweep(s), 2 job(s), 2 result(s)"),
            std::string::npos)
      << merged.out;
  EXPECT_NE(merged.out.find("merged.db: 2 site(s), 2 sweep(s), 2 host(s), 4 result(s)"),
            std::string::npos)
      << merged.out;
  // Each site counted its sweeps from 1; here they are 1 and 2, each keeping its site.
  EXPECT_EQ(Rows(out(), "SELECT sweep_id, site, site_sweep_id FROM sweep_sites ORDER BY 1"),
            json::parse(R"([[1, "berlin", 1], [2, "boston", 1]])"));
  EXPECT_EQ(Rows(out(), "SELECT DISTINCT sweep_id, site FROM result_summary ORDER BY 1"),
            json::parse(R"([[1, "berlin"], [2, "boston"]])"));
  EXPECT_EQ(Rows(out(), "SELECT count(*) FROM samples"), json::parse("[[120]]"));

  std::unique_ptr<Reads> reads = StoreFileReads(out());
  CompareOptions options;
  options.sweeps = {1, 2};  // berlin's against boston's
  Output compared = Capture([&] { return CompareCommand(*reads, options, RowFormat::kJson); });
  ASSERT_EQ(compared.code, 0) << compared.err;
  const json rows = json::parse(compared.out, nullptr, false);
  ASSERT_TRUE(rows.is_array() && rows.size() == 2) << compared.out;
  for (const json& row : rows) {
    EXPECT_EQ(row["host"], "node-a");
    EXPECT_EQ(row["change"], row["batch_size"] == 32 ? "slower" : "unchanged") << row.dump();
  }
  Output results = Capture([&] {
    return ResultsCommand(*reads, std::nullopt, RowFormat::kTable, ResultColumnChoice{});
  });
  EXPECT_EQ(results.code, 0);
  EXPECT_EQ(results.out.rfind("site", 0), 0u) << "a merged store's table names the site first\n"
                                              << results.out;
  EXPECT_NE(results.out.find("boston"), std::string::npos) << results.out;
  EXPECT_EQ(
      Capture([&] { return QueryCommand(*reads, "select * from sites", RowFormat::kCsv); }).code,
      0);
  EXPECT_EQ(Capture([&] { return RegressionsCommand(*reads, "", RowFormat::kTable, true); }).code,
            0);
  ReportOptions report;
  report.since = "7d";
  report.out = (dir_ / "report.html").string();
  Output page = Capture([&] { return ReportCommand(*reads, report); });
  EXPECT_EQ(page.code, 0) << page.err;
  EXPECT_TRUE(std::filesystem::exists(report.out));
  // Nobody serves it: a coordinator refuses a merged store.
  auto served = Store::Open(out());
  ASSERT_FALSE(served.ok());
  EXPECT_NE(served.status().message().find("is a merged store"), std::string::npos);
}

TEST_F(MergeTest, MergingTheSameStoreAgainAddsNothing) {
  const std::string berlin = Site("berlin", [&] {
    Register("node-a", 0, "machine-1");
    Sweep("node-a", Steady);
    Sweep("node-a", Steady);
  });
  const std::string boston = Site("boston", [&] {
    Register("node-a", 0, "machine-1");
    Sweep("node-a", Steady);
  });
  ASSERT_TRUE(MergeStores(out(), {{berlin, ""}, {boston, ""}}).ok());
  const std::string once = Contents(out());
  ASSERT_NE(once.find("sweeps: [[1,"), std::string::npos) << once;
  // Again, in another order, one of them alone, and a copy of one: nothing new.
  std::filesystem::copy_file(berlin, dir_ / "berlin-copy.db");
  for (const std::vector<MergeInput>& again : {std::vector<MergeInput>{{boston, ""}, {berlin, ""}},
                                               {{berlin, ""}},
                                               {{(dir_ / "berlin-copy.db").string(), ""}}}) {
    auto merged = MergeStores(out(), again);
    ASSERT_TRUE(merged.ok()) << merged.status().ToString();
    for (const SiteMerged& site : merged->merged) {
      EXPECT_EQ(site.sweeps + site.jobs + site.results + site.hosts_added, 0) << site.path;
    }
    EXPECT_EQ(Contents(out()), once);
  }
  // What a site ran since is added, after what was there.
  Site("berlin", [&] {
    Register("node-a", 0, "machine-1");
    Sweep("node-a", BatchSlower);
  });
  auto later = MergeStores(out(), {{berlin, ""}, {boston, ""}});
  ASSERT_TRUE(later.ok()) << later.status().ToString();
  EXPECT_EQ(later->merged[0].sweeps, 1);
  EXPECT_EQ(later->merged[0].sweeps_before, 2);
  EXPECT_EQ(later->merged[1].sweeps, 0);
  EXPECT_EQ(Rows(out(), "SELECT sweep_id, site, site_sweep_id FROM sweep_sites ORDER BY 1"),
            json::parse(R"([[1, "berlin", 1], [2, "berlin", 2], [3, "boston", 1],
                            [4, "berlin", 3]])"));
  // Its slower batch was a regression candidate, rerun to confirm it: the candidate, its
  // reruns and the list of them name the merged store's jobs.
  EXPECT_EQ(Rows(out(),
                 "SELECT g.sweep_id, count(*) FROM regressions g, json_each(g.reruns) e "
                 "JOIN jobs j ON j.job_id = e.value AND j.confirms_job_id = g.job_id AND "
                 "j.sweep_id = g.sweep_id GROUP BY g.regression_id"),
            json::parse("[[4, 3]]"));
  // Every id the merged store holds names a row of it.
  auto db = Database::Open(out(), SQLITE_OPEN_READONLY);
  ASSERT_TRUE(db.ok());
  auto dangling = (*db)->Prepare("PRAGMA foreign_key_check");
  ASSERT_TRUE(dangling.ok());
  auto found = dangling->Step();
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(*found) << dangling->Text(0) << " row " << dangling->Text(1) << " names no "
                       << dangling->Text(2);
}

// A host is its machine (docs/sites.md, Hosts).
TEST_F(MergeTest, HostsAreKeyedByMachine) {
  const std::string a = Site("a", [&] {
    Register("gpu-01", 0, "machine-1");
    Register("shared-name", 0, "machine-2");
    Register("x1", 0, "machine-5");
  });
  const std::string b = Site("b", [&] {
    Register("lab-gpu", 1, "machine-1");      // machine-1 named otherwise, a GPU since
    Register("shared-name", 0, "machine-9");  // another machine of a name taken
    Register("x1", 0, "machine-5");           // two agents on machine-5: told apart by name
    Register("x2", 0, "machine-5");
  });
  auto merged = MergeStores(out(), {{a, ""}, {b, ""}});
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(merged->merged[1].hosts_matched, 2);  // lab-gpu, x1
  EXPECT_EQ(merged->merged[1].hosts_added, 2);    // shared-name@b, x2
  EXPECT_EQ(Rows(out(), "SELECT name, machine_id FROM hosts ORDER BY host_id"),
            json::parse(R"([["gpu-01", "machine-1"], ["shared-name", "machine-2"],
                            ["x1", "machine-5"], ["shared-name@b", "machine-9"],
                            ["x2", "machine-5"]])"));
  EXPECT_EQ(Rows(out(),
                 "SELECT h.name, count(*) FROM site_rows o JOIN hosts h ON h.host_id = "
                 "o.row_id WHERE o.table_name = 'hosts' GROUP BY h.name HAVING count(*) > 1 "
                 "ORDER BY 1"),
            json::parse(R"([["gpu-01", 2], ["x1", 2]])"));
  // A host seen by both sites: seen first at a, its facts as b saw them last.
  EXPECT_EQ(Rows(out(),
                 "SELECT json_array_length(capabilities, '$.gpus'), first_seen, last_seen "
                 "FROM hosts WHERE name = 'gpu-01'"),
            json::array({json::array(
                {1, Rows(a, "SELECT first_seen FROM hosts WHERE name = 'gpu-01'")[0][0],
                 Rows(b, "SELECT last_seen FROM hosts WHERE name = 'lab-gpu'")[0][0]})}));
}

TEST_F(MergeTest, ASweepStillRunningIsLeftOutUntilItEnds) {
  int64_t sweep = 0;
  const std::string berlin = Site("berlin", [&] {
    Register("node-a", 0, "machine-1");
    sweep = Submit(kPullRequest);
    EXPECT_EQ(AnswerAll("node-a", Steady, 1), 1);  // one of its two jobs done
  });
  auto first = MergeStores(out(), {{berlin, ""}});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->merged[0].sweeps, 0);
  EXPECT_EQ(first->merged[0].sweeps_running, 1);
  EXPECT_EQ(Rows(out(), "SELECT count(*) FROM jobs"), json::parse("[[0]]"));
  Site("berlin", [&] {
    Message cancelled = Request({{"type", "cancel"}, {"sweep_id", sweep}});
    EXPECT_NE(cancelled.type, "error") << cancelled.body.dump();
  });
  auto second = MergeStores(out(), {{berlin, ""}});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->merged[0].sweeps, 1);
  EXPECT_EQ(second->merged[0].results, 1);
  EXPECT_EQ(Rows(out(), "SELECT state FROM sweeps"), json::parse(R"([["cancelled"]])"));
}

// What merge refuses, each with its reason and exit status 2, and a merge that fails
// midway: the merged store is left as it was, and nothing is left beside it.
TEST_F(MergeTest, RefusesWhatItCannotMergeAndLeavesOutAsItWas) {
  const std::string berlin = Site("berlin", [&] {
    Register("node-a", 0, "machine-1");
    Sweep("node-a", Steady);
  });
  const std::string boston = Site("boston", [&] {
    Register("node-b", 0, "machine-2");
    Sweep("node-b", Steady);
  });
  // A copy of berlin's store that another coordinator went on writing: both have a
  // sweep 2 now, not the same one.
  const std::string fork = (dir_ / "berlin-fork.db").string();
  std::filesystem::copy_file(berlin, fork);
  for (const char* site : {"berlin", "berlin-fork"}) {
    Site(site, [&] {
      Register("node-a", 0, "machine-1");
      Sweep("node-a", Steady);
    });
  }
  ASSERT_EQ(MergeCommand(out(), {berlin}), 0);
  const std::string before = Contents(out());

  auto store_at = [&](const std::string& name, const std::string& sql) {
    const std::string path = (dir_ / name).string();
    std::filesystem::copy_file(berlin, path);
    auto db = Database::Open(path, SQLITE_OPEN_READWRITE);
    EXPECT_TRUE(db.ok() && (*db)->Exec(sql).ok()) << sql;
    return path;
  };
  const int latest = Migrations().back().version;
  {
    std::ofstream((dir_ / "notes.txt").string()) << "not a store\n";
    auto db =
        Database::Open((dir_ / "other.db").string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(db.ok() && (*db)->Exec("CREATE TABLE notes(text)").ok());
  }
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
      {{(dir_ / "missing.db").string()}, "no store at"},
      {{(dir_ / "notes.txt").string()}, "notes.txt is not an SQLite database"},
      {{(dir_ / "other.db").string()},
       "other.db is not a benchfleet store (an SQLite database without its tables)"},
      {{store_at("newer.db", "PRAGMA user_version = " + std::to_string(latest + 1))},
       "newer.db has schema version " + std::to_string(latest + 1) +
           ", newer than this benchfleet's (" + std::to_string(latest) + ")"},
      {{store_at("older.db", "PRAGMA user_version = " + std::to_string(latest - 1))},
       "older.db has schema version " + std::to_string(latest - 1) +
           ", older than this benchfleet's (" + std::to_string(latest) + ")"},
      {{store_at("legacy.db", "PRAGMA application_id = 0; PRAGMA user_version = 7")},
       "legacy.db is a store from before schema version 1"},
      {{out()}, "is OUT itself"},
      {{store_at("merged-elsewhere.db", "UPDATE store_identity SET merged = 1")},
       "merged-elsewhere.db is a merged store"},
      {{"berlin=" + boston}, "site name berlin is taken by another store"},
      {{"b:d=" + boston}, "site name \"b:d\""},
      // boston's rows are written first; the fork then fails the whole merge.
      {{boston, fork}, "berlin-fork.db: its sweep 2 (created "},
  };
  for (const auto& [stores, reason] : refused) {
    Output merged = Capture([&] { return MergeCommand(out(), stores); });
    EXPECT_EQ(merged.code, 2) << reason;
    EXPECT_NE(merged.err.find(reason), std::string::npos) << merged.err;
    EXPECT_EQ(Contents(out()), before) << reason;
  }
  // Merge writes no coordinator's store, and leaves no file it did not finish.
  const std::string served = Contents(boston);
  Output into = Capture([&] { return MergeCommand(boston, {berlin}); });
  EXPECT_EQ(into.code, 2);
  EXPECT_NE(into.err.find("boston.db is a coordinator's store"), std::string::npos) << into.err;
  EXPECT_EQ(Contents(boston), served);
  EXPECT_EQ(MergeCommand((dir_ / "fresh.db").string(), {berlin, boston, fork}), 2);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "fresh.db"));
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().string().find(".merging-"), std::string::npos) << entry.path();
  }
}

// A row in every table a site's store has, as its coordinator writes them, so that each
// table's rule is seen at work: two such stores (two sites, each its own store id) merged,
// every row arrives once per site with each id it holds mapped, and merging them again
// adds nothing.
constexpr const char* kEveryTable = R"sql(
INSERT INTO hosts(host_id, name, machine_id, first_seen, last_seen) VALUES
  (1, 'n1', 'm1', 't0', 't1'), (2, 'n2', 'm2', 't0', 't1');
INSERT INTO schedules(schedule_id, name, cron, sweep, created_at, handled_until)
  VALUES (1, 'nightly', '0 2 * * *', '{}', 't0', 't1');
INSERT INTO schedule_firings(schedule_id, slot, outcome, decided_at) VALUES (1, 's1', 'started', 't1');
INSERT INTO sweeps(sweep_id, name, state, created_at, schedule_id, schedule_slot, submission_id, spec)
  VALUES (1, 'night', 'done', 't1', 1, 's1', 'cli-1', '{}'),
         (2, 'later', 'running', 't2', NULL, NULL, NULL, '{}');
INSERT INTO requirements(requirement_id, device) VALUES (1, 'cpu');
INSERT INTO jobs(job_id, sweep_id, spec, timeout_s, created_at, state, host_id, requirement_id,
                 confirms_job_id) VALUES
  (1, 1, '{}', 60, 't1', 'done', 1, 1, NULL), (2, 1, '{}', 60, 't1', 'done', 2, 1, NULL),
  (3, 1, '{}', 60, 't1', 'done', 2, 1, 2), (4, 2, '{}', 60, 't2', 'queued', NULL, 1, NULL);
INSERT INTO results(job_id, attempt, host_id, ok, detail, received_at, sweep_id, median_ms) VALUES
  (1, 1, 1, 1, '{}', 't1', 1, 1.0), (2, 1, 2, 1, '{}', 't1', 1, 2.0), (3, 1, 2, 1, '{}', 't1', 1, 2.1);
INSERT INTO result_samples(job_id, n, ms_f32le) VALUES (1, 1, X'0000803F');
INSERT INTO result_ranks(job_id, rank, host_id) VALUES (1, 0, 1), (1, 1, 2);
INSERT INTO result_processes(job_id, process, attempt, host_id, median_ms, received_at, detail)
  VALUES (1, 0, 1, 1, 1.0, 't1', '{}');
INSERT INTO op_profile(job_id, op, calls, self_us, total_us, input_shapes)
  VALUES (1, 'aten::mm', 3, 1.0, 2.0, '[]');
INSERT INTO calibrations(calibration_id, host_id, job_id, detail, measured_at) VALUES (1, 2, 1, '{}', 't1');
INSERT INTO regressions(regression_id, job_id, series, host_id, state, direction, median_ms,
  baseline_median_ms, baseline_mad_ms, baseline_n, baseline_from, baseline_to, change, reruns,
  detected_at, sweep_id) VALUES (1, 2, 's', 2, 'confirmed', 'slower', 2, 1, 0.1, 9, 't0', 't1', 1,
  '[3]', 't1', 1);
INSERT INTO stale_results(stale_id, job_id, attempt, host, reason, detail, received_at)
  VALUES (1, 2, 1, 'n2', 'requeued', '{}', 't1');
INSERT INTO baseline_resets(reset_id, host, model, at) VALUES (1, 'n1', 'mlp', 't1');
INSERT INTO host_prices(price_id, host_id, per_hour, currency, set_at, source)
  VALUES (1, 2, 1.5, 'USD', 't1', 'cli');
)sql";

TEST_F(MergeTest, EveryTablesRowsArriveWithTheirIdsMapped) {
  std::vector<std::string> stores;
  for (const char* site : {"x", "y"}) {
    const std::string path = (dir_ / (std::string(site) + ".db")).string();
    ASSERT_TRUE(Store::Open(path).ok());  // made as a coordinator makes it, then closed
    auto db = Database::Open(path, SQLITE_OPEN_READWRITE);
    ASSERT_TRUE(db.ok());
    const Status filled = (*db)->Exec(kEveryTable);
    ASSERT_TRUE(filled.ok()) << filled.ToString();
    stores.push_back(path);
  }
  ASSERT_TRUE(MergeStores(out(), {{stores[0], ""}, {stores[1], ""}}).ok());
  const std::string once = Contents(out());
  // The running sweep 2 and its job are left out; the rest comes once per site.
  const json counts = Rows(
      out(),
      "SELECT (SELECT count(*) FROM hosts), (SELECT count(*) FROM schedules), (SELECT count(*) "
      "FROM schedule_firings), (SELECT count(*) FROM sweeps), (SELECT count(*) FROM "
      "requirements), (SELECT count(*) FROM jobs), (SELECT count(*) FROM results), (SELECT "
      "count(*) FROM result_samples), (SELECT count(*) FROM result_ranks), (SELECT count(*) FROM "
      "result_processes), (SELECT count(*) FROM op_profile), (SELECT count(*) FROM calibrations), "
      "(SELECT count(*) FROM regressions), (SELECT count(*) FROM stale_results), (SELECT count(*) "
      "FROM baseline_resets), (SELECT count(*) FROM host_prices), (SELECT sum(n) FROM "
      "job_counts)");
  EXPECT_EQ(counts, json::parse("[[2, 2, 2, 2, 1, 6, 6, 2, 4, 2, 2, 2, 2, 2, 2, 2, 6]]"));
  // y's rows name y's rows, as renumbered: its jobs are 4..6, in its sweep 2.
  EXPECT_EQ(Rows(out(),
                 "SELECT job_id, sweep_id, host_id, confirms_job_id FROM jobs WHERE "
                 "job_id > 3 ORDER BY 1"),
            json::parse("[[4, 2, 1, null], [5, 2, 2, null], [6, 2, 2, 5]]"));
  EXPECT_EQ(Rows(out(), "SELECT job_id, reruns, host_id, sweep_id FROM regressions ORDER BY 1"),
            json::parse(R"([[2, "[3]", 2, 1], [5, "[6]", 2, 2]])"));
  EXPECT_EQ(Rows(out(),
                 "SELECT s.name, w.submission_id, f.slot FROM sweeps w JOIN schedules s "
                 "USING (schedule_id) JOIN schedule_firings f USING (schedule_id) ORDER BY "
                 "w.sweep_id"),
            json::parse(R"([["nightly", "cli-1", "s1"], ["nightly@y", null, "s1"]])"));
  EXPECT_EQ(Rows(out(), "SELECT job_id, host_id FROM result_ranks ORDER BY 1, rank"),
            json::parse("[[1, 1], [1, 2], [4, 1], [4, 2]]"));
  EXPECT_EQ(Rows(out(),
                 "SELECT job_id, host_id FROM calibrations UNION ALL SELECT job_id, 0 FROM "
                 "stale_results UNION ALL SELECT host_id, per_hour FROM host_prices"),
            json::parse("[[1, 2], [4, 2], [2, 0], [5, 0], [2, 1.5], [2, 1.5]]"));
  auto db = Database::Open(out(), SQLITE_OPEN_READONLY);
  ASSERT_TRUE(db.ok());
  auto dangling = (*db)->Prepare("PRAGMA foreign_key_check");
  ASSERT_TRUE(dangling.ok());
  auto found = dangling->Step();
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(*found) << dangling->Text(0) << " names no " << dangling->Text(2);
  db->reset();
  ASSERT_TRUE(MergeStores(out(), {{stores[1], ""}, {stores[0], ""}}).ok());
  EXPECT_EQ(Contents(out()), once);
}

// Every table of the schema is merged, or left out for a reason (cli/merge_tables.h).
TEST_F(MergeTest, EveryTableHasAMergeRule) {
  std::set<std::string> known;
  for (const std::string& table : MergedTables()) known.insert(table);
  for (const auto& [table, why] : TablesNotMerged()) known.insert(table);
  std::set<std::string> tables;
  for (const json& row : Rows((dir_ / "results.db").string(),
                              "SELECT name FROM sqlite_master WHERE type = 'table'")) {
    tables.insert(row[0].get<std::string>());
  }
  EXPECT_EQ(tables, known);
}

}  // namespace
}  // namespace benchfleet
