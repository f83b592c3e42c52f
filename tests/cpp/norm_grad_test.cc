// LayerNormGrad (layer_norm's dx): against a float64 loop of the textbook formula, float32
// against float64, the AVX2 and baseline loops agreeing, and errors for mismatched operands.
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/reduce_vec.h"
#include "kernels/ops.h"
#include "tests/cpp/wave_tensor.h"

namespace pijit {
namespace {

// dx = r (dx̂ - mean(dx̂) - x̂ mean(dx̂ x̂)) row by row, in double, as the formula reads.
std::vector<double> Reference(const Tensor& x, const Tensor& dy, const Tensor* gamma, int64_t d,
                              double eps) {
  const int64_t m = x.numel() / d;
  std::vector<double> dx(x.numel());
  for (int64_t r = 0; r < m; ++r) {
    const double* xr = x.data<double>() + r * d;
    const double* g = dy.data<double>() + r * d;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < d; ++i) mean += xr[i] / d;
    for (int64_t i = 0; i < d; ++i) var += (xr[i] - mean) * (xr[i] - mean) / d;
    const double inv = 1 / std::sqrt(var + eps);
    std::vector<double> xhat(d), dxhat(d);
    double m1 = 0, m2 = 0;
    for (int64_t i = 0; i < d; ++i) {
      xhat[i] = (xr[i] - mean) * inv;
      dxhat[i] = g[i] * (gamma ? gamma->data<double>()[i] : 1.0);
      m1 += dxhat[i] / d;
      m2 += dxhat[i] * xhat[i] / d;
    }
    for (int64_t i = 0; i < d; ++i) dx[r * d + i] = inv * (dxhat[i] - m1 - xhat[i] * m2);
  }
  return dx;
}

struct GradCase {
  Shape shape, normalized;
  bool gamma;
};

TEST(LayerNormGradTest, MatchesTheFormulaInFloat64AndFloat32) {
  const std::vector<GradCase> cases = {{{4, 5}, {5}, true},         {{3, 2, 40}, {2, 40}, false},
                                       {{2, 3, 17}, {17}, true},    {{2, 1100}, {1100}, true},
                                       {{6, 1}, {1}, false},        {{2, 2, 3}, {2, 2, 3}, true}};
  for (const GradCase& c : cases) {
    SCOPED_TRACE(ShapeToString(c.shape));
    Tensor x = Wave(c.shape, DType::kFloat64, 0.3, 1.5), dy = Wave(c.shape, DType::kFloat64, 1.1);
    Tensor gamma = Wave(c.normalized, DType::kFloat64, 2.0, 1.0);
    const int64_t d = NumElements(c.normalized);
    const std::vector<double> want = Reference(x, dy, c.gamma ? &gamma : nullptr, d, 1e-5);
    auto got64 = LayerNormGrad(x, dy, c.normalized, c.gamma ? &gamma : nullptr, 1e-5);
    ASSERT_TRUE(got64.ok()) << got64.status();
    Tensor x32 = *Cast(x, DType::kFloat32), dy32 = *Cast(dy, DType::kFloat32);
    Tensor g32 = *Cast(gamma, DType::kFloat32);
    auto got32 = LayerNormGrad(x32, dy32, c.normalized, c.gamma ? &g32 : nullptr, 1e-5);
    ASSERT_TRUE(got32.ok()) << got32.status();
    ASSERT_EQ(got32->dtype(), DType::kFloat32);
    double scale = 1;
    for (double v : want) scale = std::max(scale, std::fabs(v));
    for (int64_t i = 0; i < x.numel(); ++i) {
      EXPECT_NEAR(got64->data<double>()[i], want[i], 1e-12 * scale) << "at " << i;
      EXPECT_NEAR(got32->data<float>()[i], want[i], 2e-5 * scale) << "at " << i;
    }
  }
}

TEST(LayerNormGradTest, Avx2AndBaselineLoopsAgree) {
  if (!rvec::HostHasAvx2()) GTEST_SKIP() << "no AVX2";
  Tensor x = Wave({8, 300}, DType::kFloat32, 0.3, 1.5), dy = Wave({8, 300}, DType::kFloat32, 1.1);
  Tensor gamma = Wave({300}, DType::kFloat32, 2.0, 1.0);
  auto vec = LayerNormGrad(x, dy, {300}, &gamma, 1e-5);
  rvec::ForceIsaForTesting(1);
  auto base = LayerNormGrad(x, dy, {300}, &gamma, 1e-5);
  rvec::ForceIsaForTesting(0);
  ASSERT_TRUE(vec.ok() && base.ok());
  for (int64_t i = 0; i < x.numel(); ++i)
    EXPECT_NEAR(vec->data<float>()[i], base->data<float>()[i], 1e-5) << "at " << i;
}

TEST(LayerNormGradTest, HalfFloatsAreComputedInFloat32) {
  Tensor x = Wave({3, 16}, DType::kFloat32, 0.3), dy = Wave({3, 16}, DType::kFloat32, 1.1);
  auto want = LayerNormGrad(x, dy, {16}, nullptr, 1e-5);
  auto got = LayerNormGrad(*Cast(x, DType::kFloat16), *Cast(dy, DType::kFloat16), {16}, nullptr, 1e-5);
  ASSERT_TRUE(want.ok() && got.ok());
  ASSERT_EQ(got->dtype(), DType::kFloat16);
  Tensor back = *Cast(*got, DType::kFloat32);
  for (int64_t i = 0; i < x.numel(); ++i)
    EXPECT_NEAR(back.data<float>()[i], want->data<float>()[i], 0.05) << "at " << i;
}

TEST(LayerNormGradTest, MismatchedOperandsAreErrors) {
  const TensorMeta x{DType::kFloat32, {2, 3, 4}};
  auto dy_shape = InferLayerNormGrad(x, {DType::kFloat32, {2, 3, 5}}, {4}, nullptr);
  ASSERT_FALSE(dy_shape.ok());
  EXPECT_NE(dy_shape.status().message().find("(2, 3, 5)"), std::string::npos) << dy_shape.status();
  EXPECT_FALSE(InferLayerNormGrad(x, {DType::kFloat64, {2, 3, 4}}, {4}, nullptr).ok());
  const TensorMeta gamma{DType::kFloat32, {3}};
  EXPECT_FALSE(InferLayerNormGrad(x, x, {4}, &gamma).ok());
  EXPECT_FALSE(InferLayerNormGrad(x, x, {3}, nullptr).ok());  // not the trailing axes
  EXPECT_FALSE(InferLayerNormGrad({DType::kInt32, {2, 3}}, {DType::kInt32, {2, 3}}, {3}, nullptr).ok());
}

}  // namespace
}  // namespace pijit
