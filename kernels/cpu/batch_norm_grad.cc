// Training batch norm's gradients, one channel at a time: a channel of x and dy (N runs of the
// spatial size, strided by C times it) is read from memory once and stays in the cache for the
// few passes over it (statistics, then the two sums; or dx), where the composite formula made
// a pass over memory per reduction and per elementwise step.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/lane_sum.h"
#include "kernels/cpu/reduce_vec.h"  // ActiveIsa
#include "kernels/errors.h"
#include "kernels/ops.h"
#include "kernels/thread_pool.h"

#define PIJIT_AVX2 __attribute__((target("avx2")))

namespace pijit {
namespace {

// x viewed as [n, c, s].
struct Dims {
  int64_t n, c, s;
  int64_t count() const { return n * s; }
};
Dims DimsOf(const Shape& x) {
  const int64_t n = x[0], c = x[1];
  return {n, c, n * c == 0 ? 0 : NumElements(x) / (n * c)};
}

// Σ over channel `ch`'s n runs of s values of f(run start, i).
template <typename T, typename F>
__attribute__((always_inline)) inline double ChannelSum(const Dims& d, int64_t ch, F f) {
  double total = 0;
  for (int64_t b = 0; b < d.n; ++b) {
    const int64_t at = (b * d.c + ch) * d.s;
    total += lanes::LaneSum<T>(d.s, [&](int64_t i) { return f(at + i); });
  }
  return total;
}

// sums[0..3][ch] for channels [lo, hi). Inlined into a baseline and an AVX2 copy.
template <typename T>
__attribute__((always_inline)) inline void SumsChannels(const T* x, const T* dy, T* sums,
                                                        const Dims& d, double eps, int64_t lo,
                                                        int64_t hi) {
  const double m = static_cast<double>(d.count());
  for (int64_t ch = lo; ch < hi; ++ch) {
    const double mean = ChannelSum<T>(d, ch, [&](int64_t i) { return x[i]; }) / m;
    const T mu = static_cast<T>(mean);
    const double var = ChannelSum<T>(d, ch, [&](int64_t i) { return (x[i] - mu) * (x[i] - mu); }) / m;
    const double r = 1.0 / std::sqrt(var + eps);
    const double sum_dy = ChannelSum<T>(d, ch, [&](int64_t i) { return dy[i]; });
    const double sum_dy_xc = ChannelSum<T>(d, ch, [&](int64_t i) { return dy[i] * (x[i] - mu); });
    sums[ch] = mu;
    sums[d.c + ch] = static_cast<T>(r);
    sums[2 * d.c + ch] = static_cast<T>(sum_dy);
    sums[3 * d.c + ch] = static_cast<T>(sum_dy_xc * r);
  }
}

// dx for channels [lo, hi): gamma r (dy - Σdy/M) - gamma r² Σ(dy x̂)/M (x - μ). The mean of dy
// is subtracted before the product with r, which can be large (1/sqrt(eps) for a constant
// channel), so that equal values cancel exactly.
template <typename T>
__attribute__((always_inline)) inline void InputChannels(const T* x, const T* dy, const T* sums,
                                                         const T* gamma, T* dx, const Dims& d,
                                                         int64_t lo, int64_t hi) {
  const double m = static_cast<double>(d.count());
  for (int64_t ch = lo; ch < hi; ++ch) {
    const double r = sums[d.c + ch];
    const T mu = sums[ch];
    const T a = static_cast<T>(gamma[ch] * r);
    const T mean_dy = static_cast<T>(sums[2 * d.c + ch] / m);
    const T b = static_cast<T>(-static_cast<double>(gamma[ch]) * r * r * sums[3 * d.c + ch] / m);
    for (int64_t n = 0; n < d.n; ++n) {
      const int64_t at = (n * d.c + ch) * d.s;
      const T* xs = x + at;
      const T* dys = dy + at;
      T* out = dx + at;
      for (int64_t i = 0; i < d.s; ++i) out[i] = a * (dys[i] - mean_dy) + b * (xs[i] - mu);
    }
  }
}

template <typename T>
void SumsBaseline(const T* x, const T* dy, T* sums, const Dims& d, double eps, int64_t lo, int64_t hi) {
  SumsChannels<T>(x, dy, sums, d, eps, lo, hi);
}
template <typename T>
PIJIT_AVX2 void SumsAvx2(const T* x, const T* dy, T* sums, const Dims& d, double eps, int64_t lo, int64_t hi) {
  SumsChannels<T>(x, dy, sums, d, eps, lo, hi);
}
template <typename T>
void InputBaseline(const T* x, const T* dy, const T* sums, const T* gamma, T* dx, const Dims& d,
                   int64_t lo, int64_t hi) {
  InputChannels<T>(x, dy, sums, gamma, dx, d, lo, hi);
}
template <typename T>
PIJIT_AVX2 void InputAvx2(const T* x, const T* dy, const T* sums, const T* gamma, T* dx,
                          const Dims& d, int64_t lo, int64_t hi) {
  InputChannels<T>(x, dy, sums, gamma, dx, d, lo, hi);
}

// Channels per task: about 32K values.
int64_t Grain(const Dims& d) { return std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(1, d.count())); }

absl::Status CheckX(const char* op, const TensorMeta& x, const TensorMeta& dy) {
  if (x.dtype != DType::kFloat32 && x.dtype != DType::kFloat64) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: unsupported dtype %s, expected Float32 or Float64", op, DTypeName(x.dtype)));
  }
  if (x.shape.size() < 2) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: expected an input of at least 2 dimensions (N, C, ...), got shape %s", op,
        ShapeToString(x.shape)));
  }
  if (!(dy == x)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the output gradient (%s %s) must have the input's shape and dtype (%s %s)", op,
        DTypeName(dy.dtype), ShapeToString(dy.shape), DTypeName(x.dtype), ShapeToString(x.shape)));
  }
  return absl::OkStatus();
}

