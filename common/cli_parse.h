// Command-line parsing for every benchfleet program: CLI11's errors end the program with
// the documented exit codes (0 for --help, 2 for bad input; CLI11's own are 104-109),
// and a mistyped subcommand is named as unknown. Header-only: only the programs' main.cc
// include it (common links no CLI11).
#pragma once

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

namespace benchfleet {

// Exit status for bad input, as cli/commands.h documents it.
inline constexpr int kExitBadInput = 2;

// Parses argv; returns -1 to go on, or the exit status to end with.
inline int ParseCommandLine(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // "benchfleet sumbit x": CLI11 says only that arguments were not expected.
    if (!app.get_subcommands({}).empty() && app.get_subcommands().empty() && argc > 1 &&
        argv[1][0] != '-') {
      std::string known;
      for (const CLI::App* sub : app.get_subcommands({}))
        known += (known.empty() ? "" : ", ") + sub->get_name();
      const std::string program = app.get_name().substr(app.get_name().rfind('/') + 1);
      std::cerr << program << ": unknown command \"" << argv[1] << "\"; commands: " << known
                << " (--help for more)\n";
      return kExitBadInput;
    }
    (void)app.exit(e);  // prints CLI11's message
    return kExitBadInput;
  }
}

}  // namespace benchfleet
