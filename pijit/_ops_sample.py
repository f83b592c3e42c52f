"""MindSpore's sampling functions and window functions, composed of pijit's ops and its
global generator (pijit.set_seed): categorical draws by the Gumbel-max trick, multinomial
draws by inverse-CDF search (with replacement) or Gumbel top-k (without), permutations by
sorting uniform keys; the Hann, Hamming, Blackman, Bartlett and Kaiser windows, and the
modified Bessel function i0 that Kaiser needs."""
import math

from pijit import _C
from pijit._tensor import float32, int64
from pijit.mint import _sort as _mint_sort
from pijit.mint._checks import as_real_float, check_int, check_tensor, is_float, raise_error
from pijit.numpy._utils import broadcast_shapes
from pijit.numpy.reductions import cumsum as _np_cumsum

_ops = _C.ops


def _seeded(seed):
    return {} if seed is None or seed == 0 else {"seed": seed}


def _gumbel(shape, dtype, seed):
    """Standard Gumbel noise, -log(-log(u)), with u kept inside (0, 1)."""
    u = _ops.uniform(shape, 1e-10, 1.0 - 1e-7, dtype=dtype, **_seeded(seed))
    return -_ops.log(-_ops.log(u))


def random_categorical(logits, num_sample, seed=0, dtype=int64):
    """(batch, num_sample) class indices drawn from the unnormalised log-probabilities
    `logits` (batch, classes)."""
    check_tensor("random_categorical", "logits", logits)
    if logits.ndim != 2:
        raise_error(ValueError, f"random_categorical: logits must be 2-D, got {logits.ndim}-D")
    num_sample = check_int("random_categorical", "num_sample", num_sample, low=0)
    batch, classes = logits.shape
    noisy = _ops.unsqueeze(logits.astype(float32), 1) + _gumbel((batch, num_sample, classes),
                                                                 float32, seed)
    return _ops.argmax(noisy, -1).astype(dtype)


def multinomial(input, num_samples, replacement=True, seed=None):  # noqa: A002
    """Int64 indices drawn num_samples times from the categories of each row of `input`
    (non-negative weights, 1-D or 2-D): independently with replacement, else distinct
    categories (num_samples at most their number)."""
    check_tensor("multinomial", "input", input)
    if input.ndim not in (1, 2):
        raise_error(ValueError, f"multinomial: input must be 1-D or 2-D, got {input.ndim}-D")
    num_samples = check_int("multinomial", "num_samples", num_samples, low=1)
    rows = input if input.ndim == 2 else _ops.unsqueeze(input, 0)
    rows = as_real_float("multinomial", rows)
    batch, classes = rows.shape
    if replacement:
        # The drawn index is the count of cumulative weights at or below u * total.
        totals = _np_cumsum(rows, -1)
        u = _ops.uniform((batch, num_samples), 0.0, 1.0, dtype=rows.dtype, **_seeded(seed)) \
            * totals[:, classes - 1:classes]
        drawn = _ops.minimum(_mint_sort.searchsorted(totals, u, right=True), classes - 1)
    else:
        if num_samples > classes:
            raise_error(ValueError, f"multinomial: {num_samples} samples without replacement "
                                    f"from {classes} categories")
        keys = _ops.log(rows) + _gumbel((batch, classes), rows.dtype, seed)
        drawn = _mint_sort.topk(keys, num_samples, -1)[1]
    return drawn if input.ndim == 2 else _ops.squeeze(drawn, 0)


def shuffle(x, seed=None):
    """x with its slices along axis 0 in a random order."""
    check_tensor("shuffle", "x", x)
    if x.ndim == 0:
        return x
    keys = _ops.uniform((x.shape[0],), 0.0, 1.0, **_seeded(seed))
    order = _mint_sort.sort(keys)[1]
    return _ops.gather(x, order, 0)


def randperm(n, seed=0, offset=0, dtype=int64):
    """A random permutation of 0 .. n - 1."""
    n = check_int("randperm", "n", n, low=0)
    return _mint_sort.sort(_ops.uniform((n,), 0.0, 1.0, **_seeded(seed)))[1].astype(dtype)


def _shape_of(fname, shape):
    if isinstance(shape, _C.Tensor):
        shape = tuple(int(d) for d in shape.asnumpy().reshape(-1))
    if not isinstance(shape, (tuple, list)) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise_error(TypeError, f"{fname}: shape must be a tuple of non-negative ints, got {shape!r}")
    return tuple(shape)


def uniform(shape, minval=0.0, maxval=1.0, seed=None, dtype=float32):
    """Samples uniform in [minval, maxval): floats, or for an integer dtype integers. minval
    and maxval may be Tensors (MindSpore's form), broadcast with shape."""
    shape = _shape_of("uniform", shape)
    if not isinstance(minval, _C.Tensor) and not isinstance(maxval, _C.Tensor):
        return _ops.uniform(shape, minval, maxval, dtype=dtype, **_seeded(seed))
    lo = minval if isinstance(minval, _C.Tensor) else _ops.full((), minval, dtype=float32)
    hi = maxval if isinstance(maxval, _C.Tensor) else _ops.full((), maxval, dtype=float32)
    shape = broadcast_shapes("uniform", shape, tuple(lo.shape), tuple(hi.shape))
    if is_float(lo.astype(dtype)):
        u = _ops.uniform(shape, 0.0, 1.0, dtype=dtype, **_seeded(seed))
        return lo.astype(dtype) + u * (hi.astype(dtype) - lo.astype(dtype))
    # Integers in [minval, maxval): the floor of a uniform float over the interval's width.
    u = _ops.uniform(shape, 0.0, 1.0, dtype=_C.Tensor(0.0).dtype, **_seeded(seed))
    width = (hi - lo).astype(u.dtype)
    return (lo.astype(u.dtype) + _ops.floor(u * width)).astype(dtype)


