"""More of MindSpore's ops functions, on shapes, indexing, ordering, segments and random
draws, with its names and signatures: composed of pijit's native ops, pijit.numpy's and
pijit.mint's functions, so they run on the eager tape and pijit.jit captures them."""
from pijit import _C
from pijit import _ops_composed
from pijit._ops_math_extra import _FINITE_LIMITS
from pijit._tensor import bool_, float32, float64, int64
from pijit.mint import _shape as _mint_shape
from pijit.mint import _sort as _mint_sort
from pijit.mint._checks import check_dim, check_int, check_tensor, is_int, raise_error
from pijit.mint.nn import _fold
from pijit.numpy import creation as _np_creation
from pijit.numpy import shapes as _np_shapes
# MindSpore's ops functions that pijit.numpy, pijit.mint and pijit's ops already provide.
from pijit._ops_composed import swapaxes as swapdims  # noqa: F401
from pijit.mint.nn._grid_sample import grid_sample  # noqa: F401
from pijit.mint._shape import gather as gather_d, gather as gather_elements  # noqa: F401
from pijit.mint._shape import index_select, narrow  # noqa: F401
from pijit.mint._sort import searchsorted  # noqa: F401
from pijit.mint.nn._fold import unfold  # noqa: F401
from pijit.numpy.creation import diag, diagflat, tril, triu  # noqa: F401
from pijit.numpy.reductions import diff  # noqa: F401
from pijit.numpy.shapes import (column_stack, dsplit, fliplr, flipud, hsplit, hstack,  # noqa: F401
                                moveaxis, moveaxis as movedim, ravel, vsplit)

_ops = _C.ops

# ---- shapes ------------------------------------------------------------------------------------

def flip(input, dims):  # noqa: A002 - MindSpore's names
    return _mint_shape.flip(input, dims)


def reverse(x, axis):
    """x reversed along each axis of `axis`."""
    return _mint_shape.flip(x, axis)


def roll(input, shifts, dims=None):  # noqa: A002
    """input's elements shifted by `shifts` along `dims` (of the flattened input when None),
    wrapping around."""
    return _np_shapes.roll(input, shifts, dims)


def rot90(input, k, dims):  # noqa: A002
    """input rotated by k quarter turns in the plane of `dims`."""
    return _np_shapes.rot90(input, k, tuple(dims))


def diagonal(input, offset=0, dim1=0, dim2=1):  # noqa: A002
    return _np_creation.diagonal(input, offset, dim1, dim2)


def numel(input):  # noqa: A002
    """The number of elements."""
    check_tensor("numel", "input", input)
    return input.size


size = numel


def rank(input_x):
    """The number of axes."""
    check_tensor("rank", "input_x", input_x)
    return input_x.ndim


def expand(input_x, size):
    """input_x broadcast to `size` (a tuple or a 1-D Tensor; -1 keeps an axis)."""
    if isinstance(size, _C.Tensor):
        size = tuple(size.asnumpy().tolist())
    return _ops.broadcast_to(input_x, tuple(size))


