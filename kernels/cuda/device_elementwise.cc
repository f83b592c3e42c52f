// Elementwise kernels on the GPU (kernels/cuda/device_ops.h): render, compile once, launch.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

#include "absl/strings/str_format.h"
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/device_ops.h"
#include "kernels/cuda/kernel_source.h"
#include "kernels/cuda/module_cache.h"
#include "kernels/errors.h"

namespace pijit::cuda {
namespace {

absl::Status CheckOnDevice(const Tensor& t, const char* what) {
  if (t.device() == Device::kCUDA) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s: an input is on the %s, the kernel runs on the GPU (move it with ToDevice first)",
      what, DeviceName(t.device())));
}

// How input `t` is read for an output of `shape`, and its strides broadcast to that shape.
absl::StatusOr<Access> AccessOf(const Tensor& t, const Shape& shape, long long* strides) {
  if (t.numel() == 1) return Access::kScalar;
  if (t.shape() == shape && t.is_contiguous()) return Access::kContiguous;
  const int64_t nd = static_cast<int64_t>(shape.size()), off = nd - t.ndim();
  if (off < 0 || nd > kMaxDims) {
    return absl::UnimplementedError(absl::StrFormat(
        "the CUDA backend reads broadcast or strided inputs of at most %d axes", kMaxDims));
  }
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t k = d - off;
    strides[d] = (k < 0 || t.shape()[k] == 1) ? 0 : t.strides()[k];
  }
  return Access::kStrided;
}

// Runs `spec` over `inputs` broadcast to `out_meta`, into a fresh tensor, or into `into` (a
// tensor of that meta, any strides) when given.
absl::StatusOr<Tensor> Launch(ElementwiseSpec spec, absl::Span<const Tensor* const> inputs,
                              const TensorMeta& out_meta, const char* what,
                              const Tensor* into = nullptr) {
  if (inputs.size() > static_cast<size_t>(kMaxInputs) || out_meta.shape.size() > static_cast<size_t>(kMaxDims)) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: the CUDA backend runs elementwise kernels of at most %d inputs and %d axes", what,
        kMaxInputs, kMaxDims));
  }
  PIJIT_ASSIGN_OR_RETURN(const CudaApi* api, CudaApi::Get());
  PIJIT_RETURN_IF_ERROR(DeviceType(out_meta.dtype).status());
  ElementwiseArgs args{};
  const Shape& shape = out_meta.shape;
  args.n = NumElements(shape);
  args.ndim = static_cast<int>(shape.size());
  args.shape[0] = 1;  // a 0-d output decomposes over one axis of size 1
  for (size_t d = 0; d < shape.size() && d < static_cast<size_t>(kMaxDims); ++d) args.shape[d] = shape[d];
  spec.input_dtypes.clear();
  spec.access.clear();
  spec.ndim = std::max<int>(1, args.ndim);
  spec.wide_index = args.n >= (int64_t{1} << 31) || (into && NeedsWideIndex(*into));
  for (size_t k = 0; k < inputs.size(); ++k) {
    PIJIT_RETURN_IF_ERROR(CheckOnDevice(*inputs[k], what));
    PIJIT_RETURN_IF_ERROR(DeviceType(inputs[k]->dtype()).status());
    PIJIT_ASSIGN_OR_RETURN(const Access access, AccessOf(*inputs[k], shape, args.strides[k]));
    spec.input_dtypes.push_back(inputs[k]->dtype());
    spec.wide_index |= NeedsWideIndex(*inputs[k]);
    spec.access.push_back(access);
    args.in[k] = inputs[k]->raw_data();
  }
  spec.out_dtype = out_meta.dtype;
  Tensor out;
  if (into) {
    PIJIT_RETURN_IF_ERROR(CheckOnDevice(*into, what));
    out = *into;
    spec.strided_out = !into->is_contiguous();
    for (size_t d = 0; d < shape.size() && d < static_cast<size_t>(kMaxDims); ++d) {
      args.out_strides[d] = into->strides()[d];
    }
  } else {
    PIJIT_ASSIGN_OR_RETURN(out, EmptyOnDevice(shape, out_meta.dtype));
  }
  if (args.n == 0) return out;
  args.out = out.raw_data();
  // Everything the source depends on, short: the body and one letter per input and dtype.
  std::string key = absl::StrCat(spec.compute_type, "|", static_cast<int>(spec.out_dtype), "|",
                                 spec.strided_out ? "s|" : "c|", spec.ndim, spec.wide_index ? "w|" : "n|");
  for (size_t k = 0; k < spec.access.size(); ++k) {
    key += static_cast<char>(spec.access[k]);
    key += static_cast<char>('A' + static_cast<int>(spec.input_dtypes[k]));
  }
  key += spec.body;
  PIJIT_ASSIGN_OR_RETURN(
      CUfunction fn,
      CompiledFunction(key, [&spec]() -> absl::StatusOr<std::string> { return RenderElementwise(spec); },
                       "pijit_elementwise"));
  constexpr long long kThreads = 256, kMaxBlocks = 65536;
  const unsigned blocks = static_cast<unsigned>(std::min((args.n + kThreads - 1) / kThreads, kMaxBlocks));
  void* params[] = {&args};
  PIJIT_RETURN_IF_ERROR(DriverStatus(
      *api, api->cuLaunchKernel(fn, blocks, 1, 1, kThreads, 1, 1, 0, api->stream, params, nullptr),
      "cuLaunchKernel"));
  return out;
}

