// The CUDA backend (graph/backend.h): nodes run as kernels on the GPU (kernels/cuda/).
//
// What it runs: fused elementwise programs (one NVRTC kernel each), the elementwise ops,
// casts and where, sum/mean/prod/max/min reductions, softmax and log-softmax, matrix products
// (cuBLAS) and the view ops (reshape, transpose, broadcast, squeeze, unsqueeze, flatten: no
// kernel, a new view of the same device memory). Any other node fails with Unimplemented
// naming the op, so a graph the backend cannot run is reported, never run on the CPU's
// kernels over device memory. Graphs compiled for it skip the CPU's epilogue passes
// (PipelineOptions::host_kernels) and run without the host memory plan; their constants
// are copied to the device once, at compile time.
#include "absl/strings/str_format.h"
#include "graph/backend.h"
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/device_ops.h"
#include "kernels/errors.h"

namespace pijit::graph {
namespace {

bool IsViewOp(Op op) {
  switch (op) {
    case Op::kReshape: case Op::kTranspose: case Op::kBroadcastTo: case Op::kSqueeze:
    case Op::kUnsqueeze: case Op::kFlatten:
      return true;
    default:
      return false;
  }
}

// The CPU's view ops compute only shapes and strides, except that reshape and flatten copy a
// strided input: give them a contiguous one, and check that the result is a view.
absl::StatusOr<Tensor> RunView(const Node& n, const Tensor& in) {
  Tensor src = in;
  if ((n.op == Op::kReshape || n.op == Op::kFlatten) && !in.is_contiguous()) {
    PIJIT_ASSIGN_OR_RETURN(src, cuda::DeviceContiguous(in));
  }
  const Tensor* args[] = {&src};
  PIJIT_ASSIGN_OR_RETURN(Tensor out, graph::RunNode(n, args));
  if (out.storage() != src.storage()) {
    return absl::InternalError(absl::StrFormat("%s on the GPU made a copy on the host", OpName(n.op)));
  }
  return out;
}

class CudaBackendImpl final : public Backend {
 public:
  const char* name() const override { return "cuda"; }
  Device device() const override { return Device::kCUDA; }

  absl::StatusOr<Tensor> RunNode(const Node& n, absl::Span<const Tensor* const> in) const override {
    for (const Tensor* t : in) {
      if (t->device() != Device::kCUDA) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: an input is on the %s, the graph runs on the GPU", OpName(n.op),
            DeviceName(t->device())));
      }
    }
    BinaryOp bop;
    UnaryOp uop;
    ReduceOp rop;
    if (n.op == Op::kFused && n.fused) return cuda::DeviceFused(n.fused->program(), in, n.meta);
    if (AsBinary(n.op, &bop)) return cuda::DeviceBinary(bop, *in[0], *in[1], n.meta);
    if (AsUnary(n.op, &uop)) return cuda::DeviceUnary(uop, *in[0], n.meta);
    if (AsReduce(n.op, &rop)) return cuda::DeviceReduce(rop, *in[0], n.ints, n.meta);
    if (IsViewOp(n.op)) return RunView(n, *in[0]);
    switch (n.op) {
      case Op::kCast: return cuda::DeviceCast(*in[0], n.meta.dtype);
      case Op::kWhere: return cuda::DeviceWhere(*in[0], *in[1], *in[2], n.meta);
      case Op::kSoftmax: return cuda::DeviceSoftmax(*in[0], n.attr, false);
      case Op::kLogSoftmax: return cuda::DeviceSoftmax(*in[0], n.attr, true);
      case Op::kMatMul: return cuda::DeviceMatMul(*in[0], *in[1], n.meta);
      default:
        return absl::UnimplementedError(absl::StrFormat(
            "the CUDA backend has no kernel for %s yet", OpName(n.op)));
    }
  }

  absl::StatusOr<Tensor> Upload(const Tensor& t) const override {
    if (t.device() == Device::kCUDA) return t;
    return cuda::ToDevice(t);
  }

  absl::StatusOr<Tensor> Copy(const Tensor& t) const override {
    // A contiguous input would come back as itself: copy through a cast to its own dtype.
    return cuda::DeviceCast(t, t.dtype());
  }
};

}  // namespace

const Backend* CudaBackend() {
  static const CudaBackendImpl* backend = new CudaBackendImpl();  // outlives exit
  return backend;
}

}  // namespace pijit::graph
