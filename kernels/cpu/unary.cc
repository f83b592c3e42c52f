// Unary elementwise kernels: arithmetic (neg, abs, sign, square, relu), transcendental
// functions (std:: implementations) and logical/bitwise negation.
#include <cmath>

#include "kernels/cpu/complex.h"
#include "kernels/cpu/isa_loops.h"
#include "kernels/cpu/loops.h"
#include "kernels/errors.h"
#include "kernels/fused.h"
#include "kernels/ops.h"

namespace pijit {

const char* UnaryOpName(UnaryOp op) {
  switch (op) {
#define PIJIT_OP_NAME(e, n, ...) case UnaryOp::e: return n;
    PIJIT_UNARY_OPS(PIJIT_OP_NAME)
#undef PIJIT_OP_NAME
  }
  return "?";
}

namespace {
// exp ... erf: the smallest float that holds the integer inputs (NumPy's rule).
bool IsFloatFunction(UnaryOp op) {
  switch (op) {
#define PIJIT_FLOAT_CASE(e, ...) case UnaryOp::e:
    PIJIT_FLOAT_FUNCTIONS(PIJIT_FLOAT_CASE)
#undef PIJIT_FLOAT_CASE
    case UnaryOp::kSqrt:
      return true;
    default:
      return false;
  }
}

// The AVX-512 or AVX2 loop of op on float32 and float64 where the CPU has one and `out` is
// long enough for it (isa_loops.h).
template <typename T>
loops::UnaryRunFn<T> VectorLoop(UnaryOp op, const Tensor& out) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
    return out.numel() >= isa_loops::kMinElements ? isa_loops::UnaryRun<T>(op) : nullptr;
  else
    return nullptr;
}

using loops::Sigmoid;  // the op table's expression (kernels/ops.h) names it

// T is the element type, C the type the functions compute in (float32 for the 16-bit
// floats, which round once when the result is stored).
template <typename T, typename C = ComputeType<T>>
void RunFloat(UnaryOp op, const Tensor& a, const Tensor& out) {
  auto run = [&](auto f) {
    loops::Unary<T, T>(a, out, [f](T x) { return static_cast<T>(f(static_cast<C>(x))); });
  };
  switch (op) {
#define PIJIT_FLOAT_KERNEL(e, name, surface, kernel, vjp) \
  case UnaryOp::e:                                      \
    run([](C x) { return kernel; });                    \
    break;
    PIJIT_FLOAT_FUNCTIONS(PIJIT_FLOAT_KERNEL)
#undef PIJIT_FLOAT_KERNEL
    case UnaryOp::kSqrt:
      loops::Unary<T, T>(a, out, [](T x) { return static_cast<T>(std::sqrt(static_cast<C>(x))); },
                         VectorLoop<T>(op, out));
      break;
    default: break;
  }
}

template <typename T>
void RunNumeric(UnaryOp op, const Tensor& a, const Tensor& out) {
  auto run = [&](auto f) { loops::Unary<T, T>(a, out, f, VectorLoop<T>(op, out)); };
  switch (op) {
    case UnaryOp::kNeg: run([](T x) { return static_cast<T>(-x); }); break;
    // As np.maximum(x, 0): NaN stays NaN, -0.0 gives +0.0.
    case UnaryOp::kRelu: run([](T x) { return loops::Relu(x); }); break;
    case UnaryOp::kAbs:
      if constexpr (kIsFloat<T>) run([](T x) { return std::abs(x); });
      else run([](T x) { return x < T(0) ? static_cast<T>(-x) : x; });
      break;
    case UnaryOp::kSquare: run([](T x) { return static_cast<T>(x * x); }); break;
    case UnaryOp::kSign:
      // As NumPy: NaN maps to itself, either zero to +0.
      run([](T x) { return x > T(0) ? T(1) : (x < T(0) ? T(-1) : (x == T(0) ? T(0) : x)); });
      break;
    case UnaryOp::kBitwiseNot:
      if constexpr (std::is_integral_v<T>) run([](T x) { return static_cast<T>(~x); });
      break;
    default: break;
  }
}
}  // namespace

