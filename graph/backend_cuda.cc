// The CUDA backend (graph/backend.h): nodes run as kernels on the GPU (kernels/cuda/).
//
// What it runs: fused elementwise programs (one NVRTC kernel each), the elementwise ops,
// casts and where, sum/mean/prod/max/min reductions, softmax and log-softmax, matrix products
// (cuBLAS), conv2d (cuDNN, else direct kernels) and max/avg pooling with their gradients,
// assign, index_grad, concat, stack, full, full_like and one_hot (graph/backend_cuda_data.cc),
// batch and layer normalisation (reductions and elementwise kernels) and the view ops
// (reshape, transpose, broadcast, squeeze, unsqueeze, flatten, basic indexing: no kernel, a
// new view of the same device memory), and uniform and normal random numbers (the CPU's
// generator). Any other node fails with Unimplemented naming the
// op (Supports says so at compile time), so a graph the backend cannot run is reported,
// never run on the CPU's kernels over device memory. Graphs compiled for it skip the CPU's
// epilogue passes (PipelineOptions::host_kernels) and run without the host memory plan;
// their constants are copied to the device once, at compile time.
#include "absl/strings/str_format.h"
#include "graph/op_profile.h"
#include "graph/backend.h"
#include "graph/backend_cuda_data.h"
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/device_ops.h"
#include "kernels/cuda/graph_capture.h"
#include "kernels/cuda/kernel_source.h"
#include "kernels/errors.h"
#include "kernels/flags.h"

