// benchfleet: the command-line client. Parses flags (CLI11) and calls cli/commands.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "cli/commands.h"
#include "cli/report.h"
#include "common/cli_parse.h"
#include "common/limits.h"

int main(int argc, char** argv) {
  using namespace benchfleet;
  CLI::App app{"benchfleet: submit benchmark sweeps to a benchfleet coordinator and read results"};
  app.require_subcommand(1);
  ClientOptions client;
  const char* env = std::getenv("BENCHFLEET_COORDINATOR");
  client.coordinator = env && *env ? env : "tcp://127.0.0.1:5555";
  double timeout_s = kClientReplyTimeoutMs / 1000.0;
  auto* coordinator_flag =
      app.add_option("--coordinator", client.coordinator,
                     "coordinator's client endpoint (env BENCHFLEET_COORDINATOR)")
          ->capture_default_str();
  app.add_option("--timeout", timeout_s, "seconds to wait for each reply")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  const char* env_key = std::getenv("BENCHFLEET_CURVE_KEY");
  const char* env_server = std::getenv("BENCHFLEET_SERVER_KEY");
  std::string curve_key = env_key ? env_key : "";
  std::string server_key = env_server ? env_server : "";
  app.add_option("--curve-key", curve_key,
                 "this client's CURVE key pair file (env BENCHFLEET_CURVE_KEY)");
  app.add_option("--server-key", server_key,
                 "the coordinator's CURVE public key or .pub file (env BENCHFLEET_SERVER_KEY)");
  std::string format_name = "table";
  std::optional<int64_t> sweep_id;

  SubmitOptions submit;
  auto* submit_cmd = app.add_subcommand("submit", "submit a sweep file");
  submit_cmd->add_option("FILE", submit.file, "sweep file (JSON, see schemas/sweep.md)")
      ->required();
  submit_cmd->add_flag("--wait", submit.wait,
                       "show progress and wait until the sweep has finished");
  submit_cmd->add_option("--wait-timeout", submit.wait_timeout_s,
                         "stop waiting after this many seconds (0: no limit)");
  submit_cmd->add_option("--label", submit.labels,
                         "KEY=VALUE stored with the sweep (repeatable; over the file's labels), "
                         "e.g. --label commit=abc123");
  submit_cmd->add_option("--submission-id", submit.submission_id,
                         "resend a submission whose reply was lost: the coordinator returns the "
                         "sweep it stored under this id instead of storing a second one");

  auto* status_cmd = app.add_subcommand("status", "show sweeps, agents and counters");
  status_cmd->add_option("--sweep", sweep_id, "only this sweep");
  status_cmd->add_option("--format", format_name, "table, json or csv")->capture_default_str();

  bool all_columns = false, wide = false;
  std::string result_columns;
  std::string view = "summary";
  auto* results_cmd = app.add_subcommand("results", "show results (the result_summary view)");
  results_cmd->add_option("--sweep", sweep_id, "only this sweep");
  results_cmd->add_option("--format", format_name, "table, json, csv or markdown")
      ->capture_default_str();
  auto* wide_flag = results_cmd->add_flag(
      "--wide", wide, "the wide table: the configuration and every result field marked `show`");
  auto* all_flag = results_cmd->add_flag("--all-columns", all_columns,
                                         "every column of result_summary in the table");
  results_cmd
      ->add_option(
          "--columns", result_columns,
          "only these columns, comma-separated, in every format (e.g. host,model,median,flags)")
      ->excludes(wide_flag)
      ->excludes(all_flag);
  wide_flag->excludes(all_flag);
  results_cmd->add_option("--view", view, ResultViewsHelp())->capture_default_str();

  std::vector<std::string> calibrate_agents;
  bool calibrate_wait = false;
  auto* calibrate_cmd =
      app.add_subcommand("calibrate", "measure the peak GFLOP/s and memory bandwidth of hosts");
  calibrate_cmd->add_option("--agent", calibrate_agents,
                            "agent to calibrate (repeatable; default all)");
  calibrate_cmd->add_flag("--wait", calibrate_wait, "wait and show the measured peaks");

  std::string sql;
  auto* query_cmd =
      app.add_subcommand("query", "run a read-only SQL statement on the results store");
  query_cmd->add_option("SQL", sql, "one SQL statement, e.g. \"select * from result_summary\"")
      ->required();
  query_cmd->add_option("--format", format_name, "table, json, csv or markdown")
      ->capture_default_str();

  int64_t cancel_id = 0;
  auto* cancel_cmd = app.add_subcommand("cancel", "cancel the queued jobs of a sweep");
  cancel_cmd->add_option("SWEEP_ID", cancel_id, "sweep id")->required();

  std::string prune_age;
  double prune_wait_s = 3600;
  auto* prune_cmd = app.add_subcommand(
      "prune", "drop the raw samples of old results (their statistics stay), then vacuum");
  prune_cmd->add_option("--samples-older-than", prune_age, "an age: 90d, 12h, 30m, 45s")
      ->required();
  prune_cmd
      ->add_option("--wait-timeout", prune_wait_s, "seconds to wait for the coordinator to finish")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();

  CompareOptions compare;
  auto* compare_cmd = app.add_subcommand(
      "compare",
      "two sweeps cell by cell (unpaired: Welch's t on their processes' logs), one sweep's paired "
      "versus, or a pivot of medians");
  compare_cmd
      ->add_option("SWEEPS", compare.sweeps,
                   "SWEEP_A SWEEP_B, one sweep with versus, or one sweep with --rows/--cols")
      ->required()
      ->expected(1, 2);
  compare_cmd
      ->add_option("--rows", compare.rows,
                   "pivot rows: model,batch_size,mode,dtype,threads,device,host")
      ->delimiter(',');
  compare_cmd->add_option("--cols", compare.cols,
                          "pivot columns: host, device, dtype, threads or sweep");
  compare_cmd->add_option("--baseline", compare.baseline,
                          "the column value ratios are to (default: the first)");
  compare_cmd->add_option("--ratio", compare.ratio, "a change smaller than this ratio is unchanged")
      ->capture_default_str();
  compare_cmd
      ->add_option(
          "--format", format_name,
          "table, json, csv, markdown (a pull-request comment) or junit (a test per configuration)")
      ->capture_default_str();
  std::string compare_fail_on;
  compare_cmd
      ->add_option("--fail-on", compare_fail_on,
                   "slower: exit 1 when any configuration is slower in SWEEP_B")
      ->check(CLI::IsMember({"slower"}));
  compare_cmd->footer(
      "Exit status: 0 compared, and nothing --fail-on names was found; 1 it was found; 2 "
      "could not compare (bad flags, the same sweep twice, an unknown sweep, one without "
      "results, no configuration in common, no coordinator or store).");

  std::string regressions_since;
  auto* regressions_cmd = app.add_subcommand(
      "regressions", "confirmed regressions and improvements (docs/regressions.md)");
  regressions_cmd->add_option("--since", regressions_since,
                              "only those decided within this age: 24h, 7d");
  regressions_cmd
      ->add_option("--format", format_name,
                   "table, json, csv, markdown or junit (a test per configuration)")
      ->capture_default_str();
  std::string regressions_fail_on;
  regressions_cmd
      ->add_option("--fail-on", regressions_fail_on,
                   "confirmed: exit 1 when any confirmed regression (not an improvement) is listed")
      ->check(CLI::IsMember({"confirmed"}));
  regressions_cmd->footer(
      "Exit status: 0 read, and nothing --fail-on names was found; 1 it was found; 2 could "
      "not read them (bad flags, no coordinator or store).");
  std::string reset_host, reset_model, reset_note;
  auto* baseline_cmd = app.add_subcommand("baseline", "regression baselines");
  baseline_cmd->require_subcommand(1);
  auto* baseline_reset = baseline_cmd->add_subcommand(
      "reset", "mark a known step: results before now leave the baseline, so it is not flagged");
  baseline_reset->add_option("--host", reset_host, "only this host's series (default: every host)");
  baseline_reset->add_option("--model", reset_model,
                             "only this model's series (default: every model)");
  baseline_reset->add_option("--note", reset_note, "why (kept with the reset)");

  std::string price_host, price_currency = kDefaultCurrency;
  double price_per_hour = 0;
  auto* host_cmd = app.add_subcommand("host", "facts the fleet keeps about a host");
  host_cmd->require_subcommand(1);
  auto* host_set_price = host_cmd->add_subcommand(
      "set-price",
      "what an hour of a host costs from now on, for the cost views (docs/results.md, Cost)");
  host_set_price->add_option("host", price_host, "the agent's name")->required();
  host_set_price->add_option("price", price_per_hour, "price per hour")
      ->required()
      ->check(CLI::Range(0.0, kMaxPricePerHour));
  host_set_price->add_option("--currency", price_currency, "ISO 4217 code")->capture_default_str();

  std::string recommend_model, recommend_by = "throughput";
  std::optional<double> recommend_slo, recommend_drop;
  auto* recommend_cmd = app.add_subcommand(
      "recommend",
      "per host, the Pareto-optimal configurations of a model and the best under constraints");
  recommend_cmd->add_option("--model", recommend_model, "the model")->required();
  recommend_cmd->add_option("--slo-p99-ms", recommend_slo, "p99 latency at most this (ms)");
  recommend_cmd->add_option(
      "--max-accuracy-drop", recommend_drop,
      "accuracy loss at most this (1 - top-1 agreement, else relative error)");
  recommend_cmd->add_option("--by", recommend_by, "throughput, latency, cost or energy")
      ->capture_default_str();
  recommend_cmd->add_option("--format", format_name, "table, json or markdown")
      ->capture_default_str();

  ScheduleOptions schedule;
  auto* schedule_cmd = app.add_subcommand(
      "schedule",
      "run a sweep file by itself at the slots of a cron expression (docs/schedules.md)");
  schedule_cmd->require_subcommand(1);
  auto* schedule_add = schedule_cmd->add_subcommand("add", "add a schedule");
  schedule_add->add_option("--name", schedule.name, "its name: letters, digits, '-', '_', '.'")
      ->required();
  schedule_add
      ->add_option("--cron", schedule.cron,
                   "minute hour day-of-month month day-of-week, e.g. \"0 2 * * *\"")
      ->required();
  schedule_add->add_option("--tz", schedule.tz, "IANA time zone the expression is read in")
      ->capture_default_str();
  schedule_add
      ->add_option("--overlap", schedule.overlap,
                   "skip: a slot while the last sweep still runs is skipped; queue: stored anyway")
      ->check(CLI::IsMember({"skip", "queue"}))
      ->capture_default_str();
  schedule_add->add_option(
      "--start-deadline", schedule.start_deadline_s,
      "seconds after its slot a firing may still start after downtime (default: one period)");
  schedule_add->add_option(
      "--label", schedule.labels,
      "KEY=VALUE stored with each of its sweeps (repeatable), e.g. --label team=infra");
  schedule_add->add_option("FILE", schedule.file, "sweep file (JSON, see schemas/sweep.md)")
      ->required();
  auto* schedule_list =
      schedule_cmd->add_subcommand("list", "list the schedules and their next slots");
  schedule_list->add_option("--format", format_name, "table, json or csv")->capture_default_str();
  auto* schedule_remove =
      schedule_cmd->add_subcommand("remove", "remove a schedule (its history stays)");
  schedule_remove->add_option("NAME", schedule.name, "the schedule")->required();
  auto* schedule_run_now =
      schedule_cmd->add_subcommand("run-now", "submit a schedule's sweep at once");
  schedule_run_now->add_option("NAME", schedule.name, "the schedule")->required();
  auto* schedule_history =
      schedule_cmd->add_subcommand("history", "every slot's outcome and sweep, newest first");
  schedule_history->add_option("NAME", schedule.name, "only this schedule");
  schedule_history->add_option("--limit", schedule.limit, "rows")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  schedule_history->add_option("--format", format_name, "table, json or csv")
      ->capture_default_str();

  ReportOptions report;
  auto* report_cmd = app.add_subcommand(
      "report",
      "write one self-contained HTML page of charts of a sweep or a time range (docs/results.md)");
  auto* report_sweep = report_cmd->add_option("--sweep", report.sweep, "only this sweep");
  report_cmd
      ->add_option("--since", report.since, "every sweep with results within this age: 24h, 7d")
      ->excludes(report_sweep)
      ->capture_default_str();
  report_cmd->add_option("--out", report.out, "the HTML file to write")->required();

  std::string keygen_prefix;
  auto* keygen_cmd =
      app.add_subcommand("keygen", "make a CURVE key pair: PREFIX.key and PREFIX.pub");
  keygen_cmd->add_option("PREFIX", keygen_prefix, "path prefix of the two files")->required();
  bool keygen_force = false;
  keygen_cmd->add_flag("--force", keygen_force,
                       "replace existing key files (peers that trust the old key are locked out)");

  std::string merge_out;
  std::vector<std::string> merge_stores;
  auto* merge_cmd = app.add_subcommand(
      "merge",
      "merge the stores of several coordinators (sites) into one store to read with --db "
      "(docs/sites.md)");
  merge_cmd
      ->add_option("OUT", merge_out,
                   "the merged store: written whole beside it, then moved into place; an existing "
                   "one (from an earlier merge) gains what it lacks")
      ->required();
  merge_cmd
      ->add_option("STORES", merge_stores,
                   "each site's results.db as PATH or NAME=PATH (the site's name; default: the "
                   "file's name without .db); merged again, a store adds only what it lacks")
      ->required()
      ->expected(1, -1);

  // The read commands answer from a store file instead of the coordinator (cli/reads.h).
  const char* env_db = std::getenv("BENCHFLEET_DB");
  std::string db_file = env_db ? env_db : "";
  bool db_flag = false;
  for (CLI::App* read_cmd :
       {results_cmd, query_cmd, compare_cmd, regressions_cmd, recommend_cmd, report_cmd}) {
    read_cmd->add_option(
        "--db", db_file,
        "read this results store file (results.db) here, read-only, with no coordinator "
        "(env BENCHFLEET_DB)");
  }

  if (const int exit_status = ParseCommandLine(app, argc, argv); exit_status >= 0)
    return exit_status;
  for (CLI::App* read_cmd :
       {results_cmd, query_cmd, compare_cmd, regressions_cmd, recommend_cmd, report_cmd}) {
    db_flag = db_flag || read_cmd->count("--db") > 0;
  }
  if (*keygen_cmd) return KeygenCommand(keygen_prefix, keygen_force);
  if (*merge_cmd) return MergeCommand(merge_out, merge_stores);
  if (curve_key.empty() != server_key.empty()) {
    std::cerr << "benchfleet: --curve-key and --server-key go together\n";
    return 2;
  }
  if (!curve_key.empty()) {
    auto pair = ReadCurveKeyPair(curve_key);
    auto server = ReadCurvePublicKey(server_key);
    for (const Status& s : {pair.status(), server.status()}) {
      if (!s.ok()) {
        std::cerr << "benchfleet: " << s.message() << "\n";
        return 2;
      }
    }
    client.curve = CurveClientKeys{*pair, *server};
  }
  client.timeout_ms = static_cast<int>(timeout_s * 1000);
  auto format = ParseRowFormat(format_name);
  if (!format.ok()) {
    std::cerr << "benchfleet: " << format.status().message() << "\n";
    return 2;
  }
  if (*format == RowFormat::kJunit && !*compare_cmd && !*regressions_cmd) {
    std::cerr
        << "benchfleet: --format junit is for compare and regressions, whose rows pass or fail\n";
    return 2;
  }
  // --db on the command line, else BENCHFLEET_DB unless --coordinator is given.
  if (db_flag && coordinator_flag->count() > 0) {
    std::cerr << "benchfleet: --db reads a store file here and --coordinator asks a coordinator: "
                 "give one\n";
    return 2;
  }
  const std::string store_file = db_flag || coordinator_flag->count() == 0 ? db_file : "";
  const std::unique_ptr<Reads> reads =
      store_file.empty() ? CoordinatorReads(client) : StoreFileReads(store_file);
  if (*submit_cmd) return SubmitCommand(client, submit);
  if (*status_cmd) return StatusCommand(client, sweep_id, *format);
  if (*results_cmd) {
    if (view != "summary") return ViewCommand(*reads, view, sweep_id, *format);
    ResultColumnChoice columns;
    if (wide) columns.kind = ResultColumnChoice::Kind::kWide;
    if (all_columns) columns.kind = ResultColumnChoice::Kind::kAll;
    if (results_cmd->count("--columns")) {
      columns.kind = ResultColumnChoice::Kind::kNamed;
      columns.names = SplitColumnList(result_columns);
    }
    return ResultsCommand(*reads, sweep_id, *format, columns);
  }
  if (*calibrate_cmd) return CalibrateCommand(client, calibrate_agents, calibrate_wait);
  if (*query_cmd) return QueryCommand(*reads, sql, *format);
  if (*cancel_cmd) return CancelCommand(client, cancel_id);
  if (*prune_cmd) return PruneCommand(client, prune_age, prune_wait_s);
  if (*regressions_cmd) {
    return RegressionsCommand(*reads, regressions_since, *format,
                              regressions_fail_on == "confirmed");
  }
  if (*recommend_cmd) {
    RecommendOptions options;
    const auto by = ParseRecommendBy(recommend_by);
    if (!by) {
      std::cerr << "benchfleet: --by must be throughput, latency, cost or energy, got \""
                << recommend_by << "\"\n";
      return 2;
    }
    options.by = *by;
    options.slo_p99_ms = recommend_slo;
    options.max_accuracy_drop = recommend_drop;
    return RecommendCommand(*reads, recommend_model, options, *format);
  }
  if (*compare_cmd) {
    compare.fail_on_slower = compare_fail_on == "slower";
    return CompareCommand(*reads, compare, *format);
  }
  if (*report_cmd) return ReportCommand(*reads, report);
  if (*baseline_reset) return BaselineResetCommand(client, reset_host, reset_model, reset_note);
  if (*host_set_price) return SetPriceCommand(client, price_host, price_per_hour, price_currency);
  if (*schedule_cmd) {
    for (auto* sub :
         {schedule_add, schedule_list, schedule_remove, schedule_run_now, schedule_history}) {
      if (*sub) schedule.action = sub->get_name();
    }
    return ScheduleCommand(client, schedule, *format);
  }
  return 2;
}
