// Batch and layer normalisation: float32 on oneDNN (primitives cached by problem, flags and
// epsilon; layer norm only for rows of 256 or more, and only where the CPU lacks AVX-512,
// which runs rows_avx512.h), the rest on plain loops (layer norm: vectorised sums and rows in
// parallel).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "kernels/blocked_layout.h"
#include "kernels/cpu/batch_norm_blocked.h"
#include "kernels/cpu/reduce_vec.h"
#include "kernels/cpu/rows_avx512.h"
#include "kernels/cpu/window.h"
#include "kernels/errors.h"
#include "kernels/thread_pool.h"

namespace pijit {
namespace {

absl::Status CheckOperand(const char* op, const char* what, const TensorMeta& m, DType dtype,
                          absl::Span<const int64_t> shape, const TensorMeta& x) {
  if (m.dtype != dtype) {
    return absl::UnimplementedError(absl::StrFormat("%s: %s has dtype %s but the input has dtype %s",
                                                    op, what, DTypeName(m.dtype), DTypeName(dtype)));
  }
  if (!(absl::MakeConstSpan(m.shape) == shape)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s of shape %s does not match input %s (expected %s)", op, what,
        ShapeToString(m.shape), ShapeToString(x.shape), ShapeToString(shape)));
  }
  return absl::OkStatus();
}

int64_t EpsBits(double eps) {
  int64_t b;
  std::memcpy(&b, &eps, sizeof(b));
  return b;
}

// ---- batch norm ----

// N, C, S (spatial size), training, eps bits.
using BnKey = std::array<int64_t, 5>;
struct BnPrimitive {
  dnnl::memory::desc data, stat;
  dnnl::batch_normalization_forward prim;
};

const BnPrimitive& GetBatchNorm(const BnKey& k, double eps) {
  return *CachedPrimitive(k, [&] {
    using dnnl::memory;
    auto p = std::make_unique<BnPrimitive>();
    p->data = memory::desc({k[0], k[1], k[2], 1}, memory::data_type::f32, memory::format_tag::nchw);
    p->stat = memory::desc({k[1]}, memory::data_type::f32, memory::format_tag::a);
    auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    if (!k[3]) flags = flags | dnnl::normalization_flags::use_global_stats;
    const auto prop = k[3] ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
    p->prim = dnnl::batch_normalization_forward(dnnl::batch_normalization_forward::primitive_desc(
        DnnlEngine(), prop, p->data, p->data, static_cast<float>(eps), flags));
    return p;
  });
}

// Normalises x (viewed as [N, C, S]) with per-channel mean/var; the f32 path writes the batch
// statistics into `mean`/`var` when training.
template <typename T>
void BatchNormLoop(const T* x, T* y, const T* mean, const T* var, const T* gamma, const T* beta,
                   int64_t n, int64_t c, int64_t s, double eps) {
  for (int64_t ch = 0; ch < c; ++ch) {
    const T scale = gamma[ch] / static_cast<T>(std::sqrt(static_cast<double>(var[ch]) + eps));
    const T shift = beta[ch] - mean[ch] * scale;
    for (int64_t b = 0; b < n; ++b) {
      const T* in = x + (b * c + ch) * s;
      T* out = y + (b * c + ch) * s;
      for (int64_t i = 0; i < s; ++i) out[i] = in[i] * scale + shift;
    }
  }
}

template <typename T>
void BatchStats(const T* x, int64_t n, int64_t c, int64_t s, T* mean, T* var) {
  const double count = static_cast<double>(n * s);
  for (int64_t ch = 0; ch < c; ++ch) {
    double sum = 0, sq = 0;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < s; ++i) sum += x[(b * c + ch) * s + i];
    const double m = sum / count;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < s; ++i) {
        const double d = x[(b * c + ch) * s + i] - m;
        sq += d * d;
      }
    mean[ch] = static_cast<T>(m);
    var[ch] = static_cast<T>(sq / count);
  }
}

struct BnDims {
  int64_t n, c, s;
};
// x's dimensions as [N, C, S]: of its NCHW shape when it is held in the layout of `block`.
BnDims BnDimsOf(const Tensor& x, int64_t block) {
  const int64_t n = x.shape()[0], c = block ? x.shape()[1] * block : x.shape()[1];
  return {n, c, n * c == 0 ? 0 : x.numel() / (n * c)};
}

