"""The singular value decomposition (ops.svd, ops.Svd, Tensor.svd) and the pseudo-inverse built
on it (ops.pinv).

The decomposition itself is LAPACK's (NumPy's gesdd) on the host, so a captured graph breaks
where svd is called and resumes after it. Its gradient is a Cell's bprop made of pijit ops (the
standard formula for the thin SVD with distinct singular values), so gradients flow to the
input like any op's, and pinv, composed of svd and pijit ops, is differentiated through it.

Conventions are MindSpore's: svd returns (s, u, v) with input = u @ diag(s) @ v^T (v, not its
transpose), s in descending order; with compute_uv=False the function returns s alone and the
primitive Svd returns zeros for u and v."""
import numpy as np

from pijit import _C
from pijit._ops_composed import swapaxes
from pijit._tensor import Tensor, float32, float64
from pijit.mint._checks import check_bool, check_tensor, raise_error
from pijit.nn.cell import Cell
from pijit.ops import Primitive

_ops = _C.ops

__all__ = ["svd", "pinv", "Svd"]


def _transpose(x):
    return swapaxes(x, -1, -2)


def _check_matrices(fname, input):  # noqa: A002 - MindSpore's name
    check_tensor(fname, "input", input)
    if input.dtype not in (float32, float64):
        raise_error(TypeError, f"{fname}: input must be float32 or float64, got {input.dtype}")
    if input.ndim < 2:
        raise_error(ValueError, f"{fname}: input must have at least 2 dimensions (*, M, N), got "
                                f"shape {tuple(input.shape)}")
    return input


def _host_svd(fname, input, full_matrices):  # noqa: A002
    values = input.asnumpy()
    if not np.isfinite(values).all():
        raise_error(ValueError, f"{fname}: input holds NaN or infinity; the decomposition is not "
                                f"defined")
    u, s, vh = np.linalg.svd(values, full_matrices=full_matrices)
    dtype = values.dtype
    return (Tensor(np.ascontiguousarray(s, dtype)), Tensor(np.ascontiguousarray(u, dtype)),
            Tensor(np.ascontiguousarray(np.swapaxes(vh, -1, -2), dtype)))


def _svd_gradient(s, u, v, ds, du, dv):
    """d(input) from the gradients of the thin decomposition's s (*, k), u (*, m, k) and
    v (*, n, k). Where two singular values are equal the vectors' gradients are not defined
    (the result holds inf or NaN there, as every implementation of this formula)."""
    k = s.shape[-1]
    m, n = u.shape[-2], v.shape[-2]
    squares = s * s
    gaps = _ops.unsqueeze(squares, -2) - _ops.unsqueeze(squares, -1)  # [i, j] = s_j^2 - s_i^2
    off_diagonal = 1.0 - _ops.eye(k, dtype=s.dtype)
    f = off_diagonal / (gaps + _ops.eye(k, dtype=s.dtype))
    ut_du = _ops.matmul(_transpose(u), du)
    vt_dv = _ops.matmul(_transpose(v), dv)
    inner = (f * (ut_du - _transpose(ut_du))) * _ops.unsqueeze(s, -2) \
        + _ops.eye(k, dtype=s.dtype) * _ops.unsqueeze(ds, -2) \
        + _ops.unsqueeze(s, -1) * (f * (vt_dv - _transpose(vt_dv)))
    grad = _ops.matmul(_ops.matmul(u, inner), _transpose(v))
    inverse = 1.0 / s
    if m > k:  # the part of du outside u's span
        outside = du - _ops.matmul(u, ut_du)
        grad = grad + _ops.matmul(outside * _ops.unsqueeze(inverse, -2), _transpose(v))
    if n > k:  # the part of dv outside v's span
        outside = dv - _ops.matmul(v, vt_dv)
        grad = grad + _ops.matmul(u, _ops.unsqueeze(inverse, -1) * _transpose(outside))
    return grad


