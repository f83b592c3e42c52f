"""Comparisons, logical functions and element tests in mindspore.numpy's names and
signatures: equal/less/..., logical_and/..., isnan/isinf/isfinite, isclose, array_equal,
isin. Results are Bool tensors (array_equal and friends: 0-d ones), composed of pijit's
native comparisons and reductions."""
import builtins

import numpy as onp

from pijit._tensor import bool_, float64
from pijit.numpy._utils import (binary_function, broadcast_shapes, check_axes, is_float, native,
                                operands, plain, to_tensor, with_dtype)


equal = binary_function("equal", native.equal, "x1 == x2, element-wise with broadcasting.")
not_equal = binary_function("not_equal", native.not_equal,
                            "x1 != x2, element-wise with broadcasting.")
less = binary_function("less", native.less, "x1 < x2, element-wise with broadcasting.")
less_equal = binary_function("less_equal", native.less_equal,
                             "x1 <= x2, element-wise with broadcasting.")
greater = binary_function("greater", native.greater, "x1 > x2, element-wise with broadcasting.")
greater_equal = binary_function("greater_equal", native.greater_equal,
                                "x1 >= x2, element-wise with broadcasting.")


def _truth(name, x):
    x = to_tensor(name, x)
    return x if x.dtype == bool_ else native.not_equal(x, native.zeros((), x.dtype))


def _truths(name, x1, x2):
    return _truth(name, x1), _truth(name, x2)


logical_and = binary_function("logical_and", native.logical_and,
                              "x1 and x2 (non-zero is true), element-wise.", _truths)
logical_or = binary_function("logical_or", native.logical_or,
                             "x1 or x2 (non-zero is true), element-wise.", _truths)
logical_xor = binary_function("logical_xor", native.logical_xor,
                              "Exactly one of x1 and x2 true (non-zero), element-wise.", _truths)


def logical_not(a, dtype=None):
    """not a (non-zero is true), element-wise."""
    return with_dtype("logical_not", native.logical_not(_truth("logical_not", a)), dtype)


# ---- element tests -------------------------------------------------------------------------------

def _constant_like(x, value):
    return native.full(tuple(x.shape), value, dtype=bool_)


def isnan(x, dtype=None):
    """True where x is NaN."""
    x = to_tensor("isnan", x)
    out = native.not_equal(x, x) if is_float(x.dtype) else _constant_like(x, False)
    return with_dtype("isnan", out, dtype)


def isinf(x, dtype=None):
    """True where x is +inf or -inf."""
    x = to_tensor("isinf", x)
    if not is_float(x.dtype):
        return with_dtype("isinf", _constant_like(x, False), dtype)
    return with_dtype("isinf", native.equal(native.abs(x), float("inf")), dtype)


def isposinf(x):
    """True where x is +inf."""
    x = to_tensor("isposinf", x)
    if not is_float(x.dtype):
        return _constant_like(x, False)
    return native.equal(x, float("inf"))


def isneginf(x):
    """True where x is -inf."""
    x = to_tensor("isneginf", x)
    if not is_float(x.dtype):
        return _constant_like(x, False)
    return native.equal(x, float("-inf"))


def isfinite(x, dtype=None):
    """True where x is neither infinite nor NaN."""
    x = to_tensor("isfinite", x)
    if not is_float(x.dtype):
        return with_dtype("isfinite", _constant_like(x, True), dtype)
    return with_dtype("isfinite", native.less(native.abs(x), float("inf")), dtype)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True where |a - b| <= atol + rtol * |b| (equal infinities are close; NaNs are close to
    each other only with equal_nan)."""
    fname = "isclose"
    x, y = operands(fname, to_tensor(fname, a), to_tensor(fname, b))
    if not is_float(x.dtype):  # integers compare exactly in Float64
        x, y = x.astype(float64), y.astype(float64)
    finite = native.logical_and(isfinite(x), isfinite(y))
    diff = native.abs(native.where(finite, x - y, native.zeros((), x.dtype)))
    close = native.less_equal(diff, plain(atol) + plain(rtol) * native.abs(
        native.where(finite, y, native.zeros((), y.dtype))))
    out = native.where(finite, close, native.equal(x, y))
    if equal_nan:
        out = native.logical_or(out, native.logical_and(isnan(x), isnan(y)))
    return out


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element of a is close to b (isclose): a 0-d Bool tensor."""
    return native.all(isclose(a, b, rtol, atol, equal_nan), None)


