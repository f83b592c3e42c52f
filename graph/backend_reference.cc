// The reference backend (graph/backend.h): portable code where the CPU backend runs generated
// or library code.
#include <memory>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "graph/backend.h"
#include "kernels/errors.h"
#include "kernels/ops.h"

namespace pijit::graph {
namespace {

// C = A @ B for 2-D float32 operands of any strides, accumulating in float32 in k order.
Tensor MatMulLoops2D(const Tensor& a, const Tensor& b) {
  const int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  Tensor out = Tensor::Empty({m, n}, DType::kFloat32);
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* pc = out.data<float>();
  const int64_t a0 = a.strides()[0], a1 = a.strides()[1], b0 = b.strides()[0], b1 = b.strides()[1];
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += pa[i * a0 + p * a1] * pb[p * b0 + j * b1];
      pc[i * n + j] = acc;
    }
  return out;
}

class ReferenceBackendImpl final : public Backend {
 public:
  const char* name() const override { return "reference"; }
  Device device() const override { return Device::kCPU; }

  absl::StatusOr<Tensor> RunNode(const Node& n, absl::Span<const Tensor* const> in) const override {
    if (n.op == Op::kFused && n.fused) return RunFusedInterpreted(n, in);
    if (n.op == Op::kMatMul && in.size() == 2 && in[0]->dtype() == DType::kFloat32 &&
        in[1]->dtype() == DType::kFloat32 && in[0]->ndim() == 2 && in[1]->ndim() == 2 &&
        in[0]->shape()[1] == in[1]->shape()[0]) {
      return MatMulLoops2D(*in[0], *in[1]);
    }
    return graph::RunNode(n, in);
  }

 private:
  // The node's program through the interpreter, compiled once per program.
  absl::StatusOr<Tensor> RunFusedInterpreted(const Node& n, absl::Span<const Tensor* const> in) const {
    Shape shape;
    for (const Tensor* t : in) {
      PIJIT_ASSIGN_OR_RETURN(shape, BroadcastShapes("fused", shape, t->shape()));
    }
    std::shared_ptr<const FusedKernel> kernel;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = interpreted_.find(n.fused.get());
      if (it != interpreted_.end()) kernel = it->second.second;
    }
    if (!kernel) {
      std::vector<Shape> shapes;
      for (const Tensor* t : in) shapes.push_back(t->shape());
      PIJIT_ASSIGN_OR_RETURN(kernel, FusedKernel::Create(n.fused->program(), shapes, shape,
                                                         FusedBackend::kInterpreter));
      std::lock_guard<std::mutex> lock(mu_);
      // Keyed by the node's kernel, which the entry keeps alive: the key is never reused.
      interpreted_.emplace(n.fused.get(), std::make_pair(n.fused, kernel));
    }
    return kernel->Run(in, shape);
  }

  mutable std::mutex mu_;
  mutable absl::flat_hash_map<const FusedKernel*,
                              std::pair<std::shared_ptr<const FusedKernel>,
                                        std::shared_ptr<const FusedKernel>>> interpreted_;
};

}  // namespace

const Backend& ReferenceBackend() {
  static const ReferenceBackendImpl* backend = new ReferenceBackendImpl();  // outlives exit
  return *backend;
}

}  // namespace pijit::graph
