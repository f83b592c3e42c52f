// Fused reductions (kernels/fused_reduce.h): the rows of the reduction are walked in the order
// of the eager row path (reduce.cc, ReduceFast with an [outer, red, 1] block), each row reduced
// through rvec's chunk structure with chunk functions that compute the program's results for
// the chunk into a per-thread buffer first. Reductions over leading or middle axes run the
// eager column schedule (rvec::ReduceColumns) on rows computed into that buffer.
#include "kernels/fused_reduce.h"

#include <cmath>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "kernels/cpu/reduce_vec.h"
#include "kernels/errors.h"
#include "kernels/thread_pool.h"

namespace pijit {

bool FusedReduceSupports(ReduceOp op) {
  return op == ReduceOp::kSum || op == ReduceOp::kMean || op == ReduceOp::kMax ||
         op == ReduceOp::kMin;
}

namespace {

// One chunk of program results per thread, reused by every call on that thread.
template <typename T>
T* Scratch() {
  thread_local std::vector<T> buf;
  if (buf.size() < static_cast<size_t>(rvec::kChunk)) buf.resize(rvec::kChunk);
  return buf.data();
}

// The program's result element by element in row-major order: inputs with bit k of mask set
// are read at the element's index, the others at their one address.
template <typename T>
struct Source {
  const FusedKernel* kernel;
  FusedKernel::Fn fn;  // null: interpret
  uint64_t mask;
  absl::InlinedVector<const T*, 8> base;

  // Elements [start, start + len) into out.
  void Eval(T* out, int64_t start, int64_t len) const {
    absl::InlinedVector<const void*, 8> ptrs(base.size());
    for (size_t k = 0; k < base.size(); ++k) ptrs[k] = (mask >> k) & 1 ? base[k] + start : base[k];
    kernel->RunSpan(fn, out, ptrs.data(), mask, len);
  }
};

// The value of row elements [first, first + n), as reduce.cc's ReduceRowFast computes it on
// the materialised result.
template <typename T>
T ReduceRow(ReduceOp op, const Source<T>& src, int64_t first, int64_t n, bool par) {
  auto sum_chunk = [&](int64_t start, int64_t len) {
    T* buf = Scratch<T>();
    src.Eval(buf, first + start, len);
    return rvec::SumChunk(buf, len);
  };
  auto extremum_chunk = [&](int64_t start, int64_t len) {
    T* buf = Scratch<T>();
    src.Eval(buf, first + start, len);
    return op == ReduceOp::kMax ? rvec::MaxLeaf(buf, len) : rvec::MinLeaf(buf, len);
  };
  switch (op) {
    case ReduceOp::kSum: return static_cast<T>(rvec::SumChunks(n, par, sum_chunk));
    case ReduceOp::kMean:
      return static_cast<T>(n == 0 ? NAN
                                   : rvec::SumChunks(n, par, sum_chunk) / static_cast<double>(n));
    case ReduceOp::kMax: return rvec::MaxChunks<T>(n, par, extremum_chunk);
    case ReduceOp::kMin: return rvec::MinChunks<T>(n, par, extremum_chunk);
    default: return T(0);
  }
}

// rows x red, as reduce.cc's ReduceFast splits the work for an [outer, red, 1] block.
template <typename T>
void ReduceRows(ReduceOp op, const Source<T>& src, T* out, int64_t rows, int64_t red) {
  if (rows < NumThreads()) {  // few long rows: each row splits into parallel chunks
    for (int64_t r = 0; r < rows; ++r) out[r] = ReduceRow(op, src, r * red, red, true);
    return;
  }
  const int64_t grain = std::max<int64_t>(1, rvec::kParallelMin / std::max<int64_t>(1, red));
  ParallelFor(rows, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) out[r] = ReduceRow(op, src, r * red, red, false);
  });
}

}  // namespace

