"""MindSpore's small nn Cells over pijit's ops: padding layers, matrix helpers (Tril, Triu,
MatrixDiag, ...), Norm, OneHot, Range, Moments, ClipByNorm, L1Regularizer, ImageGradients,
CentralCrop, LRN, RReLU, Roll, TimeDistributed, and the CosineEmbeddingLoss and RMSELoss
losses. Each construct is made of ops, so networks using them capture as one graph."""
from pijit import ops
from pijit._numbers import plain
from pijit._tensor import float32, int64
from pijit.nn._checks import instance_of
from pijit.nn.cell import Cell

__all__ = ["ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d",
           "ReflectionPad2d", "Roll", "Tril", "Triu", "MatrixDiag", "MatrixDiagPart",
           "MatrixSetDiag", "Norm", "OneHot", "Range", "Moments", "ClipByNorm", "L1Regularizer",
           "ImageGradients", "CentralCrop", "LRN", "RReLU", "TimeDistributed",
           "CosineEmbeddingLoss", "RMSELoss"]


# ---- padding -------------------------------------------------------------------------------------

class _PadNd(Cell):
    """Pads the last `_axes` axes by `padding` (an int for every side, or (before, after)
    pairs from the last axis backwards) in `_mode`."""
    _axes, _mode = 1, "constant"

    def __init__(self, padding, value=0.0):
        super().__init__()
        padding = plain(padding)
        if isinstance(padding, int) and not isinstance(padding, bool):
            padding = (padding,) * (2 * self._axes)
        padding = tuple(padding)
        if len(padding) != 2 * self._axes or not all(isinstance(p, int) and p >= 0
                                                     for p in padding):
            raise ValueError(f"{type(self).__name__}: padding must be a non-negative int or "
                             f"{2 * self._axes} of them, got {padding!r}")
        self.padding = padding
        self.value = float(value)
        # ops.pad's (before, after) per axis, first axis first.
        self._pairs = tuple((padding[2 * i], padding[2 * i + 1])
                            for i in reversed(range(self._axes)))

    def construct(self, x):
        paddings = ((0, 0),) * (x.ndim - self._axes) + self._pairs
        if self._mode == "constant":
            return ops.pad(x, paddings, "CONSTANT", self.value)
        return ops.pad(x, paddings, "REFLECT")

    def extend_repr(self):
        return f"padding={self.padding}"


class ConstantPad1d(_PadNd):
    """Pads the last axis with `value`: padding (left, right) or an int."""


class ConstantPad2d(_PadNd):
    """Pads the last two axes with `value`: padding (left, right, top, bottom) or an int."""
    _axes = 2


class ConstantPad3d(_PadNd):
    """Pads the last three axes with `value`: padding of six ints or an int."""
    _axes = 3


class ZeroPad2d(ConstantPad2d):
    """Pads the last two axes with zeros: padding (left, right, top, bottom) or an int."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ReflectionPad1d(_PadNd):
    """Pads the last axis with its mirror image (without the edge)."""
    _mode = "reflect"

    def __init__(self, padding):
        super().__init__(padding)


class ReflectionPad2d(ReflectionPad1d):
    """Pads the last two axes with their mirror image (without the edge)."""
    _axes = 2


# ---- matrices and shapes -------------------------------------------------------------------------

class Roll(Cell):
    """Roll(shift, axis)(x): x shifted along axis, wrapping around."""

    def __init__(self, shift, axis):
        super().__init__()
        self.shift, self.axis = shift, axis

    def construct(self, input_x):
        return ops.roll(input_x, self.shift, self.axis)


class Tril(Cell):
    """Tril()(x, k=0): x with the elements above diagonal k zeroed."""

    def construct(self, x, k=0):
        return ops.tril(x, k)


class Triu(Cell):
    """Triu()(x, k=0): x with the elements below diagonal k zeroed."""

    def construct(self, x, k=0):
        return ops.triu(x, k)


class MatrixDiag(Cell):
    """MatrixDiag()(x): (..., n) -> (..., n, n) with x on the diagonal."""

    def construct(self, x):
        return ops.matrix_diag(x)


class MatrixDiagPart(Cell):
    """MatrixDiagPart()(x): the diagonal of each matrix in the last two axes."""

    def construct(self, x):
        return ops.matrix_diag_part(x)


class MatrixSetDiag(Cell):
    """MatrixSetDiag()(x, diagonal): x with each matrix's diagonal replaced."""

    def construct(self, x, diagonal):
        return ops.matrix_set_diag(x, diagonal)


class Norm(Cell):
    """Norm(axis=(), keep_dims=False)(x): sqrt(sum(x^2)) over axis (every axis when
    empty)."""

    def __init__(self, axis=(), keep_dims=False):
        super().__init__()
        self.axis = tuple(axis) if isinstance(axis, (tuple, list)) else axis
        self.keep_dims = keep_dims

    def construct(self, x):
        axis = None if self.axis == () else self.axis
        return ops.sqrt(ops.sum(x * x, axis, keepdims=self.keep_dims))


class OneHot(Cell):
    """OneHot(axis=-1, depth=1, on_value=1.0, off_value=0.0, dtype=float32)(indices)."""

    def __init__(self, axis=-1, depth=1, on_value=1.0, off_value=0.0, dtype=float32):
        super().__init__()
        self.axis, self.depth, self.dtype = axis, depth, dtype
        self.on_value, self.off_value = on_value, off_value

    def construct(self, indices):
        return ops.one_hot(indices, self.depth, self.on_value, self.off_value,
                           axis=self.axis).astype(self.dtype)


