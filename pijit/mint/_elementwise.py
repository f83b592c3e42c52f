"""mint's element-wise functions: arithmetic with torch-style keywords (alpha, rounding_mode),
comparisons, the float functions and erfinv. Each is made of pijit's native ops, so it runs
on the eager tape and pijit.jit captures (and fuses) it like them."""
import math

from pijit import _C
from pijit import _ops_activation
from pijit import _ops_composed
from pijit.mint._checks import (as_real_float, check_choice, check_tensor, is_int,
                                raise_error)
from pijit.numpy.logic import isclose as _np_isclose
from pijit.numpy.math_ops import arctan2 as _np_arctan2

_ops = _C.ops


def _scaled(fname, other, alpha):
    """other * alpha, skipping the multiply for the usual alpha=1."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise_error(TypeError, f"{fname}: alpha must be a number, got {type(alpha).__name__}")
    return other if alpha == 1 else other * alpha


def add(input, other, *, alpha=1):  # noqa: A002 - mint's names
    """input + alpha * other, broadcasting."""
    return _ops.add(input, _scaled("add", other, alpha))


def sub(input, other, *, alpha=1):  # noqa: A002
    """input - alpha * other, broadcasting."""
    return _ops.sub(input, _scaled("sub", other, alpha))


def mul(input, other):  # noqa: A002
    return _ops.mul(input, other)


def div(input, other, *, rounding_mode=None):  # noqa: A002
    """input / other: true division (rounding_mode None), rounded toward zero ('trunc') or
    toward minus infinity ('floor'). Rounded quotients of integers stay integers."""
    check_choice("div", "rounding_mode", rounding_mode, (None, "trunc", "floor"))
    if rounding_mode is None:
        return _ops.div(input, other)
    if rounding_mode == "floor":
        return _ops.floor_divide(input, other)
    quotient = _ops.trunc(_ops.div(input, other))
    # floor_divide gives integer operands' promoted integer dtype; trunc keeps it.
    both_int = all(isinstance(v, int) or (isinstance(v, _C.Tensor) and is_int(v))
                   for v in (input, other))
    return quotient.astype(_ops.floor_divide(input, other).dtype) if both_int else quotient


divide = div


def pow(input, exponent):  # noqa: A001,A002
    return _ops.pow(input, exponent)


def clamp(input, min=None, max=None):  # noqa: A001,A002
    """input limited to [min, max]; either bound may be None (not both)."""
    check_tensor("clamp", "input", input)
    if min is None and max is None:
        raise_error(ValueError, "clamp: at least one of min and max must be given")
    return _ops.clamp(input, min, max)


def atan2(input, other):  # noqa: A002
    """The angle of the point (other, input), in (-pi, pi]."""
    return _np_arctan2(input, other)


arctan2 = atan2


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """|input - other| <= atol + rtol * |other|, element-wise, as Bool."""
    return _np_isclose(input, other, rtol, atol, equal_nan)


def neg(input):  # noqa: A002
    return _ops.neg(input)


negative = neg


def silu(input):  # noqa: A002
    return _ops_activation.silu(input)


def isfinite(input):  # noqa: A002
    return _ops_composed.isfinite(input)


def where(condition, input, other):  # noqa: A002
    """input where condition holds, else other (broadcasting the three)."""
    return _ops.where(condition, input, other)


# M. Giles' published polynomial approximations of erfinv ("Approximating the erfinv
# function", GPU Computing Gems, 2011), single-precision accurate, in w = -log(1 - x^2) on
# w < 5 and w >= 5; two Newton steps on erf(y) = x then bring float64 to full accuracy.
_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
            -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
         -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _horner(coefficients, t):
    acc = coefficients[0]
    for c in coefficients[1:]:
        acc = acc * t + c
    return acc


def erfinv(input):  # noqa: A002
    """The inverse error function: y with erf(y) = input, on (-1, 1); +-inf at +-1 and NaN
    outside [-1, 1]. Integers compute in float32. Its gradient, sqrt(pi)/2 * exp(y^2),
    comes from the Newton steps' ops."""
    check_tensor("erfinv", "input", input)
    x = as_real_float("erfinv", input)
    inside = _ops.less(_ops.abs(x), 1.0)
    safe = _ops.where(inside, x, 0.0)  # keeps log finite where the result is set below
    w = _ops.neg(_ops.log((1.0 - safe) * (1.0 + safe)))
    central = _horner(_CENTRAL, w - 2.5)
    tail = _horner(_TAIL, _ops.sqrt(_ops.maximum(w, 5.0)) - 3.0)
    y = _ops.where(_ops.less(w, 5.0), central, tail) * safe
    half_sqrt_pi = 0.5 * math.sqrt(math.pi)
    for _ in range(2):
        y = y - (_ops.erf(y) - safe) * half_sqrt_pi * _ops.exp(y * y)
    edge = _ops.where(_ops.greater(x, 0.0), _ops.full_like(x, math.inf), -math.inf)
    beyond = _ops.where(_ops.equal(_ops.abs(x), 1.0), edge, math.nan)
    return _ops.where(inside, y, beyond).astype(x.dtype)