// y from x with the given statistics (f32: oneDNN; training: oneDNN computes them into
// batch_mean/batch_var).
absl::Status RunBatchNorm(const Tensor& x, const Tensor& mean, const Tensor& var,
                          const Tensor& gamma, const Tensor& beta, double eps, bool training,
                          Tensor& y) {
  const BnDims d = BnDimsOf(x, 0);
  if (x.dtype() == DType::kFloat32) {
    const BnPrimitive& p = GetBatchNorm({d.n, d.c, d.s, training, EpsBits(eps)}, eps);
    using dnnl::memory;
    auto& e = DnnlEngine();
    p.prim.execute(DnnlStream(), {{DNNL_ARG_SRC, memory(p.data, e, x.raw_data())},
                                  {DNNL_ARG_DST, memory(p.data, e, y.raw_data())},
                                  {DNNL_ARG_MEAN, memory(p.stat, e, mean.raw_data())},
                                  {DNNL_ARG_VARIANCE, memory(p.stat, e, var.raw_data())},
                                  {DNNL_ARG_SCALE, memory(p.stat, e, gamma.raw_data())},
                                  {DNNL_ARG_SHIFT, memory(p.stat, e, beta.raw_data())}});
    DnnlStream().wait();
    return absl::OkStatus();
  }
  double* m = mean.data<double>();
  double* v = var.data<double>();
  if (training) BatchStats<double>(x.data<double>(), d.n, d.c, d.s, m, v);
  BatchNormLoop<double>(x.data<double>(), y.data<double>(), m, v, gamma.data<double>(),
                        beta.data<double>(), d.n, d.c, d.s, eps);
  return absl::OkStatus();
}

// ---- layer norm ----

// M (rows), D (normalised size), has gamma, has beta, eps bits.
using LnKey = std::array<int64_t, 5>;
struct LnPrimitive {
  dnnl::memory::desc data, stat, param;
  dnnl::layer_normalization_forward prim;
};

const LnPrimitive& GetLayerNorm(const LnKey& k, double eps) {
  return *CachedPrimitive(k, [&] {
    using dnnl::memory;
    const auto f32 = memory::data_type::f32;
    auto p = std::make_unique<LnPrimitive>();
    p->data = memory::desc({k[0], k[1]}, f32, memory::format_tag::ab);
    p->stat = memory::desc({k[0]}, f32, memory::format_tag::a);
    p->param = memory::desc({k[1]}, f32, memory::format_tag::a);
    auto flags = dnnl::normalization_flags::none;
    if (k[2]) flags = flags | dnnl::normalization_flags::use_scale;
    if (k[3]) flags = flags | dnnl::normalization_flags::use_shift;
    // forward_training: the statistics are outputs, written to scratch buffers.
    p->prim = dnnl::layer_normalization_forward(dnnl::layer_normalization_forward::primitive_desc(
        DnnlEngine(), dnnl::prop_kind::forward_training, p->data, p->data, p->stat,
        static_cast<float>(eps), flags));
    return p;
  });
}

// Rows in parallel; per row, mean and variance from the vectorised double-accumulating sums
// of reduce_vec.h, then y = (x - mean) * inv_std * gamma + beta in T (vectorised loops).
template <typename T>
void LayerNormRows(const T* x, T* y, const T* gamma, const T* beta, int64_t m, int64_t d,
                   double eps) {
  ParallelFor(m, std::max<int64_t>(1, (1 << 15) / d), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const T* in = x + r * d;
      T* out = y + r * d;
      const double mean = rvec::Sum(in, d, false) / static_cast<double>(d);
      const double var = rvec::Ssd(in, d, mean, false) / static_cast<double>(d);
      const T mu = static_cast<T>(mean), inv = static_cast<T>(1.0 / std::sqrt(var + eps));
      if (gamma && beta) {
        for (int64_t i = 0; i < d; ++i) out[i] = (in[i] - mu) * inv * gamma[i] + beta[i];
      } else if (gamma) {
        for (int64_t i = 0; i < d; ++i) out[i] = (in[i] - mu) * inv * gamma[i];
      } else if (beta) {
        for (int64_t i = 0; i < d; ++i) out[i] = (in[i] - mu) * inv + beta[i];
      } else {
        for (int64_t i = 0; i < d; ++i) out[i] = (in[i] - mu) * inv;
      }
    }
  });
}

