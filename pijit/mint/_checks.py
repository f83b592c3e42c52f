"""Argument checks shared by pijit.mint's modules. Errors go through pijit.numpy's
`raise_error` (a constexpr), so a bad argument raises the same TypeError or ValueError under
pijit.jit as it does eagerly."""
from pijit import _C
from pijit._numbers import plain
from pijit.numpy._utils import int_or_ints, raise_error

Tensor = _C.Tensor
FLOAT_DTYPES = (_C.dtype.f16, _C.dtype.bf16, _C.dtype.f32, _C.dtype.f64)
COMPLEX_DTYPES = (_C.dtype.c64, _C.dtype.c128)
_FLOAT32 = _C.dtype.f32
INT_DTYPES = (_C.dtype.u8, _C.dtype.i8, _C.dtype.i16, _C.dtype.i32, _C.dtype.i64, _C.dtype.u16,
              _C.dtype.u32, _C.dtype.u64)


def check_tensor(fname, name, value):
    if not isinstance(value, Tensor):
        raise_error(TypeError, f"{fname}: {name} must be a Tensor, got {type(value).__name__}")
    return value


def check_dim(fname, dim, ndim, name="dim"):
    """`dim` as a non-negative axis of a tensor of rank `ndim` (a 0-d tensor takes 0 and -1,
    as torch-style APIs allow)."""
    dim = plain(dim)
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise_error(TypeError, f"{fname}: {name} must be an int, got {type(dim).__name__}")
    rank = ndim if ndim else 1
    if not -rank <= dim < rank:
        raise_error(ValueError, f"{fname}: {name} {dim} is out of range for a tensor of rank "
                                f"{ndim} (expected [{-rank}, {rank}))")
    return dim % rank


def check_dims(fname, dims, ndim, name="dims"):
    """A tuple of distinct non-negative axes from an int or a sequence of ints."""
    dims = int_or_ints(fname, name, dims)
    out = tuple(check_dim(fname, d, ndim, name) for d in dims)
    if len(set(out)) != len(out):
        raise_error(ValueError, f"{fname}: {name} {dims} repeats an axis")
    return out


def check_bool(fname, name, value):
    if not isinstance(value, bool):
        raise_error(TypeError, f"{fname}: {name} must be a bool, got {type(value).__name__}")
    return value


def check_int(fname, name, value, low=None):
    value = plain(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise_error(TypeError, f"{fname}: {name} must be an int, got {type(value).__name__}")
    if low is not None and value < low:
        raise_error(ValueError, f"{fname}: {name} must be at least {low}, got {value}")
    return value


def check_choice(fname, name, value, choices):
    if value not in choices:
        raise_error(ValueError, f"{fname}: {name} must be one of {choices}, got {value!r}")
    return value


def is_float(t):
    return t.dtype in FLOAT_DTYPES


def as_real_float(fname, t):
    """t if floating, else t in float32; a complex t is a TypeError: the real functions
    composed here would otherwise see only its real part."""
    if t.dtype in COMPLEX_DTYPES:
        raise_error(TypeError, f"{fname}: {t.dtype} tensors are not supported")
    return t if t.dtype in FLOAT_DTYPES else t.astype(_FLOAT32)


def is_int(t):
    return t.dtype in INT_DTYPES
