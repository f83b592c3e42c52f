"""More math: Bessel functions (pijit/_ops_bessel.py), the regularized incomplete gamma
functions, Hurwitz's zeta, nextafter, matrix_exp, batch_dot, population_count, the multilabel
margin loss, gamma and Poisson draws from pijit's generator, and their primitives."""
import math

import numpy as np

from pijit import _C
from pijit._ops_bessel import *  # noqa: F401,F403
from pijit._ops_bessel import __all__ as _bessel_names
from pijit._ops_array_extra import topk as _topk
from pijit._ops_nd import tensor_scatter_elements as _scatter_elements
from pijit._ops_special import lgamma as _lgamma
from pijit._primitives_more import _primitive
from pijit.numpy.reductions import cumsum as _np_cumsum
from pijit._tensor import Tensor, float32, float64, int32, int64, uint8
from pijit.mint._checks import (check_choice, check_int, check_tensor, is_float, is_int,
                                raise_error)

_ops = _C.ops


def _check_float(fname, name, value):
    check_tensor(fname, name, value)
    if not is_float(value):
        raise_error(TypeError, f"{fname}: {name} must be a float Tensor, got {value.dtype}")
    return value


def _seeded(seed, stream):
    """Keyword arguments for the stream-th draw of one call: with a seed, each draw gets its
    own (seed + stream) so draws are not copies of each other; without, the global
    generator (pijit.set_seed) supplies them."""
    return {} if seed is None or seed == 0 else {"seed": seed + stream}


# ---- the regularized incomplete gamma functions ------------------------------------------------
# P(a, x) by its power series where x < a + 1 and Q(a, x) by Legendre's continued fraction
# (modified Lentz) elsewhere, 200 terms each: about 1e-13 for a up to 100 and 1e-10 up to
# a = 1000 (the terms needed grow like sqrt(a)).

_GAMMA_TERMS = 200
_TINY = 1e-300


def _lower_series(a, x):
    """P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n))."""
    term = _ops.ones_like(x)
    total = term
    for n in range(1, _GAMMA_TERMS):
        term = term * x / (a + float(n))
        total = total + term
    return _ops.exp(a * _ops.log(x) - x - _lgamma(a + 1.0)) * total


def _upper_fraction(a, x):
    """Q(a, x) = x^a e^-x / Gamma(a) / (x + 1 - a - 1 (1 - a) / (x + 3 - a - ...))."""
    b = x + 1.0 - a
    c = _ops.full_like(x, 1.0 / _TINY)
    d = 1.0 / b
    h = d
    for i in range(1, _GAMMA_TERMS):
        an = -float(i) * (float(i) - a)
        b = b + 2.0
        d = an * d + b
        d = _ops.where(_ops.less(_ops.abs(d), _TINY), _ops.full_like(d, _TINY), d)
        c = b + an / c
        c = _ops.where(_ops.less(_ops.abs(c), _TINY), _ops.full_like(c, _TINY), c)
        d = 1.0 / d
        h = h * d * c
    return _ops.exp(a * _ops.log(x) - x - _lgamma(a)) * h


def _incomplete_gamma(fname, a, x, upper):
    _check_float(fname, "input", a)
    _check_float(fname, "other", x)
    dtype = a.dtype
    a, x = _ops.broadcast_to(a.astype(float64), _broadcast_shape(a.shape, x.shape)), \
        _ops.broadcast_to(x.astype(float64), _broadcast_shape(a.shape, x.shape))
    use_series = _ops.less(x, a + 1.0)
    # Each branch sees only the arguments it is accurate for, so neither makes nan.
    series_x = _ops.where(use_series, _ops.maximum(x, _TINY), _ops.ones_like(x))
    series_a = _ops.where(use_series, _ops.maximum(a, _TINY), _ops.ones_like(a))
    fraction_x = _ops.where(use_series, a + 1.0, x)
    lower = _lower_series(series_a, series_x)
    upper_value = _upper_fraction(_ops.maximum(a, _TINY), _ops.maximum(fraction_x, _TINY))
    p = _ops.where(use_series, lower, 1.0 - upper_value)
    q = _ops.where(use_series, 1.0 - lower, upper_value)
    out = q if upper else p
    out = _ops.where(_ops.equal(x, 0.0), _ops.full_like(x, 1.0 if upper else 0.0), out)
    out = _ops.where(_ops.equal(x, math.inf), _ops.full_like(x, 0.0 if upper else 1.0), out)
    invalid = _ops.logical_or(_ops.less_equal(a, 0.0), _ops.less(x, 0.0))
    return _ops.where(invalid, _ops.full_like(x, math.nan), out).astype(dtype)


def _broadcast_shape(*shapes):
    return tuple(np.broadcast_shapes(*(tuple(s) for s in shapes)))


def igamma(input, other):  # noqa: A002 - MindSpore's names
    """The regularized lower incomplete gamma function P(a = input, x = other)."""
    return _incomplete_gamma("igamma", input, other, False)


def igammac(input, other):  # noqa: A002
    """The regularized upper incomplete gamma function Q(a = input, x = other) = 1 - P."""
    return _incomplete_gamma("igammac", input, other, True)


