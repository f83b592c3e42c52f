"""mint's nonzero and unique, whose result sizes depend on the data: they read the input on the
host (a captured graph breaks at the call, see pijit/_ops_dynamic_shape.py) and take the unique
values by a gather of host-computed positions, so the values carry gradients."""
import numpy as np

from pijit import _C
from pijit._tensor import bfloat16, float32, int64
from pijit.mint._checks import check_bool, check_dim, check_tensor, is_int, raise_error

Tensor = _C.Tensor
_ops = _C.ops


# ---- host-side helpers ---------------------------------------------------------------------------

def host_values(fname, name, t):
    """t's values as a NumPy array (BFloat16 widened to Float32, which holds it exactly)."""
    check_tensor(fname, name, t)
    return (t.astype(float32) if t.dtype == bfloat16 else t).asnumpy()


def host_int_values(fname, name, t, ndim=None):
    """The values of an integer Tensor of rank `ndim` (any rank when None)."""
    values = host_values(fname, name, t)
    if not is_int(t):
        raise_error(TypeError, f"{fname}: {name} must be an integer Tensor, got {t.dtype}")
    if ndim is not None and t.ndim != ndim:
        raise_error(ValueError, f"{fname}: {name} must be {ndim}-D, got shape {t.shape}")
    return values


def index_tensor(array, dtype=int64):
    """A Tensor of the host-computed indices `array`, in `dtype`."""
    return Tensor(np.ascontiguousarray(np.asarray(array), dtype=dtype.to_numpy()))


def take(x, positions, axis=0):
    """x's slices at the host-computed `positions` along `axis`: a differentiable gather."""
    return _ops.gather(x, index_tensor(np.asarray(positions, dtype=np.int64).reshape(-1)), axis)


def flat_view(x):
    """x as 1-D, in row-major order."""
    return _ops.reshape(x, (-1,))


def renumber_by_first_appearance(first, inverse):
    """(first, inverse, order) with the distinct values renumbered in the order they first
    appear (np.unique numbers them ascending): order[k] is the ascending number of the k-th."""
    order = np.argsort(first, kind="stable")
    renumber = np.empty_like(order)
    renumber[order] = np.arange(order.size)
    return first[order], renumber[inverse.reshape(-1)], order


def first_occurrence_groups(flat_values):
    """(first, inverse) of the distinct values of 1-D `flat_values`, numbered in the order they
    first appear: first[k] is where value k first occurs, inverse[i] the number of element i.
    This is MindSpore's CPU order for Unique and UniqueWithPad."""
    _, first, inverse = np.unique(flat_values, return_index=True, return_inverse=True)
    return renumber_by_first_appearance(first, inverse)[:2]


def nonzero_coordinates(fname, input):  # noqa: A002 - MindSpore's name
    """The (N, ndim) host array of the coordinates of input's non-zero elements."""
    check_tensor(fname, "input", input)
    if input.ndim == 0:
        raise_error(ValueError, f"{fname}: input must have rank 1 or more, got a 0-d Tensor")
    return np.argwhere(host_values(fname, "input", input))


# ---- mint's functions ----------------------------------------------------------------------------

def nonzero(input, *, as_tuple=False):  # noqa: A002 - mint's names
    """The Int64 coordinates of input's non-zero elements in row-major order: an (N, ndim)
    Tensor, or with as_tuple a tuple of ndim 1-D Tensors, one per axis."""
    hits = nonzero_coordinates("nonzero", input)
    check_bool("nonzero", "as_tuple", as_tuple)
    if as_tuple:
        return tuple(index_tensor(hits[:, axis]) for axis in range(input.ndim))
    return index_tensor(hits)


def _distinct(values, sorted, dim):  # noqa: A002
    """(first, inverse, counts) of the distinct elements of `values` (of its slices along
    `dim`), ascending, or in the order they first appear when not `sorted`."""
    rows = values.reshape(-1) if dim is None else \
        np.moveaxis(values, dim, 0).reshape(values.shape[dim], -1)
    _, first, inverse, counts = np.unique(rows, axis=None if dim is None else 0,
                                          return_index=True, return_inverse=True,
                                          return_counts=True)
    if sorted:
        return first, inverse.reshape(-1), counts
    first, inverse, order = renumber_by_first_appearance(first, inverse)
    return first, inverse, counts[order]


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """input's distinct elements (with `dim`, its distinct slices along dim), ascending unless
    `sorted` is False (then in the order they first appear); with return_inverse also the Int64
    position in the output of each element (input's shape; input.shape[dim] with dim), with
    return_counts the Int64 number of times each occurs."""
    check_tensor("unique", "input", input)
    for name, flag in (("sorted", sorted), ("return_inverse", return_inverse),
                       ("return_counts", return_counts)):
        check_bool("unique", name, flag)
    if dim is not None:
        dim = check_dim("unique", dim, input.ndim)
        if input.ndim == 0:
            dim = None
    values = host_values("unique", "input", input)
    first, inverse, counts = _distinct(values, sorted, dim)
    if dim is None:
        output = take(flat_view(input), first)
        inverse = np.reshape(inverse, input.shape)
    else:
        output = take(input, first, dim)
    extra = ((index_tensor(inverse),) * return_inverse
             + (index_tensor(counts),) * return_counts)
    return (output,) + extra if extra else output
