"""MaxPool2d and AvgPool2d (MindSpore's pad_mode 'valid' / 'same')."""
from pijit import ops
from pijit.nn.cell import Cell
from pijit.nn.layers.conv import _pair


class _Pool2d(Cell):
    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", data_format="NCHW"):
        super().__init__()
        name = type(self).__name__
        if data_format != "NCHW":
            raise ValueError(f"{name}: only data_format='NCHW' is supported, got {data_format!r}")
        if not isinstance(pad_mode, str) or pad_mode.lower() not in ("valid", "same"):
            raise ValueError(f"{name}: pad_mode must be 'valid' or 'same', got {pad_mode!r}")
        self.kernel_size = _pair(name, "kernel_size", kernel_size)
        self.stride = _pair(name, "stride", stride)
        self.pad_mode = pad_mode.lower()
        self.format = data_format

    def extend_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, pad_mode={self.pad_mode}"


class MaxPool2d(_Pool2d):
    """Max pooling over H and W of NCHW data."""

    def construct(self, x):
        return ops.max_pool2d(x, self.kernel_size, self.stride, pad_mode=self.pad_mode)


class AvgPool2d(_Pool2d):
    """Average pooling over H and W of NCHW data ('same' padding is left out of the
    divisor)."""

    def construct(self, x):
        return ops.avg_pool2d(x, self.kernel_size, self.stride, pad_mode=self.pad_mode)
