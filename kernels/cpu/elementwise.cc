// Broadcasting elementwise kernels (binary and unary) and dtype casts.
#include <cmath>

#include "kernels/errors.h"
#include "kernels/ops.h"

namespace pijit {

const char* BinaryOpName(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd: return "add";
    case BinaryOp::kSub: return "sub";
    case BinaryOp::kMul: return "mul";
    case BinaryOp::kDiv: return "div";
  }
  return "?";
}

const char* UnaryOpName(UnaryOp op) {
  switch (op) {
    case UnaryOp::kNeg: return "neg";
    case UnaryOp::kExp: return "exp";
    case UnaryOp::kLog: return "log";
    case UnaryOp::kRelu: return "relu";
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

absl::StatusOr<Tensor> BroadcastTo(const Tensor& a, absl::Span<const int64_t> shape) {
  const size_t n = shape.size();
  if (a.shape().size() > n) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "broadcast_to: cannot broadcast shape %s to %s", ShapeToString(a.shape()),
        ShapeToString(shape)));
  }
  Shape strides(n, 0);
  const size_t lead = n - a.shape().size();
  for (size_t i = lead; i < n; ++i) {
    int64_t d = a.shape()[i - lead];
    if (d == shape[i]) {
      strides[i] = a.strides()[i - lead];
    } else if (d != 1) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "broadcast_to: cannot broadcast shape %s to %s", ShapeToString(a.shape()),
          ShapeToString(shape)));
    }
  }
  return Tensor::View(a.storage(), a.dtype(), Shape(shape.begin(), shape.end()),
                      std::move(strides), a.offset());
}

absl::StatusOr<Tensor> Cast(const Tensor& a, DType dtype) {
  if (a.dtype() == dtype) return a;
  Tensor out = Tensor::Empty(a.shape(), dtype);
  CopyInto(a, out);
  return out;
}

namespace {

// Runs out[i] = f(a[i], b[i]) over broadcast views `a` and `b` that have out's shape.
template <typename T, typename R, typename F>
void BinaryLoop(const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  R* po = out.data<R>();
  const int64_t n = out.numel();
  if (n == 0) return;
  if (a.is_contiguous() && b.is_contiguous()) {
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
    return;
  }
  const int64_t nd = out.ndim();
  const auto& shape = out.shape();
  const int64_t inner = shape[nd - 1];
  const int64_t sa = a.strides()[nd - 1], sb = b.strides()[nd - 1];
  Shape idx(nd, 0);
  for (int64_t base = 0; base < n; base += inner) {
    int64_t oa = 0, ob = 0;
    for (int64_t k = 0; k + 1 < nd; ++k) {
      oa += idx[k] * a.strides()[k];
      ob += idx[k] * b.strides()[k];
    }
    const T* xa = pa + oa;
    const T* xb = pb + ob;
    R* xo = po + base;
    if (sa == 1 && sb == 1) {
      for (int64_t i = 0; i < inner; ++i) xo[i] = f(xa[i], xb[i]);
    } else if (sa == 1 && sb == 0) {
      const T vb = *xb;
      for (int64_t i = 0; i < inner; ++i) xo[i] = f(xa[i], vb);
    } else if (sa == 0 && sb == 1) {
      const T va = *xa;
      for (int64_t i = 0; i < inner; ++i) xo[i] = f(va, xb[i]);
    } else {
      for (int64_t i = 0; i < inner; ++i) xo[i] = f(xa[i * sa], xb[i * sb]);
    }
    for (int64_t k = nd - 2; k >= 0; --k) {
      if (++idx[k] < shape[k]) break;
      idx[k] = 0;
    }
  }
}

template <typename T, typename F>
void UnaryLoop(const Tensor& a, const Tensor& out, F f) {
  Tensor src = a.Contiguous();
  const T* pa = src.data<T>();
  T* po = out.data<T>();
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i]);
}

}  // namespace

