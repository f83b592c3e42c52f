"""More of MindSpore's primitives (ops.Floor(), ops.CumSum(), ops.Median(), ...): each an
object whose attributes are fixed at construction and whose call composes pijit's ops or
the ops functions, so captured code inlines it like any primitive."""
from pijit import _C
from pijit import _ops_activation
from pijit import _ops_array_extra as _array
from pijit import _ops_loss
from pijit import _ops_math_extra as _math
from pijit import _ops_resize
from pijit._tensor import int64
from pijit.mint import _reduce as _mint_reduce
from pijit.mint import _sort as _mint_sort
from pijit.mint._checks import raise_error
from pijit.numpy import reductions as _np_reductions
from pijit.ops import Primitive, _composed as _calling

_ops = _C.ops


def _segment_primitive(name, fn):
    return _calling(name, fn, f"{name}()(x, segment_ids, num_segments).")


# ---- element-wise, no attributes ---------------------------------------------------------------

ACos = _calling("ACos", _ops.acos, "arccos(x).")
Acosh = _calling("Acosh", _ops.acosh, "arccosh(x).")
Asin = _calling("Asin", _ops.asin, "arcsin(x).")
Asinh = _calling("Asinh", _ops.asinh, "arcsinh(x).")
Atan = _calling("Atan", _ops.atan, "arctan(x).")
Atanh = _calling("Atanh", _ops.atanh, "arctanh(x).")
Atan2 = _calling("Atan2", _math.atan2, "Atan2()(x, y): the angle of the point (y, x).")
Cosh = _calling("Cosh", _ops.cosh, "cosh(x).")
Sinh = _calling("Sinh", _ops.sinh, "sinh(x).")
Tan = _calling("Tan", _ops.tan, "tan(x).")
Ceil = _calling("Ceil", _ops.ceil, "The smallest integer >= x.")
Floor = _calling("Floor", _ops.floor, "The largest integer <= x.")
Round = _calling("Round", _ops.round, "x rounded to the nearest integer (halves to even).")
Rint = _calling("Rint", _ops.round, "x rounded to the nearest integer (halves to even).")
Trunc = _calling("Trunc", _ops.trunc, "x rounded toward zero.")
Reciprocal = _calling("Reciprocal", _ops.reciprocal, "1 / x.")
Inv = _calling("Inv", _ops.reciprocal, "1 / x.")
Invert = _calling("Invert", _ops.bitwise_not, "~x, bitwise, for integers.")
Expm1 = _calling("Expm1", _ops.expm1, "exp(x) - 1.")
Log1p = _calling("Log1p", _ops.log1p, "log(1 + x).")
Erfc = _calling("Erfc", _math.erfc, "1 - erf(x).")
Erfinv = _calling("Erfinv", _math.erfinv, "The inverse error function.")
Softsign = _calling("Softsign", _ops_activation.softsign, "x / (1 + |x|).")
Mish = _calling("Mish", _ops_activation.mish, "x * tanh(softplus(x)).")
SeLU = _calling("SeLU", _ops_activation.selu, "The scaled exponential linear unit.")
FastGeLU = _calling("FastGeLU", _ops_activation.fast_gelu, "x * sigmoid(1.702 x).")
Identity = _calling("Identity", lambda x: x, "Identity()(x): x.")
RealDiv = _calling("RealDiv", _ops.div, "RealDiv()(x, y): x / y.")
Mod = _calling("Mod", _math.fmod, "Mod()(x, y): the remainder with the sign of x.")
TruncateDiv = _calling("TruncateDiv", _math.truncate_div, "x / y rounded toward zero.")
TruncateMod = _calling("TruncateMod", _math.truncate_mod, "The remainder with the sign of x.")
Xdivy = _calling("Xdivy", _math.xdivy, "x / y, 0 where x is 0.")
Xlogy = _calling("Xlogy", _math.xlogy, "x * log(y), 0 where x is 0.")
Hypot = _calling("Hypot", _math.hypot, "sqrt(x1^2 + x2^2).")
Heaviside = _calling("Heaviside", _math.heaviside, "Heaviside()(x, values): the step function.")
Lcm = _calling("Lcm", _math.lcm, "The least common multiple of integers.")
Gcd = _calling("Gcd", _math.gcd, "The greatest common divisor of integers.")
BitwiseAnd = _calling("BitwiseAnd", _ops.bitwise_and, "x & y.")
BitwiseOr = _calling("BitwiseOr", _ops.bitwise_or, "x | y.")
BitwiseXor = _calling("BitwiseXor", _ops.bitwise_xor, "x ^ y.")
Lerp = _calling("Lerp", _math.lerp, "Lerp()(start, end, weight): start + weight * (end - start).")
Addcdiv = _calling("Addcdiv", _math.addcdiv, "Addcdiv()(input, x1, x2, value).")
Addcmul = _calling("Addcmul", _math.addcmul, "Addcmul()(input, x1, x2, value).")
SquaredDifference = _calling("SquaredDifference", lambda x, y: _ops.square(x - y),
                             "(x - y)^2.")