// Training batch norm of float32 or float64 x (float32 in the layout of `block`, relu after
// it where `relu`): y, and the running statistics updated in place with the batch's (the
// variance's unbiased).
absl::StatusOr<Tensor> TrainAndUpdate(const Tensor& x, const Tensor& mean, const Tensor& var,
                                      const Tensor& gamma, const Tensor& beta, double eps,
                                      double momentum, const TensorMeta& meta, int64_t block,
                                      bool relu = false) {
  Tensor y = Tensor::Empty(meta.shape, meta.dtype);
  Tensor bmean = Tensor::Empty(mean.shape(), mean.dtype());
  Tensor bvar = Tensor::Empty(var.shape(), var.dtype());
  if (block != 0) {
    PIJIT_RETURN_IF_ERROR(BatchNormTrainBlockedF32(x, gamma, beta, eps, relu, y, bmean, bvar));
  } else {
    PIJIT_RETURN_IF_ERROR(RunBatchNorm(x.Contiguous(), bmean, bvar, gamma.Contiguous(),
                                       beta.Contiguous(), eps, true, y));
  }
  const BnDims d = BnDimsOf(x, block);
  const double count = static_cast<double>(d.n * d.s);
  const double unbias = count / (count - 1);
  DispatchDType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      T* rm = mean.data<T>();
      T* rv = var.data<T>();
      for (int64_t ch = 0; ch < d.c; ++ch) {
        rm[ch] = static_cast<T>((1 - momentum) * rm[ch] + momentum * bmean.data<T>()[ch]);
        rv[ch] = static_cast<T>((1 - momentum) * rv[ch] + momentum * unbias * bvar.data<T>()[ch]);
      }
    }
  });
  return y;
}

}  // namespace

absl::StatusOr<TensorMeta> InferBatchNorm(const TensorMeta& x, const TensorMeta& mean,
                                          const TensorMeta& var, const TensorMeta& gamma,
                                          const TensorMeta& beta, bool training) {
  constexpr const char* op = "batch_norm";
  if (!IsFloating(x.dtype)) {
    return absl::UnimplementedError(absl::StrFormat(
        "batch_norm: unsupported dtype %s, expected a floating dtype (Float16, BFloat16, Float32 or Float64)", DTypeName(x.dtype)));
  }
  if (x.shape.size() < 2) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "batch_norm: expected an input of at least 2 dimensions (N, C, ...), got shape %s",
        ShapeToString(x.shape)));
  }
  const Shape c{x.shape[1]};
  PIJIT_RETURN_IF_ERROR(CheckOperand(op, training ? "running_mean" : "mean", mean, x.dtype, c, x));
  PIJIT_RETURN_IF_ERROR(CheckOperand(op, training ? "running_var" : "variance", var, x.dtype, c, x));
  PIJIT_RETURN_IF_ERROR(CheckOperand(op, "weight (gamma)", gamma, x.dtype, c, x));
  PIJIT_RETURN_IF_ERROR(CheckOperand(op, "bias (beta)", beta, x.dtype, c, x));
  if (training && NumElements(x.shape) / std::max<int64_t>(1, x.shape[1]) < 2) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "batch_norm: training needs more than one value per channel, got input %s",
        ShapeToString(x.shape)));
  }
  return x;
}

absl::StatusOr<TensorMeta> InferBatchNormTrainBlocked(const TensorMeta& x, const TensorMeta& mean,
                                                      const TensorMeta& var,
                                                      const TensorMeta& gamma,
                                                      const TensorMeta& beta, int64_t block) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta plain, PlainMetaOfBlocked("batch_norm", "the input", x, block));
  PIJIT_RETURN_IF_ERROR(InferBatchNorm(plain, mean, var, gamma, beta, true).status());
  return x;
}

