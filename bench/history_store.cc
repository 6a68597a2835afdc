// A year of nights in one store, and how fast the documented views answer over it.
//   bench_history --db DIR/history.db --generate   fills a new store: 200 hosts x 50
//       configurations x 100 nights = 1,000,000 results, each with its raw samples
//       (float32 BLOB, as the coordinator writes them) and a realistic `detail`;
//   bench_history --db DIR/history.db              times each documented view's typical
//       query (one night, one host's history, one result's samples; 5 runs, median)
//       and prints EXPLAIN QUERY PLAN of the slowest.
// The store is made by Store::Open (every migration, every index); rows are written
// with plain SQL in one transaction per night, synchronous=OFF (this is a fixture,
// not the coordinator's write path).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <random>
#include <vector>

#include "coordinator/store/sample_blob.h"
#include "coordinator/store/store.h"
#include "sqlite/sqlite.h"

using benchfleet::Database;
using benchfleet::json;
using Clock = std::chrono::steady_clock;

namespace {

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

void Check(const benchfleet::Status& status, const std::string& what) {
  if (status.ok()) return;
  std::cerr << "bench_history: " << what << ": " << status.ToString() << "\n";
  std::exit(1);
}

struct Config {
  std::string model, mode, device, dtype;
  int batch_size, threads;
  double base_ms;  // the median of this configuration on a middling host
};

// 5 models x 2 modes x 5 variants: every comparison view has its pairs (threads 1 vs 2,
// batch 1 vs 64, int8 vs fp32, CPU vs GPU).
std::vector<Config> Configs() {
  std::vector<Config> configs;
  const std::vector<std::pair<std::string, double>> models = {
      {"mlp", 0.3}, {"cnn", 2.0}, {"transformer", 4.0}, {"lstm", 3.0}, {"matmul", 8.0}};
  for (const auto& [model, base] : models) {
    for (const std::string mode : {"inference", "train"}) {
      const double m = mode == "train" ? 3 * base : base;
      configs.push_back({model, mode, "cpu", "fp32", 1, 1, m});
      configs.push_back({model, mode, "cpu", "fp32", 1, 2, m * 0.55});
      configs.push_back({model, mode, "cpu", "fp32", 64, 2, m * 20});
      configs.push_back({model, mode, "cpu", "int8", 64, 2, m * 12});
      configs.push_back({model, mode, "cuda:0", "fp32", 64, 2, m * 0.8});
    }
  }
  return configs;
}

std::string Iso(int night, int second) {
  // Night 0 is 2026-01-01; each night's jobs finish from 02:00 on.
  std::tm t{};
  t.tm_year = 126;
  t.tm_mon = 0;
  t.tm_mday = 1 + night;
  t.tm_hour = 2;
  t.tm_sec = second;
  std::time_t when = timegm(&t);
  std::tm utc{};
  gmtime_r(&when, &utc);
  char text[40];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S.000Z", &utc);
  return text;
}

void Generate(const std::string& path, int hosts, int nights, int samples_per_result) {
  std::filesystem::remove(path);
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
  { Check(benchfleet::Store::Open(path).status(), "create the store"); }
  auto opened = Database::Open(path, SQLITE_OPEN_READWRITE);
  Check(opened.status(), "open");
  Database& db = **opened;
  Check(db.Exec("PRAGMA synchronous=OFF; PRAGMA cache_size=-262144;"), "pragmas");
  const std::vector<Config> configs = Configs();
  std::mt19937_64 random(42);
  std::normal_distribution<double> noise(0, 0.02);

  Check(db.Exec("BEGIN"), "begin");
  std::vector<double> host_speed;
  for (int h = 1; h <= hosts; ++h) {
    host_speed.push_back(0.5 + (h % 17) / 10.0);
    json capabilities = {{"host",
                          {{"cpu_model", "AMD EPYC " + std::to_string(7000 + h % 5 * 100)},
                           {"cores", 16 + h % 4 * 16},
                           {"machine_id", "m" + std::to_string(h)}}},
                         {"torch", {{"torch_version", "1.13.1"}, {"blas", "openblas"}}},
                         {"gpus", json::array({{{"name", "NVIDIA H200"}}})}};
    auto host = db.Prepare(
        "INSERT INTO hosts(host_id, name, machine_id, tags, capabilities, "
        "first_seen, last_seen) VALUES (?1, ?2, ?3, '[\"lab\"]', ?4, ?5, ?5)");
    Check(host->Bind(1, int64_t{h})
              .Bind(2, "host-" + std::to_string(h))
              .Bind(3, "m" + std::to_string(h))
              .Bind(4, capabilities.dump())
              .Bind(5, Iso(0, 0))
              .Run(),
          "host");
  }
  Check(db.Exec("COMMIT"), "commit hosts");

  auto job = db.Prepare(
      "INSERT INTO jobs(job_id, sweep_id, pinned_host, spec, timeout_s, state, attempts, host_id, "
      "created_at, started_at, finished_at, kind, error) VALUES (?1, ?2, ?3, ?4, 80, ?8, 1, ?5, "
      "?6, "
      "?6, ?7, 'benchmark', ?9)");
  auto result = db.Prepare(
      "INSERT INTO results(job_id, attempt, host_id, ok, device, model, mode, dtype, batch_size, "
      "threads, n, median_ms, mean_ms, stdev_ms, min_ms, max_ms, p90_ms, p99_ms, q1_ms, q3_ms, "
      "iqr_ms, noisy, throughput_per_s, peak_rss_mb, effective_threads, worker_wall_s, detail, "
      "received_at, model_args, interop_threads, onednn, sweep_id) VALUES (?1, 1, ?2, 1, ?3, ?4, "
      "?5, "
      "?6, ?7, ?8, ?9, ?10, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, 0, ?19, 180, ?8, 4.5, "
      "?20, "
      "?21, '{}', 1, 1, ?22)");
  // One job in 200 fails (the worker ran out of memory): a result row with ok = 0, its
  // reason, and no samples, as the store keeps it.
  auto failure = db.Prepare(
      "INSERT INTO results(job_id, attempt, host_id, ok, device, model, mode, dtype, batch_size, "
      "threads, error, detail, received_at, sweep_id) VALUES (?1, 1, ?2, 0, ?3, ?4, ?5, ?6, ?7, "
      "?8, "
      "?9, '{\"ok\": false}', ?10, ?11)");
  const std::string kFailure = "the worker was killed: out of memory (peak RSS 15.8 GiB)";
  auto sample_row =
      db.Prepare("INSERT INTO result_samples(job_id, n, ms_f32le) VALUES (?1, ?2, ?3)");
  auto calibration = db.Prepare(
      "INSERT INTO calibrations(host_id, gemm_gflops_all, gemm_threads_all, gemm_gflops_1, "
      "stream_triad_gbps_all, stream_triad_gbps_1, detail, measured_at) VALUES (?1, ?2, 2, ?3, "
      "?4, ?5, '{}', ?6)");
  Check(job.status(), "prepare jobs");
  Check(result.status(), "prepare results");
  Check(sample_row.status(), "prepare samples");
  Check(failure.status(), "prepare failures");
  Check(calibration.status(), "prepare calibrations");

  int64_t job_id = 0;
  std::vector<double> samples(samples_per_result);
  const Clock::time_point start = Clock::now();
  for (int night = 0; night < nights; ++night) {
    Check(db.Exec("BEGIN"), "begin night");
    const int64_t sweep_id = night + 1;
    auto sweep = db.Prepare(
        "INSERT INTO sweeps(sweep_id, name, spec, state, created_at, "
        "finished_at) VALUES (?1, 'nightly', '{}', 'done', ?2, ?3)");
    Check(sweep->Bind(1, sweep_id).Bind(2, Iso(night, 0)).Bind(3, Iso(night, 3600)).Run(), "sweep");
    for (int h = 1; h <= hosts; ++h) {
      if (night % 10 == 0) {  // hosts are calibrated every tenth night
        Check(calibration->Bind(1, int64_t{h})
                  .Bind(2, 120.0 / host_speed[h - 1])
                  .Bind(3, 65.0 / host_speed[h - 1])
                  .Bind(4, 40.0)
                  .Bind(5, 20.0)
                  .Bind(6, Iso(night, 0))
                  .Run(),
              "calibration");
        calibration->Reset();
      }
      for (size_t c = 0; c < configs.size(); ++c) {
        const Config& config = configs[c];
        ++job_id;
        const double median = config.base_ms * host_speed[h - 1] * (1 + noise(random));
        for (double& s : samples) s = median * (1 + std::abs(noise(random)));
        std::vector<double> sorted = samples;
        std::sort(sorted.begin(), sorted.end());
        auto at = [&](double p) { return sorted[static_cast<size_t>(p * (sorted.size() - 1))]; };
        json spec = {{"model", config.model},           {"mode", config.mode},
                     {"device", config.device},         {"dtype", config.dtype},
                     {"batch_size", config.batch_size}, {"threads", config.threads}};
        json detail = {{"ok", true},
                       {"model", config.model},
                       {"runtime",
                        {{"affinity", {0, 1}},
                         {"blas", "openblas"},
                         {"intraop_threads", config.threads},
                         {"interop_threads", 1},
                         {"omp_wait_policy", "default"},
                         {"onednn", true},
                         {"torch_version", "1.13.1"}}},
                       {"stats",
                        {{"n", samples_per_result},
                         {"median_ms", median},
                         {"min_ms", sorted.front()},
                         {"max_ms", sorted.back()},
                         {"p90_ms", at(0.9)},
                         {"p99_ms", at(0.99)},
                         {"q1_ms", at(0.25)},
                         {"q3_ms", at(0.75)},
                         {"iqr_ms", at(0.75) - at(0.25)},
                         {"noisy", false},
                         {"unsteady", false},
                         {"discarded_samples", 0},
                         {"timed_s", median * samples_per_result / 1000},
                         {"warmup_s", 0.2}}},
                       {"host_busy_cpus", 0.01},
                       {"steal_fraction", 0.001},
                       {"exit", "exited with code 0"},
                       {"gpu_telemetry_note", "not a GPU job"}};
        const std::string host_name = "host-" + std::to_string(h);
        const std::string finished = Iso(night, static_cast<int>(c) * 60);
        const bool failed = job_id % 200 == 0;
        job->Bind(1, job_id)
            .Bind(2, sweep_id)
            .Bind(3, host_name)
            .Bind(4, spec.dump())
            .Bind(5, int64_t{h})
            .Bind(6, Iso(night, 0))
            .Bind(7, finished)
            .Bind(8, failed ? "failed" : "done");
        if (failed) {
          job->Bind(9, kFailure);
        } else {
          job->BindNull(9);
        }
        Check(job->Run(), "job");
        job->Reset();
        if (failed) {
          Check(failure->Bind(1, job_id)
                    .Bind(2, int64_t{h})
                    .Bind(3, config.device)
                    .Bind(4, config.model)
                    .Bind(5, config.mode)
                    .Bind(6, config.dtype)
                    .Bind(7, config.batch_size)
                    .Bind(8, config.threads)
                    .Bind(9, kFailure)
                    .Bind(10, finished)
                    .Bind(11, sweep_id)
                    .Run(),
                "failure");
          failure->Reset();
          continue;
        }
        Check(result->Bind(1, job_id)
                  .Bind(2, int64_t{h})
                  .Bind(3, config.device)
                  .Bind(4, config.model)
                  .Bind(5, config.mode)
                  .Bind(6, config.dtype)
                  .Bind(7, config.batch_size)
                  .Bind(8, config.threads)
                  .Bind(9, samples_per_result)
                  .Bind(10, median)
                  .Bind(11, median * 0.02)
                  .Bind(12, sorted.front())
                  .Bind(13, sorted.back())
                  .Bind(14, at(0.9))
                  .Bind(15, at(0.99))
                  .Bind(16, at(0.25))
                  .Bind(17, at(0.75))
                  .Bind(18, at(0.75) - at(0.25))
                  .Bind(19, config.batch_size * 1000.0 / median)
                  .Bind(20, detail.dump())
                  .Bind(21, finished)
                  .Bind(22, sweep_id)
                  .Run(),
              "result");
        result->Reset();
        Check(sample_row->Bind(1, job_id)
                  .Bind(2, static_cast<int64_t>(samples.size()))
                  .BindBlob(3, benchfleet::PackSamples(samples))
                  .Run(),
              "samples");
        sample_row->Reset();
      }
    }
    Check(db.Exec("COMMIT"), "commit night");
    if ((night + 1) % 10 == 0) {
      std::fprintf(stderr, "night %d: %lld results, %.0f s\n", night + 1,
                   static_cast<long long>(job_id), Ms(Clock::now() - start) / 1000);
    }
  }
  Check(db.Exec("PRAGMA wal_checkpoint(TRUNCATE); ANALYZE;"), "checkpoint, analyze");
}

struct Timed {
  std::string view, what, sql;
  double median_ms = 0;
  int64_t rows = 0;
};

void TimeViews(const std::string& path) {
  auto opened = Database::Open(path, SQLITE_OPEN_READONLY);
  Check(opened.status(), "open");
  Database& db = **opened;
  auto scalar = [&](const std::string& sql) {
    auto stmt = db.Prepare(sql);
    Check(stmt.status(), sql);
    (void)stmt->Step();
    return stmt->Int(0);
  };
  const int64_t results = scalar("SELECT count(*) FROM results");
  const int64_t last_sweep = scalar("SELECT max(sweep_id) FROM sweeps");
  const int64_t some_job = scalar("SELECT max(job_id) / 2 FROM result_samples");
  const std::string sweep = std::to_string(last_sweep);
  std::vector<Timed> queries = {
      {"result_summary", "one night", "SELECT * FROM result_summary WHERE sweep_id = " + sweep},
      {"result_summary", "one host's history of one model",
       "SELECT sweep_id, batch_size, threads, dtype, median_ms FROM result_summary "
       "WHERE host = 'host-17' AND model = 'mlp' ORDER BY job_id"},
      {"result_summary", "the latest 100",
       "SELECT * FROM result_summary ORDER BY job_id DESC LIMIT 100"},
      {"cpu_gpu_speedup", "one night", "SELECT * FROM cpu_gpu_speedup WHERE sweep_id = " + sweep},
      {"batch_scaling", "one night", "SELECT * FROM batch_scaling WHERE sweep_id = " + sweep},
      {"thread_scaling", "one night", "SELECT * FROM thread_scaling WHERE sweep_id = " + sweep},
      {"dtype_comparison", "one night", "SELECT * FROM dtype_comparison WHERE sweep_id = " + sweep},
      {"parallel_scaling", "one night", "SELECT * FROM parallel_scaling WHERE sweep_id = " + sweep},
      {"host_calibration", "every host", "SELECT * FROM host_calibration"},
      {"job_failures", "one night", "SELECT * FROM job_failures WHERE sweep_id = " + sweep},
      {"samples", "one result",
       "SELECT idx, ms FROM samples WHERE job_id = " + std::to_string(some_job)},
  };
  std::printf("store: %s, %lld results, %.1f GiB\n", path.c_str(), static_cast<long long>(results),
              std::filesystem::file_size(path) / 1073741824.0);
  std::printf("%-18s %-34s %10s %8s\n", "view", "query", "median ms", "rows");
  Timed* slowest = nullptr;
  for (Timed& q : queries) {
    std::vector<double> runs;
    for (int run = 0; run < 5; ++run) {
      auto stmt = db.Prepare(q.sql);
      Check(stmt.status(), q.sql);
      const Clock::time_point start = Clock::now();
      int64_t rows = 0;
      while (true) {
        auto row = stmt->Step();
        Check(row.status(), q.sql);
        if (!*row) break;
        ++rows;
      }
      runs.push_back(Ms(Clock::now() - start));
      q.rows = rows;
    }
    std::sort(runs.begin(), runs.end());
    q.median_ms = runs[runs.size() / 2];
    std::printf("%-18s %-34s %10.1f %8lld\n", q.view.c_str(), q.what.c_str(), q.median_ms,
                static_cast<long long>(q.rows));
    if (slowest == nullptr || q.median_ms > slowest->median_ms) slowest = &q;
  }
  std::printf("\nslowest: %s (%s), %.1f ms\n%s\nEXPLAIN QUERY PLAN:\n", slowest->view.c_str(),
              slowest->what.c_str(), slowest->median_ms, slowest->sql.c_str());
  auto plan = db.Prepare("EXPLAIN QUERY PLAN " + slowest->sql);
  Check(plan.status(), "plan");
  while (*plan->Step()) std::printf("  %s\n", plan->Text(3).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_history: a year of nightly results in one store; how fast the views answer"};
  std::string path;
  bool generate = false;
  int hosts = 200, nights = 100, samples = 750;
  app.add_option("--db", path, "the store")->required();
  app.add_flag("--generate", generate, "make a new store first (replaces --db)");
  app.add_option("--hosts", hosts, "hosts")->capture_default_str();
  app.add_option("--nights", nights, "nights (one sweep of hosts x 50 configurations each)")
      ->capture_default_str();
  app.add_option("--samples", samples,
                 "raw samples per result (the quickstart's average at the default timing is ~750)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (generate) Generate(path, hosts, nights, samples);
  TimeViews(path);
  return 0;
}