def _div_no_nan(x, y):
    zero = _ops.equal(y, 0)
    return _ops.where(zero, 0.0, x / _ops.where(zero, 1.0, y))


def _mul_no_nan(x, y):
    return _ops.where(_ops.equal(y, 0), 0.0, x * y)


DivNoNan = _calling("DivNoNan", _div_no_nan, "x / y, 0 where y is 0.")
MulNoNan = _calling("MulNoNan", _mul_no_nan, "x * y, 0 where y is 0 (even for inf or NaN x).")


# ---- element-wise with attributes --------------------------------------------------------------

def _with_attribute(name, fn, attribute, default, doc):
    """A primitive with one attribute whose call is fn(*args, attribute)."""

    def __init__(self, *args, **kwargs):
        if len(args) > 1 or set(kwargs) - {attribute}:
            raise TypeError(f"{name} takes one argument, {attribute}")
        Primitive.__init__(self, **{attribute: args[0] if args else kwargs.get(attribute,
                                                                               default)})

    # A closure over fn (not a class attribute looked up through type(self)), so capture
    # can guard what it calls.
    def __call__(self, *args):
        return fn(*args, getattr(self, attribute))

    return type(name, (Primitive,), {"__init__": __init__, "__call__": __call__,
                                     "__doc__": doc, "__module__": "pijit.ops"})


Elu = _with_attribute("Elu", _ops_activation.elu, "alpha", 1.0, "Elu(alpha=1.0)(x).")
CeLU = _with_attribute("CeLU", _ops_activation.celu, "alpha", 1.0, "CeLU(alpha=1.0)(x).")
HShrink = _with_attribute("HShrink", _ops_activation.hardshrink, "lambd", 0.5,
                          "HShrink(lambd=0.5)(x): x where |x| > lambd, else 0.")
SoftShrink = _with_attribute("SoftShrink", _ops_activation.softshrink, "lambd", 0.5,
                             "SoftShrink(lambd=0.5)(x): x shrunk toward 0 by lambd.")
Logit = _with_attribute("Logit", lambda x, eps: _math.logit(x, None if eps < 0 else eps), "eps",
                        -1.0, "Logit(eps=-1.0)(x): log(x / (1 - x)), x clipped when eps >= 0.")
Tril = _with_attribute("Tril", _array.tril, "diagonal", 0, "Tril(diagonal=0)(x).")
Triu = _with_attribute("Triu", _array.triu, "diagonal", 0, "Triu(diagonal=0)(x).")
ReverseV2 = _with_attribute("ReverseV2", _array.reverse, "axis", (),
                            "ReverseV2(axis)(x): x reversed along each axis of `axis`.")
Cummax = _with_attribute("Cummax", _array.cummax, "axis", 0,
                         "Cummax(axis)(x): (running maxima, Int64 indices).")
Cummin = _with_attribute("Cummin", _array.cummin, "axis", 0,
                         "Cummin(axis)(x): (running minima, Int64 indices).")
Cdist = _with_attribute("Cdist", _math.cdist, "p", 2.0, "Cdist(p=2.0)(x1, x2).")
L2Loss = _calling("L2Loss", lambda x: _ops.sum(x * x) / 2.0, "sum(x^2) / 2.")
PReLU = _calling("PReLU", _ops_activation.prelu, "PReLU()(x, weight).")
BiasAdd = _calling("BiasAdd", _array.bias_add, "BiasAdd()(x, bias): bias added on axis 1.")
Trace = _calling("Trace", _math.trace, "The sum of a matrix's diagonal.")
MatrixDeterminant = _calling("MatrixDeterminant", _math.det, "The determinant of each matrix.")
GatherD = _calling("GatherD", _array.gather_d, "GatherD()(x, dim, index).")
MaskedFill = _calling("MaskedFill", _array.masked_fill, "MaskedFill()(input, mask, value).")
Expand = _calling("Expand", _array.expand, "Expand()(x, shape): x broadcast to shape.")
Size = _calling("Size", _array.numel, "Size()(x): the number of elements.")
Rank = _calling("Rank", _array.rank, "Rank()(x): the number of axes.")
TensorShape = _calling("TensorShape", lambda x: _C.Tensor(tuple(x.shape)).astype(int64),
                       "TensorShape()(x): x's shape as an Int64 Tensor.")