def _zeta(x, q):
    """Hurwitz's zeta sum_k (k + q)^-x (x > 1, q > 0) by Euler-Maclaurin summation: ten terms
    directly, then the integral of the tail, half its first term and eight Bernoulli
    corrections (relative error near 1e-15 for x > 1)."""
    _check_float("Zeta", "x", x)
    _check_float("Zeta", "q", q)
    dtype = x.dtype
    shape = _broadcast_shape(x.shape, q.shape)
    x = _ops.broadcast_to(x.astype(float64), shape)
    q = _ops.broadcast_to(q.astype(float64), shape)
    direct_terms = 10
    total = _ops.zeros_like(x)
    for k in range(direct_terms):
        total = total + _ops.pow(q + float(k), -x)
    w = q + float(direct_terms)
    total = total + _ops.pow(w, 1.0 - x) / (x - 1.0) + 0.5 * _ops.pow(w, -x)
    bernoulli = (1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6,
                 -3617.0 / 510)
    rising = x  # x (x + 1) ... (x + 2j - 2)
    factorial = 2.0
    power = _ops.pow(w, -x - 1.0)
    inv_w2 = 1.0 / (w * w)
    for j, b in enumerate(bernoulli, start=1):
        total = total + b / factorial * rising * power
        rising = rising * (x + 2.0 * j - 1.0) * (x + 2.0 * j)
        factorial *= (2 * j + 1) * (2 * j + 2)
        power = power * inv_w2
    total = _ops.where(_ops.equal(x, 1.0), _ops.full_like(x, math.inf), total)
    invalid = _ops.logical_or(_ops.less(x, 1.0), _ops.less_equal(q, 0.0))
    return _ops.where(invalid, _ops.full_like(x, math.nan), total).astype(dtype)


def _next_after(x1, x2):
    """The float after x1 toward x2: x1 + ulp where the ulp is 2^(e - p) for x1's binary
    exponent e and precision p, halved when stepping toward zero from a power of two, and
    the smallest subnormal at zero."""
    _check_float("NextAfter", "x1", x1)
    _check_float("NextAfter", "x2", x2)
    if x1.dtype != x2.dtype or x1.dtype not in (float32, float64):
        raise_error(TypeError, f"NextAfter: x1 and x2 must both be float32 or both float64, "
                               f"got {x1.dtype} and {x2.dtype}")
    digits, smallest = (53, 2.0 ** -1074) if x1.dtype == float64 else (24, 2.0 ** -149)
    x = x1.astype(float64)
    y = x2.astype(float64)
    ax = _ops.abs(x)
    safe = _ops.where(_ops.greater(ax, 0.0), ax, _ops.ones_like(ax))
    exponent = _ops.floor(_ops.log2(safe))
    # log2 may round across an integer next to a power of two; correct it by one step.
    exponent = _ops.where(_ops.greater(_ops.exp2(exponent), safe), exponent - 1.0, exponent)
    exponent = _ops.where(_ops.less_equal(_ops.exp2(exponent + 1.0), safe), exponent + 1.0,
                          exponent)
    min_exponent = -1022.0 if x1.dtype == float64 else -126.0
    ulp = _ops.exp2(_ops.maximum(exponent, min_exponent) - (digits - 1))
    toward_zero = _ops.less(y * _ops.sign(x), ax)
    at_power = _ops.logical_and(_ops.equal(_ops.exp2(exponent), ax),
                                _ops.greater(exponent, min_exponent))
    ulp = _ops.where(_ops.logical_and(toward_zero, at_power), ulp * 0.5, ulp)
    step = _ops.where(_ops.greater(y, x), ulp, -ulp)
    out = _ops.where(_ops.equal(x, 0.0), _ops.sign(y - x) * smallest, x + step)
    out = _ops.where(_ops.equal(x, y), y, out)
    largest = float(np.finfo(np.float64 if x1.dtype == float64 else np.float32).max)
    out = _ops.where(_ops.equal(ax, math.inf),
                     _ops.where(_ops.equal(x, y), y, _ops.sign(x) * largest), out)
    nan = _ops.logical_or(_ops.not_equal(x, x), _ops.not_equal(y, y))
    return _ops.where(nan, _ops.full_like(x, math.nan), out).astype(x1.dtype)


# ---- matrices ---------------------------------------------------------------------------------------
# exp(A) by scaling and squaring: A / 2^s has 1-norm at most 1, where the degree-18 Taylor
# polynomial is exact to 1 / 19! ~ 8e-18, and squaring s times undoes the scaling. s depends
# on the data, so every matrix is squared _MAX_SQUARINGS times and keeps the square only
# while its own count lasts: one graph for all inputs (1-norms up to 2^30).

_TAYLOR_DEGREE = 18
_MAX_SQUARINGS = 30


