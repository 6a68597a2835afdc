// --metrics HOST:PORT on a daemon's command line, checked by CLI11 with the same rules
// and words for the coordinator and the agent (ParseMetricsAddress). Header-only: only
// the programs' main.cc include it (the metrics library links no CLI11).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "metrics/metrics_server.h"

namespace benchfleet {

// Adds --metrics to `app`, storing the address in `*address`; `what` says whose health
// it serves ("the coordinator's health").
inline CLI::Option* AddMetricsFlag(CLI::App& app, std::string* address, const std::string& what) {
  return app
      .add_option("--metrics", *address,
                  "serve " + what +
                      " at GET /metrics (Prometheus text format) on HOST:PORT, e.g. "
                      "127.0.0.1:9464 (port 0: a free one, named in --ready-file); no "
                      "authentication, no secrets shown")
      ->type_name("HOST:PORT")
      ->check(CLI::Validator(
          [](std::string& text) {
            auto parsed = ParseMetricsAddress(text);
            if (parsed.ok()) return std::string();
            const std::string& message = parsed.status().message();  // CLI11 names the flag
            const std::string flag = "--metrics: ";
            return message.rfind(flag, 0) == 0 ? message.substr(flag.size()) : message;
          },
          "", "metrics address"));
}

}  // namespace benchfleet
