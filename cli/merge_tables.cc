#include "cli/merge_tables.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/log.h"

namespace benchfleet {
namespace {

// A column that holds an id of another table's rows, mapped through that table's map.
struct Ref {
  const char* column = nullptr;
  const char* table = nullptr;
};

// How one table's rows are merged.
struct Rule {
  const char* table;
  // Its own id, numbered anew after the main store's highest; nullptr: the row is keyed
  // by its parent (a job's results) and comes with it.
  const char* id;
  // The row it belongs to (a job's sweep, a result's job): a row is taken once its
  // parent is in the merged store. Rows keyed by a job come only with a job new to it.
  Ref parent;
  const char* when;  // a condition on the site's row `s`, or nullptr
  std::vector<Ref> refs;
  // Columns written from an expression over `s` instead of copied ({site} is the site's
  // name, quoted), where a copy would break a unique index or hold the site's ids.
  std::vector<std::pair<const char*, const char*>> computed;
};

// A schedule's name is unique among live schedules: another site's of the same name
// takes the site's name after it.
constexpr const char* kScheduleName =
    "CASE WHEN s.removed_at IS NULL AND EXISTS (SELECT 1 FROM main.schedules o "
    "WHERE o.name = s.name AND o.removed_at IS NULL) THEN s.name || '@' || {site} ELSE s.name END";
// A client's submission id is unique: the same one sent to two coordinators is kept once.
constexpr const char* kSubmissionId =
    "CASE WHEN EXISTS (SELECT 1 FROM main.sweeps o WHERE o.submission_id = s.submission_id) "
    "THEN NULL ELSE s.submission_id END";
// The confirming reruns' job ids, a JSON array, in their order.
constexpr const char* kReruns =
    "CASE WHEN s.reruns IS NULL OR NOT json_valid(s.reruns) THEN s.reruns ELSE "
    "(SELECT json_group_array((SELECT out_id FROM temp.merge_map WHERE table_name = 'jobs' "
    "AND src_id = e.value)) FROM json_each(s.reruns) e) END";
// A sweep still running at its site is left out, and its jobs with it, until it has
// ended: merged once, whole.
constexpr const char* kSweepEnded = "s.state <> 'running'";
constexpr const char* kJobsSweepEnded =
    "(SELECT state FROM src.sweeps WHERE sweep_id = s.sweep_id) <> 'running'";

const std::vector<Rule>& Rules() {
  static const std::vector<Rule> rules = {
      {"schedules", "schedule_id", {}, nullptr, {}, {{"name", kScheduleName}}},
      {"sweeps",
       "sweep_id",
       {},
       kSweepEnded,
       {{"schedule_id", "schedules"}},
       {{"submission_id", kSubmissionId}}},
      {"jobs",
       "job_id",
       {"sweep_id", "sweeps"},
       kJobsSweepEnded,
       {{"host_id", "hosts"},
        {"requirement_id", "requirements"},
        {"confirms_job_id", "jobs"},
        {"versus_a_job_id", "jobs"}},
       {}},
      {"results",
       nullptr,
       {"job_id", "jobs"},
       nullptr,
       {{"host_id", "hosts"}, {"sweep_id", "sweeps"}},
       {}},
      {"result_samples", nullptr, {"job_id", "jobs"}, nullptr, {}, {}},
      {"result_ranks", nullptr, {"job_id", "jobs"}, nullptr, {{"host_id", "hosts"}}, {}},
      {"result_processes", nullptr, {"job_id", "jobs"}, nullptr, {{"host_id", "hosts"}}, {}},
      {"op_profile", nullptr, {"job_id", "jobs"}, nullptr, {}, {}},
      {"result_pairs",
       nullptr,
       {"job_id", "jobs"},
       nullptr,
       {{"b_job_id", "jobs"}, {"host_id", "hosts"}},
       {}},
      {"versus_results",
       nullptr,
       {"job_id", "jobs"},
       nullptr,
       {{"b_job_id", "jobs"}, {"sweep_id", "sweeps"}, {"host_id", "hosts"}},
       {}},
      {"calibrations", "calibration_id", {"job_id", "jobs"}, nullptr, {{"host_id", "hosts"}}, {}},
      {"regressions",
       "regression_id",
       {"job_id", "jobs"},
       nullptr,
       {{"host_id", "hosts"}, {"sweep_id", "sweeps"}},
       {{"reruns", kReruns}}},
      {"stale_results", "stale_id", {"job_id", "jobs"}, nullptr, {}, {}},
      {"baseline_resets", "reset_id", {}, nullptr, {}, {}},
      {"host_prices", "price_id", {"host_id", "hosts"}, nullptr, {}, {}},
  };
  return rules;
}

std::string Quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string Replaced(std::string text, const std::string& marker, const std::string& with) {
  size_t at = 0;
  while ((at = text.find(marker, at)) != std::string::npos) {
    text.replace(at, marker.size(), with);
    at += with.size();
  }
  return text;
}

StatusOr<int64_t> Count(Database& db, const std::string& sql) {
  ASSIGN_OR_RETURN(auto stmt, db.Prepare(sql));
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  return row ? stmt.Int(0) : 0;
}

// The stored columns of `table` in `schema` (generated ones are computed again), with
// their declared types.
StatusOr<std::vector<std::pair<std::string, std::string>>> Columns(Database& db,
                                                                   const std::string& schema,
                                                                   const std::string& table) {
  ASSIGN_OR_RETURN(auto stmt, db.Prepare("SELECT name, type FROM pragma_table_xinfo(?1, ?2) "
                                         "WHERE hidden = 0 ORDER BY cid"));
  stmt.Bind(1, table).Bind(2, schema);
  std::vector<std::pair<std::string, std::string>> columns;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    columns.emplace_back(stmt.Text(0), stmt.Text(1));
  }
  return columns;
}

// The site's columns of `table`; one the main store lacks (a column added there by
// hand, a field no longer declared) is added to it first, so that nothing is lost.
StatusOr<std::vector<std::string>> CopiedColumns(Database& db, const std::string& table) {
  ASSIGN_OR_RETURN(auto source, Columns(db, "src", table));
  ASSIGN_OR_RETURN(auto target, Columns(db, "main", table));
  std::set<std::string> in_target;
  for (const auto& [name, type] : target) in_target.insert(name);
  std::vector<std::string> names;
  for (const auto& [name, type] : source) {
    if (!in_target.count(name)) {
      RETURN_IF_ERROR(
          db.Exec("ALTER TABLE main.\"" + table + "\" ADD COLUMN \"" + name + "\" " + type));
      LOG_WARN(
          "kept column " << table << "." << name
                         << " of a site, which this benchfleet does not declare, with its values");
    }
    names.push_back(name);
  }
  return names;
}

std::string MappedId(const std::string& table, const std::string& expression) {
  return "(SELECT out_id FROM temp.merge_map WHERE table_name = '" + table +
         "' AND src_id = " + expression + ")";
}

// The map of a table with ids of its own: the rows merged before (site_rows), then the
// site's rows new to the main store, numbered after its highest id in the site's order.
Status MapRows(Database& db, const Rule& rule, const SiteRow& site) {
  const std::string table = rule.table, id = rule.id;
  RETURN_IF_ERROR(
      db.Exec("INSERT INTO temp.merge_map(table_name, src_id, out_id, is_new) SELECT '" + table +
              "', site_row_id, row_id, 0 FROM main.site_rows WHERE "
              "table_name = '" +
              table + "' AND site_id = " + std::to_string(site.site_id)));
  std::string where = "NOT EXISTS (SELECT 1 FROM temp.merge_map m WHERE m.table_name = '" + table +
                      "' AND m.src_id = s." + id + ")";
  if (rule.parent.column) {
    where += std::string(" AND (s.") + rule.parent.column + " IS NULL OR " +
             MappedId(rule.parent.table, std::string("s.") + rule.parent.column) + " IS NOT NULL)";
  }
  if (rule.when) where += std::string(" AND ") + rule.when;
  return db.Exec("INSERT INTO temp.merge_map(table_name, src_id, out_id, is_new) SELECT '" + table +
                 "', s." + id + ", (SELECT coalesce(max(" + id + "), 0) FROM main." + table +
                 ") + row_number() OVER (ORDER BY s." + id + "), 1 FROM src." + table +
                 " s WHERE " + where);
}

// Inserts the rows of `rule.table` the maps take: those numbered anew, or for a table
// keyed by its job, those of the jobs new to the main store. Returns how many.
StatusOr<int64_t> InsertRows(Database& db, const Rule& rule, const SiteRow& site) {
  ASSIGN_OR_RETURN(std::vector<std::string> columns, CopiedColumns(db, rule.table));
  std::string names, values;
  for (const std::string& column : columns) {
    std::string value = "s.\"" + column + "\"";
    if (rule.id && column == rule.id) value = "m.out_id";
    if (rule.parent.column && column == rule.parent.column)
      value = MappedId(rule.parent.table, value);
    for (const Ref& ref : rule.refs) {
      if (column == ref.column) value = MappedId(ref.table, value);
    }
    for (const auto& [name, expression] : rule.computed) {
      if (column == name) value = Replaced(expression, "{site}", Quoted(site.name));
    }
    names += (names.empty() ? "\"" : ", \"") + column + "\"";
    values += (values.empty() ? "" : ", ") + value;
  }
  const std::string table = rule.table;
  std::string join =
      rule.id ? "temp.merge_map m ON m.table_name = '" + table + "' AND m.src_id = s." + rule.id
              : "temp.merge_map m ON m.table_name = '" + std::string(rule.parent.table) +
                    "' AND m.src_id = s." + rule.parent.column;
  RETURN_IF_ERROR(db.Exec("INSERT INTO main." + table + " (" + names + ") SELECT " + values +
                          " FROM src." + table + " s JOIN " + join + " AND m.is_new = 1"));
  return static_cast<int64_t>(db.Changes());
}

// A site whose sweep of some id is not the sweep merged from it under that id: two
// stores share its store id (a copy that a coordinator went on writing).
Status RefuseDivergedSite(Database& db, const SiteRow& site) {
  ASSIGN_OR_RETURN(auto stmt, db.Prepare("SELECT s.sweep_id, s.created_at, o.created_at "
                                         "FROM src.sweeps s JOIN main.site_rows r ON "
                                         "r.table_name = 'sweeps' AND r.site_id = ?1 AND "
                                         "r.site_row_id = s.sweep_id JOIN main.sweeps o ON "
                                         "o.sweep_id = r.row_id WHERE o.created_at IS NOT "
                                         "s.created_at LIMIT 1"));
  stmt.Bind(1, site.site_id);
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return Status::Ok();
  return InvalidArgument(
      "its sweep " + std::to_string(stmt.Int(0)) + " (created " + stmt.Text(1) +
      ") is not the sweep " + std::to_string(stmt.Int(0)) + " merged from site " + site.name +
      " before (created " + stmt.Text(2) +
      "): two stores share one store id, a copy that another coordinator went on writing. Give "
      "the copy an id of its own, then merge it as a site of its own: sqlite3 COPY.db \"UPDATE "
      "store_identity SET store_id = lower(hex(randomblob(16)))\"");
}

// The host of the main store a site's host is, by its machine: the one of the same
// machine and name; else, where the site ran one agent on that machine and the main
// store has one host of it, that one (a machine named otherwise at each site); 0: none.
StatusOr<int64_t> MatchHost(Database& db, const std::string& machine, const std::string& name,
                            int64_t agents_on_machine) {
  if (machine.empty()) return 0;  // no machine id: no telling it is the same host
  ASSIGN_OR_RETURN(auto stmt, db.Prepare("SELECT host_id, name FROM main.hosts WHERE "
                                         "machine_id = ?1 ORDER BY host_id"));
  stmt.Bind(1, machine);
  std::vector<int64_t> hosts;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    if (stmt.Text(1) == name) return stmt.Int(0);
    hosts.push_back(stmt.Int(0));
  }
  return agents_on_machine == 1 && hosts.size() == 1 ? hosts[0] : 0;
}

