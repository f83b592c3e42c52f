"""More of MindSpore's ops functions composed of pijit's ops: determinants in log form,
solves, Cholesky, band and block matrices, norms, tensor contractions, sequences, creation
helpers and the functional forms of the in-place primitives."""
import math

from pijit import _C
from pijit import _ops_activation
from pijit import _ops_composed
from pijit._primitives_extra import place_rows
from pijit._tensor import (Parameter, Tensor, bool_, complex64, complex128, dtype_to_pytype, float32,
                           float64, int64)
from pijit.mint import linalg as _mint_linalg
from pijit.mint._checks import check_dims, check_int, check_tensor, is_float, raise_error
from pijit.numpy import linalg as _np_linalg
from pijit.numpy import reductions as _np_reductions
from pijit.numpy import statistics as _np_statistics
from pijit.numpy.indexing import take_along_axis as _np_take_along_axis

_ops = _C.ops

# ---- linear algebra ------------------------------------------------------------------------------

def slogdet(input):  # noqa: A002 - MindSpore's names
    """(sign, log |det|) of each square matrix in the last two axes."""
    det = _mint_linalg.det(input)
    return _ops.sign(det), _ops.log(_ops.abs(det))


log_matrix_determinant = slogdet


def logdet(input):  # noqa: A002
    """log(det): NaN where the determinant is negative, -inf where it is 0."""
    return _ops.log(_mint_linalg.det(input))


def matrix_solve(matrix, rhs, adjoint=False):
    """X with matrix @ X = rhs (matrix's transpose with adjoint)."""
    if adjoint:
        matrix = _ops_composed.swapaxes(matrix, -1, -2)
    return _ops.matmul(_mint_linalg.inv(matrix), rhs)


def cholesky(input_x, upper=False):
    """The lower-triangular L with L @ L.T = input_x (each symmetric positive-definite matrix
    in the last two axes); its transpose with upper. Built column by column."""
    check_tensor("cholesky", "input_x", input_x)
    n = input_x.shape[-1]
    if input_x.ndim < 2 or input_x.shape[-2] != n or not is_float(input_x):
        raise_error(ValueError, f"cholesky: input_x must be square float matrices, got "
                                f"{input_x.shape} {input_x.dtype}")
    rows = _ops.reshape(_ops.arange(n), (n, 1))
    columns = []
    for j in range(n):
        # Column j: (A[:, j] - L[:, :j] @ L[j, :j]) / L[j, j], zero above the diagonal.
        residual = input_x[..., :, j]
        for k, col in enumerate(columns):
            residual = residual - col * col[..., j:j + 1]
        pivot = _ops.sqrt(residual[..., j:j + 1])
        below = _ops.reshape(_ops.greater_equal(rows, j), (n,))
        columns.append(_ops.where(below, residual / pivot, 0.0))
    lower = _ops.stack(tuple(columns), -1)
    return _ops_composed.swapaxes(lower, -1, -2) if upper else lower


def cholesky_inverse(input_x, upper=False):
    """The inverse of A from its Cholesky factor input_x (A = L L^T, or U^T U with upper)."""
    factor_t = _ops_composed.swapaxes(input_x, -1, -2)
    a = _ops.matmul(factor_t, input_x) if upper else _ops.matmul(input_x, factor_t)
    return _mint_linalg.inv(a)


def matrix_band_part(x, lower, upper):
    """x with the elements more than `lower` below or `upper` above the diagonal zeroed (a
    negative bound keeps that whole triangle)."""
    rows, cols = x.shape[-2], x.shape[-1]
    offset = _ops.reshape(_ops.arange(rows), (rows, 1)) - _ops.arange(cols)  # i - j
    keep = _ops.ones((rows, cols), dtype=bool_)
    if lower >= 0:
        keep = _ops.logical_and(keep, _ops.less_equal(offset, lower))
    if upper >= 0:
        keep = _ops.logical_and(keep, _ops.greater_equal(offset, -upper))
    return _ops.where(keep, x, 0)


