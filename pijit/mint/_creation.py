"""mint's creation functions, torch-style: sizes given as a tuple or as separate ints, Float32
by default, and random draws from pijit's global generator (pijit.set_seed)."""
from pijit import _C
from pijit._tensor import float32
from pijit._numbers import plain
from pijit.mint._checks import check_int, check_tensor, raise_error

_ops = _C.ops


def _size(fname, size):
    """A tuple of non-negative ints from (n, m, ...) or ((n, m, ...),)."""
    size = plain(size)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(plain(size[0]))
    for n in size:
        check_int(fname, "size", n, low=0)
    return tuple(size)


def _no_generator(fname, generator):
    # pijit draws from its one global generator; a separate generator object has no
    # counterpart, and ignoring it would silently change which numbers come out.
    if generator is not None:
        raise_error(ValueError, f"{fname}: generator objects are not supported; seed the "
                                f"global generator with pijit.set_seed")


def arange(start=0, end=None, step=1, *, dtype=None):
    """start, start + step, ... below end (arange(n): 0 .. n - 1). Int64 for ints, Float32
    when any bound is a float."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise_error(ValueError, "arange: step must not be 0")
    return _ops.arange(start, end, step, dtype=dtype)


def eye(n, m=None, dtype=None):
    """The n x m (n x n) identity matrix, Float32 by default."""
    n = check_int("eye", "n", n, low=0)
    m = n if m is None else check_int("eye", "m", m, low=0)
    return _ops.eye(n, m, dtype=float32 if dtype is None else dtype)


def zeros(*size, dtype=None):
    return _ops.zeros(_size("zeros", size), dtype=float32 if dtype is None else dtype)


def ones(*size, dtype=None):
    return _ops.ones(_size("ones", size), dtype=float32 if dtype is None else dtype)


def zeros_like(input, *, dtype=None):  # noqa: A002 - mint's names
    check_tensor("zeros_like", "input", input)
    return _ops.zeros_like(input, dtype=dtype or input.dtype)


def ones_like(input, *, dtype=None):  # noqa: A002
    check_tensor("ones_like", "input", input)
    return _ops.ones_like(input, dtype=dtype or input.dtype)


def rand(*size, generator=None, dtype=None):
    """Uniform samples from [0, 1), Float32 by default."""
    _no_generator("rand", generator)
    return _ops.rand(_size("rand", size), dtype=float32 if dtype is None else dtype)


def rand_like(input, *, dtype=None):  # noqa: A002
    check_tensor("rand_like", "input", input)
    return _ops.rand(input.shape, dtype=dtype or input.dtype)


def normal(mean=0.0, std=1.0, size=None, generator=None):
    """Normal samples: of the broadcast shape of `mean` and `std` when either is a Tensor,
    else of `size`."""
    _no_generator("normal", generator)
    tensors = [t for t in (mean, std) if isinstance(t, _C.Tensor)]
    if not tensors:
        if size is None:
            raise_error(ValueError, "normal: size is needed when mean and std are numbers")
        return _ops.normal(_size("normal", (size,)), float(mean), float(std))
    if size is not None:
        raise_error(ValueError, "normal: size must be None when mean or std is a Tensor")
    if isinstance(std, (int, float)) and std < 0:
        raise_error(ValueError, f"normal: std must be non-negative, got {std}")
    shape = (mean + std * 0.0).shape if isinstance(mean, _C.Tensor) else std.shape
    dtype = tensors[0].dtype
    return mean + std * _ops.randn(shape, dtype=dtype)
