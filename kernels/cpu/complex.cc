#include "kernels/cpu/complex.h"

#include <complex>

#include "kernels/cpu/loops.h"
#include "kernels/errors.h"

namespace pijit {

namespace {

absl::Status NotForComplex(const char* op, DType dtype) {
  return absl::UnimplementedError(absl::StrFormat(
      "%s: %s tensors are not supported", op, DTypeName(dtype)));
}

template <typename C>
void RunUnary(UnaryOp op, const Tensor& a, const Tensor& out) {
  switch (op) {
    case UnaryOp::kNeg: loops::Unary<C, C>(a, out, [](C x) { return -x; }); break;
    case UnaryOp::kSquare: loops::Unary<C, C>(a, out, [](C x) { return x * x; }); break;
    case UnaryOp::kExp: loops::Unary<C, C>(a, out, [](C x) { return std::exp(x); }); break;
    case UnaryOp::kLog: loops::Unary<C, C>(a, out, [](C x) { return std::log(x); }); break;
    case UnaryOp::kSqrt: loops::Unary<C, C>(a, out, [](C x) { return std::sqrt(x); }); break;
    case UnaryOp::kAbs: {
      using R = typename C::value_type;
      loops::Unary<C, R>(a, out, [](C x) { return std::abs(x); });  // hypot: no overflow
      break;
    }
    default: break;  // refused by InferComplexUnary
  }
}

}  // namespace

absl::StatusOr<TensorMeta> InferComplexUnary(UnaryOp op, const TensorMeta& in) {
  switch (op) {
    case UnaryOp::kAbs: return TensorMeta{ComplexPartDType(in.dtype), in.shape};
    case UnaryOp::kNeg: case UnaryOp::kSquare: case UnaryOp::kExp: case UnaryOp::kLog:
    case UnaryOp::kSqrt:
      return in;
    default: return NotForComplex(UnaryOpName(op), in.dtype);
  }
}

absl::StatusOr<Tensor> ComplexUnary(UnaryOp op, const Tensor& a) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferComplexUnary(op, MetaOf(a)));
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);
  DispatchComplex(a.dtype(), [&](auto tag) { RunUnary<decltype(tag)>(op, a, out); });
  return out;
}

absl::Status CheckComplexBinary(BinaryOp op, DType dtype) {
  switch (op) {
    case BinaryOp::kAdd: case BinaryOp::kSub: case BinaryOp::kMul: case BinaryOp::kDiv:
    case BinaryOp::kEqual: case BinaryOp::kNotEqual:
      return absl::OkStatus();
    case BinaryOp::kLess: case BinaryOp::kLessEqual: case BinaryOp::kGreater:
    case BinaryOp::kGreaterEqual: case BinaryOp::kMaximum: case BinaryOp::kMinimum:
      return absl::UnimplementedError(absl::StrFormat(
          "%s: %s tensors are not supported: complex numbers have no order", BinaryOpName(op),
          DTypeName(dtype)));
    default: return NotForComplex(BinaryOpName(op), dtype);
  }
}

absl::Status RunComplexBinary(BinaryOp op, DType compute, const Tensor& va, const Tensor& vb,
                              const Tensor& out) {
  PIJIT_RETURN_IF_ERROR(CheckComplexBinary(op, compute));
  DispatchComplex(compute, [&](auto tag) {
    using C = decltype(tag);
    switch (op) {
      case BinaryOp::kAdd: loops::Binary<C, C>(va, vb, out, [](C x, C y) { return x + y; }); break;
      case BinaryOp::kSub: loops::Binary<C, C>(va, vb, out, [](C x, C y) { return x - y; }); break;
      case BinaryOp::kMul: loops::Binary<C, C>(va, vb, out, [](C x, C y) { return x * y; }); break;
      case BinaryOp::kDiv: loops::Binary<C, C>(va, vb, out, [](C x, C y) { return x / y; }); break;
      case BinaryOp::kEqual:
        loops::Binary<C, bool>(va, vb, out, [](C x, C y) { return x == y; });
        break;
      case BinaryOp::kNotEqual:
        loops::Binary<C, bool>(va, vb, out, [](C x, C y) { return x != y; });
        break;
      default: break;  // refused above
    }
  });
  return absl::OkStatus();
}

