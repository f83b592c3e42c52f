// Vectorised building blocks of the float32/float64 reductions (reduce.cc, softmax.cc,
// norm.cc): AVX-512 or AVX2 code chosen at run time, with a scalar fallback that performs the
// same operations in the same order, so that results do not depend on the CPU.
//
// Sums, products and sums of squared deviations accumulate in double over 16 lanes (element i
// of a run goes to lane i % 16), the lanes combined by a fixed tree; runs of 256 elements are
// combined pairwise. Longer inputs are split into fixed-size chunks whose partial results are
// combined pairwise too, so an
// input's result depends only on its length: the same in serial and parallel runs, and more
// accurate than float32 pairwise summation. Max/min propagate NaN (NumPy's maximum.reduce);
// between equal values they keep the first, which decides the sign of a zero result.
//
// The chunk structure is available with a caller-supplied chunk function (SumChunks,
// MaxChunks, MinChunks): a caller that computes the elements of a chunk into a buffer and
// reduces it with SumChunk / MaxLeaf / MinLeaf gets exactly what Sum / Max / Min give on the
// materialised input (kernels/cpu/fused_reduce.cc reduces fused programs so).
#pragma once
#include <cstdint>

#include "absl/functional/function_ref.h"
#include "kernels/cpu/fused_x86.h"

namespace pijit {
enum class ReduceOp : uint8_t;  // kernels/ops.h
}  // namespace pijit

namespace pijit::rvec {

// Elements per chunk of a chunked reduction (and the unit of parallel work).
inline constexpr int64_t kChunk = 1 << 15;
// Fewer elements than this are reduced on the calling thread.
inline constexpr int64_t kParallelMin = 1 << 17;
// Column reductions (ReduceColumns): rows up to this long are reduced in chunks of whole rows;
// longer ones in blocks of kColBlock columns.
inline constexpr int64_t kRowChunkCols = 4096;
inline constexpr int64_t kColBlock = 256;

// The instruction set the blocks run with now: 1 scalar, 2 AVX2, 3 AVX-512 (AVX512F).
int ActiveIsa();
// ActiveIsa() >= 2 (false while tests force the scalar fallback).
bool HostHasAvx2();
// Tests: 0 chooses for the host; 1 forces the scalar fallback, 2 AVX2, 3 AVX-512 (a set the
// host lacks leaves the host's choice).
void ForceIsaForTesting(int isa);
// Tests: run the scalar fallback even on an AVX2 CPU (ForceIsaForTesting(on ? 1 : 0)).
void ForceScalarForTesting(bool on);

// One run in the 16-lane order, without the pairwise split (Sum and Ssd call them on runs of
// 256 elements); any n for these and for max/min and FindFirst.
template <typename T> double SumLeaf(const T* x, int64_t n);
template <typename T> double SsdLeaf(const T* x, int64_t n, double mean);  // sum (x - mean)^2
// Sequential in double: one order, so no vector version.
template <typename T> double ProdLeaf(const T* x, int64_t n);
template <typename T> T MaxLeaf(const T* x, int64_t n);  // n >= 1; NaN if any element is NaN
template <typename T> T MinLeaf(const T* x, int64_t n);
// Index of the first x[i] == v (of the first NaN if v is NaN), n if none.
template <typename T> int64_t FindFirst(const T* x, int64_t n, T v);
// The sum of one chunk (n <= kChunk) as Sum computes it: SumLeaf over runs of 256 elements
// combined pairwise.
template <typename T> double SumChunk(const T* x, int64_t n);

// [0, n) split into chunks of kChunk elements (the last one shorter; one empty chunk when
// n == 0); chunk(start, len) gives a chunk's value (SumChunk / MaxLeaf / MinLeaf of its
// elements) and may run on any thread of the pool when `parallel`. The partial values are
// combined in a fixed order: pairwise for sums, by MaxLeaf / MinLeaf for the extrema (n >= 1).
using ChunkFn = absl::FunctionRef<double(int64_t start, int64_t len)>;
double SumChunks(int64_t n, bool parallel, ChunkFn chunk);
template <typename T>
T MaxChunks(int64_t n, bool parallel, absl::FunctionRef<T(int64_t start, int64_t len)> chunk);
template <typename T>
T MinChunks(int64_t n, bool parallel, absl::FunctionRef<T(int64_t start, int64_t len)> chunk);

// Over every x[0..n): sum and sum of squared deviations by chunks; product (sequential);
// max and min by chunks (SumChunks, MaxChunks and MinChunks with the leaves above).
// `parallel` lets large inputs use the thread pool; it never changes the result.
template <typename T> double Sum(const T* x, int64_t n, bool parallel);
template <typename T> double Ssd(const T* x, int64_t n, double mean, bool parallel);
template <typename T> double Prod(const T* x, int64_t n, bool parallel);
template <typename T> T Max(const T* x, int64_t n, bool parallel);
template <typename T> T Min(const T* x, int64_t n, bool parallel);
// Index of the first maximum / minimum (of the first NaN if any); n >= 1.
template <typename T> int64_t ArgMax(const T* x, int64_t n, bool parallel);
template <typename T> int64_t ArgMin(const T* x, int64_t n, bool parallel);

// Column reductions of a rows x cols block with leading dimension ld (acc has cols entries and
// holds the running value: callers initialise it). Ssd subtracts mean[c] from column c.
template <typename T> void SumCols(const T* x, int64_t rows, int64_t cols, int64_t ld, double* acc);
template <typename T> void SsdCols(const T* x, int64_t rows, int64_t cols, int64_t ld,
                                   const double* mean, double* acc);
template <typename T> void ProdCols(const T* x, int64_t rows, int64_t cols, int64_t ld, double* acc);
template <typename T> void MaxCols(const T* x, int64_t rows, int64_t cols, int64_t ld, T* acc);
template <typename T> void MinCols(const T* x, int64_t rows, int64_t cols, int64_t ld, T* acc);

// Reductions over the middle axis of [outer, red, inner] slabs with inner > 1 (reduce.cc, for
// float and double), whose rows come from `fetch`: fetch(o, r, r1, c0, len) gives columns
// [c0, c0 + len) of rows r, r + 1, ... of slab o, at least one of the rows before r1 and at
// most all of them, `ld` elements apart. The eager kernels read the rows in place; fused
// reductions compute them into a buffer. Either way each column's partial results combine in
// the same order, so the results are the same bits.
template <typename T>
struct RowBlock {
  const T* p;
  int64_t rows, ld;
};
template <typename T>
using FetchRows = absl::FunctionRef<RowBlock<T>(int64_t o, int64_t r, int64_t r1, int64_t c0,
                                                int64_t len)>;
template <typename T>
void ReduceColumns(ReduceOp op, const FetchRows<T>& fetch, T* out, int64_t outer, int64_t red,
                   int64_t inner, int64_t ddof);

}  // namespace pijit::rvec
