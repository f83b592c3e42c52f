"""Reductions, statistics and running sums in mindspore.numpy's names and signatures: sum,
mean, amax/amin, argmax/argmin, var/std, average, ptp, count_nonzero, the nan* variants,
cumsum/cumprod, diff, trapz and gradient, composed of pijit's native reductions.

Dtypes follow MindSpore where it differs from NumPy: sums and running sums keep an integer
input's dtype and count bools as Int32 (NumPy widens to Int64); means, variances and
averages of integers are Float32 (NumPy: Float64); count_nonzero is Int32."""
from pijit._tensor import bool_, int32
from pijit.numpy._utils import (cast_to, check_axes, check_axis, check_int, is_float, is_number,
                                move_axis_last, native, operands, plain, promote, raise_error,
                                restore_axis, to_float, to_tensor, with_dtype)


def _axes(fname, a, axis):
    return check_axes(fname, axis, a.ndim)


def _reduce(op, a, axes, keepdims):
    if not axes:  # axis=() reduces nothing
        return a
    return op(a, axes, bool(keepdims))


def _count(a, axes):
    count = 1
    for ax in axes:
        count *= a.shape[ax]
    return count


# ---- sums and means ------------------------------------------------------------------------------

def sum(a, axis=None, dtype=None, keepdims=False, initial=None):  # noqa: A001 - NumPy's name
    """The sum of `a`'s elements over `axis` (every axis when None), plus `initial`."""
    fname = "sum"
    a = to_tensor(fname, a)
    axes = _axes(fname, a, axis)
    if a.dtype == bool_:
        a = a.astype(int32)
    out = _reduce(native.sum, a, axes, keepdims)
    out = cast_to(out, a.dtype)  # an integer sum keeps its dtype, as MindSpore's
    if initial is not None:
        out = out + plain(initial)
    return with_dtype(fname, out, dtype)


def mean(a, axis=None, keepdims=False, dtype=None):
    """The arithmetic mean of `a` over `axis` (every axis when None)."""
    fname = "mean"
    a = to_float(fname, a)
    out = _reduce(native.mean, a, _axes(fname, a, axis), keepdims)
    return with_dtype(fname, out, dtype)


def _extremum(fname, op, a, axis, keepdims, initial, where):
    a = to_tensor(fname, a)
    axes = _axes(fname, a, axis)
    if not (isinstance(where, bool) and where):  # a mask (`is` on a tensor is not captured)
        if initial is None:
            raise_error(ValueError, f"{fname}: reduction with a where mask needs an initial "
                                    f"value")
        a = native.where(to_tensor(fname, where, bool_), a, native.full((), plain(initial),
                                                                        dtype=a.dtype))
    if initial is None and any(a.shape[ax] == 0 for ax in axes):
        raise_error(ValueError, f"{fname}: zero-size reduction over shape {a.shape} has no "
                                f"identity; give an initial value")
    if initial is not None and any(a.shape[ax] == 0 for ax in axes):
        shape = tuple(1 if i in axes else d for i, d in enumerate(a.shape)) if keepdims else \
            tuple(d for i, d in enumerate(a.shape) if i not in axes)
        return native.full(shape, plain(initial), dtype=a.dtype)
    out = _reduce(op, a, axes, keepdims)
    if initial is not None:
        pick = native.maximum if op is native.max else native.minimum
        out = pick(out, native.full((), plain(initial), dtype=out.dtype))
    return out


def amax(a, axis=None, keepdims=False, initial=None, where=True):
    """The maximum of `a` over `axis`, at least `initial`; `where` masks the elements taken
    part (it needs `initial`)."""
    return _extremum("amax", native.max, a, axis, keepdims, initial, where)


def amin(a, axis=None, keepdims=False, initial=None, where=True):
    """The minimum of `a` over `axis`, at most `initial`; `where` masks the elements taken
    part (it needs `initial`)."""
    return _extremum("amin", native.min, a, axis, keepdims, initial, where)


