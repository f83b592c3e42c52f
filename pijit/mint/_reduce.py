"""mint's reductions, torch-style: `dim` and `keepdim`, an optional `dtype` the input is cast
to first, and max/min that give (values, indices) along a dim. Built on the native
reductions, so they capture like them."""
from pijit import _C
from pijit.mint._checks import check_bool, check_dim, check_dims, check_tensor, raise_error
from pijit.numpy.reductions import cumsum as _np_cumsum

_ops = _C.ops


def _cast(x, dtype):
    return x if dtype is None or x.dtype == dtype else x.astype(dtype)


def _axes(fname, input, dim):  # noqa: A002
    """None (every axis) or a tuple of axes; an empty tuple also means every axis."""
    if dim is None:
        return None
    dims = check_dims(fname, dim, input.ndim, "dim")
    return dims if dims else None


def _reduce(fname, op, input, dim, keepdim, dtype):  # noqa: A002
    check_tensor(fname, "input", input)
    check_bool(fname, "keepdim", keepdim)
    return op(_cast(input, dtype), _axes(fname, input, dim), keepdims=keepdim)


def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001,A002 - mint's names
    """The sum over `dim` (an int or a tuple; every axis when None). Bool and integer inputs
    sum in Int64."""
    return _reduce("sum", _ops.sum, input, dim, keepdim, dtype)


def mean(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """The mean over `dim` (an int or a tuple; every axis when None)."""
    return _reduce("mean", _ops.mean, input, dim, keepdim, dtype)


def prod(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """The product over `dim` (an int; every element when None)."""
    return _reduce("prod", _ops.prod, input, dim, keepdim, dtype)


def all(input, dim=None, keepdim=False):  # noqa: A001,A002
    """True where every element over `dim` is nonzero."""
    return _reduce("all", _ops.all, input, dim, keepdim, None)


def any(input, dim=None, keepdim=False):  # noqa: A001,A002
    """True where some element over `dim` is nonzero."""
    return _reduce("any", _ops.any, input, dim, keepdim, None)


def argmax(input, dim=None, keepdim=False):  # noqa: A002
    """Int64 indices of the maxima along `dim` (the first of equal maxima), or of the
    flattened input when dim is None."""
    check_tensor("argmax", "input", input)
    check_bool("argmax", "keepdim", keepdim)
    if dim is None:
        flat = _ops.argmax(_ops.reshape(input, (-1,)), 0)
        return _ops.reshape(flat, (1,) * input.ndim) if keepdim else flat
    return _ops.argmax(input, check_dim("argmax", dim, input.ndim), keepdims=keepdim)


def _extremum(fname, reduce, arg, elementwise, input, dim, keepdim):  # noqa: A002
    check_tensor(fname, "input", input)
    if isinstance(dim, _C.Tensor):  # mint.max(input, other): the element-wise form
        return elementwise(input, dim)
    if dim is None:
        if keepdim:
            raise_error(ValueError, f"{fname}: keepdim needs a dim")
        return reduce(input)
    check_bool(fname, "keepdim", keepdim)
    axis = check_dim(fname, dim, input.ndim)
    values = reduce(input, axis, keepdims=keepdim)
    return values, arg(input, axis, keepdims=keepdim)


def max(input, dim=None, keepdim=False):  # noqa: A001,A002
    """max(input): the largest element; max(input, dim, keepdim=False): (values, Int64
    indices) along dim; max(input, other): the element-wise maximum."""
    return _extremum("max", _ops.max, _ops.argmax, _ops.maximum, input, dim, keepdim)


def min(input, dim=None, keepdim=False):  # noqa: A001,A002
    """min(input): the smallest element; min(input, dim, keepdim=False): (values, Int64
    indices) along dim; min(input, other): the element-wise minimum."""
    return _extremum("min", _ops.min, _ops.argmin, _ops.minimum, input, dim, keepdim)


def cumsum(input, dim, dtype=None):  # noqa: A002
    """Running sums along `dim`, in `dtype` when given (else the input's)."""
    check_tensor("cumsum", "input", input)
    return _np_cumsum(_cast(input, dtype), check_dim("cumsum", dim, input.ndim))
