"""Array creation in mindspore.numpy's names and signatures: tensors from data, filled
tensors, ranges, grids, triangles and diagonals, windows and random draws. Index patterns
and constant ranges are computed with NumPy by constexpr helpers, so they become constants
of a captured graph; data from tensors moves through gather, where and concat, whose
gradients are the native ops' rules.

Dtypes follow MindSpore: Python ints give Int32 and Python floats Float32 (NumPy: Int64 and
Float64), and zeros/ones/empty/eye/linspace default to Float32."""
import numpy as onp

from pijit._tensor import bool_, float32, float64, int32
from pijit.numpy._utils import (Tensor, broadcast_shapes, cast_to, check_axis, check_dtype,
                                check_int, check_shape, is_float, is_number, native,
                                number_dtype, plain, raise_error, to_tensor)
from pijit.numpy.reductions import sum as _sum
from pijit.ops import constexpr


# ---- from data -----------------------------------------------------------------------------------

def array(obj, dtype=None, copy=True, ndmin=0):
    """A tensor of `obj` (a Tensor, number, nested list or tuple, or NumPy array), of `dtype`
    when given, with at least `ndmin` axes (ones are prepended)."""
    fname = "array"
    dtype = None if dtype is None else check_dtype(fname, dtype)
    ndmin = check_int(fname, "ndmin", ndmin)
    is_input = isinstance(obj, Tensor)
    out = to_tensor(fname, obj, dtype)
    if out.ndim < ndmin:
        out = native.reshape(out, (1,) * (ndmin - out.ndim) + tuple(out.shape))
    if copy and is_input:
        out = _copied(out)
    return out


def asarray(a, dtype=None):
    """`a` as a tensor (itself when it is one of `dtype` already)."""
    dtype = None if dtype is None else check_dtype("asarray", dtype)
    return to_tensor("asarray", a, dtype)


def asfarray(a, dtype=float32):
    """`a` as a tensor of a float dtype: `dtype` when it is one, else Float32."""
    if dtype is None:
        return to_tensor("asfarray", a)
    dtype = check_dtype("asfarray", dtype)
    return to_tensor("asfarray", a, dtype if is_float(dtype) else float32)


def _copied(x):
    # concat writes a new tensor (a reshape or a cast to the same dtype may be a view).
    if x.ndim == 0:
        return native.reshape(native.concat([native.reshape(x, (1,))], 0), ())
    return native.concat([x], 0)


def copy(a):
    """A new tensor with the values of `a`."""
    return _copied(to_tensor("copy", a))


# ---- filled tensors ------------------------------------------------------------------------------

def zeros(shape, dtype=float32):
    """A tensor of `shape` filled with 0."""
    return native.zeros(check_shape("zeros", shape), check_dtype("zeros", dtype))


def ones(shape, dtype=float32):
    """A tensor of `shape` filled with 1."""
    return native.ones(check_shape("ones", shape), check_dtype("ones", dtype))


def empty(shape, dtype=float32):
    """A tensor of `shape`; its values are 0 (NumPy leaves them unset)."""
    return native.zeros(check_shape("empty", shape), check_dtype("empty", dtype))


def full(shape, fill_value, dtype=None):
    """A tensor of `shape` filled with `fill_value`, a number or an array-like that broadcasts
    to `shape`. Without `dtype` a Python int gives Int32 and a float Float32."""
    fname = "full"
    shape = check_shape(fname, shape)
    dtype = None if dtype is None else check_dtype(fname, dtype)
    if is_number(fill_value):
        value = plain(fill_value)
        if dtype is None:
            dtype = number_dtype(value)
        return native.full(shape, value, dtype=dtype)
    value = to_tensor(fname, fill_value, dtype)
    return native.broadcast_to(value, shape)


def _like(fname, a, dtype, shape):
    a = to_tensor(fname, a)
    dtype = a.dtype if dtype is None else check_dtype(fname, dtype)
    shape = tuple(a.shape) if shape is None else check_shape(fname, shape)
    return shape, dtype


def zeros_like(a, dtype=None, shape=None):
    """Zeros of the shape and dtype of `a` (or of `shape` and `dtype` when given)."""
    shape, dtype = _like("zeros_like", a, dtype, shape)
    return native.zeros(shape, dtype)