def _false():
    return native.full((), False, dtype=bool_)


def array_equal(a1, a2, equal_nan=False):
    """Whether a1 and a2 have one shape and equal elements: a 0-d Bool tensor."""
    fname = "array_equal"
    x, y = to_tensor(fname, a1), to_tensor(fname, a2)
    if x.shape != y.shape:
        return _false()
    same = native.equal(x, y)
    if equal_nan and is_float(x.dtype) and is_float(y.dtype):
        same = native.logical_or(same, native.logical_and(isnan(x), isnan(y)))
    return native.all(same, None)


def _broadcastable(a, b):
    ndim = max(len(a), len(b))
    a, b = (1,) * (ndim - len(a)) + tuple(a), (1,) * (ndim - len(b)) + tuple(b)
    return builtins.all(p == q or p == 1 or q == 1 for p, q in zip(a, b))


def array_equiv(a1, a2):
    """Whether a1 and a2 broadcast to one shape and are equal there: a 0-d Bool tensor."""
    fname = "array_equiv"
    x, y = to_tensor(fname, a1), to_tensor(fname, a2)
    if not _broadcastable(x.shape, y.shape):
        return _false()
    broadcast_shapes(fname, x.shape, y.shape)
    return native.all(native.equal(x, y), None)


def in1d(ar1, ar2, invert=False):
    """For each element of the flattened ar1, whether it occurs in ar2 (or not, with invert)."""
    fname = "in1d"
    x = native.reshape(to_tensor(fname, ar1), (-1, 1))
    y = native.reshape(to_tensor(fname, ar2), (1, -1))
    x, y = operands(fname, x, y)
    if y.shape[1] == 0:
        found = native.full((x.shape[0],), False, dtype=bool_)
    else:
        found = native.any(native.equal(x, y), (1,), False)
    return native.logical_not(found) if invert else found


def isin(element, test_elements, invert=False):
    """For each element of `element`, whether it occurs in test_elements (or not, with
    invert): a Bool tensor of element's shape."""
    x = to_tensor("isin", element)
    return native.reshape(in1d(x, test_elements, invert), x.shape)


def _reduce_bool(fname, op, a, axis, keepdims):
    a = to_tensor(fname, a)
    truth = _truth(fname, a)
    axes = check_axes(fname, axis, a.ndim)
    if not axes:
        return truth
    return op(truth, axes, bool(keepdims))


def all(a, axis=None, keepdims=False):  # noqa: A001 - NumPy's name
    """Whether every element of `a` over `axis` is true (non-zero)."""
    return _reduce_bool("all", native.all, a, axis, keepdims)


def any(a, axis=None, keepdims=False):  # noqa: A001 - NumPy's name
    """Whether some element of `a` over `axis` is true (non-zero)."""
    return _reduce_bool("any", native.any, a, axis, keepdims)


def sometrue(a, axis=None, keepdims=False):
    """any: whether some element of `a` over `axis` is true."""
    return _reduce_bool("sometrue", native.any, a, axis, keepdims)


def isscalar(element):
    """Whether `element` is a scalar of a Python or NumPy number type (a Python bool, not a
    tensor: a 0-d tensor is no scalar, as a 0-d ndarray is none in NumPy)."""
    return isinstance(element, (bool, int, float, complex, str, bytes, onp.generic))
