// cuDNN's convolutions for the CUDA backend, loaded at run time like the other CUDA libraries
// (libcudnn.so.9 or .8; PyTorch's and PyPI's nvidia-cudnn wheels carry it). Optional: where it
// is missing, or for windows it does not take (asymmetric padding from pad_mode 'same'), the
// backend's direct kernels run instead, as they do with PIJIT_CUDNN=0.
//
// Float32 runs with CUDNN_FMA_MATH: full float32 arithmetic, no TF32 tensor-core rounding, so
// results stay within the tests' tolerance of the CPU's. Algorithms come from cuDNN's own
// heuristics (the _v7 queries), the first that succeeds within the workspace limit, cached
// per problem.
#pragma once
#include <optional>

#include "absl/status/statusor.h"
#include "kernels/ops.h"
#include "kernels/tensor.h"

namespace pijit::cuda {

enum class ConvPass { kForward, kBackwardData, kBackwardFilter };

// One pass of conv2d through cuDNN on contiguous device tensors: forward y = conv(x, w);
// backward data dx from (dy, w); backward filter dw from (x, dy). `a` and `b` are the pass's
// two operands in that order, `out` a fresh contiguous tensor of the result's shape that the
// call fills. Returns false (and does nothing) when cuDNN is unavailable or does not take the
// problem; an error when cuDNN fails on one it took.
absl::StatusOr<bool> CudnnConv2D(ConvPass pass, const Tensor& a, const Tensor& b, const Tensor& out,
                                 const Shape& x_shape, const Shape& w_shape, const Window2D& win,
                                 const int64_t pads[4]);

// Why cuDNN is not used ("" when it is loaded).
std::string CudnnUnavailableReason();

}  // namespace pijit::cuda
