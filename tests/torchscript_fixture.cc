#include "tests/torchscript_fixture.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <cmath>

namespace benchfleet::testing {

bool WriteTinyTorchScript(const std::string& path, uint64_t seed) {
  try {
    torch::manual_seed(seed);
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

bool WriteTorchScriptCnn(const std::string& path, int64_t width) {
  try {
    torch::manual_seed(0);
    torch::jit::Module module("TorchScriptCnn");
    int64_t in = 3;
    for (int stage = 1; stage <= 3; ++stage) {
      const int64_t out = width << (stage - 1);
      const std::string s = std::to_string(stage);
      module.register_parameter("conv" + s,
                                torch::randn({out, in, 3, 3}) * std::sqrt(2.0 / (9.0 * in)), false);
      module.register_parameter("gamma" + s, torch::ones({out}) + 0.1 * torch::randn({out}), false);
      module.register_parameter("beta" + s, 0.1 * torch::randn({out}), false);
      module.register_buffer("mean" + s, 0.1 * torch::randn({out}));
      module.register_buffer("var" + s, torch::ones({out}) + 0.1 * torch::rand({out}));
      in = out;
    }
    module.register_parameter("fc_w", torch::randn({10, in}) * std::sqrt(1.0 / in), false);
    module.register_parameter("fc_b", torch::zeros({10}), false);
    module.define(
        "def stage(self, x, w, g, b, m, v, stride: int):\n"
        "    y = torch.conv2d(x, w, None, [stride, stride], [1, 1])\n"
        "    y = torch.batch_norm(y, g, b, m, v, False, 0.1, 1e-5, True)\n"
        "    return torch.relu(y)\n"
        "def forward(self, x):\n"
        "    y = self.stage(x, self.conv1, self.gamma1, self.beta1, self.mean1, self.var1, 1)\n"
        "    y = self.stage(y, self.conv2, self.gamma2, self.beta2, self.mean2, self.var2, 2)\n"
        "    y = self.stage(y, self.conv3, self.gamma3, self.beta3, self.mean3, self.var3, 2)\n"
        "    return torch.linear(torch.mean(y, [2, 3]), self.fc_w, self.fc_b)\n");
    module.save(path);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace benchfleet::testing
