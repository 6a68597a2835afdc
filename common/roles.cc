#include "common/roles.h"

#include <algorithm>

#include "common/protocol.h"

namespace benchfleet {
namespace {

constexpr Role kAllRoles[] = {Role::kAgent, Role::kViewer, Role::kOperator, Role::kAdmin};

bool AtLeast(Role held, Role needed) { return static_cast<int>(held) >= static_cast<int>(needed); }

}  // namespace

const char* RoleName(Role role) {
  switch (role) {
    case Role::kAgent:
      return "agent";
    case Role::kViewer:
      return "viewer";
    case Role::kOperator:
      return "operator";
    case Role::kAdmin:
      return "admin";
  }
  return "unknown";
}

std::optional<Role> RoleNamed(std::string_view name) {
  for (Role role : kAllRoles) {
    if (name == RoleName(role)) return role;
  }
  return std::nullopt;
}

std::string RoleNames() {
  std::string names;
  const size_t count = std::size(kAllRoles);
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) names += i + 1 == count ? " or " : ", ";
    names += RoleName(kAllRoles[i]);
  }
  return names;
}

const char* ZapDomainOf(Role role) {
  return role == Role::kAgent ? kAgentsZapDomain : kClientsZapDomain;
}

Role ClientRoleOf(const std::string& user_id, bool curve) {
  if (!curve) return Role::kAdmin;
  return RoleNamed(user_id).value_or(Role::kAgent);
}

const std::vector<RequestRole>& ClientRequestRoles() {
  // Reading is a viewer's; changing what runs (sweeps, schedules, calibrations, models)
  // an operator's; what destroys data or changes what results mean (raw samples,
  // regression baselines, the prices behind costs) an admin's.
  static const std::vector<RequestRole> table = {
      {msg::kStatus, "", Role::kViewer},
      {msg::kResults, "", Role::kViewer},
      {msg::kQuery, "", Role::kViewer},
      {msg::kSchedule, "list", Role::kViewer},
      {msg::kSchedule, "history", Role::kViewer},
      {msg::kSubmit, "", Role::kOperator},
      {msg::kCancel, "", Role::kOperator},
      {msg::kSchedule, "add", Role::kOperator},
      {msg::kSchedule, "remove", Role::kOperator},
      {msg::kSchedule, "run_now", Role::kOperator},
      {msg::kCalibrate, "", Role::kOperator},
      {msg::kModelUpload, "", Role::kOperator},
      {msg::kPrune, "", Role::kAdmin},
      {msg::kBaselineReset, "", Role::kAdmin},
      {msg::kSetPrice, "", Role::kAdmin},
  };
  return table;
}

Role LeastRoleFor(std::string_view type, std::string_view action) {
  std::optional<Role> whole_type, exact, least_action;
  for (const RequestRole& row : ClientRequestRoles()) {
    if (type != row.type) continue;
    const std::string_view row_action = row.action;
    if (row_action.empty()) {
      whole_type = row.least;
    } else if (row_action == action) {
      exact = row.least;
    } else if (!least_action || !AtLeast(row.least, *least_action)) {
      least_action = row.least;
    }
  }
  if (exact) return *exact;
  if (whole_type) return *whole_type;
  if (action.empty() && least_action) return *least_action;
  return Role::kAdmin;
}

Status CheckRole(Role held, std::string_view type, std::string_view action) {
  const Role needed = LeastRoleFor(type, action);
  if (AtLeast(held, needed)) return Status::Ok();
  std::string request(type);
  if (!action.empty()) request += " " + std::string(action);
  return PermissionDenied(request + " needs the " + RoleName(needed) + " role; this key has the " +
                          RoleName(held) + " role");
}

}  // namespace benchfleet