ElementwiseSpec SpecOf(DType compute, std::string body) {
  ElementwiseSpec spec;
  spec.compute_type = *DeviceType(compute);
  spec.body = std::move(body);
  return spec;
}

}  // namespace

absl::StatusOr<Tensor> DeviceContiguous(const Tensor& t) {
  if (t.is_contiguous()) return t;
  PIJIT_ASSIGN_OR_RETURN(std::string type, DeviceType(t.dtype()));
  const Tensor* in[] = {&t};
  return Launch(SpecOf(t.dtype(), "    r = x0;"), in, MetaOf(t), "contiguous");
}

absl::StatusOr<Tensor> DeviceCast(const Tensor& t, DType to) {
  PIJIT_RETURN_IF_ERROR(DeviceType(to).status());
  const Tensor* in[] = {&t};
  // Through the target type: float -> int truncates, anything -> bool tests for nonzero.
  const char* body = to == DType::kBool ? "    r = (x0 != 0);" : "    r = T(x0);";
  return Launch(SpecOf(to, body), in, {to, t.shape()}, "cast");
}

absl::StatusOr<Tensor> DeviceBinary(BinaryOp op, const Tensor& a, const Tensor& b,
                                    const TensorMeta& out) {
  // Arithmetic computes in the result's dtype; comparisons in the operands' promoted one.
  const DType compute = out.dtype == DType::kBool ? PromoteTypes(a.dtype(), b.dtype()) : out.dtype;
  PIJIT_RETURN_IF_ERROR(DeviceType(compute).status());
  PIJIT_ASSIGN_OR_RETURN(std::string body, BinaryBody(op, IsFloating(compute)));
  const Tensor* in[] = {&a, &b};
  return Launch(SpecOf(compute, std::move(body)), in, out, BinaryOpName(op));
}

absl::StatusOr<Tensor> DeviceUnary(UnaryOp op, const Tensor& a, const TensorMeta& out) {
  const DType compute = out.dtype == DType::kBool ? a.dtype() : out.dtype;
  PIJIT_RETURN_IF_ERROR(DeviceType(compute).status());
  PIJIT_ASSIGN_OR_RETURN(std::string body, UnaryBody(op, IsFloating(compute)));
  const Tensor* in[] = {&a};
  return Launch(SpecOf(compute, std::move(body)), in, out, UnaryOpName(op));
}

absl::StatusOr<Tensor> DeviceWhere(const Tensor& cond, const Tensor& x, const Tensor& y,
                                   const TensorMeta& out) {
  PIJIT_RETURN_IF_ERROR(DeviceType(out.dtype).status());
  const Tensor* in[] = {&cond, &x, &y};
  return Launch(SpecOf(out.dtype, "    r = (x0 != 0) ? T(x1) : T(x2);"), in, out, "where");
}

absl::Status DeviceCopyInto(const Tensor& src, const Tensor& dst) {
  PIJIT_RETURN_IF_ERROR(DeviceType(dst.dtype()).status());
  const Tensor* in[] = {&src};
  const char* body = dst.dtype() == DType::kBool ? "    r = (x0 != 0);" : "    r = T(x0);";
  return Launch(SpecOf(dst.dtype(), body), in, MetaOf(dst), "copy", &dst).status();
}

absl::StatusOr<Tensor> DeviceFill(const TensorMeta& out, double value) {
  PIJIT_ASSIGN_OR_RETURN(std::string type, DeviceType(out.dtype));
  std::string literal;
  if (std::isnan(value) || std::isinf(value)) {
    if (!IsFloating(out.dtype)) return absl::InvalidArgumentError("fill: a non-finite integer");
    literal = std::isnan(value) ? "(T(0) / T(0))" : (value > 0 ? "(T(1) / T(0))" : "(-T(1) / T(0))");
  } else {
    literal = absl::StrFormat("T(%.17g)", value);
  }
  return Launch(SpecOf(out.dtype, absl::StrCat("    r = ", literal, ";")), {}, out, "fill");
}

absl::StatusOr<Tensor> DeviceElementwise(const std::string& body, DType compute,
                                         absl::Span<const Tensor* const> inputs,
                                         const TensorMeta& out) {
  PIJIT_RETURN_IF_ERROR(DeviceType(compute).status());
  return Launch(SpecOf(compute, body), inputs, out, "elementwise");
}

absl::StatusOr<Tensor> DeviceFused(const FusedProgram& program,
                                   absl::Span<const Tensor* const> inputs, const TensorMeta& out) {
  PIJIT_ASSIGN_OR_RETURN(std::string body, FusedProgramBody(program));
  return Launch(SpecOf(program.dtype, std::move(body)), inputs, out, "fused");
}

}  // namespace pijit::cuda
