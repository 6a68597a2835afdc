#include "common/roles.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <tuple>

#include "common/messages.h"
#include "common/protocol.h"
#include "common/test_paths.h"

namespace benchfleet {
namespace {

TEST(RolesTest, NamesRoundTrip) {
  for (Role role : {Role::kAgent, Role::kViewer, Role::kOperator, Role::kAdmin}) {
    EXPECT_EQ(RoleNamed(RoleName(role)), role);
  }
  EXPECT_EQ(RoleNamed("Admin"), std::nullopt);
  EXPECT_EQ(RoleNamed(""), std::nullopt);
  EXPECT_EQ(RoleNames(), "agent, viewer, operator or admin");
}

TEST(RolesTest, AgentKeysBelongOnTheAgentsSocketOnly) {
  EXPECT_STREQ(ZapDomainOf(Role::kAgent), kAgentsZapDomain);
  for (Role role : {Role::kViewer, Role::kOperator, Role::kAdmin}) {
    EXPECT_STREQ(ZapDomainOf(role), kClientsZapDomain);
  }
  EXPECT_STRNE(kAgentsZapDomain, kClientsZapDomain);
}

TEST(RolesTest, EachRoleMaySendWhatTheOnesBelowMay) {
  for (const char* type : {msg::kStatus, msg::kResults, msg::kQuery}) {
    EXPECT_TRUE(CheckRole(Role::kViewer, type).ok()) << type;
    EXPECT_FALSE(CheckRole(Role::kAgent, type).ok()) << type;
  }
  for (const char* type : {msg::kSubmit, msg::kCancel, msg::kCalibrate, msg::kModelUpload}) {
    EXPECT_FALSE(CheckRole(Role::kViewer, type).ok()) << type;
    EXPECT_TRUE(CheckRole(Role::kOperator, type).ok()) << type;
    EXPECT_TRUE(CheckRole(Role::kAdmin, type).ok()) << type;
  }
  for (const char* type : {msg::kPrune, msg::kBaselineReset, msg::kSetPrice}) {
    EXPECT_FALSE(CheckRole(Role::kOperator, type).ok()) << type;
    EXPECT_TRUE(CheckRole(Role::kAdmin, type).ok()) << type;
  }
}

TEST(RolesTest, ScheduleReadsAreAViewersAndChangesAnOperators) {
  EXPECT_TRUE(CheckRole(Role::kViewer, msg::kSchedule, "list").ok());
  EXPECT_TRUE(CheckRole(Role::kViewer, msg::kSchedule, "history").ok());
  for (const char* action : {"add", "remove", "run_now"}) {
    EXPECT_FALSE(CheckRole(Role::kViewer, msg::kSchedule, action).ok()) << action;
    EXPECT_TRUE(CheckRole(Role::kOperator, msg::kSchedule, action).ok()) << action;
  }
  // Before its action is known, a schedule request needs what its least action needs.
  EXPECT_EQ(LeastRoleFor(msg::kSchedule), Role::kViewer);
  // An action nobody put in the table is closed, like an unknown type.
  EXPECT_EQ(LeastRoleFor(msg::kSchedule, "pause"), Role::kAdmin);
}

TEST(RolesTest, EveryScheduleActionHasARow) {
  using Action = ScheduleRequest::Action;
  for (Action action :
       {Action::kAdd, Action::kList, Action::kRemove, Action::kRunNow, Action::kHistory}) {
    const std::string_view name = ScheduleActionName(action);
    ASSERT_FALSE(name.empty());
    bool found = false;
    for (const RequestRole& row : ClientRequestRoles()) {
      found = found || (std::string_view(row.type) == msg::kSchedule && name == row.action);
    }
    EXPECT_TRUE(found) << "schedule " << name << " has no row in ClientRequestRoles()";
  }
}

TEST(RolesTest, AnUnknownRequestNeedsAdmin) {
  EXPECT_EQ(LeastRoleFor("frobnicate"), Role::kAdmin);
  EXPECT_FALSE(CheckRole(Role::kOperator, "frobnicate").ok());
  EXPECT_TRUE(CheckRole(Role::kAdmin, "frobnicate").ok());
}

TEST(RolesTest, ARefusalNamesTheRoleNeededAndTheRoleHeld) {
  Status refused = CheckRole(Role::kOperator, msg::kPrune);
  EXPECT_EQ(refused.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(refused.message(), "prune needs the admin role; this key has the operator role");
  EXPECT_EQ(CheckRole(Role::kViewer, msg::kSchedule, "add").message(),
            "schedule add needs the operator role; this key has the viewer role");
  EXPECT_EQ(StatusCodeName(StatusCode::kPermissionDenied), std::string("permission_denied"));
}

// docs/security.md lists the table row for row, in the same order.
TEST(RolesTest, TheDocListsTheTable) {
  std::ifstream in(test_paths::DocsDir() + "/security.md");
  ASSERT_TRUE(in) << "docs/security.md";
  auto unquote = [](std::string cell) {
    std::string out;
    for (char c : cell) {
      if (c != '`' && c != ' ') out += c;
    }
    return out;
  };
  std::vector<std::tuple<std::string, std::string, std::string>> documented;
  bool in_table = false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| request | action | least role |", 0) == 0) {
      in_table = true;
      continue;
    }
    if (!in_table || line.rfind("|---", 0) == 0) continue;
    if (line.empty() || line[0] != '|') break;
    std::vector<std::string> cells;
    std::istringstream row(line.substr(1));
    std::string cell;
    while (std::getline(row, cell, '|')) cells.push_back(unquote(cell));
    ASSERT_GE(cells.size(), 3u) << line;
    documented.emplace_back(cells[0], cells[1], cells[2]);
  }
  std::vector<std::tuple<std::string, std::string, std::string>> table;
  for (const RequestRole& row : ClientRequestRoles())
    table.emplace_back(row.type, row.action, RoleName(row.least));
  EXPECT_EQ(documented, table)
      << "docs/security.md, \"| request | action | least role |\": one row per "
         "ClientRequestRoles() row, in its order";
}

}  // namespace
}  // namespace benchfleet
