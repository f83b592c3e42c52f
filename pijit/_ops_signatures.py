"""MindSpore 2.x argument forms of functions whose native builtin takes a narrower form:
Tensor scalars where the builtin wants Python numbers (one_hot, full, arange, linspace),
keywords the builtin lacks (gelu's approximate, div's rounding_mode, flatten's order),
MindSpore's defaults (flatten keeps axis 0), return forms (max and min give values and
indices) and argument shapes (pad's flat torch-style padding, clip_by_value over a list, bmm
over several batch axes, a 3-D input of adaptive_avg_pool2d). The common form goes straight
to the builtin; the rest is composed of pijit ops.

The hottest builtins (sum, softmax, reshape, transpose, where, ...) stay unwrapped: a Python
wrapper adds guards to every captured graph that calls it."""
import math

from pijit import _C
from pijit import _ops_array_extra
from pijit import _ops_composed
from pijit._ops_nd import tensor_scatter_elements
from pijit._ops_resize import adaptive_avg_pool2d as _adaptive_avg_pool2d_4d
from pijit.mint import _elementwise
from pijit.mint import _shape as _mint_shape
from pijit.mint import _sort as _mint_sort
from pijit.mint._checks import check_bool, check_choice, check_tensor, raise_error
from pijit.mint.nn import functional as _mint_functional

_native = _C.ops
Tensor = _C.Tensor
# Module constants: captured code reads these plainly (dtype's attributes are computed).
_INT32 = _C.dtype.i32
_INT64 = _C.dtype.i64

__all__ = ["one_hot", "flatten", "bmm", "gelu", "full", "arange", "linspace", "pad",
           "clip_by_value", "adaptive_avg_pool2d", "sort", "scatter", "std_mean", "var_mean",
           "div", "max", "min", "size", "gather_d"]


def _scalar(fname, name, value):
    """A 0-d (or one-element) Tensor argument as a Python number; numbers pass through. A
    Tensor here is read on the host, which stops a captured graph at this call."""
    if isinstance(value, Tensor):
        if value.size != 1:
            raise_error(ValueError, f"{fname}: {name} must be a scalar Tensor (shape ()), got "
                                    f"shape {tuple(value.shape)}")
        return value.reshape(()).item()
    return value


def _argument(args, kwargs, position, names, default=None):
    """The argument at `position` or under one of `names` (the builtin's keyword aliases)."""
    if len(args) > position:
        return args[position]
    for name in names:
        if name in kwargs:
            return kwargs[name]
    return default


def one_hot(*args, **kwargs):
    """One-hot encoding: (indices, depth, on_value=1, off_value=0, axis=-1, dtype=None).
    on_value and off_value may be Python numbers or scalar Tensors; with Tensors the output
    takes on_value's dtype (or dtype), as in MindSpore."""
    on_value = _argument(args, kwargs, 2, ("on_value",), 1)
    off_value = _argument(args, kwargs, 3, ("off_value",), 0)
    if not isinstance(on_value, Tensor) and not isinstance(off_value, Tensor):
        return _native.one_hot(*args, **kwargs)
    check_tensor("one_hot", "on_value", on_value)
    for name, value in (("on_value", on_value), ("off_value", off_value)):
        if isinstance(value, Tensor) and value.size != 1:
            raise_error(ValueError, f"one_hot: {name} must be a scalar Tensor (shape ()), got "
                                    f"shape {tuple(value.shape)}")
    indices = _argument(args, kwargs, 0, ("indices", "input"))
    depth = _argument(args, kwargs, 1, ("depth", "num_classes"))
    axis = _argument(args, kwargs, 4, ("axis",), -1)
    dtype = _argument(args, kwargs, 5, ("dtype",)) or on_value.dtype
    hot = _native.equal(_native.one_hot(indices, depth, 1, 0, axis), 1)
    off = off_value.reshape(()).astype(dtype) if isinstance(off_value, Tensor) else off_value
    return _native.where(hot, on_value.reshape(()).astype(dtype), off).astype(dtype)


def flatten(input, order="C", *dims, start_dim=1, end_dim=-1):  # noqa: A002 - MindSpore's
    """Axes start_dim..end_dim merged into one; axis 0 is kept by default, as MindSpore's
    ops.flatten does. order 'F' flattens in column-major order (the axes reversed first).
    Ints in place of `order` are start_dim and end_dim (pijit's positional form)."""
    if not isinstance(order, str):
        order, (start_dim, end_dim) = "C", ((order,) + dims + (end_dim,))[:2]
    elif dims:
        raise TypeError(f"flatten: start_dim and end_dim are keyword arguments after order, "
                        f"got {dims!r}")
    if order not in ("C", "F"):
        raise ValueError(f"flatten: order must be 'C' or 'F', got {order!r}")
    if order == "F" and input.ndim > 1:
        input = _native.transpose(input, tuple(range(input.ndim - 1, -1, -1)))  # noqa: A001
    if input.ndim == 0:
        return input.reshape((1,))
    return _native.flatten(input, start_dim=start_dim, end_dim=end_dim)