def ptp(x, axis=None, keepdims=False):
    """The range (maximum - minimum) of `x` over `axis`."""
    return amax(x, axis, keepdims) - amin(x, axis, keepdims)


def _arg(fname, op, a, axis):
    a = to_tensor(fname, a)
    if axis is None:
        return op(native.reshape(a, (-1,)), 0)
    return op(a, check_axis(fname, axis, a.ndim))


def argmax(a, axis=None):
    """The index (Int64) of the first maximum of `a` along `axis`, or of the flattened `a`."""
    return _arg("argmax", native.argmax, a, axis)


def argmin(a, axis=None):
    """The index (Int64) of the first minimum of `a` along `axis`, or of the flattened `a`."""
    return _arg("argmin", native.argmin, a, axis)


def var(x, axis=None, ddof=0, keepdims=False):
    """The variance of `x` over `axis`, divided by N - ddof."""
    fname = "var"
    x = to_float(fname, x)
    axes = _axes(fname, x, axis)
    ddof = check_int(fname, "ddof", ddof)
    if not axes:  # each element alone: 0 / (1 - ddof)
        return (x - x) / float(1 - ddof)
    return native.var(x, axes, ddof, bool(keepdims))


def std(x, axis=None, ddof=0, keepdims=False):
    """The standard deviation of `x` over `axis`, with divisor N - ddof."""
    return native.sqrt(var(x, axis, ddof, keepdims))


def average(x, axis=None, weights=None, returned=False):
    """The weighted average of `x` over `axis` (weights of x's shape, or 1-D along the one
    `axis`); with `returned`, also the sum of the weights."""
    fname = "average"
    x = to_float(fname, x)
    axes = _axes(fname, x, axis)
    if weights is None:
        avg = _reduce(native.mean, x, axes, False)
        total = native.full(avg.shape, float(_count(x, axes)), dtype=avg.dtype)
        return (avg, total) if returned else avg
    w = to_tensor(fname, weights)
    if w.shape != x.shape:
        if w.ndim != 1 or axis is None or isinstance(plain(axis), (tuple, list)):
            raise_error(TypeError, f"{fname}: weights of shape {w.shape} differ from x's "
                                   f"{x.shape}; 1-D weights need one int axis")
        if w.shape[0] != x.shape[axes[0]]:
            raise_error(ValueError, f"{fname}: {w.shape[0]} weights for axis {axes[0]} of "
                                    f"length {x.shape[axes[0]]}")
        w = native.reshape(w, tuple(-1 if i == axes[0] else 1 for i in range(x.ndim)))
    x, w = operands(fname, x, w)
    total = _reduce(native.sum, native.broadcast_to(w, x.shape), axes, False)
    avg = _reduce(native.sum, x * w, axes, False) / total
    return (avg, native.broadcast_to(total, avg.shape)) if returned else avg


def count_nonzero(x, axis=None, keepdims=False):
    """The number (Int32, as MindSpore's) of non-zero elements of `x` over `axis`."""
    fname = "count_nonzero"
    x = to_tensor(fname, x)
    nonzero = native.not_equal(x, native.zeros((), x.dtype)).astype(int32)
    return cast_to(_reduce(native.sum, nonzero, _axes(fname, x, axis), keepdims), int32)


# ---- ignoring NaN --------------------------------------------------------------------------------

def _nan_mask(a):
    return native.not_equal(a, a)


def _without_nan(a, fill):
    if not is_float(a.dtype):
        return a
    return native.where(_nan_mask(a), native.full((), fill, dtype=a.dtype), a)


def nansum(a, axis=None, dtype=None, keepdims=False):
    """The sum of `a` over `axis`, NaNs counted as zero."""
    a = to_tensor("nansum", a)
    return sum(_without_nan(a, 0.0), axis, dtype, keepdims)


