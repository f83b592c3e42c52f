// Broadcasting binary kernels (arithmetic, comparisons, logical and bitwise ops), the
// broadcast view and dtype casts.
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/complex.h"
#include "kernels/cpu/isa_loops.h"
#include "kernels/cpu/loops.h"
#include "kernels/errors.h"
#include "kernels/ops.h"

namespace pijit {

const char* BinaryOpName(BinaryOp op) {
  switch (op) {
#define PIJIT_OP_NAME(e, n, ...) case BinaryOp::e: return n;
    PIJIT_BINARY_OPS(PIJIT_OP_NAME)
#undef PIJIT_OP_NAME
  }
  return "?";
}

absl::StatusOr<Shape> BroadcastShapes(const char* op, absl::Span<const int64_t> a,
                                      absl::Span<const int64_t> b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: operands could not be broadcast together with shapes %s and %s", op,
          ShapeToString(a), ShapeToString(b)));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

absl::StatusOr<TensorMeta> InferBroadcastTo(const TensorMeta& a, absl::Span<const int64_t> shape) {
  const size_t n = shape.size();
  auto fail = [&] {
    return absl::InvalidArgumentError(absl::StrFormat(
        "broadcast_to: cannot broadcast a tensor of shape %s to shape %s",
        ShapeToString(a.shape), ShapeToString(shape)));
  };
  if (a.shape.size() > n) return fail();
  const size_t lead = n - a.shape.size();
  Shape out(shape.begin(), shape.end());
  for (size_t i = 0; i < n; ++i) {
    if (out[i] == -1) {
      if (i < lead) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "broadcast_to: -1 in shape %s is only allowed where the input (of shape %s) has an "
            "axis", ShapeToString(shape), ShapeToString(a.shape)));
      }
      out[i] = a.shape[i - lead];
    }
    if (out[i] < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "broadcast_to: negative dimension %d in shape %s", out[i], ShapeToString(shape)));
    }
    if (i >= lead && a.shape[i - lead] != out[i] && a.shape[i - lead] != 1) return fail();
  }
  return TensorMeta{a.dtype, std::move(out)};
}

absl::StatusOr<Tensor> BroadcastTo(const Tensor& a, absl::Span<const int64_t> shape) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferBroadcastTo(MetaOf(a), shape));
  const size_t n = meta.shape.size();
  Shape strides(n, 0);
  const size_t lead = n - a.shape().size();
  for (size_t i = lead; i < n; ++i)
    if (a.shape()[i - lead] == meta.shape[i]) strides[i] = a.strides()[i - lead];
  return Tensor::View(a.storage(), a.dtype(), std::move(meta.shape), std::move(strides),
                      a.offset());
}

absl::StatusOr<Tensor> Cast(const Tensor& a, DType dtype) {
  if (a.dtype() == dtype) return a;
  Tensor out = Tensor::Empty(a.shape(), dtype);
  CopyInto(a, out);
  return out;
}

