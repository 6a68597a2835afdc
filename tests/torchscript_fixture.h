// Test support: writes a small TorchScript module with LibTorch itself (no Python), for
// the sweeps that exercise the `torchscript` model. Kept in its own file: it is the only
// test support code that includes LibTorch.
#pragma once

#include <string>

namespace benchfleet::testing {

// A classifier: x [batch, 16] -> relu(x W1 + b1) W2 + b2, [batch, 4], with parameters
// (so it can train). Returns false if it could not be written.
bool WriteTinyTorchScript(const std::string& path);

}  // namespace benchfleet::testing
