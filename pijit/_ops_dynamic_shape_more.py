"""The primitives over pijit/_ops_dynamic_shape.py's functions, and those of the same family
that only MindSpore's primitive API has: the sorted-segment reductions (SegmentSum, ...),
ListDiff, UnravelIndex and RaggedRange. Like the functions, they read their inputs on the host
(a captured graph breaks at the call) and take the values they return by a gather of
host-computed positions, so SegmentSum & co. carry gradients to input_x."""
import numpy as np

from pijit import _C
from pijit import _ops_dynamic_shape as _dyn
from pijit._ops_math_extra import _FINITE_LIMITS
from pijit._primitives_more import _primitive
from pijit._tensor import bool_, float32, float64, int32, int64
from pijit.mint._checks import check_tensor, raise_error
from pijit.ops import Primitive

_ops = _C.ops

# ---- wrappers of the functions -------------------------------------------------------------------

NonZero = _primitive("NonZero", {}, lambda self, x: _dyn.nonzero(x),
                     "NonZero()(x): the (N, ndim) Int64 coordinates of x's non-zero elements.")
MaskedSelect = _primitive("MaskedSelect", {}, lambda self, x, mask: _dyn.masked_select(x, mask),
                          "MaskedSelect()(x, mask): x's elements where mask holds, as 1-D.")
Unique = _primitive("Unique", {}, lambda self, input_x: _dyn.unique(input_x),
                    "Unique()(input_x): (y, idx), as ops.unique.")
UniqueConsecutive = _primitive(
    "UniqueConsecutive", {"return_idx": False, "return_counts": False, "axis": None},
    lambda self, x: _dyn.unique_consecutive_parts(x, self.axis, "UniqueConsecutive"),
    "UniqueConsecutive(return_idx=False, return_counts=False, axis=None)(x): the tuple "
    "(output, idx, counts) of ops.unique_consecutive, every part always computed.")
UniqueWithPad = _primitive("UniqueWithPad", {},
                           lambda self, x, pad_num: _dyn.unique_with_pad(x, pad_num),
                           "UniqueWithPad()(x, pad_num): (y, idx), as ops.unique_with_pad.")


def _bincount(self, array, size, weights):
    """Bins 0 .. size - 1 of the Int32 `array` (values outside are dropped), summing `weights`
    (an empty weights counts ones), in weights' dtype."""
    bins = _dyn.host_int_values("Bincount", "array", array)
    check_tensor("Bincount", "size", size)
    length = int(_dyn.host_values("Bincount", "size", size).reshape(-1)[0])
    if length < 0:
        raise_error(ValueError, f"Bincount: size must be non-negative, got {length}")
    check_tensor("Bincount", "weights", weights)
    bins = bins.reshape(-1)
    inside = np.flatnonzero((bins >= 0) & (bins < length))
    if weights.size == 0:
        counts = np.bincount(bins[inside], minlength=length)
        return _dyn.index_tensor(counts, weights.dtype)
    if tuple(weights.shape) != tuple(array.shape):
        raise_error(ValueError, f"Bincount: weights must have array's shape {array.shape}, got "
                                f"{weights.shape}")
    kept = _dyn.take(_ops.reshape(weights, (-1,)), inside)
    return _dyn.weighted_bins(bins[inside], kept, length)


Bincount = _primitive("Bincount", {}, _bincount,
                      "Bincount()(array, size, weights): the weighted counts of the values "
                      "0 .. size - 1 of array.")

# ---- sorted-segment reductions ------------------------------------------------------------------


def _segment_table(fname, input_x, segment_ids):
    """(rows, valid, sizes): the (segments, longest) table of input_x's row numbers in each
    segment, which table places are real rows, and each segment's size."""
    check_tensor(fname, "input_x", input_x)
    if input_x.ndim < 1:
        raise_error(ValueError, f"{fname}: input_x must have rank 1 or more, got a 0-d Tensor")
    if input_x.dtype == bool_:
        raise_error(TypeError, f"{fname}: input_x must be a real number Tensor, got Bool")
    ids = _dyn.host_int_values(fname, "segment_ids", segment_ids, ndim=1)
    if ids.size != input_x.shape[0]:
        raise_error(ValueError, f"{fname}: segment_ids must have input_x's first dimension "
                                f"{input_x.shape[0]}, got {ids.size}")
    if ids.size and ids.min() < 0:
        raise_error(ValueError, f"{fname}: segment_ids must be non-negative, got {ids.min()}")
    if np.any(ids[1:] < ids[:-1]):
        raise_error(ValueError, f"{fname}: segment_ids must be sorted in ascending order")
    count = int(ids[-1]) + 1 if ids.size else 0
    sizes = np.bincount(ids, minlength=count)
    longest = int(sizes.max()) if count else 0
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    offsets = np.arange(longest)
    valid = offsets[None, :] < sizes[:, None]
    rows = np.where(valid, starts[:, None] + offsets[None, :], 0)  # padding reads row 0
    return rows, valid, sizes


