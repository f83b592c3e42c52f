"""More of MindSpore's linear-algebra primitives: triangular, Cholesky and LU solves, LU
unpacking, least squares, and QR in its three forms (Qr; Geqrf's Householder reflectors and
Orgqr, which turns them into Q).

Solves and unpacking are composed of pijit ops (substitution row by row), so they capture
into graphs and are differentiated by the rules of the ops they are made of. Permutations
are read from the pivots on the host, and Qr and Geqrf are LAPACK's (NumPy's) on the host,
so a captured graph breaks at them; Qr's gradient is a bprop of pijit ops."""
import numpy as np

from pijit import _C
from pijit._ops_composed import swapaxes
from pijit._ops_svd import pinv
from pijit._tensor import Tensor, float16, float32, float64
from pijit.mint._checks import check_bool, check_tensor, is_int, raise_error
from pijit.nn.cell import Cell
from pijit.numpy._utils import broadcast_shapes
from pijit.numpy.creation import tril, triu
from pijit.ops import Primitive

_ops = _C.ops

__all__ = ["MatrixTriangularSolve", "CholeskySolve", "LuSolve", "LuUnpack", "Lstsq", "Qr",
           "Geqrf", "Orgqr", "orgqr"]

_FLOATS = (float16, float32, float64)


def _transpose(x):
    return swapaxes(x, -1, -2)


def _check_float_matrix(fname, name, x, square=False):
    check_tensor(fname, name, x)
    if x.dtype not in _FLOATS:
        raise_error(TypeError, f"{fname}: {name} must be float16, float32 or float64, got {x.dtype}")
    if x.ndim < 2 or (square and x.shape[-1] != x.shape[-2]):
        kind = "square matrices (*, M, M)" if square else "matrices (*, M, N)"
        raise_error(ValueError, f"{fname}: {name} must be {kind}, got shape {tuple(x.shape)}")
    return x


