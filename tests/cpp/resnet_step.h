// A CIFAR-style ResNet-18 training step as one graph, for the CUDA tests and
// benchmarks/cuda_kernels.cc: a 3x3 stem (64 channels), four stages of two BasicBlocks (64,
// 128, 256, 512 channels, strides 1, 2, 2, 2; 1x1 convolution shortcuts where the shape
// changes), training batch norm after every convolution, global average pooling, a dense
// layer to 10 classes, log-softmax cross-entropy against one-hot labels, its backward
// and SGD (lr 0.05) written into the weights (sgd_step.h).
// Params, in order: x [B,3,32,32], labels [B,10], then per layer its params; `init` says how
// each param starts (the harness fills them).
#pragma once
#include <cmath>
#include <vector>

#include "graph/graph.h"
#include "kernels/errors.h"
#include "tests/cpp/sgd_step.h"

namespace pijit::graph {

enum class ParamInit { kInput, kLabels, kHe, kOnes, kZeros };

struct ResNetStep {
  Graph graph;
  std::vector<ParamInit> init;      // per param, in order
  std::vector<int64_t> fan_in;      // per param (kHe: the fan-in)
};

class ResNetBuilder {
 public:
  absl::StatusOr<ResNetStep> Build(int64_t batch) {
    NodeId x = Param({batch, 3, 32, 32}, ParamInit::kInput);
    const NodeId labels = Param({batch, 10}, ParamInit::kLabels);
    PIJIT_ASSIGN_OR_RETURN(x, ConvBn(x, 3, 64, 3, 1, true));
    int64_t cin = 64;
    for (int64_t stage = 0; stage < 4; ++stage) {
      const int64_t cout = 64 << stage;
      for (int block = 0; block < 2; ++block) {
        const int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
        PIJIT_ASSIGN_OR_RETURN(x, BasicBlock(x, cin, cout, stride));
        cin = cout;
      }
    }
    PIJIT_ASSIGN_OR_RETURN(NodeId pooled, g_.AddOp(Op::kMean, {x}, Shape{2, 3}, false));
    const NodeId fc_w = Param({512, 10}, ParamInit::kHe, 512);
    const NodeId fc_b = Param({10}, ParamInit::kZeros);
    trainable_.push_back(fc_w);
    trainable_.push_back(fc_b);
    PIJIT_ASSIGN_OR_RETURN(NodeId logits, g_.AddOp(Op::kMatMul, {pooled, fc_w}));
    PIJIT_ASSIGN_OR_RETURN(logits, g_.AddOp(Op::kAdd, {logits, fc_b}));
    Attrs axis;
    axis.attr = -1;
    PIJIT_ASSIGN_OR_RETURN(NodeId logp, g_.AddOp(Op::kLogSoftmax, {logits}, axis));
    PIJIT_ASSIGN_OR_RETURN(NodeId picked, g_.AddOp(Op::kMul, {logp, labels}));
    PIJIT_ASSIGN_OR_RETURN(NodeId total, g_.AddOp(Op::kSum, {picked}, Shape{}, false));
    const NodeId scale = g_.AddConstant(Tensor::Scalar<float>(-1.0f / static_cast<float>(batch)));
    PIJIT_ASSIGN_OR_RETURN(NodeId loss, g_.AddOp(Op::kMul, {total, scale}));
    PIJIT_RETURN_IF_ERROR(AppendSgdStep(g_, loss, trainable_, 0.05f));
    return ResNetStep{std::move(g_), std::move(init_), std::move(fan_in_)};
  }

 private:
  NodeId Param(Shape shape, ParamInit init, int64_t fan_in = 1) {
    init_.push_back(init);
    fan_in_.push_back(fan_in);
    return g_.AddParam({DType::kFloat32, std::move(shape)});
  }

  absl::StatusOr<NodeId> Conv(NodeId x, int64_t cin, int64_t cout, int64_t k, int64_t stride) {
    const NodeId w = Param({cout, cin, k, k}, ParamInit::kHe, cin * k * k);
    trainable_.push_back(w);
    Window2D win;
    win.stride[0] = win.stride[1] = stride;
    win.pad[0] = win.pad[1] = win.pad[2] = win.pad[3] = k / 2;
    Attrs a;
    a.ints = EncodeWindow(win);
    return g_.AddOp(Op::kConv2D, {x, w}, a);
  }

  absl::StatusOr<NodeId> BatchNorm(NodeId x, int64_t c) {
    const NodeId mean = Param({c}, ParamInit::kZeros), var = Param({c}, ParamInit::kOnes);
    const NodeId gamma = Param({c}, ParamInit::kOnes), beta = Param({c}, ParamInit::kZeros);
    trainable_.push_back(gamma);
    trainable_.push_back(beta);
    Attrs a;
    a.value = Tensor::Empty({2}, DType::kFloat64);
    a.value.data<double>()[0] = 1e-5;
    a.value.data<double>()[1] = 0.1;
    return g_.AddOp(Op::kBatchNormTrain, {x, mean, var, gamma, beta}, a);
  }

  absl::StatusOr<NodeId> ConvBn(NodeId x, int64_t cin, int64_t cout, int64_t k, int64_t stride, bool relu) {
    PIJIT_ASSIGN_OR_RETURN(NodeId y, Conv(x, cin, cout, k, stride));
    PIJIT_ASSIGN_OR_RETURN(y, BatchNorm(y, cout));
    if (relu) {
      PIJIT_ASSIGN_OR_RETURN(y, g_.AddOp(Op::kRelu, {y}));
    }
    return y;
  }

  absl::StatusOr<NodeId> BasicBlock(NodeId x, int64_t cin, int64_t cout, int64_t stride) {
    PIJIT_ASSIGN_OR_RETURN(NodeId y, ConvBn(x, cin, cout, 3, stride, true));
    PIJIT_ASSIGN_OR_RETURN(y, ConvBn(y, cout, cout, 3, 1, false));
    NodeId shortcut = x;
    if (stride != 1 || cin != cout) {
      PIJIT_ASSIGN_OR_RETURN(shortcut, ConvBn(x, cin, cout, 1, stride, false));
    }
    PIJIT_ASSIGN_OR_RETURN(NodeId sum, g_.AddOp(Op::kAdd, {y, shortcut}));
    return g_.AddOp(Op::kRelu, {sum});
  }

  Graph g_;
  std::vector<ParamInit> init_;
  std::vector<int64_t> fan_in_;
  std::vector<NodeId> trainable_;
};

}  // namespace pijit::graph
