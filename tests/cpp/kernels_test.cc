#include <cmath>

#include "gtest/gtest.h"
#include "kernels/ops.h"

namespace pijit {
namespace {

Tensor Arange(std::initializer_list<int64_t> shape, DType dt = DType::kFloat32) {
  Tensor t = Tensor::Empty(Shape(shape), dt);
  DispatchDType(dt, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(i);
  });
  return t;
}

TEST(BroadcastTest, ShapesFollowNumPy) {
  auto s = BroadcastShapes("add", {3, 1, 4}, {5, 1});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, Shape({3, 5, 4}));
  auto bad = BroadcastShapes("add", {3}, {4});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "add: operands could not be broadcast together with shapes (3,) and (4,)");
}

TEST(PromotionTest, IntegerWithFloat32GivesFloat32) {
  EXPECT_EQ(PromoteTypes(DType::kInt32, DType::kFloat32), DType::kFloat32);
  EXPECT_EQ(PromoteTypes(DType::kBool, DType::kInt32), DType::kInt32);
  EXPECT_EQ(PromoteWithScalar(DType::kFloat32, ScalarKind::kFloat), DType::kFloat32);
  EXPECT_EQ(PromoteWithScalar(DType::kInt32, ScalarKind::kFloat), DType::kFloat32);
}

TEST(BinaryTest, AddBroadcastsRowAgainstColumn) {
  Tensor a = Arange({3, 1});
  Tensor b = Arange({1, 4});
  auto c = Binary(BinaryOp::kAdd, a, b);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->shape(), Shape({3, 4}));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(c->data<float>()[i * 4 + j], float(i + j));
}

// Broadcast runs join axes that every operand steps over alike (loops::ForEachRun): a
// per-channel value against a scalar over (N, C, H, W), a transposed view, size-1 axes
// between, and both operands broadcast along the whole run.
TEST(BinaryTest, BroadcastRunsOverJoinedAxesMatchElementByElement) {
  Tensor channel = Arange({1, 3, 1, 1});
  Tensor scalar = Arange({1, 1, 1, 1});
  scalar.data<float>()[0] = 2.5f;
  Tensor t = *Transpose(Arange({5, 1, 4}, DType::kFloat64), {2, 1, 0});  // (4, 1, 5), strided
  struct Case { Tensor a, b; };
  const Case cases[] = {{channel, scalar}, {scalar, channel}, {t, Arange({1, 1, 5}, DType::kFloat64)},
                        {Arange({2, 1, 3, 1}), Arange({1, 1, 1, 1})}};
  for (const Case& c : cases) {
    auto out = Binary(BinaryOp::kMul, c.a, c.b);
    ASSERT_TRUE(out.ok());
    auto shape = BroadcastShapes("mul", c.a.shape(), c.b.shape());
    ASSERT_TRUE(shape.ok());
    Tensor va = *BroadcastTo(*Cast(c.a, out->dtype()), *shape);
    Tensor vb = *BroadcastTo(*Cast(c.b, out->dtype()), *shape);
    Tensor ca = va.Contiguous(), cb = vb.Contiguous();
    DispatchDType(out->dtype(), [&](auto tag) {
      using T = decltype(tag);
      for (int64_t i = 0; i < out->numel(); ++i)
        EXPECT_EQ(out->data<T>()[i], ca.data<T>()[i] * cb.data<T>()[i]) << i;
    });
  }
  Tensor big = *BroadcastTo(channel, {2, 3, 4, 5});
  auto sum = Binary(BinaryOp::kAdd, big, *BroadcastTo(scalar, {2, 3, 4, 5}));
  ASSERT_TRUE(sum.ok());
  for (int64_t i = 0; i < sum->numel(); ++i)
    EXPECT_EQ(sum->data<float>()[i], static_cast<float>((i / 20) % 3) + 2.5f) << i;
}

