#include "graph/passes/matmul_epilogue.h"

#include <cmath>

#include "tests/cpp/passes/pass_test_util.h"

namespace pijit::graph {
namespace {

TEST(MatMulEpilogueTest, TextRoundTripsThePostOps) {
  const std::string text =
      "graph(%0: f32[2,3], %1: f32[3,4], %2: f32[4], %3: f32[2,4]) {\n"
      "  %4: f32[2,4] = fused_matmul(%0, %1, %2, %3, post=[bias,tanh,add,relu])\n"
      "  return (%4)\n}\n";
  EXPECT_EQ(ParseOrDie(text).ToText(), text);
  EXPECT_FALSE(Parse("graph(%0: f32[2,3], %1: f32[3,4]) {\n"
                     "  %2: f32[2,4] = fused_matmul(%0, %1, post=[softmax])\n  return (%2)\n}\n")
                   .ok());
}

TEST(MatMulEpilogueTest, KernelEqualsTheOpsOneByOne) {
  // Bias and add: bit for bit; tanh within kMatMulEpilogueRelTol.
  for (auto [m, k, n] : {std::array<int64_t, 3>{1, 1, 1}, {5, 7, 9}, {64, 100, 33}}) {
    Tensor a = RandomNormal({m, k}, 1), b = RandomNormal({k, n}, 2), bias = RandomNormal({n}, 3),
           res = RandomNormal({m, n}, 4);
    const Tensor* ops[] = {&bias, &res};
    for (bool tanh : {false, true}) {
      std::vector<int64_t> post = {kBias};
      if (tanh) post.push_back(kTanh);
      post.push_back(kAdd);
      post.push_back(kRelu);
      auto got = MatMulEpilogue(a, b, post, ops);
      ASSERT_TRUE(got.ok()) << got.status();
      Tensor want = *MatMul(a, b);
      want = *Binary(BinaryOp::kAdd, want, bias);
      if (tanh) want = *Unary(UnaryOp::kTanh, want);
      want = *Binary(BinaryOp::kAdd, want, res);
      want = *Unary(UnaryOp::kRelu, want);
      for (int64_t i = 0; i < want.numel(); ++i) {
        const float x = got->data<float>()[i], y = want.data<float>()[i];
        if (tanh) EXPECT_NEAR(x, y, kMatMulEpilogueRelTol * std::max(1.f, std::abs(y)));
        else EXPECT_EQ(x, y) << i;
      }
    }
  }
}

TEST(MatMulEpilogueTest, RejectsMalformedPostOps) {
  const TensorMeta a{DType::kFloat32, {2, 3}}, b{DType::kFloat32, {3, 4}};
  const TensorMeta row{DType::kFloat32, {4}}, col{DType::kFloat32, {2, 1}};
  const TensorMeta row64{DType::kFloat64, {4}};
  const TensorMeta* one[] = {&row};
  EXPECT_FALSE(InferMatMulEpilogue(a, b, {kRelu, kBias}, one).ok());  // bias not first
  EXPECT_FALSE(InferMatMulEpilogue(a, b, {kBias, kAdd}, one).ok());   // too few operands
  EXPECT_FALSE(InferMatMulEpilogue(a, b, {kRelu}, one).ok());         // too many operands
  const TensorMeta* wide[] = {&row64};
  EXPECT_FALSE(InferMatMulEpilogue(a, b, {kAdd}, wide).ok());  // would promote
  const TensorMeta* column[] = {&col};
  EXPECT_FALSE(InferMatMulEpilogue(a, b, {kBias}, column).ok());  // a bias runs along rows
  EXPECT_TRUE(InferMatMulEpilogue(a, b, {kAdd}, column).ok());    // an add may broadcast
  EXPECT_FALSE(MatMulEpilogueIsOnePrimitive(a, b, {kAdd}, column));  // but runs op by op
  EXPECT_FALSE(MatMulEpilogueIsOnePrimitive(a, b, {kRelu, kBias}, one));
  EXPECT_TRUE(MatMulEpilogueIsOnePrimitive(a, b, {kBias, kRelu}, one));
}

}  // namespace
}  // namespace pijit::graph
