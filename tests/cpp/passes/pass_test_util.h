// Helpers of the pass unit tests: parse a graph or fail the test; whether a pass changed it.
#pragma once
#include <algorithm>
#include <cmath>
#include <random>

#include "graph/text_parser.h"
#include "gtest/gtest.h"
#include "kernels/ops.h"

namespace pijit::graph {
inline Graph ParseOrDie(const std::string& text) {
  auto g = Parse(text);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : Graph();
}
// Whether a pass's run changed the graph; a run that fails fails the test (and changed
// nothing).
inline bool Changed(const absl::StatusOr<bool>& run) {
  EXPECT_TRUE(run.ok()) << run.status();
  return run.ok() && *run;
}

// |got - want| <= rel * max(1, max |want|) element by element (any floating dtype, compared in
// float64); the first five misses are reported.
inline void ExpectCloseToScale(const Tensor& got, const Tensor& want, double rel) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  const Tensor g = *Cast(got, DType::kFloat64), w = *Cast(want, DType::kFloat64);
  double scale = 1;
  for (int64_t i = 0; i < w.numel(); ++i) scale = std::max(scale, std::abs(w.data<double>()[i]));
  int bad = 0;
  for (int64_t i = 0; i < w.numel() && bad < 5; ++i) {
    const double a = g.data<double>()[i], b = w.data<double>()[i];
    if (!(std::abs(a - b) <= rel * scale)) {
      ++bad;
      ADD_FAILURE() << "at " << i << ": " << a << " vs " << b;
    }
  }
}

// A float32 tensor of normally distributed values times `scale`, the same for the same seed.
inline Tensor RandomNormal(Shape shape, unsigned seed, float scale = 1.f) {
  Tensor t = Tensor::Empty(shape, DType::kFloat32);
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = scale * d(rng);
  return t;
}

// The post-ops of fused_matmul and fused_conv2d as their ints hold them.
constexpr int64_t kBias = static_cast<int64_t>(MatMulPost::kBias);
constexpr int64_t kAdd = static_cast<int64_t>(MatMulPost::kAdd);
constexpr int64_t kRelu = static_cast<int64_t>(MatMulPost::kRelu);
constexpr int64_t kGelu = static_cast<int64_t>(MatMulPost::kGelu);
constexpr int64_t kTanh = static_cast<int64_t>(MatMulPost::kTanh);
constexpr int64_t kSigmoid = static_cast<int64_t>(MatMulPost::kSigmoid);
}  // namespace pijit::graph
