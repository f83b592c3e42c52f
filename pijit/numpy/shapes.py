"""Shape manipulation in mindspore.numpy's names and signatures: reshaping, transposing,
joining, splitting, tiling and repeating, flipping and rolling, broadcasting. Each is a
composition of pijit's native views and copies (reshape, transpose, slices, concat, stack,
broadcast_to, gather), so it runs on the tape and is captured like them."""
import numpy as onp

from pijit import ops as _pijit_ops
from pijit.numpy._utils import (Tensor, broadcast_shapes, cast_to, check_axes, check_axis,
                                check_int, check_shape, native, plain, promote, raise_error,
                                to_tensor)
from pijit.ops import constexpr


def reshape(x, new_shape):
    """`x` with shape `new_shape` (an int or a tuple; one entry may be -1)."""
    fname = "reshape"
    x = to_tensor(fname, x)
    shape = plain(new_shape)
    shape = (shape,) if isinstance(shape, int) else tuple(plain(d) for d in tuple(shape))
    known = 1
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, int) or d < -1:
            raise_error(ValueError, f"{fname}: new_shape must hold non-negative ints and at "
                                    f"most one -1, got {tuple(shape)}")
        known *= d if d != -1 else 1
    if sum(1 for d in shape if d == -1) > 1 or (-1 not in shape and known != x.size) or (
            -1 in shape and (known == 0 or x.size % known)):
        raise_error(ValueError, f"{fname}: cannot reshape a tensor of shape {x.shape} "
                                f"({x.size} elements) into shape {tuple(shape)}")
    return native.reshape(x, shape)


def ravel(x):
    """The elements of `x` in a 1-D tensor (row-major order)."""
    return native.reshape(to_tensor("ravel", x), (-1,))


def transpose(a, axes=None):
    """`a` with its axes permuted: reversed when `axes` is None, else in the order `axes`."""
    fname = "transpose"
    a = to_tensor(fname, a)
    if axes is None:
        return native.transpose(a, tuple(range(a.ndim - 1, -1, -1)))
    axes = tuple(plain(axes))
    perm = tuple(check_axis(fname, ax, a.ndim) for ax in axes)
    if len(perm) != a.ndim or len(set(perm)) != a.ndim:
        raise_error(ValueError, f"{fname}: axes {tuple(axes)} are not a permutation of the "
                                f"{a.ndim} axes")
    return native.transpose(a, perm)


def swapaxes(x, axis1, axis2):
    """`x` with axes axis1 and axis2 exchanged."""
    fname = "swapaxes"
    x = to_tensor(fname, x)
    a, b = check_axis(fname, axis1, x.ndim), check_axis(fname, axis2, x.ndim)
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return native.transpose(x, tuple(perm))


def _axis_list(fname, axes, ndim):
    axes = plain(axes)
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    out = tuple(check_axis(fname, ax, ndim) for ax in axes)
    if len(set(out)) != len(out):
        raise_error(ValueError, f"{fname}: repeated axis in {axes}")
    return out


def moveaxis(a, source, destination):
    """`a` with the axes `source` moved to positions `destination`, the others in order."""
    fname = "moveaxis"
    a = to_tensor(fname, a)
    src, dst = _axis_list(fname, source, a.ndim), _axis_list(fname, destination, a.ndim)
    if len(src) != len(dst):
        raise_error(ValueError, f"{fname}: source and destination must have the same number "
                                f"of elements, got {len(src)} and {len(dst)}")
    rest = tuple(ax for ax in range(a.ndim) if ax not in src)
    order, k = (), 0
    for i in range(a.ndim):  # the moved axes at their places, the others in order
        moved = tuple(s for s, d in zip(src, dst) if d == i)
        if moved:
            order = order + moved
        else:
            order, k = order + (rest[k],), k + 1
    return native.transpose(a, order)


