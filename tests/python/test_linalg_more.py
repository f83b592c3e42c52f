"""MatrixTriangularSolve, CholeskySolve, LuSolve, LuUnpack, Lstsq, Qr, Geqrf and Orgqr against
NumPy and SciPy, gradients against finite differences, jitted calls against eager ones."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops

from gradcheck_util import central_differences

scipy_linalg = pytest.importorskip("scipy.linalg", reason="SciPy gives the reference LU factors")


def _rng(seed=0):
    return np.random.default_rng(seed)


def _lower(shape, seed=0):
    """Well-conditioned lower-triangular matrices with noise above the diagonal (which the
    solves must ignore)."""
    a = _rng(seed).standard_normal(shape)
    n = shape[-1]
    return np.tril(a) + 3 * np.eye(n), np.triu(a, 1)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-5), (np.float64, 1e-12)])
def test_matrix_triangular_solve(lower, adjoint, dtype, tol):
    low, noise = _lower((2, 4, 4))
    triangle = low if lower else np.swapaxes(low, -1, -2)
    stored = triangle + (noise if lower else np.swapaxes(noise, -1, -2))  # noise in the other half
    rhs = _rng(1).standard_normal((2, 4, 3))
    op = triangle if not adjoint else np.swapaxes(triangle, -1, -2)
    got = ops.MatrixTriangularSolve(lower=lower, adjoint=adjoint)(
        ms.Tensor(stored.astype(dtype)), ms.Tensor(rhs.astype(dtype)))
    assert got.dtype == ms.Tensor(np.zeros(1, dtype)).dtype
    np.testing.assert_allclose(got.asnumpy(), np.linalg.solve(op, rhs), rtol=tol, atol=tol)


def test_triangular_solve_broadcasts_batches_and_checks_shapes():
    low, _ = _lower((4, 4))
    rhs = _rng(2).standard_normal((3, 4, 2))
    got = ops.MatrixTriangularSolve()(ms.Tensor(low), ms.Tensor(rhs))
    np.testing.assert_allclose(got.asnumpy(), np.linalg.solve(low, rhs), atol=1e-12)
    with pytest.raises(ValueError, match="rhs has 3 rows"):
        ops.MatrixTriangularSolve()(ms.Tensor(low), ms.Tensor(np.ones((3, 2))))
    with pytest.raises(TypeError, match="one dtype"):
        ops.MatrixTriangularSolve()(ms.Tensor(low), ms.Tensor(np.ones((4, 2), np.float32)))
    with pytest.raises(ValueError, match="square matrices"):
        ops.MatrixTriangularSolve()(ms.Tensor(np.ones((4, 3))), ms.Tensor(np.ones((4, 2))))


def test_triangular_solve_gradient():
    low, _ = _lower((3, 3))
    rhs = _rng(3).standard_normal((3, 2))
    w = _rng(4).standard_normal((3, 2))
    solve = ops.MatrixTriangularSolve()
    grads = ms.grad(lambda a, b: (solve(a, b) * ms.Tensor(w)).sum(), grad_position=(0, 1))(
        ms.Tensor(low), ms.Tensor(rhs))
    np.testing.assert_allclose(grads[0].asnumpy(), np.tril(central_differences(
        lambda a: (np.linalg.solve(np.tril(a), rhs) * w).sum(), low)), atol=1e-6)
    np.testing.assert_allclose(grads[1].asnumpy(), central_differences(
        lambda b: (np.linalg.solve(low, b) * w).sum(), rhs), atol=1e-6)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve(upper):
    a = _rng(5).standard_normal((2, 4, 4))
    spd = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)
    factor = np.linalg.cholesky(spd)
    if upper:
        factor = np.swapaxes(factor, -1, -2)
    rhs = _rng(6).standard_normal((2, 4, 3))
    got = ops.CholeskySolve(upper=upper)(ms.Tensor(rhs), ms.Tensor(factor))
    np.testing.assert_allclose(got.asnumpy(), np.linalg.solve(spd, rhs), atol=1e-12)


def _lu(a):
    factors = [scipy_linalg.lu_factor(m) for m in a.reshape((-1,) + a.shape[-2:])]
    lu = np.stack([f[0] for f in factors]).reshape(a.shape)
    pivots = np.stack([f[1] for f in factors]).reshape(a.shape[:-2] + (-1,)) + 1  # 1-based
    return lu, pivots.astype(np.int32)


def test_lu_solve_and_unpack():
    a = _rng(7).standard_normal((2, 4, 4))
    lu, pivots = _lu(a)
    rhs = _rng(8).standard_normal((2, 4, 3))
    got = ops.LuSolve()(ms.Tensor(rhs), ms.Tensor(lu), ms.Tensor(pivots))
    np.testing.assert_allclose(got.asnumpy(), np.linalg.solve(a, rhs), atol=1e-12)
    p, lower, upper = ops.LuUnpack()(ms.Tensor(lu), ms.Tensor(pivots))
    for i in range(2):
        want_p, want_l, want_u = scipy_linalg.lu(a[i])
        np.testing.assert_array_equal(p.asnumpy()[i], want_p)
        np.testing.assert_allclose(lower.asnumpy()[i], want_l, atol=1e-12)
        np.testing.assert_allclose(upper.asnumpy()[i], want_u, atol=1e-12)
    only_p = ops.LuUnpack(unpack_data=False)(ms.Tensor(lu), ms.Tensor(pivots))
    assert only_p[1] is None and only_p[2] is None
    np.testing.assert_array_equal(only_p[0].asnumpy(), p.asnumpy())


@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_lu_unpack_of_rectangular_factors(shape):
    a = _rng(9).standard_normal(shape)
    lu, pivots = _lu(a)
    p, lower, upper = ops.LuUnpack()(ms.Tensor(lu), ms.Tensor(pivots))
    k = min(shape)
    assert lower.shape == (shape[0], k) and upper.shape == (k, shape[1])
    np.testing.assert_allclose(p.asnumpy() @ lower.asnumpy() @ upper.asnumpy(), a, atol=1e-12)


def test_lu_pivots_are_checked():
    lu, pivots = _lu(_rng(10).standard_normal((3, 3)))
    with pytest.raises(ValueError, match=r"must be in \[1, 3\]"):
        ops.LuUnpack()(ms.Tensor(lu), ms.Tensor(pivots - 1))
    with pytest.raises(ValueError, match="must have shape"):
        ops.LuSolve()(ms.Tensor(np.ones((3, 1))), ms.Tensor(lu), ms.Tensor(pivots[:2]))
    with pytest.raises(TypeError, match="integer Tensor"):
        ops.LuUnpack()(ms.Tensor(lu), ms.Tensor(pivots.astype(np.float32)))


def test_lstsq_as_mindspore_documents():
    x = ms.Tensor(np.array([[2, 1, 5], [3, 5, 1], [1, 1, 1]]), ms.float32)
    a = ms.Tensor(np.array([[10, 5], [15, 8], [7, 4]]), ms.float32)
    np.testing.assert_allclose(ops.Lstsq()(x, a).asnumpy(),
                               [[17, 11], [-6.5, -4.5], [-3.5, -2.5]], atol=1e-4)


@pytest.mark.parametrize("shape", [(6, 3), (3, 6)])
@pytest.mark.parametrize("fast", [True, False])
def test_lstsq_least_squares_and_least_norm(shape, fast):
    x = _rng(11).standard_normal(shape)
    a = _rng(12).standard_normal((shape[0], 2))
    want = np.linalg.lstsq(x, a, rcond=None)[0]
    got = ops.Lstsq(fast=fast)(ms.Tensor(x), ms.Tensor(a))
    np.testing.assert_allclose(got.asnumpy(), want, atol=1e-10)
    column = ops.Lstsq(fast=fast)(ms.Tensor(x), ms.Tensor(a[:, 0]))
    np.testing.assert_allclose(column.asnumpy(), want[:, 0], atol=1e-10)


def test_lstsq_regularised():
    x, a = _rng(13).standard_normal((6, 3)), _rng(14).standard_normal((6, 2))
    got = ops.Lstsq(l2_regularizer=0.5)(ms.Tensor(x), ms.Tensor(a))
    np.testing.assert_allclose(got.asnumpy(), np.linalg.solve(x.T @ x + 0.5 * np.eye(3), x.T @ a),
                               atol=1e-12)
    with pytest.raises(ValueError, match="l2_regularizer"):
        ops.Lstsq(l2_regularizer=-1.0)
    with pytest.raises(ValueError, match="must be 2-D"):
        ops.Lstsq()(ms.Tensor(np.ones((2, 3, 3))), ms.Tensor(np.ones((2, 3))))


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 4, 3)])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_qr_matches_numpy(shape, full_matrices):
    x = _rng(15).standard_normal(shape)
    q, r = ops.Qr(full_matrices=full_matrices)(ms.Tensor(x))
    want_q, want_r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    np.testing.assert_allclose(q.asnumpy(), want_q, atol=1e-12)
    np.testing.assert_allclose(r.asnumpy(), want_r, atol=1e-12)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_qr_gradient_matches_finite_differences(shape):
    x = _rng(16).standard_normal(shape)
    k = min(shape)
    w_q, w_r = _rng(17).standard_normal((shape[0], k)), _rng(18).standard_normal((k, shape[1]))

    def numpy_loss(a):
        q, r = np.linalg.qr(a)
        return (q * w_q).sum() + (r * w_r).sum()

    def loss(a):
        q, r = ops.Qr()(a)
        return (q * ms.Tensor(w_q)).sum() + (r * ms.Tensor(w_r)).sum()

    np.testing.assert_allclose(ms.grad(loss)(ms.Tensor(x)).asnumpy(),
                               central_differences(numpy_loss, x), atol=1e-6)


def test_qr_gradient_of_complete_q_of_tall_matrix_is_refused():
    with pytest.raises(ValueError, match="not defined"):
        ms.grad(lambda a: ops.Qr(full_matrices=True)(a)[0].sum())(ms.Tensor(np.ones((4, 2))))


@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (2, 6, 2)])
def test_geqrf_and_orgqr_rebuild_q(shape):
    x = _rng(19).standard_normal(shape)
    y, tau = ops.Geqrf()(ms.Tensor(x))
    k = min(shape[-2:])
    assert y.shape == shape and tau.shape == shape[:-2] + (k,)
    want_q, want_r = np.linalg.qr(x)
    np.testing.assert_allclose(np.triu(y.asnumpy())[..., :k, :], want_r, atol=1e-12)
    np.testing.assert_allclose(ops.Orgqr()(y, tau).asnumpy(), want_q, atol=1e-12)
    np.testing.assert_allclose(ops.orgqr(y, tau).asnumpy(), want_q, atol=1e-12)


def test_orgqr_gradient_matches_finite_differences():
    rng = _rng(20)
    x, tau, w = rng.standard_normal((4, 3)), rng.uniform(0.5, 1.5, 2), rng.standard_normal((4, 3))

    def numpy_orgqr(a, t):
        q = np.eye(4, 3)
        for i in range(len(t) - 1, -1, -1):
            v = np.where(np.arange(4) > i, a[:, i], 0.0) + (np.arange(4) == i)
            q = q - t[i] * np.outer(v, v @ q)
        return q

    grads = ms.grad(lambda a, t: (ops.orgqr(a, t) * ms.Tensor(w)).sum(), grad_position=(0, 1))(
        ms.Tensor(x), ms.Tensor(tau))
    np.testing.assert_allclose(grads[0].asnumpy(), central_differences(
        lambda a: (numpy_orgqr(a, tau) * w).sum(), x), atol=1e-6)
    np.testing.assert_allclose(grads[1].asnumpy(), central_differences(
        lambda t: (numpy_orgqr(x, t) * w).sum(), tau), atol=1e-6)


def test_orgqr_rejects_bad_shapes():
    with pytest.raises(ValueError, match="M >= N >= K"):
        ops.orgqr(ms.Tensor(np.ones((3, 4))), ms.Tensor(np.ones(2)))
    with pytest.raises(TypeError, match="one dtype"):
        ops.orgqr(ms.Tensor(np.ones((4, 3))), ms.Tensor(np.ones(2, np.float32)))


def test_jitted_solves_equal_eager():
    low, _ = _lower((4, 4))
    rhs = ms.Tensor(_rng(21).standard_normal((4, 2)))
    solve = ops.MatrixTriangularSolve()
    f = lambda a, b: solve(a, b) * 2.0 + ops.orgqr(a[:, :2], ops.ones(2, ms.float64))  # noqa: E731
    jitted = ms.jit(f)  # composed of pijit ops: one graph
    np.testing.assert_allclose(jitted(ms.Tensor(low), rhs).asnumpy(),
                               f(ms.Tensor(low), rhs).asnumpy(), rtol=1e-14, atol=1e-14)
    qr = lambda a: ops.Qr()(a * 2.0)[1] + 1.0  # noqa: E731 - LAPACK on the host: a break
    x = ms.Tensor(_rng(22).standard_normal((4, 3)))
    np.testing.assert_array_equal(ms.jit(qr, capture_mode="bytecode")(x).asnumpy(),
                                  qr(x).asnumpy())