absl::StatusOr<Tensor> BatchNorm(const Tensor& x, const Tensor& mean, const Tensor& var,
                                 const Tensor& gamma, const Tensor& beta, double eps) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferBatchNorm(MetaOf(x), MetaOf(mean), MetaOf(var),
                                                         MetaOf(gamma), MetaOf(beta), false));
  if (IsHalfFloat(meta.dtype)) {  // in float32, rounded once at the end
    PIJIT_ASSIGN_OR_RETURN(Tensor wx, Cast(x, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor wm, Cast(mean, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor wv, Cast(var, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor wg, Cast(gamma, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor wb, Cast(beta, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor r, BatchNorm(wx, wm, wv, wg, wb, eps));
    return Cast(r, meta.dtype);
  }
  Tensor y = Tensor::Empty(meta.shape, meta.dtype);
  if (y.numel() == 0) return y;
  PIJIT_RETURN_IF_ERROR(RunBatchNorm(x.Contiguous(), mean.Contiguous(), var.Contiguous(),
                                     gamma.Contiguous(), beta.Contiguous(), eps, false, y));
  return y;
}

absl::StatusOr<Tensor> BatchNormTrain(const Tensor& x, const Tensor& mean, const Tensor& var,
                                      const Tensor& gamma, const Tensor& beta, double eps,
                                      double momentum) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferBatchNorm(MetaOf(x), MetaOf(mean), MetaOf(var),
                                                         MetaOf(gamma), MetaOf(beta), true));
  if (!mean.is_contiguous() || !var.is_contiguous()) {
    return absl::InvalidArgumentError(
        "batch_norm: running_mean and running_var must be contiguous to be updated in place");
  }
  if (IsHalfFloat(meta.dtype)) {
    // In float32; the updated running statistics are rounded back into their storage.
    PIJIT_ASSIGN_OR_RETURN(Tensor wx, Cast(x, DType::kFloat32));
    Tensor wm = Tensor::Empty(mean.shape(), DType::kFloat32);
    Tensor wv = Tensor::Empty(var.shape(), DType::kFloat32);
    CopyInto(mean, wm);
    CopyInto(var, wv);
    PIJIT_ASSIGN_OR_RETURN(Tensor wg, Cast(gamma, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor wb, Cast(beta, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor r, BatchNormTrain(wx, wm, wv, wg, wb, eps, momentum));
    CopyInto(wm, mean);
    CopyInto(wv, var);
    return Cast(r, meta.dtype);
  }
  return TrainAndUpdate(x, mean, var, gamma, beta, eps, momentum, meta, 0);
}

absl::StatusOr<Tensor> BatchNormTrainBlocked(const Tensor& x, const Tensor& mean,
                                             const Tensor& var, const Tensor& gamma,
                                             const Tensor& beta, double eps, double momentum,
                                             int64_t block, bool relu) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta,
                         InferBatchNormTrainBlocked(MetaOf(x), MetaOf(mean), MetaOf(var),
                                                    MetaOf(gamma), MetaOf(beta), block));
  if (!mean.is_contiguous() || !var.is_contiguous()) {
    return absl::InvalidArgumentError(
        "batch_norm: running_mean and running_var must be contiguous to be updated in place");
  }
  return TrainAndUpdate(x, mean, var, gamma, beta, eps, momentum, meta, block, relu);
}

absl::StatusOr<TensorMeta> InferLayerNorm(const TensorMeta& x,
                                          absl::Span<const int64_t> normalized_shape,
                                          const TensorMeta* gamma, const TensorMeta* beta) {
  constexpr const char* op = "layer_norm";
  if (!IsFloating(x.dtype)) {
    return absl::UnimplementedError(absl::StrFormat(
        "layer_norm: unsupported dtype %s, expected a floating dtype (Float16, BFloat16, Float32 or Float64)", DTypeName(x.dtype)));
  }
  const size_t k = normalized_shape.size();
  if (k == 0 || k > x.shape.size() ||
      !(absl::MakeConstSpan(x.shape).subspan(x.shape.size() - k) == normalized_shape)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "layer_norm: normalized_shape %s must be non-empty and equal the trailing axes of input %s",
        ShapeToString(normalized_shape), ShapeToString(x.shape)));
  }
  if (gamma) PIJIT_RETURN_IF_ERROR(CheckOperand(op, "weight (gamma)", *gamma, x.dtype, normalized_shape, x));
  if (beta) PIJIT_RETURN_IF_ERROR(CheckOperand(op, "bias (beta)", *beta, x.dtype, normalized_shape, x));
  return x;
}

