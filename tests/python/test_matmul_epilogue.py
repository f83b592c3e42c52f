"""Matmuls followed by a bias, an activation or a residual add run as one fused_matmul node
(graph/passes/matmul_epilogue.h) whose results match eager execution."""
import numpy as np
import pytest

import pijit
from pijit import ops

from fusion_testutil import ACTIVATIONS, first_graph, fresh_jit

def _check(jf, f, args, exact):
    tensors = [pijit.Tensor(a) for a in args]
    got = jf(*tensors).asnumpy()
    want = f(*tensors).asnumpy()  # eager: one kernel per op
    if exact:
        np.testing.assert_array_equal(got, want)
    else:  # oneDNN's gelu/tanh/sigmoid (kMatMulEpilogueRelTol, absolute below 1)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    return got


@pytest.mark.parametrize("act", list(ACTIVATIONS))
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (3, 5, 7), (17, 33, 65), (64, 128, 48)])
def test_bias_and_activation_match_eager(act, bias, m, k, n):
    fn = ACTIVATIONS[act]

    def f(a, w, b):
        y = ops.matmul(a, w)
        if bias:
            y = y + b
        return fn(y) if fn is not None else y

    rng = np.random.default_rng(m * 100 + k * 10 + n)
    args = [rng.standard_normal((m, k), dtype=np.float32),
            rng.standard_normal((k, n), dtype=np.float32),
            rng.standard_normal(n, dtype=np.float32)]
    jf = fresh_jit(f)
    _check(jf, f, args, exact=act in ("none", "relu"))
    graph = first_graph(jf)
    if bias or fn is not None:
        assert graph.count("fused_matmul(") == 1, graph
        assert "add(" not in graph and f"{act}(" not in graph, graph
    else:
        assert "fused_matmul(" not in graph, graph


@pytest.mark.parametrize("trans_a,trans_b", [(False, True), (True, False), (True, True)])
def test_transposed_inputs(trans_a, trans_b):
    def f(a, w, b):
        if trans_a:
            a = ops.transpose(a, (1, 0))
        if trans_b:
            w = ops.transpose(w, (1, 0))
        return ops.relu(ops.matmul(a, w) + b)

    rng = np.random.default_rng(7)
    m, k, n = 19, 40, 23
    a = rng.standard_normal((k, m) if trans_a else (m, k), dtype=np.float32)
    w = rng.standard_normal((n, k) if trans_b else (k, n), dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    jf = fresh_jit(f)
    _check(jf, f, [a, w, b], exact=True)
    assert "fused_matmul(" in first_graph(jf)


def test_residual_add_and_stacked_rows():
    def f(x, w, b, r):
        return ops.tanh(ops.matmul(x, w) + b) + r

    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 5, 16), dtype=np.float32)
    w = rng.standard_normal((16, 24), dtype=np.float32)
    b = rng.standard_normal((1, 24), dtype=np.float32)
    r = rng.standard_normal((2, 5, 24), dtype=np.float32)
    jf = fresh_jit(f)
    _check(jf, f, [x, w, b, r], exact=False)
    graph = first_graph(jf)
    assert "post=[bias,tanh,add]" in graph, graph


def test_relu_keeps_nan_and_gives_positive_zero():
    def f(a, w, b):
        return ops.relu(ops.matmul(a, w) + b)

    a = np.ones((4, 8), np.float32)
    a[1, 2] = np.nan
    a[2] = -1
    w = np.ones((8, 16), np.float32)
    b = np.zeros(16, np.float32)
    b[3], b[4] = np.inf, -np.inf
    jf = fresh_jit(f)
    got = jf(*[pijit.Tensor(x) for x in (a, w, b)]).asnumpy()
    want = f(*[pijit.Tensor(x) for x in (a, w, b)]).asnumpy()
    assert np.isnan(got[1]).all()
    np.testing.assert_array_equal(got, want)
    assert not np.signbit(got[~np.isnan(got)]).any()
    assert "fused_matmul(" in first_graph(jf)


def test_product_read_twice_is_not_fused():
    def f(a, w, b):
        y = ops.matmul(a, w)
        return ops.relu(y + b), y

    rng = np.random.default_rng(9)
    args = [rng.standard_normal(s, dtype=np.float32) for s in ((6, 4), (4, 5), (5,))]
    jf = fresh_jit(f)
    tensors = [pijit.Tensor(x) for x in args]
    got = [t.asnumpy() for t in jf(*tensors)]
    want = [t.asnumpy() for t in f(*tensors)]
    for g, w_ in zip(got, want):
        np.testing.assert_array_equal(g, w_)
    assert "fused_matmul(" not in first_graph(jf)


def test_mlp_layers_each_become_one_node():
    def mlp(a, w0, b0, w1, b1):
        h = ops.relu(ops.matmul(a, w0) + b0)
        return ops.matmul(h, w1) + b1

    rng = np.random.default_rng(10)
    args = [rng.standard_normal(s, dtype=np.float32)
            for s in ((32, 20), (20, 64), (64,), (64, 3), (3,))]
    jf = fresh_jit(mlp)
    _check(jf, mlp, args, exact=True)
    graph = first_graph(jf)
    assert graph.count("fused_matmul(") == 2, graph
    assert "fused(" not in graph, graph


def test_float64_products_stay_unfused():
    def f(a, w, b):
        return ops.relu(ops.matmul(a, w) + b)

    rng = np.random.default_rng(11)
    args = [rng.standard_normal(s) for s in ((5, 6), (6, 7), (7,))]
    jf = fresh_jit(f)
    _check(jf, f, args, exact=True)
    assert "fused_matmul(" not in first_graph(jf)
