// Element types of the tensor runtime and NumPy's promotion rules between them.
#pragma once
#include <cstddef>
#include <cstdint>

namespace pijit {

// X(enumerator, C++ type, display name (as MindSpore prints it), short IR name, NumPy char)
#define PIJIT_DTYPES(X)                          \
  X(kBool, bool, "Bool", "bool", '?')            \
  X(kInt32, int32_t, "Int32", "i32", 'i')        \
  X(kInt64, int64_t, "Int64", "i64", 'l')        \
  X(kFloat32, float, "Float32", "f32", 'f')      \
  X(kFloat64, double, "Float64", "f64", 'd')

enum class DType : uint8_t {
#define PIJIT_ENUM(e, t, n, s, c) e,
  PIJIT_DTYPES(PIJIT_ENUM)
#undef PIJIT_ENUM
};
constexpr int kNumDTypes = 5;

size_t ItemSize(DType d);
const char* DTypeName(DType d);       // "Float32"
const char* DTypeShortName(DType d);  // "f32"
inline bool IsFloating(DType d) { return d == DType::kFloat32 || d == DType::kFloat64; }
inline bool IsInteger(DType d) { return d == DType::kInt32 || d == DType::kInt64; }

// NumPy's result_type for two arrays.
DType PromoteTypes(DType a, DType b);

// The kind of a Python scalar mixed with a tensor. Python scalars are "weak" (NEP 50):
// they adopt the tensor's dtype unless their kind is higher.
enum class ScalarKind : uint8_t { kBool, kInt, kFloat };
DType PromoteWithScalar(DType tensor, ScalarKind scalar);

template <typename T> struct DTypeOf;
#define PIJIT_DTYPEOF(e, t, n, s, c) \
  template <> struct DTypeOf<t> { static constexpr DType value = DType::e; };
PIJIT_DTYPES(PIJIT_DTYPEOF)
#undef PIJIT_DTYPEOF

// Calls fn(T{}) with T the C++ type of `d`.
template <typename Fn>
decltype(auto) DispatchDType(DType d, Fn&& fn) {
  switch (d) {
    case DType::kBool: return fn(bool{});
    case DType::kInt32: return fn(int32_t{});
    case DType::kInt64: return fn(int64_t{});
    case DType::kFloat32: return fn(float{});
    case DType::kFloat64: break;
  }
  return fn(double{});
}

}  // namespace pijit