absl::StatusOr<TensorMeta> InferBinary(BinaryOp op, const TensorMeta& a, const TensorMeta& b) {
  DType dt = PromoteTypes(a.dtype, b.dtype);
  if (op == BinaryOp::kSub && dt == DType::kBool) {
    return absl::UnimplementedError(
        "sub: boolean subtract is not supported, use logical_xor or cast to an integer dtype");
  }
  if (op == BinaryOp::kDiv && !IsFloating(dt)) dt = DType::kFloat64;
  PIJIT_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(BinaryOpName(op), a.shape, b.shape));
  return TensorMeta{dt, std::move(shape)};
}

namespace {
template <typename T>
void RunBinary(BinaryOp op, const Tensor& va, const Tensor& vb, const Tensor& out) {
  switch (op) {
    case BinaryOp::kAdd:
      BinaryLoop<T, T>(va, vb, out, [](T x, T y) { return static_cast<T>(x + y); });
      break;
    case BinaryOp::kSub:
      if constexpr (!std::is_same_v<T, bool>)
        BinaryLoop<T, T>(va, vb, out, [](T x, T y) { return static_cast<T>(x - y); });
      break;
    case BinaryOp::kMul:
      BinaryLoop<T, T>(va, vb, out, [](T x, T y) { return static_cast<T>(x * y); });
      break;
    case BinaryOp::kDiv:
      if constexpr (std::is_floating_point_v<T>)
        BinaryLoop<T, T>(va, vb, out, [](T x, T y) { return x / y; });
      break;
  }
}
}  // namespace

absl::StatusOr<Tensor> Binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  // Fast path: same dtype and shape, both contiguous (no promotion, no broadcasting).
  if (a.dtype() == b.dtype() && a.shape() == b.shape() && a.is_contiguous() &&
      b.is_contiguous() && !(op == BinaryOp::kSub && a.dtype() == DType::kBool) &&
      !(op == BinaryOp::kDiv && !IsFloating(a.dtype()))) {
    Tensor out = Tensor::Empty(a.shape(), a.dtype());
    DispatchDType(a.dtype(), [&](auto tag) { RunBinary<decltype(tag)>(op, a, b, out); });
    return out;
  }
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferBinary(op, MetaOf(a), MetaOf(b)));
  // Inputs are converted to the result dtype (true division of integers computes in float64).
  PIJIT_ASSIGN_OR_RETURN(Tensor ca, Cast(a, meta.dtype));
  PIJIT_ASSIGN_OR_RETURN(Tensor cb, Cast(b, meta.dtype));
  PIJIT_ASSIGN_OR_RETURN(Tensor va, BroadcastTo(ca, meta.shape));
  PIJIT_ASSIGN_OR_RETURN(Tensor vb, BroadcastTo(cb, meta.shape));
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);
  DispatchDType(meta.dtype, [&](auto tag) { RunBinary<decltype(tag)>(op, va, vb, out); });
  return out;
}

absl::StatusOr<TensorMeta> InferUnary(UnaryOp op, const TensorMeta& a) {
  if (a.dtype == DType::kBool) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: unsupported dtype Bool, expected an integer or floating dtype", UnaryOpName(op)));
  }
  DType dt = a.dtype;
  if ((op == UnaryOp::kExp || op == UnaryOp::kLog) && !IsFloating(dt)) dt = DType::kFloat64;
  return TensorMeta{dt, a.shape};
}

absl::StatusOr<Tensor> Unary(UnaryOp op, const Tensor& a) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferUnary(op, MetaOf(a)));
  PIJIT_ASSIGN_OR_RETURN(Tensor ca, Cast(a, meta.dtype));
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);
  DispatchDType(meta.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      switch (op) {
        case UnaryOp::kNeg: UnaryLoop<T>(ca, out, [](T x) { return static_cast<T>(-x); }); break;
        case UnaryOp::kRelu:
          // NaN stays NaN, as np.maximum(x, 0) gives.
          UnaryLoop<T>(ca, out, [](T x) { return x < T(0) ? T(0) : x; });
          break;
        case UnaryOp::kExp:
          if constexpr (std::is_floating_point_v<T>)
            UnaryLoop<T>(ca, out, [](T x) { return std::exp(x); });
          break;
        case UnaryOp::kLog:
          if constexpr (std::is_floating_point_v<T>)
            UnaryLoop<T>(ca, out, [](T x) { return std::log(x); });
          break;
      }
    }
  });
  return out;
}

}  // namespace pijit