def rollaxis(x, axis, start=0):
    """`x` with `axis` moved to lie before position `start`."""
    fname = "rollaxis"
    x = to_tensor(fname, x)
    axis = check_axis(fname, axis, x.ndim)
    start = check_int(fname, "start", start)
    if not -x.ndim <= start <= x.ndim:
        raise_error(ValueError, f"{fname}: start {start} is out of range [{-x.ndim}, {x.ndim}]")
    start %= x.ndim + 1
    if axis < start:
        start -= 1
    if axis == start:
        return x
    order = tuple(i for i in range(x.ndim) if i != axis)
    return native.transpose(x, order[:start] + (axis,) + order[start:])


def expand_dims(a, axis):
    """`a` with new axes of size 1 at the positions `axis` (an int or a tuple) of the result."""
    fname = "expand_dims"
    a = to_tensor(fname, a)
    axes = plain(axis)
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    ndim = a.ndim + len(axes)
    positions = _axis_list(fname, axes, ndim)
    shape, k = (), 0
    for i in range(ndim):
        if i in positions:
            shape = shape + (1,)
        else:
            shape, k = shape + (a.shape[k],), k + 1
    return native.reshape(a, shape)


def squeeze(a, axis=None):
    """`a` without the size-1 axes `axis` (every size-1 axis when None)."""
    fname = "squeeze"
    a = to_tensor(fname, a)
    if axis is None:
        return native.reshape(a, tuple(d for d in a.shape if d != 1))
    axes = _axis_list(fname, axis, a.ndim)
    for ax in axes:
        if a.shape[ax] != 1:
            raise_error(ValueError, f"{fname}: cannot select axis {ax} of size {a.shape[ax]}: "
                                    f"only axes of size 1 can be removed")
    return native.reshape(a, tuple(d for i, d in enumerate(a.shape) if i not in axes))


# ---- joining -------------------------------------------------------------------------------------

def _tensor_list(fname, arrays):
    if isinstance(arrays, Tensor) and arrays.ndim > 0:
        return tuple(arrays[i] for i in range(arrays.shape[0]))
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise_error(TypeError, f"{fname}: expected a non-empty list or tuple of tensors, got "
                               f"{type(arrays).__name__}")
    tensors = tuple(to_tensor(fname, a) for a in tuple(arrays))
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = promote(dtype, t.dtype)
    return tuple(cast_to(t, dtype) for t in tensors)


def _check_join(fname, tensors, axis):
    first = tensors[0]
    for t in tensors[1:]:
        if t.ndim != first.ndim or any(d != e for i, (d, e) in enumerate(zip(t.shape, first.shape))
                                       if i != axis):
            raise_error(ValueError, f"{fname}: all the input tensors must have the same shape "
                                    f"except along axis {axis}, got {first.shape} and {t.shape}")


def concatenate(arrays, axis=0):
    """The tensors of `arrays` joined along `axis` (flattened first when axis is None)."""
    fname = "concatenate"
    tensors = _tensor_list(fname, arrays)
    if axis is None:
        return native.concat(tuple(native.reshape(t, (-1,)) for t in tensors), 0)
    if tensors[0].ndim == 0:
        raise_error(ValueError, f"{fname}: zero-dimensional tensors cannot be concatenated")
    axis = check_axis(fname, axis, tensors[0].ndim)
    _check_join(fname, tensors, axis)
    return native.concat(tensors, axis)


def stack(arrays, axis=0):
    """The tensors of `arrays` (of one shape) joined along a new axis `axis`."""
    fname = "stack"
    tensors = _tensor_list(fname, arrays)
    axis = check_axis(fname, axis, tensors[0].ndim + 1)
    for t in tensors[1:]:
        if t.shape != tensors[0].shape:
            raise_error(ValueError, f"{fname}: all input tensors must have the same shape, got "
                                    f"{tensors[0].shape} and {t.shape}")
    return native.stack(tensors, axis)