def ones_like(a, dtype=None, shape=None):
    """Ones of the shape and dtype of `a` (or of `shape` and `dtype` when given)."""
    shape, dtype = _like("ones_like", a, dtype, shape)
    return native.ones(shape, dtype)


def empty_like(prototype, dtype=None, shape=None):
    """A tensor of the shape and dtype of `prototype`; its values are 0."""
    shape, dtype = _like("empty_like", prototype, dtype, shape)
    return native.zeros(shape, dtype)


def full_like(a, fill_value, dtype=None, shape=None):
    """`fill_value` in the shape and dtype of `a` (or of `shape` and `dtype` when given)."""
    shape, dtype = _like("full_like", a, dtype, shape)
    return full(shape, fill_value, dtype)


# ---- ranges --------------------------------------------------------------------------------------

def arange(start, stop=None, step=None, dtype=None):
    """Evenly spaced values in [start, stop) by `step`; arange(n) is [0, n). Without `dtype`,
    Int32 when every argument is an int, else Float32."""
    fname = "arange"
    args = tuple(plain(v) for v in (start, stop, step))
    for v in args:
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise_error(TypeError, f"{fname}: start, stop and step must be ints or floats, got "
                                   f"{v!r}")
    start, stop, step = args
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    if step == 0:
        raise_error(ValueError, f"{fname}: step must not be zero")
    if dtype is None:
        dtype = int32 if all(isinstance(v, int) for v in (start, stop, step)) else float32
    else:
        dtype = check_dtype(fname, dtype)
    return native.arange(start, stop, step, dtype=dtype)


@constexpr
def _spaced(kind, start, stop, num, endpoint, base, dtype):
    """linspace, logspace or geomspace of numbers, computed by NumPy in Float64."""
    if kind == "linspace":
        a = onp.linspace(start, stop, num, endpoint=endpoint)
    elif kind == "logspace":
        a = onp.logspace(start, stop, num, endpoint=endpoint, base=base)
    else:
        a = onp.geomspace(start, stop, num, endpoint=endpoint)
    if not is_float(dtype):
        a = onp.floor(a)  # NumPy rounds toward -inf for integer dtypes
    return Tensor(a, dtype)


def _check_num(fname, num, endpoint):
    num = check_int(fname, "num", num)
    if num < 0:
        raise_error(ValueError, f"{fname}: num must be non-negative, got {num}")
    if not isinstance(plain(endpoint), bool):
        raise_error(TypeError, f"{fname}: endpoint must be a bool, got {endpoint!r}")
    return num


def _space_dtype(fname, dtype, start, stop):
    """The dtype of a spaced sequence: `dtype`, else Float64 for Float64 tensor bounds, else
    Float32 (MindSpore's default, where NumPy uses Float64)."""
    if dtype is not None:
        return check_dtype(fname, dtype)
    for bound in (start, stop):
        if isinstance(bound, Tensor) and bound.dtype == float64:
            return float64
    return float32


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """`num` evenly spaced values from `start` to `stop` (included when `endpoint`). Array-like
    bounds give one such sequence per element, along `axis` of the result. Float32 unless
    `dtype` is given or a bound is a Float64 tensor; with `retstep`, also the spacing."""
    fname = "linspace"
    num = _check_num(fname, num, endpoint)
    dtype = _space_dtype(fname, dtype, start, stop)
    if is_number(start) and is_number(stop) and plain(axis) in (0, -1):
        out = _spaced("linspace", plain(start), plain(stop), num, bool(endpoint), 0.0, dtype)
        if retstep:
            div = num - 1 if endpoint else num
            step = (plain(stop) - plain(start)) / div if div > 0 else float("nan")
            return out, step
        return out
    out, step = _tensor_linspace(fname, start, stop, num, endpoint, axis)
    out = _floored(out, dtype)
    return (out, step) if retstep else out


def _floored(x, dtype):
    if not is_float(dtype):
        x = native.floor(x)
    return cast_to(x, dtype)


