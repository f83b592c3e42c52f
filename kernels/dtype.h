// Element types of the tensor runtime and MindSpore's promotion rules between them.
#pragma once
#include <cstddef>
#include <complex>
#include <cstdint>

#include "kernels/half.h"

namespace pijit {

template <typename T>
inline constexpr bool kIsComplex = false;
template <typename T>
inline constexpr bool kIsComplex<std::complex<T>> = true;

// X(enumerator, C++ type, display name (as MindSpore prints it), short IR name, NumPy char).
// bfloat16 has no NumPy type: its char (0) matches no NumPy dtype. The wide unsigned types and
// the complex types come last so that the enumerators of the others keep their values.
#define PIJIT_DTYPES(X)                             \
  X(kBool, bool, "Bool", "bool", '?')               \
  X(kUInt8, uint8_t, "UInt8", "u8", 'B')            \
  X(kInt8, int8_t, "Int8", "i8", 'b')               \
  X(kInt16, int16_t, "Int16", "i16", 'h')           \
  X(kInt32, int32_t, "Int32", "i32", 'i')           \
  X(kInt64, int64_t, "Int64", "i64", 'l')           \
  X(kFloat16, Half, "Float16", "f16", 'e')          \
  X(kBFloat16, BFloat16, "BFloat16", "bf16", '\0')  \
  X(kFloat32, float, "Float32", "f32", 'f')         \
  X(kFloat64, double, "Float64", "f64", 'd')        \
  X(kUInt16, uint16_t, "UInt16", "u16", 'H')        \
  X(kUInt32, uint32_t, "UInt32", "u32", 'I')        \
  X(kUInt64, uint64_t, "UInt64", "u64", 'L')        \
  X(kComplex64, std::complex<float>, "Complex64", "c64", 'F') \
  X(kComplex128, std::complex<double>, "Complex128", "c128", 'D')

enum class DType : uint8_t {
#define PIJIT_ENUM(e, t, n, s, c) e,
  PIJIT_DTYPES(PIJIT_ENUM)
#undef PIJIT_ENUM
};
constexpr int kNumDTypes = 15;

size_t ItemSize(DType d);
const char* DTypeName(DType d);       // "Float32"
const char* DTypeShortName(DType d);  // "f32"
inline bool IsFloating(DType d) {
  return d == DType::kFloat16 || d == DType::kBFloat16 || d == DType::kFloat32 ||
         d == DType::kFloat64;
}
// Signed and unsigned integers (not bool).
inline bool IsInteger(DType d) {
  return d == DType::kUInt8 || d == DType::kInt8 || d == DType::kInt16 || d == DType::kInt32 ||
         d == DType::kInt64 || d == DType::kUInt16 || d == DType::kUInt32 || d == DType::kUInt64;
}
// uint16, uint32 and uint64: MindSpore mixes them with no other dtype but bool (uint16 + int32
// is a TypeError there, not a promotion). pijit refuses them with the other integer types too,
// where no integer type holds both ranges, but lets a float win as it does over every integer
// (uint16 + float32 -> float32), so that a Python float scalar works as in MindSpore.
constexpr bool IsWideUnsigned(DType d) {
  return d == DType::kUInt16 || d == DType::kUInt32 || d == DType::kUInt64;
}
// complex64 (two float32) and complex128 (two float64). Only the ops that say so take them
// (graph/complex_support.h); DispatchDType never sees them.
constexpr bool IsComplex(DType d) { return d == DType::kComplex64 || d == DType::kComplex128; }
// The real dtype of a complex dtype's parts (complex64 -> float32); other dtypes map to themselves.
constexpr DType ComplexPartDType(DType d) {
  return d == DType::kComplex64 ? DType::kFloat32
                                : d == DType::kComplex128 ? DType::kFloat64 : d;
}
// float16 and bfloat16: stored in 16 bits, computed in float32.
inline bool IsHalfFloat(DType d) { return d == DType::kFloat16 || d == DType::kBFloat16; }

// The result dtype of an op on two tensors, as MindSpore promotes them (the float wins over
// integers whatever their widths: int32 + float32 -> float32). One table, in tensor.cc.
// A pair pijit refuses to mix (a wide unsigned type with another integer type; CanPromote
// says false) has no entry: ops check with PromoteOrError (tensor.h), which makes it the
// TypeError they report, and PromoteTypes gives the first operand's dtype for it.
DType PromoteTypes(DType a, DType b);
inline bool CanPromote(DType a, DType b) {
  return a == b || !(IsWideUnsigned(a) || IsWideUnsigned(b)) || a == DType::kBool ||
         b == DType::kBool || IsFloating(a) || IsFloating(b) || IsComplex(a) || IsComplex(b);
}

// The kind of a Python scalar mixed with a tensor. Python scalars are "weak" (NEP 50):
// they adopt the tensor's dtype unless their kind is higher.
enum class ScalarKind : uint8_t { kBool, kInt, kFloat, kComplex };
DType PromoteWithScalar(DType tensor, ScalarKind scalar);

// The result dtype of exp, sqrt, softmax, true division, ... : a floating or complex input
// keeps its dtype, an integer or bool one computes in float32 (MindSpore's default float).
inline DType FloatFunctionDType(DType d) {
  return IsFloating(d) || IsComplex(d) ? d : DType::kFloat32;
}

// The range of an integer dtype (for range checks of Python integers).
void IntegerRange(DType d, int64_t* lo, int64_t* hi);

template <typename T> struct DTypeOf;
#define PIJIT_DTYPEOF(e, t, n, s, c) \
  template <> struct DTypeOf<t> { static constexpr DType value = DType::e; };
PIJIT_DTYPES(PIJIT_DTYPEOF)
#undef PIJIT_DTYPEOF

// Calls fn(T{}) with T the C++ type of `d`, for the real dtypes. Complex dtypes are refused
// before any kernel dispatches (graph/complex_support.h), and the kernels that take them
// dispatch with DispatchComplex (a complex dtype that got here anyway would compute as float64,
// so every op checks first: graph::CheckComplexSupport).
template <typename Fn>
decltype(auto) DispatchDType(DType d, Fn&& fn) {
  switch (d) {
    case DType::kBool: return fn(bool{});
    case DType::kUInt8: return fn(uint8_t{});
    case DType::kInt8: return fn(int8_t{});
    case DType::kInt16: return fn(int16_t{});
    case DType::kInt32: return fn(int32_t{});
    case DType::kInt64: return fn(int64_t{});
    case DType::kFloat16: return fn(Half{});
    case DType::kBFloat16: return fn(BFloat16{});
    case DType::kFloat32: return fn(float{});
    case DType::kUInt16: return fn(uint16_t{});
    case DType::kUInt32: return fn(uint32_t{});
    case DType::kUInt64: return fn(uint64_t{});
    case DType::kFloat64:
    case DType::kComplex64:
    case DType::kComplex128: break;
  }
  return fn(double{});
}

// Calls fn(T{}) with T std::complex<float> or std::complex<double>; `d` must be complex.
template <typename Fn>
decltype(auto) DispatchComplex(DType d, Fn&& fn) {
  if (d == DType::kComplex64) return fn(std::complex<float>{});
  return fn(std::complex<double>{});
}

}  // namespace pijit
