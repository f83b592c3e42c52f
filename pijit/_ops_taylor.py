"""Higher-order derivatives along a curve: mindspore.ops.jet and mindspore.ops.derivative.

Both differentiate y(t) = fn(x(t)), where every input moves along the polynomial
x(t) = x0 + s1 t + s2 t^2 / 2! + ... + sn t^n / n! whose derivatives at t = 0 are the given
series s1..sn, and return dy/dt, d2y/dt2, ..., dny/dtn at t = 0. The k-th derivative is k
nested forward-mode products (`jvp`, itself two reverse passes) with respect to the scalar t,
so the result is exact (no finite differences) and every op pijit can differentiate twice is
supported; the cost grows as 2^k reverse passes, which is small for the orders used (a few)."""
import math

import numpy as np

from pijit import _C
from pijit._tensor import Tensor
from pijit.dtype import dtype_to_nptype
from pijit._transforms_more import jvp

_ops = _C.ops


def _inputs(name, primals):
    """primals as a tuple of floating Tensors (integer ones as float32, as MindSpore does) and
    whether a single Tensor was given."""
    if isinstance(primals, Tensor):
        items, single = (primals,), True
    elif isinstance(primals, tuple) and primals and all(isinstance(p, Tensor) for p in primals):
        items, single = primals, False
    else:
        raise TypeError(f"{name}: primals must be a Tensor or a non-empty tuple of Tensors, got "
                        f"{type(primals).__name__}")
    return tuple(p if p.is_floating_point() else p.astype(np.float32) for p in items), single


def _series_of(primals, single, series):
    """series as one tuple of n per-order Tensors per input, each of its input's shape."""
    given = (series,) if single and isinstance(series, Tensor) else series
    if not isinstance(given, tuple) or len(given) != len(primals) or \
            not all(isinstance(s, Tensor) for s in given):
        want = "a Tensor" if single else f"a tuple of {len(primals)} Tensors"
        raise TypeError(f"jet: series must be {want}, like primals, got "
                        f"{type(series).__name__}")
    orders = {int(s.shape[0]) if s.ndim else 0 for s in given}
    if len(orders) != 1 or 0 in orders:
        raise ValueError("jet: every series must have the same number (at least 1) of orders "
                         "along its first axis")
    per_input = []
    for i, (x, s) in enumerate(zip(primals, given)):
        if tuple(s.shape[1:]) != tuple(x.shape):
            raise ValueError(f"jet: series {i} has shape {tuple(s.shape)}; it must be "
                             f"(orders, *{tuple(x.shape)}) for its input")
        s = s.astype(x.dtype) if s.dtype != x.dtype else s
        per_input.append(tuple(s[k] for k in range(int(s.shape[0]))))
    return tuple(per_input), orders.pop()


def _curve(fn, primals, series):
    """t -> fn(x(t)) with each x(t) = x0 + t (s1 + t (s2 / 2! + t (s3 / 3! + ...))) (Horner's
    form: only products and sums of t, whose derivatives are exact at t = 0)."""
    def at(t):
        moved = []
        for x0, coefficients in zip(primals, series):
            acc = None
            for k in range(len(coefficients), 0, -1):
                term = coefficients[k - 1] / math.factorial(k)
                acc = term if acc is None else term + t * acc
            moved.append(x0 + t * acc)
        return fn(*moved)
    return at


def _derivative_of(f, dtype):
    one = Tensor(np.ones((), dtype=dtype_to_nptype(dtype)))
    return lambda t: jvp(f, t, one)[1]


def _taylor(name, fn, primals, series, orders):
    """fn(primals) and the derivatives of orders 1..max(orders) of fn along the curve, those
    in `orders` returned."""
    if not callable(fn):
        raise TypeError(f"{name}: fn must be callable, got {type(fn).__name__}")
    dtype = primals[0].dtype
    t0 = Tensor(np.zeros((), dtype=dtype_to_nptype(dtype)))
    f = _curve(fn, primals, series)
    out = fn(*primals)
    results = {}
    for k in range(1, max(orders) + 1):
        f = _derivative_of(f, dtype)
        if k in orders:
            results[k] = f(t0)
    return out, results


def jet(fn, primals, series):
    """(fn(primals), the derivatives of orders 1..n of fn(x(t)) at t = 0) where series[k - 1]
    is x's k-th derivative (for a tuple of inputs, a tuple of series, each of shape
    (n, *input shape)). The derivatives are stacked along a new first axis, as the series."""
    primals, single = _inputs("jet", primals)
    per_input, n = _series_of(primals, single, series)
    out, derivatives = _taylor("jet", fn, primals, per_input, range(1, n + 1))
    stacked = [derivatives[k] for k in range(1, n + 1)]
    if isinstance(out, Tensor):
        return out, _ops.stack(stacked, 0)
    return out, tuple(_ops.stack([d[i] for d in stacked], 0) for i in range(len(out)))


def derivative(fn, primals, order):
    """(fn(primals), the order-th derivative of fn(x + t) at t = 0): every input's first
    derivative is one and its higher ones zero, so this is jet with series (1, 0, ..., 0)."""
    if isinstance(order, bool) or not isinstance(order, int):
        raise TypeError(f"derivative: order must be an int, got {type(order).__name__}")
    if order < 1:
        raise ValueError(f"derivative: order must be positive, got {order}")
    primals, _ = _inputs("derivative", primals)
    per_input = tuple((_ops.ones_like(x),) + tuple(_ops.zeros_like(x) for _ in range(order - 1))
                      for x in primals)
    out, derivatives = _taylor("derivative", fn, primals, per_input, (order,))
    return out, derivatives[order]


__all__ = ["derivative", "jet"]