LinSpace = _calling("LinSpace", lambda start, stop, num: _ops.linspace(start, stop, num),
                    "LinSpace()(start, stop, num): num evenly spaced values.")
UnsortedSegmentSum = _segment_primitive("UnsortedSegmentSum", _array.unsorted_segment_sum)
UnsortedSegmentMax = _segment_primitive("UnsortedSegmentMax", _array.unsorted_segment_max)
UnsortedSegmentMin = _segment_primitive("UnsortedSegmentMin", _array.unsorted_segment_min)
UnsortedSegmentProd = _segment_primitive("UnsortedSegmentProd", _array.unsorted_segment_prod)
SigmoidCrossEntropyWithLogits = _calling(
    "SigmoidCrossEntropyWithLogits",
    lambda logits, label: _ops_loss.binary_cross_entropy_with_logits(logits, label,
                                                                     reduction="none"),
    "SigmoidCrossEntropyWithLogits()(logits, label): element-wise logistic loss.")
KLDivLoss = _with_attribute("KLDivLoss", _ops_loss.kl_div, "reduction", "mean",
                            "KLDivLoss(reduction='mean')(logits, labels).")
SoftMarginLoss = _with_attribute("SoftMarginLoss", _ops_loss.soft_margin_loss, "reduction",
                                 "mean", "SoftMarginLoss(reduction='mean')(x, y).")
AdaptiveAvgPool2D = _with_attribute("AdaptiveAvgPool2D", _ops_resize.adaptive_avg_pool2d,
                                    "output_size", None,
                                    "AdaptiveAvgPool2D(output_size)(x).")


class IsClose(Primitive):
    """IsClose(rtol=1e-05, atol=1e-08, equal_nan=True)(x1, x2)."""

    def __init__(self, rtol=1e-05, atol=1e-08, equal_nan=True):
        super().__init__(rtol=rtol, atol=atol, equal_nan=equal_nan)

    def __call__(self, x1, x2):
        return _math.isclose(x1, x2, self.rtol, self.atol, self.equal_nan)


class ApproximateEqual(Primitive):
    """ApproximateEqual(tolerance=1e-05)(x, y): |x - y| < tolerance."""

    def __init__(self, tolerance=1e-05):
        super().__init__(tolerance=tolerance)

    def __call__(self, x, y):
        return _ops.less(_ops.abs(x - y), self.tolerance)


class L2Normalize(Primitive):
    """L2Normalize(axis=0, epsilon=1e-4)(x): x / sqrt(max(sum(x^2 over axis), epsilon))."""

    def __init__(self, axis=0, epsilon=1e-4):
        super().__init__(axis=axis, epsilon=epsilon)

    def __call__(self, x):
        squares = _ops.sum(x * x, self.axis, keepdims=True)
        return x * _ops.rsqrt(_ops.maximum(squares, self.epsilon))


# ---- scans, reductions, ordering -----------------------------------------------------------------

def _scan(prim, x, axis, combine, identity):
    """A running sum or product along axis, shifted by one (exclusive) and from the end
    (reverse) as the primitive's attributes say."""
    axis = axis % x.ndim if x.ndim else 0
    if prim.reverse:
        x = _array.flip(x, (axis,))
    if prim.exclusive:  # shift by one: the first running value is the identity
        lead = (slice(None),) * axis
        first = _ops.full_like(x[lead + (slice(0, 1),)], identity)
        x = _ops.concat((first, x[lead + (slice(0, x.shape[axis] - 1),)]), axis)
    out = combine(x, axis)
    return _array.flip(out, (axis,)) if prim.reverse else out


class CumSum(Primitive):
    """CumSum(exclusive=False, reverse=False)(x, axis): running sums along axis; exclusive
    leaves each element out of its own sum; reverse runs from the end."""

    def __init__(self, exclusive=False, reverse=False):
        super().__init__(exclusive=exclusive, reverse=reverse)

    def __call__(self, x, axis):
        return _scan(self, x, axis, _np_reductions.cumsum, 0)


class CumProd(Primitive):
    """CumProd(exclusive=False, reverse=False)(x, axis): running products, as CumSum."""

    def __init__(self, exclusive=False, reverse=False):
        super().__init__(exclusive=exclusive, reverse=reverse)

    def __call__(self, x, axis):
        return _scan(self, x, axis, _np_reductions.cumprod, 1)