def normal(shape, mean=0.0, stddev=1.0, seed=None, dtype=None):
    """Normal samples of the given means and standard deviations (numbers or Tensors), of the
    shape broadcast from shape, mean's and stddev's (MindSpore's ops.normal); dtype defaults
    to a float mean's, else float32."""
    shape = _shape_of("normal", shape)
    if not isinstance(mean, _C.Tensor) and not isinstance(stddev, _C.Tensor):
        return _ops.normal(shape, mean, stddev, dtype=dtype, **_seeded(seed))
    mean_t = mean if isinstance(mean, _C.Tensor) else _ops.full((), mean, dtype=float32)
    std_t = stddev if isinstance(stddev, _C.Tensor) else _ops.full((), stddev, dtype=float32)
    dtype = dtype or (mean_t.dtype if is_float(mean_t) else float32)
    shape = broadcast_shapes("normal", shape, tuple(mean_t.shape), tuple(std_t.shape))
    z = _ops.normal(shape, 0.0, 1.0, dtype=dtype, **_seeded(seed))
    return mean_t.astype(dtype) + z * std_t.astype(dtype)


def standard_laplace(shape, seed=None):
    """Samples of the Laplace distribution with location 0 and scale 1."""
    u = _ops.uniform(tuple(shape), -0.5 + 1e-7, 0.5 - 1e-7, **_seeded(seed))
    return -_ops.sign(u) * _ops.log1p(-2.0 * _ops.abs(u))


def laplace(shape, mean, lambda_param, seed=None):
    """Samples of the Laplace distribution with location mean and scale lambda_param."""
    return mean + lambda_param * standard_laplace(shape, seed)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3):  # noqa: A002
    """x where x >= 0, else x times a slope drawn uniformly from [lower, upper] per
    element."""
    check_tensor("rrelu", "input", input)
    if lower > upper:
        raise_error(ValueError, f"rrelu: lower ({lower}) must not exceed upper ({upper})")
    slopes = _ops.uniform(input.shape, float(lower), float(upper), dtype=input.dtype)
    return _ops.where(_ops.greater_equal(input, 0), input, input * slopes)


# ---- windows -----------------------------------------------------------------------------------

def _window_positions(fname, window_length, periodic, dtype):
    """(n, the cosine's period N, float positions 0 .. n - 1): N = n for a periodic window,
    n - 1 for a symmetric one."""
    n = check_int(fname, "window_length", window_length, low=0)
    if not isinstance(periodic, bool):
        raise_error(TypeError, f"{fname}: periodic must be a bool, got {type(periodic).__name__}")
    return n, (n if periodic else n - 1), _ops.arange(n, dtype=dtype or float32)


def _cosine_window(fname, window_length, periodic, dtype, coefficients):
    """sum_k (-1)^k a_k cos(2 pi k i / N): the generalised cosine windows."""
    n, period, i = _window_positions(fname, window_length, periodic, dtype)
    if n <= 1:
        return _ops.ones((n,), dtype=dtype or float32)
    out = _ops.zeros_like(i)
    for k, a in enumerate(coefficients):
        out = out + ((-1) ** k) * a * _ops.cos(i * (2.0 * math.pi * k / period))
    return out


def hann_window(window_length, periodic=True, *, dtype=None):
    """0.5 - 0.5 cos(2 pi i / N)."""
    return _cosine_window("hann_window", window_length, periodic, dtype, (0.5, 0.5))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None):
    """alpha - beta cos(2 pi i / N)."""
    return _cosine_window("hamming_window", window_length, periodic, dtype, (alpha, beta))


def blackman_window(window_length, periodic=True, *, dtype=None):
    """0.42 - 0.5 cos(2 pi i / N) + 0.08 cos(4 pi i / N)."""
    return _cosine_window("blackman_window", window_length, periodic, dtype, (0.42, 0.5, 0.08))


def bartlett_window(window_length, periodic=True, *, dtype=None):
    """The triangle 1 - |2 i / N - 1|."""
    n, period, i = _window_positions("bartlett_window", window_length, periodic, dtype)
    if n <= 1:
        return _ops.ones((n,), dtype=dtype or float32)
    return 1.0 - _ops.abs(i * (2.0 / period) - 1.0)


def i0(input):  # noqa: A002
    """The modified Bessel function of the first kind of order 0, by its power series
    sum_k ((x / 2)^(2k) / (k!)^2) (float64 accuracy for |x| up to about 30)."""
    check_tensor("i0", "input", input)
    x = as_real_float("i0", input)
    quarter_square = x * x * 0.25
    term = _ops.ones_like(x)
    total = term
    for k in range(1, 80):
        term = term * quarter_square / float(k * k)
        total = total + term
    return total


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None):
    """i0(beta sqrt(1 - (2 i / N - 1)^2)) / i0(beta)."""
    n, period, i = _window_positions("kaiser_window", window_length, periodic, dtype)
    if n <= 1:
        return _ops.ones((n,), dtype=dtype or float32)
    ratio = i * (2.0 / period) - 1.0
    inside = _ops.sqrt(_ops.maximum(1.0 - ratio * ratio, 0.0))
    return i0(inside * beta) / i0(_ops.full((), float(beta), dtype=i.dtype))


__all__ = ["uniform", "normal", "bartlett_window", "blackman_window", "hamming_window", "hann_window", "i0",
           "kaiser_window", "laplace", "multinomial", "random_categorical", "randperm", "rrelu",
           "shuffle", "standard_laplace"]