def _tensor_linspace(fname, start, stop, num, endpoint, axis):
    start = to_tensor(fname, start)
    stop = to_tensor(fname, stop)
    dtype = float64 if float64 in (start.dtype, stop.dtype) else float32
    start, stop = cast_to(start, dtype), cast_to(stop, dtype)
    shape = broadcast_shapes(fname, start.shape, stop.shape)
    start, stop = native.broadcast_to(start, shape), native.broadcast_to(stop, shape)
    ndim = len(shape) + 1
    axis = check_int(fname, "axis", axis)
    if not -ndim <= axis < ndim:
        raise_error(ValueError, f"{fname}: axis {axis} is out of bounds for a result of "
                                f"dimension {ndim}")
    axis %= ndim
    div = num - 1 if endpoint else num
    step = (stop - start) / div if div > 0 else (stop - start) * float("nan")
    steps = native.arange(0, num, 1, dtype=dtype)
    steps = native.reshape(steps, (num,) + (1,) * len(shape))
    out = native.unsqueeze(start, 0) + steps * native.unsqueeze(step, 0)
    if endpoint and num > 1:
        out = native.concat([out[:-1], native.unsqueeze(stop, 0)], 0)
    if axis:
        perm = tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, ndim))
        out = native.transpose(out, perm)
    return out, step


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """base ** linspace(start, stop, num, endpoint): `num` values evenly spaced on a log
    scale. Float32 unless `dtype` is given or a bound is a Float64 tensor."""
    fname = "logspace"
    num = _check_num(fname, num, endpoint)
    dtype = _space_dtype(fname, dtype, start, stop)
    if not is_number(base):
        raise_error(TypeError, f"{fname}: base must be a number, got {type(base).__name__}")
    if is_number(start) and is_number(stop) and plain(axis) in (0, -1):
        return _spaced("logspace", plain(start), plain(stop), num, bool(endpoint),
                       float(plain(base)), dtype)
    exponents, _ = _tensor_linspace(fname, start, stop, num, endpoint, axis)
    return _floored(native.pow(float(plain(base)), exponents), dtype)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """`num` values from `start` to `stop` in a geometric progression (both non-zero and of one
    sign). Float32 unless `dtype` is given or a bound is a Float64 tensor."""
    fname = "geomspace"
    num = _check_num(fname, num, endpoint)
    dtype = _space_dtype(fname, dtype, start, stop)
    if is_number(start) and is_number(stop) and plain(axis) in (0, -1):
        if plain(start) == 0 or plain(stop) == 0:
            raise_error(ValueError, f"{fname}: start and stop must be non-zero")
        return _spaced("geomspace", plain(start), plain(stop), num, bool(endpoint), 0.0, dtype)
    start, stop = to_tensor(fname, start), to_tensor(fname, stop)
    sign = native.sign(start)
    log_start = native.log(native.abs(cast_to(start, float64)))
    log_stop = native.log(native.abs(cast_to(stop, float64)))
    exponents, _ = _tensor_linspace(fname, log_start, log_stop, num, endpoint, axis)
    ndim = exponents.ndim
    axis = check_int(fname, "axis", axis) % ndim
    sign = native.unsqueeze(cast_to(sign, float64), axis)
    return _floored(sign * native.exp(exponents), dtype)


# ---- matrices: identity, triangles, diagonals ----------------------------------------------------

def _matrix_size(fname, n, m):
    n = check_int(fname, "N", n)
    m = n if m is None else check_int(fname, "M", m)
    if n < 0 or m < 0:
        raise_error(ValueError, f"{fname}: negative dimensions are not allowed, got N={n}, M={m}")
    return n, m


def eye(N, M=None, k=0, dtype=float32):  # noqa: N803 - NumPy's names
    """An N x M tensor with ones on diagonal `k` (0: the main one, > 0 above, < 0 below)."""
    n, m = _matrix_size("eye", N, M)
    return native.eye(n, m, dtype=check_dtype("eye", dtype), k=check_int("eye", "k", k))


def identity(n, dtype=float32):
    """The n x n identity matrix."""
    n, _ = _matrix_size("identity", n, None)
    return native.eye(n, n, dtype=check_dtype("identity", dtype))


@constexpr
def _tri_mask(n, m, k):
    return Tensor(onp.tri(n, m, k, dtype=bool))


def tri(N, M=None, k=0, dtype=float32):  # noqa: N803
    """An N x M tensor with ones at and below diagonal `k`, zeros above."""
    n, m = _matrix_size("tri", N, M)
    k = check_int("tri", "k", k)
    return _tri_mask(n, m, k).astype(check_dtype("tri", dtype))


