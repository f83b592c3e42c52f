// Reductions over axes (sum, mean, prod, max, min, all, any, var, std) and argmax/argmin.
// The input is laid out as rows (kept axes) x columns (reduced axes); sums accumulate in
// double (floating inputs) or int64 (integers and booleans). NumPy sums uint8 into uint64,
// which pijit does not have: the sum and product of UInt8 are Int64 (the same values up to
// 2^63).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/loops.h"
#include "kernels/errors.h"
#include "kernels/ops.h"

namespace pijit {

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kMean: return "mean";
    case ReduceOp::kProd: return "prod";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kAll: return "all";
    case ReduceOp::kAny: return "any";
    case ReduceOp::kVar: return "var";
    case ReduceOp::kStd: return "std";
  }
  return "?";
}

namespace {
struct ReducePlan {
  TensorMeta meta;
  absl::InlinedVector<bool, 6> reduced;  // per input axis
  int64_t kept = 1, red = 1;             // elements per output, number of outputs
};

absl::StatusOr<ReducePlan> Plan(const char* name, const TensorMeta& a,
                                absl::Span<const int64_t> axes, bool keepdims) {
  const int64_t nd = static_cast<int64_t>(a.shape.size());
  ReducePlan p;
  p.reduced.assign(nd, axes.empty());
  for (int64_t ax : axes) {
    PIJIT_ASSIGN_OR_RETURN(int64_t k, NormalizeAxis(name, ax, nd));
    if (p.reduced[k]) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: duplicate value in axis %s", name, ShapeToString(axes)));
    }
    p.reduced[k] = true;
  }
  p.meta.dtype = a.dtype;
  for (int64_t i = 0; i < nd; ++i) {
    if (!p.reduced[i]) {
      p.meta.shape.push_back(a.shape[i]);
      p.kept *= a.shape[i];
    } else {
      p.red *= a.shape[i];
      if (keepdims) p.meta.shape.push_back(1);
    }
  }
  return p;
}

DType ReduceDType(ReduceOp op, DType in) {
  switch (op) {
    case ReduceOp::kSum: case ReduceOp::kProd: return IsFloating(in) ? in : DType::kInt64;
    case ReduceOp::kMean: case ReduceOp::kVar: case ReduceOp::kStd:
      return IsFloating(in) ? in : DType::kFloat64;
    case ReduceOp::kAll: case ReduceOp::kAny: return DType::kBool;
    case ReduceOp::kMax: case ReduceOp::kMin: return in;
  }
  return in;
}

// The input with kept axes first and reduced axes last, contiguous: a kept x red matrix.
absl::StatusOr<Tensor> AsRows(const Tensor& a, const ReducePlan& p) {
  Shape perm;
  for (int64_t i = 0; i < a.ndim(); ++i)
    if (!p.reduced[i]) perm.push_back(i);
  for (int64_t i = 0; i < a.ndim(); ++i)
    if (p.reduced[i]) perm.push_back(i);
  PIJIT_ASSIGN_OR_RETURN(Tensor t, Transpose(a, perm));
  return t.Contiguous();
}

// Whether every reduced axis of size > 1 comes before every kept axis in a contiguous `a`:
// then `a` already is a red x kept matrix and columns can be reduced without a copy.
bool ReducedAxesLead(const Tensor& a, const ReducePlan& p) {
  if (!a.is_contiguous() || p.kept <= 1) return false;
  bool seen_kept = false;
  for (int64_t i = 0; i < a.ndim(); ++i) {
    if (!p.reduced[i]) seen_kept = true;
    else if (seen_kept && a.shape()[i] != 1) return false;
  }
  return true;
}

template <typename T>
T WrappingMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return a * b;
  }
}

