"""Conv1d, Conv2d and their transposed forms."""
import math

from pijit import ops
from pijit._numbers import plain
from pijit._tensor import Parameter, float32
from pijit.common.initializer import HeUniform, Uniform, _fans, initializer
from pijit.nn.cell import Cell
from pijit.nn._checks import int_at_least

_PAD_MODES = ("same", "valid", "pad")


def _pair(name, what, v):
    v = plain(v)
    if isinstance(v, list):
        v = tuple(v)
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
    padding = plain(padding)
    pads = (padding,) if isinstance(padding, int) else tuple(padding)
    if any(p < 0 for p in pads):
        raise ValueError(f"{name}: padding must be non-negative, got {padding!r}")
    if pad_mode != "pad" and any(pads):
        raise ValueError(f"{name}: padding must be 0 when pad_mode is '{pad_mode}', got "
                         f"{padding!r}")
    return pad_mode


def _channels(name, in_channels, out_channels, group):
    in_channels, out_channels, group = plain(in_channels), plain(out_channels), plain(group)
    for what, v in (("in_channels", in_channels), ("out_channels", out_channels), ("group", group)):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"{name}: {what} must be a positive int, got {v!r}")
    if in_channels % group or out_channels % group:
        raise ValueError(f"{name}: in_channels ({in_channels}) and out_channels "
                         f"({out_channels}) must be divisible by group ({group})")
    return in_channels, out_channels, group


def _weight_and_bias(shape, out_channels, has_bias, weight_init, bias_init, dtype):
    """The weight of `shape` and the bias (None without has_bias) Parameters, with MindSpore
    2.x's defaults when no init is given: HeUniform(sqrt(5)) for the weight and
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the bias."""
    if weight_init is None:
        weight_init = HeUniform(negative_slope=math.sqrt(5))
    weight = Parameter(initializer(weight_init, shape, dtype), name="weight")
    if not has_bias:
        return weight, None
    if bias_init is None:
        bias_init = Uniform(1 / math.sqrt(max(1, _fans(shape)[0])))
    return weight, Parameter(initializer(bias_init, (out_channels,), dtype), name="bias")


