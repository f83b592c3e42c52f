"""More of MindSpore's nn Cells: BatchNorm3d (BatchNorm2d over the flattened depth), the
bilinear BiDense, EmbeddingLookup, ParameterUpdate and the PSNR image measure."""
import math

from pijit import ops
from pijit._numbers import plain
from pijit._ops_conv3d import adaptive_avg_pool3d
from pijit._tensor import Parameter, float32
from pijit.common.initializer import Uniform, initializer
from pijit.nn._checks import instance_of
from pijit.nn.cell import Cell
from pijit.nn.layers.conv import _channels, _pad_mode, _weight_and_bias
from pijit.nn.layers.normalization import BatchNorm2d
from pijit.nn.layers.resize import _adaptive

__all__ = ["AdaptiveAvgPool3d", "BatchNorm3d", "BiDense", "Conv3d", "EmbeddingLookup", "ParameterUpdate", "PSNR"]


AdaptiveAvgPool3d = _adaptive(
    "AdaptiveAvgPool3d", adaptive_avg_pool3d,
    """The mean over windows splitting D, H and W of (N, C, D, H, W) data into output_size
    parts (an int, or 3 of them; None keeps an axis).""", module=__name__)


class BatchNorm3d(BatchNorm2d):
    """Batch normalisation of (N, C, D, H, W) data over N, D, H and W per channel: the
    statistics of BatchNorm2d on the data with D and H flattened together."""

    def __init__(self, num_features, eps=1e-5, momentum=0.9, affine=True, gamma_init="ones",
                 beta_init="zeros", moving_mean_init="zeros", moving_var_init="ones",
                 use_batch_statistics=None, data_format="NCDHW", dtype=float32):
        if data_format != "NCDHW":
            raise ValueError(f"BatchNorm3d: only data_format='NCDHW' is supported, got "
                             f"{data_format!r}")
        super().__init__(num_features, eps, momentum, affine, gamma_init, beta_init,
                         moving_mean_init, moving_var_init, use_batch_statistics, "NCHW", dtype)

    def construct(self, x):
        if x.ndim != 5:
            raise ValueError(f"BatchNorm3d: expects (N, C, D, H, W) input, got {x.ndim}-D")
        n, c, d, h, w = x.shape
        flat = ops.reshape(x, (n, c, d * h, w))
        return ops.reshape(super().construct(flat), (n, c, d, h, w))


class Conv3d(Cell):
    """3-D convolution of (N, C, D, H, W) data (ops.conv3d); weight (out_channels,
    in_channels / group, kd, kh, kw) with MindSpore 2.x's default initialisers."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same",
                 padding=0, dilation=1, group=1, has_bias=False, weight_init=None,
                 bias_init=None, data_format="NCDHW", dtype=float32):
        super().__init__()
        if data_format != "NCDHW":
            raise ValueError(f"Conv3d: only data_format='NCDHW' is supported, got "
                             f"{data_format!r}")
        in_channels, out_channels, group = _channels("Conv3d", in_channels, out_channels, group)
        self.in_channels, self.out_channels, self.group = in_channels, out_channels, group
        kernel_size = plain(kernel_size)
        self.kernel_size = (kernel_size,) * 3 if isinstance(kernel_size, int) \
            else tuple(kernel_size)
        self.stride, self.dilation = stride, dilation
        self.pad_mode = _pad_mode("Conv3d", pad_mode, padding)
        self.padding = plain(padding)
        self.has_bias = has_bias
        shape = (out_channels, in_channels // group) + self.kernel_size
        self.weight, self.bias = _weight_and_bias(shape, out_channels, has_bias, weight_init,
                                                  bias_init, dtype)

    def construct(self, x):
        return ops.conv3d(x, self.weight, self.bias, self.stride, self.pad_mode, self.padding,
                          self.dilation, self.group)


class BiDense(Cell):
    """y = x1^T A x2 + b per output feature: weight (out, in1, in2), bias (out,). Both are
    U(-1/sqrt(in1), 1/sqrt(in1)) unless given."""

    def __init__(self, in1_channels, in2_channels, out_channels, weight_init=None,
                 bias_init=None, has_bias=True, dtype=float32):
        super().__init__()
        sizes = [plain(v) for v in (in1_channels, in2_channels, out_channels)]
        for name, value in zip(("in1_channels", "in2_channels", "out_channels"), sizes):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"BiDense: {name} must be a positive int, got {value!r}")
        self.in1_channels, self.in2_channels, self.out_channels = sizes
        bound = 1.0 / math.sqrt(self.in1_channels)
        self.weight = Parameter(initializer(Uniform(bound) if weight_init is None else
                                            weight_init, (sizes[2], sizes[0], sizes[1]), dtype),
                                name="weight")
        self.has_bias = has_bias
        if has_bias:
            self.bias = Parameter(initializer(Uniform(bound) if bias_init is None else bias_init,
                                              (sizes[2],), dtype), name="bias")

    def construct(self, input1, input2):
        rows1 = ops.reshape(input1, (-1, self.in1_channels))
        rows2 = ops.reshape(input2, (-1, self.in2_channels))
        out = ops.einsum("bi,oij,bj->bo", rows1, self.weight, rows2)
        out = ops.reshape(out, tuple(input1.shape[:-1]) + (self.out_channels,))
        return out + self.bias if self.has_bias else out


class EmbeddingLookup(Cell):
    """The rows of embedding_table (vocab_size, embedding_size) at integer indices; with
    max_norm, each looked-up row with a larger L2 norm is scaled down to it."""

    def __init__(self, vocab_size, embedding_size, param_init="normal", target="CPU",
                 slice_mode="batch_slice", manual_shapes=None, max_norm=None, sparse=True,
                 vocab_cache_size=0, dtype=float32):
        super().__init__()
        self.vocab_size, self.embedding_size = int(vocab_size), int(embedding_size)
        self.max_norm = None if max_norm is None else float(max_norm)
        self.embedding_table = Parameter(initializer(param_init, (self.vocab_size,
                                                                  self.embedding_size), dtype),
                                         name="embedding_table")

    def construct(self, indices):
        rows = ops.gather(self.embedding_table, indices, 0)
        if self.max_norm is None:
            return rows
        norms = ops.sqrt(ops.sum(rows * rows, -1, keepdims=True))
        return rows * ops.minimum(self.max_norm / ops.maximum(norms, 1e-12), 1.0)


class ParameterUpdate(Cell):
    """ParameterUpdate(param)(x): writes x into param in place and returns it."""

    def __init__(self, param):
        super().__init__(auto_prefix=False)
        self._param = instance_of("ParameterUpdate", "param", param, Parameter)

    def construct(self, x):
        return ops.assign(self._param, x)


class PSNR(Cell):
    """PSNR(max_val=1.0)(img1, img2): 10 log10(max_val^2 / mse) per image of (N, C, H, W)
    batches."""

    def __init__(self, max_val=1.0):
        super().__init__()
        max_val = plain(max_val)
        if isinstance(max_val, bool) or not isinstance(max_val, (int, float)) or max_val <= 0:
            raise ValueError(f"PSNR: max_val must be a positive number, got {max_val!r}")
        self.max_val = float(max_val)

    def construct(self, img1, img2):
        mse = ops.mean(ops.square(img1 - img2), (1, 2, 3))
        return 10.0 * ops.log10(self.max_val * self.max_val / mse)