// An accumulator: init, step(acc, x), and the output value from acc and the count.
template <typename T, typename R, ReduceOp op>
struct Acc {
  using A = std::conditional_t<op == ReduceOp::kMax || op == ReduceOp::kMin, T,
            std::conditional_t<op == ReduceOp::kAll || op == ReduceOp::kAny, bool,
            std::conditional_t<kIsFloat<T>, double, int64_t>>>;
  static A Init() {
    if constexpr (op == ReduceOp::kProd) return A(1);
    else if constexpr (op == ReduceOp::kAll) return true;
    else if constexpr (op == ReduceOp::kAny) return false;
    else if constexpr (op == ReduceOp::kMax) return std::numeric_limits<T>::lowest();
    else if constexpr (op == ReduceOp::kMin) return std::numeric_limits<T>::max();
    else return A(0);
  }
  static A Step(A acc, T x) {
    if constexpr (op == ReduceOp::kProd) return WrappingMul<A>(acc, static_cast<A>(x));
    else if constexpr (op == ReduceOp::kAll) return acc && static_cast<bool>(x);
    else if constexpr (op == ReduceOp::kAny) return acc || static_cast<bool>(x);
    else if constexpr (op == ReduceOp::kMax) return loops::Max(acc, x);
    else if constexpr (op == ReduceOp::kMin) return loops::Min(acc, x);
    else return acc + static_cast<A>(x);
  }
  static R Finish(A acc, int64_t n) {
    if constexpr (op == ReduceOp::kMean) {
      return static_cast<R>(n == 0 ? NAN : static_cast<double>(acc) / static_cast<double>(n));
    } else {
      return static_cast<R>(acc);
    }
  }
};

template <typename T, typename R, ReduceOp op>
void ReduceRows(const T* in, R* out, int64_t rows, int64_t cols) {
  using Ac = Acc<T, R, op>;
  for (int64_t r = 0; r < rows; ++r) {
    typename Ac::A acc = Ac::Init();
    const T* row = in + r * cols;
    for (int64_t c = 0; c < cols; ++c) acc = Ac::Step(acc, row[c]);
    out[r] = Ac::Finish(acc, cols);
  }
}

template <typename T, typename R, ReduceOp op>
void ReduceCols(const T* in, R* out, int64_t rows, int64_t cols) {
  using Ac = Acc<T, R, op>;
  std::vector<typename Ac::A> acc(cols, Ac::Init());
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = in + r * cols;
    for (int64_t c = 0; c < cols; ++c) acc[c] = Ac::Step(acc[c], row[c]);
  }
  for (int64_t c = 0; c < cols; ++c) out[c] = Ac::Finish(acc[c], rows);
}

// Two passes per row (mean, then squared deviations), in double.
template <typename T, typename R>
void VarRows(const T* in, R* out, int64_t rows, int64_t cols, int64_t ddof, bool sqrt) {
  const double denom = static_cast<double>(std::max<int64_t>(cols - ddof, 0));
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = in + r * cols;
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += static_cast<double>(row[c]);
    const double mean = sum / static_cast<double>(cols);
    double ssd = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double d = static_cast<double>(row[c]) - mean;
      ssd += d * d;
    }
    const double v = ssd / denom;
    out[r] = static_cast<R>(sqrt ? std::sqrt(v) : v);
  }
}

template <typename T, typename R>
void RunReduce(ReduceOp op, bool by_cols, const T* in, R* out, int64_t a, int64_t b) {
  auto run = [&](auto tag) {
    constexpr ReduceOp kOp = decltype(tag)::value;
    if (by_cols) ReduceCols<T, R, kOp>(in, out, a, b);
    else ReduceRows<T, R, kOp>(in, out, a, b);
  };
  switch (op) {
#define PIJIT_RUN(e) case ReduceOp::e: run(std::integral_constant<ReduceOp, ReduceOp::e>{}); break;
    PIJIT_RUN(kSum) PIJIT_RUN(kMean) PIJIT_RUN(kProd) PIJIT_RUN(kMax) PIJIT_RUN(kMin)
    PIJIT_RUN(kAll) PIJIT_RUN(kAny)
#undef PIJIT_RUN
    default: break;
  }
}
}  // namespace