class _Decomposition(Cell):
    """svd of one setting; its bprop is _svd_gradient. With full_matrices, the gradient
    reaches the input through the first min(M, N) columns of u and v (the others are any
    orthonormal completion)."""

    def __init__(self, fname, full_matrices, compute_uv):
        super().__init__()
        self.fname, self.full_matrices, self.compute_uv = fname, full_matrices, compute_uv

    def construct(self, input):  # noqa: A002
        s, u, v = _host_svd(self.fname, input, self.full_matrices)
        return (s, u, v) if self.compute_uv else s

    def bprop(self, input, out, dout):  # noqa: A002
        k = min(input.shape[-2], input.shape[-1])
        if self.compute_uv:
            (s, u, v), (ds, du, dv) = out, dout
            u, v, du, dv = (t[..., :k] for t in (u, v, du, dv))
        else:
            s, u, v = _host_svd(self.fname, input, False)
            ds, du, dv = dout, _ops.zeros_like(u), _ops.zeros_like(v)
        return (_svd_gradient(s, u, v, ds, du, dv),)


_cells = {}


def _decomposition(fname, full_matrices, compute_uv):
    key = (fname, full_matrices, compute_uv)
    if key not in _cells:
        _cells[key] = _Decomposition(fname, full_matrices, compute_uv)
    return _cells[key]


def svd(input, full_matrices=False, compute_uv=True):  # noqa: A002
    """(s, u, v) with input = u @ diag(s) @ v^T for each matrix in the last two axes (s alone
    with compute_uv=False); float32 or float64. u is (*, M, P) and v (*, N, P), P = min(M, N),
    or (*, M, M) and (*, N, N) with full_matrices."""
    _check_matrices("svd", input)
    check_bool("svd", "full_matrices", full_matrices)
    check_bool("svd", "compute_uv", compute_uv)
    return _decomposition("svd", full_matrices, compute_uv)(input)


class Svd(Primitive):
    """Svd(full_matrices=False, compute_uv=True)(input): (s, u, v) as ops.svd; with
    compute_uv=False, u and v are zeros of their shapes."""

    def __init__(self, full_matrices=False, compute_uv=True):
        check_bool("Svd", "full_matrices", full_matrices)
        check_bool("Svd", "compute_uv", compute_uv)
        super().__init__(full_matrices=full_matrices, compute_uv=compute_uv)

    def __call__(self, input):  # noqa: A002
        _check_matrices("Svd", input)
        if self.compute_uv:
            return _decomposition("Svd", self.full_matrices, True)(input)
        s = _decomposition("Svd", self.full_matrices, False)(input)
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        p = min(m, n)
        u_shape = batch + ((m, m) if self.full_matrices else (m, p))
        v_shape = batch + ((n, n) if self.full_matrices else (n, p))
        return s, _ops.zeros(u_shape, dtype=input.dtype), _ops.zeros(v_shape, dtype=input.dtype)


_EPSILON = {float32: float(np.finfo(np.float32).eps), float64: float(np.finfo(np.float64).eps)}


def _tolerance(fname, name, value, dtype):
    if value is None:
        return None
    if isinstance(value, Tensor):
        return value.astype(dtype)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise_error(TypeError, f"{fname}: {name} must be a float, a Tensor or None, got "
                               f"{type(value).__name__}")
    return float(value)


def pinv(x, *, atol=None, rtol=None, hermitian=False):
    """The Moore-Penrose pseudo-inverse of each matrix in the last two axes, (*, N, M) for
    (*, M, N): v @ diag(1/s) @ u^T over the singular values above max(atol, rtol * s_max)
    (others count as zero). With neither tolerance given rtol is max(M, N) times the dtype's
    machine epsilon; with atol alone rtol is 0. hermitian says the matrices are symmetric;
    the result is the same either way."""
    _check_matrices("pinv", x)
    check_bool("pinv", "hermitian", hermitian)
    atol = _tolerance("pinv", "atol", atol, x.dtype)
    rtol = _tolerance("pinv", "rtol", rtol, x.dtype)
    if rtol is None:
        eps = _EPSILON[x.dtype]
        rtol = max(x.shape[-2], x.shape[-1]) * eps if atol is None else 0.0
    s, u, v = svd(x)
    largest = _ops.max(s, -1, keepdims=True) if s.shape[-1] else s
    cutoff = rtol * largest
    if atol is not None:
        cutoff = _ops.maximum(cutoff, atol if isinstance(atol, Tensor) else
                              _ops.full_like(cutoff, atol))
    keep = s > cutoff
    inverse = _ops.where(keep, 1.0 / _ops.where(keep, s, _ops.ones_like(s)), _ops.zeros_like(s))
    return _ops.matmul(v * _ops.unsqueeze(inverse, -2), _transpose(u))
