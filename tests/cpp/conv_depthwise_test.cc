// The depthwise convolutions (kernels/cpu/conv_depthwise.cc) on every instruction set the host
// has, called directly and through the ops, against the float64 loops: strides, dilations,
// explicit, uneven and 'same' padding, padding wider than the kernel, kernels larger than the
// image, odd sizes, rows longer and shorter than the vector steps, batch 1, channel
// multipliers; infinities and NaNs give what the loops give.
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "kernels/cpu/conv_depthwise.h"
#include "kernels/cpu/window.h"
#include "kernels/ops.h"
#include "tests/cpp/random_tensor.h"

namespace pijit {
namespace {

// Equal within tol, or both NaN, or the same infinity.
void ExpectClose(const Tensor& f32, const Tensor& f64, double tol, const std::string& what) {
  ASSERT_EQ(f32.shape(), f64.shape()) << what;
  for (int64_t i = 0; i < f32.numel(); ++i) {
    const double a = f32.data<float>()[i], b = f64.data<double>()[i];
    if (std::isfinite(b)) {
      ASSERT_NEAR(a, b, tol) << what << " at " << i;
    } else {
      ASSERT_EQ(std::isnan(a), std::isnan(b)) << what << " at " << i << ": " << a << " vs " << b;
      if (!std::isnan(b)) ASSERT_EQ(a, b) << what << " at " << i;
    }
  }
}

struct Case {
  Shape x;
  int64_t multiplier, kh, kw;
  int64_t stride[2], dilation[2], pad[4];
  bool same, bias;
};

const Case kCases[] = {
    {{2, 8, 14, 14}, 1, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, false},  // MobileNet
    {{2, 6, 16, 16}, 1, 3, 3, {2, 2}, {1, 1}, {1, 1, 1, 1}, false, true},   // stride 2
    {{2, 5, 15, 15}, 1, 3, 3, {2, 2}, {1, 1}, {0, 0, 0, 0}, true, false},   // 'same', odd
    {{2, 4, 13, 11}, 1, 5, 5, {1, 1}, {1, 1}, {2, 2, 2, 2}, false, true},   // EfficientNet
    {{1, 3, 17, 17}, 1, 5, 5, {2, 2}, {1, 1}, {0, 0, 0, 0}, true, false},   // 5x5 stride 2
    {{2, 3, 7, 9}, 1, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, false, false},    // 1x1
    {{2, 4, 12, 12}, 1, 3, 3, {1, 1}, {2, 2}, {2, 2, 2, 2}, false, false},  // dilation 2
    {{1, 3, 9, 10}, 2, 3, 3, {1, 2}, {1, 1}, {0, 1, 2, 0}, false, true},    // multiplier 2
    {{2, 2, 3, 4}, 1, 5, 5, {1, 1}, {1, 1}, {2, 2, 2, 2}, false, false},    // kernel > image
    {{1, 3, 4, 70}, 1, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, false},   // long rows
    {{2, 4, 20, 19}, 1, 3, 3, {3, 3}, {2, 2}, {3, 3, 3, 3}, false, false},  // stride 3
    {{1, 2, 6, 6}, 1, 3, 3, {1, 1}, {1, 1}, {3, 3, 3, 3}, false, false},    // pad > kernel
    {{3, 5, 5, 5}, 3, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, false},    // short rows
    {{2, 4, 11, 11}, 1, 3, 5, {2, 1}, {1, 2}, {1, 2, 4, 3}, false, true},   // uneven
    {{1, 2, 9, 9}, 1, 7, 7, {1, 1}, {1, 1}, {3, 3, 3, 3}, false, false},    // 7x7
};

Window2D WindowOf(const Case& c) {
  Window2D win;
  win.groups = c.x[1];
  win.same = c.same;
  for (int s = 0; s < 2; ++s) {
    win.stride[s] = c.stride[s];
    win.dilation[s] = c.dilation[s];
  }
  for (int s = 0; s < 4; ++s) win.pad[s] = c.same ? 0 : c.pad[s];
  return win;
}

std::string Describe(const Case& c) {
  return ShapeToString(c.x) + " x" + std::to_string(c.multiplier) + " " +
         std::to_string(c.kh) + "x" + std::to_string(c.kw) + " stride " +
         std::to_string(c.stride[0]) + "," + std::to_string(c.stride[1]);
}

class ConvDepthwiseTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    conv_depthwise::ForceIsaForTesting(GetParam());
    if (conv_depthwise::ActiveIsa() != GetParam()) GTEST_SKIP() << "the host lacks this ISA";
  }
  void TearDown() override { conv_depthwise::ForceIsaForTesting(0); }
};

