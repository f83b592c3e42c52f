// The seam between the executor and the machine: a backend runs IR nodes on its device. A
// compiled graph holds the backend it was compiled for and lowers every node to it, so a
// second device (CUDA, kernels/cuda/) is an implementation of this interface, not a change to
// the executor. The IR holds no device code: fusion leaves a device-neutral program
// (kernels/fused.h FusedProgram) in each fused node, which each backend compiles (the CPU's
// when the graph is compiled, Lower; the GPU's with NVRTC when the node first runs).
//
//   cpu        the CPU kernels (graph/node_ops.cc RunNode: oneDNN, BLAS, generated fused code)
//   cuda       the GPU's kernels (kernels/cuda/: NVRTC-compiled elementwise, fused and reduction
//              kernels, cuBLAS); builds with CUDA's headers only, loads the libraries at run time
//   reference  the same nodes through portable code wherever the CPU backend uses generated or
//              library code: fused elementwise programs through the fused-program interpreter,
//              float32 matrix products through plain loops; every other node as on the CPU.
//              A second implementation that proves the seam and gives tests a second opinion.
//
// The backend of a compile is CompileOptions::backend, else PIJIT_BACKEND (kernels/flags.h),
// else cpu.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "graph/graph.h"

namespace pijit::graph {

// Work recorded once and issued again as a whole (Backend::Record).
class RecordedCall {
 public:
  virtual ~RecordedCall() = default;
  virtual absl::Status Replay() const = 0;  // asynchronous on the backend's device
  virtual int64_t launches() const = 0;     // what one Replay issues (kernels, copies)
};

// What a backend made of one node when its graph was compiled (Backend::Lower): the CPU's
// generated code for a fused program. The node itself holds only the device-neutral program.
class LoweredNode {
 public:
  virtual ~LoweredNode() = default;
};

// The CPU backends' lowering of a fused or fused_reduce node: its program's kernel, with code
// generated for the graph's input layouts (LowerFusedForCpu).
struct LoweredFusedKernel final : LoweredNode {
  std::shared_ptr<const FusedKernel> kernel;
};
absl::StatusOr<std::shared_ptr<const LoweredNode>> LowerFusedForCpu(
    const Node& n, absl::Span<const TensorMeta* const> inputs, FusedBackend codegen);
// The kernel in what LowerFusedForCpu made (null for null: RunNode then makes one).
inline const FusedKernel* KernelOf(const LoweredNode* lowered) {
  return lowered ? static_cast<const LoweredFusedKernel*>(lowered)->kernel.get() : nullptr;
}

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // Where its tensors live: the graph's inputs are guarded to be there (TENSOR_MATCH).
  virtual Device device() const = 0;
  // Compiles what node `n` (inputs of `inputs` metas) needs before it runs, once per compiled
  // graph: null when it needs nothing (the default). A graph's calls hand it to RunNode.
  virtual absl::StatusOr<std::shared_ptr<const LoweredNode>> Lower(
      const Node& n, absl::Span<const TensorMeta* const> inputs) const {
    return nullptr;
  }
  // Runs node `n` (not a parameter or constant) on `inputs`, tensors of this backend's device,
  // with what Lower made of it (null outside a compiled graph: then made for this call).
  virtual absl::StatusOr<Tensor> RunNode(const Node& n, absl::Span<const Tensor* const> inputs,
                                         const LoweredNode* lowered) const = 0;
  // Whether compiled graphs on this backend run with a memory plan (graph/memory_plan.h): their
  // arenas come from AllocateArena, and this backend's kernels put a planned node's result in
  // the slot the executor opens for it (kernels/tensor.h PlannedSlot). The CPU's do; the GPU's
  // kernels allocate from its caching allocator, whose addresses its recorded graphs fix.
  virtual bool AllocatesArenas() const { return device() == Device::kCPU; }
  // An arena's memory on this backend's device (only where AllocatesArenas).
  virtual std::shared_ptr<Storage> AllocateArena(size_t nbytes) const { return Storage::Allocate(nbytes); }
  // A graph constant (a host tensor) where this backend's nodes read it; once, at compile time.
  virtual absl::StatusOr<Tensor> Upload(const Tensor& host) const { return host; }
  // A fresh contiguous copy of one of this backend's tensors (outputs that must not share).
  virtual absl::StatusOr<Tensor> Copy(const Tensor& t) const;
  // A host copy of one of this backend's tensors (outputs of a call whose inputs were all on
  // the host).
  virtual absl::StatusOr<Tensor> Download(const Tensor& t) const { return t; }
  // Whether this backend runs node `n` whose inputs have `inputs` metas (Unimplemented with
  // the reason if not). A graph compiled for the default backend (no explicit one) with a
  // node its backend does not run is compiled for the CPU instead.
  virtual absl::Status Supports(const Node& n, absl::Span<const TensorMeta* const> inputs) const {
    return absl::OkStatus();
  }
  // Copies `src` (on the host or this device, any strides) into `dst`, a contiguous tensor of
  // this device with src's shape and dtype.
  virtual absl::Status CopyInto(const Tensor& src, const Tensor& dst) const;
  // Waits until the work queued on this device so far is done (before memory is shared with
  // another library).
  virtual absl::Status Synchronize() const { return absl::OkStatus(); }
  // Whether Record can work here (a device with graphs of work: CUDA graphs).
  virtual bool CanRecord() const { return false; }
  // Runs `run` in recording mode: nothing executes; what it issues is kept, with the memory it
  // allocated, so that Replay issues the same work on the same addresses again. Fails (and
  // keeps nothing) where `run` does something that cannot be recorded.
  virtual absl::StatusOr<std::unique_ptr<RecordedCall>> Record(const std::function<absl::Status()>& run) const;
};

