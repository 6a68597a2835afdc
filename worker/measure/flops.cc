#include "worker/measure/flops.h"

#include <cstddef>

namespace benchfleet::worker {
namespace {

double Linear(double in, double out) { return 2 * in * out; }

// A k x k convolution with padding k / 2 at `stride` over a size x size input;
// returns its FLOPs and sets *size to the output size.
double Conv(double in_channels, double out_channels, std::int64_t kernel, std::int64_t stride,
            std::int64_t* size) {
  const std::int64_t pad = kernel / 2;
  *size = (*size + 2 * pad - kernel) / stride + 1;
  const double out_pixels = static_cast<double>(*size) * static_cast<double>(*size);
  return 2 * in_channels * out_channels * static_cast<double>(kernel * kernel) * out_pixels;
}

// Mirrors the network of zoo.cc: 7x7/2 stem, 3x3/2 max pool, 4 stages of
// BasicBlocks (two 3x3 convs; a 1x1 projection where the shape changes), fc.
double CnnForward(const CnnArgs& c) {
  std::int64_t size = c.image_size;
  const auto width = static_cast<double>(c.width);
  double flops = Conv(static_cast<double>(c.channels), width, 7, 2, &size);
  size = (size + 2 - 3) / 2 + 1;  // max pool 3x3, stride 2, padding 1: no multiply-adds
  double in = width;
  for (std::size_t stage = 0; stage < c.blocks.size(); ++stage) {
    const double out = width * static_cast<double>(std::int64_t{1} << stage);
    for (std::int64_t b = 0; b < c.blocks[stage]; ++b) {
      const std::int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
      std::int64_t shortcut_size = size;
      if (stride != 1 || in != out) flops += Conv(in, out, 1, stride, &shortcut_size);
      flops += Conv(in, out, 3, stride, &size);
      flops += Conv(out, out, 3, 1, &size);
      in = out;
    }
  }
  return flops + Linear(in, static_cast<double>(c.classes));
}

// Per layer: QKV and output projections, Q.K^T and attention.V over all heads, FFN.
double TransformerForward(const TransformerArgs& t) {
  const auto s = static_cast<double>(t.seq_len);
  const auto h = static_cast<double>(t.hidden);
  const auto f = static_cast<double>(t.ffn);
  const double per_layer = s * Linear(h, 3 * h) + s * Linear(h, h) + 2 * (2 * s * s * h) +
                           s * (Linear(h, f) + Linear(f, h));
  return per_layer * static_cast<double>(t.layers);
}

}  // namespace

std::optional<double> FlopsPerSample(const JobSpec& spec) {
  const double train_factor = spec.mode == "train" ? (spec.model == "matmul" ? 2 : 3) : 1;
  double forward = 0;
  if (spec.model == "matmul") {
    const MatmulArgs& a = spec.matmul;
    forward = 2 * static_cast<double>(a.m) * static_cast<double>(a.k) * static_cast<double>(a.n);
  } else if (spec.model == "mlp") {
    for (std::size_t i = 0; i + 1 < spec.mlp.layers.size(); ++i) {
      forward += Linear(static_cast<double>(spec.mlp.layers[i]),
                        static_cast<double>(spec.mlp.layers[i + 1]));
    }
  } else if (spec.model == "cnn") {
    forward = CnnForward(spec.cnn);
  } else if (spec.model == "transformer") {
    forward = TransformerForward(spec.transformer);
  } else {
    return std::nullopt;
  }
  return forward * train_factor;
}

}  // namespace benchfleet::worker
