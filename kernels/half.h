// The 16-bit floating types: IEEE binary16 (NumPy's float16) and bfloat16 (the upper half of
// a float32, as torch and ml_dtypes). Both are storage types: arithmetic converts to float32
// (the implicit conversion), computes there, and rounds to nearest even when the result is
// stored back. float16 converts from double directly (as NumPy's npy_double_to_half, no double
// rounding); bfloat16 converts from double through float32 (as ml_dtypes and torch).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace pijit {
namespace half_bits {

inline uint32_t FloatBits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float BitsFloat(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline uint16_t FromFloat(float f) {
  const uint32_t x = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00u | static_cast<uint16_t>((ax >> 13) & 0x3ffu);  // NaN
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {                        // below 2^-14: subnormal half (or zero)
    // Scaling by 2^24 is exact; nearbyint rounds half to even in the default mode.
    return sign | static_cast<uint16_t>(std::nearbyint(BitsFloat(ax) * 0x1p24f));
  }
  // Rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits to nearest even;
  // a carry out of the mantissa correctly bumps the exponent.
  const uint32_t r = ax - 0x38000000u + 0xfffu + ((ax >> 13) & 1u);
  return sign | static_cast<uint16_t>(r >> 13);
}

inline uint16_t FromDouble(double d) {
  uint64_t x;
  std::memcpy(&x, &d, 8);
  const uint16_t sign = static_cast<uint16_t>((x >> 48) & 0x8000u);
  const uint64_t ax = x & 0x7fffffffffffffffull;
  if (ax > 0x7ff0000000000000ull) return sign | 0x7e00u | static_cast<uint16_t>((ax >> 42) & 0x3ffu);
  if (ax >= 0x40effe0000000000ull) return sign | 0x7c00u;  // >= 65520
  if (ax < 0x3f10000000000000ull) {                        // below 2^-14
    double a;
    std::memcpy(&a, &ax, 8);
    return sign | static_cast<uint16_t>(std::nearbyint(a * 0x1p24));
  }
  const uint64_t rebased = ax - (uint64_t{1008} << 52);
  uint64_t h = rebased >> 42;
  const uint64_t rem = rebased & ((uint64_t{1} << 42) - 1), halfway = uint64_t{1} << 41;
  if (rem > halfway || (rem == halfway && (h & 1))) ++h;
  return sign | static_cast<uint16_t>(h);
}

inline float ToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1f) return BitsFloat(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    const float v = static_cast<float>(mant) * 0x1p-24f;  // exact
    return sign ? -v : v;
  }
  return BitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t BF16FromFloat(float f) {
  const uint32_t x = FloatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
inline float BF16ToFloat(uint16_t b) { return BitsFloat(static_cast<uint32_t>(b) << 16); }

}  // namespace half_bits

// NumPy's float16.
struct Half {
  uint16_t bits;
  Half() = default;
  Half(float f) : bits(half_bits::FromFloat(f)) {}  // implicit: stores of float results round
  explicit Half(double d) : bits(half_bits::FromDouble(d)) {}
  template <typename T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  explicit Half(T v) : Half(static_cast<float>(v)) {}  // |v| >= 2^24 overflows to inf either way
  operator float() const { return half_bits::ToFloat(bits); }
  static Half FromBits(uint16_t b) { Half h; h.bits = b; return h; }
};

// bfloat16: 8 exponent bits, 7 mantissa bits.
struct BFloat16 {
  uint16_t bits;
  BFloat16() = default;
  BFloat16(float f) : bits(half_bits::BF16FromFloat(f)) {}
  explicit BFloat16(double d) : BFloat16(static_cast<float>(d)) {}
  template <typename T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  explicit BFloat16(T v) : BFloat16(static_cast<float>(v)) {}
  operator float() const { return half_bits::BF16ToFloat(bits); }
  static BFloat16 FromBits(uint16_t b) { BFloat16 h; h.bits = b; return h; }
};
static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

// Floating element types, the 16-bit ones included (std::is_floating_point excludes them).
template <typename T>
inline constexpr bool kIsFloat = std::is_floating_point_v<T> || std::is_same_v<T, Half> ||
                                 std::is_same_v<T, BFloat16>;
template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// The type a kernel computes in for elements of T: float32 for the 16-bit floats.
template <typename T>
using ComputeType = std::conditional_t<kIsHalf<T>, float, T>;

}  // namespace pijit

// Limits of the 16-bit floats, for kernels written against std::numeric_limits<T>.
template <>
struct std::numeric_limits<pijit::Half> {
  static constexpr bool is_specialized = true, is_signed = true, is_integer = false,
                        has_infinity = true, has_quiet_NaN = true;
  static constexpr int digits = 11;
  static pijit::Half lowest() { return pijit::Half::FromBits(0xfbff); }
  static pijit::Half max() { return pijit::Half::FromBits(0x7bff); }
  static pijit::Half min() { return pijit::Half::FromBits(0x0400); }
  static pijit::Half epsilon() { return pijit::Half::FromBits(0x1400); }
  static pijit::Half infinity() { return pijit::Half::FromBits(0x7c00); }
  static pijit::Half quiet_NaN() { return pijit::Half::FromBits(0x7e00); }
};
template <>
struct std::numeric_limits<pijit::BFloat16> {
  static constexpr bool is_specialized = true, is_signed = true, is_integer = false,
                        has_infinity = true, has_quiet_NaN = true;
  static constexpr int digits = 8;
  static pijit::BFloat16 lowest() { return pijit::BFloat16::FromBits(0xff7f); }
  static pijit::BFloat16 max() { return pijit::BFloat16::FromBits(0x7f7f); }
  static pijit::BFloat16 min() { return pijit::BFloat16::FromBits(0x0080); }
  static pijit::BFloat16 epsilon() { return pijit::BFloat16::FromBits(0x3c00); }
  static pijit::BFloat16 infinity() { return pijit::BFloat16::FromBits(0x7f80); }
  static pijit::BFloat16 quiet_NaN() { return pijit::BFloat16::FromBits(0x7fc0); }
};
