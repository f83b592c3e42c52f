// BatchNormGradSums and BatchNormGradInput (training batch norm's gradients): against a
// float64 loop of the textbook formulas, float32 against float64, the AVX2 and baseline loops
// agreeing, a constant channel, and errors for operands that do not fit.
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/reduce_vec.h"
#include "kernels/ops.h"
#include "tests/cpp/wave_tensor.h"

namespace pijit {
namespace {

struct Expected {
  std::vector<double> sums;  // [4, C]
  std::vector<double> dx;
};

// Per channel over n and the spatial positions, in double: μ, r, Σ dy, Σ dy x̂ and
// dx = γ r (dy - mean(dy) - x̂ mean(dy x̂)).
Expected Reference(const Tensor& x, const Tensor& dy, const Tensor& gamma, double eps) {
  const int64_t n = x.shape()[0], c = x.shape()[1], s = x.numel() / (n * c);
  const double m = static_cast<double>(n * s);
  Expected e{std::vector<double>(4 * c), std::vector<double>(x.numel())};
  const double* px = x.data<double>();
  const double* pdy = dy.data<double>();
  for (int64_t ch = 0; ch < c; ++ch) {
    auto at = [&](int64_t b, int64_t i) { return (b * c + ch) * s + i; };
    double mean = 0, var = 0, sdy = 0, sdyxh = 0;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < s; ++i) mean += px[at(b, i)] / m;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < s; ++i) var += (px[at(b, i)] - mean) * (px[at(b, i)] - mean) / m;
    const double r = 1 / std::sqrt(var + eps);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < s; ++i) {
        sdy += pdy[at(b, i)];
        sdyxh += pdy[at(b, i)] * (px[at(b, i)] - mean) * r;
      }
    e.sums[ch] = mean;
    e.sums[c + ch] = r;
    e.sums[2 * c + ch] = sdy;
    e.sums[3 * c + ch] = sdyxh;
    const double g = gamma.data<double>()[ch];
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < s; ++i) {
        const double xh = (px[at(b, i)] - mean) * r;
        e.dx[at(b, i)] = g * r * (pdy[at(b, i)] - sdy / m - xh * sdyxh / m);
      }
  }
  return e;
}

template <typename T>
void ExpectNear(const Tensor& got, const std::vector<double>& want, double rel) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  double scale = 1;
  for (double v : want) scale = std::max(scale, std::abs(v));
  for (int64_t i = 0; i < got.numel(); ++i)
    EXPECT_NEAR(static_cast<double>(got.data<T>()[i]), want[i], rel * scale) << "at " << i;
}

struct Case {
  Shape shape;
  double eps;
};

TEST(BatchNormGradTest, MatchesTheFormulasInFloat64AndFloat32) {
  // Spatial sizes below, at and above the vector width; (N, C) data; odd sizes.
  for (const Case& k : {Case{{2, 3, 4, 4}, 1e-5}, Case{{3, 5, 7, 3}, 1e-3}, Case{{8, 4}, 1e-5},
                        Case{{2, 2, 37}, 1e-5}, Case{{1, 3, 40, 40}, 1e-5}}) {
    const int64_t c = k.shape[1];
    const Tensor x = Wave(k.shape, DType::kFloat64, 0.3, 1.5);
    const Tensor dy = Wave(k.shape, DType::kFloat64, 2.1);
    const Tensor gamma = Wave({c}, DType::kFloat64, 0.7, 3);
    const Expected e = Reference(x, dy, gamma, k.eps);
    for (DType dt : {DType::kFloat64, DType::kFloat32}) {
      SCOPED_TRACE(ShapeToString(k.shape) + DTypeName(dt));
      const double rel = dt == DType::kFloat64 ? 1e-12 : 2e-5;
      auto wx = Cast(x, dt), wdy = Cast(dy, dt), wg = Cast(gamma, dt);
      ASSERT_TRUE(wx.ok() && wdy.ok() && wg.ok());
      auto sums = BatchNormGradSums(*wx, *wdy, k.eps);
      ASSERT_TRUE(sums.ok()) << sums.status();
      EXPECT_EQ(sums->shape(), (Shape{kBatchNormSumsRows, c}));
      auto dx = BatchNormGradInput(*wx, *wdy, *sums, *wg);
      ASSERT_TRUE(dx.ok()) << dx.status();
      EXPECT_EQ(dx->shape(), k.shape);
      if (dt == DType::kFloat64) {
        ExpectNear<double>(*sums, e.sums, rel);
        ExpectNear<double>(*dx, e.dx, rel);
      } else {
        ExpectNear<float>(*sums, e.sums, rel);
        ExpectNear<float>(*dx, e.dx, rel);
      }
    }
  }
}