def matrix_exp(input):  # noqa: A002
    """The matrix exponential of each square matrix in the last two axes."""
    _check_float("matrix_exp", "input", input)
    if input.ndim < 2 or input.shape[-1] != input.shape[-2]:
        raise_error(ValueError, f"matrix_exp: input must be (..., n, n), got shape "
                                f"{tuple(input.shape)}")
    n = input.shape[-1]
    norm = _ops.max(_ops.sum(_ops.abs(input), -2), -1, keepdims=True)
    squarings = _ops.clamp(_ops.ceil(_ops.log2(norm)), 0.0, float(_MAX_SQUARINGS))
    scaled = input * _ops.unsqueeze(_ops.exp2(-squarings), -1)
    identity = _ops.eye(n, dtype=input.dtype)
    result = identity
    for k in range(_TAYLOR_DEGREE, 0, -1):  # Horner: I + A (I + A/2 (I + ...)) / 1
        result = identity + _ops.matmul(scaled, result) / float(k)
    squarings = _ops.unsqueeze(squarings, -1)
    for i in range(_MAX_SQUARINGS):
        result = _ops.where(_ops.greater(squarings, float(i)), _ops.matmul(result, result),
                           result)
    return result


def _batch_dot_axes(x1, x2, axes):
    if axes is None:
        return x1.ndim - 1, x2.ndim - (1 if x2.ndim == 2 else 2)
    if isinstance(axes, int) and not isinstance(axes, bool):
        axes = (axes, axes)
    if not isinstance(axes, (tuple, list)) or len(axes) != 2 or \
            not all(isinstance(a, int) and not isinstance(a, bool) for a in axes):
        raise_error(ValueError, f"batch_dot: axes must be None, an int or two ints, got {axes!r}")
    out = []
    for a, t, name in ((axes[0], x1, "x1"), (axes[1], x2, "x2")):
        if not -t.ndim <= a < t.ndim:
            raise_error(ValueError, f"batch_dot: axis {a} is out of range for {name} of rank "
                                    f"{t.ndim}")
        a %= t.ndim
        if a == 0:
            raise_error(ValueError, f"batch_dot: axis 0 of {name} is the batch axis")
        out.append(a)
    return tuple(out)


def batch_dot(x1, x2, axes=None):
    """Per batch entry b, the dot product of x1[b] and x2[b] along axes[0] and axes[1]: the
    result has shape (B, x1's other axes, x2's other axes), (B, 1) for two matrices."""
    check_tensor("batch_dot", "x1", x1)
    check_tensor("batch_dot", "x2", x2)
    if x1.dtype != x2.dtype:
        raise_error(TypeError, f"batch_dot: x1 and x2 must have one dtype, got {x1.dtype} and "
                               f"{x2.dtype}")
    if x1.ndim < 2 or x2.ndim < 2:
        raise_error(ValueError, f"batch_dot: x1 and x2 must have rank 2 or more, got {x1.ndim} "
                                f"and {x2.ndim}")
    if x1.shape[0] != x2.shape[0]:
        raise_error(ValueError, f"batch_dot: batch sizes differ: {x1.shape[0]} and "
                                f"{x2.shape[0]}")
    a1, a2 = _batch_dot_axes(x1, x2, axes)
    if x1.shape[a1] != x2.shape[a2]:
        raise_error(ValueError, f"batch_dot: contracted sizes differ: {x1.shape[a1]} and "
                                f"{x2.shape[a2]}")
    rest1 = [i for i in range(1, x1.ndim) if i != a1]
    rest2 = [i for i in range(1, x2.ndim) if i != a2]
    batch, depth = x1.shape[0], x1.shape[a1]
    left = _ops.reshape(_ops.transpose(x1, tuple([0] + rest1 + [a1])), (batch, -1, depth))
    right = _ops.reshape(_ops.transpose(x2, tuple([0, a2] + rest2)), (batch, depth, -1))
    shape = (batch,) + tuple(x1.shape[i] for i in rest1) + tuple(x2.shape[i] for i in rest2)
    out = _ops.reshape(_ops.matmul(left, right), shape)
    return _ops.reshape(out, (batch, 1)) if len(shape) == 1 else out


_WIDTHS = {_C.dtype.u8: 8, _C.dtype.i8: 8, _C.dtype.i16: 16, _C.dtype.i32: 32,
           _C.dtype.i64: 64}


def population_count(input_x):
    """The number of set bits of each integer's two's-complement form, as uint8."""
    check_tensor("population_count", "input_x", input_x)
    if not is_int(input_x):
        raise_error(TypeError, f"population_count: input_x must be an integer Tensor, got "
                               f"{input_x.dtype}")
    width = _WIDTHS[input_x.dtype]
    x = input_x.astype(int64)
    count = _ops.less(x, 0).astype(int32)  # the sign bit of a signed type
    for bit in range(width if input_x.dtype == uint8 else width - 1):
        count = count + _ops.not_equal(_ops.bitwise_and(x, 1 << bit), 0).astype(int32)
    return count.astype(uint8)


# ---- the multilabel margin loss ---------------------------------------------------------------------