def _triangle(fname, m, k, lower):
    m = to_tensor(fname, m)
    k = check_int(fname, "k", k)
    if m.ndim < 1:
        raise_error(ValueError, f"{fname}: expected a tensor of at least 1 dimension, got a "
                                f"0-d tensor")
    rows, cols = (m.shape[-2], m.shape[-1]) if m.ndim >= 2 else (m.shape[-1], m.shape[-1])
    mask = _tri_mask(rows, cols, k if lower else k - 1)
    if not lower:
        mask = native.logical_not(mask)
    return native.where(mask, m, native.zeros((), m.dtype))


def tril(m, k=0):
    """`m` with the elements above diagonal `k` of its last two axes set to zero."""
    return _triangle("tril", m, k, lower=True)


def triu(m, k=0):
    """`m` with the elements below diagonal `k` of its last two axes set to zero."""
    return _triangle("triu", m, k, lower=False)


# A constexpr returns one tensor (a graph holds no tuple constants): index pairs are stacked.
@constexpr
def _diagonal_index(rows, cols, offset):
    """Row (index[0]) and column (index[1]) indices of diagonal `offset` of a rows x cols
    matrix."""
    r = onp.arange(max(0, -offset), rows)
    c = r + offset
    keep = (c >= 0) & (c < cols)
    return Tensor(onp.stack([r[keep], c[keep]]).astype(onp.int64))


def diagonal(a, offset=0, axis1=0, axis2=1):
    """Diagonal `offset` of the matrices over axes axis1 and axis2 of `a`: those axes are
    removed and the diagonal becomes the last axis."""
    fname = "diagonal"
    a = to_tensor(fname, a)
    if a.ndim < 2:
        raise_error(ValueError, f"{fname}: expected a tensor of at least 2 dimensions, got "
                                f"shape {a.shape}")
    offset = check_int(fname, "offset", offset)
    ax1, ax2 = check_axis(fname, axis1, a.ndim), check_axis(fname, axis2, a.ndim)
    if ax1 == ax2:
        raise_error(ValueError, f"{fname}: axis1 and axis2 must differ, got {axis1} and {axis2}")
    rest = tuple(i for i in range(a.ndim) if i not in (ax1, ax2))
    x = native.transpose(a, rest + (ax1, ax2))
    index = _diagonal_index(a.shape[ax1], a.shape[ax2], offset)
    return x[(Ellipsis, index[0], index[1])]


def trace(a, offset=0, axis1=0, axis2=1, dtype=None):
    """The sum along diagonal `offset` of the matrices over axis1 and axis2 of `a`."""
    return _sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


@constexpr
def _diag_matrix_index(n, k):
    """For a vector of n elements put on diagonal k of a square matrix: the index into the
    vector of each matrix element (0 off the diagonal, where the eye mask drops it)."""
    size = n + abs(k)
    mask = onp.eye(size, size, k, dtype=bool)
    rows, cols = onp.indices((size, size))
    return Tensor(onp.where(mask, rows if k >= 0 else cols, 0).astype(onp.int64))


@constexpr
def _eye_mask(size, k):
    return Tensor(onp.eye(size, size, k, dtype=bool))


def diag(v, k=0):
    """The diagonal `k` of a 2-D `v`, or a square matrix with the 1-D `v` on diagonal `k`."""
    fname = "diag"
    v = to_tensor(fname, v)
    k = check_int(fname, "k", k)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise_error(ValueError, f"{fname}: expected a 1-D or 2-D input, got shape {v.shape}")
    index, mask = _diag_matrix_index(v.shape[0], k), _eye_mask(v.shape[0] + abs(k), k)
    return native.where(mask, native.gather(v, index, 0), native.zeros((), v.dtype))


def diagflat(v, k=0):
    """A square matrix with the flattened `v` on diagonal `k`."""
    return diag(native.reshape(to_tensor("diagflat", v), (-1,)), k)


def vander(x, N=None, increasing=False):  # noqa: N803
    """The Vandermonde matrix of the 1-D `x`: column j is x ** (N - 1 - j), or x ** j when
    `increasing`. N defaults to len(x)."""
    fname = "vander"
    x = to_tensor(fname, x)
    if x.ndim != 1:
        raise_error(ValueError, f"{fname}: x must be 1-D, got shape {x.shape}")
    n = x.shape[0] if N is None else check_int(fname, "N", N)
    if n < 0:
        raise_error(ValueError, f"{fname}: N must be non-negative, got {n}")
    powers = native.arange(0, n, 1, dtype=int32)
    if not increasing:
        powers = powers[::-1]
    if x.dtype == bool_:
        x = x.astype(int32)
    return native.pow(native.unsqueeze(x, 1), cast_to(powers, x.dtype))