def _segment_reduce(fname, input_x, segment_ids, reduce, identity, empty):
    """reduce over each segment's rows (padding set to `identity`); `empty` in segments
    without rows. The rows are gathered, so input_x gets the reduction's gradient."""
    rows, valid, sizes = _segment_table(fname, input_x, segment_ids)
    rest = tuple(input_x.shape[1:])
    if rows.shape[0] == 0:
        return _ops.zeros((0,) + rest, dtype=input_x.dtype)
    picked = _ops.reshape(_dyn.take(input_x, rows), rows.shape + rest)
    mask = _ops.reshape(_dyn.index_tensor(valid, bool_), rows.shape + (1,) * len(rest))
    filler = _ops.full((), identity, dtype=input_x.dtype)
    out = reduce(_ops.where(mask, picked, filler), 1)
    if out.dtype != input_x.dtype:  # integer sums and products widen to Int64
        out = out.astype(input_x.dtype)
    if sizes.min() > 0:
        return out
    present = _ops.reshape(_dyn.index_tensor(sizes > 0, bool_), (-1,) + (1,) * len(rest))
    return _ops.where(present, out, _ops.full((), empty, dtype=input_x.dtype))


def _lowest(x):
    if x.dtype.name in _FINITE_LIMITS:
        return _FINITE_LIMITS[x.dtype.name][1]
    return int(np.iinfo(x.dtype.to_numpy()).min)


def _highest(x):
    if x.dtype.name in _FINITE_LIMITS:
        return -_FINITE_LIMITS[x.dtype.name][1]
    return int(np.iinfo(x.dtype.to_numpy()).max)


def _segment_mean(input_x, segment_ids):
    rows, _, sizes = _segment_table("SegmentMean", input_x, segment_ids)
    total = _segment_reduce("SegmentMean", input_x, segment_ids, _ops.sum, 0, 0)
    counts = np.maximum(sizes, 1).reshape((-1,) + (1,) * (input_x.ndim - 1))
    return total / _dyn.index_tensor(counts, input_x.dtype)


_SEGMENT_DOC = ("{}()(input_x, segment_ids): the {} of input_x's rows in each segment; "
                "segment_ids (1-D, sorted, non-negative) gives each row's segment, and the "
                "output has segment_ids[-1] + 1 rows ({} for segments without rows).")
SegmentSum = _primitive(
    "SegmentSum", {},
    lambda self, x, ids: _segment_reduce("SegmentSum", x, ids, _ops.sum, 0, 0),
    _SEGMENT_DOC.format("SegmentSum", "sum", "0"))
SegmentProd = _primitive(
    "SegmentProd", {},
    lambda self, x, ids: _segment_reduce("SegmentProd", x, ids, _ops.prod, 1, 1),
    _SEGMENT_DOC.format("SegmentProd", "product", "1"))
SegmentMax = _primitive(
    "SegmentMax", {},
    lambda self, x, ids: _segment_reduce("SegmentMax", x, ids, _ops.max, _lowest(x), 0),
    _SEGMENT_DOC.format("SegmentMax", "maximum", "0"))
SegmentMin = _primitive(
    "SegmentMin", {},
    lambda self, x, ids: _segment_reduce("SegmentMin", x, ids, _ops.min, _highest(x), 0),
    _SEGMENT_DOC.format("SegmentMin", "minimum", "0"))
SegmentMean = _primitive("SegmentMean", {}, lambda self, x, ids: _segment_mean(x, ids),
                         _SEGMENT_DOC.format("SegmentMean", "mean", "0"))

# ---- index arithmetic ---------------------------------------------------------------------------


def _list_diff(self, x, y):
    """(out, idx): the elements of 1-D x not in 1-D y, in x's order, and their positions."""
    if self.out_idx not in (int32, int64):
        raise_error(TypeError, f"ListDiff: out_idx must be int32 or int64, got {self.out_idx}")
    x_values = _dyn.host_values("ListDiff", "x", x)
    y_values = _dyn.host_values("ListDiff", "y", y)
    if x.ndim != 1 or y.ndim != 1:
        raise_error(ValueError, f"ListDiff: x and y must be 1-D, got shapes {x.shape} and "
                                f"{y.shape}")
    if x.dtype != y.dtype:
        raise_error(TypeError, f"ListDiff: x and y must have one dtype, got {x.dtype} and "
                               f"{y.dtype}")
    kept = np.flatnonzero(~np.isin(x_values, y_values))
    return _dyn.take(x, kept), _dyn.index_tensor(kept, self.out_idx)