def bmm(input_x, mat2):
    """Batched matrix product of (*B, N, C) and (*B, C, M) tensors with the same batch axes."""
    check_tensor("bmm", "input_x", input_x)
    check_tensor("bmm", "mat2", mat2)
    if input_x.ndim < 3 or input_x.ndim != mat2.ndim:
        raise_error(ValueError, f"bmm: input_x and mat2 must have the same rank of at least 3, "
                                f"got shapes {tuple(input_x.shape)} and {tuple(mat2.shape)}")
    if input_x.shape[:-2] != mat2.shape[:-2] or input_x.shape[-1] != mat2.shape[-2]:
        raise_error(ValueError, f"bmm: shapes {tuple(input_x.shape)} and "
                                f"{tuple(mat2.shape)} do not multiply as batches of matrices")
    return _native.matmul(input_x, mat2)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(*args, approximate="none", **kwargs):
    """x * Phi(x): (input, approximate='none'), the erf form, or its tanh approximation
    ('tanh')."""
    if len(args) > 1:
        args, approximate = args[:1], args[1]
    if approximate == "none":
        return _native.gelu(*args, **kwargs)
    if approximate != "tanh":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    x = _argument(args, kwargs, 0, ("input", "x"))
    inner = _SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + _native.tanh(inner))


def full(*args, **kwargs):
    """(size, fill_value, *, dtype=None): a tensor of shape size filled with fill_value, a
    number or a scalar Tensor (whose dtype the result takes unless dtype is given)."""
    fill_value = _argument(args, kwargs, 1, ("fill_value",))
    if not isinstance(fill_value, Tensor):
        return _native.full(*args, **kwargs)
    if fill_value.size != 1:
        raise_error(ValueError, f"full: fill_value must be a scalar Tensor (shape ()), got "
                                f"shape {tuple(fill_value.shape)}")
    size = _argument(args, kwargs, 0, ("size", "shape"))
    dtype = _argument(args, kwargs, 2, ("dtype",)) or fill_value.dtype
    value = fill_value.reshape(()).astype(dtype)
    return _native.where(_native.full(tuple(size), True), value, value)


def _numbers(fname, args, kwargs):
    """args and kwargs with scalar Tensors read as Python numbers (dtype left as it is)."""
    args = tuple(_scalar(fname, f"argument {i}", v) for i, v in enumerate(args))
    kwargs = {k: (v if k == "dtype" else _scalar(fname, k, v)) for k, v in kwargs.items()}
    return args, kwargs


def arange(*args, **kwargs):
    """(start=0, end=None, step=1, *, dtype=None): [start, end) by step; each bound may be a
    number or a scalar Tensor (read as a number: the result is Int64 when all are integers,
    else Float32, unless dtype is given)."""
    args, kwargs = _numbers("arange", args, kwargs)
    return _native.arange(*args, **kwargs)


def linspace(*args, **kwargs):
    """(start, end, steps): steps evenly spaced Float32 values from start to end, which may
    be scalar Tensors."""
    args, kwargs = _numbers("linspace", args, kwargs)
    return _native.linspace(*args, **kwargs)


_TORCH_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input_x, padding=None, mode="constant", value=None, *, paddings=None):
    """MindSpore 2.x form: padding = (last axis before, last axis after, second-to-last
    before, ...) with mode 'constant', 'reflect', 'replicate' or 'circular'. The per-axis
    pairs form ((before, after) for every axis, modes 'CONSTANT', 'REFLECT', 'SYMMETRIC') of
    ops.Pad and MirrorPad is accepted as well, also under its keyword `paddings`."""
    padding = paddings if padding is None else padding
    if isinstance(padding, Tensor):
        padding = tuple(int(v) for v in padding.asnumpy().reshape(-1))
    if len(padding) and isinstance(padding[0], (tuple, list)):
        return _ops_composed.pad(input_x, padding, mode.upper(),
                                 0.0 if value is None else value)
    check_choice("pad", "mode", mode, _TORCH_PAD_MODES)
    return _mint_functional.pad(input_x, padding, mode, value if mode == "constant" else None)


def clip_by_value(x, clip_value_min=None, clip_value_max=None):
    """x (a Tensor, or a list or tuple of them) clipped to [clip_value_min, clip_value_max]."""
    if isinstance(x, (list, tuple)):
        return type(x)(_native.clip(t, clip_value_min, clip_value_max) for t in x)
    return _native.clip(x, clip_value_min, clip_value_max)


