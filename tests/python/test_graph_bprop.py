"""A Cell with a custom bprop inside a captured gradient: its construct runs in the graph with
no gradient flowing into it, its bprop is traced into the same graph and receives the
output's gradient, and the result equals the eager tape's (pijit/_autodiff.call_with_bprop)."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops

from jit_testutil import fresh  # noqa: F401 (autouse fixture)


def T(values, dtype=np.float32):
    return ms.Tensor(np.asarray(values, dtype=dtype))


class Scale(nn.Cell):
    def construct(self, x, y):
        return x * y * 3

    def bprop(self, x, y, out, dout):
        return dout * y * 2, dout * x + out * 0.5


class UsesBoth(nn.Cell):
    """The Cell's output is used twice and the inputs are also used outside it."""

    def __init__(self):
        super().__init__()
        self.s = Scale()

    def construct(self, x, y):
        z = self.s(x, y)
        return ops.exp(z).sum() + (z * x).sum() + (y * y).sum()


class IgnoresDout(nn.Cell):
    def construct(self, x):
        return ops.tanh(x)

    def bprop(self, x, out, dout):
        return (ops.ones_like(x) * 7,)


class NoneGrad(nn.Cell):
    def construct(self, x, y):
        return x + y

    def bprop(self, x, y, out, dout):
        return dout * 2, None


class WithWeight(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = ms.Parameter(T([0.5, -1.0, 2.0, 1.5]), name="w")

    def construct(self, x):
        return x * self.w

    def bprop(self, x, out, dout):
        return (dout * self.w * 4,)


def graph_count(fn):
    return ms.get_code_extra(fn)["graph_count"]


def flat(v):
    if isinstance(v, (tuple, list)):
        return [t for item in v for t in flat(item)]
    return [v]


def compare(fn, *args):
    eager = fn(*args)
    jf = ms.jit(fn, mode="PIJit")
    for _ in range(2):  # the compiling call, then the cached graph
        got = jf(*args)
        eager_list, got_list = flat(eager), flat(got)
        assert len(eager_list) == len(got_list)
        for e, g in zip(eager_list, got_list):
            np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-6, atol=1e-6)
    stats = ms.get_code_extra(jf)
    assert stats["compile_count"] == 1 and stats["eager_count"] == 0
    assert stats["break_count"] == 0, stats
    return got


def test_bprop_gets_the_output_gradient_and_its_result_reaches_the_inputs():
    net = UsesBoth()
    grad = ms.grad(net, grad_position=(0, 1))
    x, y = T(np.linspace(-1, 1, 4)), T(np.linspace(0.5, 1, 4))
    compare(lambda a, b: grad(a, b), x, y)


def test_a_bprop_that_ignores_dout_and_an_unused_output_still_seed_the_inputs():
    cell = IgnoresDout()

    def loss(x):
        cell(x)  # the output is not used: eager still runs bprop with zeros
        return (x * x).sum()

    grad = ms.grad(loss)
    got = compare(lambda a: grad(a), T([1.0, -2.0, 3.0]))
    np.testing.assert_allclose(got.asnumpy(), [9.0, 3.0, 13.0])


def test_none_gradients_and_non_tensor_arguments():
    cell = NoneGrad()
    grad = ms.grad(lambda x, y: (cell(x, y) * 3).sum(), grad_position=(0, 1))
    got = compare(lambda a, b: grad(a, b), T([1.0, 2.0]), T([3.0, 4.0]))
    np.testing.assert_allclose(got[0].asnumpy(), [6.0, 6.0])
    np.testing.assert_allclose(got[1].asnumpy(), [0.0, 0.0])


def test_weights_used_inside_construct_get_no_gradient_through_it():
    cell = WithWeight()
    params = cell.trainable_params()
    grad = ms.grad(lambda x: (cell(x) * x).sum(), grad_position=0, weights=params)
    x = T([1.0, 2.0, 3.0, 4.0])
    got = compare(lambda a: grad(a, ), x)
    gx, (gw,) = got
    w = np.array([0.5, -1, 2, 1.5])
    # d/dx: bprop gives dout * w * 4 with dout = x, plus the direct use of x: cell(x) = x * w.
    np.testing.assert_allclose(gx.asnumpy(), x.asnumpy() * w * 4 + x.asnumpy() * w, rtol=1e-6)
    # The weight appears only inside construct, which is unrecorded: no gradient.
    np.testing.assert_allclose(gw.asnumpy(), np.zeros(4))


class WrongCount(nn.Cell):
    def construct(self, x, y):
        return x * y

    def bprop(self, x, y, out, dout):
        return (dout,)


class Effects(nn.Cell):
    log = []

    def construct(self, x):
        return x * 2

    def bprop(self, x, out, dout):
        Effects.log.append("bprop")
        return (dout * 2,)


def test_what_eager_rejects_or_orders_differently_runs_on_the_eager_tape():
    cell = WrongCount()
    grad = ms.grad(lambda x, y: cell(x, y).sum())
    jf = ms.jit(lambda a, b: grad(a, b), mode="PIJit")
    with pytest.raises(ValueError, match="returned 1 gradients for 2 inputs"):
        grad(T([1.0]), T([2.0]))
    with pytest.raises(ValueError, match="returned 1 gradients for 2 inputs"):
        jf(T([1.0]), T([2.0]))

    eff = Effects()
    log = Effects.log

    def f(x):
        g = ms.grad(lambda v: eff(v).sum())(x)
        log.append("after")
        return g

    log.clear()
    want = f(T([1.0, 2.0]))
    eager_log = list(log)
    log.clear()
    got = ms.jit(f, mode="PIJit")(T([1.0, 2.0]))
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy())
    assert log == eager_log == ["bprop", "after"]


def test_a_training_step_with_a_custom_bprop_layer_is_one_graph():
    ms.set_seed(0)

    class ClippedRelu(nn.Cell):
        def construct(self, x):
            return ops.relu(x)

        def bprop(self, x, out, dout):
            return (ops.clip_by_value(dout, -0.1, 0.1) * (x > 0),)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Dense(6, 8)
            self.act = ClippedRelu()
            self.fc2 = nn.Dense(8, 2)

        def construct(self, x):
            return self.fc2(self.act(self.fc1(x)))

    def run(jitted):
        ms.set_seed(0)
        net = Net()
        loss = nn.WithLossCell(net, nn.MSELoss())
        step = nn.TrainOneStepCell(loss, nn.SGD(net.trainable_params(), 0.1))
        fn = ms.jit(lambda a, b: step(a, b), mode="PIJit") if jitted else step
        rng = np.random.default_rng(1)
        xs = T(rng.standard_normal((4, 6)))
        ys = T(rng.standard_normal((4, 2)))
        losses = [float(fn(xs, ys).asnumpy()) for _ in range(5)]
        return losses, [p.asnumpy().copy() for p in net.trainable_params()], fn

    want, want_params, _ = run(False)
    got, got_params, fn = run(True)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for g, w in zip(got_params, want_params):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    stats = ms.get_code_extra(fn)
    assert stats["break_count"] == 0 and stats["eager_count"] == 0
