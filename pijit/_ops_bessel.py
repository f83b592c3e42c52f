"""Bessel functions of the first and second kind (J0, J1, Y0, Y1) and modified Bessel
functions of the second kind (K0, K1 and their exponentially scaled forms), with their
primitives.

Every function is evaluated in float64 and rounded to the input's dtype, so results are
accurate to float32 rounding everywhere and to about 1e-12 in float64:

* J and Y: the ascending power series for |x| <= 12 (the largest term there is about 2e4,
  so cancellation costs at most four of float64's sixteen digits), and Hankel's asymptotic
  expansion with 20 terms beyond (its truncation error at x = 12 is below 1e-12).
* K: the ascending series for x <= 2; for 2 < x <= 15 the integral
  K_nu(x) e^x = int_0^inf exp(-x (cosh t - 1)) cosh(nu t) dt by the trapezoidal rule (step
  0.2 on [0, 3.8]; the integrand is analytic in a strip, so the rule converges
  geometrically: relative error near 1e-15); and the asymptotic expansion with 20 terms
  beyond x = 15 (relative error below 1e-13).

Gradients come from the derivative identities (J0' = -J1, J1' = J0 - J1/x, Y likewise,
K0' = -K1, K1' = -K0 - K1/x) in a Cell's bprop, not by differentiating the series."""
import math

from pijit import _C
from pijit import _ops_special as _special
from pijit._tensor import float64
from pijit.mint._checks import check_tensor, is_float, raise_error
from pijit.nn.cell import Cell

_ops = _C.ops

_EULER_GAMMA = 0.5772156649015329
_JY_SERIES_LIMIT = 12.0
_K_SERIES_LIMIT = 2.0
_K_ASYMPTOTIC_FROM = 15.0
_TRAPEZOID_STEP = 0.2
_TRAPEZOID_NODES = 20  # t = 0, 0.2, ..., 3.8: beyond, exp(-2 (cosh t - 1)) < 1e-17


def _check_float(fname, x):
    check_tensor(fname, "x", x)
    if not is_float(x):
        raise_error(TypeError, f"{fname}: x must be a float16, float32 or float64 Tensor, got "
                               f"{x.dtype}")
    return x


def _nan_like(x):
    return _ops.full_like(x, math.nan)


# ---- the ascending series ------------------------------------------------------------------------

def _j_series(x, order):
    """J_order(x) = sum_k (-1)^k (x/2)^(2k + order) / (k! (k + order)!) (45 terms)."""
    return _special._bessel_series(x, order, sign=-1.0, terms=45)


def _i_series(x, order):
    """I_order(x) = sum_k (x/2)^(2k + order) / (k! (k + order)!) (x <= 2: 20 terms)."""
    return _special._bessel_series(x, order, terms=20)


def _harmonic_series(x, order, sign, terms):
    """The logarithm-free part of Y_order or K_order (Abramowitz and Stegun 9.1.11, 9.6.11):
    sum_k sign^k (psi(k + 1) + psi(k + order + 1)) (x/2)^(2k + order) / (k! (k + order)!),
    with psi(n + 1) = H_n - gamma."""
    step = x * x * (0.25 * sign)
    term = _ops.ones_like(x) if order == 0 else x * 0.5
    harmonic = 0.0
    total = term * (-2.0 * _EULER_GAMMA + (1.0 if order else 0.0))
    for k in range(1, terms):
        term = term * step / float(k * (k + order))
        harmonic += 1.0 / k
        weight = 2.0 * harmonic - 2.0 * _EULER_GAMMA + (1.0 / (k + 1) if order else 0.0)
        total = total + term * weight
    return total


def _y_series(x, order):
    """Y_0(x) = 2/pi log(x/2) J_0(x) - (1/pi) * harmonic series;
    Y_1(x) = -2/(pi x) + 2/pi log(x/2) J_1(x) - (1/pi) * harmonic series."""
    out = (2.0 / math.pi) * _ops.log(x * 0.5) * _j_series(x, order) \
        - _harmonic_series(x, order, -1.0, 45) / math.pi
    return out - (2.0 / math.pi) / x if order else out


def _k_series(x, order):
    """K_0(x) = -log(x/2) I_0(x) + (1/2) * harmonic series;
    K_1(x) = 1/x + log(x/2) I_1(x) - (1/2) * harmonic series."""
    if order == 0:
        return _harmonic_series(x, 0, 1.0, 20) * 0.5 - _ops.log(x * 0.5) * _i_series(x, 0)
    return 1.0 / x + _ops.log(x * 0.5) * _i_series(x, 1) - _harmonic_series(x, 1, 1.0, 20) * 0.5


# ---- large arguments -------------------------------------------------------------------------

def _asymptotic_coefficients(order, count):
    """a_k(nu) = prod_{j=1..k} (4 nu^2 - (2j - 1)^2) / (k! 8^k), shared by Hankel's
    expansion of J, Y and the expansion of K."""
    mu = 4.0 * order * order
    coefficients = [1.0]
    for k in range(1, count):
        coefficients.append(coefficients[-1] * (mu - (2 * k - 1) ** 2) / (8.0 * k))
    return coefficients