absl::Status CheckVector(const char* op, const char* what, const TensorMeta& v, const TensorMeta& x,
                         const Shape& want) {
  if (v.dtype != x.dtype || v.shape != want) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s must be %s %s for input %s, got %s %s", op, what, DTypeName(x.dtype),
        ShapeToString(want), ShapeToString(x.shape), DTypeName(v.dtype), ShapeToString(v.shape)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TensorMeta> InferBatchNormGradSums(const TensorMeta& x, const TensorMeta& dy) {
  PIJIT_RETURN_IF_ERROR(CheckX("batch_norm_grad_sums", x, dy));
  return TensorMeta{x.dtype, {kBatchNormSumsRows, x.shape[1]}};
}

absl::StatusOr<Tensor> BatchNormGradSums(const Tensor& x, const Tensor& dy, double eps) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferBatchNormGradSums(MetaOf(x), MetaOf(dy)));
  Tensor sums = Tensor::Empty(meta.shape, meta.dtype);
  const Dims d = DimsOf(x.shape());
  const Tensor cx = x.Contiguous(), cdy = dy.Contiguous();
  const bool avx2 = rvec::ActiveIsa() >= 2;
  DispatchDType(meta.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      T* out = sums.data<T>();
      if (d.count() == 0) {  // no values: zero sums, and the statistics of nothing
        std::fill(out, out + sums.numel(), T(0));
        return;
      }
      ParallelFor(d.c, Grain(d), [&](int64_t lo, int64_t hi) {
        if (avx2) SumsAvx2<T>(cx.data<T>(), cdy.data<T>(), out, d, eps, lo, hi);
        else SumsBaseline<T>(cx.data<T>(), cdy.data<T>(), out, d, eps, lo, hi);
      });
    }
  });
  return sums;
}

absl::StatusOr<TensorMeta> InferBatchNormGradInput(const TensorMeta& x, const TensorMeta& dy,
                                                   const TensorMeta& sums, const TensorMeta& gamma) {
  constexpr const char* op = "batch_norm_grad_input";
  PIJIT_RETURN_IF_ERROR(CheckX(op, x, dy));
  PIJIT_RETURN_IF_ERROR(CheckVector(op, "sums", sums, x, {kBatchNormSumsRows, x.shape[1]}));
  PIJIT_RETURN_IF_ERROR(CheckVector(op, "gamma", gamma, x, {x.shape[1]}));
  return x;
}

absl::StatusOr<Tensor> BatchNormGradInput(const Tensor& x, const Tensor& dy, const Tensor& sums,
                                          const Tensor& gamma) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferBatchNormGradInput(MetaOf(x), MetaOf(dy),
                                                                  MetaOf(sums), MetaOf(gamma)));
  Tensor dx = Tensor::Empty(meta.shape, meta.dtype);
  if (dx.numel() == 0) return dx;
  const Dims d = DimsOf(x.shape());
  const Tensor cx = x.Contiguous(), cdy = dy.Contiguous(), cs = sums.Contiguous();
  const Tensor cg = gamma.Contiguous();
  const bool avx2 = rvec::ActiveIsa() >= 2;
  DispatchDType(meta.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      ParallelFor(d.c, Grain(d), [&](int64_t lo, int64_t hi) {
        if (avx2) {
          InputAvx2<T>(cx.data<T>(), cdy.data<T>(), cs.data<T>(), cg.data<T>(), dx.data<T>(), d, lo, hi);
        } else {
          InputBaseline<T>(cx.data<T>(), cdy.data<T>(), cs.data<T>(), cg.data<T>(), dx.data<T>(), d, lo, hi);
        }
      });
    }
  });
  return dx;
}

}  // namespace pijit
