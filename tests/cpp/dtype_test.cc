// The dtype table: NumPy's promotion between every pair (one table in kernels/tensor.cc),
// bfloat16's ML convention, weak Python scalars, the 16-bit float conversions, and the wide
// unsigned types (uint16/32/64), which mix with no other integer type.
#include <cmath>
#include <cstring>

#include "gtest/gtest.h"
#include "kernels/number_text.h"
#include "kernels/ops.h"

namespace pijit {
namespace {

constexpr DType b = DType::kBool, u8 = DType::kUInt8, i8 = DType::kInt8, i16 = DType::kInt16,
                i32 = DType::kInt32, i64 = DType::kInt64, f16 = DType::kFloat16,
                bf = DType::kBFloat16, f32 = DType::kFloat32, f64 = DType::kFloat64;
constexpr DType kAll[] = {b, u8, i8, i16, i32, i64, f16, bf, f32, f64};

TEST(PromotionTableTest, IsSymmetricAndIdempotentWithBoolAsIdentity) {
  for (DType x : kAll) {
    EXPECT_EQ(PromoteTypes(x, x), x) << DTypeName(x);
    EXPECT_EQ(PromoteTypes(b, x), x) << DTypeName(x);
    for (DType y : kAll) {
      EXPECT_EQ(PromoteTypes(x, y), PromoteTypes(y, x)) << DTypeName(x) << " " << DTypeName(y);
    }
  }
}

TEST(PromotionTableTest, ResultHoldsBothOperandsKinds) {
  for (DType x : kAll)
    for (DType y : kAll) {
      const DType r = PromoteTypes(x, y);
      // A float operand gives a float result; an integer one never gives bool.
      if (IsFloating(x) || IsFloating(y)) EXPECT_TRUE(IsFloating(r)) << DTypeName(x) << DTypeName(y);
      if (IsInteger(x) || IsInteger(y)) EXPECT_NE(r, b);
      // Within a category the result never narrows (across, the higher category's type wins).
      if (IsFloating(x) == IsFloating(y) && IsInteger(x) == IsInteger(y) && x != bf && y != bf)
        EXPECT_GE(ItemSize(r), std::max(ItemSize(x), ItemSize(y)));
    }
}

TEST(PromotionTableTest, MatchesMindSporeRules) {
  // MindSpore's (and torch's) result types for the pairs where a rule is easy to get wrong:
  // the float wins over any integer whatever the widths.
  EXPECT_EQ(PromoteTypes(u8, i8), i16);
  EXPECT_EQ(PromoteTypes(u8, i16), i16);
  EXPECT_EQ(PromoteTypes(u8, i32), i32);
  EXPECT_EQ(PromoteTypes(i8, i16), i16);
  EXPECT_EQ(PromoteTypes(i8, i64), i64);
  EXPECT_EQ(PromoteTypes(u8, f16), f16);
  EXPECT_EQ(PromoteTypes(i8, f16), f16);
  EXPECT_EQ(PromoteTypes(i16, f16), f16);
  EXPECT_EQ(PromoteTypes(i32, f16), f16);
  EXPECT_EQ(PromoteTypes(i64, f16), f16);
  EXPECT_EQ(PromoteTypes(i16, f32), f32);
  EXPECT_EQ(PromoteTypes(i32, f32), f32);
  EXPECT_EQ(PromoteTypes(i64, f32), f32);
  EXPECT_EQ(PromoteTypes(u8, f32), f32);
  EXPECT_EQ(PromoteTypes(f16, f32), f32);
  EXPECT_EQ(PromoteTypes(f16, f64), f64);
  EXPECT_EQ(PromoteTypes(i64, f64), f64);
}

TEST(PromotionTableTest, BFloat16FollowsTheMlConvention) {
  for (DType x : {b, u8, i8, i16, i32, i64}) EXPECT_EQ(PromoteTypes(bf, x), bf) << DTypeName(x);
  EXPECT_EQ(PromoteTypes(bf, f16), f32);
  EXPECT_EQ(PromoteTypes(bf, f32), f32);
  EXPECT_EQ(PromoteTypes(bf, f64), f64);
}

TEST(PromotionTableTest, PythonScalarsAreWeak) {
  for (DType x : {u8, i8, i16, i32, i64}) {
    EXPECT_EQ(PromoteWithScalar(x, ScalarKind::kInt), x);
    EXPECT_EQ(PromoteWithScalar(x, ScalarKind::kFloat), f32);  // MindSpore's default float
  }
  for (DType x : {f16, bf, f32, f64}) {
    EXPECT_EQ(PromoteWithScalar(x, ScalarKind::kInt), x);
    EXPECT_EQ(PromoteWithScalar(x, ScalarKind::kFloat), x);
  }
  EXPECT_EQ(PromoteWithScalar(b, ScalarKind::kInt), i64);
  int64_t lo, hi;
  IntegerRange(u8, &lo, &hi);
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 255);
  IntegerRange(i16, &lo, &hi);
  EXPECT_EQ(lo, -32768);
  EXPECT_EQ(hi, 32767);
}

TEST(PromotionTableTest, FloatFunctionsOfIntegersComputeInFloat32) {
  for (DType x : {b, u8, i8, i16, i32, i64}) EXPECT_EQ(FloatFunctionDType(x), f32) << DTypeName(x);
  EXPECT_EQ(FloatFunctionDType(bf), bf);
  EXPECT_EQ(FloatFunctionDType(f16), f16);
  EXPECT_EQ(FloatFunctionDType(f64), f64);
}

TEST(DTypeNamesTest, PrintLikeMindSporeAndParseShortNames) {
  EXPECT_STREQ(DTypeName(f16), "Float16");
  EXPECT_STREQ(DTypeName(bf), "BFloat16");
  EXPECT_STREQ(DTypeName(i8), "Int8");
  EXPECT_STREQ(DTypeName(i16), "Int16");
  EXPECT_STREQ(DTypeName(u8), "UInt8");
  EXPECT_STREQ(DTypeShortName(bf), "bf16");
  EXPECT_STREQ(DTypeShortName(u8), "u8");
  EXPECT_EQ(ItemSize(bf), 2u);
  EXPECT_EQ(ItemSize(i8), 1u);
}

float FloatOf(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

TEST(HalfTest, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const Half x = Half::FromBits(static_cast<uint16_t>(h));
    const float f = x;
    if (std::isnan(f)) {
      EXPECT_TRUE((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0);
      continue;
    }
    EXPECT_EQ(Half(f).bits, h) << h;
    EXPECT_EQ(Half(static_cast<double>(f)).bits, h) << h;
  }
}

TEST(HalfTest, RoundsToNearestEvenAndOverflowsToInfinity) {
  EXPECT_EQ(Half(1.0f + 0x1p-11f).bits, Half(1.0f).bits);          // tie: to even (down)
  EXPECT_EQ(Half(1.0f + 3 * 0x1p-11f).bits, Half(1.0f + 0x1p-9f).bits);  // tie: to even (up)
  EXPECT_EQ(static_cast<float>(Half(65519.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(static_cast<float>(Half(65520.0f))));
  EXPECT_EQ(static_cast<float>(Half(0x1p-24f)), 0x1p-24f);          // smallest subnormal
  EXPECT_EQ(static_cast<float>(Half(0x1p-25f)), 0.0f);              // tie to even: zero
  EXPECT_TRUE(std::signbit(static_cast<float>(Half(-0.0f))));
  // A double just above a tie rounds up directly; through float it would tie and round down.
  const double above = 1.0 + 0x1p-11 + 0x1p-40;
  EXPECT_EQ(Half(above).bits, Half(1.0f + 0x1p-10f).bits);
}

TEST(BFloat16Test, IsTheRoundedUpperHalfOfAFloat) {
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(static_cast<float>(BFloat16(FloatOf(0x3f808000))), 1.0f);           // tie: even
  EXPECT_EQ(static_cast<float>(BFloat16(FloatOf(0x3f818000))), FloatOf(0x3f820000));
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(NAN))));
  EXPECT_TRUE(std::isinf(static_cast<float>(BFloat16(INFINITY))));
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = BFloat16::FromBits(static_cast<uint16_t>(h));
    if (!std::isnan(f)) EXPECT_EQ(BFloat16(f).bits, h);
  }
}