def _at_least(x, ndim):
    shape = tuple(x.shape)
    if ndim == 1 and len(shape) < 1:
        shape = (1,)
    elif ndim == 2 and len(shape) < 2:
        shape = (1,) * (2 - len(shape)) + shape
    elif ndim == 3 and len(shape) < 3:
        shape = {0: (1, 1, 1), 1: (1,) + shape + (1,), 2: shape + (1,)}[len(shape)]
    return x if shape == tuple(x.shape) else native.reshape(x, shape)


def _atleast(fname, ndim, arys):
    out = [_at_least(to_tensor(fname, a), ndim) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys):
    """Each input with at least 1 axis: one tensor for one input, else a list."""
    return _atleast("atleast_1d", 1, arys)


def atleast_2d(*arys):
    """Each input with at least 2 axes (1-D (N,) becomes (1, N))."""
    return _atleast("atleast_2d", 2, arys)


def atleast_3d(*arys):
    """Each input with at least 3 axes ((N,) becomes (1, N, 1), (M, N) becomes (M, N, 1))."""
    return _atleast("atleast_3d", 3, arys)


def hstack(tup):
    """The tensors joined column-wise: along axis 1, or axis 0 for 1-D ones."""
    tensors = tuple(_at_least(t, 1) for t in _tensor_list("hstack", tup))
    return concatenate(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tup):
    """The tensors joined row-wise (along axis 0), 1-D ones as rows."""
    return concatenate(tuple(_at_least(t, 2) for t in _tensor_list("vstack", tup)), 0)


def dstack(tup):
    """The tensors joined depth-wise (along axis 2), made at least 3-D first."""
    return concatenate(tuple(_at_least(t, 3) for t in _tensor_list("dstack", tup)), 2)


def column_stack(tup):
    """1-D tensors as the columns of a 2-D one; 2-D tensors joined along axis 1."""
    return concatenate(tuple(native.reshape(t, (-1, 1)) if t.ndim < 2 else t
                             for t in _tensor_list("column_stack", tup)), 1)


def append(arr, values, axis=None):
    """`values` joined to the end of `arr` along `axis` (both flattened when None)."""
    arr, values = to_tensor("append", arr), to_tensor("append", values)
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


# ---- splitting -----------------------------------------------------------------------------------

def _split_points(fname, n, indices_or_sections, equal):
    sections = plain(indices_or_sections)
    if isinstance(sections, Tensor):
        raise_error(TypeError, f"{fname}: indices_or_sections must be an int or a list of ints; "
                               f"a tensor would make the pieces' sizes depend on its values")
    if isinstance(sections, int) and not isinstance(sections, bool):
        if sections <= 0:
            raise_error(ValueError, f"{fname}: the number of sections must be positive, got "
                                    f"{sections}")
        if equal and n % sections:
            raise_error(ValueError, f"{fname}: an axis of {n} elements does not split into "
                                    f"{sections} equal sections")
        size, extra = divmod(n, sections)
        points, start = (0,), 0
        for i in range(sections):
            start += size + (1 if i < extra else 0)
            points = points + (start,)
        return points
    return (0,) + tuple(check_int(fname, "an index", i) for i in tuple(sections)) + (n,)


def _split(fname, x, indices_or_sections, axis, equal):
    x = to_tensor(fname, x)
    axis = check_axis(fname, axis, x.ndim)
    n = x.shape[axis]
    points = _split_points(fname, n, indices_or_sections, equal)
    head = (slice(None),) * axis
    pieces = []
    for i in range(len(points) - 1):
        start = min(max(points[i] if points[i] >= 0 else points[i] + n, 0), n)
        stop = min(max(points[i + 1] if points[i + 1] >= 0 else points[i + 1] + n, 0), n)
        pieces.append(x[head + (slice(start, max(start, stop)),)])
    return pieces


def split(x, indices_or_sections, axis=0):
    """`x` cut along `axis` into that many equal pieces (an int), or at the given indices."""
    return _split("split", x, indices_or_sections, axis, equal=True)