class _ArgWithValue(Primitive):
    def __init__(self, axis=0, keep_dims=False):
        super().__init__(axis=axis, keep_dims=keep_dims)


class ArgMaxWithValue(_ArgWithValue):
    """ArgMaxWithValue(axis=0, keep_dims=False)(x): (Int64 index, value) of the maxima."""

    def __call__(self, x):
        values, index = _mint_reduce.max(x, self.axis, self.keep_dims)
        return index, values


class ArgMinWithValue(_ArgWithValue):
    """ArgMinWithValue(axis=0, keep_dims=False)(x): (Int64 index, value) of the minima."""

    def __call__(self, x):
        values, index = _mint_reduce.min(x, self.axis, self.keep_dims)
        return index, values


class Sort(Primitive):
    """Sort(axis=-1, descending=False)(x): (values, Int64 indices), stable."""

    def __init__(self, axis=-1, descending=False):
        super().__init__(axis=axis, descending=descending)

    def __call__(self, x):
        return _mint_sort.sort(x, self.axis, self.descending)


class TopK(Primitive):
    """TopK(sorted=True)(x, k): (values, Int64 indices) of the k largest along the last
    axis."""

    def __init__(self, sorted=True):  # noqa: A002 - MindSpore's name
        super().__init__(sorted=sorted)

    def __call__(self, x, k):
        return _mint_sort.topk(x, k, -1, True, self.sorted)


class Median(Primitive):
    """Median(global_median=False, axis=0, keep_dims=False)(x): (median, Int64 index) along
    axis (the lower middle for an even count); global_median: the median of every element
    (its index then is 0-d)."""

    def __init__(self, global_median=False, axis=0, keep_dims=False):
        super().__init__(global_median=global_median, axis=axis, keep_dims=keep_dims)

    def __call__(self, x):
        if self.global_median:
            return _array.median(_ops.reshape(x, (-1,)), 0)
        return _array.median(x, self.axis, self.keep_dims)


class SearchSorted(Primitive):
    """SearchSorted(dtype=int64, right=False)(sorted_sequence, values)."""

    def __init__(self, dtype=int64, right=False):
        super().__init__(dtype=dtype, right=right)

    def __call__(self, sorted_sequence, values):
        return _mint_sort.searchsorted(sorted_sequence, values, right=self.right) \
            .astype(self.dtype)


class Roll(Primitive):
    """Roll(shift, axis)(x): x shifted along axis, wrapping around."""

    def __init__(self, shift, axis):
        super().__init__(shift=shift, axis=axis)

    def __call__(self, x):
        return _array.roll(x, self.shift, self.axis)


class Meshgrid(Primitive):
    """Meshgrid(indexing='xy')(inputs): coordinate grids of the 1-D inputs."""

    def __init__(self, indexing="xy"):
        super().__init__(indexing=indexing)

    def __call__(self, inputs):
        return _array.meshgrid(*inputs, indexing=self.indexing)


class MatrixInverse(Primitive):
    """MatrixInverse(adjoint=False)(x): the inverse of each matrix (of its transpose with
    adjoint)."""

    def __init__(self, adjoint=False):
        super().__init__(adjoint=adjoint)

    def __call__(self, x):
        return _math.inverse(_math.adjoint(x) if self.adjoint else x)


class _RowUpdate(Primitive):
    def __init__(self, indices):
        super().__init__(indices=indices)


def place_rows(fname, indices, x, v):
    """(v's rows placed at rows `indices` of an x-shaped tensor, how many rows of v landed on
    each row of x), for InplaceAdd / InplaceSub / InplaceUpdate(indices)(x, v), which
    return a new tensor as MindSpore's do."""
    indices = (indices,) if isinstance(indices, int) else tuple(indices)
    if v.ndim != x.ndim or v.shape[0] != len(indices) or v.shape[1:] != x.shape[1:]:
        raise_error(ValueError, f"{fname}: v must have shape "
                                f"{(len(indices),) + tuple(x.shape[1:])}, got {v.shape}")
    # (n, k): where row i of v lands in x; the rows combine by a matrix product.
    picks = _ops.one_hot(_C.Tensor(indices).astype(int64), x.shape[0], 1.0, 0.0)
    picks = _ops.transpose(picks.astype(x.dtype), (1, 0))
    moved = _ops.reshape(_ops.matmul(picks, _ops.reshape(v.astype(x.dtype),
                                                         (len(indices), -1))), x.shape)
    covered = _ops.reshape(_ops.sum(picks, 1), (-1,) + (1,) * (x.ndim - 1))
    return moved, covered


