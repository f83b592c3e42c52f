"""Selection, indexing and padding in mindspore.numpy's names and signatures: where, select,
choose, piecewise, take, take_along_axis, unravel_index/ravel_multi_index, apply_along_axis,
apply_over_axes and pad. Index arithmetic is integer tensor math, gathers are native
gathers or advanced indexing, so gradients flow to the selected values."""
import numpy as onp

from pijit._tensor import bool_, float64, int64
from pijit.numpy._utils import (Tensor, broadcast_shapes, cast_to, check_axis, check_shape,
                                is_float, is_number, native, operands, plain, promote,
                                raise_error, to_tensor)
from pijit.ops import constexpr

_MODES = ("clip", "wrap", "raise")


def where(condition, x=None, y=None):
    """x where `condition` holds, else y (broadcast together). The one-argument form (the
    indices of the true elements) has a data-dependent shape and is not supported."""
    fname = "where"
    if x is None or y is None:
        raise_error(ValueError, f"{fname}: give both x and y; where(condition) alone returns "
                                f"indices whose count depends on the data, which pijit.numpy "
                                f"does not support")
    cond = to_tensor(fname, condition)
    if cond.dtype != bool_:
        cond = native.not_equal(cond, native.zeros((), cond.dtype))
    a, b = operands(fname, x, y)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = to_tensor(fname, a)
    return native.where(cond, a, b)


def select(condlist, choicelist, default=0):
    """choicelist[i] where condlist[i] is the first true condition, else `default`."""
    fname = "select"
    if len(condlist) != len(choicelist):
        raise_error(ValueError, f"{fname}: condlist and choicelist must have the same length, "
                                f"got {len(condlist)} and {len(choicelist)}")
    if not condlist:
        raise_error(ValueError, f"{fname}: condlist must not be empty")
    choices = tuple(to_tensor(fname, c) for c in tuple(choicelist))
    dtype = choices[0].dtype
    for c in choices[1:]:
        dtype = promote(dtype, c.dtype)
    out = to_tensor(fname, default) if not is_number(default) else default
    if isinstance(out, Tensor):
        dtype = promote(dtype, out.dtype)
        out = cast_to(out, dtype)
    else:
        out = native.full((), plain(default), dtype=dtype)
    for cond, choice in zip(tuple(condlist)[::-1], choices[::-1]):
        cond = to_tensor(fname, cond)
        if cond.dtype != bool_:
            raise_error(TypeError, f"{fname}: condlist entries must be Bool, got {cond.dtype}")
        out = native.where(cond, cast_to(choice, dtype), out)
    return out


def _index_mode(fname, index, n, mode):
    if mode not in _MODES:
        raise_error(ValueError, f"{fname}: mode must be one of {_MODES}, got {mode!r}")
    if mode == "clip":
        return native.clip(index, 0, max(n - 1, 0))
    if mode == "wrap":
        return native.remainder(index, n)
    return index  # 'raise': gather itself rejects an index out of range


def _as_index(fname, indices):
    idx = to_tensor(fname, indices)
    if is_float(idx.dtype) or idx.dtype == bool_:
        raise_error(TypeError, f"{fname}: indices must be integers, got {idx.dtype}")
    return cast_to(idx, int64)


def take(a, indices, axis=None, mode="clip"):
    """The elements of `a` at `indices` along `axis` (of the flattened `a` when None); an index
    out of range is clipped ('clip', MindSpore's default), wrapped ('wrap') or refused
    ('raise')."""
    fname = "take"
    a = to_tensor(fname, a)
    if axis is None:
        a, axis = native.reshape(a, (-1,)), 0
    axis = check_axis(fname, axis, a.ndim)
    idx = _index_mode(fname, _as_index(fname, indices), a.shape[axis], mode)
    return native.gather(a, idx, axis)


def _grid_index(shape, axis):
    """arange(shape[axis]) shaped to broadcast along `axis` of a tensor of rank len(shape)."""
    view = tuple(shape[axis] if i == axis else 1 for i in range(len(shape)))
    return native.reshape(native.arange(0, shape[axis], 1, dtype=int64), view)


