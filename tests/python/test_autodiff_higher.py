"""Gradients of gradients on the eager tape: while an enclosing gradient records, an inner
gradient runs its backward op by op and every recording tape records it, so the result can
be differentiated again. Checked against closed forms and finite differences."""
import numpy as np
import pytest

import pijit as ms
import pijit.nn as nn
from pijit import ops


def T(a):
    return ms.Tensor(np.asarray(a, np.float64))


X = np.array([0.7, -1.3, 2.1, 0.05])


@pytest.mark.parametrize("name,f,d2", [
    ("cube", lambda x: x ** 3, lambda x: 6 * x),
    ("tanh", ops.tanh, lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)),
    ("sin", ops.sin, lambda x: -np.sin(x)),
    ("x_exp", lambda x: x * ops.exp(x), lambda x: (x + 2) * np.exp(x)),
    ("sigmoid", ops.sigmoid,
     lambda x: (s := 1 / (1 + np.exp(-x))) * (1 - s) * (1 - 2 * s)),
    ("softplus", ops.softplus, lambda x: (s := 1 / (1 + np.exp(-x))) * (1 - s)),
])
def test_second_derivatives_match_closed_forms(name, f, d2):
    first = ms.grad(lambda x: ops.sum(f(x)))
    second = ms.grad(lambda x: ops.sum(first(x)))
    np.testing.assert_allclose(second(T(X)).asnumpy(), d2(X), rtol=1e-10, atol=1e-12)


def test_third_derivative():
    d1 = ms.grad(lambda x: ops.sum(x ** 4))
    d2 = ms.grad(lambda x: ops.sum(d1(x)))
    d3 = ms.grad(lambda x: ops.sum(d2(x)))
    np.testing.assert_allclose(d3(T(X)).asnumpy(), 24 * X, rtol=1e-12)


def test_hessian_vector_product_matches_finite_differences():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 4))
    v = rng.standard_normal(4)

    def f(x):
        y = ops.matmul(T(a), x)
        return ops.sum(ops.tanh(y) * y) + ops.sum(x * x * x)

    grad_f = ms.grad(f)
    hvp = ms.grad(lambda x: ops.sum(grad_f(x) * T(v)))(T(X)).asnumpy()
    eps = 1e-6
    fd = (grad_f(T(X + eps * v)).asnumpy() - grad_f(T(X - eps * v)).asnumpy()) / (2 * eps)
    np.testing.assert_allclose(hvp, fd, rtol=1e-6, atol=1e-8)


class Linear(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = ms.Parameter(T(np.array([[0.5, -1.0], [2.0, 0.3], [-0.7, 1.1]])), name="w")

    def construct(self, x):
        return ops.tanh(ops.matmul(x, self.w))


def test_gradient_penalty_differentiated_with_respect_to_weights():
    # loss(w) = sum(d/dx sum(net(x))^2): the input gradient's norm, differentiated in w.
    net = Linear()
    x = T(np.array([[0.2, -0.4, 0.9], [1.0, 0.1, -0.3]]))

    def penalty():
        gx = ms.grad(lambda v: ops.sum(net(v)))(x)
        return ops.sum(gx * gx)

    got = ms.grad(lambda: penalty(), grad_position=None, weights=net.trainable_params())()[0]
    w0 = net.w.asnumpy().copy()
    want = np.zeros_like(w0)
    eps = 1e-6
    for i in np.ndindex(w0.shape):
        vals = []
        for d in (eps, -eps):
            w = w0.copy()
            w[i] += d
            net.w.set_data(T(w))
            vals.append(float(penalty().asnumpy()))
        want[i] = (vals[0] - vals[1]) / (2 * eps)
    net.w.set_data(T(w0))
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6, atol=1e-9)


class Doubler(nn.Cell):
    def construct(self, x):
        return x * 2.0

    def bprop(self, x, out, dout):
        return (dout * 2.0,)


def test_second_order_through_a_custom_bprop_is_refused_clearly():
    d = Doubler()
    inner = ms.grad(lambda x: ops.sum(d(x) * x))
    with pytest.raises(NotImplementedError, match="custom bprop"):
        ms.grad(lambda x: ops.sum(inner(x)))(T(X))
