"""Image and box operations (crop_and_resize, col2im, bounding boxes) and the primitives of
image, pooling, resizing and layout ops."""

__all__ = []