# ---- grids and index sets ------------------------------------------------------------------------

def meshgrid(*xi, sparse=False, indexing="xy"):
    """Coordinate tensors of the 1-D (or flattened) `xi`: 'xy' (Cartesian) swaps the first two
    axes of the output against 'ij' (matrix) indexing; sparse ones keep size 1 on the other
    axes."""
    fname = "meshgrid"
    if indexing not in ("xy", "ij"):
        raise_error(ValueError, f"{fname}: indexing must be 'xy' or 'ij', got {indexing!r}")
    xs = tuple(native.reshape(to_tensor(fname, x), (-1,)) for x in xi)
    n = len(xs)
    shape = tuple(x.shape[0] for x in xs)
    if indexing == "xy" and n > 1:
        shape = (shape[1], shape[0]) + shape[2:]
    out = []
    for i, x in enumerate(xs):
        axis = i
        if indexing == "xy" and n > 1 and i < 2:
            axis = 1 - i
        view = (1,) * axis + (x.shape[0],) + (1,) * (n - axis - 1)
        g = native.reshape(x, view)
        out.append(g if sparse else native.broadcast_to(g, shape))
    return out


class _GridMaker:
    """mgrid[...] and ogrid[...]: grids of the slices' ranges, start:stop:step (a complex step
    Nj gives N points, stop included)."""

    def __init__(self, sparse):
        self.sparse = sparse

    def __getitem__(self, key):
        fname = "ogrid" if self.sparse else "mgrid"
        keys = key if isinstance(key, tuple) else (key,)
        for s in keys:
            if not isinstance(s, slice):
                raise_error(TypeError, f"{fname}: index with slices (start:stop:step), got "
                                       f"{s!r}")
        ranges = tuple(_grid_range(fname, s) for s in keys)
        if not isinstance(key, tuple):
            return ranges[0]
        grids = meshgrid(*ranges, sparse=self.sparse, indexing="ij")
        if self.sparse:
            return grids
        return native.stack(grids, 0)


def _grid_range(fname, s):
    start = 0 if s.start is None else plain(s.start)
    step = 1 if s.step is None else plain(s.step)
    stop = plain(s.stop)
    if isinstance(step, complex):
        return linspace(start, stop, int(abs(step)), dtype=float32)
    if all(isinstance(v, int) for v in (start, stop, step)):
        return arange(start, stop, step)
    return arange(float(start), float(stop), float(step), dtype=float32)


mgrid = _GridMaker(sparse=False)
ogrid = _GridMaker(sparse=True)


def indices(dimensions, dtype=int32, sparse=False):
    """The index of each position of a grid of shape `dimensions`: a tensor of shape
    (len(dimensions),) + dimensions, or, when `sparse`, a tuple of broadcastable ones."""
    fname = "indices"
    dims = check_shape(fname, dimensions)
    dtype = check_dtype(fname, dtype)
    grids = meshgrid(*tuple(native.arange(0, d, 1, dtype=dtype) for d in dims), sparse=sparse,
                     indexing="ij")
    if sparse:
        return tuple(grids)
    if not dims:
        return native.zeros((0,), dtype)
    return native.stack(grids, 0)


def ix_(*args):
    """Open-mesh index tensors: the i-th of the 1-D `args` reshaped to have its length on
    axis i and size 1 elsewhere."""
    fname = "ix_"
    out = []
    n = len(args)
    for i, a in enumerate(args):
        a = to_tensor(fname, a)
        if a.ndim != 1:
            raise_error(ValueError, f"{fname}: cross index must be 1-D, got shape {a.shape}")
        out.append(native.reshape(a, (1,) * i + (a.shape[0],) + (1,) * (n - i - 1)))
    return tuple(out)


def diag_indices(n, ndim=2):
    """The indices of the main diagonal of an n x ... x n tensor of `ndim` axes."""
    n = check_int("diag_indices", "n", n)
    idx = native.arange(0, n, 1, dtype=int32)
    return tuple(idx for _ in range(check_int("diag_indices", "ndim", ndim)))


