"""mint's ordering functions: sort, topk and searchsorted, made of comparisons and sums of
native ops rather than a sorting kernel, so pijit.jit captures them into one graph and the
sorted values carry gradients (through a gather). Sorting compares every pair along the
sorted dim: memory and time grow with the square of its size, which suits the short rows
(class scores, beams, top-k of a layer) these functions meet in models."""
from pijit import _C
from pijit._tensor import int32, int64
from pijit._ops_composed import isnan
from pijit.mint._checks import (check_bool, check_dim, check_int, check_tensor, is_int,
                                raise_error)
from pijit.numpy.indexing import take_along_axis as _np_take_along_axis

_ops = _C.ops


def _ordered_before(a, b):
    """a sorts before b in ascending order, NaN last (after +inf)."""
    return _ops.logical_or(_ops.less(a, b), _ops.logical_and(isnan(b), _ops.logical_not(isnan(a))))


def _ties(a, b):
    return _ops.logical_or(_ops.equal(a, b), _ops.logical_and(isnan(a), isnan(b)))


def _sort_last(x, descending):
    """(values, Int64 indices) of x sorted along its last axis, ties in input order."""
    n = x.shape[-1]
    item = _ops.unsqueeze(x, -1)    # (..., n, 1): the element whose rank is counted
    other = _ops.unsqueeze(x, -2)   # (..., 1, n): the elements it is compared with
    before = _ordered_before(item, other) if descending else _ordered_before(other, item)
    # Earlier equal elements stay earlier (a stable sort): j < i counts for element i.
    earlier = _ops.less(_ops.unsqueeze(_ops.arange(n), 0), _ops.unsqueeze(_ops.arange(n), 1))
    rank = _ops.sum(_ops.logical_or(before, _ops.logical_and(_ties(item, other), earlier)),
                    -1)             # (..., n): where each element goes
    # indices[r] = the i whose rank is r: the one-hot of rank weighted by position.
    lands = _ops.equal(_ops.unsqueeze(rank, -2), _ops.unsqueeze(_ops.arange(n), -1))
    indices = _ops.sum(_ops.where(lands, _ops.arange(n), 0), -1)
    return _np_take_along_axis(x, indices, -1), indices


def sort(input, dim=-1, descending=False, stable=False):  # noqa: A002 - mint's names
    """(values, Int64 indices) of input sorted along `dim`, ascending unless `descending`.
    NaN sorts above +inf. Equal elements keep their order (every sort here is stable)."""
    check_tensor("sort", "input", input)
    check_bool("sort", "descending", descending)
    check_bool("sort", "stable", stable)
    if input.ndim == 0:
        return input, _ops.zeros((), dtype=int64)
    dim = check_dim("sort", dim, input.ndim)
    moved = _ops.transpose(input, _move_last(dim, input.ndim)) if dim != input.ndim - 1 \
        else input
    values, indices = _sort_last(moved, descending)
    if dim != input.ndim - 1:
        back = _move_back(dim, input.ndim)
        values, indices = _ops.transpose(values, back), _ops.transpose(indices, back)
    return values, indices


def _move_last(dim, ndim):
    return tuple(d for d in range(ndim) if d != dim) + (dim,)


def _move_back(dim, ndim):
    return tuple(range(dim)) + (ndim - 1,) + tuple(range(dim, ndim - 1))


def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A001,A002
    """(values, Int64 indices) of the k largest (or smallest) elements along `dim`, in
    sorted order (sorted=False allows any order; this order is one of them)."""
    check_tensor("topk", "input", input)
    check_bool("topk", "largest", largest)
    check_bool("topk", "sorted", sorted)
    dim = check_dim("topk", dim, input.ndim)
    size = input.shape[dim] if input.ndim else 1
    k = check_int("topk", "k", k, low=0)
    if k > size:
        raise_error(ValueError, f"topk: k {k} exceeds the size {size} of dim {dim}")
    values, indices = sort(input, dim, descending=largest)
    if input.ndim == 0:
        return values, indices
    key = (slice(None),) * dim + (slice(0, k),)
    return values[key], indices[key]


def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """For each of `values`, the index in the last axis of `sorted_sequence` where it would
    be inserted to keep the order: before equal elements (left) or after them (right=True or
    side='right'). sorted_sequence is 1-D, or has values' leading axes. Int64 (Int32 with
    out_int32). `sorter` gives the indices that sort an unsorted sequence."""
    check_tensor("searchsorted", "sorted_sequence", sorted_sequence)
    if not isinstance(values, _C.Tensor):
        values = _C.Tensor(values).astype(sorted_sequence.dtype)
    check_bool("searchsorted", "right", right)
    check_bool("searchsorted", "out_int32", out_int32)
    if side not in (None, "left", "right"):
        raise_error(ValueError, f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if side == "left" and right:
        raise_error(ValueError, "searchsorted: side='left' contradicts right=True")
    right = right or side == "right"
    seq = sorted_sequence
    if sorter is not None:
        check_tensor("searchsorted", "sorter", sorter)
        if sorter.shape != seq.shape or not is_int(sorter):
            raise_error(ValueError, "searchsorted: sorter must be integer indices of "
                                    "sorted_sequence's shape")
        seq = _np_take_along_axis(seq, sorter, -1)
    if seq.ndim > 1 and (values.ndim != seq.ndim or values.shape[:-1] != seq.shape[:-1]):
        raise_error(ValueError, f"searchsorted: sorted_sequence {seq.shape} and values "
                                f"{values.shape} must share their leading axes")
    probe = _ops.unsqueeze(values, -1)                        # (..., K, 1)
    row = _ops.unsqueeze(seq, -2) if seq.ndim > 1 else seq    # (..., 1, M) or (M,)
    below = _ops.less_equal(row, probe) if right else _ops.less(row, probe)
    count = _ops.sum(below, -1)
    return count.astype(int32) if out_int32 else count.astype(int64)