class Conv2d(Cell):
    """2-D convolution of NCHW data; weight (out_channels, in_channels / group, kh, kw)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same",
                 padding=0, dilation=1, group=1, has_bias=False, weight_init="normal",
                 bias_init="zeros", data_format="NCHW", dtype=float32):
        super().__init__()
        if data_format != "NCHW":
            raise ValueError(f"Conv2d: only data_format='NCHW' is supported, got {data_format!r}")
        in_channels, out_channels, group = _channels("Conv2d", in_channels, out_channels, group)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _pair("Conv2d", "kernel_size", kernel_size)
        self.stride = _pair("Conv2d", "stride", stride)
        self.dilation = _pair("Conv2d", "dilation", dilation)
        self.pad_mode = _pad_mode("Conv2d", pad_mode, padding)
        self.padding = plain(padding)
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

    def extend_repr(self):
        return (f"input_channels={self.in_channels}, output_channels={self.out_channels}, "
                f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"pad_mode={self.pad_mode}, padding={self.padding}, dilation={self.dilation}, "
                f"group={self.group}, has_bias={self.has_bias}, weight_init={self.weight_init}, "
                f"bias_init={self.bias_init}, format={self.format}")


class Conv2dTranspose(Cell):
    """2-D transposed convolution of NCHW data (the gradient of Conv2d with respect to its
    input); weight (in_channels, out_channels / group, kh, kw). Output height by pad_mode:
    'same' H * stride, 'valid' H * stride + max(dilation * (kh - 1) + 1 - stride, 0), 'pad'
    (H - 1) * stride - top - bottom + dilation * (kh - 1) + 1 + output_padding."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same",
                 padding=0, output_padding=0, dilation=1, group=1, has_bias=False,
                 weight_init=None, bias_init=None, dtype=float32):
        super().__init__()
        name = "Conv2dTranspose"
        in_channels, out_channels, group = _channels(name, in_channels, out_channels, group)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _pair(name, "kernel_size", kernel_size)
        self.stride = _pair(name, "stride", stride)
        self.dilation = _pair(name, "dilation", dilation)
        self.pad_mode = _pad_mode(name, pad_mode, padding)
        self.padding = plain(padding)
        output_padding = plain(output_padding)
        pair = (output_padding, output_padding) if isinstance(output_padding, int) \
            else tuple(output_padding)
        if len(pair) != 2 or any(not 0 <= p < s for p, s in zip(pair, self.stride)):
            raise ValueError(f"{name}: output_padding must be an int or 2 ints, each "
                             f"non-negative and below the stride {self.stride}, got "
                             f"{output_padding!r}")
        if any(pair) and self.pad_mode != "pad":
            raise ValueError(f"{name}: output_padding needs pad_mode='pad', got "
                             f"pad_mode='{self.pad_mode}'")
        self.output_padding = pair
        self.group, self.has_bias = group, has_bias
        shape = (in_channels, out_channels // group) + self.kernel_size
        self.weight, self.bias = _weight_and_bias(shape, out_channels, has_bias, weight_init,
                                                  bias_init, dtype)

    def construct(self, x):
        return ops.conv_transpose2d(x, self.weight, self.bias, stride=self.stride,
                                    padding=self.padding, output_padding=self.output_padding,
                                    groups=self.group, dilation=self.dilation,
                                    pad_mode=self.pad_mode)

    def extend_repr(self):
        return (f"input_channels={self.in_channels}, output_channels={self.out_channels}, "
                f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"pad_mode={self.pad_mode}, padding={self.padding}, "
                f"output_padding={self.output_padding}, dilation={self.dilation}, "
                f"group={self.group}, has_bias={self.has_bias}")


class _Conv1dBase(Cell):
    """1-D convolutions of (N, C, L) data, run as the 2-D ones over (N, C, 1, L) with a
    (1, k) kernel. The weight is 4-D, (out, in / group, 1, k) for Conv1d and
    (in, out / group, 1, k) for Conv1dTranspose, as MindSpore stores it."""
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same",
                 padding=0, dilation=1, group=1, has_bias=False, weight_init=None,
                 bias_init=None, dtype=float32):
        super().__init__()
        name = type(self).__name__
        in_channels, out_channels, group = _channels(name, in_channels, out_channels, group)
        self.in_channels, self.out_channels, self.group = in_channels, out_channels, group
        self.kernel_size = int_at_least(name, "kernel_size", kernel_size, 1)
        self.stride = int_at_least(name, "stride", stride, 1)
        self.dilation = int_at_least(name, "dilation", dilation, 1)
        self.padding = int_at_least(name, "padding", padding, 0)
        self.pad_mode = _pad_mode(name, pad_mode, self.padding)
        self.has_bias = has_bias
        shape = ((in_channels, out_channels // group) if self._transposed
                 else (out_channels, in_channels // group)) + (1, self.kernel_size)
        self.weight, self.bias = _weight_and_bias(shape, out_channels, has_bias, weight_init,
                                                  bias_init, dtype)

    def construct(self, x):
        if len(x.shape) != 3:
            raise ValueError(f"{type(self).__name__}: expects (N, C, L) input, got shape "
                             f"{tuple(x.shape)}")
        kwargs = dict(stride=(1, self.stride), padding=(0, 0, self.padding, self.padding),
                      dilation=(1, self.dilation), pad_mode=self.pad_mode, groups=self.group)
        x = ops.expand_dims(x, 2)
        if self._transposed:
            y = ops.conv_transpose2d(x, self.weight, self.bias, **kwargs)
        else:
            y = ops.conv2d(x, self.weight, self.bias, **kwargs)
        return ops.squeeze(y, 2)

    def extend_repr(self):
        return (f"input_channels={self.in_channels}, output_channels={self.out_channels}, "
                f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"pad_mode={self.pad_mode}, padding={self.padding}, "
                f"dilation={self.dilation}, group={self.group}, has_bias={self.has_bias}")


class Conv1d(_Conv1dBase):
    """1-D convolution of (N, C, L) data."""


class Conv1dTranspose(_Conv1dBase):
    """1-D transposed convolution of (N, C, L) data (Conv1d's input gradient)."""
    _transposed = True