absl::StatusOr<TensorMeta> InferUnary(UnaryOp op, const TensorMeta& a) {
  if (IsComplex(a.dtype)) return InferComplexUnary(op, a);
  const char* name = UnaryOpName(op);
  switch (op) {
    case UnaryOp::kLogicalNot: return TensorMeta{DType::kBool, a.shape};
    case UnaryOp::kAbs: return a;  // abs of Bool is the identity (NumPy)
    case UnaryOp::kBitwiseNot:
      if (IsFloating(a.dtype)) {
        return absl::UnimplementedError(absl::StrFormat(
            "bitwise_not: unsupported dtype %s, expected a bool or integer tensor",
            DTypeName(a.dtype)));
      }
      return a;
    default: break;
  }
  if (a.dtype == DType::kBool) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: unsupported dtype Bool, expected an integer or floating dtype%s", name,
        op == UnaryOp::kNeg ? " (use logical_not or ~ to negate booleans)" : ""));
  }
  DType dt = a.dtype;
  if (IsFloatFunction(op)) dt = FloatFunctionDType(dt);
  return TensorMeta{dt, a.shape};
}

// exp, log, tanh, erf and sigmoid of float32/float64 run the vectorised versions that fused
// graphs use (kernels/fused.h), so a jitted graph and the eager call give bit-identical
// results whether or not the op is fused.
const FusedKernel* GeneratedKernel(UnaryOp op, DType dt) {
  auto make = [](const char* text, DType d) -> std::shared_ptr<const FusedKernel> {
    auto program = FusedProgram::Parse(text, d, 1);
    if (!program.ok()) return nullptr;
    auto k = FusedKernel::Create(*program, {Shape{1}}, Shape{1});
    return k.ok() ? *k : nullptr;
  };
  static const std::shared_ptr<const FusedKernel> kernels[5][2] = {
      {make("exp($0)", DType::kFloat32), make("exp($0)", DType::kFloat64)},
      {make("log($0)", DType::kFloat32), make("log($0)", DType::kFloat64)},
      {make("tanh($0)", DType::kFloat32), make("tanh($0)", DType::kFloat64)},
      {make("erf($0)", DType::kFloat32), make("erf($0)", DType::kFloat64)},
      {make("sigmoid($0)", DType::kFloat32), make("sigmoid($0)", DType::kFloat64)}};
  int which;
  switch (op) {
    case UnaryOp::kExp: which = 0; break;
    case UnaryOp::kLog: which = 1; break;
    case UnaryOp::kTanh: which = 2; break;
    case UnaryOp::kErf: which = 3; break;
    case UnaryOp::kSigmoid: which = 4; break;
    default: return nullptr;
  }
  if (dt != DType::kFloat32 && dt != DType::kFloat64) return nullptr;
  return kernels[which][dt == DType::kFloat64].get();
}

absl::StatusOr<Tensor> Unary(UnaryOp op, const Tensor& a) {
  if (IsComplex(a.dtype())) return ComplexUnary(op, a);
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferUnary(op, MetaOf(a)));
  if (a.dtype() == meta.dtype) {
    if (const FusedKernel* k = GeneratedKernel(op, meta.dtype)) {
      const Tensor* in[] = {&a};
      return k->Run(in, meta.shape);
    }
  }
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);
  if (op == UnaryOp::kLogicalNot) {
    DispatchDType(a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      loops::Unary<T, bool>(a, out, [](T x) { return !x; });
    });
    return out;
  }
  if (a.dtype() == DType::kBool) {  // abs is the identity, bitwise_not is logical not
    loops::Unary<bool, bool>(a, out, [op](bool x) { return op == UnaryOp::kAbs ? x : !x; });
    return out;
  }
  PIJIT_ASSIGN_OR_RETURN(Tensor ca, Cast(a, meta.dtype));
  DispatchDType(meta.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsFloat<T>) {
      if (IsFloatFunction(op)) {
        RunFloat<T>(op, ca, out);
        return;
      }
    }
    if constexpr (!std::is_same_v<T, bool>) RunNumeric<T>(op, ca, out);
  });
  return out;
}

}  // namespace pijit