def array_split(x, indices_or_sections, axis=0):
    """split, but an int need not divide the axis: the first pieces get one element more."""
    return _split("array_split", x, indices_or_sections, axis, equal=False)


def hsplit(x, indices_or_sections):
    """split along axis 1 (axis 0 for 1-D `x`)."""
    x = to_tensor("hsplit", x)
    return _split("hsplit", x, indices_or_sections, 1 if x.ndim > 1 else 0, equal=True)


def vsplit(x, indices_or_sections):
    """split along axis 0 of an at least 2-D `x`."""
    return _split_deep("vsplit", x, indices_or_sections, 0, min_ndim=2)


def dsplit(x, indices_or_sections):
    """split along axis 2 of an at least 3-D `x`."""
    return _split_deep("dsplit", x, indices_or_sections, 2, min_ndim=3)


def _split_deep(name, x, indices_or_sections, axis, min_ndim):
    """Equal split along `axis` of an `x` of at least min_ndim dimensions."""
    x = to_tensor(name, x)
    if x.ndim < min_ndim:
        raise_error(ValueError, f"{name}: only works on tensors of {min_ndim} or more "
                                f"dimensions, got shape {x.shape}")
    return _split(name, x, indices_or_sections, axis, equal=True)


# ---- tiling, repeating, flipping, rolling --------------------------------------------------------

def tile(a, reps):
    """`a` repeated reps[i] times along each axis (reps may be longer or shorter than a's rank)."""
    reps = plain(reps)
    return _pijit_ops.tile(to_tensor("tile", a), reps if isinstance(reps, int) else tuple(reps))


@constexpr
def _repeat_index(n, repeats):
    return Tensor(onp.repeat(onp.arange(n, dtype=onp.int64), repeats))


def repeat(a, repeats, axis=None):
    """Each element of `a` repeated `repeats` times (an int, or one count per element) along
    `axis` (of the flattened `a` when None)."""
    fname = "repeat"
    a = to_tensor(fname, a)
    if axis is None:
        a, axis = native.reshape(a, (-1,)), 0
    axis = check_axis(fname, axis, a.ndim)
    counts = plain(repeats)
    if isinstance(counts, Tensor):
        raise_error(TypeError, f"{fname}: repeats must be an int or a list of ints; a tensor "
                               f"would make the result's shape depend on its values")
    if isinstance(counts, (list, tuple)) and len(counts) == 1:
        counts = plain(counts[0])
    if isinstance(counts, int) and not isinstance(counts, bool):
        if counts < 0:
            raise_error(ValueError, f"{fname}: repeats must be non-negative, got {counts}")
        shape = tuple(a.shape)
        x = native.unsqueeze(a, axis + 1)
        x = native.broadcast_to(x, shape[:axis + 1] + (counts,) + shape[axis + 1:])
        return native.reshape(x, shape[:axis] + (shape[axis] * counts,) + shape[axis + 1:])
    counts = tuple(check_int(fname, "each repeat count", c) for c in tuple(counts))
    if len(counts) != a.shape[axis] or any(c < 0 for c in counts):
        raise_error(ValueError, f"{fname}: {len(counts)} non-negative repeat counts are needed "
                                f"for axis {axis} of length {a.shape[axis]}, got {counts}")
    return native.gather(a, _repeat_index(a.shape[axis], counts), axis)


def flip(m, axis=None):
    """`m` with the order of its elements reversed along `axis` (every axis when None)."""
    fname = "flip"
    m = to_tensor(fname, m)
    axes = check_axes(fname, axis, m.ndim)
    if not axes:
        return m
    return m[tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(m.ndim))]


def fliplr(m):
    """`m` reversed along axis 1 (left/right)."""
    m = to_tensor("fliplr", m)
    if m.ndim < 2:
        raise_error(ValueError, f"fliplr: input must be at least 2-D, got shape {m.shape}")
    return flip(m, 1)