// A reduction over axes the input is broadcast along reads one slice (times the count for a
// sum) and equals the reduction of the materialised copy.
TEST(ReduceTest, OverBroadcastAxesEqualsTheMaterialisedCopy) {
  Tensor channel = Arange({1, 3, 1, 1});
  channel.data<float>()[1] = -1.5f;
  const Tensor view = *BroadcastTo(channel, {4, 3, 5, 6});
  const Tensor copy = view.Contiguous();
  const std::vector<std::vector<int64_t>> axes_list = {{0, 2, 3}, {}, {2}, {1, 3}};
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin}) {
    for (const auto& axes : axes_list) {
      for (bool keep : {false, true}) {
        auto got = Reduce(op, view, axes, keep);
        auto want = Reduce(op, copy, axes, keep);
        ASSERT_TRUE(got.ok() && want.ok());
        ASSERT_EQ(got->shape(), want->shape());
        ASSERT_EQ(got->dtype(), want->dtype());
        const Tensor g = got->Contiguous(), w = want->Contiguous();
        for (int64_t i = 0; i < g.numel(); ++i)
          EXPECT_FLOAT_EQ(g.data<float>()[i], w.data<float>()[i]) << static_cast<int>(op) << " " << i;
      }
    }
  }
}

TEST(BinaryTest, IntegerDivisionIsTrueDivisionInFloat32) {
  auto c = Binary(BinaryOp::kDiv, Arange({4}, DType::kInt32), Tensor::Scalar<int32_t>(2));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->dtype(), DType::kFloat32);
  EXPECT_FLOAT_EQ(c->data<float>()[3], 1.5f);
}

TEST(BinaryTest, BooleanSubtractIsATypeError) {
  auto c = Binary(BinaryOp::kSub, Arange({2}, DType::kBool), Arange({2}, DType::kBool));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(ReduceTest, SumOverEachAxisAndAll) {
  Tensor a = Arange({2, 3});
  auto s0 = Reduce(ReduceOp::kSum, a, {0}, false);
  auto s1 = Reduce(ReduceOp::kSum, a, {-1}, true);
  auto all = Reduce(ReduceOp::kMean, a, {}, false);
  ASSERT_TRUE(s0.ok() && s1.ok() && all.ok());
  EXPECT_EQ(s0->shape(), Shape({3}));
  EXPECT_EQ(s0->data<float>()[2], 2.0f + 5.0f);
  EXPECT_EQ(s1->shape(), Shape({2, 1}));
  EXPECT_EQ(s1->data<float>()[1], 3.0f + 4.0f + 5.0f);
  EXPECT_EQ(all->data<float>()[0], 2.5f);
}

TEST(MatMulTest, Float32AndFloat64MatchNaiveProduct) {
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kInt64}) {
    Tensor a = Arange({2, 3}, dt), b = Arange({3, 4}, dt);
    auto c = MatMul(a, b);
    ASSERT_TRUE(c.ok());
    auto c64 = Cast(*c, DType::kFloat64);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j) {
        double want = 0;
        for (int k = 0; k < 3; ++k) want += (i * 3 + k) * (k * 4 + j);
        EXPECT_DOUBLE_EQ(c64->data<double>()[i * 4 + j], want);
      }
  }
}

TEST(MatMulTest, TransposedOperandUsesStrides) {
  Tensor a = Arange({3, 2});
  auto at = Transpose(a, {});
  ASSERT_TRUE(at.ok());
  auto c = MatMul(*at, Arange({3, 1}));
  ASSERT_TRUE(c.ok());
  // row 0 of a^T is (0, 2, 4); times (0, 1, 2) = 10
  EXPECT_EQ(c->data<float>()[0], 10.0f);
}

TEST(MatMulTest, MisalignedShapesReportBoth) {
  auto c = MatMul(Arange({2, 3}), Arange({2, 4}));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "matmul: shapes (2, 3) and (2, 4) are not aligned: 3 (dim 1) != 2 (dim 0)");
}

TEST(ReshapeTest, InfersMinusOneAndRejectsBadSize) {
  auto r = Reshape(Arange({2, 6}), {3, -1});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->shape(), Shape({3, 4}));
  EXPECT_FALSE(Reshape(Arange({2, 6}), {5, -1}).ok());
}

TEST(UnaryTest, ExpOfIntegersIsFloat32) {
  auto e = Unary(UnaryOp::kExp, Arange({3}, DType::kInt32));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->dtype(), DType::kFloat32);
  EXPECT_FLOAT_EQ(e->data<float>()[2], std::exp(2.0f));
}

}  // namespace
}  // namespace pijit