def _multilabel_margin(fname, input, target, reduction):  # noqa: A002
    """(loss, is_target): per row, sum over its targets j (the labels before the first -1)
    and non-target classes i of max(0, 1 - (x[j] - x[i])), divided by the class count."""
    _check_float(fname, "input", input)
    check_tensor(fname, "target", target)
    check_choice(fname, "reduction", reduction, ("none", "mean", "sum"))
    if not is_int(target):
        raise_error(TypeError, f"{fname}: target must be an integer Tensor, got {target.dtype}")
    if input.ndim not in (1, 2) or tuple(target.shape) != tuple(input.shape):
        raise_error(ValueError, f"{fname}: input must be (C,) or (N, C) and target of its "
                                f"shape, got {tuple(input.shape)} and {tuple(target.shape)}")
    rows = _ops.reshape(input, (-1, input.shape[-1]))
    labels = _ops.reshape(target.astype(int64), (-1, input.shape[-1]))
    classes = rows.shape[-1]
    ended = _np_cumsum(_ops.equal(labels, -1).astype(int32), -1)
    valid = _ops.equal(ended, 0)
    safe = _ops.where(valid, _ops.clamp(labels, 0, classes - 1), _ops.zeros_like(labels))
    chosen = _ops.one_hot(safe, classes, 1.0, 0.0).astype(rows.dtype) \
        * _ops.unsqueeze(valid.astype(rows.dtype), -1)
    is_target = _ops.max(chosen, 1)  # (N, C)
    target_scores = _ops.sum(chosen * _ops.unsqueeze(rows, 1), -1)  # x[y_j], (N, C)
    margins = _ops.relu(1.0 - _ops.unsqueeze(target_scores, -1) + _ops.unsqueeze(rows, 1))
    weights = _ops.unsqueeze(valid.astype(rows.dtype), -1) * _ops.unsqueeze(1.0 - is_target, 1)
    losses = _ops.sum(_ops.sum(margins * weights, -1), -1) / float(classes)
    if input.ndim == 1:
        losses = _ops.reshape(losses, ())
    is_target = _ops.reshape(is_target, target.shape).astype(int32)
    if reduction == "mean":
        return _ops.mean(losses), is_target
    if reduction == "sum":
        return _ops.sum(losses), is_target
    return losses, is_target


def multi_label_margin_loss(input, target, reduction="mean"):  # noqa: A002
    """The multilabel hinge loss; target lists each row's class indices, ended by -1."""
    return _multilabel_margin("multi_label_margin_loss", input, target, reduction)[0]


# ---- random draws -----------------------------------------------------------------------------------
# Gamma draws by Marsaglia and Tsang's squeeze-free method (a cubed normal accepted against
# a uniform), with shape below 1 boosted by U^(1/alpha). Each draw makes 8 proposals at once
# and keeps the first accepted (each is accepted with probability >= 0.95, so all 8 fail with
# probability < 4e-11; the proposal mode d is kept then).

_GAMMA_PROPOSALS = 8


def _standard_gamma(alpha, seed):
    """Gamma(alpha, 1) draws of alpha's shape (float64 alpha > 0)."""
    boosted = _ops.less(alpha, 1.0)
    shape_parameter = _ops.where(boosted, alpha + 1.0, alpha)
    d = shape_parameter - 1.0 / 3.0
    c = 1.0 / _ops.sqrt(9.0 * d)
    proposals = (_GAMMA_PROPOSALS,) + tuple(alpha.shape)
    z = _ops.randn(proposals, dtype=float64, **_seeded(seed, 0))
    u = _ops.uniform(proposals, 1e-300, 1.0, dtype=float64, **_seeded(seed, 1))
    v = (1.0 + c * z) ** 3
    positive = _ops.greater(v, 0.0)
    safe_v = _ops.where(positive, v, _ops.ones_like(v))
    accepted = _ops.logical_and(positive, _ops.less(
        _ops.log(u), 0.5 * z * z + d - d * safe_v + d * _ops.log(safe_v)))
    first = _ops.argmax(accepted.astype(int32), 0)
    picked = _ops.sum(_ops.one_hot(first, _GAMMA_PROPOSALS, 1.0, 0.0).astype(float64)
                      * _ops.transpose(d * safe_v, tuple(range(1, v.ndim)) + (0,)), -1)
    any_accepted = _ops.greater(_ops.sum(accepted.astype(int32), 0), 0)
    draws = _ops.where(any_accepted, picked, d)
    boost = _ops.uniform(tuple(alpha.shape), 1e-300, 1.0, dtype=float64, **_seeded(seed, 2))
    return _ops.where(boosted, draws * _ops.pow(boost, 1.0 / alpha), draws)


def _shape_tuple(fname, shape):
    """A shape given as a tuple or list of ints, or as a 1-D integer Tensor."""
    if isinstance(shape, Tensor):
        if not is_int(shape) or shape.ndim != 1:
            raise_error(TypeError, f"{fname}: shape must be a 1-D integer Tensor, got "
                                   f"{shape.dtype} of rank {shape.ndim}")
        shape = tuple(int(v) for v in shape.asnumpy())
    if not isinstance(shape, (tuple, list)):
        raise_error(TypeError, f"{fname}: shape must be a tuple, got {type(shape).__name__}")
    return tuple(check_int(fname, "shape", s, low=0) for s in shape)


def _check_seed(fname, seed):
    if seed is not None:
        check_int(fname, "seed", seed, low=0)
    return seed


