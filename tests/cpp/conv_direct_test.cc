// The direct stride-1 convolutions (kernels/cpu/conv_direct.cc) on every instruction set the
// host has, against the float64 loops: forward with and without bias, both gradients, groups,
// padding, odd sizes; non-finite operands are refused (and the public ops then agree with the
// float64 loops anyway); max pooling's 2x2 gradient keeps the first maximum and the first NaN.
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/conv_direct.h"
#include "kernels/ops.h"
#include "tests/cpp/random_tensor.h"

namespace pijit {
namespace {

// |a - b| within tol times the number of summed products (values are in [-1, 1]).
void ExpectClose(const Tensor& f32, const Tensor& f64, double tol, const std::string& what) {
  ASSERT_EQ(f32.shape(), f64.shape()) << what;
  for (int64_t i = 0; i < f32.numel(); ++i) {
    ASSERT_NEAR(f32.data<float>()[i], f64.data<double>()[i], tol) << what << " at " << i;
  }
}

struct Case {
  Shape x, w;
  int64_t groups, pad[4];
  bool bias;
};

class ConvDirectTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    conv_direct::ForceIsaForTesting(GetParam());
    if (conv_direct::ActiveIsa() != GetParam()) GTEST_SKIP() << "the host lacks this ISA";
  }
  void TearDown() override { conv_direct::ForceIsaForTesting(0); }
};

const Case kCases[] = {
    {{32, 1, 32, 32}, {6, 1, 5, 5}, 1, {0, 0, 0, 0}, false},    // LeNet conv1
    {{32, 6, 14, 14}, {16, 6, 5, 5}, 1, {0, 0, 0, 0}, true},    // LeNet conv2
    {{3, 3, 17, 13}, {5, 3, 3, 3}, 1, {1, 1, 1, 1}, true},      // same padding, odd sizes
    {{2, 4, 9, 11}, {6, 2, 3, 2}, 2, {2, 0, 0, 1}, false},      // groups, uneven padding
    {{1, 2, 5, 40}, {7, 2, 1, 7}, 1, {0, 0, 3, 3}, true},       // wide, one-row kernel
    {{2, 1, 4, 4}, {1, 1, 4, 4}, 1, {0, 0, 0, 0}, false},       // a 1x1 output
    {{2, 20, 6, 6}, {3, 20, 3, 3}, 1, {1, 1, 1, 1}, false},     // many inputs, few outputs
};