namespace {

enum class Family : uint8_t { kArithmetic, kCompare, kLogical, kBitwise };
Family FamilyOf(BinaryOp op) {
  switch (op) {
    case BinaryOp::kEqual: case BinaryOp::kNotEqual: case BinaryOp::kLess:
    case BinaryOp::kLessEqual: case BinaryOp::kGreater: case BinaryOp::kGreaterEqual:
      return Family::kCompare;
    case BinaryOp::kLogicalAnd: case BinaryOp::kLogicalOr: case BinaryOp::kLogicalXor:
      return Family::kLogical;
    case BinaryOp::kBitwiseAnd: case BinaryOp::kBitwiseOr: case BinaryOp::kBitwiseXor:
      return Family::kBitwise;
    default:
      return Family::kArithmetic;
  }
}

// The dtype both operands are converted to before the loop runs.
absl::StatusOr<DType> ComputeDType(BinaryOp op, DType a, DType b) {
  const char* name = BinaryOpName(op);
  PIJIT_ASSIGN_OR_RETURN(DType dt, PromoteOrError(name, a, b));
  if (IsComplex(dt)) {
    PIJIT_RETURN_IF_ERROR(CheckComplexBinary(op, dt));
    return dt;
  }
  switch (FamilyOf(op)) {
    case Family::kLogical: return DType::kBool;
    case Family::kCompare: return dt;
    case Family::kBitwise:
      if (IsFloating(dt)) {
        return absl::UnimplementedError(absl::StrFormat(
            "%s: unsupported dtypes %s and %s, expected bool or integer operands", name,
            DTypeName(a), DTypeName(b)));
      }
      return dt;
    case Family::kArithmetic: break;
  }
  if (dt == DType::kBool) {
    switch (op) {
      case BinaryOp::kSub:
        return absl::UnimplementedError(
            "sub: boolean subtract is not supported, use logical_xor or cast to an integer dtype");
      // NumPy has no bool loop for these: the first that bool casts to safely is int8's.
      case BinaryOp::kPow: case BinaryOp::kFloorDiv: case BinaryOp::kMod:
        return DType::kInt8;
      default: break;
    }
  }
  if (op == BinaryOp::kDiv && !IsFloating(dt)) dt = FloatFunctionDType(dt);
  return dt;
}

DType OutputDType(BinaryOp op, DType compute) {
  Family f = FamilyOf(op);
  return f == Family::kCompare || f == Family::kLogical ? DType::kBool : compute;
}

// Wrapping integer arithmetic, as NumPy's (no undefined behaviour on overflow).
template <typename T>
T WrapMul(T a, T b) {
  // In uint64: narrower unsigned types would promote to int, whose overflow is undefined.
  return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
template <typename T>
T IntPow(T base, T exp) {
  T result = 1;
  while (exp > 0) {
    if (exp & 1) result = WrapMul(result, base);
    base = WrapMul(base, base);
    exp >>= 1;
  }
  return result;
}
// Unsigned types have no -1 divisor and no signs to correct for (a uint32 or uint64 b of all
// ones compared with -1 would match).
template <typename T>
T IntFloorDiv(T a, T b) {
  if (b == 0) return 0;  // NumPy warns and gives 0
  if constexpr (std::is_unsigned_v<T>) {
    return a / b;
  } else {
    if (b == -1) return static_cast<T>(-static_cast<std::make_unsigned_t<T>>(a));
    T q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
  }
}
template <typename T>
T IntMod(T a, T b) {
  if constexpr (std::is_unsigned_v<T>) {
    return b == 0 ? 0 : a % b;
  } else {
    if (b == 0 || b == -1) return 0;
    T r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  }
}
// Python's float floor division and modulo (NumPy's npy_divmod).
template <typename T>
T FloatMod(T a, T b) {
  if (b == 0) return std::fmod(a, b);
  T mod = std::fmod(a, b);
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = std::copysign(T(0), b);
  }
  return mod;
}
template <typename T>
T FloatFloorDiv(T a, T b) {
  if (b == 0) return a / b;
  T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= T(1);
  if (div == 0) return std::copysign(T(0), a / b);
  T floordiv = std::floor(div);
  if (div - floordiv > T(0.5)) floordiv += T(1);
  return floordiv;
}

// float32 and float64 take the AVX-512 or AVX2 loops of isa_loops.h where the CPU has them.
template <typename T>
constexpr bool kHasVectorLoops = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <typename T>
absl::Status RunArithmetic(BinaryOp op, const Tensor& va, const Tensor& vb, const Tensor& out) {
  constexpr bool kFloat = kIsFloat<T>;
  constexpr bool kBool = std::is_same_v<T, bool>;
  // float16 and bfloat16 compute in float32 and round once, on store (as NumPy's float16).
  using C = ComputeType<T>;
  loops::BinaryRunFn<T, T> vec = nullptr;  // add, sub, mul, div, maximum, minimum
  if constexpr (kHasVectorLoops<T>) {
    if (out.numel() >= isa_loops::kMinElements) vec = isa_loops::ArithmeticRun<T>(op);
  }
  switch (op) {
    case BinaryOp::kAdd:
      if constexpr (kBool) loops::Binary<T, T>(va, vb, out, [](T x, T y) { return x || y; });
      else loops::Binary<T, T>(va, vb, out, [](T x, T y) { return static_cast<T>(x + y); }, vec);
      break;
    case BinaryOp::kSub:
      if constexpr (!kBool)
        loops::Binary<T, T>(va, vb, out, [](T x, T y) { return static_cast<T>(x - y); }, vec);
      break;
    case BinaryOp::kMul:
      if constexpr (kBool) loops::Binary<T, T>(va, vb, out, [](T x, T y) { return x && y; });
      else loops::Binary<T, T>(va, vb, out, [](T x, T y) { return static_cast<T>(x * y); }, vec);
      break;
    case BinaryOp::kDiv:
      if constexpr (kFloat)
        loops::Binary<T, T>(va, vb, out, [](T x, T y) { return static_cast<T>(C(x) / C(y)); }, vec);
      break;
    case BinaryOp::kMaximum:
      loops::Binary<T, T>(va, vb, out, [](T x, T y) { return loops::Maximum(x, y); }, vec);
      break;
    case BinaryOp::kMinimum:
      loops::Binary<T, T>(va, vb, out, [](T x, T y) { return loops::Minimum(x, y); }, vec);
      break;
    case BinaryOp::kPow:
      if constexpr (kFloat) {
        loops::Binary<T, T>(va, vb, out, [](T x, T y) { return static_cast<T>(std::pow(C(x), C(y))); });
      } else if constexpr (!kBool) {
        if (loops::AnyOf<T>(vb, [](T y) { return y < 0; })) {
          return absl::InvalidArgumentError(
              "pow: integers to negative integer powers are not allowed");
        }
        loops::Binary<T, T>(va, vb, out, [](T x, T y) { return IntPow(x, y); });
      }
      break;
    case BinaryOp::kFloorDiv:
      if constexpr (kFloat)
        loops::Binary<T, T>(va, vb, out, [](T x, T y) { return static_cast<T>(FloatFloorDiv<C>(x, y)); });
      else if constexpr (!kBool) loops::Binary<T, T>(va, vb, out, IntFloorDiv<T>);
      break;
    case BinaryOp::kMod:
      if constexpr (kFloat)
        loops::Binary<T, T>(va, vb, out, [](T x, T y) { return static_cast<T>(FloatMod<C>(x, y)); });
      else if constexpr (!kBool) loops::Binary<T, T>(va, vb, out, IntMod<T>);
      break;
    case BinaryOp::kBitwiseAnd:
      if constexpr (!kFloat) loops::Binary<T, T>(va, vb, out, [](T x, T y) { return static_cast<T>(x & y); });
      break;
    case BinaryOp::kBitwiseOr:
      if constexpr (!kFloat) loops::Binary<T, T>(va, vb, out, [](T x, T y) { return static_cast<T>(x | y); });
      break;
    case BinaryOp::kBitwiseXor:
      if constexpr (!kFloat) loops::Binary<T, T>(va, vb, out, [](T x, T y) { return static_cast<T>(x ^ y); });
      break;
    default:
      return absl::InternalError(absl::StrFormat("%s is not arithmetic", BinaryOpName(op)));
  }
  return absl::OkStatus();
}

template <typename T>
void RunCompare(BinaryOp op, const Tensor& va, const Tensor& vb, const Tensor& out) {
  loops::BinaryRunFn<T, bool> vec = nullptr;  // the six comparisons
  if constexpr (kHasVectorLoops<T>) {
    if (out.numel() >= isa_loops::kMinElements) vec = isa_loops::CompareRun<T>(op);
  }
  switch (op) {
    case BinaryOp::kEqual: loops::Binary<T, bool>(va, vb, out, [](T x, T y) { return x == y; }, vec); break;
    case BinaryOp::kNotEqual: loops::Binary<T, bool>(va, vb, out, [](T x, T y) { return x != y; }, vec); break;
    case BinaryOp::kLess: loops::Binary<T, bool>(va, vb, out, [](T x, T y) { return x < y; }, vec); break;
    case BinaryOp::kLessEqual: loops::Binary<T, bool>(va, vb, out, [](T x, T y) { return x <= y; }, vec); break;
    case BinaryOp::kGreater: loops::Binary<T, bool>(va, vb, out, [](T x, T y) { return x > y; }, vec); break;
    case BinaryOp::kGreaterEqual: loops::Binary<T, bool>(va, vb, out, [](T x, T y) { return x >= y; }, vec); break;
    case BinaryOp::kLogicalAnd: loops::Binary<T, bool>(va, vb, out, [](T x, T y) { return x && y; }); break;
    case BinaryOp::kLogicalOr: loops::Binary<T, bool>(va, vb, out, [](T x, T y) { return x || y; }); break;
    case BinaryOp::kLogicalXor: loops::Binary<T, bool>(va, vb, out, [](T x, T y) { return x != y; }); break;
    default: break;
  }
}

absl::Status RunBinary(BinaryOp op, DType compute, const Tensor& va, const Tensor& vb,
                       const Tensor& out) {
  if (IsComplex(compute)) return RunComplexBinary(op, compute, va, vb, out);
  const Family f = FamilyOf(op);
  return DispatchDType(compute, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    if (f == Family::kCompare || f == Family::kLogical) {
      RunCompare<T>(op, va, vb, out);
      return absl::OkStatus();
    }
    return RunArithmetic<T>(op, va, vb, out);
  });
}

}  // namespace