def _nan_count(fname, a, axes, keepdims):
    if not is_float(a.dtype):
        return float(_count(a, axes))
    valid = native.logical_not(_nan_mask(a)).astype(a.dtype)
    return _reduce(native.sum, valid, axes, keepdims)


def nanmean(a, axis=None, dtype=None, keepdims=False):
    """The mean of `a`'s non-NaN elements over `axis` (NaN where there are none)."""
    fname = "nanmean"
    a = to_float(fname, a)
    axes = _axes(fname, a, axis)
    total = _reduce(native.sum, _without_nan(a, 0.0), axes, keepdims)
    return with_dtype(fname, total / _nan_count(fname, a, axes, keepdims), dtype)


def nanvar(a, axis=None, dtype=None, ddof=0, keepdims=False):
    """The variance of `a`'s non-NaN elements over `axis`, divided by their count - ddof."""
    fname = "nanvar"
    a = to_float(fname, a)
    ddof = check_int(fname, "ddof", ddof)
    axes = _axes(fname, a, axis)
    count = _nan_count(fname, a, axes, True)
    centre = _reduce(native.sum, _without_nan(a, 0.0), axes, True) / count
    deviation = _without_nan(a - centre, 0.0)
    out = _reduce(native.sum, deviation * deviation, axes, keepdims)
    count = _nan_count(fname, a, axes, keepdims)
    return with_dtype(fname, out / (count - ddof), dtype)


def nanstd(a, axis=None, dtype=None, ddof=0, keepdims=False):
    """The standard deviation of `a`'s non-NaN elements over `axis`."""
    return with_dtype("nanstd", native.sqrt(nanvar(a, axis, None, ddof, keepdims)), dtype)


def _nan_extremum(fname, op, a, axis, keepdims, fill):
    a = to_tensor(fname, a)
    axes = _axes(fname, a, axis)
    if not is_float(a.dtype):
        return _reduce(op, a, axes, keepdims)
    out = _reduce(op, _without_nan(a, fill), axes, keepdims)
    all_nan = _reduce(native.all, _nan_mask(a), axes, keepdims)
    return native.where(all_nan, native.full((), float("nan"), dtype=a.dtype), out)


def nanmax(a, axis=None, keepdims=False):
    """The maximum of `a`'s non-NaN elements over `axis` (NaN where there are none)."""
    return _nan_extremum("nanmax", native.max, a, axis, keepdims, float("-inf"))


def nanmin(a, axis=None, keepdims=False):
    """The minimum of `a`'s non-NaN elements over `axis` (NaN where there are none)."""
    return _nan_extremum("nanmin", native.min, a, axis, keepdims, float("inf"))


# ---- running sums and differences ----------------------------------------------------------------

def _scan(x, axis, combine, identity):
    """The inclusive scan of x along `axis` by doubling strides (Hillis-Steele): log2(n)
    steps of whole-tensor ops, so that capture and the tape see a few nodes, not n."""
    x, back = move_axis_last(x, axis)
    n = x.shape[-1]
    shift = 1
    while shift < n:
        pad = native.full(tuple(x.shape[:-1]) + (shift,), identity, dtype=x.dtype)
        x = combine(x, native.concat([pad, x[..., :n - shift]], -1))
        shift *= 2
    return restore_axis(x, back)


def _running(fname, a, axis, dtype, combine, identity):
    a = to_tensor(fname, a)
    if dtype is not None:
        a = with_dtype(fname, a, dtype)
    elif a.dtype == bool_:
        a = a.astype(int32)
    if axis is None:
        a = native.reshape(a, (-1,))
        axis = 0
    return _scan(a, check_axis(fname, axis, a.ndim), combine, identity)


def cumsum(a, axis=None, dtype=None):
    """The running sum of `a` along `axis` (of the flattened `a` when None)."""
    return _running("cumsum", a, axis, dtype, native.add, 0)


