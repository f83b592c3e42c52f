// Reductions over axes (sum, mean, prod, max, min, all, any, var, std) and argmax/argmin.
// Float32/float64 inputs take vectorised, parallel paths (reduce_vec.h) over an
// [outer, reduced, inner] view of the input when its reduced axes are adjacent, without a copy;
// other inputs are laid out as rows (kept axes) x columns (reduced axes) first. Sums
// accumulate in double (floating inputs) or int64 (integers and booleans). NumPy sums uint8
// into uint64, which pijit does not have: the sum and product of UInt8 are Int64 (the same
// values up to 2^63).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "kernels/cpu/complex.h"
#include "kernels/cpu/loops.h"
#include "kernels/cpu/reduce_vec.h"
#include "kernels/errors.h"
#include "kernels/ops.h"
#include "kernels/thread_pool.h"

namespace pijit {

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
#define PIJIT_REDUCE_NAME(e, name) \
  case ReduceOp::e: return name;
    PIJIT_REDUCE_OPS(PIJIT_REDUCE_NAME)
#undef PIJIT_REDUCE_NAME
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
    // Integers sum in int64, as NumPy's signed ones do; the wide unsigned types, which mix
    // with no signed integer, in uint64 (NumPy's too).
    case ReduceOp::kSum: case ReduceOp::kProd:
      return IsFloating(in) || IsComplex(in) ? in : IsWideUnsigned(in) ? DType::kUInt64 : DType::kInt64;
    case ReduceOp::kMean: case ReduceOp::kVar: case ReduceOp::kStd:
      return FloatFunctionDType(in);
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

// An accumulator: init, step(acc, x), and the output value from acc and the count. Integers
// accumulate in 64 bits, the wide unsigned ones unsigned (their sums are uint64); a mean of
// uint64 in double, as NumPy's, since its sums overflow 64 bits with a few large values.
template <typename T, typename R, ReduceOp op>
struct Acc {
  using A = std::conditional_t<op == ReduceOp::kMax || op == ReduceOp::kMin, T,
            std::conditional_t<op == ReduceOp::kAll || op == ReduceOp::kAny, bool,
            std::conditional_t<kIsFloat<T> || (op == ReduceOp::kMean && std::is_same_v<T, uint64_t>),
                               double, std::conditional_t<IsWideUnsigned(DTypeOf<T>::value), uint64_t, int64_t>>>>;
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

// ---- float32/float64: vectorised and parallel ----

// A contiguous input as three runs of axes [outer, middle, inner]: the middle from the first
// to the last axis of size > 1 whose reduced flag is `middle_reduced`, every axis of size > 1
// between them of that kind too (nullopt otherwise), the others outside it. With no axis of
// that kind, all of the input is `outer`.
struct Runs {
  int64_t outer, middle, inner;
};

std::optional<Runs> SplitAround(const Tensor& a, const ReducePlan& p, bool middle_reduced) {
  if (!a.is_contiguous()) return std::nullopt;
  int64_t first = -1, last = -1;
  for (int64_t i = 0; i < a.ndim(); ++i) {
    if (p.reduced[i] == middle_reduced && a.shape()[i] != 1) {
      if (first < 0) first = i;
      last = i;
    }
  }
  if (first < 0) return Runs{a.numel(), 1, 1};
  Runs r{1, 1, 1};
  for (int64_t i = 0; i < a.ndim(); ++i) {
    const int64_t n = a.shape()[i];
    if (n == 1) continue;
    if (i >= first && i <= last && p.reduced[i] != middle_reduced) return std::nullopt;
    (i < first ? r.outer : i > last ? r.inner : r.middle) *= n;
  }
  return r;
}

// A contiguous input as [outer, red, inner]: reduced axes of size > 1 adjacent.
struct Block {
  int64_t outer, red, inner;
};

std::optional<Block> AsBlock(const Tensor& a, const ReducePlan& p) {
  const std::optional<Runs> r = SplitAround(a, p, /*middle_reduced=*/true);
  if (!r) return std::nullopt;
  return Block{r->outer, r->middle, r->inner};
}

bool HasFastPath(ReduceOp op) { return op != ReduceOp::kAll && op != ReduceOp::kAny; }

// A contiguous input whose reduced axes lie on both sides of one run of kept axes: [outer,
// kept, inner] with outer and inner reduced (batch norm's statistics, axes 0, 2 and 3 of
// NCHW). Each kept index reduces its `outer` rows of `inner` contiguous values where they
// are, instead of AsRows copying the whole input transposed first.
struct Sandwich {
  int64_t outer, kept, inner;
};

std::optional<Sandwich> AsSandwich(const Tensor& a, const ReducePlan& p) {
  const std::optional<Runs> r = SplitAround(a, p, /*middle_reduced=*/false);
  constexpr int64_t kMinRow = 16;  // shorter rows: the row-wise layout reads them better
  if (!r || r->outer == 1 || r->inner < kMinRow) return std::nullopt;
  return Sandwich{r->outer, r->middle, r->inner};
}

template <typename T>
void ReduceSandwich(ReduceOp op, const T* x, T* out, const Sandwich& s) {
  const double count = static_cast<double>(s.outer) * static_cast<double>(s.inner);
  ParallelFor(s.kept, 1, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      auto row = [&](int64_t o) { return x + (o * s.kept + k) * s.inner; };
      if (op == ReduceOp::kSum || op == ReduceOp::kMean) {
        double acc = 0;  // in double, as every float sum here
        for (int64_t o = 0; o < s.outer; ++o) acc += rvec::Sum(row(o), s.inner, false);
        out[k] = static_cast<T>(op == ReduceOp::kMean ? acc / count : acc);
        continue;
      }
      const bool is_max = op == ReduceOp::kMax;
      T acc = is_max ? rvec::Max(row(0), s.inner, false) : rvec::Min(row(0), s.inner, false);
      for (int64_t o = 1; o < s.outer; ++o) {
        const T v = is_max ? rvec::Max(row(o), s.inner, false) : rvec::Min(row(o), s.inner, false);
        acc = is_max ? loops::Max(acc, v) : loops::Min(acc, v);
      }
      out[k] = acc;
    }
  });
}

