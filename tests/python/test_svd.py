"""ops.svd, ops.Svd, Tensor.svd and ops.pinv against NumPy, their gradients against finite
differences, and jitted calls against eager ones."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops

from gradcheck_util import central_differences

SHAPES = [(4, 3), (3, 5), (3, 3), (2, 4, 3), (2, 1, 3, 2)]


def _rng(seed=0):
    return np.random.default_rng(seed)


def _rebuild(s, u, v):
    return (u * s[..., None, :]) @ np.swapaxes(v, -1, -2)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype, tol", [(np.float32, 2e-5), (np.float64, 1e-12)])
def test_svd_matches_numpy(shape, dtype, tol):
    x = _rng().standard_normal(shape).astype(dtype)
    s, u, v = ops.svd(ms.Tensor(x))
    k = min(shape[-2:])
    assert s.shape == shape[:-2] + (k,) and u.shape == shape[:-1] + (k,)
    assert v.shape == shape[:-2] + (shape[-1], k) and s.dtype == u.dtype == v.dtype
    np.testing.assert_allclose(s.asnumpy(), np.linalg.svd(x, compute_uv=False), rtol=tol, atol=tol)
    np.testing.assert_allclose(_rebuild(s.asnumpy(), u.asnumpy(), v.asnumpy()), x, atol=tol * 10)
    eye = np.eye(k)
    np.testing.assert_allclose(np.swapaxes(u.asnumpy(), -1, -2) @ u.asnumpy(),
                               np.broadcast_to(eye, shape[:-2] + (k, k)), atol=tol * 10)


def test_full_matrices_and_the_primitive_as_mindspore_documents():
    a = ms.Tensor(np.array([[1, 2], [-4, -5], [2, 1]]).astype(np.float32))
    s, u, v = ops.Svd(full_matrices=True, compute_uv=True)(a)
    np.testing.assert_allclose(s.asnumpy(), [7.0652843, 1.040081], rtol=1e-5)
    assert u.shape == (3, 3) and v.shape == (2, 2)
    # Columns are determined up to their signs: compare magnitudes and the rebuilt matrix.
    np.testing.assert_allclose(np.abs(u.asnumpy()), np.abs([
        [0.30821905, -0.48819482, 0.81649697], [-0.90613353, 0.11070572, 0.40824813],
        [0.2896955, 0.8656849, 0.4082479]]), atol=1e-5)
    np.testing.assert_allclose(np.abs(v.asnumpy()), [[0.63863593, 0.769509],
                                                     [0.769509, 0.63863593]], atol=1e-5)
    np.testing.assert_allclose(_rebuild(s.asnumpy(), u.asnumpy()[:, :2], v.asnumpy()),
                               a.asnumpy(), atol=1e-5)
    s2, u2, v2 = ops.Svd(compute_uv=False)(a)
    np.testing.assert_array_equal(s2.asnumpy(), ops.svd(a, compute_uv=False).asnumpy())
    assert not u2.asnumpy().any() and u2.shape == (3, 2) and v2.shape == (2, 2)


def test_tensor_method_and_compute_uv_false():
    x = ms.Tensor(_rng(1).standard_normal((5, 4)))
    only_s = x.svd(compute_uv=False)
    assert isinstance(only_s, ms.Tensor)
    np.testing.assert_allclose(only_s.asnumpy(), np.linalg.svd(x.asnumpy(), compute_uv=False))


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (3, 3), (2, 3, 2)])
def test_svd_gradient_matches_finite_differences(shape):
    rng = _rng(2)
    x = rng.standard_normal(shape)
    k = min(shape[-2:])
    w_u, w_v = rng.standard_normal(shape[:-1] + (k,)), rng.standard_normal(shape[:-2] + (shape[-1], k))
    w_s = rng.standard_normal(shape[:-2] + (k,))

    # Squares of u and v: the loss does not depend on the columns' signs.
    def numpy_loss(a):
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        return (w_u * u * u).sum() + (w_v * np.swapaxes(vh, -1, -2) ** 2).sum() + (w_s * s).sum()

    def loss(a):
        s, u, v = ops.svd(a)
        return (ms.Tensor(w_u) * u * u).sum() + (ms.Tensor(w_v) * v * v).sum() + \
            (ms.Tensor(w_s) * s).sum()

    got = ms.grad(loss)(ms.Tensor(x)).asnumpy()
    np.testing.assert_allclose(got, central_differences(numpy_loss, x), atol=1e-6)


@pytest.mark.parametrize("full_matrices", [False, True])
def test_singular_values_gradient_is_u_v_transpose(full_matrices):
    x = _rng(3).standard_normal((4, 3))
    got = ms.grad(lambda a: ops.svd(a, full_matrices=full_matrices)[0].sum())(ms.Tensor(x))
    u, _, vh = np.linalg.svd(x, full_matrices=False)
    np.testing.assert_allclose(got.asnumpy(), u @ vh, atol=1e-12)
    only_s = ms.grad(lambda a: ops.svd(a, compute_uv=False).sum())(ms.Tensor(x))
    np.testing.assert_allclose(only_s.asnumpy(), u @ vh, atol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
def test_pinv_matches_numpy(shape):
    x = _rng(4).standard_normal(shape)
    np.testing.assert_allclose(ops.pinv(ms.Tensor(x)).asnumpy(), np.linalg.pinv(x), atol=1e-12)
    x32 = x.astype(np.float32)
    np.testing.assert_allclose(ops.pinv(ms.Tensor(x32)).asnumpy(), np.linalg.pinv(x32), atol=1e-4)


def test_pinv_tolerances_drop_small_singular_values():
    u, _ = np.linalg.qr(_rng(5).standard_normal((4, 4)))
    x = u @ np.diag([3.0, 1.0, 1e-3, 1e-9]) @ u.T
    for kwargs, cut in [({}, 1e-12), ({"rtol": 1e-2}, 3e-2), ({"atol": 0.5}, 0.5),
                        ({"atol": 1e-6, "rtol": 1e-4}, 3e-4)]:
        expected = np.linalg.pinv(x, rcond=cut / 3.0)
        np.testing.assert_allclose(ops.pinv(ms.Tensor(x), **kwargs).asnumpy(), expected,
                                   atol=1e-6, err_msg=str(kwargs))
    hermitian = ops.pinv(ms.Tensor(x), rtol=1e-2, hermitian=True)
    np.testing.assert_allclose(hermitian.asnumpy(), np.linalg.pinv(x, rcond=1e-2), atol=1e-6)


def test_pinv_gradient_matches_finite_differences():
    rng = _rng(6)
    x, w = rng.standard_normal((4, 3)), rng.standard_normal((3, 4))
    got = ms.grad(lambda a: (ops.pinv(a) * ms.Tensor(w)).sum())(ms.Tensor(x)).asnumpy()
    expected = central_differences(lambda a: (np.linalg.pinv(a) * w).sum(), x)
    np.testing.assert_allclose(got, expected, atol=1e-6)


def test_jitted_equals_eager():
    x = ms.Tensor(_rng(7).standard_normal((5, 3)))

    def rebuilt_and_inverse(a):
        s, u, v = ops.svd(a * 2.0)
        return ops.matmul(u * s, v.T) + 1.0, ops.pinv(a)

    jitted = ms.jit(rebuilt_and_inverse, capture_mode="bytecode")
    for got, want in zip(jitted(x), rebuilt_and_inverse(x)):
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
    grad = ms.grad(lambda a: (ops.pinv(a) ** 2).sum())
    np.testing.assert_array_equal(ms.jit(grad, capture_mode="bytecode")(x).asnumpy(),
                                  grad(x).asnumpy())


@pytest.mark.parametrize("call, error, message", [
    (lambda: ops.svd(ms.Tensor(np.ones((3, 3), np.int32))), TypeError, "float32 or float64"),
    (lambda: ops.svd(ms.Tensor(np.ones(3))), ValueError, "at least 2 dimensions"),
    (lambda: ops.svd(np.ones((2, 2))), TypeError, "must be a Tensor"),
    (lambda: ops.svd(ms.Tensor(np.ones((2, 2))), full_matrices=1), TypeError, "full_matrices"),
    (lambda: ops.svd(ms.Tensor(np.full((2, 2), np.nan))), ValueError, "NaN or infinity"),
    (lambda: ops.Svd(compute_uv="yes"), TypeError, "compute_uv"),
    (lambda: ops.pinv(ms.Tensor(np.ones((2, 2))), atol="big"), TypeError, "atol"),
])
def test_bad_input_is_rejected(call, error, message):
    with pytest.raises(error, match=message):
        call()