def cumprod(a, axis=None, dtype=None):
    """The running product of `a` along `axis` (of the flattened `a` when None)."""
    return _running("cumprod", a, axis, dtype, native.mul, 1)


def nancumsum(a, axis=None, dtype=None):
    """The running sum of `a` along `axis`, NaNs counted as zero."""
    return cumsum(_without_nan(to_tensor("nancumsum", a), 0.0), axis, dtype)


def _along(x, axis, start, stop):
    return x[(slice(None),) * axis + (slice(start, stop),)]


def _edge(fname, value, like, axis):
    """`value` (a number or array-like) as a block to join to `like` along `axis`."""
    value = to_tensor(fname, value)
    if value.ndim == 0:
        shape = tuple(1 if i == axis else d for i, d in enumerate(like.shape))
        value = native.broadcast_to(value, shape)
    return value


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """The n-th discrete difference of `a` along `axis` (out[i] = a[i + 1] - a[i]), after
    joining `prepend` and `append` to it. Bools give their changes (!=)."""
    fname = "diff"
    a = to_tensor(fname, a)
    n = check_int(fname, "n", n)
    if n < 0:
        raise_error(ValueError, f"{fname}: order n must be non-negative, got {n}")
    if a.ndim == 0:
        raise_error(ValueError, f"{fname}: requires input that is at least one dimensional")
    axis = check_axis(fname, axis, a.ndim)
    if prepend is not None or append is not None:
        joined = [] if prepend is None else [_edge(fname, prepend, a, axis)]
        joined.append(a)
        if append is not None:
            joined.append(_edge(fname, append, a, axis))
        parts = tuple(joined)
        dtype = parts[0].dtype
        for p in parts[1:]:
            dtype = promote(dtype, p.dtype)
        a = native.concat(tuple(cast_to(p, dtype) for p in parts), axis)
    for _ in range(n):
        length = a.shape[axis]
        if length == 0:
            break
        high, low = _along(a, axis, 1, length), _along(a, axis, 0, length - 1)
        a = native.not_equal(high, low) if a.dtype == bool_ else high - low
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    """The differences of the flattened `ary`, with `to_begin` and `to_end` joined."""
    fname = "ediff1d"
    a = native.reshape(to_tensor(fname, ary), (-1,))
    out = diff(a) if a.shape[0] > 0 else a
    parts = []
    if to_begin is not None:
        parts.append(cast_to(native.reshape(to_tensor(fname, to_begin), (-1,)), out.dtype))
    parts.append(out)
    if to_end is not None:
        parts.append(cast_to(native.reshape(to_tensor(fname, to_end), (-1,)), out.dtype))
    return parts[0] if len(parts) == 1 else native.concat(parts, 0)


def trapz(y, x=None, dx=1.0, axis=-1):
    """The integral of `y` along `axis` by the trapezoidal rule, over the sample points `x`
    (1-D along `axis`, or of y's shape) or at spacing `dx`."""
    fname = "trapz"
    y = to_float(fname, y)
    axis = check_axis(fname, axis, y.ndim)
    n = y.shape[axis]
    if x is None:
        d = plain(dx)
    else:
        x = to_float(fname, x)
        if x.ndim == 1:
            if x.shape[0] != n:
                raise_error(ValueError, f"{fname}: {x.shape[0]} sample points for axis {axis} "
                                        f"of length {n}")
            x = native.reshape(x, tuple(-1 if i == axis else 1 for i in range(y.ndim)))
        d = _along(x, axis, 1, n) - _along(x, axis, 0, n - 1)
    pairs = (_along(y, axis, 1, n) + _along(y, axis, 0, n - 1)) * 0.5
    out, d = operands(fname, pairs, d)
    return native.sum(out * d, (axis,), False)


