"""Convolutions followed by a channel bias, an activation or a residual add run as one
fused_conv2d node (graph/passes/conv_epilogue.h) whose results match eager execution: bit for
bit with bias, add and relu, within oneDNN's tolerance with gelu, tanh and sigmoid. Bit for bit
needs oneDNN to run the convolution with and without post-ops through one implementation, as
its AVX-512 kernels do; on AVX2-only hosts it picks different ones, which sum in another order,
and the results are compared within the tolerance."""
import os

import numpy as np
import pytest

import pijit
from pijit import nn, ops

from fusion_testutil import ACTIVATIONS, first_graph, fresh_jit


def _host_has_avx512():
    if not os.path.exists("/proc/cpuinfo"):
        return True
    with open("/proc/cpuinfo") as f:
        return " avx512f" in f.read()


HOST_AVX512 = _host_has_avx512()

def _check(jf, f, args, exact):
    tensors = [pijit.Tensor(a) for a in args]
    got = jf(*tensors)
    want = f(*tensors)  # eager: one kernel per op
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, e in zip(got, want):
        assert g.dtype == e.dtype and tuple(g.shape) == tuple(e.shape)
        g, e = g.asnumpy(), e.asnumpy()
        if exact and HOST_AVX512:
            # Bits: -0.0 against 0.0 and NaN payloads count.
            np.testing.assert_array_equal(g.view(np.uint8), e.view(np.uint8))
        else:  # oneDNN's gelu/tanh/sigmoid (kMatMulEpilogueRelTol, absolute below 1)
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


# (x shape, w shape, conv keywords): the direct kernels (stride 1, few channels), oneDNN on
# plain layouts (strided, dilated, grouped) and on blocked ones (many channels), the depthwise
# kernels (one channel per group, the second with two outputs per channel).
PROBLEMS = [
    ((4, 1, 28, 28), (6, 1, 5, 5), {}),
    ((2, 3, 10, 10), (5, 3, 3, 3), {"pad_mode": "same"}),
    ((2, 3, 11, 11), (4, 3, 3, 3), {"stride": 2, "pad_mode": "pad", "padding": 1}),
    ((2, 4, 12, 12), (4, 4, 3, 3), {"dilation": 2}),
    ((2, 8, 9, 9), (8, 2, 3, 3), {"group": 4, "pad_mode": "same"}),
    ((2, 32, 9, 9), (32, 32, 3, 3), {"pad_mode": "same"}),
    ((2, 8, 12, 12), (8, 1, 3, 3), {"group": 8, "pad_mode": "same"}),  # depthwise
    ((2, 6, 11, 11), (12, 1, 5, 5), {"group": 6, "stride": 2, "pad_mode": "pad", "padding": 2}),
]


def _conv_args(kw):
    """conv2d's keywords in full (a ** of a captured dict is a graph break)."""
    full = {"stride": 1, "pad_mode": "valid", "padding": 0, "dilation": 1, "group": 1}
    full.update(kw)
    return tuple(full.values())


def _data(xs, ws, seed, special=False):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs).astype(np.float32)
    if special:
        x[0, 0, :3, :3] = 0.0
        x[-1, -1, -2:, -2:] = -0.0
        x[0, 0, 4, 4] = np.nan
        x[-1, 0, 1, 2] = np.inf
        x[-1, 0, 5, 1] = -np.inf
    w = (rng.standard_normal(ws) * 0.3).astype(np.float32)
    return x, w, rng


@pytest.mark.parametrize("act", list(ACTIVATIONS))
@pytest.mark.parametrize("xs,ws,kw", PROBLEMS)
def test_bias_and_activation_match_eager(act, xs, ws, kw):
    fn = ACTIVATIONS[act]
    st, pm, pd, dl, gr = _conv_args(kw)

    def f(x, w, b):
        y = ops.conv2d(x, w, stride=st, pad_mode=pm, padding=pd, dilation=dl, group=gr) + b
        return fn(y) if fn is not None else y

    x, w, rng = _data(xs, ws, sum(xs))
    b = rng.standard_normal((ws[0], 1, 1)).astype(np.float32)
    jf = fresh_jit(f)
    _check(jf, f, [x, w, b], exact=act in ("none", "relu"))
    graph = first_graph(jf)
    assert graph.count("fused_conv2d(") == 1, graph
    assert "add(" not in graph and f" {act}(" not in graph, graph