// Backends that run on the host with the CPU's kernels (cpu, reference, tests' backends): they
// differ in how fused programs become code (FusedCodegen) and in the nodes they run otherwise.
class HostKernelsBackend : public Backend {
 public:
  Device device() const override { return Device::kCPU; }
  absl::StatusOr<std::shared_ptr<const LoweredNode>> Lower(
      const Node& n, absl::Span<const TensorMeta* const> inputs) const override {
    return LowerFusedForCpu(n, inputs, FusedCodegen());
  }

 protected:
  virtual FusedBackend FusedCodegen() const = 0;
  // graph::RunNode with the kernel in `lowered`; outside a compiled graph (null), with one
  // compiled for this call by this backend's code generator.
  absl::StatusOr<Tensor> RunWithHostKernels(const Node& n, absl::Span<const Tensor* const> inputs,
                                            const LoweredNode* lowered) const {
    return graph::RunNode(n, inputs, KernelOf(lowered), FusedCodegen());
  }
};

const Backend& CpuBackend();
const Backend& ReferenceBackend();
// The GPU's (graph/backend_cuda.cc), or nullptr in a build without CUDA. Compiling for it
// does not need a GPU; running does (kernels/cuda/cuda_api.h says why one is unavailable).
const Backend* CudaBackend();
// The backend whose tensors live on `device` (the CPU's, the GPU's), or nullptr in a build
// without it.
const Backend* BackendOfDevice(Device device);
// Runs one node where its inputs are: the CPU's kernels when every input is a host tensor,
// else the backend of their device. A 0-d host input (the constant of a Python scalar) goes
// to that device with them; any other host input is an error naming both devices, as is a
// node that device has no kernel for. With `move_host_inputs`, every host input goes to the
// device (the gradient tape's constants). The eager op path (runtime/eager_ops.cc) and the
// gradient tape run their nodes through it.
absl::StatusOr<Tensor> RunNodeWhereInputsAre(const Node& n, absl::Span<const Tensor* const> inputs,
                                             bool move_host_inputs = false);
// `t` on `device`: itself when it is there, else a copy (contiguous) made by the backends.
absl::StatusOr<Tensor> MoveToDevice(const Tensor& t, Device device);
// Copies `src` (any device) into `dst` (any device; contiguous when on a device), of the
// same shape and dtype: a written parameter's new value back into the caller's tensor.
absl::Status CopyAcross(const Tensor& src, const Tensor& dst);
// `t` cast to `dtype` on `t`'s device (Tensor.astype, Tensor(t, dtype)).
absl::StatusOr<Tensor> CastWhereItIs(const Tensor& t, DType dtype);
// The device of `inputs` other than the CPU, if any (kCPU when all are host tensors).
Device DeviceOfInputs(absl::Span<const Tensor* const> inputs);

// The backend named `name` ("cpu", "reference", "cuda"), or nullptr.
const Backend* BackendByName(std::string_view name);
// The backend of compiles that name none: the one SetDefaultBackend chose, else
// PIJIT_BACKEND's, else the CPU's; an unknown name is an error.
absl::StatusOr<const Backend*> DefaultBackend();
// Sets the default by name ("" clears it; pijit.set_context(device_target=...) calls this).
// Graphs compiled before keep their backend.
absl::Status SetDefaultBackend(std::string_view name);

}  // namespace pijit::graph