template <typename T>
Tensor Vec(std::initializer_list<double> v, DType dt) {
  Tensor t = Tensor::Empty({static_cast<int64_t>(v.size())}, dt);
  int i = 0;
  for (double x : v) t.data<T>()[i++] = static_cast<T>(x);
  return t;
}

constexpr DType u16 = DType::kUInt16, u32 = DType::kUInt32, u64 = DType::kUInt64;

TEST(WideUnsignedTest, MixOnlyWithThemselvesBoolAndFloats) {
  for (DType w : {u16, u32, u64}) {
    EXPECT_TRUE(IsInteger(w) && IsWideUnsigned(w) && !IsFloating(w));
    EXPECT_EQ(*PromoteOrError("add", w, w), w);
    EXPECT_EQ(*PromoteOrError("add", b, w), w);
    EXPECT_EQ(*PromoteOrError("add", w, b), w);
    EXPECT_EQ(*PromoteOrError("add", w, f16), f16);
    EXPECT_EQ(*PromoteOrError("add", f64, w), f64);
    for (DType other : {u8, i8, i16, i32, i64, u16, u32, u64}) {
      if (other == w) continue;
      auto r = PromoteOrError("add", w, other);
      ASSERT_FALSE(r.ok()) << DTypeName(w) << " " << DTypeName(other);
      EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);  // a TypeError
      EXPECT_NE(r.status().message().find(std::string(DTypeName(w)) + " and " + DTypeName(other)),
                std::string::npos);
      EXPECT_FALSE(CanPromote(other, w));
    }
  }
  EXPECT_FALSE(IsWideUnsigned(u8));
  EXPECT_EQ(ItemSize(u16), 2u);
  EXPECT_EQ(ItemSize(u64), 8u);
  EXPECT_STREQ(DTypeName(u32), "UInt32");
  EXPECT_STREQ(DTypeShortName(u64), "u64");
}