def chunk(input, chunks, axis=0):  # noqa: A002
    """input split along `axis` into `chunks` pieces of ceil(size / chunks) elements (fewer
    pieces when they run out)."""
    chunks = check_int("chunk", "chunks", chunks, low=1)
    axis = check_dim("chunk", axis, input.ndim, "axis")
    piece = -(-input.shape[axis] // chunks)
    return _ops_composed.split(input, max(piece, 1), axis)


def tensor_split(input, indices_or_sections, axis=0):  # noqa: A002
    """input split along `axis`: into n nearly equal pieces (the first size % n one longer)
    for an int n, at the given indices for a tuple or list."""
    axis = check_dim("tensor_split", axis, input.ndim, "axis")
    size = input.shape[axis]
    if isinstance(indices_or_sections, int):
        n = check_int("tensor_split", "indices_or_sections", indices_or_sections, low=1)
        sizes = [size // n + (1 if i < size % n else 0) for i in range(n)]
        bounds = [sum(sizes[:i]) for i in range(n + 1)]
    else:
        cuts = [min(max(int(c), 0), size) for c in tuple(indices_or_sections)]
        bounds = [0] + cuts + [size]
    lead = (slice(None),) * axis
    return tuple(input[lead + (slice(bounds[i], max(bounds[i], bounds[i + 1])),)]
                 for i in range(len(bounds) - 1))


def unbind(input, dim=0):  # noqa: A002
    """The slices of input along `dim`, as a tuple."""
    return _ops_composed.unstack(input, check_dim("unbind", dim, input.ndim))


def repeat_elements(x, rep, axis=0):
    """Each element repeated `rep` times along `axis`."""
    return _mint_shape.repeat_interleave(x, check_int("repeat_elements", "rep", rep, low=0),
                                         axis)


def repeat_interleave(input, repeats, axis=None):  # noqa: A002
    return _mint_shape.repeat_interleave(input, repeats, axis)


def meshgrid(*inputs, indexing="xy"):
    """Coordinate grids of the 1-D inputs ('xy': the first two axes swapped, 'ij': as
    given)."""
    if len(inputs) == 1 and isinstance(inputs[0], (tuple, list)):
        inputs = tuple(inputs[0])
    if indexing not in ("xy", "ij"):
        raise_error(ValueError, f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    return tuple(_np_creation.meshgrid(*inputs, indexing=indexing))


# ---- indexing and masks ------------------------------------------------------------------------

def masked_fill(input_x, mask, value):
    """input_x with `value` where mask (broadcast) is True."""
    check_tensor("masked_fill", "input_x", input_x)
    check_tensor("masked_fill", "mask", mask)
    if mask.dtype != bool_:
        raise_error(TypeError, f"masked_fill: mask must be a Bool Tensor, got {mask.dtype}")
    if isinstance(value, _C.Tensor):
        value = value.astype(input_x.dtype)
    return _ops.where(mask, value, input_x)


def index_fill(x, axis, index, value):
    """x with `value` in every slice along `axis` at the positions of `index`."""
    check_tensor("index_fill", "x", x)
    axis = check_dim("index_fill", axis, x.ndim, "axis")
    if isinstance(index, _C.Tensor):
        index = _ops.reshape(index, (-1,))
    else:
        index = _C.Tensor(tuple(index) if isinstance(index, (tuple, list)) else (index,)) \
            .astype(int64)
    size = x.shape[axis]
    index = _ops.where(_ops.less(index, 0), index + size, index)
    hit = _ops.any(_ops.equal(_ops.unsqueeze(_ops.arange(size), 1), index), 1)  # (size,)
    hit = _ops.reshape(hit, (size,) + (1,) * (x.ndim - 1 - axis))
    if isinstance(value, _C.Tensor):
        value = value.astype(x.dtype)
    return _ops.where(hit, value, x)


def sequence_mask(lengths, maxlen=None):
    """Bool (..., maxlen): position j < lengths[...]. maxlen defaults to the largest length,
    read from the data (eagerly: a captured graph stops there)."""
    check_tensor("sequence_mask", "lengths", lengths)
    if maxlen is None:
        maxlen = int(lengths.asnumpy().max()) if lengths.size else 0
    return _ops.less(_ops.arange(check_int("sequence_mask", "maxlen", maxlen, low=0)),
                     _ops.unsqueeze(lengths, -1))


def _segment_hits(segment_ids, num_segments, dtype):
    """(num_segments, *segment_ids.shape) one-hot of each element's segment."""
    check_tensor("unsorted_segment", "segment_ids", segment_ids)
    if not is_int(segment_ids):
        raise_error(TypeError, f"unsorted_segment: segment_ids must be an integer Tensor, got "
                               f"{segment_ids.dtype}")
    num_segments = check_int("unsorted_segment", "num_segments", num_segments, low=0)
    ids = _ops.reshape(_ops.arange(num_segments), (num_segments,) + (1,) * segment_ids.ndim)
    return _ops.equal(ids, segment_ids)


def _segment_reduce(input_x, segment_ids, num_segments, reduce, fill):
    hits = _segment_hits(segment_ids, num_segments, input_x.dtype)
    k = segment_ids.ndim
    hits = _ops.reshape(hits, hits.shape + (1,) * (input_x.ndim - k))
    data = _ops.unsqueeze(input_x, 0)
    picked = _ops.where(hits, data, fill)
    return reduce(picked, tuple(range(1, k + 1)))


def unsorted_segment_sum(input_x, segment_ids, num_segments):
    """out[s] = the sum of the input_x[i] whose segment_ids[i] is s (segment_ids covers
    input_x's leading axes; ids outside [0, num_segments) are dropped)."""
    return _segment_reduce(input_x, segment_ids, num_segments, _ops.sum, 0)


def unsorted_segment_prod(input_x, segment_ids, num_segments):
    return _segment_reduce(input_x, segment_ids, num_segments, _ops.prod, 1)


def unsorted_segment_max(input_x, segment_ids, num_segments):
    """The largest input_x[i] of each segment; the dtype's lowest value for empty ones."""
    return _segment_reduce(input_x, segment_ids, num_segments, _ops.max, _lowest(input_x))


def unsorted_segment_min(input_x, segment_ids, num_segments):
    """The smallest input_x[i] of each segment; the dtype's largest value for empty ones."""
    return _segment_reduce(input_x, segment_ids, num_segments, _ops.min, -_lowest(input_x))


def _lowest(x):
    if x.dtype.name in _FINITE_LIMITS:
        return _FINITE_LIMITS[x.dtype.name][1]
    return {"i8": -2 ** 7, "i16": -2 ** 15, "i32": -2 ** 31, "i64": -2 ** 63, "u8": 0,
            "bool": False}[x.dtype.name]


# ---- ordering ----------------------------------------------------------------------------------

def topk(input, k, dim=None, largest=True, sorted=True):  # noqa: A001,A002
    """(values, Int64 indices) of the k largest (smallest) elements along `dim` (the last
    axis when None)."""
    return _mint_sort.topk(input, k, -1 if dim is None else dim, largest, sorted)


def argsort(input, axis=-1, descending=False):  # noqa: A002
    """The Int64 indices that sort input along `axis` (stably)."""
    return _mint_sort.sort(input, axis, descending)[1]


def msort(input):  # noqa: A002
    """input sorted along its first axis."""
    return _mint_sort.sort(input, 0)[0]


def median(input, axis=-1, keepdims=False):  # noqa: A002
    """(values, Int64 indices) of the median along `axis`: the lower of the two middle
    elements for an even count."""
    check_tensor("median", "input", input)
    axis = check_dim("median", axis, input.ndim, "axis")
    values, indices = _mint_sort.sort(input, axis)
    middle = (input.shape[axis] - 1) // 2 if input.ndim else 0
    key = (slice(None),) * axis + (slice(middle, middle + 1),)
    values, indices = values[key], indices[key]
    if not keepdims:
        values, indices = _ops.squeeze(values, axis), _ops.squeeze(indices, axis)
    return values, indices


def _cumulative_extreme(fname, input, axis, better):  # noqa: A002
    """(running extreme, Int64 index of where it was last reached) along `axis`."""
    check_tensor(fname, "input", input)
    axis = check_dim(fname, axis, input.ndim, "axis")
    n = input.shape[axis]
    lead = (slice(None),) * axis
    value = input[lead + (slice(0, 1),)]
    index = _ops.zeros_like(value, dtype=int64)
    values, indices = [value], [index]
    for i in range(1, n):
        item = input[lead + (slice(i, i + 1),)]
        take = _ops.logical_not(better(value, item))  # ties move to the later element
        value = _ops.where(take, item, value)
        index = _ops.where(take, i, index)
        values.append(value)
        indices.append(index)
    return _ops.concat(tuple(values), axis), _ops.concat(tuple(indices), axis)


def cummax(input, axis):  # noqa: A002
    """(running maxima, Int64 indices of them) along `axis`."""
    return _cumulative_extreme("cummax", input, axis, _ops.greater)


def cummin(input, axis):  # noqa: A002
    """(running minima, Int64 indices of them) along `axis`."""
    return _cumulative_extreme("cummin", input, axis, _ops.less)


# ---- random draws ------------------------------------------------------------------------------

def rand_like(input, seed=None, *, dtype=None):  # noqa: A002
    """Uniform samples from [0, 1) shaped like input."""
    return _ops.rand(input.shape, dtype=dtype or input.dtype, **_seeded(seed))


def randn_like(input, seed=None, *, dtype=None):  # noqa: A002
    """Standard normal samples shaped like input."""
    return _ops.randn(input.shape, dtype=dtype or input.dtype, **_seeded(seed))


def randint(low, high, size, seed=None, *, dtype=None):
    """Integers drawn uniformly from [low, high), Int64 unless `dtype` says."""
    if high <= low:
        raise_error(ValueError, f"randint: high ({high}) must exceed low ({low})")
    # float32 draws hold every integer below 2 ** 24 exactly; wider ranges draw in float64.
    wide = float64 if high - low >= 2 ** 24 else float32
    draws = _ops.uniform(tuple(size), float(low), float(high), dtype=wide, **_seeded(seed))
    return _ops.clip(_ops.floor(draws), low, high - 1).astype(dtype or int64)


def randint_like(input, low, high, seed=None, *, dtype=None):  # noqa: A002
    return randint(low, high, input.shape, seed, dtype=dtype or input.dtype)


def standard_normal(shape, seed=None):
    return _ops.randn(tuple(shape), **_seeded(seed))


def bernoulli(input, p=0.5, seed=None):  # noqa: A002
    """1 with probability p (a number or a Tensor broadcast to input's shape), else 0, in
    input's dtype."""
    draws = _ops.rand(input.shape, **_seeded(seed))
    return _ops.less(draws, p).astype(input.dtype)


def _seeded(seed):
    return {} if seed is None or seed == 0 else {"seed": seed}


# ---- layers ------------------------------------------------------------------------------------

def bias_add(input_x, bias):
    """input_x + bias along the channel axis (1)."""
    if input_x.ndim < 2 or bias.ndim != 1 or bias.shape[0] != input_x.shape[1]:
        raise_error(ValueError, f"bias_add: bias {bias.shape} must be 1-D with input_x's "
                                f"channels (axis 1 of {input_x.shape})")
    return input_x + _ops.reshape(bias, (-1,) + (1,) * (input_x.ndim - 2))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """Columns (N, C * kh * kw, L) summed back into an (N, C, *output_size) image
    (output_size may be a Tensor)."""
    if isinstance(output_size, _C.Tensor):
        output_size = tuple(output_size.asnumpy().tolist())
    return _fold.fold(input, output_size, kernel_size, dilation, padding, stride)

__all__ = [
    "argsort", "bernoulli", "bias_add", "chunk", "column_stack", "cummax", "cummin", "diag",
    "diagflat", "diagonal", "diff", "dsplit", "expand", "flip", "fliplr", "flipud", "fold",
    "gather_d", "gather_elements", "grid_sample", "hsplit", "hstack", "index_fill",
    "index_select", "masked_fill", "median", "meshgrid", "moveaxis", "movedim", "msort",
    "narrow", "numel", "rand_like", "randint", "randint_like", "randn_like", "rank", "ravel",
    "repeat_elements", "repeat_interleave", "reverse", "roll", "rot90", "searchsorted",
    "sequence_mask", "size", "standard_normal", "swapdims", "tensor_split", "topk", "tril",
    "triu", "unbind", "unfold", "unsorted_segment_max", "unsorted_segment_min",
    "unsorted_segment_prod", "unsorted_segment_sum", "vsplit",
]
