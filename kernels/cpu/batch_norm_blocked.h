// Training batch norm's forward over x held in a blocked layout (kernels/blocked_layout.h),
// float32: y in x's layout (relu applied where `relu`: the op a graph fuses into it), and the
// batch's mean and biased variance per channel, which norm.cc's BatchNormTrainBlocked folds
// into the running statistics. Shapes are the caller's to check.
#pragma once
#include "kernels/ops.h"

namespace pijit {

absl::Status BatchNormTrainBlockedF32(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                      double eps, bool relu, Tensor& y, Tensor& batch_mean,
                                      Tensor& batch_var);

}  // namespace pijit