TEST(WideUnsignedTest, RangesTextAndKernelsCoverTheWholeRange) {
  int64_t lo, hi;
  IntegerRange(u64, &lo, &hi);  // Python ints are read through int64: its top is the bound
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, std::numeric_limits<int64_t>::max());
  IntegerRange(u32, &lo, &hi);
  EXPECT_EQ(hi, 4294967295);
  const uint64_t top = std::numeric_limits<uint64_t>::max();
  std::string text;
  AppendElement(&text, u64, &top);
  EXPECT_EQ(text, "18446744073709551615");
  uint64_t back = 0;
  ASSERT_TRUE(ParseElement(text, u64, &back));
  EXPECT_EQ(back, top);
  // Floor division and modulo by all ones are not by -1; sums of uint64 stay unsigned.
  auto q = Binary(BinaryOp::kFloorDiv, Vec<uint64_t>({5, 7}, u64), Vec<uint64_t>({1, 2}, u64));
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->data<uint64_t>()[1], 3u);
  Tensor big = Tensor::Empty({2}, u64);
  big.data<uint64_t>()[0] = top;
  big.data<uint64_t>()[1] = top - 6;
  auto d = Binary(BinaryOp::kFloorDiv, Vec<uint64_t>({1, 2}, u64), big);
  auto m = Binary(BinaryOp::kMod, Vec<uint64_t>({1, 2}, u64), big);
  ASSERT_TRUE(d.ok() && m.ok());
  EXPECT_EQ(d->data<uint64_t>()[0], 0u);
  EXPECT_EQ(m->data<uint64_t>()[0], 1u);
  EXPECT_EQ(m->data<uint64_t>()[1], 2u);
  auto s = Reduce(ReduceOp::kSum, big, {}, false, 0);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->dtype(), u64);
  EXPECT_EQ(s->data<uint64_t>()[0], top - 7);  // wraps modulo 2**64, as NumPy's
  auto mean = Reduce(ReduceOp::kMean, big, {}, false, 0);
  ASSERT_TRUE(mean.ok());
  EXPECT_FLOAT_EQ(mean->data<float>()[0], static_cast<float>(static_cast<double>(top)));
}

TEST(SmallDTypeKernelTest, Int8AndUInt8WrapAroundLikeNumpy) {
  auto s = Binary(BinaryOp::kAdd, Vec<int8_t>({127, -128}, i8), Vec<int8_t>({1, -1}, i8));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->data<int8_t>()[0], -128);
  EXPECT_EQ(s->data<int8_t>()[1], 127);
  auto m = Binary(BinaryOp::kMul, Vec<uint8_t>({200, 16}, u8), Vec<uint8_t>({2, 16}, u8));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->data<uint8_t>()[0], 144);
  EXPECT_EQ(m->data<uint8_t>()[1], 0);
  auto p = Binary(BinaryOp::kMul, Vec<int16_t>({-32768, 300}, i16), Vec<int16_t>({-1, 300}, i16));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->data<int16_t>()[0], -32768);
  EXPECT_EQ(p->data<int16_t>()[1], static_cast<int16_t>(90000 - 65536 * 1));
}

TEST(SmallDTypeKernelTest, Float16ComputesInFloat32AndRoundsOnStore) {
  // 2048 + 1 is not a float16: the sum rounds (to even) like NumPy's.
  auto s = Binary(BinaryOp::kAdd, Vec<Half>({2048, 0.1}, f16), Vec<Half>({1, 0.2}, f16));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->dtype(), f16);
  EXPECT_EQ(static_cast<float>(s->data<Half>()[0]), 2048.0f);
  EXPECT_EQ(s->data<Half>()[1].bits, Half(static_cast<float>(Half(0.1)) +
                                          static_cast<float>(Half(0.2))).bits);
  auto e = Unary(UnaryOp::kExp, Vec<Half>({0, 1}, f16));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->dtype(), f16);
  EXPECT_EQ(e->data<Half>()[1].bits, Half(std::exp(1.0f)).bits);
}

TEST(SmallDTypeKernelTest, ConvOfIntegersIsATypeErrorNamingOpAndDtype) {
  Window2D win;
  auto r = Conv2D(Tensor::Empty({1, 1, 3, 3}, i8), Tensor::Empty({1, 1, 2, 2}, i8), nullptr, win);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("conv2d"), std::string::npos);
  EXPECT_NE(r.status().message().find("Int8"), std::string::npos);
}

}  // namespace
}  // namespace pijit