absl::Status CheckComplexReduce(ReduceOp op, DType dtype) {
  switch (op) {
    case ReduceOp::kSum: case ReduceOp::kMean: case ReduceOp::kProd: return absl::OkStatus();
    case ReduceOp::kMax: case ReduceOp::kMin:
      return absl::UnimplementedError(absl::StrFormat(
          "%s: %s tensors are not supported: complex numbers have no order", ReduceOpName(op),
          DTypeName(dtype)));
    default: return NotForComplex(ReduceOpName(op), dtype);
  }
}

void ReduceComplexRows(ReduceOp op, const Tensor& rows, int64_t kept, int64_t red,
                       const Tensor& out) {
  DispatchComplex(rows.dtype(), [&](auto tag) {
    using C = decltype(tag);
    // complex64 accumulates in complex128 and rounds once, as float32 sums do in float64.
    using Acc = std::complex<double>;
    const C* in = rows.data<C>();
    C* o = out.data<C>();
    for (int64_t i = 0; i < kept; ++i) {
      const C* row = in + i * red;
      Acc acc = op == ReduceOp::kProd ? Acc(1) : Acc(0);
      if (op == ReduceOp::kProd) {
        for (int64_t j = 0; j < red; ++j) acc *= Acc(row[j]);
      } else {
        for (int64_t j = 0; j < red; ++j) acc += Acc(row[j]);
        if (op == ReduceOp::kMean) acc /= static_cast<double>(red);
      }
      o[i] = C(acc);
    }
  });
}

}  // namespace pijit

namespace pijit {

namespace {
absl::Status ExpectComplex(const char* op, const Tensor& a) {
  if (IsComplex(a.dtype())) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrFormat(
      "%s: expected a Complex64 or Complex128 tensor, got %s", op, DTypeName(a.dtype())));
}
}  // namespace

// A complex element is two adjacent parts: in units of the part type, every stride and the
// offset double, and the imaginary part sits one further.
absl::StatusOr<Tensor> ComplexPart(const Tensor& a, bool imag) {
  PIJIT_RETURN_IF_ERROR(ExpectComplex(imag ? "imag" : "real", a));
  Shape strides = a.strides();
  for (int64_t& s : strides) s *= 2;
  return Tensor::View(a.storage(), ComplexPartDType(a.dtype()), a.shape(), std::move(strides),
                      a.offset() * 2 + (imag ? 1 : 0));
}

absl::StatusOr<Tensor> ViewAsReal(const Tensor& a) {
  PIJIT_RETURN_IF_ERROR(ExpectComplex("view_as_real", a));
  Shape shape = a.shape(), strides = a.strides();
  for (int64_t& s : strides) s *= 2;
  shape.push_back(2);
  strides.push_back(1);
  return Tensor::View(a.storage(), ComplexPartDType(a.dtype()), std::move(shape),
                      std::move(strides), a.offset() * 2);
}

absl::StatusOr<Tensor> MakeComplex(const Tensor& real, const Tensor& imag) {
  const DType dt = real.dtype();
  if ((dt != DType::kFloat32 && dt != DType::kFloat64) || imag.dtype() != dt) {
    return absl::UnimplementedError(absl::StrFormat(
        "Complex: real and imag must both be Float32 or both Float64, got %s and %s",
        DTypeName(dt), DTypeName(imag.dtype())));
  }
  PIJIT_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes("Complex", real.shape(), imag.shape()));
  PIJIT_ASSIGN_OR_RETURN(Tensor re, BroadcastTo(real, shape));
  PIJIT_ASSIGN_OR_RETURN(Tensor im, BroadcastTo(imag, shape));
  const DType out_dtype = dt == DType::kFloat32 ? DType::kComplex64 : DType::kComplex128;
  Tensor out = Tensor::Empty(shape, out_dtype);
  DispatchComplex(out_dtype, [&](auto tag) {
    using C = decltype(tag);
    using R = typename C::value_type;
    loops::Binary<R, C>(re, im, out, [](R x, R y) { return C(x, y); });
  });
  return out;
}

}  // namespace pijit
