// The commands that keep the fleet: keygen, prune, baseline reset, price.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

#include "cli/ci_output.h"
#include "cli/client.h"
#include "cli/command_support.h"
#include "cli/compare.h"
#include "cli/model_upload.h"
#include "cli/queries.h"
#include "cli/results_table.h"
#include "common/client_replies.h"
#include "common/clock.h"
#include "common/files.h"
#include "common/host_pace.h"
#include "common/job_spec.h"
#include "common/median.h"
#include "common/messages.h"
#include "common/model_files.h"
#include "common/result_fields.h"
#include "common/status_reply.h"
#include "common/sweep.h"

namespace benchfleet {

int KeygenCommand(const std::string& prefix, bool force) {
  auto pair = GenerateCurveKeyPair();
  if (!pair.ok()) return Fail(pair.status());
  Status written = WriteCurveKeyPair(*pair, prefix, force);
  if (written.code() == StatusCode::kFailedPrecondition) {
    return Fail(FailedPrecondition(written.message() + "; give --force to replace it anyway"));
  }
  if (!written.ok()) return Fail(written);
  std::cout << "wrote " << prefix << ".key (keep it secret) and " << prefix << ".pub\n"
            << "public key: " << pair->public_key << "\n";
  return 0;
}

StatusOr<double> ParseAge(const std::string& text) {
  static const std::map<char, double> kUnitSeconds = {
      {'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}, {'w', 7 * 86400}};
  const std::string error =
      "\"" + text + "\": an age is a number and a unit, e.g. 90d, 12h, 30m, 45s";
  if (text.empty()) return InvalidArgument(error);
  double unit = 1;
  std::string number = text;
  if (auto found = kUnitSeconds.find(text.back()); found != kUnitSeconds.end()) {
    unit = found->second;
    number.pop_back();
  }
  if (number.empty() || number.find_first_not_of("0123456789.") != std::string::npos ||
      std::count(number.begin(), number.end(), '.') > 1 || number == ".") {
    return InvalidArgument(error);
  }
  return std::stod(number) * unit;
}

int PruneCommand(ClientOptions client_options, const std::string& age, double wait_timeout_s) {
  auto seconds = ParseAge(age);
  if (!seconds.ok()) return Fail(seconds.status());
  // The coordinator answers once the whole store has been worked through.
  client_options.timeout_ms = std::max(client_options.timeout_ms,
                                       static_cast<int>(std::min(wait_timeout_s, 86400.0) * 1000));
  auto client = Connect(client_options);
  if (!client.ok()) return Fail(client.status());
  auto reply = (*client)->Call(msg::kPrune, PruneRequest{*seconds}.ToJson(),
                               CoordinatorClient::Retry::kNever);
  if (!reply.ok()) return Fail(reply.status());
  auto pruned = PrunedReply::FromJson(reply->body);
  if (!pruned.ok()) return Fail(pruned.status());
  std::cout << "dropped the raw samples of " << pruned->results_pruned << " results older than "
            << age << "; the store went from "
            << FormatBytes(static_cast<double>(pruned->bytes_before)) << " to "
            << FormatBytes(static_cast<double>(pruned->bytes_after)) << "\n";
  return 0;
}

int BaselineResetCommand(const ClientOptions& client_options, const std::string& host,
                         const std::string& model, const std::string& note) {
  auto client = Connect(client_options);
  if (!client.ok()) return Fail(client.status());
  auto reply =
      (*client)->Call(msg::kBaselineReset, BaselineResetRequest{host, model, note}.ToJson(),
                      CoordinatorClient::Retry::kNever);
  if (!reply.ok()) return Fail(reply.status());
  std::cout << "baseline reset for " << (host.empty() ? "every host" : host) << ", "
            << (model.empty() ? "every model" : model)
            << ": results before now leave the regression baseline\n";
  return 0;
}

int SetPriceCommand(const ClientOptions& client_options, const std::string& host, double per_hour,
                    const std::string& currency) {
  auto client = Connect(client_options);
  if (!client.ok()) return Fail(client.status());
  auto reply =
      (*client)->Call(msg::kSetPrice, SetPriceRequest{host, HostPrice{per_hour, currency}}.ToJson(),
                      CoordinatorClient::Retry::kNever);
  if (!reply.ok()) return Fail(reply.status());
  std::cout << host << " costs " << per_hour << " " << currency << " an hour from now on\n";
  return 0;
}

}  // namespace benchfleet