def adaptive_avg_pool2d(input, output_size):  # noqa: A002 - MindSpore's name
    """Adaptive average pooling of (N, C, H, W) or (C, H, W) data."""
    check_tensor("adaptive_avg_pool2d", "input", input)
    if input.ndim not in (3, 4):
        raise_error(ValueError, f"adaptive_avg_pool2d: expects a 3-D (C, H, W) or 4-D "
                                f"(N, C, H, W) input, got shape {tuple(input.shape)}")
    if input.ndim == 3:
        batched = _adaptive_avg_pool2d_4d(_native.expand_dims(input, 0), output_size)
        return _native.squeeze(batched, 0)
    return _adaptive_avg_pool2d_4d(input, output_size)


def sort(input_x, axis=-1, descending=False):
    """(values, Int32 indices) of input_x sorted along axis (stable; NaN sorts last)."""
    check_tensor("sort", "input_x", input_x)
    check_bool("sort", "descending", descending)
    values, indices = _mint_sort.sort(input_x, axis, descending)
    return values, indices.astype(_INT32)


def scatter(input, axis, index, src):  # noqa: A002 - MindSpore's names
    """A copy of input with src written at index along axis (input[index[i][j]][j] = src[i][j]
    for axis 0)."""
    return tensor_scatter_elements(input, index, src, axis)


def std_mean(input, axis=None, ddof=0, keepdims=False):  # noqa: A002
    """(standard deviation, mean) of input over axis, with ddof subtracted from the count."""
    return (_native.std(input, axis, ddof, keepdims), _native.mean(input, axis, keepdims))


def div(*args, rounding_mode=None, **kwargs):
    """(input, other, *, rounding_mode=None): true division, or rounded toward zero ('trunc')
    or down ('floor')."""
    if rounding_mode is None:
        return _native.div(*args, **kwargs)
    return _elementwise.div(*args, rounding_mode=rounding_mode, **kwargs)


def _extreme_with_index(fname, reduce, arg, x, axis, keepdims, initial, where):
    """(values, Int64 indices) of the maxima or minima along an int axis. With axis None the
    values are over every element and the index is 0, as MindSpore documents. `where` (a
    bool mask, False where initial stands in) needs `initial`, which also bounds the result."""
    check_tensor(fname, "input", x)
    check_bool(fname, "keepdims", keepdims)
    if where is not None:
        if initial is None:
            raise ValueError(f"{fname}: where needs an initial value for the masked elements")
        x = _native.where(where, x, initial)
    if axis is None:
        values = reduce(x)
        indices = _native.zeros((), dtype=_INT64)
    else:
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise TypeError(f"{fname}: axis must be an int or None, got {type(axis).__name__}")
        values = reduce(x, axis, keepdims=keepdims)
        indices = arg(x, axis, keepdims)
    if initial is not None:
        bound = _native.maximum if reduce is _native.max else _native.minimum
        values = bound(values, initial)
    return values, indices


def max(input, axis=None, keepdims=False, *, initial=None, where=None):  # noqa: A001,A002
    """(maxima, their Int64 indices) along axis; see _extreme_with_index. ops.amax and
    ReduceMax give the values alone."""
    return _extreme_with_index("max", _native.max, _native.argmax, input, axis, keepdims,
                               initial, where)


def min(input, axis=None, keepdims=False, *, initial=None, where=None):  # noqa: A001,A002
    """(minima, their Int64 indices) along axis; see _extreme_with_index. ops.amin and
    ReduceMin give the values alone."""
    return _extreme_with_index("min", _native.min, _native.argmin, input, axis, keepdims,
                               initial, where)


def var_mean(input, axis=None, ddof=0, keepdims=False):  # noqa: A002
    """(variance, mean) of input over axis, with ddof subtracted from the count."""
    return (_native.var(input, axis, ddof, keepdims), _native.mean(input, axis, keepdims))


# MindSpore's keyword names for functions that take these arguments positionally only.

def _positional(fname, args, kwargs, names):
    """args extended by the keyword arguments named in `names` (one tuple of accepted
    spellings per position after those given), in order."""
    if not kwargs:
        return args
    args = list(args)
    for spellings in names[len(args):]:
        given = [n for n in spellings if n in kwargs]
        if not given:
            break
        args.append(kwargs.pop(given[0]))
    if kwargs:
        raise TypeError(f"{fname}() got an unexpected keyword argument {next(iter(kwargs))!r}")
    return tuple(args)


_INPUT = ("input", "x", "input_x")


def size(*args, **kwargs):
    """(input_x): the number of elements, an int."""
    return _ops_array_extra.numel(*_positional("size", args, kwargs, (_INPUT,)))


def gather_d(*args, **kwargs):
    """(x, dim, index): the elements of x at index along dim."""
    return _mint_shape.gather(*_positional("gather_d", args, kwargs,
                                           (_INPUT, ("dim",), ("index",))))