// The value of one row of n contiguous elements.
template <typename T>
T ReduceRowFast(ReduceOp op, const T* x, int64_t n, int64_t ddof, bool par) {
  const double count = static_cast<double>(n);
  switch (op) {
    case ReduceOp::kSum: return static_cast<T>(rvec::Sum(x, n, par));
    case ReduceOp::kMean: return static_cast<T>(n == 0 ? NAN : rvec::Sum(x, n, par) / count);
    case ReduceOp::kProd: return static_cast<T>(rvec::Prod(x, n, par));
    case ReduceOp::kMax: return rvec::Max(x, n, par);
    case ReduceOp::kMin: return rvec::Min(x, n, par);
    case ReduceOp::kVar: case ReduceOp::kStd: {
      const double mean = rvec::Sum(x, n, par) / count;
      const double v = rvec::Ssd(x, n, mean, par) /
                       static_cast<double>(std::max<int64_t>(n - ddof, 0));
      return static_cast<T>(op == ReduceOp::kStd ? std::sqrt(v) : v);
    }
    default: return T(0);
  }
}

// Columns [c0, c0 + len) of slab o (len <= kColBlock), its rows fetched block by block.
template <typename T>
void ReduceColsFast(ReduceOp op, const rvec::FetchRows<T>& fetch, int64_t o, T* out,
                    int64_t red, int64_t c0, int64_t len, int64_t ddof) {
  double acc[rvec::kColBlock];
  const double count = static_cast<double>(red);
  auto each = [&](int64_t r0, auto body) {
    for (int64_t r = r0; r < red;) {
      const rvec::RowBlock<T> b = fetch(o, r, red, c0, len);
      body(b);
      r += b.rows;
    }
  };
  switch (op) {
    case ReduceOp::kMax: case ReduceOp::kMin: {
      T m[rvec::kColBlock];
      const rvec::RowBlock<T> first = fetch(o, 0, 1, c0, len);
      std::copy(first.p, first.p + len, m);
      each(1, [&](const rvec::RowBlock<T>& b) {
        if (op == ReduceOp::kMax) rvec::MaxCols(b.p, b.rows, len, b.ld, m);
        else rvec::MinCols(b.p, b.rows, len, b.ld, m);
      });
      std::copy(m, m + len, out);
      return;
    }
    case ReduceOp::kProd:
      std::fill(acc, acc + len, 1.0);
      each(0, [&](const rvec::RowBlock<T>& b) { rvec::ProdCols(b.p, b.rows, len, b.ld, acc); });
      for (int64_t c = 0; c < len; ++c) out[c] = static_cast<T>(acc[c]);
      return;
    default: break;
  }
  std::fill(acc, acc + len, 0.0);
  each(0, [&](const rvec::RowBlock<T>& b) { rvec::SumCols(b.p, b.rows, len, b.ld, acc); });
  if (op == ReduceOp::kSum) {
    for (int64_t c = 0; c < len; ++c) out[c] = static_cast<T>(acc[c]);
  } else if (op == ReduceOp::kMean) {
    for (int64_t c = 0; c < len; ++c) out[c] = static_cast<T>(red == 0 ? NAN : acc[c] / count);
  } else {  // var, std
    double mean[rvec::kColBlock];
    for (int64_t c = 0; c < len; ++c) mean[c] = acc[c] / count;
    std::fill(acc, acc + len, 0.0);
    each(0, [&](const rvec::RowBlock<T>& b) {
      rvec::SsdCols(b.p, b.rows, len, b.ld, mean, acc);
    });
    const double denom = static_cast<double>(std::max<int64_t>(red - ddof, 0));
    for (int64_t c = 0; c < len; ++c) {
      const double v = acc[c] / denom;
      out[c] = static_cast<T>(op == ReduceOp::kStd ? std::sqrt(v) : v);
    }
  }
}