def block_diag(*inputs):
    """The matrices (a 0-d or 1-D input is one row) on the diagonal of one matrix."""
    mats = [x if x.ndim == 2 else _ops.reshape(x, (1, -1)) for x in inputs]
    total = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        rows.append(_ops_composed.pad(m, ((0, 0), (left, total - left - m.shape[1]))))
        left += m.shape[1]
    return _ops.concat(tuple(rows), 0)


def cartesian_prod(*inputs):
    """Every combination of one element of each 1-D input, in row-major order: (count, k)."""
    sizes = tuple(x.shape[0] for x in inputs)
    grids = []
    for axis, x in enumerate(inputs):
        shape = (1,) * axis + (sizes[axis],) + (1,) * (len(sizes) - axis - 1)
        grids.append(_ops.reshape(_ops.broadcast_to(_ops.reshape(x, shape), sizes), (-1,)))
    return _ops.stack(tuple(grids), 1) if len(grids) > 1 else grids[0]


def tensor_dot(x1, x2, axes):
    """The sum of products over x1's and x2's `axes` (an int: the last and first that many,
    or a pair of axis lists)."""
    return _np_linalg.tensordot(x1, x2, axes)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002,N803
    """Vector norms over one dim (or the flattened input when dim and ord are None), and
    matrix norms ('fro', 1, -1, inf, -inf) over two. Norms needing singular values (ord 2,
    -2 or 'nuc' over two dims) are not supported."""
    check_tensor("norm", "A", A)
    x = A if dtype is None else A.astype(dtype)
    if x.dtype in (complex64, complex128):
        x = _ops.abs(x)  # every norm taken here is the norm of the magnitudes
    elif not is_float(x):
        x = x.astype(float32)
    if dim is None:
        if ord is None or (ord == "fro" and x.ndim == 2):
            return _vector_norm(_ops.reshape(x, (-1,)), 2, (0,), False) if not keepdim else \
                _ops.reshape(_vector_norm(_ops.reshape(x, (-1,)), 2, (0,), False),
                             (1,) * x.ndim)
        dim = (0,) if x.ndim == 1 else (0, 1) if x.ndim == 2 else None
        if dim is None:
            raise_error(ValueError, "norm: give dim for an ord over a tensor of rank above 2")
    dims = check_dims("norm", dim, x.ndim, "dim")
    if len(dims) == 1:
        return _vector_norm(x, 2 if ord is None else ord, dims, keepdim)
    if len(dims) != 2:
        raise_error(ValueError, f"norm: dim must name one or two axes, got {dim}")
    return _matrix_norm(x, "fro" if ord is None else ord, dims, keepdim)


def _vector_norm(x, ord, dims, keepdim):  # noqa: A002
    size = _ops.abs(x)
    if ord == math.inf:
        return _ops.max(size, dims, keepdims=keepdim)
    if ord == -math.inf:
        return _ops.min(size, dims, keepdims=keepdim)
    if ord == 0:
        return _ops.sum(_ops.not_equal(x, 0), dims, keepdims=keepdim).astype(x.dtype)
    if isinstance(ord, str):
        raise_error(ValueError, f"norm: ord {ord!r} is a matrix norm; give two dims")
    if ord == 2:
        return _ops.sqrt(_ops.sum(x * x, dims, keepdims=keepdim))
    return _ops.pow(_ops.sum(_ops.pow(size, float(ord)), dims, keepdims=keepdim), 1.0 / ord)


def _matrix_norm(x, ord, dims, keepdim):  # noqa: A002
    rows_dim, cols_dim = dims
    size = _ops.abs(x)
    if ord == "fro":
        return _ops.sqrt(_ops.sum(x * x, dims, keepdims=keepdim))
    if ord in (1, -1):  # the largest (smallest) column sum
        sums = _ops.sum(size, rows_dim, keepdims=True)
        pick = _ops.max if ord == 1 else _ops.min
        out = pick(sums, cols_dim, keepdims=True)
    elif ord in (math.inf, -math.inf):  # the largest (smallest) row sum
        sums = _ops.sum(size, cols_dim, keepdims=True)
        pick = _ops.max if ord == math.inf else _ops.min
        out = pick(sums, rows_dim, keepdims=True)
    else:
        raise_error(ValueError, f"norm: matrix ord {ord!r} needs singular values, which are "
                                f"not supported")
    return out if keepdim else _ops.squeeze(out, dims)


