#include "worker/measure/flops.h"

#include <gtest/gtest.h>

namespace benchfleet::worker {
namespace {

JobSpec Spec(const std::string& model, const std::string& mode = "inference") {
  JobSpec spec;
  spec.model = model;
  spec.mode = mode;
  spec.dtype = "fp32";
  spec.batch_size = 1;
  return spec;
}

TEST(FlopsTest, MatmulIsTwoMkn) {
  JobSpec spec = Spec("matmul");
  EXPECT_EQ(*FlopsPerSample(spec), 2.0 * 2048 * 2048 * 2048);
  spec.matmul = {3, 5, 7};
  EXPECT_EQ(*FlopsPerSample(spec), 2.0 * 3 * 5 * 7);
  spec.mode = "train";  // forward + the gradient of B only
  EXPECT_EQ(*FlopsPerSample(spec), 2 * 2.0 * 3 * 5 * 7);
}

TEST(FlopsTest, MlpSumsItsLinearLayers) {
  JobSpec spec = Spec("mlp");
  EXPECT_EQ(*FlopsPerSample(spec), 2.0 * (1024 * 1024 + 1024 * 10));
  spec.mode = "train";
  EXPECT_EQ(*FlopsPerSample(spec), 3 * 2.0 * (1024 * 1024 + 1024 * 10));
}

// ResNet-18 at 224 x 224 has 1,814,073,344 multiply-adds in its convolutions and fc
// (the figure usually quoted as 1.81 GMACs), worked out layer by layer:
// stem 118,013,952; stage 1 462,422,016; stages 2-4 411,041,792 each; fc 512,000.
TEST(FlopsTest, DefaultCnnIsResNet18) { EXPECT_EQ(*FlopsPerSample(Spec("cnn")), 2.0 * 1814073344); }

TEST(FlopsTest, SmallCnnFollowsTheShapes) {
  JobSpec spec = Spec("cnn");
  spec.cnn = {/*width=*/4, /*blocks=*/{1, 1, 1, 1}, /*image_size=*/16, /*channels=*/1,
              /*classes=*/2};
  // 16 -> stem 8 -> pool 4 -> stages at 4, 2, 1, 1.
  const double stem = 1 * 4 * 49 * 8 * 8;
  const double stage1 = 2 * (4 * 4 * 9 * 4 * 4);
  const double stage2 = 4 * 8 * 9 * 2 * 2 + 8 * 8 * 9 * 2 * 2 + 4 * 8 * 2 * 2;
  const double stage3 = 8 * 16 * 9 + 16 * 16 * 9 + 8 * 16;
  const double stage4 = 16 * 32 * 9 + 32 * 32 * 9 + 16 * 32;
  const double fc = 32 * 2;
  EXPECT_EQ(*FlopsPerSample(spec), 2 * (stem + stage1 + stage2 + stage3 + stage4 + fc));
}

// BERT-base, sequence 128: 12 x (8 S H^2 + 4 S^2 H + 4 S H F) = 22.35 GFLOPs.
TEST(FlopsTest, DefaultTransformerIsBertBase) {
  JobSpec spec = Spec("transformer");
  const double s = 128, h = 768, f = 3072;
  EXPECT_EQ(*FlopsPerSample(spec), 12 * (8 * s * h * h + 4 * s * s * h + 4 * s * h * f));
  EXPECT_NEAR(*FlopsPerSample(spec), 22.35e9, 0.01e9);
}

TEST(FlopsTest, TorchScriptIsUnknown) { EXPECT_FALSE(FlopsPerSample(Spec("torchscript"))); }

}  // namespace
}  // namespace benchfleet::worker