@pytest.mark.parametrize("special", [False, True])
@pytest.mark.parametrize("xs,ws,kw", PROBLEMS)
def test_residual_block_matches_eager_bit_for_bit(special, xs, ws, kw):
    # conv-bias-relu-conv-bias, the skip add, relu; the skip is the first conv's result when
    # the block changes the shape.
    st, pm, pd, dl, gr = _conv_args(kw)

    def block(x, w1, b1, w2, b2):
        h = ops.relu(ops.conv2d(x, w1, stride=st, pad_mode=pm, padding=pd, dilation=dl,
                                group=gr) + b1)
        y = ops.conv2d(h, w2, pad_mode="same", group=gr) + b2
        return ops.relu(y + h)

    x, w1, rng = _data(xs, ws, 7 + sum(xs), special)
    o = ws[0]
    w2 = (rng.standard_normal((o, o // gr, 3, 3)) * 0.2).astype(np.float32)
    b1 = rng.standard_normal((1, o, 1, 1)).astype(np.float32)
    b2 = rng.standard_normal((o, 1, 1)).astype(np.float32)
    jf = fresh_jit(block)
    _check(jf, block, [x, w1, b1, w2, b2], exact=True)
    graph = first_graph(jf)
    assert graph.count("fused_conv2d(") == 2, graph
    assert "post=[bias,relu]" in graph and "post=[bias,add,relu]" in graph, graph
    assert "relu(" not in graph.replace("post=[", ""), graph


@pytest.mark.parametrize("act", ["relu", "gelu", "tanh", "sigmoid"])
@pytest.mark.parametrize("special", [False, True])
def test_nn_conv_with_bias_then_activation_and_residual(act, special):
    # nn.Conv2d(has_bias=True) passes its bias to conv2d: it stays the convolution's own.
    conv = nn.Conv2d(3, 8, 3, pad_mode="same", has_bias=True)
    conv.bias.set_data(pijit.Tensor(np.linspace(-1, 1, 8).astype(np.float32)))
    fn = ACTIVATIONS[act]

    def f(x, r):
        return fn(conv(x)) + r

    x, _, rng = _data((2, 3, 12, 12), (8, 3, 3, 3), 11, special)
    r = rng.standard_normal((2, 8, 12, 12)).astype(np.float32)
    jf = fresh_jit(f)
    _check(jf, f, [x, r], exact=act == "relu")
    graph = first_graph(jf)
    if act == "relu":  # relu is conv2d's own epilogue attribute: it ends the chain there
        assert "epilogue=relu" in graph, graph
    else:
        assert f"post=[{act},add]" in graph, graph


def test_special_values_with_every_activation():
    def f(x, w, b, r):
        c = ops.conv2d(x, w, pad_mode="same") + b
        return ops.tanh(c) + r, ops.relu(ops.conv2d(x, w) + r[:, :, 1:-1, 1:-1])

    x, w, rng = _data((2, 2, 9, 9), (4, 2, 3, 3), 5, special=True)
    b = rng.standard_normal((4, 1, 1)).astype(np.float32)
    r = rng.standard_normal((2, 4, 9, 9)).astype(np.float32)
    r[0, 0, 0, 0] = np.nan
    r[1, 1, 2, 2] = -0.0
    jf = fresh_jit(f)
    tensors = [pijit.Tensor(a) for a in (x, w, b, r)]
    got, want = jf(*tensors), f(*tensors)
    np.testing.assert_allclose(got[0].asnumpy(), want[0].asnumpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[1].asnumpy().view(np.uint8),
                                  want[1].asnumpy().view(np.uint8))
    assert first_graph(jf).count("fused_conv2d(") == 2, first_graph(jf)


def test_float64_is_left_unfused():
    def f(x, w, b, r):
        return ops.relu(ops.conv2d(x, w) + b + r)

    x, w, rng = _data((2, 2, 8, 8), (3, 2, 3, 3), 3)
    b = rng.standard_normal((3, 1, 1))
    r = rng.standard_normal((2, 3, 6, 6))
    jf = fresh_jit(f)
    _check(jf, f, [x.astype(np.float64), w.astype(np.float64), b, r], exact=True)
    assert "fused_conv2d(" not in first_graph(jf), first_graph(jf)


def test_intermediate_read_twice_is_left_unfused():
    def f(x, w, b):
        c = ops.conv2d(x, w) + b
        return ops.relu(c) * c

    x, w, rng = _data((2, 2, 8, 8), (3, 2, 3, 3), 4)
    b = rng.standard_normal((3, 1, 1)).astype(np.float32)
    jf = fresh_jit(f)
    _check(jf, f, [x, w, b], exact=True)
    graph = first_graph(jf)
    assert "post=[bias]" in graph and "post=[bias,relu]" not in graph, graph


def test_broadcasting_add_is_left_unfused():
    def f(x, w, r):
        return ops.conv2d(x, w) + r  # r makes the result larger than the convolution's

    x, w, rng = _data((2, 2, 8, 8), (3, 2, 3, 3), 6)
    r = rng.standard_normal((4, 2, 3, 6, 6)).astype(np.float32)
    jf = fresh_jit(f)
    _check(jf, f, [x, w, r], exact=True)
    assert "fused_conv2d(" not in first_graph(jf), first_graph(jf)


def test_gradient_step_matches_eager():
    # Training graphs: the epilogue passes run after autodiff; values match the eager tape.
    def loss(x, w, b):
        return ops.sum(ops.tanh(ops.conv2d(x, w) + b))

    def step(x, w, b):
        return pijit.value_and_grad(loss, grad_position=(1, 2))(x, w, b)

    x, w, rng = _data((2, 2, 8, 8), (3, 2, 3, 3), 8)
    b = rng.standard_normal((3, 1, 1)).astype(np.float32)
    jf = fresh_jit(step)
    tensors = [pijit.Tensor(a) for a in (x, w, b)]
    (lg, (gw, gb)), (le, (ew, eb)) = jf(*tensors), step(*tensors)
    np.testing.assert_allclose(lg.asnumpy(), le.asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(gw.asnumpy(), ew.asnumpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gb.asnumpy(), eb.asnumpy(), rtol=1e-4, atol=1e-5)