// Short rows (inner <= kRowChunkCols) of many: each task reduces a fixed chunk of rpc
// contiguous rows into one partial row, read sequentially; the partial rows of each outer index
// are then folded in chunk order, so the result does not depend on the threads.
template <typename A, typename Chunk, typename Fold>
std::vector<A> ByRowChunks(const Block& b, int64_t rpc, Chunk chunk, Fold fold) {
  const int64_t nrc = (b.red + rpc - 1) / rpc;
  std::vector<A> part(b.outer * nrc * b.inner);
  ParallelFor(b.outer * nrc, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t o = t / nrc, r0 = (t % nrc) * rpc;
      chunk(o, r0, std::min(b.red, r0 + rpc), part.data() + t * b.inner);
    }
  });
  std::vector<A> acc(b.outer * b.inner);
  for (int64_t o = 0; o < b.outer; ++o) {
    A* a = acc.data() + o * b.inner;
    const A* p = part.data() + o * nrc * b.inner;
    std::copy(p, p + b.inner, a);
    for (int64_t c = 1; c < nrc; ++c) fold(a, p + c * b.inner);
  }
  return acc;
}

template <typename T>
void ReduceRowChunks(ReduceOp op, const rvec::FetchRows<T>& fetch, T* out, const Block& b,
                     int64_t ddof) {
  const int64_t inner = b.inner, n = b.outer * inner;
  const int64_t rpc = std::max<int64_t>(2, rvec::kParallelMin / inner);
  // Rows [r0, r1) of slab o, block by block.
  auto each = [&](int64_t o, int64_t r0, int64_t r1, auto body) {
    for (int64_t r = r0; r < r1;) {
      const rvec::RowBlock<T> blk = fetch(o, r, r1, 0, inner);
      body(blk);
      r += blk.rows;
    }
  };
  if (op == ReduceOp::kMax || op == ReduceOp::kMin) {
    const bool is_max = op == ReduceOp::kMax;
    std::vector<T> acc = ByRowChunks<T>(
        b, rpc,
        [&](int64_t o, int64_t r0, int64_t r1, T* dst) {
          const rvec::RowBlock<T> first = fetch(o, r0, r0 + 1, 0, inner);
          std::copy(first.p, first.p + inner, dst);
          each(o, r0 + 1, r1, [&](const rvec::RowBlock<T>& blk) {
            if (is_max) rvec::MaxCols(blk.p, blk.rows, inner, blk.ld, dst);
            else rvec::MinCols(blk.p, blk.rows, inner, blk.ld, dst);
          });
        },
        [&](T* a, const T* p) {
          for (int64_t c = 0; c < inner; ++c) a[c] = is_max ? loops::Max(a[c], p[c]) : loops::Min(a[c], p[c]);
        });
    std::copy(acc.begin(), acc.end(), out);
    return;
  }
  // Partial rows in double, each chunk's started at `init` and accumulated block by block by
  // cols(o, block, partial row); `fold` combines the chunks'.
  auto in_double = [&](double init, auto cols, auto fold) {
    return ByRowChunks<double>(
        b, rpc,
        [&](int64_t o, int64_t r0, int64_t r1, double* dst) {
          std::fill(dst, dst + inner, init);
          each(o, r0, r1, [&](const rvec::RowBlock<T>& blk) { cols(o, blk, dst); });
        },
        fold);
  };
  if (op == ReduceOp::kProd) {
    std::vector<double> acc = in_double(
        1.0,
        [&](int64_t, const rvec::RowBlock<T>& blk, double* dst) {
          rvec::ProdCols(blk.p, blk.rows, inner, blk.ld, dst);
        },
        [&](double* a, const double* p) { for (int64_t c = 0; c < inner; ++c) a[c] *= p[c]; });
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(acc[i]);
    return;
  }
  auto add = [&](double* a, const double* p) { for (int64_t c = 0; c < inner; ++c) a[c] += p[c]; };
  std::vector<double> sum = in_double(
      0.0,
      [&](int64_t, const rvec::RowBlock<T>& blk, double* dst) {
        rvec::SumCols(blk.p, blk.rows, inner, blk.ld, dst);
      },
      add);
  const double count = static_cast<double>(b.red);
  if (op == ReduceOp::kSum || op == ReduceOp::kMean) {
    const double scale = op == ReduceOp::kMean ? count : 1.0;
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(sum[i] / scale);
    return;
  }
  for (double& v : sum) v /= count;  // the means
  std::vector<double> ssd = in_double(
      0.0,
      [&](int64_t o, const rvec::RowBlock<T>& blk, double* dst) {
        rvec::SsdCols(blk.p, blk.rows, inner, blk.ld, sum.data() + o * inner, dst);
      },
      add);
  const double denom = static_cast<double>(std::max<int64_t>(b.red - ddof, 0));
  for (int64_t i = 0; i < n; ++i) {
    const double v = ssd[i] / denom;
    out[i] = static_cast<T>(op == ReduceOp::kStd ? std::sqrt(v) : v);
  }
}