def random_gamma(shape, alpha, seed=0):
    """Gamma(alpha, 1) draws of shape `shape + alpha.shape`, in alpha's dtype."""
    shape = _shape_tuple("random_gamma", shape)
    _check_float("random_gamma", "alpha", alpha)
    seed = _check_seed("random_gamma", seed)
    full = _ops.broadcast_to(_ops.reshape(alpha.astype(float64), (1,) * len(shape)
                                          + tuple(alpha.shape)), shape + tuple(alpha.shape))
    return _standard_gamma(full, seed).astype(alpha.dtype)


def gamma(shape, alpha, beta, seed=None):
    """Gamma draws with shape alpha and rate beta, of the broadcast shape of `shape`, alpha
    and beta (float32)."""
    shape = _shape_tuple("gamma", shape)
    _check_float("gamma", "alpha", alpha)
    _check_float("gamma", "beta", beta)
    seed = _check_seed("gamma", seed)
    out_shape = _broadcast_shape(shape, alpha.shape, beta.shape)
    full = _ops.broadcast_to(alpha.astype(float64), out_shape)
    return (_standard_gamma(full, seed) / beta.astype(float64)).astype(float32)


# Poisson draws: below rate 10 by inversion (the count of cumulative probabilities under a
# uniform, 45 terms: P(X > 45) < 1e-13 there); from 10 by Hormann's transformed rejection
# (PTRS, 1993), 10 proposals per draw, each accepted with probability above 0.85.

_INVERSION_TERMS = 45
_POISSON_PROPOSALS = 10


def _poisson_inversion(rate, seed):
    u = _ops.uniform(tuple(rate.shape), 0.0, 1.0, dtype=float64, **_seeded(seed, 3))
    probability = _ops.exp(-rate)
    cumulative = probability
    count = _ops.zeros_like(rate)
    for k in range(_INVERSION_TERMS):
        count = count + _ops.greater(u, cumulative).astype(float64)
        probability = probability * rate / float(k + 1)
        cumulative = cumulative + probability
    return count


def _poisson_transformed_rejection(rate, seed):
    proposals = (_POISSON_PROPOSALS,) + tuple(rate.shape)
    u = _ops.uniform(proposals, -0.5, 0.5, dtype=float64, **_seeded(seed, 4))
    v = _ops.uniform(proposals, 1e-300, 1.0, dtype=float64, **_seeded(seed, 5))
    root = _ops.sqrt(rate)
    b = 0.931 + 2.53 * root
    a = -0.059 + 0.02483 * b
    inverse_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2.0)
    us = 0.5 - _ops.abs(u)
    k = _ops.floor((2.0 * a / us + b) * u + rate + 0.43)
    quick = _ops.logical_and(_ops.greater_equal(us, 0.07), _ops.less_equal(v, v_r))
    rejected = _ops.logical_or(_ops.less(k, 0.0), _ops.logical_and(_ops.less(us, 0.013),
                                                                   _ops.greater(v, us)))
    safe_k = _ops.maximum(k, 0.0)
    log_ratio = _ops.log(v * inverse_alpha / (a / (us * us) + b))
    exact = _ops.less_equal(log_ratio, -rate + safe_k * _ops.log(rate) - _lgamma(safe_k + 1.0))
    accepted = _ops.logical_or(quick, _ops.logical_and(_ops.logical_not(rejected), exact))
    first = _ops.argmax(accepted.astype(int32), 0)
    picked = _ops.sum(_ops.one_hot(first, _POISSON_PROPOSALS, 1.0, 0.0).astype(float64)
                      * _ops.transpose(safe_k, tuple(range(1, k.ndim)) + (0,)), -1)
    return _ops.where(_ops.greater(_ops.sum(accepted.astype(int32), 0), 0), picked,
                      _ops.floor(rate))


def _poisson(rate, seed):
    small = _ops.less(rate, 10.0)
    inverted = _poisson_inversion(_ops.where(small, rate, _ops.ones_like(rate)), seed)
    rejected = _poisson_transformed_rejection(_ops.where(small, _ops.full_like(rate, 10.0), rate),
                                              seed)
    return _ops.where(small, inverted, rejected)


def random_poisson(shape, rate, seed=None, dtype=float32):
    """Poisson(rate) draws of shape `shape + rate.shape` in dtype."""
    shape = _shape_tuple("random_poisson", shape)
    check_tensor("random_poisson", "rate", rate)
    seed = _check_seed("random_poisson", seed)
    full = _ops.broadcast_to(_ops.reshape(rate.astype(float64), (1,) * len(shape)
                                          + tuple(rate.shape)), shape + tuple(rate.shape))
    return _poisson(_ops.maximum(full, 0.0), seed).astype(dtype)


# ---- diagonals with k ranges and alignment (MatrixDiagV3 and friends) --------------------------------
# Diagonal d of an M x N matrix holds (i, j) = (max(-d, 0) + t, max(d, 0) + t); a band
# k = (k_lo, k_hi) is stored as rows k_hi .. k_lo of width min(M + min(k_hi, 0),
# N - max(k_lo, 0)), each shorter diagonal padded on the left ("RIGHT" alignment) or right.
# The index maps depend only on shapes and k, so they are built once with NumPy.

