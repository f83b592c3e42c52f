// The reorders between NCHW and oneDNN's blocked activation layouts (kernels/blocked_layout.h),
// on oneDNN's reorder primitives.
#include "kernels/blocked_layout.h"

#include "kernels/cpu/window.h"
#include "kernels/errors.h"

namespace pijit {
namespace {

dnnl::memory::desc Layout(const Shape& plain, int64_t block) {
  return ActivationLayout({plain[0], plain[1], plain[2], plain[3]}, block);
}

// Copies `from` (NCHW, or blocked when from_block is not 0) into `to` in the other layout.
void Reorder(const Shape& plain, const Tensor& from, int64_t from_block, Tensor& to,
             int64_t to_block) {
  if (to.numel() == 0) return;
  dnnl::memory src(Layout(plain, from_block), DnnlEngine(), from.raw_data());
  dnnl::memory dst(Layout(plain, to_block), DnnlEngine(), to.raw_data());
  dnnl::reorder(src, dst).execute(DnnlStream(), src, dst);
  DnnlStream().wait();
}

}  // namespace

absl::StatusOr<TensorMeta> InferToBlocked(const TensorMeta& x, int64_t block) {
  if (x.shape.size() == 5) {  // from another block: one reorder, not two through NCHW
    PIJIT_ASSIGN_OR_RETURN(TensorMeta plain, PlainMetaOfActivation("to_blocked", "the input", x));
    return InferToBlocked(plain, block);
  }
  if (x.dtype != DType::kFloat32) {
    return absl::UnimplementedError(absl::StrFormat(
        "to_blocked: unsupported dtype %s, expected Float32", DTypeName(x.dtype)));
  }
  if (x.shape.size() != 4 || !IsChannelBlock(x.shape[1], block)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "to_blocked: expected a 4-D input (N, C, H, W) whose C the block %d divides (a block "
        "is 8, 16 or C), got shape %s", block, ShapeToString(x.shape)));
  }
  return TensorMeta{x.dtype, {x.shape[0], x.shape[1] / block, x.shape[2], x.shape[3], block}};
}

absl::StatusOr<Tensor> ToBlocked(const Tensor& x, int64_t block) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferToBlocked(MetaOf(x), block));
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);
  Reorder(PlainShapeOfBlocked(x.shape()), x.Contiguous(), BlockOfShape(x.shape()), out, block);
  return out;
}

absl::StatusOr<TensorMeta> InferFromBlocked(const TensorMeta& x) {
  if (x.dtype != DType::kFloat32) {
    return absl::UnimplementedError(absl::StrFormat(
        "from_blocked: unsupported dtype %s, expected Float32", DTypeName(x.dtype)));
  }
  if (x.shape.size() != 5 || !IsChannelBlock(x.shape[1] * x.shape[4], x.shape[4])) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "from_blocked: expected a blocked input [N, C/b, H, W, b] with b 8, 16 or C, got "
        "shape %s", ShapeToString(x.shape)));
  }
  return TensorMeta{x.dtype, PlainShapeOfBlocked(x.shape)};
}

absl::StatusOr<Tensor> FromBlocked(const Tensor& x) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferFromBlocked(MetaOf(x)));
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);
  Reorder(meta.shape, x.Contiguous(), x.shape()[4], out, 0);
  return out;
}

absl::StatusOr<TensorMeta> PlainMetaOfBlocked(const char* op, const char* what,
                                              const TensorMeta& x, int64_t block) {
  if (x.dtype != DType::kFloat32) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: %s in a blocked layout must be Float32, got %s", op, what, DTypeName(x.dtype)));
  }
  if (x.shape.size() != 5 || x.shape[4] != block ||
      !IsChannelBlock(x.shape[1] * x.shape[4], block)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: expected %s in the layout of block %d ([N, C/%d, H, W, %d], the block 8, 16 or "
        "C), got shape %s", op, what, block, block, block, ShapeToString(x.shape)));
  }
  return TensorMeta{x.dtype, PlainShapeOfBlocked(x.shape)};
}

absl::StatusOr<TensorMeta> PlainMetaOfActivation(const char* op, const char* what,
                                                 const TensorMeta& x) {
  if (x.shape.size() != 5) return x;
  return PlainMetaOfBlocked(op, what, x, x.shape[4]);
}

}  // namespace pijit