def _gradient_axis(fname, f, axis, spacing, edge_order):
    """NumPy's second-order central differences inside, first- or second-order one-sided
    differences at the ends, for a scalar spacing or 1-D coordinates along `axis`."""
    n = f.shape[axis]
    if n < edge_order + 1:
        raise_error(ValueError, f"{fname}: axis {axis} has {n} elements; at least "
                                f"edge_order + 1 = {edge_order + 1} are needed")

    def at(start, stop=None):
        return _along(f, axis, start, start + 1 if stop is None else stop)

    if is_number(spacing):
        h = float(plain(spacing))
        inner = (at(2, n) - at(0, n - 2)) / (2.0 * h)
        if edge_order == 1:
            first, last = (at(1) - at(0)) / h, (at(n - 1) - at(n - 2)) / h
        else:
            first = (at(0) * -1.5 + at(1) * 2.0 - at(2) * 0.5) / h
            last = (at(n - 3) * 0.5 - at(n - 2) * 2.0 + at(n - 1) * 1.5) / h
        return native.concat([first, inner, last], axis)
    x = cast_to(to_tensor(fname, spacing), f.dtype)
    if x.ndim != 1 or x.shape[0] != n:
        raise_error(ValueError, f"{fname}: coordinates must be 1-D of the length {n} of axis "
                                f"{axis}, got shape {x.shape}")
    dx = native.reshape(x[1:] - x[:-1], tuple(-1 if i == axis else 1 for i in range(f.ndim)))
    dx1, dx2 = _along(dx, axis, 0, n - 2), _along(dx, axis, 1, n - 1)
    a, b, c = -dx2 / (dx1 * (dx1 + dx2)), (dx2 - dx1) / (dx1 * dx2), dx1 / (dx2 * (dx1 + dx2))
    inner = a * at(0, n - 2) + b * at(1, n - 1) + c * at(2, n)
    if edge_order == 1:
        first = (at(1) - at(0)) / _along(dx, axis, 0, 1)
        last = (at(n - 1) - at(n - 2)) / _along(dx, axis, n - 2, n - 1)
    else:
        d1, d2 = _along(dx, axis, 0, 1), _along(dx, axis, 1, 2)
        first = (at(0) * (-(2.0 * d1 + d2) / (d1 * (d1 + d2))) + at(1) * ((d1 + d2) / (d1 * d2))
                 + at(2) * (-d1 / (d2 * (d1 + d2))))
        d1, d2 = _along(dx, axis, n - 3, n - 2), _along(dx, axis, n - 2, n - 1)
        last = (at(n - 3) * (d2 / (d1 * (d1 + d2))) + at(n - 2) * (-(d2 + d1) / (d1 * d2))
                + at(n - 1) * ((2.0 * d2 + d1) / (d2 * (d1 + d2))))
    return native.concat([first, inner, last], axis)


def gradient(f, *varargs, axis=None, edge_order=1):
    """The gradient of the sampled function `f` along each of `axis` (every axis when None):
    central differences inside, one-sided of `edge_order` (1 or 2) at the ends. `varargs` is
    one spacing for every axis, or one (a number or 1-D coordinates) per axis. One axis gives
    one tensor, more a tuple."""
    fname = "gradient"
    f = to_float(fname, f)
    axes = _axes(fname, f, axis)
    if plain(edge_order) not in (1, 2):
        raise_error(ValueError, f"{fname}: edge_order must be 1 or 2, got {edge_order!r}")
    if not varargs:
        spacings = (1.0,) * len(axes)
    elif len(varargs) == 1 and is_number(varargs[0]):
        spacings = (varargs[0],) * len(axes)
    elif len(varargs) == len(axes):
        spacings = varargs
    else:
        raise_error(TypeError, f"{fname}: give one spacing, or one per axis ({len(axes)}), got "
                               f"{len(varargs)}")
    out = tuple(_gradient_axis(fname, f, ax, h, plain(edge_order))
                for ax, h in zip(axes, spacings))
    return out[0] if len(out) == 1 else out
