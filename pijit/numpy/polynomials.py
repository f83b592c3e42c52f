"""1-D convolution and polynomials in mindspore.numpy's names and signatures: convolve,
correlate and polyadd/polysub/polymul/polyval/polyder/polyint over coefficient tensors
(highest power first). A convolution is one matmul with a Toeplitz matrix that a gather of
the kernel builds from constant indices, so it is captured and differentiable in both
inputs."""
import numpy as onp

from pijit._tensor import bool_, int32
from pijit.numpy._utils import (Tensor, cast_to, check_int, is_number, native, operands, plain,
                                raise_error, to_float, to_tensor)
from pijit.ops import constexpr

_CONV_MODES = ("full", "same", "valid")


def _toeplitz_offsets(n, m):
    k = onp.arange(n + m - 1)[:, None] - onp.arange(n)[None, :]
    return k, (k >= 0) & (k < m)


@constexpr
def _toeplitz_index(n, m):
    """For the full convolution of a (n elements) with v (m): the index into v of each entry
    of the (n + m - 1, n) matrix T with T @ a = a * v (0 where T is 0)."""
    k, mask = _toeplitz_offsets(n, m)
    return Tensor(onp.where(mask, k, 0).astype(onp.int64))


@constexpr
def _toeplitz_mask(n, m):
    return Tensor(_toeplitz_offsets(n, m)[1])


def _vector(fname, what, x):
    x = to_tensor(fname, x)
    if x.ndim == 0:
        x = native.reshape(x, (1,))
    if x.ndim != 1:
        raise_error(ValueError, f"{fname}: {what} must be 1-D, got shape {x.shape}")
    if x.shape[0] == 0:
        raise_error(ValueError, f"{fname}: {what} cannot be empty")
    return x if x.dtype != bool_ else x.astype(int32)


def _full_convolution(a, v):
    a, v = operands("convolve", a, v)
    index, mask = _toeplitz_index(a.shape[0], v.shape[0]), _toeplitz_mask(a.shape[0], v.shape[0])
    matrix = native.where(mask, native.gather(v, index, 0), native.zeros((), v.dtype))
    return native.reshape(native.matmul(matrix, native.reshape(a, (-1, 1))), (-1,))


def _mode_slice(fname, full, n, m, mode, shorter_first=False):
    """The part of a full convolution (or correlation) that `mode` keeps. NumPy's 'same'
    centres on the longer input; a correlation of a shorter first input is computed with the
    inputs swapped and reversed, which moves an even-length window one element later."""
    if mode not in _CONV_MODES:
        raise_error(ValueError, f"{fname}: mode must be one of {_CONV_MODES}, got {mode!r}")
    if mode == "full":
        return full
    if mode == "same":
        start = min(n, m) // 2 if shorter_first and n < m else (min(n, m) - 1) // 2
        return full[start:start + max(n, m)]
    start = min(n, m) - 1
    return full[start:start + max(n, m) - min(n, m) + 1]


def convolve(a, v, mode="full"):
    """The discrete linear convolution of the 1-D a and v: 'full' (every overlap), 'same'
    (the length of the longer, centred) or 'valid' (where they overlap completely)."""
    fname = "convolve"
    a, v = _vector(fname, "a", a), _vector(fname, "v", v)
    return _mode_slice(fname, _full_convolution(a, v), a.shape[0], v.shape[0], mode)


def correlate(a, v, mode="valid"):
    """The cross-correlation of the 1-D a and v: sum over n of a[n + k] * v[n], for the
    overlaps of `mode` ('valid' by default)."""
    fname = "correlate"
    a, v = _vector(fname, "a", a), _vector(fname, "v", v)
    n, m = a.shape[0], v.shape[0]
    return _mode_slice(fname, _full_convolution(a, v[::-1]), n, m, mode, shorter_first=True)


# ---- polynomials ---------------------------------------------------------------------------------

def _coefficients(fname, p):
    p = to_tensor(fname, p)
    if p.ndim == 0:
        p = native.reshape(p, (1,))
    if p.ndim != 1:
        raise_error(ValueError, f"{fname}: polynomial coefficients must be 1-D, got shape "
                                f"{p.shape}")
    return p if p.dtype != bool_ else p.astype(int32)


def _aligned(fname, a1, a2):
    a, b = _coefficients(fname, a1), _coefficients(fname, a2)
    a, b = operands(fname, a, b)
    n = max(a.shape[0], b.shape[0])
    if a.shape[0] < n:
        a = native.concat([native.zeros((n - a.shape[0],), a.dtype), a], 0)
    if b.shape[0] < n:
        b = native.concat([native.zeros((n - b.shape[0],), b.dtype), b], 0)
    return a, b


def polyadd(a1, a2):
    """The sum of two polynomials (coefficients highest power first)."""
    a, b = _aligned("polyadd", a1, a2)
    return a + b


def polysub(a1, a2):
    """The difference a1 - a2 of two polynomials."""
    a, b = _aligned("polysub", a1, a2)
    return a - b


def polymul(a1, a2):
    """The product of two polynomials."""
    fname = "polymul"
    return _full_convolution(_coefficients(fname, a1), _coefficients(fname, a2))


def polyval(p, x):
    """The polynomial p evaluated at x (Horner's scheme): p[0] * x ** (N - 1) + ... + p[N - 1]."""
    fname = "polyval"
    p = _coefficients(fname, p)
    x = to_tensor(fname, x)
    p, x = operands(fname, p, x)
    y = native.zeros(tuple(x.shape), x.dtype)
    for i in range(p.shape[0]):
        y = y * x + p[i]
    return y


def polyder(p, m=1):
    """The m-th derivative of the polynomial p."""
    fname = "polyder"
    p = _coefficients(fname, p)
    m = check_int(fname, "m", m)
    if m < 0:
        raise_error(ValueError, f"{fname}: order of derivative must be non-negative, got {m}")
    for _ in range(m):
        n = max(p.shape[0] - 1, 0)  # a constant's derivative is the empty polynomial, as NumPy's
        p = p[:n] * cast_to(native.arange(n, 0, -1, dtype=int32), p.dtype)
    return p


def polyint(p, m=1, k=None):
    """The m-th antiderivative of the polynomial p, with the integration constants k (a number
    for all steps or one per step; zeros by default)."""
    fname = "polyint"
    p = _coefficients(fname, p)
    m = check_int(fname, "m", m)
    if m < 0:
        raise_error(ValueError, f"{fname}: order of integral must be non-negative, got {m}")
    constants = (0,) * m if k is None else ((plain(k),) * m if is_number(k) else tuple(k))
    if len(constants) != m:
        raise_error(ValueError, f"{fname}: k must be a number or {m} constants, got {k!r}")
    p = to_float(fname, p)
    for c in constants:
        n = p.shape[0]
        divisors = native.arange(n, 0, -1, dtype=p.dtype)
        p = native.concat([p / divisors, native.full((1,), plain(c), dtype=p.dtype)], 0)
    return p