def _broadcast_batches(fname, a, b):
    """a and b with their batch axes (all but the last two) broadcast together."""
    batch = broadcast_shapes(fname, tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    grow = lambda t: t if tuple(t.shape[:-2]) == batch else _ops.broadcast_to(  # noqa: E731
        t, batch + tuple(t.shape[-2:]))
    return grow(a), grow(b)


def _substitute(matrix, rhs, lower, unit_diagonal=False):
    """X with triangle(matrix) @ X = rhs, one row at a time (forward substitution for lower,
    backward for upper); only that triangle of matrix is read, and with unit_diagonal not its
    diagonal either (taken as ones, as packed LU data holds L)."""
    n = matrix.shape[-1]
    rows = [None] * n
    for i in (range(n) if lower else range(n - 1, -1, -1)):
        start, stop = (0, i) if lower else (i + 1, n)
        value = rhs[..., i:i + 1, :]
        if stop > start:
            known = _ops.concat(rows[start:stop], -2)
            value = value - _ops.matmul(matrix[..., i:i + 1, start:stop], known)
        rows[i] = value if unit_diagonal else value / matrix[..., i:i + 1, i:i + 1]
    return _ops.concat(rows, -2)


def _solve_triangular(fname, matrix, rhs, lower, transpose=False):
    _check_float_matrix(fname, "matrix", matrix, square=True)
    _check_float_matrix(fname, "rhs", rhs)
    if matrix.dtype != rhs.dtype:
        raise_error(TypeError, f"{fname}: matrix and rhs must have one dtype, got {matrix.dtype} "
                               f"and {rhs.dtype}")
    if rhs.shape[-2] != matrix.shape[-1]:
        raise_error(ValueError, f"{fname}: rhs has {rhs.shape[-2]} rows, matrix is "
                                f"{matrix.shape[-1]}x{matrix.shape[-1]}")
    matrix, rhs = _broadcast_batches(fname, matrix, rhs)
    if transpose:
        matrix, lower = _transpose(matrix), not lower
    return _substitute(matrix, rhs, lower)


class MatrixTriangularSolve(Primitive):
    """MatrixTriangularSolve(lower=True, adjoint=False)(matrix, rhs): X with matrix @ X = rhs
    for triangular matrices (*, M, M) (the lower or the upper triangle is read, the rest
    ignored), or matrix^T @ X = rhs with adjoint; rhs (*, M, K); batch axes broadcast."""

    def __init__(self, lower=True, adjoint=False):
        check_bool("MatrixTriangularSolve", "lower", lower)
        check_bool("MatrixTriangularSolve", "adjoint", adjoint)
        super().__init__(lower=lower, adjoint=adjoint)

    def __call__(self, matrix, rhs):
        return _solve_triangular("MatrixTriangularSolve", matrix, rhs, self.lower, self.adjoint)


class CholeskySolve(Primitive):
    """CholeskySolve(upper=False)(x1, x2): X with A @ X = x1, where x2 is A's Cholesky factor
    (A = L @ L^T with L = x2 lower-triangular; A = U^T @ U with upper)."""

    def __init__(self, upper=False):
        check_bool("CholeskySolve", "upper", upper)
        super().__init__(upper=upper)

    def __call__(self, x1, x2):
        half = _solve_triangular("CholeskySolve", x2, x1, lower=not self.upper,
                                 transpose=self.upper)
        return _solve_triangular("CholeskySolve", x2, half, lower=not self.upper,
                                 transpose=not self.upper)


def _check_pivots(fname, data, pivots):
    check_tensor(fname, "LU_pivots", pivots)
    if not is_int(pivots):
        raise_error(TypeError, f"{fname}: LU_pivots must be an integer Tensor, got {pivots.dtype}")
    m, n = data.shape[-2], data.shape[-1]
    if pivots.ndim < 1 or pivots.shape[-1] != min(m, n) or \
            tuple(pivots.shape[:-1]) != tuple(data.shape[:-2]):
        raise_error(ValueError, f"{fname}: LU_pivots must have shape "
                                f"{tuple(data.shape[:-2]) + (min(m, n),)} for LU_data of shape "
                                f"{tuple(data.shape)}, got {tuple(pivots.shape)}")
    values = pivots.asnumpy().astype(np.int64)
    if values.size and (values.min() < 1 or values.max() > m):
        raise_error(ValueError, f"{fname}: LU_pivots must be in [1, {m}] (LAPACK's 1-based row "
                                f"numbers), got values from {values.min()} to {values.max()}")
    return values


def _permutations(pivots, m, dtype):
    """The permutation matrices P (*, M, M) with A = P @ L @ U for LAPACK's row swaps (1-based
    pivots): row i of L @ U is the row of A that the swaps brought to position i."""
    orders = np.broadcast_to(np.arange(m), pivots.shape[:-1] + (m,)).copy()
    for index in np.ndindex(pivots.shape[:-1]):
        order = orders[index]
        for i, p in enumerate(pivots[index] - 1):
            order[i], order[p] = order[p], order[i]
    matrices = np.zeros(orders.shape + (m,), dtype=dtype)
    np.put_along_axis(matrices, orders[..., None, :], 1, axis=-2)  # P[orders[i], i] = 1
    return matrices


class LuUnpack(Primitive):
    """LuUnpack(unpack_data=True, unpack_pivots=True)(LU_data, LU_pivots): (P, L, U) with
    A = P @ L @ U, from LAPACK's packed LU factorisation (getrf: L's unit diagonal implied,
    1-based pivots). L is (*, M, K) and U (*, K, N), K = min(M, N); P is (*, M, M). A part not
    asked for is None."""

    def __init__(self, unpack_data=True, unpack_pivots=True):
        check_bool("LuUnpack", "unpack_data", unpack_data)
        check_bool("LuUnpack", "unpack_pivots", unpack_pivots)
        super().__init__(unpack_data=unpack_data, unpack_pivots=unpack_pivots)

    def __call__(self, LU_data, LU_pivots):  # noqa: N803 - MindSpore's names
        check_tensor("LuUnpack", "LU_data", LU_data)
        if LU_data.ndim < 2:
            raise_error(ValueError, f"LuUnpack: LU_data must be at least 2-D, got shape "
                                    f"{tuple(LU_data.shape)}")
        pivots = _check_pivots("LuUnpack", LU_data, LU_pivots)
        m, n = LU_data.shape[-2], LU_data.shape[-1]
        k = min(m, n)
        permutation = lower = upper = None
        if self.unpack_pivots:
            permutation = Tensor(_permutations(pivots, m, LU_data.dtype.to_numpy()))
        if self.unpack_data:
            eye = _ops.eye(m, k, dtype=LU_data.dtype)
            lower = tril(LU_data[..., :, :k], -1) + eye
            upper = triu(LU_data[..., :k, :])
        return permutation, lower, upper


class LuSolve(Primitive):
    """LuSolve()(x, LU_data, LU_pivots): X with A @ X = x, from A's packed LU factorisation
    (LAPACK's getrf, as LuUnpack reads it); x is (*, M, K), LU_data (*, M, M)."""

    def __call__(self, x, LU_data, LU_pivots):  # noqa: N803
        _check_float_matrix("LuSolve", "LU_data", LU_data, square=True)
        _check_float_matrix("LuSolve", "x", x)
        if x.shape[-2] != LU_data.shape[-1] or tuple(x.shape[:-2]) != tuple(LU_data.shape[:-2]):
            raise_error(ValueError, f"LuSolve: x of shape {tuple(x.shape)} does not fit LU_data "
                                    f"of shape {tuple(LU_data.shape)}")
        pivots = _check_pivots("LuSolve", LU_data, LU_pivots)
        permutation = _permutations(pivots, LU_data.shape[-1], LU_data.dtype.to_numpy())
        # P^T x: the rows of x in the factorisation's order.
        permuted = _ops.matmul(Tensor(np.ascontiguousarray(np.swapaxes(permutation, -1, -2))), x)
        half = _substitute(LU_data, permuted, lower=True, unit_diagonal=True)  # L's 1s implied
        return _substitute(LU_data, half, lower=False)


def _normal_equations(x, a, l2):
    """The regularised least-squares solution through Cholesky (MindSpore's fast Lstsq):
    (x^T x + l2 I)^-1 x^T a for tall x, x^T (x x^T + l2 I)^-1 a for wide x."""
    m, n = x.shape[-2], x.shape[-1]
    tall = m >= n
    gram = _ops.matmul(_transpose(x), x) if tall else _ops.matmul(x, _transpose(x))
    if l2:
        gram = gram + l2 * _ops.eye(gram.shape[-1], dtype=gram.dtype)
    from pijit._ops_misc_extra import cholesky
    factor = cholesky(gram)
    rhs = _ops.matmul(_transpose(x), a) if tall else a
    solved = _substitute(_transpose(factor), _substitute(factor, rhs, lower=True), lower=False)
    return solved if tall else _ops.matmul(_transpose(x), solved)


class Lstsq(Primitive):
    """Lstsq(fast=True, l2_regularizer=0.0)(x, a): for a full-rank x (M, N) and a (M, K) or
    (M,), the Y (N, K) or (N,) minimising ||x Y - a|| (M >= N) or, of those with x Y = a, the
    smallest (M < N). fast solves the normal equations by Cholesky; otherwise the
    pseudo-inverse (singular values) gives Y, or with l2_regularizer > 0 the regularised
    normal equations do."""

    def __init__(self, fast=True, l2_regularizer=0.0):
        check_bool("Lstsq", "fast", fast)
        if isinstance(l2_regularizer, bool) or not isinstance(l2_regularizer, (int, float)) \
                or l2_regularizer < 0:
            raise_error(ValueError, f"Lstsq: l2_regularizer must be a float >= 0, got "
                                    f"{l2_regularizer!r}")
        super().__init__(fast=fast, l2_regularizer=float(l2_regularizer))

    def __call__(self, x, a):
        _check_float_matrix("Lstsq", "x", x)
        check_tensor("Lstsq", "a", a)
        if x.ndim != 2:
            raise_error(ValueError, f"Lstsq: x must be 2-D, got shape {tuple(x.shape)}")
        if a.ndim not in (1, 2) or a.shape[0] != x.shape[0]:
            raise_error(ValueError, f"Lstsq: a must be ({x.shape[0]}, K) or ({x.shape[0]},) for "
                                    f"x of shape {tuple(x.shape)}, got {tuple(a.shape)}")
        if a.dtype != x.dtype:
            raise_error(TypeError, f"Lstsq: x and a must have one dtype, got {x.dtype} and "
                                   f"{a.dtype}")
        dtype = x.dtype
        if dtype != float64:  # the normal equations square x's condition: solved in float64
            x, a = x.astype(float64), a.astype(float64)
        column = a.ndim == 1
        rhs = _ops.unsqueeze(a, -1) if column else a
        if self.fast or self.l2_regularizer:
            y = _normal_equations(x, rhs, self.l2_regularizer)
        else:
            y = _ops.matmul(pinv(x), rhs)
        y = _ops.squeeze(y, -1) if column else y
        return y.astype(dtype)


def _copy_lower_to_upper(m):
    return tril(m) + _transpose(tril(m, -1))


def _qr_gradient_square_or_tall(q, r, dq, dr):
    """d(A) for A = Q R (M >= N, reduced): (dQ + Q sym(M)) R^-T with M = R dR^T - dQ^T Q."""
    m = _ops.matmul(r, _transpose(dr)) - _ops.matmul(_transpose(dq), q)
    b = dq + _ops.matmul(q, _copy_lower_to_upper(m))
    # B R^-T: solve R X^T = B^T (R upper triangular).
    return _transpose(_substitute(r, _transpose(b), lower=False))


class _QrDecomposition(Cell):
    """LAPACK's QR of each matrix, with its gradient (full rank; the complete Q of a tall
    matrix has no gradient, its extra columns being any orthonormal completion)."""

    def __init__(self, full_matrices):
        super().__init__()
        self.full_matrices = full_matrices

    def construct(self, x):
        values = x.asnumpy()
        q, r = np.linalg.qr(values, mode="complete" if self.full_matrices else "reduced")
        return Tensor(np.ascontiguousarray(q, values.dtype)), \
            Tensor(np.ascontiguousarray(r, values.dtype))

    def bprop(self, x, out, dout):
        (q, r), (dq, dr) = out, dout
        m, n = x.shape[-2], x.shape[-1]
        if self.full_matrices and m > n:
            raise_error(ValueError, "Qr: the gradient of the complete Q of a matrix with more "
                                    "rows than columns is not defined (full_matrices=False has it)")
        if m >= n:
            return (_qr_gradient_square_or_tall(q, r, dq, dr),)
        # Wide: A = [X | Y] with X = Q U and Y = Q V, R = [U | V].
        u, v, du, dv = r[..., :, :m], r[..., :, m:], dr[..., :, :m], dr[..., :, m:]
        y = x[..., :, m:]
        dx = _qr_gradient_square_or_tall(q, u, dq + _ops.matmul(y, _transpose(dv)), du)
        return (_ops.concat((dx, _ops.matmul(q, dv)), -1),)


class Qr(Primitive):
    """Qr(full_matrices=False)(x): (Q, R) with x = Q @ R for each matrix (*, M, N), Q with
    orthonormal columns, R upper triangular: Q (*, M, K) and R (*, K, N), K = min(M, N), or
    Q (*, M, M) and R (*, M, N) with full_matrices (LAPACK's signs)."""

    def __init__(self, full_matrices=False):
        check_bool("Qr", "full_matrices", full_matrices)
        super().__init__(full_matrices=full_matrices)

    def __call__(self, x):
        _check_float_matrix("Qr", "x", x)
        if x.dtype == float16:
            q, r = _QrDecomposition(self.full_matrices)(x.astype(float32))
            return q.astype(float16), r.astype(float16)
        return _QrDecomposition(self.full_matrices)(x)


class _Householder(Cell):
    """LAPACK's geqrf on the host; the reflectors are not differentiated."""

    def construct(self, x):
        values = x.asnumpy()
        m, n = values.shape[-2:]
        packed = np.empty(values.shape, values.dtype)
        scales = np.empty(values.shape[:-2] + (min(m, n),), values.dtype)
        for index in np.ndindex(values.shape[:-2]):
            h, tau = np.linalg.qr(values[index], mode="raw")
            packed[index], scales[index] = h.T, tau
        return Tensor(packed), Tensor(scales)

    def bprop(self, x, out, dout):
        raise_error(ValueError, "Geqrf: the Householder reflectors have no gradient (Qr has "
                                "one)")


class Geqrf(Primitive):
    """Geqrf()(x): (y, tau), LAPACK's QR in Householder form for each matrix (*, M, N): R in
    y's upper triangle, the reflectors' vectors below it (their leading 1 implied) and their
    scales in tau (*, min(M, N)). Orgqr turns them into Q."""

    def __call__(self, x):
        _check_float_matrix("Geqrf", "x", x)
        if x.dtype == float16:
            y, tau = _Householder()(x.astype(float32))
            return y.astype(float16), tau.astype(float16)
        return _Householder()(x)


def orgqr(input, input2):  # noqa: A002 - MindSpore's names
    """The first N columns of Q = H_1 H_2 ... H_K for Householder reflectors
    H_i = I - tau_i v_i v_i^T as Geqrf gives them: input (*, M, N) holds the vectors v_i below
    its diagonal (v_i's entry i is 1, those above 0), input2 (*, K) the scales tau;
    M >= N >= K. Composed of pijit ops, so it is differentiated with respect to both."""
    _check_float_matrix("orgqr", "input", input)
    check_tensor("orgqr", "input2", input2)
    m, n = input.shape[-2], input.shape[-1]
    k = input2.shape[-1] if input2.ndim else -1
    if not (m >= n >= k >= 0) or tuple(input2.shape[:-1]) != tuple(input.shape[:-2]):
        raise_error(ValueError, f"orgqr: needs input (*, M, N) and input2 (*, K) with "
                                f"M >= N >= K, got {tuple(input.shape)} and "
                                f"{tuple(input2.shape)}")
    if input2.dtype != input.dtype:
        raise_error(TypeError, f"orgqr: input and input2 must have one dtype, got "
                               f"{input.dtype} and {input2.dtype}")
    rows = _ops.arange(m)
    q = _ops.broadcast_to(_ops.eye(m, n, dtype=input.dtype), tuple(input.shape))
    for i in range(k - 1, -1, -1):
        below = _ops.greater(rows, i).astype(input.dtype)
        at = _ops.equal(rows, i).astype(input.dtype)
        v = _ops.unsqueeze(input[..., :, i] * below + at, -1)  # (*, M, 1)
        scale = _ops.unsqueeze(_ops.unsqueeze(input2[..., i], -1), -1)
        q = q - scale * _ops.matmul(v, _ops.matmul(_transpose(v), q))
    return q


class Orgqr(Primitive):
    """Orgqr()(x, tau): ops.orgqr(x, tau)."""

    def __call__(self, x, tau):
        return orgqr(x, tau)
