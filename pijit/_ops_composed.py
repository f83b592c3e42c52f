"""Operations composed of pijit's native ones, with MindSpore's names and signatures: the
activations real models use (leaky_relu, relu6, hardswish, hardsigmoid), shape operations
(split, tile, unstack, strided slices, pad) and the primitives that wrap them (Split,
Tile, Cast, Shape, Gather, BatchMatMul, Unstack, StridedSlice, Depend). Being Python over
native ops, they run on the eager tape and are inlined into captured graphs (fused where
elementwise), and their gradients come from the native ops' rules."""
from pijit import _C
from pijit._numbers import plain

_ops = _C.ops


# ---- activations -----------------------------------------------------------------------------

def leaky_relu(input, alpha=0.2):  # noqa: A002 - MindSpore's name
    """x where x > 0, else alpha * x."""
    return _ops.where(input > 0, input, input * alpha)


def relu6(input):  # noqa: A002
    """min(max(x, 0), 6)."""
    return _ops.clip(input, 0.0, 6.0)


def hardsigmoid(input):  # noqa: A002
    """relu6(x + 3) / 6."""
    return _ops.clip(input + 3.0, 0.0, 6.0) / 6.0


def hardswish(input):  # noqa: A002
    """x * relu6(x + 3) / 6."""
    return input * hardsigmoid(input)


# ---- floating-point classes ------------------------------------------------------------------

_FLOATING = (_C.dtype.f16, _C.dtype.bf16, _C.dtype.f32, _C.dtype.f64)


def _is_floating(x):
    return x.dtype in _FLOATING


def isnan(input):  # noqa: A002 - MindSpore's name
    """True where input is NaN (never for integers and bools)."""
    return _ops.not_equal(input, input) if _is_floating(input) else _ops.zeros_like(input) != 0


def isinf(input):  # noqa: A002
    """True where input is +inf or -inf."""
    if not _is_floating(input):
        return _ops.zeros_like(input) != 0
    return _ops.equal(_ops.abs(input), float("inf"))


def isfinite(input):  # noqa: A002
    """True where input is neither infinite nor NaN (x - x is 0 exactly then)."""
    if not _is_floating(input):
        return _ops.zeros_like(input) == 0
    return _ops.equal(input - input, 0.0)


# ---- shapes ----------------------------------------------------------------------------------

def _axis(name, axis, ndim):
    axis = plain(axis)
    if isinstance(axis, bool) or not isinstance(axis, int) or not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis must be an int in [{-ndim}, {ndim}), got {axis!r}")
    return axis % ndim


def _take(x, axis, start, stop, step=None):
    index = (slice(None),) * axis + (slice(start, stop, step),)
    return x[index]


def split(tensor, split_size_or_sections, axis=0):
    """Pieces of `tensor` along `axis`: of split_size_or_sections elements each (the last may
    be smaller) when it is an int, of the given sizes (which must add up to the axis) when
    it is a list or tuple. A tuple of tensors."""
    axis = _axis("split", axis, tensor.ndim)
    n = tensor.shape[axis]
    sections = plain(split_size_or_sections)
    if isinstance(sections, int) and not isinstance(sections, bool):
        if sections <= 0:
            raise ValueError(f"split: split_size_or_sections must be positive, got {sections}")
        sizes = [min(sections, n - start) for start in range(0, n, sections)]
    elif isinstance(sections, (list, tuple)) and all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in sections):
        sizes = list(sections)
        if sum(sizes) != n:
            raise ValueError(f"split: sections {tuple(sizes)} add up to {sum(sizes)}, but axis "
                             f"{axis} has {n} elements")
    else:
        raise TypeError(f"split: split_size_or_sections must be an int or a list of ints, got "
                        f"{split_size_or_sections!r}")
    pieces, start = [], 0
    for s in sizes:
        pieces.append(_take(tensor, axis, start, start + s))
        start += s
    return tuple(pieces)


def tile(input, dims):  # noqa: A002
    """`input` repeated dims[i] times along each axis (NumPy's tile; dims may be longer or
    shorter than the rank, as there)."""
    dims = plain(dims)
    if isinstance(dims, int):
        dims = (dims,)
    dims = tuple(dims)
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in dims):
        raise ValueError(f"tile: dims must be non-negative ints, got {dims!r}")
    rank = max(len(dims), input.ndim)
    dims = (1,) * (rank - len(dims)) + dims
    shape = (1,) * (rank - input.ndim) + tuple(input.shape)
    # [r0, d0, r1, d1, ...]: broadcasting repeats the whole array along each r axis.
    interleaved = []
    for r, d in zip(dims, shape):
        interleaved += [1, d]
    x = _ops.reshape(input, tuple(interleaved))
    target = []
    for r, d in zip(dims, shape):
        target += [r, d]
    x = _ops.broadcast_to(x, tuple(target))
    return _ops.reshape(x, tuple(r * d for r, d in zip(dims, shape)))


def unstack(input_x, axis=0):
    """The slices of input_x along `axis`, that axis removed: a tuple."""
    axis = _axis("unstack", axis, input_x.ndim)
    index = (slice(None),) * axis
    return tuple(input_x[index + (i,)] for i in range(input_x.shape[axis]))


def depend(value, expr):
    """`value` (MindSpore orders `expr` before its use; pijit runs code in program order)."""
    return value


def cast(input, dtype):  # noqa: A002
    return input.astype(dtype)


def shape(input_x):
    return tuple(input_x.shape)