// A name no host of the main store has: the site's, else NAME@SITE (then NAME@SITE-2 ...).
StatusOr<std::string> FreeHostName(Database& db, const std::string& name, const SiteRow& site) {
  ASSIGN_OR_RETURN(auto taken, db.Prepare("SELECT 1 FROM main.hosts WHERE name = ?1"));
  for (int n = 1;; ++n) {
    const std::string candidate =
        n == 1 ? name : name + "@" + site.name + (n == 2 ? "" : "-" + std::to_string(n - 1));
    taken.Reset();
    taken.Bind(1, candidate);
    ASSIGN_OR_RETURN(bool found, taken.Step());
    if (!found) return candidate;
  }
}

}  // namespace

std::vector<std::string> MergedTables() {
  std::vector<std::string> names = {"hosts", "requirements", "schedule_firings"};
  for (const Rule& rule : Rules()) names.push_back(rule.table);
  return names;
}

std::vector<std::pair<std::string, std::string>> TablesNotMerged() {
  return {{"job_counts", "kept by the triggers on jobs as the jobs go in"},
          {"store_identity", "the merged store's own"},
          {"sites", "the merged store's own: a merged store is not merged into another"},
          {"site_rows", "the merged store's own: a merged store is not merged into another"}};
}

// Hosts are keyed by machine (MatchHost): a host seen by several sites is one row, its
// first_seen the earliest, its last_seen the latest, its other facts (tags,
// capabilities, fingerprint) the latest seen.
Status MergeHosts(Database& db, const SiteRow& site, SiteMerged* merged) {
  RETURN_IF_ERROR(
      db.Exec("INSERT INTO temp.merge_map(table_name, src_id, out_id, is_new) SELECT "
              "'hosts', site_row_id, row_id, 0 FROM main.site_rows WHERE table_name = "
              "'hosts' AND site_id = " +
              std::to_string(site.site_id)));
  ASSIGN_OR_RETURN(std::vector<std::string> columns, CopiedColumns(db, "hosts"));
  std::string names, values, facts;
  for (const std::string& column : columns) {
    if (column == "host_id" || column == "name") continue;
    names += ", \"" + column + "\"";
    values += ", s.\"" + column + "\"";
    if (column != "machine_id" && column != "first_seen" && column != "last_seen")
      facts += (facts.empty() ? "\"" : ", \"") + column + "\" = s.\"" + column + "\"";
  }
  ASSIGN_OR_RETURN(auto hosts,
                   db.Prepare("SELECT s.host_id, s.name, coalesce(s.machine_id, ''), (SELECT "
                              "count(*) FROM src.hosts o WHERE o.machine_id = s.machine_id), "
                              "(SELECT out_id FROM temp.merge_map WHERE table_name = 'hosts' AND "
                              "src_id = s.host_id) FROM src.hosts s ORDER BY s.host_id"));
  ASSIGN_OR_RETURN(auto insert,
                   db.Prepare("INSERT INTO main.hosts (host_id, name" + names + ") SELECT ?1, ?2" +
                              values + " FROM src.hosts s WHERE s.host_id = ?3"));
  ASSIGN_OR_RETURN(auto mapped, db.Prepare("INSERT INTO temp.merge_map(table_name, src_id, "
                                           "out_id, is_new) VALUES ('hosts', ?1, ?2, 1)"));
  const std::string newer =
      facts.empty() ? ""
                    : "UPDATE main.hosts AS h SET " + facts + " FROM src.hosts s WHERE " +
                          "h.host_id = ?1 AND s.host_id = ?2 AND s.last_seen > h.last_seen";
  ASSIGN_OR_RETURN(auto seen, db.Prepare("UPDATE main.hosts AS h SET first_seen = "
                                         "min(h.first_seen, s.first_seen), last_seen = "
                                         "max(h.last_seen, s.last_seen) FROM src.hosts s WHERE "
                                         "h.host_id = ?1 AND s.host_id = ?2"));
  struct SiteHost {
    int64_t id;
    std::string name, machine;
    int64_t agents_on_machine, out_id;
  };
  std::vector<SiteHost> site_hosts;  // read whole before the main store changes under them
  while (true) {
    ASSIGN_OR_RETURN(bool row, hosts.Step());
    if (!row) break;
    site_hosts.push_back({hosts.Int(0), hosts.Text(1), hosts.Text(2), hosts.Int(3),
                          hosts.IsNull(4) ? 0 : hosts.Int(4)});
  }
  for (const SiteHost& host : site_hosts) {
    const int64_t src_id = host.id;
    int64_t out_id = host.out_id;
    if (out_id == 0) {
      ASSIGN_OR_RETURN(out_id, MatchHost(db, host.machine, host.name, host.agents_on_machine));
      if (out_id == 0) {
        ASSIGN_OR_RETURN(out_id, Count(db, "SELECT coalesce(max(host_id), 0) + 1 FROM main.hosts"));
        ASSIGN_OR_RETURN(std::string name, FreeHostName(db, host.name, site));
        insert.Reset();
        RETURN_IF_ERROR(insert.Bind(1, out_id).Bind(2, name).Bind(3, src_id).Run());
        ++merged->hosts_added;
      } else {
        ++merged->hosts_matched;
      }
      mapped.Reset();
      RETURN_IF_ERROR(mapped.Bind(1, src_id).Bind(2, out_id).Run());
    }
    if (!newer.empty()) {
      ASSIGN_OR_RETURN(auto update, db.Prepare(newer));
      RETURN_IF_ERROR(update.Bind(1, out_id).Bind(2, src_id).Run());
    }
    seen.Reset();
    RETURN_IF_ERROR(seen.Bind(1, out_id).Bind(2, src_id).Run());
  }
  return Status::Ok();
}

