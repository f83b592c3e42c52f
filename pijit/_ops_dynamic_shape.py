"""Ops whose result size depends on the values of their inputs (nonzero, unique, masked_select,
bincount, ...) and their primitives. They read their inputs on the host, so a captured graph
breaks where one is called and resumes after it.

Only positions and counts are computed on the host. Wherever MindSpore differentiates the
result (masked_select, the values of unique and unique_consecutive, bincount's weights), the
values are then taken from the input by a gather of those positions, so gradients flow back
through pijit's own ops."""
import numpy as np

from pijit import _C
from pijit._tensor import bool_, float32, int32, int64
from pijit.mint._checks import check_bool, check_dim, check_int, check_tensor, raise_error
from pijit.mint import _dynamic_shape as _mint_dynamic
from pijit.mint._dynamic_shape import (first_occurrence_groups, flat_view, host_int_values,
                                       host_values, index_tensor, nonzero_coordinates, take)

_ops = _C.ops


# ---- positions -----------------------------------------------------------------------------------

def nonzero(input, as_tuple=False):  # noqa: A002 - MindSpore's name
    """The Int64 coordinates of input's non-zero elements in row-major order: an (N, ndim)
    Tensor, or with as_tuple a tuple of ndim 1-D Tensors, one per axis."""
    return _mint_dynamic.nonzero(input, as_tuple=as_tuple)


def argwhere(input):  # noqa: A002
    """The (N, ndim) Int64 coordinates of input's non-zero elements, in row-major order."""
    return index_tensor(nonzero_coordinates("argwhere", input))


def masked_select(input, mask):  # noqa: A002
    """The 1-D Tensor of input's elements where the Bool `mask` holds (the two broadcast
    together), in row-major order. Differentiable with respect to input."""
    check_tensor("masked_select", "input", input)
    check_tensor("masked_select", "mask", mask)
    if mask.dtype != bool_:
        raise_error(TypeError, f"masked_select: mask must be a Bool Tensor, got {mask.dtype}")
    try:
        shape = tuple(np.broadcast_shapes(tuple(input.shape), tuple(mask.shape)))
    except ValueError:
        raise_error(ValueError, f"masked_select: input's shape {input.shape} and mask's shape "
                                f"{mask.shape} do not broadcast")
    if tuple(input.shape) != shape:
        input = _ops.broadcast_to(input, shape)
    picked = np.flatnonzero(np.broadcast_to(host_values("masked_select", "mask", mask), shape))
    return take(flat_view(input), picked)


# ---- distinct values -----------------------------------------------------------------------------

def unique(input):  # noqa: A002
    """(y, idx): input's distinct values in the order they first appear (MindSpore's CPU
    order), and for each element of input the position of its value in y (input's shape;
    Int64 for an Int64 input, else Int32). y's gradient reaches each value's first
    occurrence."""
    values = host_values("unique", "input", input).reshape(-1)
    first, inverse = first_occurrence_groups(values)
    idx_dtype = int64 if input.dtype == int64 else int32
    idx = _ops.reshape(index_tensor(inverse, idx_dtype), input.shape)
    return take(flat_view(input), first), idx


def _consecutive_runs(fname, input, axis):  # noqa: A002
    """(starts, group) of the runs of equal consecutive elements (axis None: of the
    flattened input) or of equal consecutive slices along `axis`."""
    values = host_values(fname, "input", input)
    if axis is None:
        rows = values.reshape(-1, 1)
    else:
        rows = np.moveaxis(values, axis, 0).reshape(values.shape[axis], -1)
    changed = np.any(rows[1:] != rows[:-1], axis=1)
    group = np.concatenate(([0], np.cumsum(changed))).astype(np.int64)[:rows.shape[0]]
    starts = np.flatnonzero(np.concatenate(([True], changed)))[:rows.shape[0]]
    return starts, group


