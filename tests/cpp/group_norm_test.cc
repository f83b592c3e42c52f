// GroupNorm: against a float64 loop of the definition, float32 against float64, the AVX2 and
// baseline loops agreeing, errors for bad operands, and the graph op's printed form.
#include <cmath>
#include <vector>

#include "graph/graph.h"
#include "gtest/gtest.h"
#include "kernels/cpu/reduce_vec.h"
#include "kernels/ops.h"
#include "tests/cpp/wave_tensor.h"

namespace pijit {
namespace {

// The definition: per sample and group, mean and biased variance over the group's channels
// and positions; then the per-channel scale and shift.
std::vector<double> Reference(const Tensor& x, int64_t groups, const Tensor& gamma,
                              const Tensor& beta, double eps) {
  const int64_t n = x.shape()[0], c = x.shape()[1], s = x.numel() / (n * c);
  const int64_t per = c / groups, d = per * s;
  std::vector<double> y(x.numel());
  for (int64_t row = 0; row < n * groups; ++row) {
    const double* in = x.data<double>() + row * d;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < d; ++i) mean += in[i] / d;
    for (int64_t i = 0; i < d; ++i) var += (in[i] - mean) * (in[i] - mean) / d;
    for (int64_t i = 0; i < d; ++i) {
      const int64_t ch = (row % groups) * per + i / s;
      y[row * d + i] = (in[i] - mean) / std::sqrt(var + eps) * gamma.data<double>()[ch] +
                       beta.data<double>()[ch];
    }
  }
  return y;
}

TEST(GroupNormTest, MatchesTheDefinitionInFloat64AndFloat32) {
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{2, 6, 5, 4}, 3}, {{3, 4, 7}, 4}, {{2, 8}, 2}, {{1, 6, 2, 3, 2}, 1}, {{2, 32, 3, 3}, 32}};
  for (const auto& [shape, groups] : cases) {
    SCOPED_TRACE(ShapeToString(shape));
    Tensor x = Wave(shape, DType::kFloat64, 0.2, 3.0);
    Tensor gamma = Wave({shape[1]}, DType::kFloat64, 1.0, 1.0), beta = Wave({shape[1]}, DType::kFloat64, 2.0);
    const std::vector<double> want = Reference(x, groups, gamma, beta, 1e-5);
    auto got64 = GroupNorm(x, groups, gamma, beta, 1e-5);
    ASSERT_TRUE(got64.ok()) << got64.status();
    auto got32 = GroupNorm(*Cast(x, DType::kFloat32), groups, *Cast(gamma, DType::kFloat32),
                           *Cast(beta, DType::kFloat32), 1e-5);
    ASSERT_TRUE(got32.ok()) << got32.status();
    for (int64_t i = 0; i < x.numel(); ++i) {
      EXPECT_NEAR(got64->data<double>()[i], want[i], 1e-12) << "at " << i;
      EXPECT_NEAR(got32->data<float>()[i], want[i], 2e-5) << "at " << i;
    }
  }
}

TEST(GroupNormTest, Avx2AndBaselineLoopsAgree) {
  if (!rvec::HostHasAvx2()) GTEST_SKIP() << "no AVX2";
  Tensor x = Wave({2, 8, 9, 7}, DType::kFloat32, 0.2, 3.0);
  Tensor gamma = Wave({8}, DType::kFloat32, 1.0, 1.0), beta = Wave({8}, DType::kFloat32, 2.0);
  auto vec = GroupNorm(x, 4, gamma, beta, 1e-5);
  rvec::ForceIsaForTesting(1);
  auto base = GroupNorm(x, 4, gamma, beta, 1e-5);
  rvec::ForceIsaForTesting(0);
  ASSERT_TRUE(vec.ok() && base.ok());
  for (int64_t i = 0; i < x.numel(); ++i)
    EXPECT_NEAR(vec->data<float>()[i], base->data<float>()[i], 1e-5) << "at " << i;
}

TEST(GroupNormTest, BadOperandsAreErrors) {
  const TensorMeta x{DType::kFloat32, {2, 6, 3}}, c6{DType::kFloat32, {6}};
  auto groups = InferGroupNorm(x, 4, c6, c6);
  ASSERT_FALSE(groups.ok());
  EXPECT_NE(groups.status().message().find("4 groups"), std::string::npos) << groups.status();
  EXPECT_FALSE(InferGroupNorm(x, 0, c6, c6).ok());
  EXPECT_FALSE(InferGroupNorm(x, 3, {DType::kFloat32, {5}}, c6).ok());
  EXPECT_FALSE(InferGroupNorm(x, 3, c6, {DType::kFloat64, {6}}).ok());
  EXPECT_FALSE(InferGroupNorm({DType::kFloat32, {6}}, 3, c6, c6).ok());
  EXPECT_FALSE(InferGroupNorm({DType::kInt32, {2, 6}}, 3, {DType::kInt32, {6}}, {DType::kInt32, {6}}).ok());
}

TEST(GroupNormTest, PrintedFormShowsTheGroups) {
  graph::Graph g;
  const graph::NodeId x = g.AddParam({DType::kFloat32, {2, 6, 3}});
  const graph::NodeId w = g.AddParam({DType::kFloat32, {6}}), b = g.AddParam({DType::kFloat32, {6}});
  graph::Attrs a;
  a.attr = 3;
  a.value = Tensor::Scalar<double>(1e-5);
  auto y = g.AddOp(graph::Op::kGroupNorm, {x, w, b}, a);
  ASSERT_TRUE(y.ok()) << y.status();
  g.SetOutputs({*y});
  const std::string text = g.ToText();
  EXPECT_NE(text.find("group_norm(%0, %1, %2, groups=3, value=1e-05)"), std::string::npos) << text;
}

}  // namespace
}  // namespace pijit