namespace pijit::graph {
namespace {

bool IsViewOp(Op op) {
  switch (op) {
    case Op::kReshape: case Op::kTranspose: case Op::kBroadcastTo: case Op::kSqueeze:
    case Op::kUnsqueeze: case Op::kFlatten: case Op::kIndex: case Op::kCustomGrad:
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

bool IsWindowOp(Op op) {
  switch (op) {
    case Op::kConv2D: case Op::kConv2DGradInput: case Op::kConv2DGradWeight:
    case Op::kMaxPool2D: case Op::kAvgPool2D: case Op::kMaxPool2DGrad: case Op::kAvgPool2DGrad:
      return true;
    default:
      return false;
  }
}

// The window and, for the convolution gradients, the shape after it (graph/node_ops.cc's
// encoding).
absl::StatusOr<Window2D> WindowOf(const Node& n, absl::Span<const int64_t>* shape) {
  absl::Span<const int64_t> ints(n.ints);
  if (n.op == Op::kConv2DGradInput || n.op == Op::kConv2DGradWeight) {
    if (ints.size() != kWindowInts + 4) {
      return absl::InternalError(absl::StrFormat("%s: expects a window and a 4-D shape", OpName(n.op)));
    }
    *shape = ints.subspan(kWindowInts);
    ints = ints.subspan(0, kWindowInts);
  }
  return DecodeWindow(OpName(n.op), ints);
}

absl::StatusOr<Tensor> RunWindow(const Node& n, absl::Span<const Tensor* const> in) {
  absl::Span<const int64_t> shape;
  PIJIT_ASSIGN_OR_RETURN(const Window2D win, WindowOf(n, &shape));
  switch (n.op) {
    case Op::kConv2D:
      return cuda::DeviceConv2D(*in[0], *in[1], in.size() > 2 ? in[2] : nullptr, win,
                                n.attr == kConvReluEpilogue, n.meta);
    case Op::kConv2DGradInput: return cuda::DeviceConv2DGradInput(*in[0], *in[1], shape, win, n.meta);
    case Op::kConv2DGradWeight: return cuda::DeviceConv2DGradWeight(*in[0], *in[1], shape, win, n.meta);
    case Op::kMaxPool2D: return cuda::DevicePool2D(PoolKind::kMax, *in[0], win, n.meta);
    case Op::kAvgPool2D: return cuda::DevicePool2D(PoolKind::kAvg, *in[0], win, n.meta);
    case Op::kMaxPool2DGrad:
      return cuda::DevicePool2DGrad(PoolKind::kMax, *in[0], *in[1], win,
                                    n.attr == kPoolGradPositiveOnly, n.meta);
    case Op::kAvgPool2DGrad:
      return cuda::DevicePool2DGrad(PoolKind::kAvg, *in[0], *in[1], win,
                                    n.attr == kPoolGradPositiveOnly, n.meta);
    default: return absl::InternalError("not a window op");
  }
}

bool IsNormOp(Op op) {
  return op == Op::kBatchNorm || op == Op::kBatchNormTrain || op == Op::kLayerNorm ||
         op == Op::kLayerNormGrad || op == Op::kGroupNorm;
}

// The node's Float64 parameter i (eps, momentum).
absl::StatusOr<double> ValueAt(const Node& n, int64_t i) {
  if (n.value.dtype() != DType::kFloat64 || n.value.numel() <= i || n.value.device() != Device::kCPU) {
    return absl::InternalError(absl::StrFormat("%s: expects Float64 parameters in value", OpName(n.op)));
  }
  return n.value.data<double>()[i];
}

absl::StatusOr<Tensor> RunNorm(const Node& n, absl::Span<const Tensor* const> in) {
  PIJIT_ASSIGN_OR_RETURN(const double eps, ValueAt(n, 0));
  if (n.op == Op::kBatchNorm) return cuda::DeviceBatchNorm(*in[0], *in[1], *in[2], *in[3], *in[4], eps);
  if (n.op == Op::kBatchNormTrain) {
    PIJIT_ASSIGN_OR_RETURN(const double momentum, ValueAt(n, 1));
    return cuda::DeviceBatchNormTrain(*in[0], *in[1], *in[2], *in[3], *in[4], eps, momentum);
  }
  if (n.op == Op::kGroupNorm) return cuda::DeviceGroupNorm(*in[0], n.attr, *in[1], *in[2], eps);
  if (n.op == Op::kLayerNormGrad) {  // ints = {has_gamma, 0, normalized_shape...}; x, dy, [gamma]
    if (n.ints.size() < 2 || in.size() != 2 + static_cast<size_t>(n.ints[0] != 0)) {
      return absl::InternalError("layer_norm_grad: inputs do not match its attributes");
    }
    return cuda::DeviceLayerNormGrad(*in[0], *in[1], absl::MakeConstSpan(n.ints).subspan(2),
                                     n.ints[0] ? in[2] : nullptr, eps);
  }
  // layer_norm: ints = {has_gamma, has_beta, normalized_shape...}; inputs x, [gamma], [beta].
  if (n.ints.size() < 2 || in.size() != 1 + static_cast<size_t>(n.ints[0] != 0) + (n.ints[1] != 0)) {
    return absl::InternalError("layer_norm: inputs do not match its attributes");
  }
  const Tensor* gamma = n.ints[0] ? in[1] : nullptr;
  const Tensor* beta = n.ints[1] ? in[1 + (n.ints[0] != 0)] : nullptr;
  return cuda::DeviceLayerNorm(*in[0], absl::MakeConstSpan(n.ints).subspan(2), gamma, beta, eps);
}

// A CUDA graph recorded by the backend (Backend::Record).
class CudaRecordedCall final : public RecordedCall {
 public:
  explicit CudaRecordedCall(std::unique_ptr<cuda::RecordedWork> work) : work_(std::move(work)) {}
  absl::Status Replay() const override { return work_->Replay(); }
  int64_t launches() const override { return work_->nodes(); }

 private:
  std::unique_ptr<cuda::RecordedWork> work_;
};

absl::Status NoKernel(const Node& n, const char* why = "") {
  return absl::UnimplementedError(absl::StrFormat("the CUDA backend has no kernel for %s%s yet",
                                                  OpName(n.op), why));
}

// What RunNode would do with these inputs, decided from their metas: the same renderers and
// the same dtype rules, so that a compile never accepts a graph a call would then refuse.
absl::Status SupportsNode(const Node& n, absl::Span<const TensorMeta* const> in) {
  if (HasTrait(n.op, kRegion) || n.op == Op::kResult) return NoKernel(n, " (control flow runs on the CPU)");
  for (const TensorMeta* m : in) PIJIT_RETURN_IF_ERROR(cuda::DeviceType(m->dtype).status());
  PIJIT_RETURN_IF_ERROR(cuda::DeviceType(n.meta.dtype).status());
  for (const TensorMeta* m : in) {
    if (static_cast<int>(m->shape.size()) > cuda::kMaxDims) return NoKernel(n, " with more than 8 axes");
  }
  if (static_cast<int>(n.meta.shape.size()) > cuda::kMaxDims) return NoKernel(n, " with more than 8 axes");
  BinaryOp bop;
  UnaryOp uop;
  ReduceOp rop;
  if (n.op == Op::kFused && n.program) {
    if (in.size() > static_cast<size_t>(cuda::kMaxInputs)) return NoKernel(n, " of more than 16 inputs");
    return cuda::FusedProgramBody(*n.program).status();
  }
  if (AsBinary(n.op, &bop)) {
    const DType compute = n.meta.dtype == DType::kBool ? PromoteTypes(in[0]->dtype, in[1]->dtype) : n.meta.dtype;
    return cuda::BinaryBody(bop, IsFloating(compute)).status();
  }
  if (AsUnary(n.op, &uop)) {
    const DType compute = n.meta.dtype == DType::kBool ? in[0]->dtype : n.meta.dtype;
    return cuda::UnaryBody(uop, IsFloating(compute)).status();
  }
  if (n.op == Op::kVar || n.op == Op::kStd) {
    return IsFloating(n.meta.dtype) ? cuda::DeviceType(n.meta.dtype).status() : NoKernel(n, " of this dtype");
  }
  if (AsReduce(n.op, &rop)) return cuda::RenderReduce(rop, in[0]->dtype, n.meta.dtype).status();
  if (IsViewOp(n.op) || IsCudaDataOp(n.op)) return absl::OkStatus();
  if (IsWindowOp(n.op) || IsNormOp(n.op)) {
    if (n.meta.dtype != DType::kFloat32 && n.meta.dtype != DType::kFloat64) {
      return NoKernel(n, " other than float32 or float64");
    }
    if (IsNormOp(n.op)) return absl::OkStatus();
  }
  if (IsWindowOp(n.op)) {
    if (n.meta.dtype != DType::kFloat32 && n.meta.dtype != DType::kFloat64) {
      return NoKernel(n, " other than float32 or float64");
    }
    absl::Span<const int64_t> shape;
    return WindowOf(n, &shape).status();
  }
  switch (n.op) {
    case Op::kCast: case Op::kWhere: return absl::OkStatus();
    case Op::kUniform: case Op::kNormal:
      if (n.meta.dtype != DType::kFloat32 && n.meta.dtype != DType::kFloat64) {
        return NoKernel(n, " other than float32 or float64");
      }
      return absl::OkStatus();
    case Op::kSoftmax: case Op::kLogSoftmax: return cuda::RenderSoftmax(in[0]->dtype, false).status();
    case Op::kMatMul: {
      const DType d = n.meta.dtype;
      if (in[0]->dtype != d || in[1]->dtype != d || (d != DType::kFloat32 && d != DType::kFloat64)) {
        return NoKernel(n, " other than float32 or float64");
      }
      // Batched products: equal batch shapes, or one side without batch axes.
      const size_t ra = in[0]->shape.size(), rb = in[1]->shape.size();
      if (ra > 2 && rb > 2 && Shape(in[0]->shape.begin(), in[0]->shape.end() - 2) !=
                                  Shape(in[1]->shape.begin(), in[1]->shape.end() - 2)) {
        return NoKernel(n, " with broadcast batch axes");
      }
      return absl::OkStatus();
    }
    default: return NoKernel(n);
  }
}

class CudaBackendImpl final : public Backend {
 public:
  const char* name() const override { return "cuda"; }
  Device device() const override { return Device::kCUDA; }

  // Fused programs compile with NVRTC on their first run (kernels/cuda keeps them per program
  // and architecture): no Lower.
  absl::StatusOr<Tensor> RunNode(const Node& n, absl::Span<const Tensor* const> in,
                                 const LoweredNode*) const override {
    absl::StatusOr<Tensor> out = Run(n, in);
    // Profiling times each node on the host: wait for the device, so the time is the node's
    // own and not its launch's.
    if (OpProfilingOn()) {
      if (auto api = cuda::CudaApi::Get(); api.ok()) (*api)->cuCtxSynchronize();
    }
    return out;
  }

  absl::StatusOr<Tensor> Run(const Node& n, absl::Span<const Tensor* const> in) const {
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
    if (n.op == Op::kFused && n.program) return cuda::DeviceFused(*n.program, in, n.meta);
    if (AsBinary(n.op, &bop)) return cuda::DeviceBinary(bop, *in[0], *in[1], n.meta);
    if (AsUnary(n.op, &uop)) return cuda::DeviceUnary(uop, *in[0], n.meta);
    if (n.op == Op::kVar || n.op == Op::kStd) {
      return cuda::DeviceVariance(*in[0], n.ints, n.attr, n.op == Op::kStd, n.meta);
    }
    if (AsReduce(n.op, &rop)) return cuda::DeviceReduce(rop, *in[0], n.ints, n.meta);
    if (IsViewOp(n.op)) return RunView(n, *in[0]);
    if (IsWindowOp(n.op)) return RunWindow(n, in);
    if (IsCudaDataOp(n.op)) return RunCudaDataOp(n, in);
    if (IsNormOp(n.op)) return RunNorm(n, in);
    switch (n.op) {
      case Op::kCast: return cuda::DeviceCast(*in[0], n.meta.dtype);
      case Op::kWhere: return cuda::DeviceWhere(*in[0], *in[1], *in[2], n.meta);
      case Op::kSoftmax: return cuda::DeviceSoftmax(*in[0], n.attr, false);
      case Op::kLogSoftmax: return cuda::DeviceSoftmax(*in[0], n.attr, true);
      case Op::kMatMul: return cuda::DeviceMatMul(*in[0], *in[1], n.meta);
      case Op::kUniform: case Op::kNormal: {
        if (n.value.numel() != 2 || n.value.dtype() != DType::kFloat64 || n.value.device() != Device::kCPU) {
          return absl::InternalError("uniform/normal: expects value={a, b} in Float64");
        }
        return cuda::DeviceRandom(n.op == Op::kUniform ? Distribution::kUniform : Distribution::kNormal,
                                  n.meta, n.value.data<double>()[0], n.value.data<double>()[1], n.attr);
      }
      default:
        return absl::UnimplementedError(absl::StrFormat(
            "the CUDA backend has no kernel for %s yet", OpName(n.op)));
    }
  }

  absl::Status Supports(const Node& n, absl::Span<const TensorMeta* const> in) const override {
    return SupportsNode(n, in);
  }

  absl::StatusOr<Tensor> Download(const Tensor& t) const override {
    if (t.device() != Device::kCUDA) return t;
    return cuda::ToHost(t);
  }

  absl::StatusOr<Tensor> Upload(const Tensor& t) const override {
    if (t.device() == Device::kCUDA) return t;
    return cuda::ToDevice(t);
  }

  absl::StatusOr<Tensor> Copy(const Tensor& t) const override {
    // A contiguous input would come back as itself: copy through a cast to its own dtype.
    return cuda::DeviceCast(t, t.dtype());
  }

  absl::Status CopyInto(const Tensor& src, const Tensor& dst) const override {
    return cuda::CopyIntoDevice(src, dst);
  }

  absl::Status Synchronize() const override { return cuda::Synchronize(); }

  // Profiling waits for each node, which a recording cannot hold (a graph recorded before a
  // profiler started replays as one launch, timed as a whole by nothing).
  bool CanRecord() const override { return !OpProfilingOn(); }

  absl::StatusOr<std::unique_ptr<RecordedCall>> Record(const std::function<absl::Status()>& run) const override {
    PIJIT_ASSIGN_OR_RETURN(std::unique_ptr<cuda::RecordedWork> work, cuda::RecordedWork::Record(run));
    return std::unique_ptr<RecordedCall>(new CudaRecordedCall(std::move(work)));
  }
};

}  // namespace

const Backend* CudaBackend() {
  static const CudaBackendImpl* backend = new CudaBackendImpl();  // outlives exit
  return backend;
}

}  // namespace pijit::graph