def renorm(input, p, axis, maxnorm):  # noqa: A002
    """input with each slice along `axis` whose p-norm exceeds maxnorm scaled down to it."""
    check_tensor("renorm", "input", input)
    others = tuple(d for d in range(input.ndim) if d != axis % input.ndim)
    norms = _ops.pow(_ops.sum(_ops.pow(_ops.abs(input), float(p)), others, keepdims=True),
                     1.0 / p)
    scale = _ops.where(_ops.greater(norms, maxnorm), maxnorm / (norms + 1e-7), 1.0)
    return input * scale


# ---- sequences and creation ----------------------------------------------------------------------

def reverse_sequence(x, seq_lengths, seq_dim, batch_dim=0):
    """x with the first seq_lengths[b] elements along seq_dim reversed in each batch entry b
    (along batch_dim); the rest unchanged."""
    check_tensor("reverse_sequence", "x", x)
    seq_dim, batch_dim = seq_dim % x.ndim, batch_dim % x.ndim
    n = x.shape[seq_dim]
    positions = _ops.reshape(_ops.arange(n), (1, n))
    lengths = _ops.reshape(seq_lengths.astype(int64), (-1, 1))
    # (batch, n): where element i of each sequence comes from.
    source = _ops.where(_ops.less(positions, lengths), lengths - 1 - positions, positions)
    shape = [1] * x.ndim
    shape[batch_dim], shape[seq_dim] = x.shape[batch_dim], n
    if batch_dim > seq_dim:
        source = _ops.transpose(source, (1, 0))
    index = _ops.broadcast_to(_ops.reshape(source, tuple(shape)), x.shape)
    return _np_take_along_axis(x, index, seq_dim)


def trapz(y, x=None, *, dx=1.0, dim=-1):
    """The trapezoidal integral of y along dim, at sample points x (or spacing dx)."""
    return _np_reductions.trapz(y, x, dx, dim)


def logspace(start, end, steps, base=10, *, dtype=float32):
    """base ** (steps evenly spaced exponents from start to end)."""
    steps = check_int("logspace", "steps", steps, low=0)
    exponents = _ops.linspace(float(start), float(end), steps, dtype=float64)
    return _ops.pow(float(base), exponents).astype(dtype)


