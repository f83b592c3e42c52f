// The seam between the executor and the machine: a backend runs IR nodes on its device. A
// compiled graph holds the backend it was compiled for and lowers every node to it, so a
// second device (CUDA, kernels/cuda/) is an implementation of this interface, not a change to
// the executor.
//
//   cpu        the CPU kernels (graph/node_ops.cc RunNode: oneDNN, BLAS, generated fused code)
//   reference  the same nodes through portable code wherever the CPU backend uses generated or
//              library code: fused elementwise programs through the fused-program interpreter,
//              float32 matrix products through plain loops; every other node as on the CPU.
//              A second implementation that proves the seam and gives tests a second opinion.
//
// The backend of a compile is CompileOptions::backend, else PIJIT_BACKEND (kernels/flags.h),
// else cpu.
#pragma once
#include <string_view>

#include "absl/status/statusor.h"
#include "graph/graph.h"

namespace pijit::graph {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // Where its tensors live: the graph's inputs are guarded to be there (TENSOR_MATCH).
  virtual Device device() const = 0;
  // Runs node `n` (not a parameter or constant) on `inputs`, tensors of this backend's device.
  virtual absl::StatusOr<Tensor> RunNode(const Node& n, absl::Span<const Tensor* const> inputs) const = 0;
};

const Backend& CpuBackend();
const Backend& ReferenceBackend();
// The backend named `name` ("cpu", "reference"), or nullptr.
const Backend* BackendByName(std::string_view name);
// PIJIT_BACKEND's backend, else the CPU one; an unknown name is an error.
absl::StatusOr<const Backend*> DefaultBackend();

}  // namespace pijit::graph
