"""Activation functions with MindSpore's names and signatures (mindspore.ops.elu, selu, silu,
mish, ...), composed of pijit's native ops: they run on the eager tape, are inlined and fused
into captured graphs, and take their gradients from the native ops' rules."""
import math

from pijit import _C
from pijit._numbers import plain

_ops = _C.ops

# SELU's constants (Klambauer et al., self-normalizing networks).
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
# FastGelu's slope: x * sigmoid(1.702 x) approximates GELU.
_FAST_GELU_SLOPE = 1.702


def _number(name, what, v):
    v = plain(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise TypeError(f"{name}: {what} must be a finite number, got {v!r}")
    return float(v)


def _negative_part(input, alpha, scale_in=1.0):  # noqa: A002
    """alpha * (exp(x * scale_in) - 1) where x < 0, else 0: exp only sees non-positive
    arguments, so no overflow where the branch is not taken."""
    neg = _ops.minimum(input, 0.0)
    return (_ops.expm1(neg * scale_in) if scale_in != 1.0 else _ops.expm1(neg)) * alpha


def elu(input_x, alpha=1.0):
    """x where x > 0, else alpha * (exp(x) - 1)."""
    alpha = _number("elu", "alpha", alpha)
    return _ops.where(input_x > 0, input_x, _negative_part(input_x, alpha))


def celu(x, alpha=1.0):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    alpha = _number("celu", "alpha", alpha)
    if alpha == 0:
        raise ValueError("celu: alpha must not be 0")
    return _ops.where(x > 0, x, _negative_part(x, alpha, 1.0 / alpha))


def selu(input_x):
    """scale * elu(x, alpha) with SELU's fixed constants."""
    return elu(input_x, _SELU_ALPHA) * _SELU_SCALE


def silu(input):  # noqa: A002 - MindSpore's name
    """x * sigmoid(x) (Swish)."""
    return input * _ops.sigmoid(input)


def mish(x):
    """x * tanh(softplus(x))."""
    return x * _ops.tanh(_ops.softplus(x))


def fast_gelu(x):
    """x * sigmoid(1.702 x), MindSpore's FastGelu."""
    return x * _ops.sigmoid(x * _FAST_GELU_SLOPE)


def softsign(x):
    """x / (1 + |x|)."""
    return x / (_ops.abs(x) + 1.0)


def tanhshrink(input):  # noqa: A002
    """x - tanh(x)."""
    return input - _ops.tanh(input)


def hardtanh(input, min_val=-1.0, max_val=1.0):  # noqa: A002
    """x clipped to [min_val, max_val]."""
    lo, hi = _number("hardtanh", "min_val", min_val), _number("hardtanh", "max_val", max_val)
    if lo > hi:
        raise ValueError(f"hardtanh: min_val ({lo}) must not exceed max_val ({hi})")
    return _ops.clip(input, lo, hi)


def logsigmoid(x):
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    return -_ops.softplus(-x)


def softmin(x, axis=-1):
    """softmax(-x) along axis."""
    return _ops.softmax(-x, axis)


def softshrink(x, lambd=0.5):
    """x - lambd where x > lambd, x + lambd where x < -lambd, else 0."""
    lambd = _number("softshrink", "lambd", lambd)
    if lambd < 0:
        raise ValueError(f"softshrink: lambd must be non-negative, got {lambd}")
    return _ops.where(x > lambd, x - lambd, _ops.where(x < -lambd, x + lambd, 0.0))


def hardshrink(x, lambd=0.5):
    """x where |x| > lambd, else 0."""
    lambd = _number("hardshrink", "lambd", lambd)
    if lambd < 0:
        raise ValueError(f"hardshrink: lambd must be non-negative, got {lambd}")
    return _ops.where(_ops.abs(x) > lambd, x, 0.0)


def threshold(input, thr, value):  # noqa: A002
    """x where x > thr, else value."""
    thr, value = _number("threshold", "thr", thr), _number("threshold", "value", value)
    return _ops.where(input > thr, input, value)


def glu(x, axis=-1):
    """a * sigmoid(b), a and b the halves of x along axis."""
    axis = plain(axis)
    ndim = len(x.shape)
    if isinstance(axis, bool) or not isinstance(axis, int) or not -ndim <= axis < ndim:
        raise ValueError(f"glu: axis must be an int in [{-ndim}, {ndim}), got {axis!r}")
    axis %= ndim
    n = x.shape[axis]
    if n % 2:
        raise ValueError(f"glu: axis {axis} must have an even size, got {n}")
    half = n // 2
    head = (slice(None),) * axis
    return x[head + (slice(0, half),)] * _ops.sigmoid(x[head + (slice(half, n),)])


def prelu(x, weight):
    """x where x > 0, else weight * x; weight is a scalar or has one slope per channel
    (axis 1)."""
    w = weight
    if len(weight.shape) == 1 and weight.shape[0] != 1:
        if len(x.shape) < 2 or x.shape[1] != weight.shape[0]:
            raise ValueError(f"prelu: weight has {weight.shape[0]} slopes but the input "
                             f"{tuple(x.shape)} has no axis 1 of that size")
        w = weight.reshape((1, weight.shape[0]) + (1,) * (len(x.shape) - 2))
    return _ops.where(x > 0, x, x * w)


__all__ = ["elu", "celu", "selu", "silu", "mish", "fast_gelu", "softsign", "tanhshrink",
           "hardtanh", "logsigmoid", "softmin", "softshrink", "hardshrink", "threshold", "glu",
           "prelu"]
