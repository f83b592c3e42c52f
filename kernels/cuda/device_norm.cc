// Batch and layer normalisation on the GPU (kernels/cuda/device_ops.h), composed of the
// reduction and elementwise kernels: statistics by DeviceReduce, the normalisation as one
// elementwise kernel reading the per-channel (or per-row) values broadcast.
#include "absl/strings/str_format.h"
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/device_ops.h"
#include "kernels/errors.h"

namespace pijit::cuda {
namespace {

absl::Status CheckFloat(const Tensor& x, const char* op) {
  if (x.dtype() != DType::kFloat32 && x.dtype() != DType::kFloat64) {
    return absl::UnimplementedError(absl::StrFormat(
        "the CUDA backend runs %s on float32 and float64, not %s", op, DTypeName(x.dtype())));
  }
  if (x.ndim() < 2) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: expected at least 2 axes", op));
  }
  return absl::OkStatus();
}

// A per-channel vector [C] viewed over x's shape: broadcast along every axis but 1.
Tensor AlongChannels(const Tensor& v, const Tensor& x) {
  Shape strides(x.ndim(), 0);
  strides[1] = v.strides()[0];
  return Tensor::View(v.storage(), v.dtype(), x.shape(), strides, v.offset());
}

Shape AllButChannels(const Tensor& x) {
  Shape axes;
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (d != 1) axes.push_back(d);
  return axes;
}

// (x - mean) / sqrt(var + eps) * gamma + beta, all of x's shape.
absl::StatusOr<Tensor> Normalize(const Tensor& x, const Tensor& mean, const Tensor& var,
                                 const Tensor* gamma, const Tensor* beta, double eps) {
  std::vector<const Tensor*> in = {&x, &mean, &var};
  std::string body = absl::StrFormat("    r = (T(x0) - T(x1)) / pj::sqrt(T(x2) + T(%.17g))", eps);
  if (gamma) {
    in.push_back(gamma);
    body += absl::StrFormat(" * T(x%d)", in.size() - 1);
  }
  if (beta) {
    in.push_back(beta);
    body += absl::StrFormat(" + T(x%d)", in.size() - 1);
  }
  body += ";";
  return DeviceElementwise(body, x.dtype(), in, MetaOf(x));
}

// The biased variance of x about `mean` (x's shape, broadcast) over `axes`, and its meta.
absl::StatusOr<Tensor> Variance(const Tensor& x, const Tensor& mean, absl::Span<const int64_t> axes,
                                const TensorMeta& out) {
  const Tensor* in[] = {&x, &mean};
  PIJIT_ASSIGN_OR_RETURN(Tensor sq, DeviceElementwise("    r = (T(x0) - T(x1)) * (T(x0) - T(x1));",
                                                      x.dtype(), in, MetaOf(x)));
  return DeviceReduce(ReduceOp::kMean, sq, axes, out);
}

}  // namespace

absl::StatusOr<Tensor> DeviceBatchNorm(const Tensor& x, const Tensor& mean, const Tensor& var,
                                       const Tensor& gamma, const Tensor& beta, double eps) {
  PIJIT_RETURN_IF_ERROR(CheckFloat(x, "batch_norm"));
  const Tensor m = AlongChannels(mean, x), v = AlongChannels(var, x);
  const Tensor g = AlongChannels(gamma, x), b = AlongChannels(beta, x);
  return Normalize(x, m, v, &g, &b, eps);
}

absl::StatusOr<Tensor> DeviceBatchNormTrain(const Tensor& x, const Tensor& mean, const Tensor& var,
                                            const Tensor& gamma, const Tensor& beta, double eps,
                                            double momentum) {
  PIJIT_RETURN_IF_ERROR(CheckFloat(x, "batch_norm"));
  if (!mean.is_contiguous() || !var.is_contiguous()) {
    return absl::InvalidArgumentError(
        "batch_norm: running_mean and running_var must be contiguous to be updated in place");
  }
  const Shape axes = AllButChannels(x);
  const TensorMeta per_channel{x.dtype(), {x.shape()[1]}};
  PIJIT_ASSIGN_OR_RETURN(Tensor bmean, DeviceReduce(ReduceOp::kMean, x, axes, per_channel));
  const Tensor bm = AlongChannels(bmean, x);
  PIJIT_ASSIGN_OR_RETURN(Tensor bvar, Variance(x, bm, axes, per_channel));
  const Tensor bv = AlongChannels(bvar, x), g = AlongChannels(gamma, x), b = AlongChannels(beta, x);
  PIJIT_ASSIGN_OR_RETURN(Tensor y, Normalize(x, bm, bv, &g, &b, eps));
  // The running statistics, in place: running = (1 - momentum) running + momentum batch, the
  // variance's batch value unbiased.
  const double count = static_cast<double>(x.numel() / std::max<int64_t>(1, x.shape()[1]));
  const double unbias = count / (count - 1);
  const Tensor* m_in[] = {&mean, &bmean};
  PIJIT_ASSIGN_OR_RETURN(Tensor new_mean, DeviceElementwise(absl::StrFormat(
      "    r = T(%.17g) * T(x0) + T(%.17g) * T(x1);", 1 - momentum, momentum), x.dtype(), m_in, per_channel));
  const Tensor* v_in[] = {&var, &bvar};
  PIJIT_ASSIGN_OR_RETURN(Tensor new_var, DeviceElementwise(absl::StrFormat(
      "    r = T(%.17g) * T(x0) + T(%.17g) * T(x1);", 1 - momentum, momentum * unbias), x.dtype(), v_in,
      per_channel));
  PIJIT_RETURN_IF_ERROR(DeviceCopyInto(new_mean, mean));
  PIJIT_RETURN_IF_ERROR(DeviceCopyInto(new_var, var));
  return y;
}

