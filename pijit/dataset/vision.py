"""Image transforms for Dataset.map (MindSpore's mindspore.dataset.vision): Rescale, Normalize,
HWC2CHW, and the random augmentations RandomCrop and RandomHorizontalFlip, on NumPy images
(height, width, channels unless stated).

The random transforms draw from the row's generator inside a pipeline (see _rng.py: the same
augmentation on every run after dataset.config.set_seed, a new one each epoch, whatever the
number of workers), and from their own generator when called directly."""
import enum
import numbers

import numpy as np

from pijit.dataset import _rng

__all__ = ["Rescale", "Normalize", "HWC2CHW", "RandomCrop", "RandomHorizontalFlip", "Border"]


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
        out = image.astype(np.float32)  # a new array: scaled in place
        out *= np.float32(self.rescale)
        out += np.float32(self.shift)
        return out


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


class Border(str, enum.Enum):
    """How RandomCrop fills its padding: CONSTANT (fill_value), EDGE (the edge pixel repeated),
    REFLECT (mirrored without repeating the edge: 3 2 | 1 2 3) and SYMMETRIC (mirrored with
    it: 2 1 | 1 2 3)."""
    CONSTANT = "constant"
    EDGE = "edge"
    REFLECT = "reflect"
    SYMMETRIC = "symmetric"


def _positive_pair(transform, name, value):
    """An int or a sequence of two ints, all > 0, as (height, width)."""
    values = (value, value) if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(values, (tuple, list)) or len(values) != 2 or \
            not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
        raise ValueError(f"{transform}: '{name}' must be a positive int or a sequence of two "
                         f"positive ints (height, width), got {value!r}")
    return tuple(values)


def _padding(value):
    """RandomCrop's padding as (left, top, right, bottom)."""
    if value is None:
        return (0, 0, 0, 0)
    values = [value] if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(values, (tuple, list)) or len(values) not in (1, 2, 4) or \
            not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
        raise ValueError(f"RandomCrop: 'padding' must be an int >= 0 or a sequence of 2 or 4 of "
                         f"them, got {value!r}")
    if len(values) == 1:
        return tuple(values) * 4
    if len(values) == 2:  # (left and right, top and bottom)
        return (values[0], values[1], values[0], values[1])
    return tuple(values)


def _fill(value):
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 255:
        return (value,) * 3
    if isinstance(value, (tuple, list)) and len(value) == 3 and \
            all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 255 for v in value):
        return tuple(value)
    raise ValueError(f"RandomCrop: 'fill_value' must be an int in [0, 255] or a sequence of "
                     f"three of them, got {value!r}")


def _pad(image, top, bottom, left, right, mode, fill):
    widths = [(top, bottom), (left, right)] + [(0, 0)] * (image.ndim - 2)
    if mode is not Border.CONSTANT:
        return np.pad(image, widths, mode=mode.value)
    if image.ndim == 2 or image.shape[2] != 3:
        return np.pad(image, widths, mode="constant", constant_values=fill[0])
    # One fill value per channel of an RGB image.
    return np.stack([np.pad(image[..., c], widths[:2], mode="constant", constant_values=fill[c])
                     for c in range(3)], axis=-1)


class RandomCrop:
    """A crop of `size` (an int, or (height, width)) at a uniformly random position, after
    `padding` (an int for every side, (left/right, top/bottom), or (left, top, right,
    bottom)). With pad_if_needed an image smaller than `size` is padded on both sides of the
    short axis by the difference first. Padding uses `padding_mode` (Border), with
    `fill_value` (an int, or one per RGB channel) for Border.CONSTANT. Given several images
    (columns) of one size, all are cropped at the same position."""

    def __init__(self, size, padding=None, pad_if_needed=False, fill_value=0,
                 padding_mode=Border.CONSTANT):
        self.size = _positive_pair("RandomCrop", "size", size)
        self.padding = _padding(padding)
        if not isinstance(pad_if_needed, bool):
            raise TypeError(f"RandomCrop: 'pad_if_needed' must be a bool, got "
                            f"{type(pad_if_needed).__name__}")
        self.pad_if_needed = pad_if_needed
        self.fill_value = _fill(fill_value)
        try:
            self.padding_mode = Border(padding_mode)
        except ValueError:
            raise ValueError(f"RandomCrop: 'padding_mode' must be a Border, got "
                             f"{padding_mode!r}") from None
        self._generator = _rng.own_generator()

    def _padded(self, image):
        left, top, right, bottom = self.padding
        image = _pad(image, top, bottom, left, right, self.padding_mode, self.fill_value)
        height, width = self.size
        if self.pad_if_needed and image.shape[0] < height:
            extra = height - image.shape[0]
            image = _pad(image, extra, extra, 0, 0, self.padding_mode, self.fill_value)
        if self.pad_if_needed and image.shape[1] < width:
            extra = width - image.shape[1]
            image = _pad(image, 0, 0, extra, extra, self.padding_mode, self.fill_value)
        if image.shape[0] < height or image.shape[1] < width:
            raise ValueError(f"RandomCrop: the crop size {self.size} is bigger than the image "
                             f"{image.shape[:2]} after padding; pad it, or set pad_if_needed")
        return image

    def __call__(self, *images):
        if not images:
            raise TypeError("RandomCrop: expected at least one image")
        padded = [self._padded(_image(i, "RandomCrop")) for i in images]
        if any(p.shape[:2] != padded[0].shape[:2] for p in padded):
            raise ValueError(f"RandomCrop: the images must have the same height and width, got "
                             f"{[p.shape[:2] for p in padded]}")
        height, width = self.size
        generator = _rng.current(self._generator)
        top = int(generator.integers(0, padded[0].shape[0] - height + 1))
        left = int(generator.integers(0, padded[0].shape[1] - width + 1))
        crops = tuple(np.ascontiguousarray(p[top:top + height, left:left + width])
                      for p in padded)
        return crops if len(crops) > 1 else crops[0]


class RandomHorizontalFlip:
    """Flips the image left to right with probability `prob` (the same draw for every image
    given together)."""

    def __init__(self, prob=0.5):
        prob = _check_number("RandomHorizontalFlip", "prob", prob)
        if not 0.0 <= prob <= 1.0:
            raise ValueError(f"RandomHorizontalFlip: 'prob' must be in [0, 1], got {prob}")
        self.prob = prob
        self._generator = _rng.own_generator()

    def __call__(self, *images):
        if not images:
            raise TypeError("RandomHorizontalFlip: expected at least one image")
        images = [_image(i, "RandomHorizontalFlip") for i in images]
        flip = _rng.current(self._generator).random() < self.prob
        out = tuple(np.ascontiguousarray(i[:, ::-1]) if flip else i for i in images)
        return out if len(out) > 1 else out[0]