// Runs the case's three convolutions in float32 (through the ops, which take the depthwise
// kernels, and through the kernels directly) and in float64 (the loops), after `spoil`
// changes the float32 operands.
template <typename Spoil>
void CheckCase(const Case& c, uint32_t seed, Spoil spoil) {
  const Window2D win = WindowOf(c);
  const std::string what = Describe(c);
  const Shape ws{c.x[1] * c.multiplier, 1, c.kh, c.kw};
  Tensor x = UniformFloat32(c.x, seed), w = UniformFloat32(ws, seed + 1), b = UniformFloat32({ws[0]}, seed + 2);
  const int64_t kernel[2] = {c.kh, c.kw};
  auto g = ResolveWindow("conv2d", c.x, kernel, win, false);
  ASSERT_TRUE(g.ok()) << g.status();
  const auto problem = DepthwiseProblem(c.x, ws, *g, win);
  ASSERT_TRUE(problem.has_value()) << what;
  Tensor dy = UniformFloat32({c.x[0], ws[0], g->out[0], g->out[1]}, seed + 3);
  spoil(x, w, dy);
  const Tensor b64 = AsFloat64(b);
  const Tensor* bias32 = c.bias ? &b : nullptr;
  const Tensor* bias64 = c.bias ? &b64 : nullptr;
  const double taps = static_cast<double>(c.kh * c.kw);

  auto y32 = Conv2D(x, w, bias32, win);
  auto y64 = Conv2D(AsFloat64(x), AsFloat64(w), bias64, win);
  ASSERT_TRUE(y32.ok() && y64.ok()) << y32.status() << y64.status();
  ExpectClose(*y32, *y64, 1e-5 * taps + 1e-6, "forward " + what);
  Tensor direct = Tensor::Empty(y32->shape(), DType::kFloat32);
  conv_depthwise::Forward(*problem, x.data<float>(), w.data<float>(),
                          c.bias ? b.data<float>() : nullptr, direct.data<float>());
  ExpectClose(direct, *y64, 1e-5 * taps + 1e-6, "direct forward " + what);

  auto dx32 = Conv2DGradInput(dy, w, c.x, win);
  auto dx64 = Conv2DGradInput(AsFloat64(dy), AsFloat64(w), c.x, win);
  ASSERT_TRUE(dx32.ok() && dx64.ok()) << dx32.status() << dx64.status();
  ExpectClose(*dx32, *dx64, 1e-5 * taps * c.multiplier + 1e-6, "dx " + what);

  auto dw32 = Conv2DGradWeight(x, dy, ws, win);
  auto dw64 = Conv2DGradWeight(AsFloat64(x), AsFloat64(dy), ws, win);
  ASSERT_TRUE(dw32.ok() && dw64.ok()) << dw32.status() << dw64.status();
  ExpectClose(*dw32, *dw64, 1e-5 * y32->numel() / ws[0] + 1e-6, "dw " + what);
}

TEST_P(ConvDepthwiseTest, AgreesWithFloat64Loops) {
  uint32_t seed = 1;
  for (const Case& c : kCases) {
    CheckCase(c, seed, [](Tensor&, Tensor&, Tensor&) {});
    seed += 4;
  }
}

// A padded tap must add nothing, not a zero times an infinity: the kernels that materialise
// the padding as zeros step aside for the ones that skip it.
TEST_P(ConvDepthwiseTest, InfinitiesAndNaNsGiveWhatTheLoopsGive) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  uint32_t seed = 100;
  for (const Case& c : {kCases[0], kCases[1], kCases[3], kCases[7], kCases[11]}) {
    CheckCase(c, seed, [&](Tensor& x, Tensor& w, Tensor& dy) {
      w.data<float>()[0] = inf;  // a corner tap: reads padding in the first rows
      w.data<float>()[w.numel() - 1] = -inf;
      x.data<float>()[x.numel() / 2] = nan;
      dy.data<float>()[0] = inf;  // the first output reads padding
      dy.data<float>()[dy.numel() - 1] = nan;
    });
    seed += 4;
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, ConvDepthwiseTest, ::testing::Values(1, 2, 3));

TEST(ConvDepthwise, TakesDepthwiseProblemsOnly) {
  Window2D win;
  win.pad[0] = win.pad[1] = win.pad[2] = win.pad[3] = 1;
  const int64_t kernel[2] = {3, 3};
  const Shape xs{2, 8, 10, 10};
  win.groups = 8;
  auto g = ResolveWindow("conv2d", xs, kernel, win, false);
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(DepthwiseProblem(xs, {8, 1, 3, 3}, *g, win).has_value());
  EXPECT_TRUE(DepthwiseProblem(xs, {16, 1, 3, 3}, *g, win).has_value());  // multiplier 2
  win.groups = 4;  // two channels per group: oneDNN's grouped kernels
  EXPECT_FALSE(DepthwiseProblem(xs, {8, 2, 3, 3}, *g, win).has_value());
  // One channel: a plain convolution, conv_direct's.
  win.groups = 1;
  const Shape one{2, 1, 10, 10};
  EXPECT_FALSE(DepthwiseProblem(one, {6, 1, 3, 3}, *g, win).has_value());
}

}  // namespace
}  // namespace pijit