absl::StatusOr<Tensor> DeviceLayerNorm(const Tensor& x, absl::Span<const int64_t> normalized_shape,
                                       const Tensor* gamma, const Tensor* beta, double eps) {
  if (x.dtype() != DType::kFloat32 && x.dtype() != DType::kFloat64) {
    return absl::UnimplementedError(absl::StrFormat(
        "the CUDA backend runs layer_norm on float32 and float64, not %s", DTypeName(x.dtype())));
  }
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  if (k == 0 || k > x.ndim()) return absl::InvalidArgumentError("layer_norm: bad normalized_shape");
  Shape axes, kept = x.shape();
  for (int64_t d = x.ndim() - k; d < x.ndim(); ++d) {
    axes.push_back(d);
    kept[d] = 1;
  }
  const TensorMeta stats{x.dtype(), kept};
  PIJIT_ASSIGN_OR_RETURN(Tensor mean, DeviceReduce(ReduceOp::kMean, x, axes, stats));
  PIJIT_ASSIGN_OR_RETURN(Tensor var, Variance(x, mean, axes, stats));
  return Normalize(x, mean, var, gamma, beta, eps);
}

// Reductions and elementwise kernels as DeviceLayerNorm composes them: the statistics, then
// mean(dx̂) and mean(dx̂ (x - μ)), then dx = r dx̂ - r³ mean(dx̂ (x - μ)) (x - μ) - r mean(dx̂).
absl::StatusOr<Tensor> DeviceLayerNormGrad(const Tensor& x, const Tensor& dy,
                                           absl::Span<const int64_t> normalized_shape,
                                           const Tensor* gamma, double eps) {
  if (x.dtype() != DType::kFloat32 && x.dtype() != DType::kFloat64) {
    return absl::UnimplementedError(absl::StrFormat(
        "the CUDA backend runs layer_norm_grad on float32 and float64, not %s", DTypeName(x.dtype())));
  }
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  if (k == 0 || k > x.ndim() || dy.shape() != x.shape()) {
    return absl::InvalidArgumentError("layer_norm_grad: bad normalized_shape or gradient shape");
  }
  Shape axes, kept = x.shape();
  for (int64_t d = x.ndim() - k; d < x.ndim(); ++d) {
    axes.push_back(d);
    kept[d] = 1;
  }
  const TensorMeta stats{x.dtype(), kept};
  PIJIT_ASSIGN_OR_RETURN(Tensor mean, DeviceReduce(ReduceOp::kMean, x, axes, stats));
  PIJIT_ASSIGN_OR_RETURN(Tensor var, Variance(x, mean, axes, stats));
  Tensor dh = dy;
  if (gamma) {
    const Tensor* in[] = {&dy, gamma};
    PIJIT_ASSIGN_OR_RETURN(dh, DeviceElementwise("    r = T(x0) * T(x1);", x.dtype(), in, MetaOf(x)));
  }
  const Tensor* centred_in[] = {&dh, &x, &mean};
  PIJIT_ASSIGN_OR_RETURN(Tensor centred, DeviceElementwise("    r = T(x0) * (T(x1) - T(x2));",
                                                           x.dtype(), centred_in, MetaOf(x)));
  PIJIT_ASSIGN_OR_RETURN(Tensor m1, DeviceReduce(ReduceOp::kMean, dh, axes, stats));
  PIJIT_ASSIGN_OR_RETURN(Tensor m2, DeviceReduce(ReduceOp::kMean, centred, axes, stats));
  const Tensor* in[] = {&dh, &x, &var, &mean, &m2, &m1};
  return DeviceElementwise(absl::StrFormat(
      "    const T rs = T(1) / pj::sqrt(T(x2) + T(%.17g));\n"
      "    r = rs * T(x0) - rs * rs * rs * T(x4) * (T(x1) - T(x3)) - rs * T(x5);", eps),
      x.dtype(), in, MetaOf(x));
}

// layer_norm over the rows of x viewed as (N, groups, rest), then the per-channel scale and
// shift as one elementwise kernel.
absl::StatusOr<Tensor> DeviceGroupNorm(const Tensor& x, int64_t groups, const Tensor& gamma,
                                       const Tensor& beta, double eps) {
  PIJIT_RETURN_IF_ERROR(CheckFloat(x, "group_norm"));
  if (groups < 1 || x.shape()[1] % groups != 0) {
    return absl::InvalidArgumentError("group_norm: the channels must divide into the groups");
  }
  PIJIT_ASSIGN_OR_RETURN(Tensor cx, DeviceContiguous(x));
  const int64_t rest = cx.numel() / std::max<int64_t>(1, x.shape()[0] * groups);
  const Shape rows{x.shape()[0], groups, rest};
  const Tensor xr = Tensor::View(cx.storage(), cx.dtype(), rows, ContiguousStrides(rows), cx.offset());
  const int64_t ns[] = {rest};
  PIJIT_ASSIGN_OR_RETURN(Tensor yr, DeviceLayerNorm(xr, ns, nullptr, nullptr, eps));
  const Tensor y = Tensor::View(yr.storage(), yr.dtype(), x.shape(), ContiguousStrides(x.shape()), yr.offset());
  const Tensor g = AlongChannels(gamma, y), b = AlongChannels(beta, y);
  const Tensor* in[] = {&y, &g, &b};
  return DeviceElementwise("    r = T(x0) * T(x1) + T(x2);", x.dtype(), in, MetaOf(y));
}

}  // namespace pijit::cuda
