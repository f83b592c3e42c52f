"""Conv2d."""
from pijit import ops
from pijit._tensor import Parameter, float32
from pijit.common.initializer import initializer
from pijit.nn.cell import Cell

_PAD_MODES = ("same", "valid", "pad")


def _pair(name, what, v):
    if isinstance(v, int) and not isinstance(v, bool):
        v = (v, v)
    if not (isinstance(v, tuple) and len(v) == 2 and all(isinstance(i, int) and i > 0 for i in v)):
        raise ValueError(f"{name}: {what} must be a positive int or a tuple of 2 positive ints, "
                         f"got {v!r}")
    return v


def _pad_mode(name, pad_mode, padding):
    if not isinstance(pad_mode, str) or pad_mode.lower() not in _PAD_MODES:
        raise ValueError(f"{name}: pad_mode must be one of {_PAD_MODES}, got {pad_mode!r}")
    pad_mode = pad_mode.lower()
    pads = (padding,) if isinstance(padding, int) else tuple(padding)
    if any(p < 0 for p in pads):
        raise ValueError(f"{name}: padding must be non-negative, got {padding!r}")
    if pad_mode != "pad" and any(pads):
        raise ValueError(f"{name}: padding must be 0 when pad_mode is '{pad_mode}', got "
                         f"{padding!r}")
    return pad_mode


class Conv2d(Cell):
    """2-D convolution of NCHW data; weight (out_channels, in_channels / group, kh, kw)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same",
                 padding=0, dilation=1, group=1, has_bias=False, weight_init="normal",
                 bias_init="zeros", data_format="NCHW", dtype=float32):
        super().__init__()
        if data_format != "NCHW":
            raise ValueError(f"Conv2d: only data_format='NCHW' is supported, got {data_format!r}")
        for what, v in (("in_channels", in_channels), ("out_channels", out_channels), ("group", group)):
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"Conv2d: {what} must be a positive int, got {v!r}")
        if in_channels % group or out_channels % group:
            raise ValueError(f"Conv2d: in_channels ({in_channels}) and out_channels "
                             f"({out_channels}) must be divisible by group ({group})")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _pair("Conv2d", "kernel_size", kernel_size)
        self.stride = _pair("Conv2d", "stride", stride)
        self.dilation = _pair("Conv2d", "dilation", dilation)
        self.pad_mode = _pad_mode("Conv2d", pad_mode, padding)
        self.padding = padding
        self.group, self.has_bias, self.format = group, has_bias, data_format
        self.weight_init, self.bias_init = weight_init, bias_init
        shape = (out_channels, in_channels // group) + self.kernel_size
        self.weight = Parameter(initializer(weight_init, shape, dtype), name="weight")
        self.bias = Parameter(initializer(bias_init, (out_channels,), dtype), name="bias") \
            if has_bias else None

    def construct(self, x):
        if self.has_bias:
            return ops.conv2d(x, self.weight, self.bias, stride=self.stride,
                              pad_mode=self.pad_mode, padding=self.padding,
                              dilation=self.dilation, groups=self.group)
        return ops.conv2d(x, self.weight, stride=self.stride, pad_mode=self.pad_mode,
                          padding=self.padding, dilation=self.dilation, groups=self.group)

    def _pijit_vjp(self, inputs, out):
        """The gradient on the eager tape (the tape has no conv2d rule): (tensors, backward)
        with backward(dout) giving the gradients of x, weight and bias, as convolutions.
        Covers stride 1, dilation 1, group 1 and any padding up to kernel - 1."""
        x, = inputs
        kh, kw = self.kernel_size
        if self.stride != (1, 1) or self.dilation != (1, 1) or self.group != 1:
            raise NotImplementedError(
                f"grad: the gradient of Conv2d with stride={self.stride}, "
                f"dilation={self.dilation}, group={self.group} is not implemented (only stride "
                f"1, dilation 1 and group 1)")
        if self.pad_mode == "valid":
            pads = (0, 0, 0, 0)
        elif self.pad_mode == "same":
            pads = ((kh - 1) // 2, kh - 1 - (kh - 1) // 2, (kw - 1) // 2, kw - 1 - (kw - 1) // 2)
        else:
            p = self.padding
            pads = (p, p, p, p) if isinstance(p, int) else tuple(p)
        if max(pads[:2]) > kh - 1 or max(pads[2:]) > kw - 1:
            raise NotImplementedError(f"grad: the gradient of Conv2d with padding {pads} larger "
                                      f"than the kernel {self.kernel_size} minus 1 is not "
                                      f"implemented")
        weight, bias = self.weight, self.bias

        def backward(dout):
            # dW[o, c] = sum_n xpad[n, c] (*) dout[n, o]: a convolution over the batch axis.
            dw = ops.conv2d(ops.transpose(x, (1, 0, 2, 3)), ops.transpose(dout, (1, 0, 2, 3)),
                            pad_mode="pad", padding=pads)
            dw = ops.transpose(dw, (1, 0, 2, 3))
            # dx: the full correlation of dout with the flipped, transposed kernel.
            flipped = ops.transpose(weight, (1, 0, 2, 3))[:, :, ::-1, ::-1]
            full = (kh - 1 - pads[0], kh - 1 - pads[1], kw - 1 - pads[2], kw - 1 - pads[3])
            dx = ops.conv2d(dout, flipped, pad_mode="pad", padding=full)
            grads = [dx, dw]
            if bias is not None:
                grads.append(ops.sum(dout, (0, 2, 3)))
            return grads

        tensors = [x, weight] + ([bias] if bias is not None else [])
        return tensors, backward

    def extend_repr(self):
        return (f"input_channels={self.in_channels}, output_channels={self.out_channels}, "
                f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"pad_mode={self.pad_mode}, padding={self.padding}, dilation={self.dilation}, "
                f"group={self.group}, has_bias={self.has_bias}, weight_init={self.weight_init}, "
                f"bias_init={self.bias_init}, format={self.format}")