@constexpr
def _triangle_indices(n, k, m, lower):
    rows, cols = onp.tril_indices(n, k, m) if lower else onp.triu_indices(n, k, m)
    return Tensor(onp.stack([rows, cols]).astype(onp.int32))


def _index_pair(index):
    return index[0], index[1]


def tril_indices(n, k=0, m=None):
    """Row and column indices (Int32) of the lower triangle of an n x m matrix, at and below
    diagonal `k`."""
    n, m = _matrix_size("tril_indices", n, m)
    return _index_pair(_triangle_indices(n, check_int("tril_indices", "k", k), m, True))


def triu_indices(n, k=0, m=None):
    """Row and column indices (Int32) of the upper triangle of an n x m matrix, at and above
    diagonal `k`."""
    n, m = _matrix_size("triu_indices", n, m)
    return _index_pair(_triangle_indices(n, check_int("triu_indices", "k", k), m, False))


def tril_indices_from(arr, k=0):
    """tril_indices of the 2-D `arr`'s shape."""
    arr = to_tensor("tril_indices_from", arr)
    if arr.ndim != 2:
        raise_error(ValueError, f"tril_indices_from: input must be 2-D, got shape {arr.shape}")
    return tril_indices(arr.shape[0], k, arr.shape[1])


def triu_indices_from(arr, k=0):
    """triu_indices of the 2-D `arr`'s shape."""
    arr = to_tensor("triu_indices_from", arr)
    if arr.ndim != 2:
        raise_error(ValueError, f"triu_indices_from: input must be 2-D, got shape {arr.shape}")
    return triu_indices(arr.shape[0], k, arr.shape[1])


# ---- windows -------------------------------------------------------------------------------------

@constexpr
def _window(kind, m):
    return Tensor(getattr(onp, kind)(m).astype(onp.float32))


def _window_of(kind, m):
    m = check_int(kind, "M", m)
    return _window(kind, max(m, 0))


def bartlett(M):  # noqa: N803 - NumPy's name
    """The Bartlett (triangular) window of M points, Float32."""
    return _window_of("bartlett", M)


def blackman(M):  # noqa: N803
    """The Blackman window of M points, Float32."""
    return _window_of("blackman", M)


def hamming(M):  # noqa: N803
    """The Hamming window of M points, Float32."""
    return _window_of("hamming", M)


def hanning(M):  # noqa: N803
    """The Hann window of M points, Float32."""
    return _window_of("hanning", M)


# ---- random draws (pijit's seeded generator, pijit.set_seed) -------------------------------------

def _random_shape(fname, shape):
    if len(shape) == 1 and isinstance(plain(shape[0]), (tuple, list)):
        shape = tuple(shape[0])
    return check_shape(fname, shape) if shape else (1,)


def _float_dtype(fname, dtype):
    dtype = check_dtype(fname, dtype)
    if not is_float(dtype):
        raise_error(ValueError, f"{fname}: dtype must be a float dtype, got {dtype}")
    return dtype


def rand(*shape, dtype=float32):
    """Samples from the uniform distribution on [0, 1) of the given shape (ints, or one tuple;
    none gives shape (1,), as MindSpore)."""
    return native.rand(*_random_shape("rand", shape), dtype=_float_dtype("rand", dtype))


def randn(*shape, dtype=float32):
    """Samples from the standard normal distribution of the given shape."""
    return native.randn(*_random_shape("randn", shape), dtype=_float_dtype("randn", dtype))


def randint(minval, maxval=None, shape=None, dtype=int32):
    """Random integers from [minval, maxval) ([0, minval) without maxval), of `shape`."""
    fname = "randint"
    minval = check_int(fname, "minval", minval)
    if maxval is None:
        if minval <= 0:
            raise_error(ValueError, f"{fname}: minval must be positive when maxval is None, got "
                                    f"{minval}")
        minval, maxval = 0, minval
    maxval = check_int(fname, "maxval", maxval)
    if minval >= maxval:
        raise_error(ValueError, f"{fname}: minval ({minval}) must be less than maxval ({maxval})")
    dtype = check_dtype(fname, dtype)
    if is_float(dtype) or dtype == bool_:
        raise_error(ValueError, f"{fname}: dtype must be an integer dtype, got {dtype}")
    shape = (1,) if shape is None else check_shape(fname, shape)
    u = native.rand(*shape, dtype=float64)
    return native.floor(u * (maxval - minval) + minval).astype(dtype)
