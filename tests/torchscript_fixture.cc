#include "tests/torchscript_fixture.h"

#include <torch/script.h>
#include <torch/torch.h>

namespace benchfleet::testing {

bool WriteTinyTorchScript(const std::string& path) {
  try {
    torch::manual_seed(0);
    torch::jit::Module module("TinyClassifier");
    module.register_parameter("w1", torch::randn({16, 32}) * 0.1, /*is_buffer=*/false);
    module.register_parameter("b1", torch::zeros({32}), /*is_buffer=*/false);
    module.register_parameter("w2", torch::randn({32, 4}) * 0.1, /*is_buffer=*/false);
    module.register_parameter("b2", torch::zeros({4}), /*is_buffer=*/false);
    // `define` needs the trailing newline.
    module.define(
        "def forward(self, x):\n"
        "    h = torch.relu(torch.matmul(x, self.w1) + self.b1)\n"
        "    return torch.matmul(h, self.w2) + self.b2\n");
    module.save(path);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace benchfleet::testing
