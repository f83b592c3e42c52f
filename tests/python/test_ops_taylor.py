"""ops.jet and ops.derivative against closed-form derivatives computed with NumPy."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops

X = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)


class SinExp(nn.Cell):
    def construct(self, x):
        return ops.exp(ops.sin(x))


def sin_exp_derivatives(x):
    """d^k/dt^k exp(sin(x + t)) at t = 0 for k = 1, 2, 3 (by hand, product and chain rule)."""
    s, c, e = np.sin(x), np.cos(x), np.exp(np.sin(x))
    return [c * e, (c * c - s) * e, (c ** 3 - 3 * s * c - c) * e]


def test_jet_of_a_cell_along_the_unit_direction():
    series = np.zeros((3,) + X.shape, np.float32)
    series[0] = 1
    out, derivs = ops.jet(SinExp(), ms.Tensor(X), ms.Tensor(series))
    np.testing.assert_allclose(out.asnumpy(), np.exp(np.sin(X)), rtol=1e-6)
    assert derivs.shape == (3, 2, 2)
    for k, want in enumerate(sin_exp_derivatives(X)):
        np.testing.assert_allclose(derivs.asnumpy()[k], want, rtol=1e-5, atol=1e-5)


def test_jet_uses_the_higher_series_terms():
    # y = exp(x(t)) with x' = s1, x'' = s2, x''' = s3: y' = e s1, y'' = e (s1^2 + s2),
    # y''' = e (s1^3 + 3 s1 s2 + s3).
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 4))
    s1, s2, s3 = rng.normal(size=(3, 3, 4))
    out, derivs = ops.jet(ops.exp, ms.Tensor(x), ms.Tensor(np.stack([s1, s2, s3])))
    e = np.exp(x)
    want = [e * s1, e * (s1 ** 2 + s2), e * (s1 ** 3 + 3 * s1 * s2 + s3)]
    for k in range(3):
        np.testing.assert_allclose(derivs.asnumpy()[k], want[k], rtol=1e-10)
    np.testing.assert_allclose(out.asnumpy(), e, rtol=1e-12)


def test_jet_of_several_inputs_and_outputs():
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    sa, sb = np.array([[1.0, 0.5], [0.0, 2.0]]), np.array([[2.0, 1.0], [1.0, 0.0]])

    def fn(u, v):
        return u * v, u + v * v

    out, derivs = ops.jet(fn, (ms.Tensor(a), ms.Tensor(b)), (ms.Tensor(sa), ms.Tensor(sb)))
    np.testing.assert_allclose(out[0].asnumpy(), a * b)
    # (uv)' = u'v + uv', (uv)'' = u''v + 2u'v' + uv''; (u + v^2)' = u' + 2vv',
    # (u + v^2)'' = u'' + 2v'^2 + 2vv''.
    d1 = [sa[0] * b + a * sb[0], sa[0] + 2 * b * sb[0]]
    d2 = [sa[1] * b + 2 * sa[0] * sb[0] + a * sb[1], sa[1] + 2 * sb[0] ** 2 + 2 * b * sb[1]]
    for i in range(2):
        np.testing.assert_allclose(derivs[i].asnumpy(), np.stack([d1[i], d2[i]]), rtol=1e-12)


def test_derivative_is_the_unit_jet_of_that_order():
    out, third = ops.derivative(SinExp(), ms.Tensor(X), 3)
    np.testing.assert_allclose(third.asnumpy(), sin_exp_derivatives(X)[2], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out.asnumpy(), np.exp(np.sin(X)), rtol=1e-6)


def test_derivative_moves_every_input_and_converts_integers():
    a = ms.Tensor(np.array([1, 2], np.int32))
    b = ms.Tensor(np.array([3.0, 4.0], np.float32))
    _, second = ops.derivative(lambda u, v: u * v * v, (a, b), 2)
    # d2/dt2 (a + t)(b + t)^2 = 4 (b + t) + 2 (a + t) at t = 0.
    np.testing.assert_allclose(second.asnumpy(), 4 * np.array([3, 4]) + 2 * np.array([1, 2]))
    assert second.dtype == ms.float32


def test_derivative_inside_jit_equals_eager():
    net = SinExp()

    def second(x):
        return ops.derivative(net, x, 2)[1]

    eager = second(ms.Tensor(X))
    jitted = ms.jit(second)(ms.Tensor(X))
    np.testing.assert_allclose(jitted.asnumpy(), eager.asnumpy(), rtol=1e-6)


@pytest.mark.parametrize("call, error", [
    (lambda: ops.derivative(SinExp(), ms.Tensor(X), 0), ValueError),
    (lambda: ops.derivative(SinExp(), ms.Tensor(X), 1.5), TypeError),
    (lambda: ops.derivative(SinExp(), [1.0], 1), TypeError),
    (lambda: ops.jet(SinExp(), ms.Tensor(X), ms.Tensor(np.ones((2, 3), np.float32))), ValueError),
    (lambda: ops.jet(SinExp(), ms.Tensor(X), (ms.Tensor(X[None]),) * 2), TypeError),
    (lambda: ops.jet(42, ms.Tensor(X), ms.Tensor(X[None])), TypeError),
])
def test_bad_arguments_raise(call, error):
    with pytest.raises(error):
        call()
