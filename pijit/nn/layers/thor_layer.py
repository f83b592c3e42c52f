"""THOR's layers (MindSpore's nn.DenseThor, nn.Conv2dThor and nn.EmbeddingThor): Dense, Conv2d
and Embedding that also measure the statistics the thor optimizer preconditions with, the
covariance A of the layer's input (rows a: A = a^T a / rows) and the covariance G of the
gradient flowing into the layer's output (rows d: G = d^T d / rows).

How the statistics leave the training step: a captured gradient needs bprops without side
effects, so a statistic cannot be assigned from inside the backward pass (MindSpore assigns it
in an InsertGradientOf hook). Instead each statistic is a Parameter whose *gradient* is the
statistic: a probe Cell passes the layer's input (or output) through unchanged and its bprop
returns, as the gradient of the statistic Parameter, the covariance of the input (of dout).
The statistics therefore come out of value_and_grad, grad and TrainOneStepCell with the
weights' gradients, eager or compiled alike, and the thor optimizer stores them into these
Parameters instead of stepping them. They are the layer's only Parameters that are neither
used by the forward nor updated by gradient descent.

With `layer.thor = False` the probes are left out: the forward is the plain layer's and the
statistics' gradients are zeros."""
import numpy as np

from pijit import ops
from pijit._tensor import Parameter, Tensor, float32, int32
from pijit.nn.cell import Cell
from pijit.nn.layers.basic import Dense, Embedding
from pijit.nn.layers.conv import Conv2d

__all__ = ["DenseThor", "Conv2dThor", "EmbeddingThor"]


def _rows(x, channel_axis):
    """x as a matrix with one row per sample (and per position), its channels as columns."""
    if channel_axis == 1 and x.ndim == 4:
        x = ops.transpose(x, (0, 2, 3, 1))
    return ops.reshape(x, (-1, x.shape[-1]))


def _covariance(rows):
    return ops.matmul(ops.transpose(rows, (1, 0)), rows) / float(rows.shape[0])


def _statistic(name, value):
    """A statistic Parameter: it takes gradients (they carry the statistic), never decays."""
    return Parameter(Tensor(np.asarray(value, np.float32)), name=name, requires_grad=True)


class _InputCovariance(Cell):
    """x unchanged; the gradient of `stat` is the covariance of x's rows (its last axis as
    columns), the input statistic A of a Dense layer."""

    def construct(self, x, stat):
        return x + 0.0

    def bprop(self, x, stat, out, dout):
        return dout, _covariance(ops.reshape(x, (-1, x.shape[-1])))


class _OutputCovariance(Cell):
    """y unchanged; the gradient of `stat` is the covariance of dout's rows (channels on
    `channel_axis`), the output-gradient statistic G."""

    def __init__(self, channel_axis):
        super().__init__()
        self.channel_axis = channel_axis

    def construct(self, y, stat):
        return y + 0.0

    def bprop(self, y, stat, out, dout):
        return dout, _covariance(_rows(dout, self.channel_axis))