_PAD_MODES = ("CONSTANT", "REFLECT", "SYMMETRIC")


def pad(input_x, paddings, mode="CONSTANT", value=0.0):
    """`input_x` padded by paddings[i] = (before, after) elements along axis i: with `value`
    (CONSTANT), or with its mirror image without (REFLECT) or with (SYMMETRIC) the edge."""
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode must be one of {_PAD_MODES}, got {mode!r}")
    paddings = [tuple(plain(p)) for p in plain(paddings)]
    if len(paddings) != input_x.ndim or not all(
            len(p) == 2 and all(isinstance(v, int) and v >= 0 for v in p) for p in paddings):
        raise ValueError(f"pad: paddings must be {input_x.ndim} pairs of non-negative ints "
                         f"(before, after), got {paddings!r}")
    x = input_x
    for axis, (before, after) in enumerate(paddings):
        if before == 0 and after == 0:
            continue
        n = x.shape[axis]
        limit = n - 1 if mode == "REFLECT" else n
        if mode != "CONSTANT" and (before > limit or after > limit):
            raise ValueError(f"pad: {mode} padding of axis {axis} ({before}, {after}) must be at "
                             f"most {limit} for its {n} elements")
        parts = []
        if mode == "CONSTANT":
            if before:
                edge = tuple(before if i == axis else d for i, d in enumerate(x.shape))
                parts.append(_ops.full(edge, value, dtype=x.dtype))
            parts.append(x)
            if after:
                edge = tuple(after if i == axis else d for i, d in enumerate(x.shape))
                parts.append(_ops.full(edge, value, dtype=x.dtype))
        else:
            skip = 1 if mode == "REFLECT" else 0
            if before:
                parts.append(_reversed(x, axis, skip + before - 1, skip))
            parts.append(x)
            if after:
                parts.append(_reversed(x, axis, n - 1 - skip, n - skip - after))
        x = _ops.concat(tuple(parts), axis)
    return x


def _reversed(x, axis, first, last):
    # x[first], x[first - 1], ..., x[last] along `axis` (first >= last >= 0).
    return _take(x, axis, first, last - 1 if last > 0 else None, -1)


def strided_slice(input_x, begin, end, strides, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0):
    """input_x[begin[i]:end[i]:strides[i], ...]; bit i of begin_mask/end_mask ignores begin[i]/
    end[i] (the whole range), of shrink_axis_mask takes the single element begin[i]."""
    if ellipsis_mask or new_axis_mask:
        raise NotImplementedError("strided_slice: ellipsis_mask and new_axis_mask are not "
                                  "supported; index the tensor with ... or None instead")
    begin, end, strides = (tuple(plain(v)) for v in (begin, end, strides))
    if not len(begin) == len(end) == len(strides):
        raise ValueError(f"strided_slice: begin {begin}, end {end} and strides {strides} must "
                         f"have one entry per sliced axis")
    index = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        if shrink_axis_mask >> i & 1:
            index.append(b)
            continue
        index.append(slice(None if begin_mask >> i & 1 else b,
                           None if end_mask >> i & 1 else e, s))
    return input_x[tuple(index)]


# ---- MindSpore names over the native ops -------------------------------------------------------

def fill(type, shape, value):  # noqa: A002 - MindSpore's name
    """A tensor of `shape` and dtype `type` filled with `value` (ops.fill's argument order)."""
    shape = plain(shape)
    return _ops.full(shape if isinstance(shape, int) else tuple(shape), value, dtype=type)


def addn(x):
    """The sum of a list or tuple of tensors of one shape (their dtypes promote as in +)."""
    if not isinstance(x, (tuple, list)) or not x:
        raise TypeError(f"addn: expected a non-empty list or tuple of tensors, got {x!r}")
    total = x[0]
    for t in x[1:]:
        if t.shape != x[0].shape:
            raise ValueError(f"addn: every input must have shape {x[0].shape}, got {t.shape}")
        total = total + t
    return total


def tensor_slice(input_x, begin, size):
    """input_x[begin[i]:begin[i] + size[i]] along each axis; a size of -1 runs to the end
    (MindSpore's ops.slice)."""
    begin, size = tuple(plain(begin)), tuple(plain(size))
    if len(begin) != input_x.ndim or len(size) != input_x.ndim:
        raise ValueError(f"slice: begin {begin} and size {size} must have {input_x.ndim} entries")
    index = tuple(slice(b, None if s == -1 else b + s) for b, s in zip(begin, size))
    return input_x[index]


def swapaxes(input, axis0, axis1):  # noqa: A002
    """input with axes axis0 and axis1 exchanged."""
    perm = list(range(input.ndim))
    a, b = _axis("swapaxes", axis0, input.ndim), _axis("swapaxes", axis1, input.ndim)
    perm[a], perm[b] = perm[b], perm[a]
    return _ops.transpose(input, tuple(perm))


def permute(input, *dims):  # noqa: A002
    """input with its axes in the order `dims` (a tuple, or the axes as arguments)."""
    if len(dims) == 1 and isinstance(plain(dims[0]), (tuple, list)):
        dims = tuple(plain(dims[0]))
    return _ops.transpose(input, tuple(dims))


def contiguous(input):  # noqa: A002
    """input itself when its elements are in row-major order, else a row-major copy."""
    if input.is_contiguous():
        return input
    return _ops.reshape(_ops.reshape(input, (-1,)), tuple(input.shape))