class InplaceAdd(_RowUpdate):
    """InplaceAdd(indices)(x, v): x with v's rows added to rows `indices`."""

    def __call__(self, x, v):
        return x + place_rows("InplaceAdd", self.indices, x, v)[0]


class InplaceSub(_RowUpdate):
    """InplaceSub(indices)(x, v): x with v's rows subtracted from rows `indices`."""

    def __call__(self, x, v):
        return x - place_rows("InplaceSub", self.indices, x, v)[0]


class InplaceUpdate(_RowUpdate):
    """InplaceUpdate(indices)(x, v): x with rows `indices` replaced by v's rows (distinct
    indices)."""

    def __call__(self, x, v):
        moved, covered = place_rows("InplaceUpdate", self.indices, x, v)
        return _ops.where(_ops.greater(covered, 0), moved, x)


class SquareSumAll(Primitive):
    """SquareSumAll()(x, y): (sum(x^2), sum(y^2))."""

    def __call__(self, x, y):
        return _ops.sum(x * x), _ops.sum(y * y)


class BCEWithLogitsLoss(Primitive):
    """BCEWithLogitsLoss(reduction='mean')(logits, label, weight, pos_weight)."""

    def __init__(self, reduction="mean"):
        super().__init__(reduction=reduction)

    def __call__(self, logits, label, weight=None, pos_weight=None):
        return _ops_loss.binary_cross_entropy_with_logits(logits, label, weight, pos_weight,
                                                          self.reduction)


class BinaryCrossEntropy(Primitive):
    """BinaryCrossEntropy(reduction='mean')(logits, labels, weight=None) on probabilities."""

    def __init__(self, reduction="mean"):
        super().__init__(reduction=reduction)

    def __call__(self, logits, labels, weight=None):
        return _ops_loss.binary_cross_entropy(logits, labels, weight, self.reduction)


class SmoothL1Loss(Primitive):
    """SmoothL1Loss(beta=1.0, reduction='none')(logits, labels)."""

    def __init__(self, beta=1.0, reduction="none"):
        super().__init__(beta=beta, reduction=reduction)

    def __call__(self, logits, labels):
        return _ops_loss.smooth_l1_loss(logits, labels, self.beta, self.reduction)


class SoftmaxCrossEntropyWithLogits(Primitive):
    """SoftmaxCrossEntropyWithLogits()(logits, labels): (per-row loss, its gradient with
    respect to logits, softmax(logits) - labels) for (N, C) logits and probability labels."""

    def __call__(self, logits, labels):
        log_p = _ops.log_softmax(logits, -1)
        return -_ops.sum(labels * log_p, -1), _ops.exp(log_p) - labels


class Dropout(Primitive):
    """Dropout(keep_prob=0.5)(x): (x with elements zeroed with probability 1 - keep_prob and
    the rest scaled by 1 / keep_prob, the Float mask of kept elements)."""

    def __init__(self, keep_prob=0.5, Seed0=0, Seed1=0):  # noqa: N803 - MindSpore's names
        if not 0.0 < keep_prob <= 1.0:
            raise ValueError(f"Dropout: keep_prob must be in (0, 1], got {keep_prob}")
        super().__init__(keep_prob=keep_prob, Seed0=Seed0, Seed1=Seed1)

    def __call__(self, x):
        seed = {"seed": self.Seed0} if self.Seed0 else {}
        mask = _ops.less(_ops.uniform(x.shape, 0.0, 1.0, dtype=x.dtype, **seed),
                         self.keep_prob).astype(x.dtype)
        return x * mask / self.keep_prob, mask


class LayerNorm(Primitive):
    """LayerNorm(begin_norm_axis=1, begin_params_axis=1, epsilon=1e-7)(x, gamma, beta): (y,
    mean, variance), normalising over the axes from begin_norm_axis on."""

    def __init__(self, begin_norm_axis=1, begin_params_axis=1, epsilon=1e-7):
        super().__init__(begin_norm_axis=begin_norm_axis, begin_params_axis=begin_params_axis,
                         epsilon=epsilon)

    def __call__(self, x, gamma, beta):
        start = self.begin_norm_axis % x.ndim
        axes = tuple(range(start, x.ndim))
        mean = _ops.mean(x, axes, keepdims=True)
        centred = x - mean
        variance = _ops.mean(centred * centred, axes, keepdims=True)
        y = centred * _ops.rsqrt(variance + self.epsilon) * gamma + beta
        return y, mean, variance


__all__ = sorted(name for name, value in dict(globals()).items()
                 if isinstance(value, type) and issubclass(value, Primitive)
                 and not name.startswith("_") and value is not Primitive)
