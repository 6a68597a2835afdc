// Test support: writes a small TorchScript module with LibTorch itself (no Python), for
// the sweeps that exercise the `torchscript` model. Kept in its own file: it is the only
// test support code that includes LibTorch.
#pragma once

#include <cstdint>
#include <string>

namespace benchfleet::testing {

// A classifier: x [batch, 16] -> relu(x W1 + b1) W2 + b2, [batch, 4], with parameters
// (so it can train), its weights drawn from `seed` (another seed: the same model with
// other weights, another file). Returns false if it could not be written.
bool WriteTinyTorchScript(const std::string& path, uint64_t seed = 0);

// A convolutional classifier as a user would export one: x [batch, 3, S, S] ->
// three conv + BatchNorm (inference statistics) + ReLU stages of `width`, 2×`width` and
// 4×`width` channels (the last two at stride 2), global average pool, a Linear to 10
// classes. What jit `freeze` and `optimize` work on (conv–BatchNorm folding, oneDNN
// prepacking). Returns false if it could not be written.
bool WriteTorchScriptCnn(const std::string& path, int64_t width = 8);

}  // namespace benchfleet::testing