template <typename T>
void ReduceFast(ReduceOp op, const T* x, T* out, const Block& b, int64_t ddof) {
  if (b.inner == 1) {
    if (b.outer < NumThreads()) {  // few long rows: each row splits into parallel chunks
      for (int64_t r = 0; r < b.outer; ++r) out[r] = ReduceRowFast(op, x + r * b.red, b.red, ddof, true);
      return;
    }
    const int64_t grain = std::max<int64_t>(1, rvec::kParallelMin / std::max<int64_t>(1, b.red));
    ParallelFor(b.outer, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) out[r] = ReduceRowFast(op, x + r * b.red, b.red, ddof, false);
    });
    return;
  }
  // Columns: the rows of each slab are read in place.
  auto fetch = [&](int64_t o, int64_t r, int64_t r1, int64_t c0, int64_t) {
    return rvec::RowBlock<T>{x + (o * b.red + r) * b.inner + c0, r1 - r, b.inner};
  };
  rvec::ReduceColumns<T>(op, fetch, out, b.outer, b.red, b.inner, ddof);
}
}  // namespace

namespace rvec {
template <typename T>
void ReduceColumns(ReduceOp op, const FetchRows<T>& fetch, T* out, int64_t outer, int64_t red,
                   int64_t inner, int64_t ddof) {
  const Block b{outer, red, inner};
  if (inner <= kRowChunkCols && red >= 2 * std::max<int64_t>(2, kParallelMin / inner)) {
    ReduceRowChunks(op, fetch, out, b, ddof);
    return;
  }
  // One task per (outer index, block of kColBlock columns); every task reads all red rows.
  const int64_t blocks = (inner + kColBlock - 1) / kColBlock;
  const int64_t work = std::max<int64_t>(1, red * std::min(inner, kColBlock));
  ParallelFor(outer * blocks, std::max<int64_t>(1, kParallelMin / work),
              [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t o = t / blocks, c0 = (t % blocks) * kColBlock;
      ReduceColsFast(op, fetch, o, out + o * inner + c0, red, c0,
                     std::min(kColBlock, inner - c0), ddof);
    }
  });
}
template void ReduceColumns<float>(ReduceOp, const FetchRows<float>&, float*, int64_t, int64_t,
                                   int64_t, int64_t);
