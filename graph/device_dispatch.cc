// Running one node on its inputs' device (graph/backend.h RunNodeWhereInputsAre).
#include "absl/strings/str_format.h"
#include "graph/backend.h"
#include "kernels/errors.h"

namespace pijit::graph {

const Backend* BackendOfDevice(Device device) {
  return device == Device::kCPU ? &CpuBackend() : CudaBackend();
}

Device DeviceOfInputs(absl::Span<const Tensor* const> inputs) {
  for (const Tensor* t : inputs) {
    if (t != nullptr && t->defined() && t->device() != Device::kCPU) return t->device();
  }
  return Device::kCPU;
}

absl::StatusOr<Tensor> MoveToDevice(const Tensor& t, Device device) {
  if (t.device() == device) return t;
  const Device other = device == Device::kCPU ? t.device() : device;
  const Backend* backend = BackendOfDevice(other);
  if (backend == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "this build of pijit has no %s backend (it was built without CUDA)", DeviceName(other)));
  }
  if (device == Device::kCPU) return backend->Download(t);
  if (t.device() != Device::kCPU) {
    PIJIT_ASSIGN_OR_RETURN(Tensor host, BackendOfDevice(t.device())->Download(t));
    return backend->Upload(host);
  }
  return backend->Upload(t);
}

absl::Status CopyAcross(const Tensor& src, const Tensor& dst) {
  if (dst.device() == Device::kCPU) {
    PIJIT_ASSIGN_OR_RETURN(const Tensor host, MoveToDevice(src, Device::kCPU));
    CopyInto(host, dst);
    return absl::OkStatus();
  }
  const Backend* backend = BackendOfDevice(dst.device());
  if (backend == nullptr) return absl::FailedPreconditionError("a tensor is on a device this build cannot use");
  return backend->CopyInto(src, dst);  // from the host or the device
}

absl::StatusOr<Tensor> CastWhereItIs(const Tensor& t, DType dtype) {
  Node cast;
  cast.op = Op::kCast;
  cast.dtype = dtype;
  const Tensor* operand[] = {&t};
  return RunNodeWhereInputsAre(cast, operand);
}

absl::StatusOr<Tensor> RunNodeWhereInputsAre(const Node& n, absl::Span<const Tensor* const> inputs,
                                             bool move_host_inputs) {
  const Device device = DeviceOfInputs(inputs);
  if (device == Device::kCPU) return RunNode(n, inputs);
  const Backend* backend = BackendOfDevice(device);
  if (backend == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: an input is on the %s, which this build of pijit cannot run", OpName(n.op), DeviceName(device)));
  }
  absl::InlinedVector<Tensor, 4> moved(inputs.size());
  absl::InlinedVector<const Tensor*, 4> on_device(inputs.begin(), inputs.end());
  absl::InlinedVector<const TensorMeta*, 4> metas;
  absl::InlinedVector<TensorMeta, 4> meta_values(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = *inputs[i];
    if (t.device() != device) {
      if (t.ndim() != 0 && !move_host_inputs) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: the inputs are on different devices: one on the %s, input %d (shape %s) on the %s; "
            "move one with Tensor.move_to(\"%s\") first", OpName(n.op), DeviceName(device), i,
            ShapeToString(t.shape()), DeviceName(t.device()), DeviceName(device)));
      }
      PIJIT_ASSIGN_OR_RETURN(moved[i], backend->Upload(t));  // a scalar operand
      on_device[i] = &moved[i];
    }
    meta_values[i] = MetaOf(*on_device[i]);
  }
  for (const TensorMeta& m : meta_values) metas.push_back(&m);
  Node node = n;
  PIJIT_ASSIGN_OR_RETURN(node.meta, InferNode(n, metas));
  if (absl::Status s = backend->Supports(node, metas); !s.ok()) {
    return absl::Status(s.code(), absl::StrFormat("%s; move the inputs with Tensor.move_to(\"CPU\") to run it there",
                                                  s.message()));
  }
  return backend->RunNode(node, on_device, /*lowered=*/nullptr);
}

}  // namespace pijit::graph
