// CUDA C++ source for pijit's GPU kernels, rendered as text and compiled at run time with
// NVRTC (kernels/cuda/module_cache.h). Rendering needs no GPU, so it is unit-tested on the CPU.
//
// Elementwise kernels: one thread per output element (a grid-stride loop). Each input is read
// in one of three ways, chosen per call from its layout and baked into the source:
//   'c' contiguous with the output's shape: element i;
//   's' one element (a scalar, or broadcast along every axis): element 0;
//   'g' anything else (broadcast, transposed, sliced): the output index is decomposed into
//       coordinates and dotted with the input's strides (0 along broadcast axes).
// The body computes `r` from x0..x{n-1}, the inputs' values. Bodies come from a fused
// program (graph/passes/fusion.cc made it for the CPU; the same program runs here), from one
// graph op, or from a row of the float-function table (kernels/ops.h PIJIT_FLOAT_FUNCTIONS),
// whose C++ expression is compiled for the device unchanged: one row, every backend.
//
// Numerics: NVRTC compiles with --fmad=false (no contraction into multiply-adds, as on the
// CPU) and IEEE division and square root, so add, sub, mul, div, sqrt, neg, relu, maximum,
// minimum, comparisons and where give the CPU's bits. exp, log, tanh, erf and the other
// transcendental functions use CUDA's math library (within a few ulp; docs/cuda.md lists the
// bounds the tests use).
//
// Reductions: one block per output element, threads striding over the reduced elements, a
// shared-memory tree to combine them. Softmax: one block per row along the axis.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/dtype.h"
#include "kernels/fused.h"
#include "kernels/ops.h"

namespace pijit::cuda {

// The most axes a kernel's index decomposition handles (more: the caller reshapes or fails).
inline constexpr int kMaxDims = 8;

inline constexpr int kMaxInputs = 16;
// Threads per block of the reduction and softmax kernels (their shared arrays' size).
inline constexpr int kReduceBlock = 256;

enum class Access : char { kContiguous = 'c', kScalar = 's', kStrided = 'g' };

// Kernel arguments, passed by value. The rendered sources declare the same structs from the
// same field lists (ArgsDeclarations()), so host and device agree on the layout; INPUTS and
// DIMS are the array sizes (kMaxInputs and kMaxDims here, PJ_MAX_INPUTS and PJ_MAX_DIMS there).
#define PIJIT_ELEMENTWISE_ARGS_FIELDS(INPUTS, DIMS)                                        \
  void* out;                                                                              \
  const void* in[INPUTS];                                                                 \
  long long n; /* output elements */                                                      \
  int ndim;                                                                               \
  int pad;                                                                                \
  long long shape[DIMS];          /* the output's */                                      \
  long long strides[INPUTS][DIMS]; /* each input's, in elements, 0 where broadcast */     \
  long long out_strides[DIMS];     /* the output's, when it is written strided */
// ReduceArgs: each output's reduced elements split over `chunks` blocks of `chunk_len` (1 and
// n_red: one block per output), writing out[o * chunks + c]; mean divides by `divisor` when it
// is not 0 (the whole count, on the pass that finishes).
#define PIJIT_REDUCE_ARGS_FIELDS(DIMS)                                                     \
  const void* in;                                                                         \
  void* out;                                                                              \
  long long n_out, n_red;                                                                 \
  int kept_ndim, red_ndim;                                                                \
  long long kept_shape[DIMS], kept_stride[DIMS]; /* input strides of the kept axes */     \
  long long red_shape[DIMS], red_stride[DIMS];   /* and of the reduced ones */            \
  long long chunks, chunk_len, divisor;
#define PIJIT_SOFTMAX_ARGS_FIELDS(DIMS)                                                    \
  const void* in;                                                                         \
  void* out;                                                                              \
  long long rows, len;                                                                    \
  long long in_axis_stride, out_axis_stride;                                              \
  int kept_ndim;                                                                          \
  int pad;                                                                                \
  long long kept_shape[DIMS], in_kept_stride[DIMS], out_kept_stride[DIMS];

struct ElementwiseArgs {
  PIJIT_ELEMENTWISE_ARGS_FIELDS(kMaxInputs, kMaxDims)
};
struct ReduceArgs {
  PIJIT_REDUCE_ARGS_FIELDS(kMaxDims)
};
struct SoftmaxArgs {
  PIJIT_SOFTMAX_ARGS_FIELDS(kMaxDims)
};
const char* ArgsDeclarations();

struct ElementwiseSpec {
  std::vector<DType> input_dtypes;
  std::vector<Access> access;
  DType out_dtype = DType::kFloat32;
  std::string compute_type;  // the C++ type the body computes in ("float")
  std::string body;          // statements assigning `r` from x0..x{n-1}
  bool strided_out = false;  // write element i at out_strides (a view into another tensor)
  int ndim = 1;              // the output's axes (strided reads and writes decompose i over them)
  bool wide_index = false;   // 64-bit index arithmetic (an index or offset reaches 2^31)
};

// The device type of `d` ("float", "double", "int", "long long", "bool", ...); error for the
// 16-bit floats, which the CUDA backend does not run yet.
absl::StatusOr<std::string> DeviceType(DType d);

// The source of `extern "C" __global__ void pijit_elementwise(ElementwiseArgs)`.
std::string RenderElementwise(const ElementwiseSpec& spec);

// Bodies.
absl::StatusOr<std::string> FusedProgramBody(const FusedProgram& program);
absl::StatusOr<std::string> BinaryBody(BinaryOp op, bool floating);
absl::StatusOr<std::string> UnaryBody(UnaryOp op, bool floating);
// The float-function row's kernel expression of `op` ("std::exp(x)"), or nullptr.
const char* FloatFunctionExpression(UnaryOp op);

// The source of `pijit_reduce`: `op` over the reduced elements of each output element, input
// of dtype `in`, output of dtype `out` (mean divides by the count; max/min propagate NaN).
// `wide_index`: 64-bit index arithmetic (some index or offset reaches 2^31).
absl::StatusOr<std::string> RenderReduce(ReduceOp op, DType in, DType out, bool wide_index = false);

// The source of `pijit_softmax` (log: log_softmax) for one floating dtype.
absl::StatusOr<std::string> RenderSoftmax(DType dtype, bool log, bool wide_index = false);
// Whether a tensor's indices or offsets need 64 bits (its storage holds 2^31 elements or more).
bool NeedsWideIndex(const Tensor& t);

}  // namespace pijit::cuda
