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

    def _windows(self, x):
        """(n, c, out_h, out_w) for a gradient on non-overlapping windows; raises otherwise."""
        if self.kernel_size != self.stride or self.pad_mode != "valid":
            raise NotImplementedError(
                f"grad: the gradient of {type(self).__name__} with kernel_size="
                f"{self.kernel_size}, stride={self.stride}, pad_mode={self.pad_mode!r} is not "
                f"implemented (only non-overlapping windows: stride == kernel_size, 'valid')")
        n, c, h, w = x.shape
        return n, c, h // self.kernel_size[0], w // self.kernel_size[1]

    def _spread(self, t, x):
        """Each element of `t` (n, c, oh, ow) repeated over its kh x kw window, placed in a
        tensor shaped like x (rows and columns that no window covers are zero)."""
        n, c, oh, ow = t.shape
        kh, kw = self.kernel_size
        t = ops.broadcast_to(ops.reshape(t, (n, c, oh, 1, ow, 1)), (n, c, oh, kh, ow, kw))
        t = ops.reshape(t, (n, c, oh * kh, ow * kw))
        h, w = x.shape[2], x.shape[3]
        if ow * kw < w:
            t = ops.concat([t, ops.zeros((n, c, oh * kh, w - ow * kw), dtype=t.dtype)], 3)
        if oh * kh < h:
            t = ops.concat([t, ops.zeros((n, c, h - oh * kh, w), dtype=t.dtype)], 2)
        return t

    def extend_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, pad_mode={self.pad_mode}"


class MaxPool2d(_Pool2d):
    """Max pooling over H and W of NCHW data."""

    def construct(self, x):
        return ops.max_pool2d(x, self.kernel_size, self.stride, pad_mode=self.pad_mode)

    def _pijit_vjp(self, inputs, out):
        """The gradient on the eager tape: dout goes to the maximum of each window, shared
        equally between ties (as the max reduction's gradient)."""
        x, = inputs
        n, c, oh, ow = self._windows(x)
        kh, kw = self.kernel_size

        def backward(dout):
            mask = ops.equal(x, self._spread(out, x)).astype(x.dtype)
            ties = ops.sum(ops.reshape(mask[:, :, :oh * kh, :ow * kw], (n, c, oh, kh, ow, kw)),
                           (3, 5))
            return [mask * self._spread(dout / ties, x)]

        return [x], backward


class AvgPool2d(_Pool2d):
    """Average pooling over H and W of NCHW data ('same' padding is left out of the
    divisor)."""

    def construct(self, x):
        return ops.avg_pool2d(x, self.kernel_size, self.stride, pad_mode=self.pad_mode)

    def _pijit_vjp(self, inputs, out):
        """The gradient on the eager tape: dout / (kh * kw) over each window."""
        x, = inputs
        self._windows(x)
        size = self.kernel_size[0] * self.kernel_size[1]
        return [x], lambda dout: [self._spread(dout / size, x)]