def unique_consecutive_parts(input, axis, fname="unique_consecutive"):  # noqa: A002
    """(output, idx, counts) of unique_consecutive, every part computed."""
    check_tensor(fname, "input", input)
    if axis is not None:
        axis = check_dim(fname, axis, input.ndim, "axis")
        if input.ndim == 0:
            raise_error(ValueError, f"{fname}: axis must be None for a 0-d input")
    starts, group = _consecutive_runs(fname, input, axis)
    counts = np.diff(np.concatenate((starts, [group.size]))).astype(np.int64)
    if axis is None:
        return (take(flat_view(input), starts), _ops.reshape(index_tensor(group), input.shape),
                index_tensor(counts))
    return take(input, starts, axis), index_tensor(group), index_tensor(counts)


def unique_consecutive(input, return_idx=False, return_counts=False, axis=None):  # noqa: A002
    """input with each run of equal consecutive elements (or, along `axis`, of equal
    consecutive slices) kept once; with return_idx also the Int64 run number of every element
    (of every slice along axis), with return_counts the Int64 length of every run."""
    check_bool("unique_consecutive", "return_idx", return_idx)
    check_bool("unique_consecutive", "return_counts", return_counts)
    output, idx, counts = unique_consecutive_parts(input, axis)
    extra = (idx,) * return_idx + (counts,) * return_counts
    return (output,) + extra if extra else output


def unique_with_pad(x, pad_num):
    """(y, idx) of unique for a 1-D Int32 or Int64 x, y padded with pad_num to x's length
    (both in x's dtype)."""
    check_tensor("unique_with_pad", "x", x)
    if x.dtype not in (int32, int64):
        raise_error(TypeError, f"unique_with_pad: x must be an Int32 or Int64 Tensor, got "
                               f"{x.dtype}")
    values = host_int_values("unique_with_pad", "x", x, ndim=1)
    pad_num = check_int("unique_with_pad", "pad_num", pad_num)
    first, inverse = first_occurrence_groups(values)
    padded = np.full(values.shape, pad_num, dtype=values.dtype)
    padded[:first.size] = values[first]
    return index_tensor(padded, x.dtype), index_tensor(inverse, x.dtype)


# ---- counting ------------------------------------------------------------------------------------

def check_bin_weights(fname, weights, count):
    check_tensor(fname, "weights", weights)
    if tuple(weights.shape) != (count,):
        raise_error(ValueError, f"{fname}: weights must have the shape ({count},) of the "
                                f"input, got {weights.shape}")
    return weights


def weighted_bins(bins, weights, length):
    """out[b] = the sum of weights[i] with bins[i] == b, for b < length: differentiable with
    respect to weights (a (length, N) comparison table, so memory grows with both)."""
    hits = _ops.equal(_ops.unsqueeze(_ops.arange(length, dtype=int64), 1),
                      _ops.unsqueeze(index_tensor(bins), 0))
    return _ops.sum(_ops.where(hits, _ops.unsqueeze(weights, 0),
                               _ops.zeros((), dtype=weights.dtype)), 1)


def bincount(input, weights=None, minlength=0):  # noqa: A002
    """How often each value 0 .. max(input) occurs in the 1-D non-negative integer input, as
    Float32 (summing `weights` instead of ones when given, in weights' dtype); at least
    `minlength` bins."""
    values = host_int_values("bincount", "input", input, ndim=1)
    minlength = check_int("bincount", "minlength", minlength, low=0)
    if values.size and values.min() < 0:
        raise_error(ValueError, f"bincount: input must be non-negative, got {values.min()}")
    length = max(int(values.max()) + 1 if values.size else 0, minlength)
    if weights is None:
        return index_tensor(np.bincount(values, minlength=length), float32)
    check_bin_weights("bincount", weights, values.size)
    return weighted_bins(values, weights, length)


from pijit._ops_dynamic_shape_more import *  # noqa: E402,F401,F403 - the primitives
from pijit._ops_dynamic_shape_more import __all__ as _primitive_names  # noqa: E402

__all__ = [
    "argwhere", "bincount", "masked_select", "nonzero", "unique", "unique_consecutive",
    "unique_with_pad",
] + _primitive_names
