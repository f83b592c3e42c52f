// A LeNet-5 training step as one graph, for the CUDA tests and benchmarks/cuda_kernels.cc:
// the forward (two 5x5 convolutions with relu and 2x2 max pooling, three dense layers,
// log-softmax cross-entropy against one-hot labels, averaged over the batch), its backward
// and SGD updates (lr 0.05) written into the weights (sgd_step.h).
// Params: x [B,1,28,28], conv1 w/b, conv2 w/b, fc1 w [256,120]/b, fc2 w [120,10]/b, labels
// [B,10]; the output is the loss before the update.
#pragma once
#include "absl/strings/str_format.h"
#include "graph/text_parser.h"
#include "kernels/errors.h"
#include "tests/cpp/sgd_step.h"

namespace pijit::graph {

inline std::string LeNetWindow(int k, int s) {
  return absl::StrFormat("[0,%d,%d,%d,%d,0,0,0,0,1,1,0,1,1]", k, k, s, s);
}

inline absl::StatusOr<Graph> LeNetTrainingStep(int64_t b) {
  const std::string w5 = LeNetWindow(5, 1), p2 = LeNetWindow(2, 2);
  PIJIT_ASSIGN_OR_RETURN(Graph g, Parse(absl::StrFormat(
      "graph(%%0: f32[%d,1,28,28], %%1: f32[6,1,5,5], %%2: f32[6], %%3: f32[16,6,5,5], %%4: f32[16],\n"
      "      %%5: f32[256,120], %%6: f32[120], %%7: f32[120,10], %%8: f32[10], %%9: f32[%d,10]) {\n"
      "  %%10: f32[%d,6,24,24] = conv2d(%%0, %%1, %%2, window=%s)\n"
      "  %%11: f32[%d,6,24,24] = relu(%%10)\n"
      "  %%12: f32[%d,6,12,12] = max_pool2d(%%11, window=%s)\n"
      "  %%13: f32[%d,16,8,8] = conv2d(%%12, %%3, %%4, window=%s)\n"
      "  %%14: f32[%d,16,8,8] = relu(%%13)\n"
      "  %%15: f32[%d,16,4,4] = max_pool2d(%%14, window=%s)\n"
      "  %%16: f32[%d,256] = reshape(%%15, shape=[%d,256])\n"
      "  %%17: f32[%d,120] = matmul(%%16, %%5)\n"
      "  %%18: f32[%d,120] = add(%%17, %%6)\n"
      "  %%19: f32[%d,120] = relu(%%18)\n"
      "  %%20: f32[%d,10] = matmul(%%19, %%7)\n"
      "  %%21: f32[%d,10] = add(%%20, %%8)\n"
      "  %%22: f32[%d,10] = log_softmax(%%21, axis=-1)\n"
      "  %%23: f32[%d,10] = mul(%%22, %%9)\n"
      "  %%24: f32[] = sum(%%23, axes=[], keepdims=false)\n"
      "  %%25: f32[] = constant(%.9g)\n"
      "  %%26: f32[] = mul(%%24, %%25)\n"
      "  return (%%26)\n}\n",
      b, b, b, w5, b, b, p2, b, w5, b, b, p2, b, b, b, b, b, b, b, b, b, -1.0 / b)));
  const NodeId loss = 26;
  PIJIT_RETURN_IF_ERROR(AppendSgdStep(g, loss, {1, 2, 3, 4, 5, 6, 7, 8}, 0.05f));
  return g;
}

}  // namespace pijit::graph