_ALIGNMENTS = ("LEFT_RIGHT", "LEFT_LEFT", "RIGHT_LEFT", "RIGHT_RIGHT")


def _band(fname, k):
    values = np.asarray(k.asnumpy() if isinstance(k, Tensor) else k).reshape(-1).tolist()
    if len(values) not in (1, 2) or not all(float(v).is_integer() for v in values):
        raise_error(ValueError, f"{fname}: k must be an int or a pair of ints, got {values}")
    low, high = int(values[0]), int(values[-1])
    if low > high:
        raise_error(ValueError, f"{fname}: k[0] ({low}) must not exceed k[1] ({high})")
    return low, high, len(values) == 1 or low == high


def _diagonal_slots(rows, cols, low, high, align):
    """(slot of each matrix position or -1, position of each slot or -1), flattened."""
    width = min(rows + min(high, 0), cols - max(low, 0))
    if width <= 0:
        raise_error(ValueError, f"the diagonals {low} .. {high} lie outside a {rows} x {cols} "
                                f"matrix")
    slot_of = -np.ones(rows * cols, np.int64)
    position_of = -np.ones((high - low + 1) * width, np.int64)
    for row, d in enumerate(range(high, low - 1, -1)):
        length = min(rows + min(d, 0), cols - max(d, 0))
        right = align.split("_")[0 if d >= 0 else 1] == "RIGHT"
        offset = width - length if right else 0
        for t in range(max(length, 0)):
            position = (max(-d, 0) + t) * cols + max(d, 0) + t
            slot = row * width + offset + t
            slot_of[position] = slot
            position_of[slot] = position
    return slot_of, position_of, width


def _take_last(flat, indices, fill):
    """flat[..., indices] with fill where an index is -1."""
    safe = Tensor(np.maximum(indices, 0))
    taken = _ops.gather(flat, safe, flat.ndim - 1)
    return _ops.where(Tensor(indices >= 0), taken, fill)


def _check_align(fname, align):
    return check_choice(fname, "align", align, _ALIGNMENTS)


def _matrix_diag_part_v3(self, x, k, padding_value):
    check_tensor("MatrixDiagPartV3", "x", x)
    low, high, single = _band("MatrixDiagPartV3", k)
    rows, cols = x.shape[-2], x.shape[-1]
    _, position_of, width = _diagonal_slots(rows, cols, low, high, self.align)
    flat = _ops.reshape(x, tuple(x.shape[:-2]) + (rows * cols,))
    fill = _ops.full((), _scalar(padding_value), dtype=x.dtype)
    out = _take_last(flat, position_of, fill)
    tail = (width,) if single else (high - low + 1, width)
    return _ops.reshape(out, tuple(x.shape[:-2]) + tail)


def _scalar(value):
    return value.asnumpy().reshape(-1)[0].item() if isinstance(value, Tensor) else value


def _matrix_diag_v3(self, x, k, num_rows, num_cols, padding_value):
    check_tensor("MatrixDiagV3", "x", x)
    low, high, single = _band("MatrixDiagV3", k)
    width = x.shape[-1]
    num_rows, num_cols = int(_scalar(num_rows)), int(_scalar(num_cols))
    min_rows, min_cols = width - min(high, 0), width + max(low, 0)
    if num_rows == -1 and num_cols == -1:
        num_rows = num_cols = max(min_rows, min_cols)
    num_rows = min_rows if num_rows == -1 else num_rows
    num_cols = min_cols if num_cols == -1 else num_cols
    slot_of, _, needed = _diagonal_slots(num_rows, num_cols, low, high, self.align)
    if needed != width or (not single and x.shape[-2] != high - low + 1):
        raise_error(ValueError, f"MatrixDiagV3: x of shape {tuple(x.shape)} does not hold the "
                                f"diagonals {low} .. {high} of a {num_rows} x {num_cols} matrix")
    batch = tuple(x.shape[:-1]) if single else tuple(x.shape[:-2])
    flat = _ops.reshape(x, batch + (-1,))
    fill = _ops.full((), _scalar(padding_value), dtype=x.dtype)
    return _ops.reshape(_take_last(flat, slot_of, fill), batch + (num_rows, num_cols))


def _matrix_set_diag_v3(self, x, diagonal, k):
    check_tensor("MatrixSetDiagV3", "x", x)
    check_tensor("MatrixSetDiagV3", "diagonal", diagonal)
    low, high, single = _band("MatrixSetDiagV3", k)
    rows, cols = x.shape[-2], x.shape[-1]
    slot_of, _, width = _diagonal_slots(rows, cols, low, high, self.align)
    expected = tuple(x.shape[:-2]) + ((width,) if single else (high - low + 1, width))
    if tuple(diagonal.shape) != expected:
        raise_error(ValueError, f"MatrixSetDiagV3: diagonal must have shape {expected}, got "
                                f"{tuple(diagonal.shape)}")
    flat_x = _ops.reshape(x, tuple(x.shape[:-2]) + (rows * cols,))
    flat_d = _ops.reshape(diagonal, tuple(x.shape[:-2]) + (-1,))
    taken = _ops.gather(flat_d, Tensor(np.maximum(slot_of, 0)), flat_d.ndim - 1)
    out = _ops.where(Tensor(slot_of >= 0), taken, flat_x)
    return _ops.reshape(out, tuple(x.shape))


