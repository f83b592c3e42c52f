"""stop_gradient (an identity Cell whose bprop gives zeros, so the tape and captured graphs
both cut the gradient there), what builds on it (gumbel_softmax's straight-through form),
the modified Bessel functions of orders 0 and 1 by their power series, lgamma, digamma and
mvlgamma, bit shifts of integers, and approximate_equal."""
import math

from pijit import _C
from pijit._tensor import float64
from pijit.mint._checks import as_real_float, check_tensor, is_int, raise_error
from pijit.nn.cell import Cell

_ops = _C.ops


class _StopGradient(Cell):
    """The identity with a zero gradient."""

    def construct(self, x):
        # A new tensor, not x itself: the tape links the Cell's output to its input, and an
        # output that is the input would link x to itself.
        return _ops.zeros_like(x) + x

    def bprop(self, x, out, dout):
        return (_ops.zeros_like(x),)


_STOP_GRADIENT = _StopGradient()


def stop_gradient(value):
    """value, through which no gradient flows back."""
    check_tensor("stop_gradient", "value", value)
    return _STOP_GRADIENT(value)


def gumbel_softmax(logits, tau=1, hard=False, dim=-1):
    """softmax((logits + Gumbel noise) / tau) along dim; with hard, its one-hot argmax in the
    forward pass and the soft sample's gradient (straight-through)."""
    check_tensor("gumbel_softmax", "logits", logits)
    if tau <= 0:
        raise_error(ValueError, f"gumbel_softmax: tau must be positive, got {tau}")
    u = _ops.uniform(logits.shape, 1e-10, 1.0 - 1e-7, dtype=logits.dtype)
    soft = _ops.softmax((logits - _ops.log(-_ops.log(u))) / tau, dim)
    if not hard:
        return soft
    axis = dim % logits.ndim
    index = _ops.argmax(soft, axis, keepdims=True)
    positions = _ops.reshape(_ops.arange(logits.shape[axis]),
                             (-1,) + (1,) * (logits.ndim - 1 - axis))
    hard_sample = _ops.equal(positions, index).astype(logits.dtype)
    return hard_sample - stop_gradient(soft) + soft


# ---- modified Bessel functions -------------------------------------------------------------------

def _as_float(fname, x):
    check_tensor(fname, "x", x)
    return as_real_float(fname, x)


def _bessel_series(x, order, sign=1.0, terms=80):
    """sum_k sign^k (x/2)^(2k + order) / (k! (k + order)!) over `terms` terms: I_order for
    sign 1, J_order for sign -1 (80 terms: float64 accuracy for |x| up to ~30)."""
    step = x * x * (0.25 * sign)
    term = _ops.ones_like(x) if order == 0 else x * 0.5
    total = term
    for k in range(1, terms):
        term = term * step / float(k * (k + order))
        total = total + term
    return total


def bessel_i0(x):
    """The modified Bessel function of the first kind, order 0."""
    return _bessel_series(_as_float("bessel_i0", x), 0)


def bessel_i1(x):
    """The modified Bessel function of the first kind, order 1."""
    return _bessel_series(_as_float("bessel_i1", x), 1)


def bessel_i0e(x):
    """exp(-|x|) i0(x)."""
    x = _as_float("bessel_i0e", x)
    return _ops.exp(-_ops.abs(x)) * _bessel_series(x, 0)


def bessel_i1e(x):
    """exp(-|x|) i1(x)."""
    x = _as_float("bessel_i1e", x)
    return _ops.exp(-_ops.abs(x)) * _bessel_series(x, 1)


# ---- the gamma family ------------------------------------------------------------------------
# lgamma by the Lanczos approximation with g = 7 and nine coefficients (the published set,
# relative error near 1e-15), reflected below 1/2; digamma by its recurrence up to 10 and
# its asymptotic series there, reflected below 1/2.

_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)