absl::StatusOr<TensorMeta> InferBinary(BinaryOp op, const TensorMeta& a, const TensorMeta& b) {
  PIJIT_ASSIGN_OR_RETURN(DType compute, ComputeDType(op, a.dtype, b.dtype));
  PIJIT_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(BinaryOpName(op), a.shape, b.shape));
  return TensorMeta{OutputDType(op, compute), std::move(shape)};
}

absl::StatusOr<Tensor> Binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  PIJIT_ASSIGN_OR_RETURN(DType compute, ComputeDType(op, a.dtype(), b.dtype()));
  const DType out_dtype = OutputDType(op, compute);
  // Fast path: no conversion, no broadcasting.
  if (a.dtype() == compute && b.dtype() == compute && a.shape() == b.shape()) {
    Tensor out = Tensor::Empty(a.shape(), out_dtype);
    PIJIT_RETURN_IF_ERROR(RunBinary(op, compute, a, b, out));
    return out;
  }
  PIJIT_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(BinaryOpName(op), a.shape(), b.shape()));
  // Inputs are converted to the compute dtype (true division of integers computes in float64).
  PIJIT_ASSIGN_OR_RETURN(Tensor ca, Cast(a, compute));
  PIJIT_ASSIGN_OR_RETURN(Tensor cb, Cast(b, compute));
  PIJIT_ASSIGN_OR_RETURN(Tensor va, BroadcastTo(ca, shape));
  PIJIT_ASSIGN_OR_RETURN(Tensor vb, BroadcastTo(cb, shape));
  Tensor out = Tensor::Empty(shape, out_dtype);
  PIJIT_RETURN_IF_ERROR(RunBinary(op, compute, va, vb, out));
  return out;
}

}  // namespace pijit
