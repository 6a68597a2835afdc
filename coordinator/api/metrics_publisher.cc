#include "coordinator/api/metrics_publisher.h"

#include <mutex>

#include "common/limits.h"
#include "common/log.h"
#include "sqlite/reader.h"

namespace benchfleet {
namespace {

// Queued and running jobs per requirement, from the counts the store's triggers keep.
constexpr const char* kActiveJobCountsSql =
    "SELECT requirement_id, SUM(CASE WHEN state = 'queued' THEN n ELSE 0 END), "
    "SUM(CASE WHEN state = 'running' THEN n ELSE 0 END) FROM job_counts "
    "WHERE state IN ('queued', 'running') AND n > 0 GROUP BY requirement_id";

}  // namespace

// Queued and running jobs per requirement, read by each scrape on a read-only connection
// of its own: a scan of the per-sweep counts, which on a store of many sweeps took
// ~12 ms (20,000 sweeps), too long for the loop that serves heartbeats.
class JobCountReader {
 public:
  explicit JobCountReader(std::string db_path) : db_path_(std::move(db_path)) {}

  StatusOr<std::vector<RequirementJobCount>> Read() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!reader_) {
      ASSIGN_OR_RETURN(reader_, StoreReader::Open(db_path_));
    }
    ASSIGN_OR_RETURN(Rows rows, reader_->Query(kActiveJobCountsSql, kMaxReplyRows));
    std::vector<RequirementJobCount> out;
    std::vector<int64_t> queued;
    for (const nlohmann::json& row : rows.rows) {
      out.push_back({row[0].get<int64_t>(), row[1].get<int64_t>(), row[2].get<int64_t>()});
      if (out.back().queued > 0) queued.push_back(out.back().requirement_id);
    }
    std::lock_guard<std::mutex> queued_lock(queued_mutex_);
    queued_.swap(queued);
    return out;
  }
  // The requirements that had queued jobs at the last read. For the loop: it never
  // waits for a read in progress (another mutex).
  std::vector<int64_t> Queued() {
    std::lock_guard<std::mutex> lock(queued_mutex_);
    return queued_;
  }

 private:
  const std::string db_path_;
  std::mutex mutex_;                     // one read at a time: the connection is not shared
  std::unique_ptr<StoreReader> reader_;  // guarded by mutex_; opened by the first scrape
  std::mutex queued_mutex_;
  std::vector<int64_t> queued_;  // guarded by queued_mutex_
};

StatusOr<std::unique_ptr<MetricsPublisher>> MetricsPublisher::Start(
    const std::string& address, const CoordinatorContext& context, Dispatcher& dispatcher) {
  ASSIGN_OR_RETURN(const MetricsAddress parsed, ParseMetricsAddress(address));
  auto latest = std::make_shared<LatestSnapshot<MetricsSnapshot>>();
  auto job_counts = std::make_shared<JobCountReader>(context.options.db_path);
  MetricsServer::Render render = [latest, job_counts]() -> std::optional<std::string> {
    const std::shared_ptr<const MetricsSnapshot> snapshot = latest->Latest();
    if (!snapshot) return std::nullopt;
    MetricsSnapshot scraped = *snapshot;
    StatusOr<std::vector<RequirementJobCount>> counts = job_counts->Read();
    if (counts.ok()) {
      AddJobCounts(*counts, &scraped);
    } else {
      LOG_ERROR("metrics: cannot read the job counts: " << counts.status().message());
    }
    return RenderExposition(scraped);
  };
  ASSIGN_OR_RETURN(auto server, MetricsServer::Start(parsed, std::move(render)));
  std::unique_ptr<MetricsPublisher> publisher(new MetricsPublisher(
      context, dispatcher, std::move(latest), std::move(job_counts), std::move(server)));
  publisher->Publish(MonoNow());
  return publisher;
}

MetricsPublisher::MetricsPublisher(const CoordinatorContext& context, Dispatcher& dispatcher,
                                   std::shared_ptr<LatestSnapshot<MetricsSnapshot>> latest,
                                   std::shared_ptr<JobCountReader> job_counts,
                                   std::unique_ptr<MetricsServer> server)
    : ctx_(context),
      dispatcher_(dispatcher),
      latest_(std::move(latest)),
      job_counts_(std::move(job_counts)),
      server_(std::move(server)),
      start_time_s_(static_cast<double>(UnixMicrosNow()) / 1e6) {}

void MetricsPublisher::LoopPassDone(MonoTime started, MonoTime ended) {
  loop_iteration_.Record(std::chrono::duration<double>(ended - started).count());
  if (ended >= next_publish_) Publish(ended);
}

void MetricsPublisher::Publish(MonoTime now) {
  next_publish_ = now + Millis(kMetricsPublishMs);
  auto snapshot = std::make_shared<MetricsSnapshot>();
  for (const char* state : AgentState::kStates) snapshot->agents_by_state[state] = 0;
  for (Agent* agent : ctx_.registry.All()) {
    ++snapshot->agents_by_state[AgentState::StateName(
        ctx_.leases.LeasedJobOf(agent->description.name).has_value())];
  }
  // The job counts themselves are read by each scrape, on its own thread (JobCounts).
  snapshot->requirement_names = dispatcher_.RequirementNames();
  // Only for requirements with queued jobs (as the last scrape found them): the store
  // holds every requirement ever submitted, and each costs a pass over the agents.
  snapshot->matching_agents = dispatcher_.MatchingAgents(job_counts_->Queued());
  snapshot->counters = ctx_.counters;
  snapshot->loop_iteration = loop_iteration_;
  snapshot->store_commit = store_commit_;
  snapshot->version = BENCHFLEET_VERSION;
  snapshot->start_time_s = start_time_s_;
  latest_->Publish(std::move(snapshot));
}

}  // namespace benchfleet