def flipud(m):
    """`m` reversed along axis 0 (up/down)."""
    m = to_tensor("flipud", m)
    if m.ndim < 1:
        raise_error(ValueError, "flipud: input must be at least 1-D, got a 0-d tensor")
    return flip(m, 0)


def _roll_axis(x, shift, axis):
    n = x.shape[axis]
    if n == 0:
        return x
    shift %= n
    if shift == 0:
        return x
    head = (slice(None),) * axis
    return native.concat([x[head + (slice(n - shift, n),)], x[head + (slice(0, n - shift),)]],
                         axis)


def roll(a, shift, axis=None):
    """`a` with its elements shifted by `shift` along `axis` (of the flattened `a` when None);
    elements pushed off one end come back at the other. shift and axis may be tuples."""
    fname = "roll"
    a = to_tensor(fname, a)
    if axis is None:
        return native.reshape(_roll_axis(native.reshape(a, (-1,)),
                                         check_int(fname, "shift", shift), 0), a.shape)
    shifts, axes = plain(shift), plain(axis)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise_error(ValueError, f"{fname}: shift and axis must have the same length, got "
                                f"{shifts} and {axes}")
    axes = tuple(check_axis(fname, ax, a.ndim) for ax in axes)
    shifts = tuple(check_int(fname, "shift", s) for s in shifts)
    for ax in range(a.ndim):  # shifts along one axis add up
        total = sum(s for s, b in zip(shifts, axes) if b == ax)
        if ax in axes:
            a = _roll_axis(a, total, ax)
    return a


def rot90(a, k=1, axes=(0, 1)):
    """`a` rotated by 90 degrees `k` times in the plane of `axes`, from the first axis toward
    the second."""
    fname = "rot90"
    a = to_tensor(fname, a)
    axes = tuple(plain(axes))
    if len(axes) != 2:
        raise_error(ValueError, f"{fname}: axes must hold 2 axes, got {axes}")
    if a.ndim < 2:
        raise_error(ValueError, f"{fname}: input must be at least 2-D, got shape {a.shape}")
    ax0, ax1 = check_axis(fname, axes[0], a.ndim), check_axis(fname, axes[1], a.ndim)
    if ax0 == ax1:
        raise_error(ValueError, f"{fname}: axes must be different, got {axes}")
    k = check_int(fname, "k", k) % 4
    if k == 0:
        return a
    if k == 2:
        return flip(flip(a, ax0), ax1)
    if k == 1:
        return swapaxes(flip(a, ax1), ax0, ax1)
    return flip(swapaxes(a, ax0, ax1), ax1)


# ---- broadcasting and sizes ----------------------------------------------------------------------

def broadcast_to(array, shape):
    """`array` broadcast to `shape` (a view: no copy)."""
    fname = "broadcast_to"
    x = to_tensor(fname, array)
    shape = check_shape(fname, shape)
    target = broadcast_shapes(fname, tuple(x.shape), shape)
    if target != shape:
        raise_error(ValueError, f"{fname}: cannot broadcast a tensor of shape {x.shape} to "
                                f"shape {shape}")
    return native.broadcast_to(x, shape)


def broadcast_arrays(*args):
    """The arguments broadcast against each other: a list of tensors of one shape."""
    fname = "broadcast_arrays"
    tensors = tuple(to_tensor(fname, a) for a in args)
    shape = broadcast_shapes(fname, *tuple(tuple(t.shape) for t in tensors))
    return [native.broadcast_to(t, shape) for t in tensors]


def size(a, axis=None):
    """The number of elements of `a`, or along `axis`: a Python int."""
    a = to_tensor("size", a)
    if axis is None:
        return a.size
    return a.shape[check_axis("size", axis, a.ndim)]


def array_str(a):
    """The values of `a` as a string, as str(tensor) gives them (NumPy's formatting)."""
    return str(to_tensor("array_str", a))
