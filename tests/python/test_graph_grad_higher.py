"""Gradients of gradients inside captured code: the inner gradient's backward is appended to
the graph like any ops, and the outer gradient differentiates through it. Results match the
eager tape's (tests/python/test_autodiff_higher.py checks those against closed forms)."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops

from jit_testutil import fresh  # noqa: F401 (autouse fixture)
from test_autodiff_higher import X, Doubler, Linear


def T(a, dtype=np.float64):
    return ms.Tensor(np.asarray(a, dtype))


def flat(v):
    if isinstance(v, (tuple, list)):
        return [t for item in v for t in flat(item)]
    return [v]


def one_graph(fn, *args, rtol=1e-12):
    want = fn(*args)
    jf = ms.jit(fn, mode="PIJit")
    for _ in range(2):
        got = jf(*args)
        for g, w in zip(flat(got), flat(want), strict=True):
            np.testing.assert_allclose(g.asnumpy(), w.asnumpy(), rtol=rtol, atol=1e-12)
    stats = ms.get_code_extra(jf)
    assert stats["compile_count"] == 1 and stats["eager_count"] == 0, stats
    assert stats["break_count"] == 0 and stats["graph_count"] == 1, stats
    return got


@pytest.mark.parametrize("f", [lambda x: x ** 3, ops.tanh, ops.sin, lambda x: x * ops.exp(x),
                               ops.sigmoid, ops.softplus],
                         ids=["cube", "tanh", "sin", "x_exp", "sigmoid", "softplus"])
def test_second_derivatives(f):
    first = ms.grad(lambda x: ops.sum(f(x)))
    second = ms.grad(lambda x: ops.sum(first(x)))
    one_graph(lambda x: second(x), T(X))


def test_third_derivative_and_float32():
    d1 = ms.grad(lambda x: ops.sum(x ** 4))
    d2 = ms.grad(lambda x: ops.sum(d1(x)))
    d3 = ms.grad(lambda x: ops.sum(d2(x)))
    got = one_graph(lambda x: d3(x), T(X))
    np.testing.assert_allclose(got.asnumpy(), 24 * X, rtol=1e-12)
    one_graph(lambda x: d2(x), T(X, np.float32), rtol=1e-6)


def test_hessian_vector_product():
    rng = np.random.default_rng(0)
    a = T(rng.standard_normal((4, 4)))
    v = T(rng.standard_normal(4))

    def f(x):
        y = ops.matmul(a, x)
        return ops.sum(ops.tanh(y) * y) + ops.sum(x * x * x)

    grad_f = ms.grad(f)
    hvp = ms.grad(lambda z: ops.sum(grad_f(z) * v))
    one_graph(lambda x: hvp(x), T(X))


def test_gradient_penalty_with_respect_to_weights():
    net = Linear()
    x = T(np.array([[0.2, -0.4, 0.9], [1.0, 0.1, -0.3]]))

    grad_x = ms.grad(lambda v: ops.sum(net(v)))

    def penalty():
        gx = grad_x(x)
        return ops.sum(gx * gx)

    grad_w = ms.grad(lambda: penalty(), grad_position=None, weights=net.trainable_params())
    one_graph(lambda: grad_w())


def test_second_order_through_a_custom_bprop_raises_as_eagerly():
    d = Doubler()
    inner = ms.grad(lambda x: ops.sum(d(x) * x))
    outer = ms.jit(lambda x: ms.grad(lambda z: ops.sum(inner(z)))(x), mode="PIJit")
    with pytest.raises(NotImplementedError, match="custom bprop"):
        outer(T(X))
    # A first-order gradient through it is one graph.
    one_graph(lambda x: inner(x), T(X))