def take_along_axis(arr, indices, axis):
    """arr's elements picked along `axis` by `indices` (of arr's rank, broadcast against arr on
    the other axes), as the indices of argmax with keepdims give them."""
    fname = "take_along_axis"
    arr = to_tensor(fname, arr)
    idx = _as_index(fname, indices)
    if axis is None:
        arr, axis = native.reshape(arr, (-1,)), 0
    if idx.ndim != arr.ndim:
        raise_error(ValueError, f"{fname}: indices and arr must have the same number of "
                                f"dimensions, got {idx.ndim} and {arr.ndim}")
    axis = check_axis(fname, axis, arr.ndim)
    others = tuple(d for i, d in enumerate(arr.shape) if i != axis)
    idx_others = tuple(d for i, d in enumerate(idx.shape) if i != axis)
    shape = broadcast_shapes(fname, others, idx_others)
    full_shape = shape[:axis] + (idx.shape[axis],) + shape[axis:]
    idx = native.broadcast_to(idx, full_shape)
    idx = native.where(native.less(idx, 0), idx + arr.shape[axis], idx)
    key = tuple(idx if i == axis else _grid_index(full_shape, i) for i in range(arr.ndim))
    if arr.ndim and any(d != s for i, (d, s) in enumerate(zip(arr.shape, full_shape))
                        if i != axis):
        arr = native.broadcast_to(arr, full_shape[:axis] + (arr.shape[axis],) +
                                  full_shape[axis + 1:])
    return arr[key]


def choose(a, choices, mode="clip"):
    """choices[a[i]][i] for each position i (a and the choices broadcast together); an index
    out of range is clipped (MindSpore's default) or wrapped."""
    fname = "choose"
    idx = _as_index(fname, a)
    if isinstance(choices, Tensor):
        options = tuple(choices[i] for i in range(choices.shape[0]))
    else:
        options = tuple(to_tensor(fname, c) for c in tuple(choices))
    if mode not in ("clip", "wrap"):
        raise_error(ValueError, f"{fname}: mode must be 'clip' or 'wrap', got {mode!r}")
    dtype = options[0].dtype
    for c in options[1:]:
        dtype = promote(dtype, c.dtype)
    shape = broadcast_shapes(fname, idx.shape, *tuple(c.shape for c in options))
    idx = native.broadcast_to(_index_mode(fname, idx, len(options), mode), shape)
    out = native.broadcast_to(cast_to(options[0], dtype), shape)
    for i in range(1, len(options)):
        out = native.where(native.equal(idx, i), cast_to(options[i], dtype), out)
    return out


def piecewise(x, condlist, funclist, *args, **kw):
    """funclist[i](x) (or the value funclist[i]) where condlist[i] holds; with one function
    more than conditions, the last applies where none holds (else 0). Later conditions win."""
    fname = "piecewise"
    x = to_tensor(fname, x)
    if isinstance(condlist, Tensor) or not isinstance(condlist, (list, tuple)):
        condlist = [condlist]
    conds = tuple(to_tensor(fname, c) for c in tuple(condlist))
    funclist = tuple(funclist)
    n = len(conds)
    if len(funclist) not in (n, n + 1):
        raise_error(ValueError, f"{fname}: with {n} conditions, funclist must have {n} or {n + 1} "
                                f"entries, got {len(funclist)}")
    masks = list(conds)
    if len(funclist) == n + 1:
        none = native.full(tuple(x.shape), True, dtype=bool_)
        for c in conds:
            none = native.logical_and(none, native.logical_not(c))
        masks.append(none)
    out = native.zeros(tuple(x.shape), x.dtype)
    for cond, func in zip(masks, funclist):
        value = func(x, *args, **kw) if callable(func) else func
        value = value if isinstance(value, Tensor) else native.full((), plain(value),
                                                                    dtype=x.dtype)
        out = native.where(cond, cast_to(value, x.dtype), out)
    return out


def unravel_index(indices, shape, order="C"):
    """The coordinates in a tensor of `shape` of the flat `indices`: a tuple of tensors, one
    per axis (row-major 'C' or column-major 'F' order)."""
    fname = "unravel_index"
    idx = _as_index(fname, indices)
    dims = check_shape(fname, shape)
    if order not in ("C", "F"):
        raise_error(ValueError, f"{fname}: order must be 'C' or 'F', got {order!r}")
    total = 1
    for d in dims:
        total *= d
    idx = native.remainder(idx, total) if total else idx  # negative flat indices count back
    coords = []
    for d in (dims[::-1] if order == "C" else dims):
        coords.append(native.remainder(idx, d))
        idx = native.floor_divide(idx, d)
    return tuple(coords[::-1]) if order == "C" else tuple(coords)


