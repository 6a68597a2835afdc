// The store's side of host prices (host_prices, schemas/migrations/001_baseline.sql): the
// history of what an hour of each host costs, the newest row being its price.
#include "common/clock.h"
#include "coordinator/store.h"

namespace benchfleet {

Status Store::RecordAgentPrice(int64_t host_id, const HostPrice& price) {
  ASSIGN_OR_RETURN(auto last, db_->Prepare("SELECT per_hour, currency FROM host_prices "
                                           "WHERE host_id = ?1 AND source = 'agent' "
                                           "ORDER BY price_id DESC LIMIT 1"));
  last.Bind(1, host_id);
  ASSIGN_OR_RETURN(bool found, last.Step());
  if (found && last.Real(0) == price.per_hour && last.Text(1) == price.currency) return Status::Ok();
  Transaction tx(*db_);  // joins the loop round's group commit
  RETURN_IF_ERROR(tx.Begin());
  RETURN_IF_ERROR(Insert("host_prices", {{"host_id", host_id},
                                         {"per_hour", price.per_hour},
                                         {"currency", price.currency},
                                         {"set_at", UtcNowIso8601()},
                                         {"source", "agent"}}));
  return tx.Commit();
}

StatusOr<json> Store::SetHostPrice(const std::string& host, const HostPrice& price) {
  ASSIGN_OR_RETURN(auto find, db_->Prepare("SELECT host_id FROM hosts WHERE name = ?1"));
  find.Bind(1, host);
  ASSIGN_OR_RETURN(bool found, find.Step());
  if (!found) return NotFound("no host named \"" + host + "\" has registered");
  const int64_t host_id = find.Int(0);
  const std::string now = UtcNowIso8601();
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  RETURN_IF_ERROR(Insert("host_prices", {{"host_id", host_id},
                                         {"per_hour", price.per_hour},
                                         {"currency", price.currency},
                                         {"set_at", now},
                                         {"source", "cli"}}));
  RETURN_IF_ERROR(tx.Commit());
  return json{{"host", host}, {"per_hour", price.per_hour}, {"currency", price.currency}, {"set_at", now}};
}

}  // namespace benchfleet