class _PatchCovariance(Cell):
    """x unchanged; the gradient of `stat` is the covariance of the convolution's input
    windows (one row per sample and output position, C * kh * kw columns in the weight's
    order) and that of `normalizer` the number of windows per sample."""

    def __init__(self, conv):
        super().__init__()
        self.kernel_size, self.stride, self.dilation = conv.kernel_size, conv.stride, conv.dilation
        self.pad_mode, self.padding = conv.pad_mode, conv.padding

    def _pads(self, x):
        """(left, right, top, bottom), as ops.pad takes them, for the convolution's padding."""
        if self.pad_mode == "valid":
            return (0, 0, 0, 0)
        if self.pad_mode == "pad":
            p = self.padding
            return (p, p, p, p) if isinstance(p, int) else (p[2], p[3], p[0], p[1])
        pads = []  # "same": ceil(size / stride) outputs, the odd padding element after
        for size, k, s, d in zip(x.shape[2:], self.kernel_size, self.stride, self.dilation):
            total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
            pads.append((total // 2, total - total // 2))
        return pads[1] + pads[0]

    def construct(self, x, stat, normalizer):
        return x + 0.0

    def bprop(self, x, stat, normalizer, out, dout):
        pads = self._pads(x)
        if any(pads):
            x = ops.pad(x, pads)
        windows = ops.unfold(x, self.kernel_size, self.dilation, 0, self.stride)  # (N, C*kh*kw, L)
        count = windows.shape[2]
        rows = ops.reshape(ops.transpose(windows, (0, 2, 1)), (-1, windows.shape[1]))
        return dout, _covariance(rows), ops.fill(float32, (1,), float(count))


class _IdCounts(Cell):
    """The one-hot ids unchanged; the gradient of `stat` counts each id (the sum of the
    one-hot rows), the input statistic of an Embedding."""

    def construct(self, onehot, stat):
        return onehot + 0.0

    def bprop(self, onehot, stat, out, dout):
        return dout, ops.sum(ops.reshape(onehot, (-1, onehot.shape[-1])), 0)


class DenseThor(Dense):
    """Dense that records A = x^T x / N of its input rows in `matrix_a` and
    G = dout^T dout / N of the gradient of `x @ weight.T` in `matrix_g` (through gradients, see
    the module's docstring). Inputs with more than 2 axes count every leading index as a
    row."""

    def __init__(self, in_channels, out_channels, weight_init="normal", bias_init="zeros",
                 has_bias=True, activation=None):
        super().__init__(in_channels, out_channels, weight_init, bias_init, has_bias, activation)
        self.thor = True
        self.matrix_a = _statistic("matrix_a", np.eye(self.in_channels))
        self.matrix_g = _statistic("matrix_g", np.eye(self.out_channels))
        self._record_a = _InputCovariance()
        self._record_g = _OutputCovariance(-1)

    def construct(self, x):
        if self.thor:
            x = self._record_a(x, self.matrix_a)
        x = ops.matmul(x, ops.transpose(self.weight, (1, 0)))
        if self.thor:
            x = self._record_g(x, self.matrix_g)
        if self.has_bias:
            x = x + self.bias
        if self.activation_flag:
            x = self.activation(x)
        return x


class Conv2dThor(Conv2d):
    """Conv2d that records the covariance of its input windows in `matrix_a`
    ((C * kh * kw) square, over every sample and output position), the number of output
    positions per sample in `a_normalizer`, and the covariance of the gradient of the
    convolution's output over every sample and position in `matrix_g` (out_channels
    square). Only group=1 is supported: THOR's factors are per whole layer."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same",
                 padding=0, dilation=1, group=1, has_bias=False, weight_init="normal",
                 bias_init="zeros"):
        if group != 1:
            raise ValueError(f"Conv2dThor: only group=1 is supported, got group={group!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, pad_mode, padding,
                         dilation, group, has_bias, weight_init, bias_init)
        if isinstance(self.padding, (tuple, list)) and len(self.padding) not in (1, 4):
            raise ValueError(f"Conv2dThor: padding must be an int or 4 ints, got {padding!r}")
        if isinstance(self.padding, (tuple, list)) and len(self.padding) == 1:
            self.padding = self.padding[0]
        self.thor = True
        window = self.in_channels * self.kernel_size[0] * self.kernel_size[1]
        self.matrix_a = _statistic("matrix_a", np.eye(window))
        self.matrix_g = _statistic("matrix_g", np.eye(self.out_channels))
        self.a_normalizer = _statistic("a_normalizer", np.ones(1))
        self._record_a = _PatchCovariance(self)
        self._record_g = _OutputCovariance(1)

    def construct(self, x):
        if self.thor:
            x = self._record_a(x, self.matrix_a, self.a_normalizer)
        y = ops.conv2d(x, self.weight, stride=self.stride, pad_mode=self.pad_mode,
                       padding=self.padding, dilation=self.dilation, groups=self.group)
        if self.thor:
            y = self._record_g(y, self.matrix_g)
        if self.has_bias:
            y = y + ops.reshape(self.bias, (1, -1, 1, 1))
        return y


class EmbeddingThor(Embedding):
    """Embedding that records how often each id occurs in `matrix_a` (vocab_size,) and the
    covariance of the gradient of its output rows in `matrix_g` (embedding_size square)."""

    def __init__(self, vocab_size, embedding_size, use_one_hot=False, embedding_table="normal",
                 dtype=int32, padding_idx=None):
        super().__init__(vocab_size, embedding_size, use_one_hot, embedding_table, dtype,
                         padding_idx)
        self.thor = True
        self.matrix_a = _statistic("matrix_a", np.zeros(self.vocab_size))
        self.matrix_g = _statistic("matrix_g", np.zeros((self.embedding_size,) * 2))
        self._record_a = _IdCounts()
        self._record_g = _OutputCovariance(-1)

    def construct(self, ids):
        onehot = ops.one_hot(ids, self.vocab_size, 1.0, 0.0, dtype=self.embedding_table.dtype)
        if self.thor:
            onehot = self._record_a(onehot, self.matrix_a)
        out = ops.matmul(onehot, self.embedding_table)
        if self.thor:
            out = self._record_g(out, self.matrix_g)
        return out
