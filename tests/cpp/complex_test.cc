// complex64 and complex128: their promotion with the real dtypes (MindSpore's and torch's
// rules), the kernels that take them against std::complex, and the TypeErrors of the ops that
// do not.
#include <complex>

#include "gtest/gtest.h"
#include "kernels/cpu/complex.h"
#include "kernels/ops.h"

namespace pijit {
namespace {

constexpr DType c64 = DType::kComplex64, c128 = DType::kComplex128, f16 = DType::kFloat16,
                f32 = DType::kFloat32, f64 = DType::kFloat64, i64 = DType::kInt64,
                u64 = DType::kUInt64, b = DType::kBool;
using C64 = std::complex<float>;
using C128 = std::complex<double>;

TEST(ComplexPromotionTest, TheComplexWinsAndFloat64WidensIt) {
  for (DType real : {b, i64, u64, f16, f32}) {
    EXPECT_EQ(PromoteTypes(real, c64), c64) << DTypeName(real);
    EXPECT_EQ(PromoteTypes(c64, real), c64) << DTypeName(real);
    EXPECT_EQ(PromoteTypes(real, c128), c128) << DTypeName(real);
    EXPECT_TRUE(CanPromote(real, c64));
  }
  EXPECT_EQ(PromoteTypes(f64, c64), c128);
  EXPECT_EQ(PromoteTypes(c64, f64), c128);
  EXPECT_EQ(PromoteTypes(c64, c128), c128);
  EXPECT_EQ(PromoteWithScalar(f32, ScalarKind::kComplex), c64);
  EXPECT_EQ(PromoteWithScalar(i64, ScalarKind::kComplex), c64);
  EXPECT_EQ(PromoteWithScalar(f64, ScalarKind::kComplex), c128);
  EXPECT_EQ(PromoteWithScalar(c64, ScalarKind::kFloat), c64);
  EXPECT_EQ(ItemSize(c64), 8u);
  EXPECT_EQ(ItemSize(c128), 16u);
  EXPECT_STREQ(DTypeName(c128), "Complex128");
}

template <typename C>
Tensor Vec(std::initializer_list<C> v, DType dt) {
  Tensor t = Tensor::Empty({static_cast<int64_t>(v.size())}, dt);
  int i = 0;
  for (C x : v) t.data<C>()[i++] = x;
  return t;
}

TEST(ComplexKernelTest, ArithmeticMatchesStdComplex) {
  const Tensor x = Vec<C128>({{1, 2}, {-3, 0.5}}, c128);
  const Tensor y = Vec<C128>({{0.25, -1}, {2, 2}}, c128);
  for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv}) {
    auto r = Binary(op, x, y);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->dtype(), c128);
    for (int i = 0; i < 2; ++i) {
      const C128 a = x.data<C128>()[i], c = y.data<C128>()[i];
      const C128 want = op == BinaryOp::kAdd ? a + c : op == BinaryOp::kSub ? a - c
                        : op == BinaryOp::kMul ? a * c : a / c;
      EXPECT_NEAR(std::abs(r->data<C128>()[i] - want), 0, 1e-15) << BinaryOpName(op);
    }
  }
}

TEST(ComplexKernelTest, RealOperandsAreWidenedWithAZeroImaginaryPart) {
  Tensor real = Tensor::Empty({2}, f32);
  real.data<float>()[0] = 2;
  real.data<float>()[1] = -1;
  auto r = Binary(BinaryOp::kMul, Vec<C64>({{1, 1}, {0, 3}}, c64), real);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->dtype(), c64);
  EXPECT_EQ(r->data<C64>()[0], C64(2, 2));
  EXPECT_EQ(r->data<C64>()[1], C64(0, -3));
}

TEST(ComplexKernelTest, AbsIsRealAndCastKeepsTheRealPart) {
  auto a = Unary(UnaryOp::kAbs, Vec<C64>({{3, 4}, {1e30f, 1e30f}}, c64));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->dtype(), f32);
  EXPECT_FLOAT_EQ(a->data<float>()[0], 5);
  EXPECT_FLOAT_EQ(a->data<float>()[1], 1e30f * std::sqrt(2.0f));  // no overflow in the square
  auto c = Cast(Vec<C128>({{1.5, -2}}, c128), f32);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->data<float>()[0], 1.5f);
  auto back = Cast(*c, c64);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->data<C64>()[0], C64(1.5f, 0));
}

TEST(ComplexKernelTest, SumMeanAndProdReduceBothParts) {
  const Tensor x = Vec<C64>({{1, 2}, {3, -1}, {0, 1}}, c64);
  auto s = Reduce(ReduceOp::kSum, x, {}, false, 0);
  auto m = Reduce(ReduceOp::kMean, x, {}, false, 0);
  auto p = Reduce(ReduceOp::kProd, x, {}, false, 0);
  ASSERT_TRUE(s.ok() && m.ok() && p.ok());
  EXPECT_EQ(s->dtype(), c64);
  EXPECT_EQ(s->data<C64>()[0], C64(4, 2));
  EXPECT_NEAR(std::abs(m->data<C64>()[0] - C64(4.f / 3, 2.f / 3)), 0, 1e-6);
  EXPECT_EQ(p->data<C64>()[0], C64(1, 2) * C64(3, -1) * C64(0, 1));
}

TEST(ComplexKernelTest, OrderedOpsAreTypeErrorsNamingOpAndDtype) {
  const Tensor x = Vec<C64>({{1, 2}}, c64);
  for (auto r : {Binary(BinaryOp::kLess, x, x), Binary(BinaryOp::kMaximum, x, x),
                 Reduce(ReduceOp::kMax, x, {}, false, 0), Unary(UnaryOp::kSign, x)}) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_NE(r.status().message().find("Complex64"), std::string::npos) << r.status();
  }
}

TEST(ComplexKernelTest, PartsAreStridedViewsOfTheStorage) {
  const Tensor x = Vec<C128>({{1, 2}, {3, 4}}, c128);
  auto im = ComplexPart(x, /*imag=*/true);
  auto pairs = ViewAsReal(x);
  ASSERT_TRUE(im.ok() && pairs.ok());
  EXPECT_EQ(im->dtype(), f64);
  EXPECT_EQ(im->Contiguous().data<double>()[1], 4);
  EXPECT_EQ(pairs->shape(), (Shape{2, 2}));
  EXPECT_EQ(pairs->data<double>()[2], 3);
  auto made = MakeComplex(*ComplexPart(x, false), *im);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(made->data<C128>()[1], C128(3, 4));
  EXPECT_FALSE(MakeComplex(*im, *Cast(*im, f32)).ok());  // mixed float dtypes
}

}  // namespace
}  // namespace pijit