TEST(BatchNormGradTest, Avx2AndBaselineLoopsAgree) {
  if (!rvec::HostHasAvx2()) GTEST_SKIP() << "no AVX2";
  const Tensor x = Wave({4, 6, 9, 11}, DType::kFloat32, 0.1, -2);
  const Tensor dy = Wave({4, 6, 9, 11}, DType::kFloat32, 1.9);
  const Tensor gamma = Wave({6}, DType::kFloat32, 0.4, 2);
  auto sums = BatchNormGradSums(x, dy, 1e-5);
  auto dx = BatchNormGradInput(x, dy, *sums, gamma);
  rvec::ForceIsaForTesting(1);
  auto sums_scalar = BatchNormGradSums(x, dy, 1e-5);
  auto dx_scalar = BatchNormGradInput(x, dy, *sums_scalar, gamma);
  rvec::ForceIsaForTesting(0);
  ASSERT_TRUE(sums.ok() && dx.ok() && sums_scalar.ok() && dx_scalar.ok());
  for (int64_t i = 0; i < sums->numel(); ++i)
    EXPECT_NEAR(sums->data<float>()[i], sums_scalar->data<float>()[i],
                1e-5 * std::max(1.f, std::abs(sums->data<float>()[i])));
  for (int64_t i = 0; i < dx->numel(); ++i)
    EXPECT_NEAR(dx->data<float>()[i], dx_scalar->data<float>()[i], 1e-5);
}

TEST(BatchNormGradTest, AConstantChannelGetsAFiniteGradient) {
  Tensor x = Tensor::Empty({2, 2, 3}, DType::kFloat32);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = (i / 3) % 2 == 0 ? 4.f : static_cast<float>(i);
  const Tensor dy = Wave({2, 2, 3}, DType::kFloat32, 0.5);
  const Tensor gamma = Wave({2}, DType::kFloat32, 0.2, 2);
  auto sums = BatchNormGradSums(x, dy, 1e-5);
  ASSERT_TRUE(sums.ok());
  auto dx = BatchNormGradInput(x, dy, *sums, gamma);
  ASSERT_TRUE(dx.ok());
  for (int64_t i = 0; i < dx->numel(); ++i) EXPECT_TRUE(std::isfinite(dx->data<float>()[i])) << i;
  // The constant channel: x̂ = 0, so dx = γ r (dy - mean(dy)), its values summing to 0.
  double total = 0;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 3; ++i) total += dx->data<float>()[(b * 2) * 3 + i];
  EXPECT_NEAR(total, 0, 1e-2);
}

TEST(BatchNormGradTest, EmptyBatchGivesZeroSumsAndAnEmptyGradient) {
  const Tensor x = Tensor::Empty({0, 3, 2, 2}, DType::kFloat32);
  auto sums = BatchNormGradSums(x, x, 1e-5);
  ASSERT_TRUE(sums.ok());
  for (int64_t i = 0; i < sums->numel(); ++i) EXPECT_EQ(sums->data<float>()[i], 0.f);
  auto dx = BatchNormGradInput(x, x, *sums, Tensor::Empty({3}, DType::kFloat32));
  ASSERT_TRUE(dx.ok());
  EXPECT_EQ(dx->numel(), 0);
}

TEST(BatchNormGradTest, OperandsThatDoNotFitAreErrors) {
  const Tensor x = Wave({2, 3, 4}, DType::kFloat32, 0);
  const Tensor gamma = Wave({3}, DType::kFloat32, 0);
  auto sums = BatchNormGradSums(x, x, 1e-5);
  ASSERT_TRUE(sums.ok());
  // dy of another shape or dtype.
  EXPECT_EQ(BatchNormGradSums(x, Wave({2, 3, 5}, DType::kFloat32, 0), 1e-5).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BatchNormGradSums(x, Wave({2, 3, 4}, DType::kFloat64, 0), 1e-5).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Rank 1, integers.
  EXPECT_EQ(BatchNormGradSums(Wave({3}, DType::kFloat32, 0), Wave({3}, DType::kFloat32, 0), 1e-5)
                .status().code(), absl::StatusCode::kInvalidArgument);
  const Tensor ints = Tensor::Empty({2, 3}, DType::kInt32);
  EXPECT_EQ(BatchNormGradSums(ints, ints, 1e-5).status().code(), absl::StatusCode::kUnimplemented);
  // Sums or gamma of the wrong shape or dtype.
  auto bad_sums = BatchNormGradInput(x, x, Wave({3, 3}, DType::kFloat32, 0), gamma);
  EXPECT_EQ(bad_sums.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_sums.status().message().find("sums"), std::string::npos) << bad_sums.status();
  EXPECT_FALSE(BatchNormGradInput(x, x, *sums, Wave({4}, DType::kFloat32, 0)).ok());
  EXPECT_FALSE(BatchNormGradInput(x, x, *sums, Wave({3}, DType::kFloat64, 0)).ok());
}

}  // namespace
}  // namespace pijit