absl::StatusOr<Tensor> FusedReduce(const FusedKernel& kernel, ReduceOp op,
                                   absl::Span<const Tensor* const> inputs,
                                   absl::Span<const int64_t> shape,
                                   absl::Span<const int64_t> axes, bool keepdims) {
  const FusedProgram& p = kernel.program();
  if (!FusedReduceSupports(op)) {
    return absl::InternalError(absl::StrCat("fused_reduce: ", ReduceOpName(op),
                                            " is not sum, mean, max or min"));
  }
  if (static_cast<int>(inputs.size()) != p.num_inputs) {
    return absl::InternalError(absl::StrCat("fused_reduce: ", inputs.size(),
                                            " inputs, expected ", p.num_inputs));
  }
  const Shape full(shape.begin(), shape.end());
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferReduce(op, TensorMeta{p.dtype, full}, axes,
                                                      keepdims));
  const int64_t total = NumElements(full);
  bool direct = true;  // every input readable as a span (or a single element)
  for (const Tensor* t : inputs) {
    if (t->dtype() != p.dtype) {
      return absl::InternalError(absl::StrCat("fused_reduce: input of dtype ",
                                              DTypeName(t->dtype()), " for a ",
                                              DTypeName(p.dtype), " program"));
    }
    PIJIT_ASSIGN_OR_RETURN(Shape s, BroadcastShapes("fused_reduce", t->shape(), full));
    if (s != full) {
      return absl::InvalidArgumentError(absl::StrCat(
          "fused_reduce: input of shape ", ShapeToString(t->shape()),
          " does not broadcast to ", ShapeToString(full)));
    }
    direct &= t->numel() == 1 || (t->numel() == total && t->is_contiguous());
  }
  // [outer, red, inner]: the reduced axes of size > 1 must be adjacent among the axes of size
  // > 1 (kept axes before them make the outer extent, kept axes after them the inner one).
  const int64_t nd = static_cast<int64_t>(full.size());
  absl::InlinedVector<bool, 6> reduced(nd, axes.empty());
  for (int64_t ax : axes) {
    PIJIT_ASSIGN_OR_RETURN(int64_t k, NormalizeAxis("fused_reduce", ax, nd));
    reduced[k] = true;
  }
  int64_t outer = 1, red = 1, inner = 1;
  int phase = 0;  // 0: before the reduced axes, 1: among them, 2: after them
  for (int64_t i = 0; i < nd; ++i) {
    if (full[i] == 1) continue;
    if (reduced[i]) {
      direct &= phase < 2;
      phase = 1;
      red *= full[i];
    } else if (phase == 0) {
      outer *= full[i];
    } else {
      phase = 2;
      inner *= full[i];
    }
  }
  if (!direct) {
    PIJIT_ASSIGN_OR_RETURN(Tensor result, kernel.Run(inputs, shape));
    return Reduce(op, result, axes, keepdims, /*ddof=*/0);
  }
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);
  if (outer * inner == 0) return out;
  uint64_t mask = 0;
  for (size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k]->numel() != 1) mask |= uint64_t{1} << k;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    Source<T> src{&kernel, kernel.NativeFn(mask), mask, {}};
    for (const Tensor* t : inputs) src.base.push_back(t->data<T>());
    if (inner == 1) {
      ReduceRows<T>(op, src, out.data<T>(), outer, red);
      return;
    }
    // Columns: as many whole rows of the requested columns as fit in this thread's buffer.
    auto fetch = [&](int64_t o, int64_t r, int64_t r1, int64_t c0, int64_t len) {
      T* buf = Scratch<T>();
      const int64_t n = std::min(r1 - r, std::max<int64_t>(1, rvec::kChunk / len));
      for (int64_t i = 0; i < n; ++i) src.Eval(buf + i * len, (o * red + r + i) * inner + c0, len);
      return rvec::RowBlock<T>{buf, n, len};
    };
    rvec::ReduceColumns<T>(op, fetch, out.data<T>(), outer, red, inner, /*ddof=*/0);
  };
  if (p.dtype == DType::kFloat32) run(float{});
  else run(double{});
  return out;
}

}  // namespace pijit
