// Roles: what the holder of a CURVE key may do at the coordinator (docs/security.md).
// The allow-list gives every key one role (coordinator/security/allow_list.h). An agent key is
// admitted on the agents' socket only and every other key on the clients' socket only:
// the two sockets have ZAP domains of their own, and the ZAP handler (coordinator/security/zap.h)
// admits a key only on its role's domain, naming the role in its reply's User-Id. The
// coordinator reads that User-Id from every client message and checks the request
// against the one table below before anything is done for it.
//
// The client roles are ordered viewer < operator < admin: each may do all that the ones
// below it may. An agent key holds no client right at all. Without CURVE there is no
// key, and every client acts as admin.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace benchfleet {

// In order of rights: a role may send every request a lower one may (agent: none).
enum class Role { kAgent, kViewer, kOperator, kAdmin };

// The ZAP domains of the coordinator's two CURVE server sockets (ZMQ_ZAP_DOMAIN); a key
// is admitted only on the one of its role (ZapDomainOf).
inline constexpr const char* kAgentsZapDomain = "benchfleet-agents";
inline constexpr const char* kClientsZapDomain = "benchfleet-clients";

// "agent", "viewer", "operator", "admin": the names on allow-list lines and in ZAP replies.
const char* RoleName(Role role);
// The role of that name; nullopt for anything else (names are lower case, exact).
std::optional<Role> RoleNamed(std::string_view name);
// Every role's name, for error texts: "agent, viewer, operator or admin".
std::string RoleNames();
// The ZAP domain on which a key of `role` is admitted.
const char* ZapDomainOf(Role role);
// The role of a client whose connection's User-Id is `user_id` (ReceiveFrames). Without
// CURVE there is no key and the client acts as admin; with it, a User-Id that names no
// client role (the ZAP handler never admits one) holds no client right.
Role ClientRoleOf(const std::string& user_id, bool curve);

// One row of the table: a client request type (common/protocol.h, msg::), for
// `schedule` one of its actions (empty: every action of the type), and the least role
// that may send it.
struct RequestRole {
  const char* type;
  const char* action;
  Role least;
};

// The table, in the order docs/security.md lists it. A type not in it needs admin, so a
// request added later is closed until someone decides who may send it.
const std::vector<RequestRole>& ClientRequestRoles();

// The least role that may send a `type` request with `action`: the row of that action,
// else the row of the whole type, else admin. With no action for a type whose rows
// differ by action (schedule), the least role any of its actions needs: the check made
// before the request's action is known, which the action's own check then narrows.
Role LeastRoleFor(std::string_view type, std::string_view action = {});

// OK when a client of role `held` may send the request; otherwise kPermissionDenied
// naming both roles ("prune needs the admin role; this key has the operator role").
Status CheckRole(Role held, std::string_view type, std::string_view action = {});

}  // namespace benchfleet