absl::StatusOr<TensorMeta> InferReduce(ReduceOp op, const TensorMeta& a,
                                       absl::Span<const int64_t> axes, bool keepdims) {
  const char* name = ReduceOpName(op);
  PIJIT_ASSIGN_OR_RETURN(ReducePlan p, Plan(name, a, axes, keepdims));
  if ((op == ReduceOp::kMax || op == ReduceOp::kMin) && p.red == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: zero-size reduction over a tensor of shape %s has no identity", name,
        ShapeToString(a.shape)));
  }
  p.meta.dtype = ReduceDType(op, a.dtype);
  return p.meta;
}

absl::StatusOr<Tensor> Reduce(ReduceOp op, const Tensor& a, absl::Span<const int64_t> axes,
                              bool keepdims, int64_t ddof) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferReduce(op, MetaOf(a), axes, keepdims));
  PIJIT_ASSIGN_OR_RETURN(ReducePlan p, Plan(ReduceOpName(op), MetaOf(a), axes, keepdims));
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);
  if (p.kept == 0) return out;
  const bool is_var = op == ReduceOp::kVar || op == ReduceOp::kStd;
  const bool by_cols = !is_var && ReducedAxesLead(a, p);
  Tensor src = a;
  if (!by_cols) { PIJIT_ASSIGN_OR_RETURN(src, AsRows(a, p)); }
  DispatchDType(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    DispatchDType(meta.dtype, [&](auto rtag) {
      using R = decltype(rtag);
      if (is_var) {
        if constexpr (kIsFloat<R>)
          VarRows<T, R>(src.data<T>(), out.data<R>(), p.kept, p.red, ddof, op == ReduceOp::kStd);
      } else if (by_cols) {
        RunReduce<T, R>(op, true, src.data<T>(), out.data<R>(), p.red, p.kept);
      } else {
        RunReduce<T, R>(op, false, src.data<T>(), out.data<R>(), p.kept, p.red);
      }
    });
  });
  return out;
}

absl::StatusOr<TensorMeta> InferArgReduce(bool is_max, const TensorMeta& a,
                                          absl::Span<const int64_t> axis, bool keepdims) {
  const char* name = is_max ? "argmax" : "argmin";
  if (axis.size() > 1) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: axis must be a single int", name));
  }
  PIJIT_ASSIGN_OR_RETURN(ReducePlan p, Plan(name, a, axis, keepdims));
  if (p.red == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: attempt to get %s of an empty sequence (a tensor of shape %s)", name, name,
        ShapeToString(a.shape)));
  }
  p.meta.dtype = DType::kInt64;
  return p.meta;
}

absl::StatusOr<Tensor> ArgReduce(bool is_max, const Tensor& a, absl::Span<const int64_t> axis,
                                 bool keepdims) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferArgReduce(is_max, MetaOf(a), axis, keepdims));
  PIJIT_ASSIGN_OR_RETURN(ReducePlan p,
                         Plan(is_max ? "argmax" : "argmin", MetaOf(a), axis, keepdims));
  Tensor out = Tensor::Empty(meta.shape, DType::kInt64);
  if (p.kept == 0) return out;
  PIJIT_ASSIGN_OR_RETURN(Tensor src, AsRows(a, p));
  int64_t* po = out.data<int64_t>();
  DispatchDType(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = src.data<T>();
    for (int64_t r = 0; r < p.kept; ++r) {
      const T* row = in + r * p.red;
      int64_t best = 0;
      T v = row[0];
      for (int64_t c = 1; c < p.red; ++c) {
        const T x = row[c];
        bool better = is_max ? x > v : x < v;
        if constexpr (kIsFloat<T>) better = better || (x != x && v == v);
        if (better) {
          v = x;
          best = c;
        }
      }
      po[r] = best;
    }
  });
  return out;
}

}  // namespace pijit
