"""Layer epilogues in compiled graphs (graph/passes/epilogue.h): relu after conv2d runs inside
the convolution, and relu's gradient mask inside max pooling's gradient. Jitted forward and
backward must equal the eager tape's bit for bit, with zeros, negative zeros and NaNs in the
data, for the direct kernels (stride 1, few channels), oneDNN's (strided, many channels) and
the float64 and float16 paths."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops


@pytest.fixture(autouse=True)
def fresh_caches():
    ms.reset()  # every case's step shares one code object
    yield
    ms.reset()


def make_step(stride=1, pad_mode="valid", padding=0):
    def block(x, w):
        c = ops.conv2d(x, w, stride=stride, pad_mode=pad_mode, padding=padding)
        y = ops.max_pool2d(ops.relu(c), 2, 2)
        return ops.sum(y * y + y * 0.7)  # a gradient that is not zero where y is

    def step(x, w):
        loss, (gx, gw) = ms.value_and_grad(block, grad_position=(0, 1))(x, w)
        return loss, gx, gw
    return step


CASES = [
    # (x shape, w shape, conv keywords, dtype)
    ((4, 1, 12, 12), (6, 1, 5, 5), {}, np.float32),                        # direct kernels
    ((2, 3, 10, 10), (5, 3, 3, 3), {"pad_mode": "same"}, np.float32),      # direct, padded
    ((2, 16, 9, 9), (16, 16, 3, 3), {"stride": 2, "pad_mode": "pad", "padding": 1},
     np.float32),                                                          # oneDNN
    ((2, 2, 8, 8), (3, 2, 3, 3), {}, np.float64),                          # float64 loops
    ((2, 2, 8, 8), (3, 2, 3, 3), {}, np.float16),                          # via float32
]


@pytest.mark.parametrize("xs,ws,kw,dt", CASES)
def test_jitted_block_equals_eager_bit_for_bit(xs, ws, kw, dt):
    rng = np.random.default_rng(sum(xs))
    x = rng.standard_normal(xs)
    x[0, :, :7, :7] = 0.0          # exact zeros: convolutions of zeros, windows of zeros
    x[-1, -1, -2:, -2:] = -0.0
    w = rng.standard_normal(ws) * 0.3
    if dt is np.float32:
        x[1, 0, 5, 5] = np.nan     # a NaN in some windows' maximum
    x, w = ms.Tensor(x.astype(dt)), ms.Tensor(w.astype(dt))
    step = make_step(**kw)
    jf = ms.jit(step, mode="PIJit")
    got = jf(x, w)
    want = step(x, w)
    for g, e in zip(got, want):
        assert g.dtype == e.dtype and tuple(g.shape) == tuple(e.shape)
        np.testing.assert_array_equal(g.asnumpy(), e.asnumpy())
    stats = ms.get_code_extra(jf)
    assert stats["graph_count"] == 1 and stats["break_count"] == 0, stats
    graph = stats["graphs"][0]
    # relu inside the convolution: its epilogue attribute, or its post-op where the
    # convolution runs in blocked layouts (graph/passes/layout_assignment.h)
    assert "epilogue=relu" in graph or "post=[relu], block=" in graph, graph
    assert "mask=positive" in graph, graph
    assert " relu(" not in graph, graph


def test_relu_used_elsewhere_keeps_its_own_node():
    def f(x, w):
        c = ops.conv2d(x, w)
        return ops.relu(c) + c * 0.5
    rng = np.random.default_rng(3)
    x = ms.Tensor(rng.standard_normal((2, 1, 7, 7)).astype(np.float32))
    w = ms.Tensor(rng.standard_normal((2, 1, 3, 3)).astype(np.float32))
    jf = ms.jit(f, mode="PIJit")
    np.testing.assert_array_equal(jf(x, w).asnumpy(), f(x, w).asnumpy())
    assert "epilogue" not in ms.get_code_extra(jf)["graphs"][0]
