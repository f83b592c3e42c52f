"""Resizing and 1-D pooling cells: Upsample, PixelShuffle, PixelUnshuffle, adaptive average
and max pooling (1-D and 2-D), AvgPool1d, MaxPool1d, channel dropout (Dropout1d/2d/3d) and
Unflatten, over the pijit.ops functions of the same names."""
from pijit import ops
from pijit._numbers import plain
from pijit.nn.cell import Cell
from pijit.nn._checks import int_at_least


class Upsample(Cell):
    """ops.interpolate with fixed arguments."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.size, self.scale_factor = plain(size), plain(scale_factor)
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor
        if (self.size is None) == (self.scale_factor is None):
            raise ValueError("Upsample: give exactly one of size and scale_factor")

    def construct(self, x):
        return ops.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners,
                               self.recompute_scale_factor)

    def extend_repr(self):
        return f"size={self.size}, scale_factor={self.scale_factor}, mode={self.mode}"


class PixelShuffle(Cell):
    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = plain(upscale_factor)

    def construct(self, x):
        return ops.pixel_shuffle(x, self.upscale_factor)


class PixelUnshuffle(Cell):
    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = plain(downscale_factor)

    def construct(self, x):
        return ops.pixel_unshuffle(x, self.downscale_factor)


def _adaptive(name, fn, doc, module=__name__):
    """An adaptive pooling Cell: fn(x, output_size) with output_size fixed at construction."""
    def __init__(self, output_size):
        Cell.__init__(self)
        self.output_size = plain(output_size)

    def construct(self, x):
        return fn(x, self.output_size)

    def extend_repr(self):
        return f"output_size={self.output_size}"

    return type(name, (Cell,), {"__init__": __init__, "construct": construct, "__doc__": doc,
                                "extend_repr": extend_repr, "__module__": module,
                                "__qualname__": name})


AdaptiveAvgPool1d = _adaptive("AdaptiveAvgPool1d", ops.adaptive_avg_pool1d,
                              "Average over windows splitting L into output_size parts.")
AdaptiveAvgPool2d = _adaptive("AdaptiveAvgPool2d", ops.adaptive_avg_pool2d,
                              "Average over windows splitting H and W into output_size parts.")
AdaptiveMaxPool1d = _adaptive("AdaptiveMaxPool1d", ops.adaptive_max_pool1d,
                              "Maximum over windows splitting L into output_size parts.")
AdaptiveMaxPool2d = _adaptive("AdaptiveMaxPool2d", ops.adaptive_max_pool2d,
                              "Maximum over windows splitting H and W into output_size parts.")


class _Pool1d(Cell):
    """1-D pooling of (N, C, L) data, run as 2-D pooling over (N, C, 1, L)."""
    _op = None

    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0, ceil_mode=False):
        super().__init__()
        name = type(self).__name__
        self.kernel_size = int_at_least(name, "kernel_size", kernel_size, 1)
        self.stride = int_at_least(name, "stride", stride, 1)
        self.padding = int_at_least(name, "padding", padding, 0)
        if not isinstance(pad_mode, str) or pad_mode.lower() not in ("valid", "same", "pad"):
            raise ValueError(f"{name}: pad_mode must be 'valid', 'same' or 'pad', got {pad_mode!r}")
        self.pad_mode, self.ceil_mode = pad_mode.lower(), bool(ceil_mode)
        if self.padding and self.pad_mode != "pad":
            raise ValueError(f"{name}: padding needs pad_mode='pad', got '{self.pad_mode}'")

    def construct(self, x):
        if len(x.shape) != 3:
            raise ValueError(f"{type(self).__name__}: expects (N, C, L) input, got shape "
                             f"{tuple(x.shape)}")
        y = self._op(ops.expand_dims(x, 2), (1, self.kernel_size), (1, self.stride),
                     (0, 0, self.padding, self.padding), ceil_mode=self.ceil_mode,
                     pad_mode=self.pad_mode)
        return ops.squeeze(y, 2)

    def extend_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, pad_mode={self.pad_mode}"


class AvgPool1d(_Pool1d):
    _op = staticmethod(ops.avg_pool2d)


class MaxPool1d(_Pool1d):
    _op = staticmethod(ops.max_pool2d)


class _ChannelDropout(Cell):
    """Zeroes whole channels (axis 1) with probability p in training mode and scales the rest
    by 1 / (1 - p); the identity in evaluation mode."""
    _rank = None

    def __init__(self, p=0.5):
        super().__init__()
        p = plain(p)
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
            raise ValueError(f"{type(self).__name__}: p must be in [0, 1], got {p!r}")
        self.p = float(p)

    def construct(self, x):
        if len(x.shape) not in (self._rank, self._rank - 1):
            raise ValueError(f"{type(self).__name__}: expects a {self._rank}-D input (or "
                             f"{self._rank - 1}-D without N), got shape {tuple(x.shape)}")
        if not self.training or self.p == 0.0:
            return x
        if self.p == 1.0:
            return ops.zeros_like(x)
        lead = len(x.shape) - self._rank + 2  # N and C, or C alone
        mask_shape = tuple(x.shape[:lead]) + (1,) * (len(x.shape) - lead)
        keep = ops.less(ops.uniform(mask_shape, 0.0, 1.0, dtype=x.dtype), 1.0 - self.p)
        return ops.where(keep, x / (1.0 - self.p), 0.0)

    def extend_repr(self):
        return f"p={self.p}"


class Dropout1d(_ChannelDropout):
    _rank = 3


class Dropout2d(_ChannelDropout):
    _rank = 4


class Dropout3d(_ChannelDropout):
    _rank = 5


class Unflatten(Cell):
    """Splits axis `axis` into the sizes `unflattened_size`."""

    def __init__(self, axis, unflattened_size):
        super().__init__()
        self.axis = plain(axis)
        self.unflattened_size = tuple(plain(unflattened_size))
        if isinstance(self.axis, bool) or not isinstance(self.axis, int):
            raise TypeError(f"Unflatten: axis must be an int, got {self.axis!r}")

    def construct(self, x):
        nd = len(x.shape)
        if not -nd <= self.axis < nd:
            raise ValueError(f"Unflatten: axis {self.axis} is out of range for shape "
                             f"{tuple(x.shape)}")
        axis = self.axis % nd
        shape = tuple(x.shape[:axis]) + self.unflattened_size + tuple(x.shape[axis + 1:])
        return x.reshape(shape)

    def extend_repr(self):
        return f"axis={self.axis}, unflattened_size={self.unflattened_size}"


__all__ = ["Upsample", "PixelShuffle", "PixelUnshuffle", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AvgPool1d",
           "MaxPool1d", "Dropout1d", "Dropout2d", "Dropout3d", "Unflatten"]
