// layer_norm's input gradient in one kernel: per row, the mean and variance of x are
// recomputed, then Σ dx̂ and Σ dx̂ (x - μ), and dx is written. A row is read several times but
// stays in the cache between the passes, so memory sees x and dy once and dx once, where the
// composite formula made a pass over memory per reduction and per elementwise step.
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

// One row of dx; gamma is read only when kGamma. Inlined into a baseline and an AVX2 copy.
template <typename T, bool kGamma>
__attribute__((always_inline)) inline void GradRow(const T* x, const T* dy, const T* gamma, T* dx,
                                                   int64_t d, double eps) {
  const double n = static_cast<double>(d);
  const T mu = static_cast<T>(lanes::LaneSum<T>(d, [&](int64_t i) { return x[i]; }) / n);
  auto dh = [&](int64_t i) { return kGamma ? dy[i] * gamma[i] : dy[i]; };
  const double var = lanes::LaneSum<T>(d, [&](int64_t i) { return (x[i] - mu) * (x[i] - mu); }) / n;
  const double sum_dh = lanes::LaneSum<T>(d, dh);
  const double sum_dh_xc = lanes::LaneSum<T>(d, [&](int64_t i) { return dh(i) * (x[i] - mu); });
  // dx = r (dx̂ - mean(dx̂) - x̂ mean(dx̂ x̂)) = r (dx̂ - mean(dx̂)) - r³ mean(dx̂ (x - μ)) (x - μ);
  // the mean is subtracted before the product with r, which can be large (1/sqrt(eps) for a
  // constant row), so that equal values cancel exactly.
  const double r = 1.0 / std::sqrt(var + eps);
  const T a = static_cast<T>(r), m1 = static_cast<T>(sum_dh / n);
  const T b = static_cast<T>(-r * r * r * sum_dh_xc / n);
  for (int64_t i = 0; i < d; ++i) dx[i] = a * (dh(i) - m1) + b * (x[i] - mu);
}

template <typename T, bool kGamma>
void GradRowsBaseline(const T* x, const T* dy, const T* gamma, T* dx, int64_t rows, int64_t d,
                      double eps) {
  for (int64_t r = 0; r < rows; ++r) GradRow<T, kGamma>(x + r * d, dy + r * d, gamma, dx + r * d, d, eps);
}

template <typename T, bool kGamma>
PIJIT_AVX2 void GradRowsAvx2(const T* x, const T* dy, const T* gamma, T* dx, int64_t rows,
                             int64_t d, double eps) {
  for (int64_t r = 0; r < rows; ++r) GradRow<T, kGamma>(x + r * d, dy + r * d, gamma, dx + r * d, d, eps);
}

template <typename T>
void GradRows(const T* x, const T* dy, const T* gamma, T* dx, int64_t m, int64_t d, double eps) {
  const bool avx2 = rvec::ActiveIsa() >= 2;
  ParallelFor(m, std::max<int64_t>(1, (1 << 15) / d), [&](int64_t lo, int64_t hi) {
    const int64_t off = lo * d, rows = hi - lo;
    if (avx2 && gamma) GradRowsAvx2<T, true>(x + off, dy + off, gamma, dx + off, rows, d, eps);
    else if (avx2) GradRowsAvx2<T, false>(x + off, dy + off, gamma, dx + off, rows, d, eps);
    else if (gamma) GradRowsBaseline<T, true>(x + off, dy + off, gamma, dx + off, rows, d, eps);
    else GradRowsBaseline<T, false>(x + off, dy + off, gamma, dx + off, rows, d, eps);
  });
}

}  // namespace

absl::StatusOr<TensorMeta> InferLayerNormGrad(const TensorMeta& x, const TensorMeta& dy,
                                              absl::Span<const int64_t> normalized_shape,
                                              const TensorMeta* gamma) {
  PIJIT_RETURN_IF_ERROR(InferLayerNorm(x, normalized_shape, gamma, nullptr).status());
  if (!(dy == x)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "layer_norm_grad: the output gradient (%s %s) must have the input's shape and dtype "
        "(%s %s)", DTypeName(dy.dtype), ShapeToString(dy.shape), DTypeName(x.dtype),
        ShapeToString(x.shape)));
  }
  return x;
}

absl::StatusOr<Tensor> LayerNormGrad(const Tensor& x, const Tensor& dy,
                                     absl::Span<const int64_t> normalized_shape,
                                     const Tensor* gamma, double eps) {
  std::optional<TensorMeta> gm;
  if (gamma) gm = MetaOf(*gamma);
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferLayerNormGrad(MetaOf(x), MetaOf(dy), normalized_shape,
                                                             gamma ? &*gm : nullptr));
  if (IsHalfFloat(meta.dtype)) {  // in float32, as the forward normalises, rounded once
    PIJIT_ASSIGN_OR_RETURN(Tensor wx, Cast(x, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor wdy, Cast(dy, DType::kFloat32));
    Tensor wg;
    if (gamma) { PIJIT_ASSIGN_OR_RETURN(wg, Cast(*gamma, DType::kFloat32)); }
    PIJIT_ASSIGN_OR_RETURN(Tensor r, LayerNormGrad(wx, wdy, normalized_shape, gamma ? &wg : nullptr, eps));
    return Cast(r, meta.dtype);
  }
  Tensor dx = Tensor::Empty(meta.shape, meta.dtype);
  const int64_t d = NumElements(normalized_shape);
  if (dx.numel() == 0) return dx;  // d == 0 leaves no elements either
  const int64_t m = dx.numel() / d;
  const Tensor cx = x.Contiguous(), cdy = dy.Contiguous();
  Tensor cg;
  if (gamma) cg = gamma->Contiguous();
  DispatchDType(meta.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      GradRows<T>(cx.data<T>(), cdy.data<T>(), gamma ? cg.data<T>() : nullptr, dx.data<T>(), m, d, eps);
    }
  });
  return dx;
}

}  // namespace pijit