absl::StatusOr<Tensor> LayerNorm(const Tensor& x, absl::Span<const int64_t> normalized_shape,
                                 const Tensor* gamma, const Tensor* beta, double eps) {
  std::optional<TensorMeta> gm, bm;
  if (gamma) gm = MetaOf(*gamma);
  if (beta) bm = MetaOf(*beta);
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferLayerNorm(MetaOf(x), normalized_shape,
                                                         gamma ? &*gm : nullptr, beta ? &*bm : nullptr));
  if (IsHalfFloat(meta.dtype)) {  // in float32, rounded once at the end
    PIJIT_ASSIGN_OR_RETURN(Tensor wx, Cast(x, DType::kFloat32));
    Tensor wg, wb;
    if (gamma) { PIJIT_ASSIGN_OR_RETURN(wg, Cast(*gamma, DType::kFloat32)); }
    if (beta) { PIJIT_ASSIGN_OR_RETURN(wb, Cast(*beta, DType::kFloat32)); }
    PIJIT_ASSIGN_OR_RETURN(Tensor r, LayerNorm(wx, normalized_shape, gamma ? &wg : nullptr,
                                               beta ? &wb : nullptr, eps));
    return Cast(r, meta.dtype);
  }
  Tensor y = Tensor::Empty(meta.shape, meta.dtype);
  const int64_t d = NumElements(normalized_shape);
  if (y.numel() == 0 || d == 0) {
    if (y.numel() != 0) CopyInto(x, y);  // nothing to normalise over (an empty trailing axis)
    return y;
  }
  const int64_t m = y.numel() / d;
  const Tensor cx = x.Contiguous();
  Tensor cg, cb;
  if (gamma) cg = gamma->Contiguous();
  if (beta) cb = beta->Contiguous();
  // float32 on an AVX-512 CPU: rows_avx512.h (each row read from memory once, large results
  // streamed out), rows in parallel.
  if (meta.dtype == DType::kFloat32 && avx512::Available()) {
    const bool stream = y.numel() * sizeof(float) >= (int64_t{8} << 20);
    const float* px = cx.data<float>();
    float* py = y.data<float>();
    const float* pg = gamma ? cg.data<float>() : nullptr;
    const float* pb = beta ? cb.data<float>() : nullptr;
    ParallelFor(m, std::max<int64_t>(1, (1 << 15) / d), [&](int64_t lo, int64_t hi) {
      avx512::LayerNormRows(px + lo * d, py + lo * d, pg, pb, hi - lo, d, eps, stream);
    });
    return y;
  }
  // Other float32 rows of 256 or more: oneDNN's primitive measured faster
  // (benchmarks/README.md); shorter rows: the loops below, which avoid oneDNN's per-call setup.
  if (meta.dtype == DType::kFloat32 && d >= 256) {
    const LnPrimitive& p = GetLayerNorm({m, d, gamma != nullptr, beta != nullptr, EpsBits(eps)}, eps);
    using dnnl::memory;
    auto& e = DnnlEngine();
    std::vector<float> mean(m), var(m);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(p.data, e, cx.raw_data())},
                                         {DNNL_ARG_DST, memory(p.data, e, y.raw_data())},
                                         {DNNL_ARG_MEAN, memory(p.stat, e, mean.data())},
                                         {DNNL_ARG_VARIANCE, memory(p.stat, e, var.data())}};
    if (gamma) args.emplace(DNNL_ARG_SCALE, memory(p.param, e, cg.raw_data()));
    if (beta) args.emplace(DNNL_ARG_SHIFT, memory(p.param, e, cb.raw_data()));
    p.prim.execute(DnnlStream(), args);
    DnnlStream().wait();
    return y;
  }
  DispatchDType(meta.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      LayerNormRows<T>(cx.data<T>(), y.data<T>(), gamma ? cg.data<T>() : nullptr,
                       beta ? cb.data<T>() : nullptr, m, d, eps);
    }
  });
  return y;
}

}  // namespace pijit