def _diag_primitive(name, call, doc):
    made = _primitive(name, {"align": "RIGHT_LEFT"}, call, doc)
    init = made.__init__

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        _check_align(name, self.align)

    made.__init__ = __init__
    return made


MatrixDiagV3 = _diag_primitive(
    "MatrixDiagV3", _matrix_diag_v3,
    "MatrixDiagV3(align='RIGHT_LEFT')(x, k, num_rows, num_cols, padding_value): matrices with "
    "the diagonals k[0] .. k[1] taken from x.")
MatrixDiagPartV3 = _diag_primitive(
    "MatrixDiagPartV3", _matrix_diag_part_v3,
    "MatrixDiagPartV3(align='RIGHT_LEFT')(x, k, padding_value): the diagonals k[0] .. k[1].")
MatrixSetDiagV3 = _diag_primitive(
    "MatrixSetDiagV3", _matrix_set_diag_v3,
    "MatrixSetDiagV3(align='RIGHT_LEFT')(x, diagonal, k): x with those diagonals replaced.")


# ---- the other primitives ---------------------------------------------------------------------------

def _tridiagonal_matmul(self, superdiag, maindiag, subdiag, rhs):
    """out[i] = main[i] rhs[i] + super[i] rhs[i + 1] + sub[i] rhs[i - 1] (the last super and
    the first sub entry are unused)."""
    for name, value in (("superdiag", superdiag), ("maindiag", maindiag),
                        ("subdiag", subdiag), ("rhs", rhs)):
        _check_float("TridiagonalMatMul", name, value)
    m = rhs.shape[-2]
    for name, value in (("superdiag", superdiag), ("maindiag", maindiag), ("subdiag", subdiag)):
        if tuple(value.shape[-2:]) != (1, m):
            raise_error(ValueError, f"TridiagonalMatMul: {name} must be (..., 1, {m}), got "
                                    f"{tuple(value.shape)}")

    def column(diagonal):
        return _ops.transpose(diagonal, tuple(range(diagonal.ndim - 2)) + (diagonal.ndim - 1,
                                                                          diagonal.ndim - 2))

    zero_row = _ops.zeros_like(rhs[..., :1, :])
    below = _ops.concat((rhs[..., 1:, :], zero_row), -2)
    above = _ops.concat((zero_row, rhs[..., :-1, :]), -2)
    return column(maindiag) * rhs + column(superdiag) * below + column(subdiag) * above


def _nth_element(self, input, n):  # noqa: A002
    check_tensor("NthElement", "input", input)
    n = int(_scalar(n))
    if input.ndim < 1 or not 0 <= n < input.shape[-1]:
        raise_error(ValueError, f"NthElement: n ({n}) must be in [0, {input.shape[-1] if input.ndim else 0})")
    values = _topk(input, n + 1, -1, largest=self.reverse, sorted=True)[0]
    return values[..., n]


def _histogram(self, x):
    check_tensor("Histogram", "x", x)
    if not (is_float(x) or x.dtype == int32):
        raise_error(TypeError, f"Histogram: x must be float16, float32 or int32, got {x.dtype}")
    bins = check_int("Histogram", "bins", self.bins, low=1)
    if self.min > self.max:
        raise_error(ValueError, f"Histogram: min ({self.min}) must not exceed max ({self.max})")
    values = _ops.reshape(x.astype(float64), (-1,))
    low, high = float(self.min), float(self.max)
    if low == high:  # the data's range, widened by one on each side when it is a point
        low, high = _ops.min(values), _ops.max(values)
        point = _ops.equal(low, high)
        low, high = _ops.where(point, low - 1.0, low), _ops.where(point, high + 1.0, high)
    index = _ops.floor((values - low) * bins / (high - low))
    index = _ops.clamp(index, 0.0, float(bins - 1)).astype(int64)
    inside = _ops.logical_and(_ops.greater_equal(values, low), _ops.less_equal(values, high))
    counts = _ops.sum(_ops.one_hot(index, bins, 1.0, 0.0).astype(float64)
                      * _ops.unsqueeze(inside.astype(float64), -1), 0)
    return counts.astype(int32 if x.dtype == int32 else float32)