def range_of(start, end, step):
    """ops.range: start, start + step, ... below end (numbers or 0-d tensors). Named so here
    to keep the builtin range for this module's loops."""
    values = [v.asnumpy().item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if values[2] == 0:
        raise_error(ValueError, "range: step must not be 0")
    return _ops.arange(*values)


def scalar_to_tensor(input_x, dtype=float32):
    """A 0-d tensor holding the number input_x."""
    return _ops.full((), input_x, dtype=dtype)


def tuple_to_array(input_x):
    """A 1-D tensor of the numbers in input_x (Int64 for ints, Float32 otherwise)."""
    values = tuple(input_x)
    dtype = int64 if all(isinstance(v, int) for v in values) else float32
    return Tensor(values).astype(dtype)


def scalar_cast(input_x, input_y):
    """The number input_x as the Python type of dtype input_y."""
    return dtype_to_pytype(input_y)(input_x)


def dyn_shape(input_x):
    """input_x's shape as an Int64 tensor."""
    return Tensor(tuple(input_x.shape)).astype(int64)


# ---- small forms ------------------------------------------------------------------------------

def soft_shrink(input, lambd=0.5):  # noqa: A002
    return _ops_activation.softshrink(input, lambd)


def print_(*input_x):
    """Prints its arguments."""
    print(*input_x)


def accumulate_n(x):
    """The sum of the tensors in x."""
    return _ops_composed.addn(x)


def assign_add(variable, value):
    """variable += value in place; returns variable."""
    return _ops.assign(variable, variable + value)


def assign_sub(variable, value):
    """variable -= value in place; returns variable."""
    return _ops.assign(variable, variable - value)


def inplace_add(x, v, indices):
    """x with v's rows added to its rows `indices` (a new tensor)."""
    return x + place_rows("inplace_add", indices, x, v)[0]


def inplace_sub(x, v, indices):
    """x with v's rows subtracted from its rows `indices` (a new tensor)."""
    return x - place_rows("inplace_sub", indices, x, v)[0]


def inplace_update(x, v, indices):
    """x with its rows `indices` replaced by v's rows (a new tensor)."""
    moved, covered = place_rows("inplace_update", indices, x, v)
    return _ops.where(_ops.greater(covered, 0), moved, x)


def index_add(x, indices, y, axis, use_lock=True, check_index_bound=True):
    """x with the slices of y added along `axis` at the positions of the 1-D `indices`
    (repeats accumulate); written into x in place when x is a Parameter."""
    check_tensor("index_add", "x", x)
    axis = axis % x.ndim
    size = x.shape[axis]
    # (len(indices), size): which slice of y lands on which slice of x.
    picks = _ops.one_hot(_ops.reshape(indices, (-1,)).astype(int64), size, 1.0, 0.0) \
        .astype(x.dtype)
    moved_y = _ops_composed.swapaxes(y.astype(x.dtype), axis, -1)
    added = _ops_composed.swapaxes(_ops.matmul(moved_y, picks), axis, -1)
    out = x + added
    if isinstance(x, Parameter):
        _ops.assign(x, out)
        return x
    return out


def cov(input, *, correction=1, fweights=None, aweights=None):  # noqa: A002
    """The covariance matrix of the variables in the rows of input (observations in the
    columns), dividing by the (weighted) count minus `correction`."""
    check_tensor("cov", "input", input)
    return _np_statistics.cov(input, rowvar=True, ddof=correction, fweights=fweights,
                              aweights=aweights)


def intopk(x1, x2, k):
    """Bool (N,): whether each row's target class x2[i] is among the k largest of x1[i]
    (fewer than k elements larger than it)."""
    check_tensor("intopk", "x1", x1)
    picked = _ops.one_hot(x2.astype(int64), x1.shape[-1], 1.0, 0.0).astype(x1.dtype)
    target = _ops.sum(picked * x1, -1, keepdims=True)
    return _ops.less(_ops.sum(_ops.greater(x1, target), -1), k)


def padding(x, pad_dim_size=8):
    """x's size-1 last axis padded with zeros to pad_dim_size."""
    check_tensor("padding", "x", x)
    if x.shape[-1] != 1:
        raise_error(ValueError, f"padding: x's last axis must have size 1, got {x.shape}")
    return _ops_composed.pad(x, ((0, 0),) * (x.ndim - 1) + ((0, pad_dim_size - 1),))


def clip_by_global_norm(x, clip_norm=1.0, use_norm=None):
    """The tensors of x scaled by clip_norm / max(their global L2 norm, clip_norm)."""
    tensors = tuple(x)
    if use_norm is None:
        use_norm = _ops.sqrt(_ops_composed.addn(tuple(_ops.sum(t * t) for t in tensors)))
    scale = clip_norm / _ops.maximum(use_norm, clip_norm)
    return tuple(t * scale for t in tensors)


__all__ = ["accumulate_n", "assign_add", "assign_sub", "block_diag", "cartesian_prod",
           "cholesky", "cholesky_inverse", "clip_by_global_norm", "cov", "dyn_shape",
           "index_add", "intopk", "inplace_add", "inplace_sub", "inplace_update", "log_matrix_determinant", "logdet",
           "logspace", "matrix_band_part", "matrix_solve", "norm", "padding", "print_",
           "renorm", "reverse_sequence", "scalar_cast", "scalar_to_tensor", "slogdet",
           "soft_shrink", "tensor_dot", "trapz", "tuple_to_array"]
