// The CUDA backend's data-movement and creation nodes (graph/backend_cuda.cc runs the
// arithmetic): assign, index_grad, concat and stack, full and full_like, one_hot. Each is
// one or more device copies into views of its result, built from the CPU's own view
// functions (which compute shapes and strides only).
#include "graph/backend_cuda_data.h"

#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/device_ops.h"
#include "kernels/errors.h"

namespace pijit::graph {
namespace {

// A host scalar attribute (a fill value) as a double.
absl::StatusOr<double> ScalarOf(const Tensor& v, const char* op) {
  if (!v.defined() || v.numel() != 1 || v.device() != Device::kCPU) {
    return absl::UnimplementedError(absl::StrFormat(
        "the CUDA backend has no kernel for %s with a non-scalar fill value yet", op));
  }
  PIJIT_ASSIGN_OR_RETURN(const Tensor d, pijit::Cast(v, DType::kFloat64));
  return *d.data<double>();
}

absl::StatusOr<Tensor> AssignOnDevice(const Tensor& variable, const Tensor& value) {
  if (!variable.is_contiguous()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "assign: the variable (shape %s) must be contiguous to be written in place",
        ShapeToString(variable.shape())));
  }
  if (value.storage() == variable.storage()) {  // through a copy: the value reads what it writes
    PIJIT_ASSIGN_OR_RETURN(Tensor tmp, cuda::EmptyOnDevice(variable.shape(), variable.dtype()));
    PIJIT_RETURN_IF_ERROR(cuda::DeviceCopyInto(value, tmp));
    PIJIT_RETURN_IF_ERROR(cuda::DeviceCopyInto(tmp, variable));
  } else {
    PIJIT_RETURN_IF_ERROR(cuda::DeviceCopyInto(value, variable));
  }
  return variable;
}

absl::StatusOr<Tensor> IndexGradOnDevice(const Node& n, const Tensor& grad) {
  if (n.attr < 0 || n.attr > static_cast<int64_t>(n.ints.size())) {
    return absl::InternalError("index_grad: rank attribute out of range");
  }
  absl::Span<const int64_t> all(n.ints);
  PIJIT_ASSIGN_OR_RETURN(Tensor out, cuda::DeviceFill(n.meta, 0));
  PIJIT_ASSIGN_OR_RETURN(Tensor view, pijit::Index(out, all.subspan(n.attr)));
  PIJIT_RETURN_IF_ERROR(cuda::DeviceCopyInto(grad, view));
  return out;
}

absl::StatusOr<Tensor> ConcatOnDevice(const Node& n, absl::Span<const Tensor* const> in) {
  const bool stack = n.op == Op::kStack;
  PIJIT_ASSIGN_OR_RETURN(Tensor out, cuda::EmptyOnDevice(n.meta.shape, n.meta.dtype));
  const int64_t nd = static_cast<int64_t>(n.meta.shape.size());
  const int64_t ax = n.attr < 0 ? n.attr + nd : n.attr;
  if (ax < 0 || ax >= nd) return absl::InvalidArgumentError("concat: axis out of range");
  int64_t at = 0;
  for (const Tensor* t : in) {
    Shape shape = out.shape(), strides = out.strides();
    if (stack) {
      shape.erase(shape.begin() + ax);
      strides.erase(strides.begin() + ax);
    } else {
      shape[ax] = t->shape()[ax];
    }
    const Tensor slot = Tensor::View(out.storage(), out.dtype(), shape, strides,
                                     at * out.strides()[ax]);
    if (slot.numel() > 0) PIJIT_RETURN_IF_ERROR(cuda::DeviceCopyInto(*t, slot));
    at += stack ? 1 : t->shape()[ax];
  }
  return out;
}

// 0, 1, ..., n-1 as int64 on the device, uploaded once per n and kept: a copy from the host
// could not be recorded into a CUDA graph (graph/device_replay.h), a kept tensor can.
absl::StatusOr<Tensor> DeviceRange(int64_t n) {
  static std::mutex mu;
  static auto* kept = new absl::flat_hash_map<int64_t, Tensor>();  // for the process
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = kept->find(n); it != kept->end()) return it->second;
  Tensor range = Tensor::Empty({n}, DType::kInt64);
  for (int64_t i = 0; i < n; ++i) range.data<int64_t>()[i] = i;
  PIJIT_ASSIGN_OR_RETURN(Tensor on_device, cuda::ToDevice(range));
  kept->emplace(n, on_device);
  return on_device;
}

// one_hot as where(indices == arange(depth), on, off), the two broadcast along the new axis.
absl::StatusOr<Tensor> OneHotOnDevice(const Node& n, const Tensor& indices) {
  if (n.ints.size() != 2 || n.value.dtype() != DType::kFloat64 || n.value.numel() < 2) {
    return absl::InternalError("one_hot: expects ints={depth, axis} and value={on, off}");
  }
  const int64_t depth = n.ints[0], nd = static_cast<int64_t>(n.meta.shape.size());
  const int64_t ax = n.ints[1] < 0 ? n.ints[1] + nd : n.ints[1];
  if (ax < 0 || ax >= nd) return absl::InvalidArgumentError("one_hot: axis out of range");
  PIJIT_ASSIGN_OR_RETURN(Tensor range_d, DeviceRange(depth));
  Shape range_shape(nd, 1), range_strides(nd, 0);
  range_shape[ax] = depth;
  range_strides[ax] = 1;
  const Tensor range_view = Tensor::View(range_d.storage(), DType::kInt64, range_shape, range_strides, 0);
  PIJIT_ASSIGN_OR_RETURN(Tensor idx_view, pijit::Unsqueeze(indices, ax));
  PIJIT_ASSIGN_OR_RETURN(Tensor mask, cuda::DeviceBinary(BinaryOp::kEqual, idx_view, range_view,
                                                         {DType::kBool, n.meta.shape}));
  const double* on_off = n.value.data<double>();
  PIJIT_ASSIGN_OR_RETURN(Tensor on, cuda::DeviceFill({n.meta.dtype, {}}, on_off[0]));
  PIJIT_ASSIGN_OR_RETURN(Tensor off, cuda::DeviceFill({n.meta.dtype, {}}, on_off[1]));
  return cuda::DeviceWhere(mask, on, off, n.meta);
}

}  // namespace

bool IsCudaDataOp(Op op) {
  switch (op) {
    case Op::kAssign: case Op::kIndexGrad: case Op::kConcat: case Op::kStack: case Op::kFull:
    case Op::kFullLike: case Op::kOneHot:
      return true;
    default:
      return false;
  }
}

absl::StatusOr<Tensor> RunCudaDataOp(const Node& n, absl::Span<const Tensor* const> in) {
  switch (n.op) {
    case Op::kAssign: return AssignOnDevice(*in[0], *in[1]);
    case Op::kIndexGrad: return IndexGradOnDevice(n, *in[0]);
    case Op::kConcat: case Op::kStack: return ConcatOnDevice(n, in);
    case Op::kFull: case Op::kFullLike: {
      PIJIT_ASSIGN_OR_RETURN(double v, ScalarOf(n.value, OpName(n.op)));
      return cuda::DeviceFill(n.meta, v);
    }
    case Op::kOneHot: return OneHotOnDevice(n, *in[0]);
    default: return absl::InternalError("not a data op");
  }
}

}  // namespace pijit::graph
