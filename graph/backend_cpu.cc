// The CPU backend: the kernels graph::RunNode dispatches to (graph/node_ops.cc).
#include <mutex>
#include <string>

#include "absl/strings/str_format.h"
#include "graph/backend.h"
#include "kernels/errors.h"
#include "kernels/flags.h"

namespace pijit::graph {
namespace {

// PIJIT_FUSED_BACKEND: how fused programs become code ("interpreter", "avx2", else the best
// the host has); read per compile, so tests can switch it.
FusedBackend FusedCodegenFromEnv() {
  const std::string_view choice = flags::FusedBackend();
  return choice == "interpreter" ? FusedBackend::kInterpreter
         : choice == "avx2"      ? FusedBackend::kAvx2
                                 : FusedBackend::kAuto;
}

class CpuBackendImpl final : public HostKernelsBackend {
 public:
  const char* name() const override { return "cpu"; }
  absl::StatusOr<Tensor> RunNode(const Node& n, absl::Span<const Tensor* const> inputs,
                                 const LoweredNode* lowered) const override {
    return RunWithHostKernels(n, inputs, lowered);
  }

 protected:
  FusedBackend FusedCodegen() const override { return FusedCodegenFromEnv(); }
};

}  // namespace

absl::StatusOr<std::shared_ptr<const LoweredNode>> LowerFusedForCpu(
    const Node& n, absl::Span<const TensorMeta* const> inputs, FusedBackend codegen) {
  if (n.op != Op::kFused && n.op != Op::kFusedReduce) return nullptr;
  absl::InlinedVector<Shape, 4> shapes;
  for (const TensorMeta* m : inputs) shapes.push_back(m->shape);
  auto lowered = std::make_shared<LoweredFusedKernel>();
  PIJIT_ASSIGN_OR_RETURN(lowered->kernel, CompileFusedNode(n, shapes, codegen));
  return lowered;
}

const Backend& CpuBackend() {
  static const CpuBackendImpl backend;
  return backend;
}

absl::StatusOr<Tensor> Backend::Copy(const Tensor& t) const {
  Tensor fresh = Tensor::Empty(t.shape(), t.dtype());
  pijit::CopyInto(t, fresh);
  return fresh;
}

absl::Status Backend::CopyInto(const Tensor& src, const Tensor& dst) const {
  if (src.device() != Device::kCPU || dst.device() != Device::kCPU) {
    return absl::UnimplementedError(absl::StrFormat("the %s backend copies host tensors only", name()));
  }
  pijit::CopyInto(src, dst);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<RecordedCall>> Backend::Record(const std::function<absl::Status()>&) const {
  return absl::UnimplementedError(absl::StrFormat("the %s backend does not record work", name()));
}

#ifndef PIJIT_WITH_CUDA
const Backend* CudaBackend() { return nullptr; }
#endif

const Backend* BackendByName(std::string_view name) {
  if (name == "cpu") return &CpuBackend();
  if (name == "reference") return &ReferenceBackend();
  if (name == "cuda") return CudaBackend();
  return nullptr;
}

namespace {
std::mutex g_default_mu;
std::string* g_default_name = new std::string();  // outlives exit
}  // namespace

absl::Status SetDefaultBackend(std::string_view name) {
  if (!name.empty() && BackendByName(name) == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "unknown backend %s (expected cpu, reference%s)", std::string(name),
        CudaBackend() ? " or cuda" : "; this build has no CUDA backend"));
  }
  std::lock_guard<std::mutex> lock(g_default_mu);
  *g_default_name = std::string(name);
  return absl::OkStatus();
}

absl::StatusOr<const Backend*> DefaultBackend() {
  {
    std::lock_guard<std::mutex> lock(g_default_mu);
    if (!g_default_name->empty()) return BackendByName(*g_default_name);
  }
  const std::string_view name = flags::Backend();
  if (name.empty()) return &CpuBackend();
  if (const Backend* b = BackendByName(name)) return b;
  return absl::InvalidArgumentError(absl::StrFormat(
      "PIJIT_BACKEND=%s: unknown backend (expected cpu, reference%s)", std::string(name),
      CudaBackend() ? " or cuda" : "; this build has no CUDA backend"));
}

}  // namespace pijit::graph