def ravel_multi_index(multi_index, dims, mode="clip", order="C"):
    """The flat indices in a tensor of shape `dims` of the coordinates `multi_index` (one
    tensor per axis); coordinates out of range are clipped (MindSpore's default) or
    wrapped."""
    fname = "ravel_multi_index"
    dims = check_shape(fname, dims)
    coords = tuple(_as_index(fname, c) for c in tuple(multi_index))
    if len(coords) != len(dims):
        raise_error(ValueError, f"{fname}: {len(coords)} coordinate tensors for {len(dims)} "
                                f"dimensions")
    if order not in ("C", "F"):
        raise_error(ValueError, f"{fname}: order must be 'C' or 'F', got {order!r}")
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    out, stride = None, 1
    axes = range(len(dims) - 1, -1, -1) if order == "C" else range(len(dims))
    for i in axes:
        c = _index_mode(fname, coords[i], dims[i], modes[i])
        term = c * stride
        out = term if out is None else out + term
        stride *= dims[i]
    return out


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """func1d applied to each 1-D slice of `arr` along `axis`; the axes of its results take
    the place of `axis`."""
    fname = "apply_along_axis"
    arr = to_tensor(fname, arr)
    axis = check_axis(fname, axis, arr.ndim)
    rest = tuple(d for i, d in enumerate(arr.shape) if i != axis)
    moved = native.transpose(arr, tuple(i for i in range(arr.ndim) if i != axis) + (axis,))
    rows = native.reshape(moved, (-1, arr.shape[axis]))
    results = tuple(to_tensor(fname, func1d(rows[i], *args, **kwargs))
                    for i in range(rows.shape[0]))
    if not results:
        raise_error(ValueError, f"{fname}: cannot apply a function to the slices of an empty "
                                f"tensor of shape {arr.shape}")
    out = native.reshape(native.stack(results, 0), rest + tuple(results[0].shape))
    res_ndim = results[0].ndim
    order = tuple(range(len(rest)))
    order = order[:axis] + tuple(len(rest) + j for j in range(res_ndim)) + order[axis:]
    return native.transpose(out, order)


def apply_over_axes(func, a, axes):
    """func(a, axis) applied for each axis in turn; a result that lost the axis gets it back
    with size 1."""
    fname = "apply_over_axes"
    a = to_tensor(fname, a)
    axes = plain(axes)
    for axis in ((axes,) if isinstance(axes, int) else tuple(axes)):
        axis = check_axis(fname, axis, a.ndim)
        res = to_tensor(fname, func(a, axis))
        if res.ndim == a.ndim - 1:
            res = native.unsqueeze(res, axis)
        elif res.ndim != a.ndim:
            raise_error(ValueError, f"{fname}: func must keep the number of dimensions or "
                                    f"remove one, got shape {res.shape} from {a.shape}")
        a = res
    return a


# ---- pad -----------------------------------------------------------------------------------------

_PAD_MODES = ("constant", "edge", "linear_ramp", "maximum", "mean", "minimum", "reflect",
              "symmetric", "wrap", "empty")


def _pairs(fname, what, value, ndim, ints=True):
    """A number, one (before, after) pair, or one pair per axis, as ndim pairs (NumPy's
    reading of pad's arguments)."""
    if isinstance(value, Tensor):
        raise_error(TypeError, f"{fname}: {what} must be numbers, not a tensor")
    return _as_pairs(fname, what, value, ndim, ints)


@constexpr
def _as_pairs(fname, what, value, ndim, ints):
    try:
        pairs = onp.broadcast_to(onp.asarray(value), (ndim, 2))
    except ValueError:
        raise ValueError(f"{fname}: {what} must be a number, a (before, after) pair or {ndim} "
                         f"pairs, got {value!r}") from None
    if pairs.dtype.kind not in "biuf":
        raise TypeError(f"{fname}: {what} must hold numbers, got {value!r}")
    if ints and (pairs.dtype.kind not in "iu" or (pairs < 0).any()):
        raise ValueError(f"{fname}: {what} must hold non-negative ints, got {value!r}")
    return tuple((a.item(), b.item()) for a, b in pairs)


def _slab(x, axis, start, stop, step=1):
    return x[(slice(None),) * axis + (slice(start, stop, step),)]


def _mirror(x, axis, before, after, reflect, odd):
    """One round of reflect/symmetric padding: at most as much as x can mirror."""
    n = x.shape[axis]
    skip = 1 if reflect else 0
    parts = []
    if before:
        part = _slab(x, axis, skip + before - 1, skip - 1 if skip else None, -1)
        if odd:
            part = _slab(x, axis, 0, 1) * 2 - part
        parts.append(part)
    parts.append(x)
    if after:
        part = _slab(x, axis, n - 1 - skip, n - 1 - skip - after if n - 1 - skip - after >= 0
                     else None, -1)
        if odd:
            part = _slab(x, axis, n - 1, n) * 2 - part
        parts.append(part)
    return native.concat(parts, axis)


def _pad_axis(fname, x, axis, before, after, mode, kw):
    n = x.shape[axis]
    if mode in ("reflect", "symmetric"):
        odd = kw["reflect_type"] == "odd"
        limit = n - 1 if mode == "reflect" else n
        if limit <= 0:
            mode = "edge"
        else:
            while before or after:  # mirror again over what was added, as NumPy does
                limit = x.shape[axis] - 1 if mode == "reflect" else x.shape[axis]
                take_b, take_a = min(before, limit), min(after, limit)
                x = _mirror(x, axis, take_b, take_a, mode == "reflect", odd)
                before, after = before - take_b, after - take_a
            return x
    parts = []
    if before:
        parts.append(_pad_block(fname, x, axis, before, mode, kw, 0))
    parts.append(x)
    if after:
        parts.append(_pad_block(fname, x, axis, after, mode, kw, 1))
    return native.concat(parts, axis)