def _hankel(x, order):
    """(J_order(x), Y_order(x)) for x >= 12 by Hankel's expansion:
    sqrt(2 / (pi x)) (P cos chi - Q sin chi) and sqrt(2 / (pi x)) (P sin chi + Q cos chi),
    chi = x - (2 order + 1) pi / 4; cos chi and sin chi come from cos x and sin x so that
    no rounding of x - chi enters at large x."""
    coefficients = _asymptotic_coefficients(order, 20)
    inverse = 1.0 / x
    p = _ops.zeros_like(x)
    q = _ops.zeros_like(x)
    for k in range(19, -1, -1):  # Horner in 1/x, even powers into P, odd into Q
        sign = -1.0 if (k // 2) % 2 else 1.0
        if k % 2 == 0:
            p = p * inverse * inverse + sign * coefficients[k]
        else:
            q = q * inverse * inverse + sign * coefficients[k]
    q = q * inverse
    cosine, sine = _ops.cos(x), _ops.sin(x)
    half_root = math.sqrt(0.5)
    if order == 0:
        cos_chi, sin_chi = (cosine + sine) * half_root, (sine - cosine) * half_root
    else:
        cos_chi, sin_chi = (sine - cosine) * half_root, -(cosine + sine) * half_root
    amplitude = _ops.sqrt(inverse * (2.0 / math.pi))
    return amplitude * (p * cos_chi - q * sin_chi), amplitude * (p * sin_chi + q * cos_chi)


def _k_scaled_trapezoid(x, order):
    """e^x K_order(x) = int_0^inf exp(-x (cosh t - 1)) cosh(order t) dt, trapezoidal rule."""
    total = _ops.zeros_like(x)
    for i in range(_TRAPEZOID_NODES):
        t = i * _TRAPEZOID_STEP
        weight = _TRAPEZOID_STEP * (0.5 if i == 0 else 1.0) * math.cosh(order * t)
        total = total + weight * _ops.exp(x * -(math.cosh(t) - 1.0))
    return total


def _k_scaled_asymptotic(x, order):
    """e^x K_order(x) ~ sqrt(pi / (2x)) sum_k a_k(order) / x^k."""
    coefficients = _asymptotic_coefficients(order, 20)
    inverse = 1.0 / x
    total = _ops.zeros_like(x)
    for c in coefficients[::-1]:
        total = total * inverse + c
    return total * _ops.sqrt(inverse * (math.pi / 2.0))


# ---- float64 evaluators ------------------------------------------------------------------------

def _j_value(x, order):
    """J_order for any float64 x (J0 even, J1 odd)."""
    ax = _ops.abs(x)
    small = _j_series(_ops.minimum(ax, _JY_SERIES_LIMIT), order)
    large = _hankel(_ops.maximum(ax, _JY_SERIES_LIMIT), order)[0]
    out = _ops.where(_ops.less_equal(ax, _JY_SERIES_LIMIT), small, large)
    out = _ops.where(_ops.equal(ax, math.inf), _ops.zeros_like(x), out)
    if order == 1:
        out = _ops.where(_ops.less(x, 0.0), -out, out)
    return _ops.where(_ops.not_equal(x, x), x, out)


def _y_value(x, order):
    """Y_order: -inf at 0, nan below."""
    positive = _ops.where(_ops.greater(x, 0.0), x, _ops.ones_like(x))
    small = _y_series(_ops.minimum(positive, _JY_SERIES_LIMIT), order)
    large = _hankel(_ops.maximum(positive, _JY_SERIES_LIMIT), order)[1]
    out = _ops.where(_ops.less_equal(positive, _JY_SERIES_LIMIT), small, large)
    out = _ops.where(_ops.equal(x, math.inf), _ops.zeros_like(x), out)
    out = _ops.where(_ops.equal(x, 0.0), _ops.full_like(x, -math.inf), out)
    return _ops.where(_ops.less(x, 0.0), _nan_like(x), _ops.where(_ops.not_equal(x, x), x, out))


def _k_value(x, order, scaled):
    """K_order, or e^x K_order when scaled: inf at 0, nan below."""
    positive = _ops.where(_ops.greater(x, 0.0), x, _ops.ones_like(x))
    small = _k_series(_ops.minimum(positive, _K_SERIES_LIMIT), order)
    if scaled:
        small = small * _ops.exp(_ops.minimum(positive, _K_SERIES_LIMIT))
    middle = _k_scaled_trapezoid(_ops.clamp(positive, _K_SERIES_LIMIT, _K_ASYMPTOTIC_FROM), order)
    large = _k_scaled_asymptotic(_ops.maximum(positive, _K_ASYMPTOTIC_FROM), order)
    rest = _ops.where(_ops.less_equal(positive, _K_ASYMPTOTIC_FROM), middle, large)
    if not scaled:
        rest = rest * _ops.exp(-positive)
    out = _ops.where(_ops.less_equal(positive, _K_SERIES_LIMIT), small, rest)
    out = _ops.where(_ops.equal(x, 0.0), _ops.full_like(x, math.inf), out)
    return _ops.where(_ops.less(x, 0.0), _nan_like(x), _ops.where(_ops.not_equal(x, x), x, out))


def _over_x(value, x, at_zero):
    """value / x, with the limit at_zero where x is 0."""
    zero = _ops.equal(x, 0.0)
    quotient = value / _ops.where(zero, _ops.ones_like(x), x)
    return _ops.where(zero, _ops.full_like(x, at_zero), quotient)


_VALUES = {
    "bessel_j0": lambda x: _j_value(x, 0),
    "bessel_j1": lambda x: _j_value(x, 1),
    "bessel_y0": lambda x: _y_value(x, 0),
    "bessel_y1": lambda x: _y_value(x, 1),
    "bessel_k0": lambda x: _k_value(x, 0, False),
    "bessel_k1": lambda x: _k_value(x, 1, False),
    "bessel_k0e": lambda x: _k_value(x, 0, True),
    "bessel_k1e": lambda x: _k_value(x, 1, True),
}

_DERIVATIVES = {
    "bessel_j0": lambda x: -_j_value(x, 1),
    "bessel_j1": lambda x: _j_value(x, 0) - _over_x(_j_value(x, 1), x, 0.5),
    "bessel_y0": lambda x: -_y_value(x, 1),
    "bessel_y1": lambda x: _y_value(x, 0) - _y_value(x, 1) / x,
    "bessel_k0": lambda x: -_k_value(x, 1, False),
    "bessel_k1": lambda x: -_k_value(x, 0, False) - _k_value(x, 1, False) / x,
    # d/dx (e^x K0) = e^x K0 - e^x K1; d/dx (e^x K1) = e^x K1 - e^x K0 - e^x K1 / x
    "bessel_k0e": lambda x: _k_value(x, 0, True) - _k_value(x, 1, True),
    "bessel_k1e": lambda x: _k_value(x, 1, True) - _k_value(x, 0, True)
    - _k_value(x, 1, True) / x,
}


class _BesselFunction(Cell):
    """One of the functions above, evaluated in float64, with its derivative identity as the
    bprop."""

    def __init__(self, name):
        super().__init__()
        self.function_name = name

    def construct(self, x):
        return _VALUES[self.function_name](x.astype(float64)).astype(x.dtype)

    def bprop(self, x, out, dout):
        slope = _DERIVATIVES[self.function_name](x.astype(float64))
        return ((dout.astype(float64) * slope).astype(x.dtype),)


def _bessel_function(name, doc):
    """ops.<name>(x): the float check, then the Cell that computes it (with its bprop)."""
    cell = _BesselFunction(name)

    def function(x):
        return cell(_check_float(name, x))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function


bessel_j0 = _bessel_function("bessel_j0", "The Bessel function of the first kind of order 0.")
bessel_j1 = _bessel_function("bessel_j1", "The Bessel function of the first kind of order 1.")
bessel_y0 = _bessel_function("bessel_y0", "The Bessel function of the second kind of order 0 "
                             "(nan for x < 0, -inf at 0).")
bessel_y1 = _bessel_function("bessel_y1", "The Bessel function of the second kind of order 1 "
                             "(nan for x < 0, -inf at 0).")
bessel_k0 = _bessel_function("bessel_k0", "The modified Bessel function of the second kind of "
                             "order 0 (nan for x < 0).")
bessel_k0e = _bessel_function("bessel_k0e", "exp(x) K0(x), which neither underflows nor loses "
                              "accuracy at large x.")
bessel_k1 = _bessel_function("bessel_k1", "The modified Bessel function of the second kind of "
                             "order 1 (nan for x < 0).")
bessel_k1e = _bessel_function("bessel_k1e", "exp(x) K1(x).")


def _unary_primitive(name, fn):
    from pijit._primitives_more import _primitive  # pijit.ops imports this module

    return _primitive(name, {}, lambda self, x: fn(x),
                      f"{name}()(x): ops.{fn.__name__} as a primitive.")


BesselJ0 = _unary_primitive("BesselJ0", bessel_j0)
BesselJ1 = _unary_primitive("BesselJ1", bessel_j1)
BesselY0 = _unary_primitive("BesselY0", bessel_y0)
BesselY1 = _unary_primitive("BesselY1", bessel_y1)
BesselK0 = _unary_primitive("BesselK0", bessel_k0)
BesselK0e = _unary_primitive("BesselK0e", bessel_k0e)
BesselK1 = _unary_primitive("BesselK1", bessel_k1)
BesselK1e = _unary_primitive("BesselK1e", bessel_k1e)

__all__ = ["BesselJ0", "BesselJ1", "BesselK0", "BesselK0e", "BesselK1", "BesselK1e",
           "BesselY0", "BesselY1", "bessel_j0", "bessel_j1", "bessel_k0", "bessel_k0e",
           "bessel_k1", "bessel_k1e", "bessel_y0", "bessel_y1"]
