"""Image layers of mindspore.nn: SSIM, MSSSIM, Unfold, ResizeBilinear, Conv3dTranspose, and
embedding and normalisation variants."""

__all__ = []