def _compare_and_bitpack(self, x, threshold):
    check_tensor("CompareAndBitpack", "x", x)
    if x.ndim < 1 or x.shape[-1] % 8:
        raise_error(ValueError, f"CompareAndBitpack: the last axis of x must be a multiple of 8, "
                                f"got shape {tuple(x.shape)}")
    bits = _ops.greater(x, threshold).astype(int32)
    groups = _ops.reshape(bits, tuple(x.shape[:-1]) + (x.shape[-1] // 8, 8))
    weights = Tensor(np.array([128, 64, 32, 16, 8, 4, 2, 1], np.int32))
    return _ops.sum(groups * weights, -1).astype(uint8)


def _non_deterministic_ints(self, shape):
    shape = _shape_tuple("NonDeterministicInts", shape)
    check_choice("NonDeterministicInts", "dtype", self.dtype, (int32, int64))
    high = _ops.floor(_ops.uniform(shape, 0.0, 2.0 ** 32, dtype=float64)) - 2.0 ** 31
    if self.dtype == int32:
        return high.astype(int32)
    low = _ops.floor(_ops.uniform(shape, 0.0, 2.0 ** 32, dtype=float64)).astype(int64)
    return high.astype(int64) * (2 ** 32) + low


def _cauchy(self):
    size = _shape_tuple("Cauchy", self.size)
    u = _ops.uniform(size, 1e-7, 1.0 - 1e-7, dtype=float64)
    return (self.median + self.sigma * _ops.tan(math.pi * (u - 0.5))).astype(float32)


def _log_normal_reverse(self, input):  # noqa: A002
    _check_float("LogNormalReverse", "input", input)
    draws = _ops.randn(tuple(input.shape), dtype=float64) * self.std + self.mean
    return _ops.exp(draws).astype(input.dtype)


MatrixExp = _primitive("MatrixExp", {}, lambda self, x: matrix_exp(x),
                       "MatrixExp()(x): the matrix exponential.")
PopulationCount = _primitive("PopulationCount", {}, lambda self, x: population_count(x),
                             "PopulationCount()(input_x): set bits per element, as uint8.")
MultilabelMarginLoss = _primitive(
    "MultilabelMarginLoss", {"reduction": "mean"},
    lambda self, x, target: _multilabel_margin("MultilabelMarginLoss", x, target,
                                               self.reduction),
    "MultilabelMarginLoss(reduction='mean')(x, target): (loss, is_target).")
Zeta = _primitive("Zeta", {}, lambda self, x, q: _zeta(x, q),
                  "Zeta()(x, q): Hurwitz's zeta function sum_k (k + q)^-x.")
NextAfter = _primitive("NextAfter", {}, lambda self, x1, x2: _next_after(x1, x2),
                       "NextAfter()(x1, x2): the next representable float after x1 toward x2.")
Gamma = _primitive("Gamma", {"seed": 0, "seed2": 0},
                   lambda self, shape, alpha, beta: gamma(shape, alpha, beta, self.seed),
                   "Gamma(seed=0, seed2=0)(shape, alpha, beta): gamma draws.")
RandomPoisson = _primitive(
    "RandomPoisson", {"seed": 0, "seed2": 0, "dtype": int64},
    lambda self, shape, rate: random_poisson(shape, rate, self.seed, self.dtype),
    "RandomPoisson(seed=0, seed2=0, dtype=int64)(shape, rate): Poisson draws.")
Cauchy = _primitive("Cauchy", {"size": (), "median": 0.0, "sigma": 1.0}, _cauchy,
                    "Cauchy(size, median=0.0, sigma=1.0)(): Cauchy draws (float32).")
LogNormalReverse = _primitive("LogNormalReverse", {"mean": 1.0, "std": 2.0}, _log_normal_reverse,
                              "LogNormalReverse(mean=1.0, std=2.0)(input): exp(normal draws) "
                              "of input's shape and dtype.")
NonDeterministicInts = _primitive("NonDeterministicInts", {"dtype": int64},
                                  _non_deterministic_ints,
                                  "NonDeterministicInts(dtype=int64)(shape): uniform integers "
                                  "over the dtype's whole range.")
TridiagonalMatMul = _primitive("TridiagonalMatMul", {}, _tridiagonal_matmul,
                               "TridiagonalMatMul()(superdiag, maindiag, subdiag, rhs).")
NthElement = _primitive("NthElement", {"reverse": False}, _nth_element,
                        "NthElement(reverse=False)(input, n): the n-th smallest (largest with "
                        "reverse) entry along the last axis.")
Histogram = _primitive("Histogram", {"bins": 100, "min": 0.0, "max": 0.0}, _histogram,
                       "Histogram(bins=100, min=0.0, max=0.0)(x): counts in equal-width bins.")
ScatterAddWithAxis = _primitive(
    "ScatterAddWithAxis", {"axis": 0},
    lambda self, input_x, indices, updates: _scatter_elements(input_x, indices, updates,
                                                              self.axis, "add"),
    "ScatterAddWithAxis(axis=0)(input_x, indices, updates): updates added at indices along "
    "axis.")
CompareAndBitpack = _primitive("CompareAndBitpack", {}, _compare_and_bitpack,
                               "CompareAndBitpack()(x, threshold): x > threshold packed eight "
                               "to a uint8, first element in the high bit.")

__all__ = list(_bessel_names) + [
    "Cauchy", "CompareAndBitpack", "Gamma", "Histogram", "LogNormalReverse", "MatrixDiagPartV3",
    "MatrixDiagV3", "MatrixExp", "MatrixSetDiagV3", "MultilabelMarginLoss", "NextAfter",
    "NonDeterministicInts", "NthElement", "PopulationCount", "RandomPoisson",
    "ScatterAddWithAxis", "TridiagonalMatMul", "Zeta", "batch_dot", "gamma", "igamma",
    "igammac", "matrix_exp", "multi_label_margin_loss", "population_count", "random_gamma",
    "random_poisson"]
