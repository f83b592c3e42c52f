"""mint's shape and indexing functions: joining, splitting, narrowing, flipping, repeating,
gathering along a dim (torch's gather, index_select) and scatter_add. Made of pijit's
native ops (scatter_add of one_hot and a sum), so their gradients come from those ops' rules
and pijit.jit captures them."""
from pijit import _C
from pijit import _ops_composed
from pijit.mint._checks import (check_dim, check_dims, check_int, check_tensor, is_int,
                                raise_error)
from pijit.numpy.indexing import take_along_axis as _np_take_along_axis
from pijit.numpy.shapes import flip as _np_flip
from pijit.numpy.shapes import repeat as _np_repeat

_ops = _C.ops


def _tensor_list(fname, tensors):
    if not isinstance(tensors, (tuple, list)) or not tensors:
        raise_error(TypeError, f"{fname}: tensors must be a non-empty tuple or list of Tensors")
    for t in tuple(tensors):
        check_tensor(fname, "tensors", t)
    return tuple(tensors)


def cat(tensors, dim=0):
    """The tensors joined along an existing `dim`."""
    tensors = _tensor_list("cat", tensors)
    return _ops.concat(tensors, check_dim("cat", dim, tensors[0].ndim))


def stack(tensors, dim=0):
    """The tensors (of one shape) joined along a new `dim`."""
    tensors = _tensor_list("stack", tensors)
    return _ops.stack(tensors, check_dim("stack", dim, tensors[0].ndim + 1))


def split(tensor, split_size_or_sections, dim=0):
    """Pieces of `tensor` along `dim`: of split_size_or_sections elements each (the last may
    be smaller) for an int, of the listed sizes for a tuple or list."""
    check_tensor("split", "tensor", tensor)
    return _ops_composed.split(tensor, split_size_or_sections, check_dim("split", dim,
                                                                         tensor.ndim))


def narrow(input, dim, start, length):  # noqa: A002 - mint's names
    """input[..., start:start + length, ...] along `dim` (a negative start counts from the
    end)."""
    check_tensor("narrow", "input", input)
    dim = check_dim("narrow", dim, input.ndim)
    size = input.shape[dim]
    start = check_int("narrow", "start", start)
    length = check_int("narrow", "length", length, low=0)
    if not -size <= start <= size:
        raise_error(ValueError, f"narrow: start {start} is out of range for a dim of size {size}")
    start = start % size if start < 0 else start
    if start + length > size:
        raise_error(ValueError, f"narrow: start {start} + length {length} exceeds the dim's "
                                f"size {size}")
    return input[(slice(None),) * dim + (slice(start, start + length),)]


def flip(input, dims):  # noqa: A002
    """input reversed along each axis of `dims`."""
    check_tensor("flip", "input", input)
    return _np_flip(input, check_dims("flip", dims, input.ndim))


def permute(input, dims):  # noqa: A002
    """input with its axes reordered: axis i of the result is axis dims[i] of input."""
    check_tensor("permute", "input", input)
    dims = check_dims("permute", dims, input.ndim)
    if len(dims) != input.ndim:
        raise_error(ValueError, f"permute: dims {dims} must name each of the {input.ndim} axes")
    return _ops.transpose(input, dims)


def tile(input, dims):  # noqa: A002
    """input repeated dims[i] times along axis i (dims shorter than the rank repeat the last
    axes; longer ones add leading axes)."""
    check_tensor("tile", "input", input)
    return _ops_composed.tile(input, dims)


def broadcast_to(input, size):  # noqa: A002
    """input broadcast to `size` (-1 keeps an axis's size)."""
    check_tensor("broadcast_to", "input", input)
    return _ops.broadcast_to(input, tuple(size))


def repeat_interleave(input, repeats, dim=None, output_size=None):  # noqa: A002
    """Each element repeated `repeats` times along `dim` (of the flattened input when dim is
    None). repeats is an int or one count per element along dim (a tuple, list or 1-D
    Tensor, read as constants: the result's shape depends on them)."""
    check_tensor("repeat_interleave", "input", input)
    if isinstance(repeats, _C.Tensor):
        repeats = tuple(repeats.asnumpy().reshape(-1).tolist())
    if dim is not None:
        dim = check_dim("repeat_interleave", dim, input.ndim)
    out = _np_repeat(input, repeats, dim)
    if output_size is not None and out.shape[0 if dim is None else dim] != output_size:
        raise_error(ValueError, f"repeat_interleave: output_size {output_size} does not match "
                                f"the repeated size {out.shape[0 if dim is None else dim]}")
    return out


