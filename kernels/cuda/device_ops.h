// Tensor operations on the GPU: elementwise (fused programs, graph ops, the float-function
// table, casts, copies), reductions, softmax and matrix products (cuBLAS). Inputs are device
// tensors of any strides; outputs are fresh contiguous device tensors of the caller's meta.
// Errors name what the CUDA backend does not run yet (an op, a dtype) as Unimplemented.
#pragma once
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/fused.h"
#include "kernels/ops.h"
#include "kernels/tensor.h"

namespace pijit::cuda {

// A contiguous copy of a device tensor (the tensor itself when it is contiguous).
absl::StatusOr<Tensor> DeviceContiguous(const Tensor& t);
absl::StatusOr<Tensor> DeviceCast(const Tensor& t, DType to);
// Writes `src` (broadcast to dst's shape, converted to its dtype) into `dst`, a device tensor
// of any strides. `src` must not overlap `dst` unless it is `dst` itself element for element.
absl::Status DeviceCopyInto(const Tensor& src, const Tensor& dst);
// An elementwise kernel of one's own: `body` assigns `r` (of type T, the C++ type of
// `compute`) from x0..x{n-1}, the inputs broadcast to `out`'s shape (kernel_source.h).
absl::StatusOr<Tensor> DeviceElementwise(const std::string& body, DType compute,
                                         absl::Span<const Tensor* const> inputs,
                                         const TensorMeta& out);
// A fresh tensor of `out`'s meta holding `value` everywhere.
absl::StatusOr<Tensor> DeviceFill(const TensorMeta& out, double value);
// Inputs broadcast to `out.shape`; `out.dtype` is the result's dtype.
absl::StatusOr<Tensor> DeviceBinary(BinaryOp op, const Tensor& a, const Tensor& b,
                                    const TensorMeta& out);
absl::StatusOr<Tensor> DeviceUnary(UnaryOp op, const Tensor& a, const TensorMeta& out);
absl::StatusOr<Tensor> DeviceWhere(const Tensor& cond, const Tensor& x, const Tensor& y,
                                   const TensorMeta& out);
// A fused program over inputs broadcast to `out.shape` (one kernel launch).
absl::StatusOr<Tensor> DeviceFused(const FusedProgram& program,
                                   absl::Span<const Tensor* const> inputs, const TensorMeta& out);
// `axes` as the graph gives them (empty: every axis); `out` the reduction's meta.
absl::StatusOr<Tensor> DeviceReduce(ReduceOp op, const Tensor& a, absl::Span<const int64_t> axes,
                                    const TensorMeta& out);
absl::StatusOr<Tensor> DeviceSoftmax(const Tensor& a, int64_t axis, bool log);
// var (std with `root`) over `axes` with divisor count - ddof, as the CPU's: in double.
absl::StatusOr<Tensor> DeviceVariance(const Tensor& a, absl::Span<const int64_t> axes, int64_t ddof, bool root,
                                      const TensorMeta& out);
// NumPy's matmul for float32/float64 operands of 1 to N dims whose batch shapes are equal or
// absent on one side; `out` is the product's meta.
absl::StatusOr<Tensor> DeviceMatMul(const Tensor& a, const Tensor& b, const TensorMeta& out);

// NCHW convolution and pooling, forward and backward (kernels/cuda/device_conv.cc), float32
// and float64, the CPU's window semantics; `relu` applies relu to conv2d's result as it is
// written, `positive_only` masks a pooling gradient with x > 0 (compiled graphs' epilogues).
absl::StatusOr<Tensor> DeviceConv2D(const Tensor& x, const Tensor& w, const Tensor* bias,
                                    const Window2D& win, bool relu, const TensorMeta& out);
absl::StatusOr<Tensor> DeviceConv2DGradInput(const Tensor& dout, const Tensor& w,
                                             absl::Span<const int64_t> x_shape,
                                             const Window2D& win, const TensorMeta& out);
absl::StatusOr<Tensor> DeviceConv2DGradWeight(const Tensor& x, const Tensor& dout,
                                              absl::Span<const int64_t> w_shape,
                                              const Window2D& win, const TensorMeta& out);
absl::StatusOr<Tensor> DevicePool2D(PoolKind kind, const Tensor& x, const Window2D& win,
                                    const TensorMeta& out);
// The sources of the convolution and pooling kernels for `d` (tests compile them with nvcc).
std::vector<std::string> WindowKernelSources(DType d);

// `out.shape` random numbers of the CPU's generator (kernels/ops.h Random, RandomDraw):
// uniform in [a, b) or normal with mean a and standard deviation b; `seed` < 0 draws from the
// global generator and advances it at the call (kernels/cuda/device_random.cc).
absl::StatusOr<Tensor> DeviceRandom(Distribution d, const TensorMeta& out, double a, double b, int64_t seed);
// The source of the random kernel (tests compile it with nvcc).
std::string RandomKernelSource(DType dtype, bool normal);

// Normalisation (kernels/cuda/device_norm.cc), as the CPU's BatchNorm, BatchNormTrain (which
// updates `mean` and `var`, device tensors, in place) and LayerNorm.
absl::StatusOr<Tensor> DeviceBatchNorm(const Tensor& x, const Tensor& mean, const Tensor& var,
                                       const Tensor& gamma, const Tensor& beta, double eps);
absl::StatusOr<Tensor> DeviceBatchNormTrain(const Tensor& x, const Tensor& mean, const Tensor& var,
                                            const Tensor& gamma, const Tensor& beta, double eps,
                                            double momentum);
absl::StatusOr<Tensor> DeviceLayerNorm(const Tensor& x, absl::Span<const int64_t> normalized_shape,
                                       const Tensor* gamma, const Tensor* beta, double eps);
absl::StatusOr<Tensor> DeviceGroupNorm(const Tensor& x, int64_t groups, const Tensor& gamma,
                                       const Tensor& beta, double eps);
// layer_norm's gradient with respect to x (kernels/ops.h, LayerNormGrad).
absl::StatusOr<Tensor> DeviceLayerNormGrad(const Tensor& x, const Tensor& dy,
                                           absl::Span<const int64_t> normalized_shape,
                                           const Tensor* gamma, double eps);
absl::StatusOr<Tensor> DevicePool2DGrad(PoolKind kind, const Tensor& x, const Tensor& dout,
                                        const Window2D& win, bool positive_only,
                                        const TensorMeta& out);

}  // namespace pijit::cuda