def _pad_block(fname, x, axis, width, mode, kw, side):
    n = x.shape[axis]
    shape = tuple(width if i == axis else d for i, d in enumerate(x.shape))
    if mode in ("constant", "empty"):
        value = kw["constant_values"][axis][side] if mode == "constant" else 0
        return native.full(shape, value, dtype=x.dtype)
    if mode == "edge" or (mode in ("maximum", "minimum", "mean", "linear_ramp") and n == 0):
        edge = _slab(x, axis, 0, 1) if side == 0 else _slab(x, axis, n - 1, n)
        return native.broadcast_to(edge, shape)
    if mode == "wrap":
        reps = [_slab(x, axis, 0, n)] * (width // n + 1)
        tiled = native.concat(reps, axis)
        total = tiled.shape[axis]
        return _slab(tiled, axis, total - width, total) if side == 0 else _slab(tiled, axis, 0,
                                                                               width)
    if mode == "linear_ramp":
        return _linear_ramp(x, axis, width, kw["end_values"][axis][side], side, shape)
    length = kw["stat_length"][axis][side] if kw["stat_length"] is not None else n
    length = max(1, min(length, n))
    window = _slab(x, axis, 0, length) if side == 0 else _slab(x, axis, n - length, n)
    if mode == "maximum":
        stat = native.max(window, (axis,), True)
    elif mode == "minimum":
        stat = native.min(window, (axis,), True)
    elif is_float(x.dtype):
        stat = native.mean(window, (axis,), True)
    else:  # NumPy rounds the mean of integers to the nearest one (halves to even)
        stat = native.round(native.mean(window.astype(float64), (axis,), True))
    return native.broadcast_to(cast_to(stat, x.dtype), shape)


def _linear_ramp(x, axis, width, end, side, shape):
    """NumPy's ramp from `end` toward the edge value, the edge excluded:
    end + (edge - end) * i / width for i = 0 .. width - 1, reversed after the data."""
    n = x.shape[axis]
    edge = (_slab(x, axis, 0, 1) if side == 0 else _slab(x, axis, n - 1, n)).astype(float64)
    view = tuple(width if i == axis else 1 for i in range(x.ndim))
    steps = native.reshape(native.arange(0, width, 1, dtype=float64) / float(width), view)
    ramp = end + (edge - end) * steps
    if side == 1:
        ramp = _slab(ramp, axis, None, None, -1)
    ramp = native.broadcast_to(ramp, shape)
    if not is_float(x.dtype):
        ramp = native.floor(ramp)  # as linspace of an integer dtype
    return ramp.astype(x.dtype)


def pad(arr, pad_width, mode="constant", stat_length=None, constant_values=0, end_values=0,
        reflect_type="even"):
    """`arr` padded by pad_width[i] = (before, after) elements on axis i (or one pair or one
    number for every axis), filled by `mode`: 'constant' (constant_values), 'edge', 'wrap',
    'reflect' / 'symmetric' (mirror without / with the edge; 'odd' reflect_type extends the
    trend), 'maximum' / 'minimum' / 'mean' (of stat_length edge elements), 'linear_ramp' (to
    end_values) or 'empty' (zeros)."""
    fname = "pad"
    x = to_tensor(fname, arr)
    if callable(mode) or mode not in _PAD_MODES:
        raise_error(ValueError, f"{fname}: mode must be one of {_PAD_MODES}, got {mode!r}")
    if reflect_type not in ("even", "odd"):
        raise_error(ValueError, f"{fname}: reflect_type must be 'even' or 'odd', got "
                                f"{reflect_type!r}")
    widths = _pairs(fname, "pad_width", pad_width, x.ndim)
    kw = {"reflect_type": reflect_type,
          "constant_values": _pairs(fname, "constant_values", constant_values, x.ndim, False),
          "end_values": _pairs(fname, "end_values", end_values, x.ndim, False),
          "stat_length": None if stat_length is None else _pairs(fname, "stat_length",
                                                                 stat_length, x.ndim)}
    for axis, (before, after) in enumerate(widths):
        if not before and not after:
            continue
        if x.shape[axis] == 0 and mode not in ("constant", "empty"):
            raise_error(ValueError, f"{fname}: cannot pad the empty axis {axis} in mode "
                                    f"{mode!r}")
        x = _pad_axis(fname, x, axis, before, after, mode, kw)
    return x