def _check_index(fname, input, dim, index):  # noqa: A002
    check_tensor(fname, "input", input)
    check_tensor(fname, "index", index)
    if not is_int(index):
        raise_error(TypeError, f"{fname}: index must be an integer Tensor, got {index.dtype}")
    if index.ndim != input.ndim:
        raise_error(ValueError, f"{fname}: index must have input's rank {input.ndim}, got "
                                f"{index.ndim}")
    dim = check_dim(fname, dim, input.ndim)
    for d in range(input.ndim):
        if d != dim and index.shape[d] > input.shape[d]:
            raise_error(ValueError, f"{fname}: index's size {index.shape[d]} on axis {d} "
                                    f"exceeds input's {input.shape[d]}")
    return dim


def _leading(x, shape, skip):
    """x cut down to shape on every axis but `skip` (torch reads only that corner)."""
    key = tuple(slice(None) if d == skip else slice(0, n) for d, n in enumerate(shape))
    return x[key]


def gather(input, dim, index):  # noqa: A002
    """out[i][j][k] = input[index[i][j][k]][j][k] for dim 0 (and likewise for other dims):
    the result has index's shape."""
    dim = _check_index("gather", input, dim, index)
    return _np_take_along_axis(_leading(input, index.shape, dim), index, dim)


def index_select(input, dim, index):  # noqa: A002
    """The slices of input at the positions of the 1-D `index` along `dim`."""
    check_tensor("index_select", "input", input)
    check_tensor("index_select", "index", index)
    if index.ndim > 1 or not is_int(index):
        raise_error(TypeError, f"index_select: index must be a 1-D integer Tensor, got "
                               f"{index.ndim}-D {index.dtype}")
    return _ops.gather(input, _ops.reshape(index, (-1,)),
                       check_dim("index_select", dim, input.ndim))


def scatter_add(input, dim, index, src):  # noqa: A002
    """input with src[i][j][k] added at input[index[i][j][k]][j][k] for dim 0 (likewise for
    other dims); repeated indices accumulate. Only the part of src that index covers is
    read. Built as a one-hot sum over index's positions along dim, so its gradient reaches
    both input and src."""
    dim = _check_index("scatter_add", input, dim, index)
    check_tensor("scatter_add", "src", src)
    for d in range(src.ndim):
        if d < index.ndim and index.shape[d] > src.shape[d]:
            raise_error(ValueError, f"scatter_add: index's size {index.shape[d]} on axis {d} "
                                    f"exceeds src's {src.shape[d]}")
    src = _leading(src, index.shape, -1).astype(input.dtype)
    size = input.shape[dim]
    hits = _ops.one_hot(index, size, 1.0, 0.0).astype(input.dtype)  # index.shape + (size,)
    # Sum src over index's positions along dim into each target row, then put the target
    # axis (last) back in dim's place.
    added = _ops.sum(hits * _ops.unsqueeze(src, -1), dim)
    order = tuple(range(dim)) + (input.ndim - 1,) + tuple(range(dim, input.ndim - 1))
    added = _ops.transpose(added, order)
    paddings = tuple((0, full - have) for full, have in zip(input.shape, added.shape))
    if any(after for _, after in paddings):
        added = _ops_composed.pad(added, paddings)
    return input + added


def matmul(input, other):  # noqa: A002
    return _ops.matmul(input, other)


def bmm(input, mat2):  # noqa: A002
    """Batched matrix product of (b, n, m) and (b, m, p) tensors."""
    check_tensor("bmm", "input", input)
    check_tensor("bmm", "mat2", mat2)
    if input.ndim != 3 or mat2.ndim != 3:
        raise_error(ValueError, f"bmm: input and mat2 must be 3-D, got {input.ndim}-D and "
                                f"{mat2.ndim}-D")
    if input.shape[0] != mat2.shape[0] or input.shape[2] != mat2.shape[1]:
        raise_error(ValueError, f"bmm: shapes {input.shape} and {mat2.shape} do not multiply")
    return _ops.matmul(input, mat2)
