// The reference backend (graph/backend.h): portable code where the CPU backend runs generated
// or library code: fused programs through the interpreter, float32 products through loops.
#include <memory>

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

class ReferenceBackendImpl final : public HostKernelsBackend {
 public:
  const char* name() const override { return "reference"; }

  absl::StatusOr<Tensor> RunNode(const Node& n, absl::Span<const Tensor* const> in,
                                 const LoweredNode* lowered) const override {
    if (n.op == Op::kMatMul && in.size() == 2 && in[0]->dtype() == DType::kFloat32 &&
        in[1]->dtype() == DType::kFloat32 && in[0]->ndim() == 2 && in[1]->ndim() == 2 &&
        in[0]->shape()[1] == in[1]->shape()[0]) {
      return MatMulLoops2D(*in[0], *in[1]);
    }
    return RunWithHostKernels(n, in, lowered);
  }

 protected:
  // Fused programs run through the interpreter (code generation is what the CPU backend adds).
  FusedBackend FusedCodegen() const override { return FusedBackend::kInterpreter; }
};

}  // namespace

const Backend& ReferenceBackend() {
  static const ReferenceBackendImpl* backend = new ReferenceBackendImpl();  // outlives exit
  return *backend;
}

}  // namespace pijit::graph