TEST_P(ConvDirectTest, AgreesWithFloat64Loops) {
  uint32_t seed = 1;
  for (const Case& c : kCases) {
    Window2D win;
    win.groups = c.groups;
    for (int s = 0; s < 4; ++s) win.pad[s] = c.pad[s];
    const std::string what = ShapeToString(c.x) + " * " + ShapeToString(c.w);
    const conv_direct::Problem p{c.x[0], c.x[1], c.x[2], c.x[3], c.w[0], c.w[2], c.w[3],
                                 c.groups, {c.pad[0], c.pad[1], c.pad[2], c.pad[3]}};
    ASSERT_TRUE(conv_direct::Applies(p)) << what;
    Tensor x = UniformFloat32(c.x, seed++), w = UniformFloat32(c.w, seed++), b = UniformFloat32({c.w[0]}, seed++);
    const double tol = 1e-5 * c.w[1] * c.w[2] * c.w[3] + 1e-6;
    auto y32 = Conv2D(x, w, c.bias ? &b : nullptr, win);
    ASSERT_TRUE(y32.ok()) << y32.status();
    Tensor b64 = AsFloat64(b);
    auto y64 = Conv2D(AsFloat64(x), AsFloat64(w), c.bias ? &b64 : nullptr, win);
    ASSERT_TRUE(y64.ok()) << y64.status();
    ExpectClose(*y32, *y64, tol, "forward " + what);

    Tensor dy = UniformFloat32(y32->shape(), seed++);
    auto dx32 = Conv2DGradInput(dy, w, c.x, win);
    auto dx64 = Conv2DGradInput(AsFloat64(dy), AsFloat64(w), c.x, win);
    ASSERT_TRUE(dx32.ok() && dx64.ok()) << dx32.status() << dx64.status();
    ExpectClose(*dx32, *dx64, 1e-5 * c.w[0] / c.groups * c.w[2] * c.w[3] + 1e-6, "dx " + what);

    auto dw32 = Conv2DGradWeight(x, dy, c.w, win);
    auto dw64 = Conv2DGradWeight(AsFloat64(x), AsFloat64(dy), c.w, win);
    ASSERT_TRUE(dw32.ok() && dw64.ok()) << dw32.status() << dw64.status();
    ExpectClose(*dw32, *dw64, 1e-5 * y32->numel() / c.w[0] + 1e-6, "dw " + what);
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, ConvDirectTest, ::testing::Values(1, 2, 3));

TEST(ConvDirect, RefusesNonFiniteOperandsAndOpsFallBack) {
  const conv_direct::Problem p{2, 1, 6, 6, 2, 3, 3, 1, {1, 1, 1, 1}};
  Tensor x = UniformFloat32({2, 1, 6, 6}, 7), w = UniformFloat32({2, 1, 3, 3}, 8), dy = UniformFloat32({2, 2, 6, 6}, 9);
  Tensor out = Tensor::Empty({2, 2, 6, 6}, DType::kFloat32);
  Tensor dw = Tensor::Empty({2, 1, 3, 3}, DType::kFloat32);
  EXPECT_TRUE(conv_direct::Forward(p, x.data<float>(), w.data<float>(), nullptr, out.data<float>()));
  x.data<float>()[5] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(conv_direct::GradWeight(p, x.data<float>(), dy.data<float>(), dw.data<float>()));
  w.data<float>()[4] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(conv_direct::Forward(p, x.data<float>(), w.data<float>(), nullptr, out.data<float>()));
  EXPECT_FALSE(conv_direct::GradInput(p, dy.data<float>(), w.data<float>(), out.data<float>()));

  // Through the op, an infinity without padding gives what the float64 loop gives.
  Tensor x2 = UniformFloat32({1, 1, 5, 5}, 10), w2 = UniformFloat32({1, 1, 2, 2}, 11);
  x2.data<float>()[12] = std::numeric_limits<float>::infinity();
  auto y32 = Conv2D(x2, w2, nullptr, Window2D{});
  auto y64 = Conv2D(AsFloat64(x2), AsFloat64(w2), nullptr, Window2D{});
  ASSERT_TRUE(y32.ok() && y64.ok());
  for (int64_t i = 0; i < y32->numel(); ++i) {
    const double a = y32->data<float>()[i], b = y64->data<double>()[i];
    if (std::isfinite(b)) {
      EXPECT_NEAR(a, b, 1e-5) << i;
    } else {
      EXPECT_EQ(std::isnan(a), std::isnan(b)) << i;
      if (!std::isnan(b)) EXPECT_EQ(a, b) << i;
    }
  }
}

TEST(ConvDirect, LeavesStridedDilatedAndManyChannelProblemsToOneDnn) {
  EXPECT_FALSE(conv_direct::Applies({1, 32, 8, 8, 32, 3, 3, 1, {1, 1, 1, 1}}));  // blocked
  EXPECT_FALSE(conv_direct::Applies({1, 3, 8, 8, 4, 3, 3, 1, {3, 0, 0, 0}}));    // pad >= kernel
  EXPECT_TRUE(conv_direct::Applies({1, 3, 8, 8, 64, 3, 3, 1, {1, 1, 1, 1}}));
}

TEST(MaxPoolGrad2x2, FirstMaximumAndFirstNaNTakeTheGradient) {
  Window2D win;
  win.kernel[0] = win.kernel[1] = 2;
  win.stride[0] = win.stride[1] = 2;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // One plane of 2x6: windows {1,1;0,0} (tie: first), {0,2;nan,nan} (first NaN),
  // {3,-1;3,5} (the last element).
  Tensor x = Tensor::Empty({1, 1, 2, 6}, DType::kFloat32);
  const float xv[] = {1, 1, 0, 2, 3, -1, 0, 0, nan, nan, 3, 5};
  for (int i = 0; i < 12; ++i) x.data<float>()[i] = xv[i];
  Tensor dout = Tensor::Empty({1, 1, 1, 3}, DType::kFloat32);
  for (int i = 0; i < 3; ++i) dout.data<float>()[i] = 10.0f * (i + 1);
  auto dx = Pool2DGrad(PoolKind::kMax, x, dout, win);
  ASSERT_TRUE(dx.ok()) << dx.status();
  const float want[] = {10, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 30};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(dx->data<float>()[i], want[i]) << i;
  // Odd sizes: the last row and column belong to no window and get zero. 18 windows a row:
  // full runs of eight and a shorter last one.
  const int64_t h = 5, w = 37, oh = 2, ow = 18;
  Tensor x3 = UniformFloat32({2, 3, h, w}, 12), d3 = UniformFloat32({2, 3, oh, ow}, 13);
  x3.data<float>()[3 * w + 20] = nan;
  x3.data<float>()[w + 4] = x3.data<float>()[5] = 2.0f;  // a tie in the row below
  auto a = Pool2DGrad(PoolKind::kMax, x3, d3, win);
  ASSERT_TRUE(a.ok()) << a.status();
  std::vector<float> want3(x3.numel(), 0.0f);
  for (int64_t p = 0; p < 6; ++p)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xo = 0; xo < ow; ++xo) {
        int64_t best = p * h * w + 2 * y * w + 2 * xo;
        for (int64_t i = 0; i < 2; ++i)
          for (int64_t j = 0; j < 2; ++j) {
            const int64_t at = p * h * w + (2 * y + i) * w + 2 * xo + j;
            const float v = x3.data<float>()[at], b = x3.data<float>()[best];
            if ((v > b || std::isnan(v)) && !std::isnan(b)) best = at;
          }
        want3[best] += d3.data<float>()[(p * oh + y) * ow + xo];
      }
  for (int64_t i = 0; i < a->numel(); ++i) EXPECT_EQ(a->data<float>()[i], want3[i]) << i;
}

}  // namespace
}  // namespace pijit
