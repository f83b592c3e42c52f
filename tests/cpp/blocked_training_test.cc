// The training kernels over blocked activations (kernels/blocked_layout.h): batch norm's
// forward and gradients, and conv2d's gradients, against the NCHW kernels on the same values
// in every layout a training graph gives them (nChw8c, nChw16c, NHWC), and their errors.
#include <cmath>

#include "gtest/gtest.h"
#include "kernels/blocked_layout.h"
#include "kernels/ops.h"
#include "tests/cpp/passes/pass_test_util.h"

namespace pijit {
namespace {

using graph::RandomNormal;

// ExpectCloseToScale with got in NCHW, or blocked: read back.
void ExpectClose(const Tensor& got_any, const Tensor& want, double tol) {
  const bool blocked = got_any.shape().size() == 5 && want.shape().size() == 4;
  graph::ExpectCloseToScale(blocked ? *FromBlocked(got_any) : got_any, want, tol);
}

Tensor Vector(int64_t c, uint64_t seed, float offset) {
  Tensor v = RandomNormal({c}, seed);
  for (int64_t i = 0; i < c; ++i) v.data<float>()[i] = v.data<float>()[i] * 0.5f + offset;
  return v;
}

Tensor Copy(const Tensor& t) {
  Tensor c = Tensor::Empty(t.shape(), t.dtype());
  CopyInto(t, c);
  return c;
}

struct BnCase {
  Shape x;
  int64_t block;
};

class BlockedBatchNormTest : public ::testing::TestWithParam<BnCase> {};

TEST_P(BlockedBatchNormTest, TrainingForwardMatchesNchw) {
  const auto [shape, block] = GetParam();
  const int64_t c = shape[1];
  Tensor x = RandomNormal(shape, 3);
  // A large common offset: the statistics must not lose it to cancellation.
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = x.data<float>()[i] * 2 + 10;
  const Tensor gamma = Vector(c, 4, 1), beta = Vector(c, 5, 0);
  const Tensor mean0 = Vector(c, 6, 0), var0 = Vector(c, 7, 2);
  Tensor m1 = Copy(mean0), v1 = Copy(var0), m2 = Copy(mean0), v2 = Copy(var0);
  const Tensor want = *BatchNormTrain(x, m1, v1, gamma, beta, 1e-5, 0.1);
  absl::StatusOr<Tensor> got = BatchNormTrainBlocked(*ToBlocked(x, block), m2, v2, gamma, beta,
                                                     1e-5, 0.1, block);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->shape().size(), 5u);
  ExpectClose(*got, want, 1e-5);
  ExpectClose(m2, m1, 1e-6);
  ExpectClose(v2, v1, 1e-5);
  // The relu epilogue gives relu of the same values, bit for bit (NaN kept, -0.0 zeroed).
  Tensor bx = *ToBlocked(x, block);
  bx.data<float>()[1] = NAN;
  Tensor m3 = Copy(mean0), v3 = Copy(var0), m4 = Copy(mean0), v4 = Copy(var0);
  const Tensor plain = *BatchNormTrainBlocked(bx, m3, v3, gamma, beta, 1e-5, 0.1, block);
  const Tensor fused = *BatchNormTrainBlocked(bx, m4, v4, gamma, beta, 1e-5, 0.1, block, true);
  const Tensor want_relu = *Unary(UnaryOp::kRelu, plain);
  ASSERT_EQ(fused.shape(), want_relu.shape());
  for (int64_t i = 0; i < fused.numel(); ++i) {
    const float a = fused.data<float>()[i], b = want_relu.data<float>()[i];
    ASSERT_TRUE(a == b || (std::isnan(a) && std::isnan(b))) << i << ": " << a << " vs " << b;
  }
}

TEST_P(BlockedBatchNormTest, GradientsMatchNchw) {
  const auto [shape, block] = GetParam();
  const int64_t c = shape[1];
  Tensor x = RandomNormal(shape, 8);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = x.data<float>()[i] * 3 - 5;
  const Tensor dy = RandomNormal(shape, 9), gamma = Vector(c, 10, 1);
  const Tensor want_sums = *BatchNormGradSums(x, dy, 1e-5);
  const Tensor bx = *ToBlocked(x, block), bdy = *ToBlocked(dy, block);
  absl::StatusOr<Tensor> sums = BatchNormGradSumsBlocked(bx, bdy, 1e-5, block);
  ASSERT_TRUE(sums.ok()) << sums.status();
  ExpectClose(*sums, want_sums, 2e-5);
  const Tensor want_dx = *BatchNormGradInput(x, dy, want_sums, gamma);
  absl::StatusOr<Tensor> dx = BatchNormGradInputBlocked(bx, bdy, want_sums, gamma, block);
  ASSERT_TRUE(dx.ok()) << dx.status();
  ExpectClose(*dx, want_dx, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, BlockedBatchNormTest,
    ::testing::Values(BnCase{{4, 16, 9, 7}, 8}, BnCase{{2, 32, 5, 5}, 16},
                      BnCase{{3, 24, 11, 13}, 24}, BnCase{{2, 64, 1, 1}, 64},
                      BnCase{{5, 8, 70, 3}, 8}));  // rows beyond one float run

TEST(BlockedBatchNormErrorsTest, RejectLayoutsTheyCannotHold) {
  const Tensor x = RandomNormal({2, 2, 3, 3, 8}, 1), g = Vector(16, 2, 1);
  Tensor m = Vector(16, 3, 0), v = Vector(16, 4, 1);
  // The block attribute and the tensor's disagree; a plain tensor; a float64 one.
  EXPECT_EQ(BatchNormTrainBlocked(x, m, v, g, g, 1e-5, 0.1, 16).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BatchNormGradSumsBlocked(RandomNormal({2, 16, 3, 3}, 1), RandomNormal({2, 16, 3, 3}, 2),
                                     1e-5, 8).status().code(),
            absl::StatusCode::kInvalidArgument);
  const Tensor x64 = *Cast(x, DType::kFloat64);
  EXPECT_EQ(BatchNormGradSumsBlocked(x64, x64, 1e-5, 8).status().code(),
            absl::StatusCode::kUnimplemented);
  // dy in another layout than x.
  EXPECT_EQ(BatchNormGradInputBlocked(x, RandomNormal({2, 1, 3, 3, 16}, 1), *BatchNormGradSums(
                *FromBlocked(x), *FromBlocked(x), 1e-5), g, 8).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Running statistics of the wrong size.
  Tensor short_m = Vector(8, 3, 0);
  EXPECT_EQ(BatchNormTrainBlocked(x, short_m, v, g, g, 1e-5, 0.1, 8).status().code(),
            absl::StatusCode::kInvalidArgument);
}

struct ConvCase {
  Shape x, w;
  int64_t stride, pad;
  int64_t groups = 1;
};

Window2D WindowOf(const ConvCase& k) {
  Window2D win;
  win.stride[0] = win.stride[1] = k.stride;
  for (int64_t& p : win.pad) p = k.pad;
  win.groups = k.groups;
  return win;
}

class BlockedConvGradTest : public ::testing::TestWithParam<ConvCase> {};

// Every combination of layouts a graph gives: dout and x each NCHW, nChw8c or NHWC, dx in
// the block Conv2DGradBlock gives, in NHWC or in nChw8c.
TEST_P(BlockedConvGradTest, GradientsMatchNchwInEveryLayout) {
  const ConvCase k = GetParam();
  const Window2D win = WindowOf(k);
  const Tensor x = RandomNormal(k.x, 11), w = RandomNormal(k.w, 12);
  const Tensor y = *Conv2D(x, w, nullptr, win);
  const Tensor dout = RandomNormal(y.shape(), 13);
  const int64_t block = Conv2DGradBlock(MetaOf(x), MetaOf(w), win);
  ASSERT_NE(block, 0);
  const Tensor want_dx = *Conv2DGradInput(dout, w, x.shape(), win);
  const Tensor want_dw = *Conv2DGradWeight(x, dout, w.shape(), win);
  auto in_layout = [](const Tensor& t, int64_t b) { return b == 0 ? t : *ToBlocked(t, b); };
  for (int64_t dout_block : {int64_t{0}, int64_t{8}, y.shape()[1]}) {
    const Tensor d = in_layout(dout, dout_block);
    for (int64_t dx_block : {int64_t{0}, block, int64_t{8}, k.x[1]}) {
      absl::StatusOr<Tensor> dx = Conv2DGradInputBlocked(d, w, x.shape(), win, dx_block);
      ASSERT_TRUE(dx.ok()) << dx.status();
      EXPECT_EQ(dx->shape().size(), dx_block == 0 ? 4u : 5u);
      ExpectClose(*dx, want_dx, 1e-5);
    }
    for (int64_t x_block : {int64_t{0}, int64_t{8}, k.x[1]}) {
      absl::StatusOr<Tensor> dw = Conv2DGradWeightBlocked(in_layout(x, x_block), d, w.shape(), win);
      ASSERT_TRUE(dw.ok()) << dw.status();
      ExpectClose(*dw, want_dw, 1e-5);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Problems, BlockedConvGradTest,
    ::testing::Values(ConvCase{{2, 16, 9, 9}, {16, 16, 3, 3}, 1, 1},
                      ConvCase{{2, 32, 8, 8}, {64, 32, 3, 3}, 2, 1},
                      ConvCase{{3, 16, 7, 7}, {32, 16, 1, 1}, 2, 0},
                      ConvCase{{1, 64, 4, 4}, {64, 64, 3, 3}, 1, 1},
                      // depthwise (oneDNN's nChw8c kernels against the NCHW ones)
                      ConvCase{{2, 16, 9, 9}, {16, 1, 3, 3}, 1, 1, 16},
                      ConvCase{{2, 24, 10, 10}, {24, 1, 3, 3}, 2, 1, 24}));

// The forward of depthwise convolutions, which run on oneDNN's nChw8c kernels in compiled
// graphs, against the NCHW kernels eager mode keeps (other kernels: float32 rounding).
TEST_P(BlockedConvGradTest, DepthwiseForwardMatchesNchw) {
  const ConvCase k = GetParam();
  if (k.groups == 1) GTEST_SKIP() << "dense: ConvolutionsEqualTheNchwKernelsBitForBit";
  const Window2D win = WindowOf(k);
  const Tensor x = RandomNormal(k.x, 14), w = RandomNormal(k.w, 15);
  const Tensor want = *Conv2D(x, w, nullptr, win);
  for (int64_t x_block : {int64_t{0}, int64_t{8}}) {
    absl::StatusOr<Tensor> got = Conv2DBlocked(x_block ? *ToBlocked(x, x_block) : x, w, nullptr,
                                               win, {}, {}, 8);
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectClose(*got, want, 1e-5);
  }
}

TEST(BlockedConvGradErrorsTest, ProblemsOffTheBlockedKernelsAreRefused) {
  Window2D win;
  win.pad[0] = win.pad[1] = win.pad[2] = win.pad[3] = 1;
  // Few channels (the direct kernels), float64, groups: no block.
  EXPECT_EQ(Conv2DGradBlock({DType::kFloat32, {2, 4, 8, 8}}, {DType::kFloat32, {4, 4, 3, 3}}, win), 0);
  EXPECT_EQ(Conv2DGradBlock({DType::kFloat64, {2, 16, 8, 8}}, {DType::kFloat64, {16, 16, 3, 3}}, win), 0);
  Window2D grouped = win;
  grouped.groups = 2;
  EXPECT_EQ(Conv2DGradBlock({DType::kFloat32, {2, 32, 8, 8}}, {DType::kFloat32, {32, 16, 3, 3}}, grouped), 0);
  Window2D depthwise = win;
  depthwise.groups = 12;  // channels no multiple of 8
  EXPECT_EQ(Conv2DGradBlock({DType::kFloat32, {2, 12, 8, 8}}, {DType::kFloat32, {12, 1, 3, 3}}, depthwise), 0);
  depthwise.groups = 32;
  EXPECT_EQ(Conv2DGradBlock({DType::kFloat32, {2, 32, 8, 8}}, {DType::kFloat32, {32, 1, 3, 3}}, depthwise), 8);
  const Tensor dout = RandomNormal({2, 4, 8, 8}, 1), w = RandomNormal({4, 4, 3, 3}, 2);
  EXPECT_EQ(Conv2DGradInputBlocked(dout, w, {2, 4, 8, 8}, win, 4).status().code(),
            absl::StatusCode::kUnimplemented);
  // A block that is not a layout of the input's channels.
  const Tensor dout16 = RandomNormal({2, 16, 8, 8}, 1), w16 = RandomNormal({16, 24, 3, 3}, 2);
  EXPECT_EQ(Conv2DGradInputBlocked(dout16, w16, {2, 24, 8, 8}, win, 16).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pijit
