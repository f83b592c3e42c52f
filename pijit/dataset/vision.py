"""Image transforms for Dataset.map (MindSpore's mindspore.dataset.vision): Rescale, Normalize
and HWC2CHW, on NumPy images (height, width, channels unless stated)."""
import numbers

import numpy as np

__all__ = ["Rescale", "Normalize", "HWC2CHW"]


def _image(value, transform, min_dims=2):
    image = value.asnumpy() if hasattr(value, "asnumpy") else np.asarray(value)
    if image.ndim < min_dims:
        raise ValueError(f"{transform}: expected an image of at least {min_dims} dimensions, got "
                         f"shape {image.shape}")
    return image


def _check_number(transform, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{transform}: '{name}' must be a number, got {type(value).__name__}")
    return float(value)


class Rescale:
    """image * rescale + shift, as float32."""

    def __init__(self, rescale, shift):
        self.rescale = _check_number("Rescale", "rescale", rescale)
        self.shift = _check_number("Rescale", "shift", shift)

    def __call__(self, image):
        image = _image(image, "Rescale", min_dims=0)
        return (image.astype(np.float32) * np.float32(self.rescale)
                + np.float32(self.shift)).astype(np.float32)


class Normalize:
    """(image - mean) / std per channel, as float32. `mean` and `std` list one value per channel
    (std > 0); the channels are the last axis (is_hwc) or the first."""

    def __init__(self, mean, std, is_hwc=True):
        if not isinstance(mean, (list, tuple)) or not isinstance(std, (list, tuple)) or \
                not mean or len(mean) != len(std):
            raise ValueError(f"Normalize: 'mean' and 'std' must be lists of the same, non-zero "
                             f"length, got {mean!r} and {std!r}")
        self.mean = [_check_number("Normalize", "mean", m) for m in mean]
        self.std = [_check_number("Normalize", "std", s) for s in std]
        if any(s <= 0 for s in self.std):
            raise ValueError(f"Normalize: every 'std' must be > 0, got {std!r}")
        if not isinstance(is_hwc, bool):
            raise TypeError(f"Normalize: 'is_hwc' must be a bool, got {type(is_hwc).__name__}")
        self.is_hwc = is_hwc

    def __call__(self, image):
        image = _image(image, "Normalize").astype(np.float32)
        channels = image.shape[-1] if self.is_hwc else image.shape[0] if image.ndim == 3 else 1
        if image.ndim == 2:
            channels = 1
        if channels != len(self.mean):
            raise ValueError(f"Normalize: the image has {channels} channels but 'mean' and 'std' "
                             f"have {len(self.mean)} values")
        shape = (-1,) if self.is_hwc or image.ndim == 2 else (-1, 1, 1)
        mean = np.asarray(self.mean, np.float32).reshape(shape)
        std = np.asarray(self.std, np.float32).reshape(shape)
        return ((image - mean) / std).astype(np.float32)


class HWC2CHW:
    """An image of shape (H, W, C) as (C, H, W); a 2-D image (H, W) is returned unchanged."""

    def __call__(self, image):
        image = _image(image, "HWC2CHW")
        if image.ndim == 2:
            return image
        if image.ndim != 3:
            raise ValueError(f"HWC2CHW: expected an image of shape (H, W, C) or (H, W), got "
                             f"{image.shape}")
        return np.ascontiguousarray(image.transpose(2, 0, 1))