class Range(Cell):
    """Range(start, limit=None, delta=1)(): start, start + delta, ... below limit (0 .. start
    when limit is None); Int64 for ints, Float32 otherwise."""

    def __init__(self, start, limit=None, delta=1):
        super().__init__()
        if limit is None:
            start, limit = 0, start
        if delta == 0:
            raise ValueError("Range: delta must not be 0")
        self.start, self.limit, self.delta = start, limit, delta
        ints = all(isinstance(v, int) for v in (start, limit, delta))
        self.dtype = int64 if ints else float32

    def construct(self):
        return ops.arange(self.start, self.limit, self.delta, dtype=self.dtype)


class Moments(Cell):
    """Moments(axis=None, keep_dims=None)(x): (mean, population variance) over axis."""

    def __init__(self, axis=None, keep_dims=None):
        super().__init__()
        self.axis = tuple(axis) if isinstance(axis, list) else axis
        self.keep_dims = bool(keep_dims)

    def construct(self, x):
        mean = ops.mean(x, self.axis, keepdims=True)
        variance = ops.mean(ops.square(x - mean), self.axis, keepdims=self.keep_dims)
        return (mean if self.keep_dims else ops.mean(x, self.axis)), variance


class ClipByNorm(Cell):
    """ClipByNorm(axis=None)(x, clip_norm): x scaled down where its L2 norm over axis
    exceeds clip_norm."""

    def __init__(self, axis=None):
        super().__init__()
        self.axis = tuple(axis) if isinstance(axis, list) else axis

    def construct(self, x, clip_norm):
        norm = ops.sqrt(ops.sum(x * x, self.axis, keepdims=True))
        return x * clip_norm / ops.maximum(norm, clip_norm)


class L1Regularizer(Cell):
    """L1Regularizer(scale)(weights): scale * sum(|weights|)."""

    def __init__(self, scale):
        super().__init__()
        scale = plain(scale)
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or scale <= 0:
            raise ValueError(f"L1Regularizer: scale must be a positive number, got {scale!r}")
        self.scale = float(scale)

    def construct(self, weights):
        return ops.sum(ops.abs(weights)) * self.scale


class ImageGradients(Cell):
    """ImageGradients()(images): (dy, dx) of (N, C, H, W) images, the differences with the
    next row and column, 0 in the last row and column."""

    def construct(self, images):
        dy = images[:, :, 1:, :] - images[:, :, :-1, :]
        dx = images[:, :, :, 1:] - images[:, :, :, :-1]
        dy = ops.pad(dy, ((0, 0), (0, 0), (0, 1), (0, 0)))
        dx = ops.pad(dx, ((0, 0), (0, 0), (0, 0), (0, 1)))
        return dy, dx


class CentralCrop(Cell):
    """CentralCrop(central_fraction)(image): the central part of the last two axes, that
    fraction of each side."""

    def __init__(self, central_fraction):
        super().__init__()
        if not 0.0 < central_fraction <= 1.0:
            raise ValueError(f"CentralCrop: central_fraction must be in (0, 1], got "
                             f"{central_fraction}")
        self.central_fraction = float(central_fraction)

    def construct(self, image):
        h, w = image.shape[-2], image.shape[-1]
        top = int((h - h * self.central_fraction) / 2)
        left = int((w - w * self.central_fraction) / 2)
        return image[..., top:h - top, left:w - left]


class LRN(Cell):
    """Local response normalisation across channels (ops.lrn)."""

    def __init__(self, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5,
                 norm_region="ACROSS_CHANNELS"):
        super().__init__()
        self.depth_radius, self.bias, self.alpha, self.beta = depth_radius, bias, alpha, beta
        self.norm_region = norm_region

    def construct(self, input_x):
        return ops.lrn(input_x, self.depth_radius, self.bias, self.alpha, self.beta,
                       self.norm_region)


class RReLU(Cell):
    """x for x >= 0, else x times a slope drawn from [lower, upper] per element in training
    mode, (lower + upper) / 2 in evaluation mode."""

    def __init__(self, lower=1 / 8, upper=1 / 3):
        super().__init__()
        if lower > upper:
            raise ValueError(f"RReLU: lower ({lower}) must not exceed upper ({upper})")
        self.lower, self.upper = float(lower), float(upper)

    def construct(self, x):
        if self.training:
            return ops.rrelu(x, self.lower, self.upper)
        return ops.where(ops.greater_equal(x, 0), x, x * ((self.lower + self.upper) / 2))


class TimeDistributed(Cell):
    """Applies `layer` to each step along time_axis and stacks the results there."""

    def __init__(self, layer, time_axis, reshape_with_axis=None):
        super().__init__()
        self.layer = instance_of("TimeDistributed", "layer", layer, Cell)
        self.time_axis = time_axis
        self.reshape_with_axis = reshape_with_axis

    def construct(self, inputs):
        axis = self.time_axis % inputs.ndim
        steps = ops.unstack(inputs, axis)
        return ops.stack(tuple(self.layer(step) for step in steps), axis)


class CosineEmbeddingLoss(Cell):
    """CosineEmbeddingLoss(margin=0.0, reduction='mean')(logits_x1, logits_x2, labels)."""

    def __init__(self, margin=0.0, reduction="mean"):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"CosineEmbeddingLoss: reduction must be 'mean', 'sum' or 'none', "
                             f"got {reduction!r}")
        self.margin, self.reduction = float(margin), reduction

    def construct(self, logits_x1, logits_x2, labels):
        return ops.cosine_embedding_loss(logits_x1, logits_x2, labels, self.margin,
                                         self.reduction)


class RMSELoss(Cell):
    """RMSELoss()(logits, label): sqrt(mean((logits - label)^2))."""

    def construct(self, logits, label):
        return ops.sqrt(ops.mean(ops.square(logits - label)))