def _lgamma_right(x):
    """lgamma for x >= 1/2."""
    z = x - 1.0
    series = _ops.full_like(z, _LANCZOS[0])
    for i in range(1, len(_LANCZOS)):
        series = series + _LANCZOS[i] / (z + float(i))
    t = z + _LANCZOS_G + 0.5
    return 0.5 * math.log(2.0 * math.pi) + (z + 0.5) * _ops.log(t) - t + _ops.log(series)


def _in_float64(fname, input):  # noqa: A002
    """(input as a float64 tensor, the float dtype to give the result): the series cancel
    large terms, which float32 would round away."""
    x = _as_float(fname, input)
    return x.astype(float64), x.dtype


def lgamma(input):  # noqa: A002 - MindSpore's names
    """log |Gamma(x)| (inf at 0 and the negative integers)."""
    x, dtype = _in_float64("lgamma", input)
    left = _ops.less(x, 0.5)
    right_x = _ops.where(left, 1.0 - x, x)  # both branches evaluated at x >= 1/2
    right = _lgamma_right(right_x)
    sine = _ops.abs(_ops.sin(math.pi * x))
    reflected = math.log(math.pi) - _ops.log(sine) - right
    return _ops.where(left, reflected, right).astype(dtype)


def digamma(input):  # noqa: A002
    """The derivative of lgamma, psi(x)."""
    x, dtype = _in_float64("digamma", input)
    left = _ops.less(x, 0.5)
    y = _ops.where(left, 1.0 - x, x)
    shift = _ops.zeros_like(y)
    for k in range(10):
        shift = shift + 1.0 / (y + float(k))
    y = y + 10.0
    inv2 = 1.0 / (y * y)
    series = _ops.log(y) - 0.5 / y - inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (
        1.0 / 252 - inv2 * (1.0 / 240 - inv2 * (1.0 / 132)))))
    right = series - shift
    return _ops.where(left, right - math.pi / _ops.tan(math.pi * x), right).astype(dtype)


def mvlgamma(input, p):  # noqa: A002
    """The log of the multivariate gamma function of dimension p:
    p (p - 1) / 4 log(pi) + sum_j lgamma(x - j / 2), j = 0 .. p - 1 (x > (p - 1) / 2)."""
    x = _as_float("mvlgamma", input)
    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        raise_error(ValueError, f"mvlgamma: p must be a positive int, got {p!r}")
    total = _ops.full_like(x, p * (p - 1) / 4.0 * math.log(math.pi))
    for j in range(p):
        total = total + lgamma(x - j / 2.0)
    return total


# ---- integers and comparisons ------------------------------------------------------------------

def _check_ints(fname, input, other):  # noqa: A002
    for name, value in (("input", input), ("other", other)):
        if isinstance(value, _C.Tensor) and not is_int(value):
            raise_error(TypeError, f"{fname}: {name} must be an integer Tensor, got "
                                   f"{value.dtype}")


def _power_of_two(exponent):
    return _ops.pow(2, exponent) if isinstance(exponent, _C.Tensor) else 2 ** exponent


def bitwise_left_shift(input, other):  # noqa: A002 - MindSpore's names
    """input * 2 ** other for integers."""
    _check_ints("bitwise_left_shift", input, other)
    return input * _power_of_two(other)


def bitwise_right_shift(input, other):  # noqa: A002
    """input // 2 ** other for integers (an arithmetic shift: negatives round down)."""
    _check_ints("bitwise_right_shift", input, other)
    return _ops.floor_divide(input, _power_of_two(other))


def approximate_equal(x, y, tolerance=1e-5):
    """|x - y| < tolerance, element-wise."""
    return _ops.less(_ops.abs(x - y), tolerance)


__all__ = ["approximate_equal", "bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e",
           "bitwise_left_shift", "bitwise_right_shift", "digamma", "gumbel_softmax", "lgamma",
           "mvlgamma", "stop_gradient"]
