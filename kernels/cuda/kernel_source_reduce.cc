// Rendering of the CUDA reduction and softmax kernels (kernels/cuda/kernel_source.h).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/cuda/kernel_source.h"
#include "kernels/errors.h"

namespace pijit::cuda {
namespace {

constexpr int kBlock = kReduceBlock;

struct Combine {
  const char* init;     // the identity, in the accumulator type A
  const char* combine;  // `acc` with `v`
};

absl::StatusOr<Combine> CombineOf(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean: return Combine{"A(0)", "acc + v"};
    case ReduceOp::kProd: return Combine{"A(1)", "acc * v"};
    // NaN wins, as NumPy's max and min: a comparison with NaN is false, so test it first.
    case ReduceOp::kMax: return Combine{"pj_lowest<A>()", "(acc != acc || acc > v) ? acc : v"};
    case ReduceOp::kMin: return Combine{"pj_highest<A>()", "(acc != acc || acc < v) ? acc : v"};
    // The accumulator is the output's bool: a value converts by its truth (NaN is true).
    case ReduceOp::kAll: return Combine{"true", "acc && v"};
    case ReduceOp::kAny: return Combine{"false", "acc || v"};
    default:
      return absl::UnimplementedError(absl::StrFormat(
          "the CUDA backend has no kernel for the %s reduction yet", ReduceOpName(op)));
  }
}

constexpr const char* kLimits = R"(
template <typename A> __device__ __forceinline__ A pj_lowest();
template <> __device__ __forceinline__ float pj_lowest<float>() { return -__int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double pj_lowest<double>() { return -__longlong_as_double(0x7ff0000000000000LL); }
template <> __device__ __forceinline__ long long pj_lowest<long long>() { return (long long)(-9223372036854775807LL - 1); }
template <> __device__ __forceinline__ int pj_lowest<int>() { return (int)(-2147483647 - 1); }
template <typename A> __device__ __forceinline__ A pj_highest();
template <> __device__ __forceinline__ float pj_highest<float>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double pj_highest<double>() { return __longlong_as_double(0x7ff0000000000000LL); }
template <> __device__ __forceinline__ long long pj_highest<long long>() { return 9223372036854775807LL; }
template <> __device__ __forceinline__ int pj_highest<int>() { return 2147483647; }
)";

// What the reduction and softmax sources start with: the argument structs, the limits and IDX,
// the index type of pj_offset.
std::string Prelude(bool wide_index) {
  return absl::StrCat(ArgsDeclarations(), kLimits, "typedef ",
                      wide_index ? "long long" : "unsigned int", " IDX;\n");
}

}  // namespace

bool NeedsWideIndex(const Tensor& t) {
  constexpr int64_t kLimit = int64_t{1} << 31;
  if (t.numel() >= kLimit) return true;
  return t.storage() && static_cast<int64_t>(t.storage()->nbytes() / std::max<size_t>(1, t.itemsize())) >= kLimit;
}

absl::StatusOr<std::string> RenderReduce(ReduceOp op, DType in, DType out, bool wide_index) {
  PIJIT_ASSIGN_OR_RETURN(const Combine c, CombineOf(op));
  PIJIT_ASSIGN_OR_RETURN(const std::string in_type, DeviceType(in));
  PIJIT_ASSIGN_OR_RETURN(const std::string out_type, DeviceType(out));
  const bool logical = op == ReduceOp::kAll || op == ReduceOp::kAny;
  if ((in == DType::kBool && !logical) || (IsInteger(in) && (op == ReduceOp::kMean))) {
    return absl::UnimplementedError(absl::StrFormat(
        "the CUDA backend has no %s reduction of %s tensors yet", ReduceOpName(op), DTypeName(in)));
  }
  // Accumulate in the output's type (int32 sums widen to int64 as on the CPU).
  std::string src = Prelude(wide_index);
  absl::StrAppendFormat(&src, R"(
extern "C" __global__ void pijit_reduce(ReduceArgs a) {
  typedef %s A;
  __shared__ A part[%d];
  const %s* in = static_cast<const %s*>(a.in);
  for (long long b = blockIdx.x; b < a.n_out * a.chunks; b += gridDim.x) {
    const long long o = b / a.chunks, first = (b %% a.chunks) * a.chunk_len;
    const long long last = min(first + a.chunk_len, a.n_red);
    const long long base = pj_offset<IDX>(o, a.kept_ndim, a.kept_shape, a.kept_stride);
    A acc = %s;
    for (long long r = first + threadIdx.x; r < last; r += blockDim.x) {
      const A v = A(in[base + pj_offset<IDX>(r, a.red_ndim, a.red_shape, a.red_stride)]);
      acc = %s;
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) {
        const A v = part[threadIdx.x + half];
        acc = part[threadIdx.x];
        part[threadIdx.x] = %s;
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      A total = part[0];
      %s
      static_cast<%s*>(a.out)[b] = total;
    }
    __syncthreads();
  }
}
)", out_type, kBlock, in_type, in_type, c.init, c.combine, c.combine,
                        op == ReduceOp::kMean ? "if (a.divisor != 0) total = total / A(a.divisor);" : "",
                        out_type);
  return src;
}

absl::StatusOr<std::string> RenderSoftmax(DType dtype, bool log, bool wide_index) {
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64) {
    return absl::UnimplementedError(absl::StrFormat(
        "the CUDA backend runs softmax on float32 and float64 only, not %s", DTypeName(dtype)));
  }
  const char* t = dtype == DType::kFloat64 ? "double" : "float";
  const char* exp = dtype == DType::kFloat64 ? "exp" : "expf";
  const char* lg = dtype == DType::kFloat64 ? "log" : "logf";
  std::string src = Prelude(wide_index);
  // Three passes over the row: its max, the sum of exp(x - max), then the outputs. A NaN in
  // the row makes the row NaN, as on the CPU.
  absl::StrAppendFormat(&src, R"(
extern "C" __global__ void pijit_softmax(SoftmaxArgs a) {
  typedef %s T;
  __shared__ T part[%d];
  const T* in = static_cast<const T*>(a.in);
  T* out = static_cast<T*>(a.out);
  for (long long row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const long long ib = pj_offset<IDX>(row, a.kept_ndim, a.kept_shape, a.in_kept_stride);
    const long long ob = pj_offset<IDX>(row, a.kept_ndim, a.kept_shape, a.out_kept_stride);
    T m = pj_lowest<T>();
    for (long long j = threadIdx.x; j < a.len; j += blockDim.x) {
      const T v = in[ib + j * a.in_axis_stride];
      m = (m != m || m > v) ? m : v;
    }
    part[threadIdx.x] = m;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) {
        const T v = part[threadIdx.x + half], u = part[threadIdx.x];
        part[threadIdx.x] = (u != u || u > v) ? u : v;
      }
      __syncthreads();
    }
    m = part[0];
    __syncthreads();
    T s = T(0);
    for (long long j = threadIdx.x; j < a.len; j += blockDim.x)
      s += %s(in[ib + j * a.in_axis_stride] - m);
    part[threadIdx.x] = s;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
      __syncthreads();
    }
    s = part[0];
    __syncthreads();
    for (long long j = threadIdx.x; j < a.len; j += blockDim.x) {
      const T d = in[ib + j * a.in_axis_stride] - m;
      out[ob + j * a.out_axis_stride] = %s;
    }
  }
}
)", t, kBlock, exp, log ? absl::StrFormat("d - %s(s)", lg) : absl::StrFormat("%s(d) / s", exp));
  return src;
}

}  // namespace pijit::cuda