Status MergeSiteRows(Database& db, const SiteRow& site, SiteMerged* merged) {
  RETURN_IF_ERROR(
      db.Exec("CREATE TEMP TABLE IF NOT EXISTS merge_map (table_name TEXT NOT NULL, src_id "
              "INTEGER NOT NULL, out_id INTEGER NOT NULL, is_new INTEGER NOT NULL, PRIMARY KEY "
              "(table_name, src_id)) WITHOUT ROWID; DELETE FROM temp.merge_map"));
  RETURN_IF_ERROR(RefuseDivergedSite(db, site));
  std::map<std::string, const Rule*> by_table;
  for (const Rule& rule : Rules()) by_table[rule.table] = &rule;
  // The maps, parents first: a row is taken once its parent is.
  for (const char* table : {"schedules", "sweeps"})
    RETURN_IF_ERROR(MapRows(db, *by_table[table], site));
  RETURN_IF_ERROR(MergeHosts(db, site, merged));
  for (const Rule& rule : Rules()) {
    const std::string table = rule.table;
    if (rule.id && table != "schedules" && table != "sweeps")
      RETURN_IF_ERROR(MapRows(db, rule, site));
  }
  // Requirements are shared by what they ask, not numbered per site.
  RETURN_IF_ERROR(db.Exec(
      "INSERT INTO main.requirements(kind, pinned_host, select_json, device) SELECT s.kind, "
      "s.pinned_host, s.select_json, s.device FROM src.requirements s WHERE s.requirement_id IN "
      "(SELECT j.requirement_id FROM src.jobs j JOIN temp.merge_map m ON m.table_name = 'jobs' "
      "AND m.src_id = j.job_id AND m.is_new = 1) ON CONFLICT DO NOTHING; "
      "INSERT INTO temp.merge_map(table_name, src_id, out_id, is_new) SELECT 'requirements', "
      "s.requirement_id, o.requirement_id, 0 FROM src.requirements s JOIN main.requirements o "
      "ON o.kind = s.kind AND o.pinned_host = s.pinned_host AND o.select_json = s.select_json "
      "AND o.device = s.device"));
  for (const Rule& rule : Rules()) {
    ASSIGN_OR_RETURN(int64_t inserted, InsertRows(db, rule, site));
    if (rule.table == std::string("results")) merged->results = inserted;
  }
  // A schedule's slots go on after its first merge: each slot once.
  ASSIGN_OR_RETURN(std::vector<std::string> firing_columns, CopiedColumns(db, "schedule_firings"));
  std::string names, values;
  for (const std::string& column : firing_columns) {
    names += (names.empty() ? "\"" : ", \"") + column + "\"";
    values += (values.empty() ? "" : ", ") +
              (column == "schedule_id" ? std::string("m.out_id") : "s.\"" + column + "\"");
  }
  RETURN_IF_ERROR(db.Exec("INSERT INTO main.schedule_firings (" + names + ") SELECT " + values +
                          " FROM src.schedule_firings s JOIN temp.merge_map m ON m.table_name = "
                          "'schedules' AND m.src_id = s.schedule_id WHERE true "
                          "ON CONFLICT (schedule_id, slot) DO NOTHING"));
  RETURN_IF_ERROR(
      db.Exec("INSERT INTO main.site_rows(table_name, row_id, site_id, site_row_id) "
              "SELECT table_name, out_id, " +
              std::to_string(site.site_id) + ", src_id FROM temp.merge_map WHERE is_new = 1"));
  ASSIGN_OR_RETURN(merged->sweeps, Count(db,
                                         "SELECT count(*) FROM temp.merge_map WHERE "
                                         "table_name = 'sweeps' AND is_new = 1"));
  ASSIGN_OR_RETURN(merged->sweeps_before, Count(db,
                                                "SELECT count(*) FROM temp.merge_map WHERE "
                                                "table_name = 'sweeps' AND is_new = 0"));
  ASSIGN_OR_RETURN(merged->jobs, Count(db,
                                       "SELECT count(*) FROM temp.merge_map WHERE "
                                       "table_name = 'jobs' AND is_new = 1"));
  ASSIGN_OR_RETURN(merged->sweeps_running,
                   Count(db,
                         "SELECT count(*) FROM src.sweeps s WHERE s.state = 'running' AND NOT "
                         "EXISTS (SELECT 1 FROM temp.merge_map m WHERE m.table_name = "
                         "'sweeps' AND m.src_id = s.sweep_id)"));
  return Status::Ok();
}

}  // namespace benchfleet
