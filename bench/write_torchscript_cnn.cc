// Writes the tests' TorchScript cnn (tests/torchscript_fixture.h: conv + BatchNorm +
// ReLU stages, as a user would export a model) at a chosen width, so the jit modes
// (none, freeze, optimize) can be measured on it by hand (bench/README.md).
#include <CLI/CLI.hpp>
#include <iostream>

#include "tests/torchscript_fixture.h"

int main(int argc, char** argv) {
  CLI::App app{"write_torchscript_cnn: saves a TorchScript cnn for the jit figures"};
  std::string out;
  int64_t width = 32;
  app.add_option("--out", out, "where to save the module (torch::jit::save)")->required();
  app.add_option("--width", width, "channels of the first stage (then 2x and 4x)")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  CLI11_PARSE(app, argc, argv);
  if (!benchfleet::testing::WriteTorchScriptCnn(out, width)) {
    std::cerr << "write_torchscript_cnn: could not write " << out << "\n";
    return 1;
  }
  std::cout << out << ": inputs [[3, S, S]] for any image size S\n";
  return 0;
}