ListDiff = _primitive("ListDiff", {"out_idx": int32}, _list_diff,
                      "ListDiff(out_idx=int32)(x, y): (out, idx), the elements of x missing "
                      "from y and where they stand in x.")


def _unravel_index(self, indices, dims):
    """The coordinates, in a tensor of shape `dims`, of each flat index: (len(dims), N) for
    1-D indices, (len(dims),) for a 0-d one, in indices' dtype."""
    flat = _dyn.host_int_values("UnravelIndex", "indices", indices)
    shape = _dyn.host_int_values("UnravelIndex", "dims", dims, ndim=1)
    if indices.ndim > 1:
        raise_error(ValueError, f"UnravelIndex: indices must be 0-D or 1-D, got shape "
                                f"{indices.shape}")
    if indices.dtype != dims.dtype:
        raise_error(TypeError, f"UnravelIndex: indices and dims must have one dtype, got "
                               f"{indices.dtype} and {dims.dtype}")
    if shape.size == 0 or shape.min() <= 0:
        raise_error(ValueError, f"UnravelIndex: dims must be positive, got {shape.tolist()}")
    total = int(np.prod(shape))
    if flat.size and (flat.min() < 0 or flat.max() >= total):
        raise_error(ValueError, f"UnravelIndex: indices must lie in [0, {total}) for dims "
                                f"{shape.tolist()}")
    coords = np.stack(np.unravel_index(flat, tuple(int(d) for d in shape)))
    return _dyn.index_tensor(coords, indices.dtype)


UnravelIndex = _primitive("UnravelIndex", {}, _unravel_index,
                          "UnravelIndex()(indices, dims): the coordinates of flat indices "
                          "in a tensor of shape dims.")


def _range_sizes(starts, limits, deltas):
    """The length of each range start, start + delta, ... short of limit."""
    if np.any(deltas == 0):
        raise_error(ValueError, "RaggedRange: deltas must not be zero")
    if np.issubdtype(starts.dtype, np.integer):
        span = limits.astype(np.int64) - starts.astype(np.int64)
        steps = deltas.astype(np.int64)
        sizes = -(-span // steps)  # ceil(span / steps) for either sign of steps
    else:
        sizes = np.ceil((limits.astype(np.float64) - starts) / deltas)
    return np.maximum(sizes, 0).astype(np.int64)


class RaggedRange(Primitive):
    """RaggedRange(Tsplits)(starts, limits, deltas): (rt_nested_splits, rt_dense_values), the
    ranges range(starts[i], limits[i], deltas[i]) laid end to end, and the Tsplits offsets
    where each begins (one more than the ranges). Scalars broadcast against 1-D inputs."""

    def __init__(self, Tsplits):  # noqa: N803 - MindSpore's name
        if Tsplits not in (int32, int64):
            raise TypeError(f"RaggedRange: Tsplits must be int32 or int64, got {Tsplits}")
        Primitive.__init__(self, Tsplits=Tsplits)

    def __call__(self, starts, limits, deltas):
        parts = [_dyn.host_values("RaggedRange", name, t)
                 for name, t in (("starts", starts), ("limits", limits), ("deltas", deltas))]
        if len({starts.dtype, limits.dtype, deltas.dtype}) != 1:
            raise_error(TypeError, f"RaggedRange: starts, limits and deltas must have one "
                                   f"dtype, got {starts.dtype}, {limits.dtype}, {deltas.dtype}")
        if starts.dtype not in (int32, int64, float32, float64):
            raise_error(TypeError, f"RaggedRange: the dtype must be int32, int64, float32 or "
                                   f"float64, got {starts.dtype}")
        if any(p.ndim > 1 for p in parts):
            raise_error(ValueError, "RaggedRange: starts, limits and deltas must be 0-D or 1-D")
        try:
            first, limit, step = np.broadcast_arrays(*(np.atleast_1d(p) for p in parts))
        except ValueError:
            raise_error(ValueError, f"RaggedRange: the lengths of starts, limits and deltas "
                                    f"differ: {starts.shape}, {limits.shape}, {deltas.shape}")
        sizes = _range_sizes(first, limit, step)
        splits = np.concatenate(([0], np.cumsum(sizes)))
        dense = np.concatenate([first[i] + step[i] * np.arange(n, dtype=first.dtype)
                                for i, n in enumerate(sizes)] + [np.zeros(0, first.dtype)])
        return (_dyn.index_tensor(splits, self.Tsplits),
                _dyn.index_tensor(dense.astype(first.dtype), starts.dtype))


RaggedRange.__module__ = "pijit.ops"

__all__ = [
    "Bincount", "ListDiff", "MaskedSelect", "NonZero", "RaggedRange", "SegmentMax",
    "SegmentMean", "SegmentMin", "SegmentProd", "SegmentSum", "Unique", "UniqueConsecutive",
    "UniqueWithPad", "UnravelIndex",
]