template void ReduceColumns<double>(ReduceOp, const FetchRows<double>&, double*, int64_t,
                                    int64_t, int64_t, int64_t);
}  // namespace rvec

namespace {
// A float sum, mean, max or min over axes the input is broadcast along (stride 0, the seed of
// a backward pass broadcast from a scalar, say): the reduction of one slice along them, times
// their size for a sum, instead of reading the same values again (and gathering the view into
// rows first). Nullopt where it does not apply.
std::optional<Tensor> ReduceOverBroadcast(ReduceOp op, const Tensor& a, const ReducePlan& p,
                                          absl::Span<const int64_t> axes, bool keepdims) {
  const bool applies = (op == ReduceOp::kSum || op == ReduceOp::kMean || op == ReduceOp::kMax ||
                        op == ReduceOp::kMin) &&
                       (a.dtype() == DType::kFloat32 || a.dtype() == DType::kFloat64);
  if (!applies || p.kept == 0) return std::nullopt;
  Shape shape = a.shape();
  double repeats = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (p.reduced[i] && shape[i] > 1 && a.strides()[i] == 0) {
      repeats *= static_cast<double>(shape[i]);
      shape[i] = 1;
    }
  }
  if (repeats == 1) return std::nullopt;
  const Tensor slice = Tensor::View(a.storage(), a.dtype(), shape, a.strides(), a.offset());
  absl::StatusOr<Tensor> r = Reduce(op, slice, axes, keepdims, 0);
  if (r.ok() && op == ReduceOp::kSum) {
    absl::StatusOr<Tensor> count = Cast(Tensor::Scalar<double>(repeats), a.dtype());
    r = count.ok() ? Binary(BinaryOp::kMul, *r, *count) : count;
  }
  if (!r.ok()) return std::nullopt;  // (not expected: the plain path reports the error)
  return *r;
}
}  // namespace

absl::StatusOr<TensorMeta> InferReduce(ReduceOp op, const TensorMeta& a,
                                       absl::Span<const int64_t> axes, bool keepdims) {
  const char* name = ReduceOpName(op);
  if (IsComplex(a.dtype)) PIJIT_RETURN_IF_ERROR(CheckComplexReduce(op, a.dtype));
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
  if (IsComplex(a.dtype())) {
    Tensor out = Tensor::Empty(meta.shape, meta.dtype);
    if (p.kept == 0) return out;
    PIJIT_ASSIGN_OR_RETURN(Tensor rows, AsRows(a, p));
    ReduceComplexRows(op, rows, p.kept, p.red, out);
    return out;
  }
  if (std::optional<Tensor> r = ReduceOverBroadcast(op, a, p, axes, keepdims)) return *r;
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);
  if (p.kept == 0) return out;
  if ((a.dtype() == DType::kFloat32 || a.dtype() == DType::kFloat64) && HasFastPath(op)) {
    std::optional<Block> block = AsBlock(a, p);
    const bool sandwich_op = op == ReduceOp::kSum || op == ReduceOp::kMean || op == ReduceOp::kMax ||
                             op == ReduceOp::kMin;
    if (const auto s = block || !sandwich_op ? std::nullopt : AsSandwich(a, p)) {
      if (a.dtype() == DType::kFloat32) ReduceSandwich<float>(op, a.data<float>(), out.data<float>(), *s);
      else ReduceSandwich<double>(op, a.data<double>(), out.data<double>(), *s);
      return out;
    }
    Tensor src = a;
    if (!block) {
      PIJIT_ASSIGN_OR_RETURN(src, AsRows(a, p));
      block = Block{p.kept, p.red, 1};
    }
    if (a.dtype() == DType::kFloat32) ReduceFast<float>(op, src.data<float>(), out.data<float>(), *block, ddof);
    else ReduceFast<double>(op, src.data<double>(), out.data<double>(), *block, ddof);
    return out;
  }
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
    if constexpr (std::is_floating_point_v<T>) {
      const bool few = p.kept < NumThreads();  // few long rows: split each across threads
      const int64_t grain = std::max<int64_t>(1, rvec::kParallelMin / p.red);
      auto rows = [&](int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi; ++r) {
          const T* row = in + r * p.red;
          po[r] = is_max ? rvec::ArgMax(row, p.red, few) : rvec::ArgMin(row, p.red, few);
        }
      };
      if (few) rows(0, p.kept);
      else ParallelFor(p.kept, grain, rows);
      return;
    }
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
