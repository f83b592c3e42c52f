// Group normalisation in one kernel: per (sample, group) row, the mean and variance of its
// channels' values, then each channel's values scaled and shifted in one step,
// y = x A[c] + B[c] with A = r gamma[c] and B = beta[c] - μ A. The row stays in the cache
// between the statistics and the output, so memory sees x once and y once, where layer_norm
// followed by a per-channel scale and shift made two passes over each.
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

struct GroupDims {
  int64_t rows;      // N * groups
  int64_t channels;  // channels per group
  int64_t spatial;   // values per channel
};

// Rows [0, rows) of x (each channels * spatial long, starting at channel c0 of its sample,
// c0 advancing by `channels` per row and wrapping at gamma's length C).
template <typename T>
__attribute__((always_inline)) inline void NormaliseRows(const T* x, T* y, const T* gamma,
                                                         const T* beta, int64_t first_row,
                                                         int64_t rows, const GroupDims& g,
                                                         int64_t groups, double eps) {
  const int64_t d = g.channels * g.spatial;
  const double n = static_cast<double>(d);
  for (int64_t r = 0; r < rows; ++r) {
    const T* in = x + r * d;
    T* out = y + r * d;
    const double mean = lanes::LaneSum<T>(d, [&](int64_t i) { return in[i]; }) / n;
    const T mu = static_cast<T>(mean);
    const double var = lanes::LaneSum<T>(d, [&](int64_t i) { return (in[i] - mu) * (in[i] - mu); }) / n;
    const double inv = 1.0 / std::sqrt(var + eps);
    const int64_t c0 = ((first_row + r) % groups) * g.channels;
    for (int64_t c = 0; c < g.channels; ++c) {
      const double a = inv * static_cast<double>(gamma[c0 + c]);
      const T scale = static_cast<T>(a), shift = static_cast<T>(beta[c0 + c] - mean * a);
      const T* xc = in + c * g.spatial;
      T* yc = out + c * g.spatial;
      for (int64_t s = 0; s < g.spatial; ++s) yc[s] = xc[s] * scale + shift;
    }
  }
}

template <typename T>
void RowsBaseline(const T* x, T* y, const T* gamma, const T* beta, int64_t first, int64_t rows,
                  const GroupDims& g, int64_t groups, double eps) {
  NormaliseRows(x, y, gamma, beta, first, rows, g, groups, eps);
}

template <typename T>
PIJIT_AVX2 void RowsAvx2(const T* x, T* y, const T* gamma, const T* beta, int64_t first,
                         int64_t rows, const GroupDims& g, int64_t groups, double eps) {
  NormaliseRows(x, y, gamma, beta, first, rows, g, groups, eps);
}

}  // namespace

absl::StatusOr<TensorMeta> InferGroupNorm(const TensorMeta& x, int64_t groups,
                                          const TensorMeta& gamma, const TensorMeta& beta) {
  if (!IsFloating(x.dtype)) {
    return absl::UnimplementedError(absl::StrFormat(
        "group_norm: unsupported dtype %s, expected a floating dtype (Float16, BFloat16, Float32 "
        "or Float64)", DTypeName(x.dtype)));
  }
  if (x.shape.size() < 2) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "group_norm: expected an input of at least 2 dimensions (N, C, ...), got shape %s",
        ShapeToString(x.shape)));
  }
  const int64_t c = x.shape[1];
  if (groups < 1 || c % groups != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "group_norm: the input's %d channels (axis 1 of %s) must divide into %d groups", c,
        ShapeToString(x.shape), groups));
  }
  for (const auto& [what, m] : {std::pair<const char*, const TensorMeta*>{"weight (gamma)", &gamma},
                                {"bias (beta)", &beta}}) {
    if (m->dtype != x.dtype || m->shape != Shape{c}) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "group_norm: %s must be a %s vector of the input's %d channels, got %s %s", what,
          DTypeName(x.dtype), c, DTypeName(m->dtype), ShapeToString(m->shape)));
    }
  }
  return x;
}

absl::StatusOr<Tensor> GroupNorm(const Tensor& x, int64_t groups, const Tensor& gamma,
                                 const Tensor& beta, double eps) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferGroupNorm(MetaOf(x), groups, MetaOf(gamma), MetaOf(beta)));
  if (IsHalfFloat(meta.dtype)) {  // in float32, rounded once at the end
    PIJIT_ASSIGN_OR_RETURN(Tensor wx, Cast(x, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor wg, Cast(gamma, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor wb, Cast(beta, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor r, GroupNorm(wx, groups, wg, wb, eps));
    return Cast(r, meta.dtype);
  }
  Tensor y = Tensor::Empty(meta.shape, meta.dtype);
  if (y.numel() == 0) return y;
  const int64_t channels = meta.shape[1] / groups;
  const GroupDims g{meta.shape[0] * groups, channels, y.numel() / (meta.shape[0] * meta.shape[1])};
  const Tensor cx = x.Contiguous(), cg = gamma.Contiguous(), cb = beta.Contiguous();
  const int64_t d = channels * g.spatial;
  const bool avx2 = rvec::ActiveIsa() >= 2;
  DispatchDType(meta.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const T* px = cx.data<T>();
      T* py = y.data<T>();
      ParallelFor(g.rows, std::max<int64_t>(1, (1 << 15) / d), [&](int64_t lo, int64_t hi) {
        if (avx2) {
          RowsAvx2<T>(px + lo * d, py + lo * d, cg.data<T>(), cb.data<T>(), lo, hi - lo, g, groups, eps);
        } else {
          RowsBaseline<T>(px + lo * d, py + lo * d, cg.data<T>(), cb.data<T>(), lo, hi - lo, g, groups, eps);
        }
      });
    }
  });
  return y;
}

}  // namespace pijit
