"""Gradients inside captured code: the differentiated function is inlined into the graph and
its backward appended (bytecode/handlers_grad.cc), so a training step (forward, loss,
backward, optimizer update) is one compiled graph. Every result is compared with the eager
tape's, and graphs and breaks are counted."""
import numpy as np
import pytest

import pijit as ms
import pijit.nn as nn
from pijit import ops


@pytest.fixture(autouse=True)
def pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def T(a):
    return ms.Tensor(np.asarray(a, np.float32))


def one_graph(jf):
    s = ms.get_code_extra(jf)
    assert s["graph_count"] == 1 and s["break_count"] == 0 and s["eager_count"] == 0, s
    return s


def assert_tensors_close(got, want, rtol=1e-6, atol=1e-6):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_tensors_close(g, w, rtol, atol)
        return
    assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=rtol, atol=atol)


def loss_fn(x, w):
    return ops.sum(ops.tanh(ops.matmul(x, w)) ** 2) / 3.0


RNG = np.random.default_rng(0)
X, W = T(RNG.standard_normal((4, 3))), T(RNG.standard_normal((3, 2)))


def test_grad_inside_jit_is_one_graph_and_matches_the_tape():
    def f(x, w):
        return ms.grad(loss_fn, grad_position=(0, 1))(x, w)
    jf = ms.jit(f, mode="PIJit")
    for _ in range(2):
        assert_tensors_close(jf(X, W), f(X, W))
    one_graph(jf)


def test_value_and_grad_with_aux_inside_jit():
    def aux_fn(x, w):
        y = ops.matmul(x, w)
        return ops.mean(y * y), y + 1
    def f(x, w):
        (value, aux), g = ms.value_and_grad(aux_fn, 1, has_aux=True)(x, w)
        return value, aux, g
    jf = ms.jit(f, mode="PIJit")
    assert_tensors_close(jf(X, W), f(X, W))
    one_graph(jf)


def test_grad_operation_with_sensitivities_and_all_inputs_inside_jit():
    grad_all = ops.GradOperation(get_all=True, sens_param=True)
    def net(x, w):
        return ops.sigmoid(ops.matmul(x, w)), ops.sum(x)
    def f(x, w, s, s2):
        return grad_all(net)(x, w, (s, s2))
    jf = ms.jit(f, mode="PIJit")
    s, s2 = T(RNG.standard_normal((4, 2))), ms.Tensor(np.float32(2.0))
    assert_tensors_close(jf(X, W, s, s2), f(X, W, s, s2))
    one_graph(jf)


P = ms.Parameter(T([1.0, 2.0]), name="p")


def test_a_value_computed_before_the_transform_is_a_constant_to_it():
    def f(x):
        scaled = ops.exp(P)  # computed before grad: the tape does not see it
        return ms.grad(lambda v, s=scaled: ops.sum(v * s * P), grad_position=0, weights=[P])(x)
    jf = ms.jit(f, mode="PIJit")
    x = T([3.0, 4.0])
    assert_tensors_close(jf(x), f(x))
    one_graph(jf)


def test_grad_of_a_non_scalar_output_is_seeded_with_ones_as_eagerly():
    def f(x, w):
        return ms.grad(lambda a, b: ops.matmul(a, b))(x, w)

    jf = ms.jit(f, mode="PIJit")
    np.testing.assert_allclose(jf(X, W).asnumpy(), f(X, W).asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(f(X, W).asnumpy(),
                               np.ones((X.shape[0], W.shape[1])) @ W.asnumpy().T, rtol=1e-5)
    assert ms.get_code_extra(jf)["total_break_count"] == 0


class Square(nn.Cell):
    def construct(self, x):
        return x * x

    def bprop(self, x, out, dout):
        return (dout * 10.0,)  # deliberately not the true gradient


def test_a_cell_with_bprop_inside_a_captured_gradient_uses_its_bprop():
    sq = Square()
    def f(x):
        return ms.grad(lambda v: ops.sum(sq(v)))(x)
    jf = ms.jit(f, mode="PIJit")
    x = T([1.0, 2.0])
    assert_tensors_close(jf(x), f(x))
    np.testing.assert_allclose(jf(x).asnumpy(), [10.0, 10.0])


class SmallNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, stride=2, pad_mode="pad", padding=1, has_bias=True)
        self.pool = nn.MaxPool2d(3, 2, pad_mode="same")
        self.flat = nn.Flatten()
        self.fc = nn.Dense(4 * 2 * 2, 5)

    def construct(self, x):
        return self.fc(self.flat(self.pool(ops.relu(self.conv(x)))))


def make_step(optimizer):
    ms.set_seed(3)
    net = SmallNet()
    opt = {"momentum": lambda p: nn.Momentum(p, 0.1, 0.9),
           "adam": lambda p: nn.Adam(p, 0.01),
           "sgd": lambda p: nn.SGD(p, 0.1, weight_decay=0.01)}[optimizer](net.trainable_params())
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    return net, nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)


def step_data():
    rng = np.random.default_rng(5)
    return (ms.Tensor(rng.standard_normal((6, 1, 8, 8)).astype(np.float32)),
            ms.Tensor(rng.integers(0, 5, 6).astype(np.int32)))


@pytest.mark.parametrize("optimizer", ["momentum", "adam", "sgd"])
def test_jitted_training_step_is_one_graph_and_matches_eager(optimizer):
    x, y = step_data()
    net_e, step_e = make_step(optimizer)
    net_j, step_j = make_step(optimizer)
    jstep = ms.jit(lambda a, b: step_j(a, b), mode="PIJit")
    compiles = ms.get_code_extra(jstep)["compile_count"]  # the lambda's code is shared by the cases
    for _ in range(5):
        le, lj = step_e(x, y), jstep(x, y)
        np.testing.assert_allclose(lj.asnumpy(), le.asnumpy(), rtol=1e-5, atol=1e-6)
    for pe, pj in zip(net_e.get_parameters(), net_j.get_parameters()):
        np.testing.assert_allclose(pj.asnumpy(), pe.asnumpy(), rtol=1e-5, atol=1e-6)
    assert one_graph(jstep)["compile_count"] == compiles + 1


def test_graph_mode_compiles_the_training_step_as_one_graph():
    x, y = step_data()
    net_e, step_e = make_step("momentum")
    losses_e = [float(step_e(x, y).asnumpy()) for _ in range(3)]
    net_g, step_g = make_step("momentum")
    ms.set_context(mode=ms.GRAPH_MODE)
    losses_g = [float(step_g(x, y).asnumpy()) for _ in range(3)]
    ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(losses_g, losses_e, rtol=1e-5)
    compiled = type(step_g).__dict__["_pijit_graph_construct"]
    one_graph(compiled)


def test_a_replaced_parameter_recompiles_instead_of_training_the_old_one():
    x, y = step_data()
    nets, steps = zip(make_step("sgd"), make_step("sgd"))
    jitted = steps[1]
    jstep = ms.jit(lambda a, b: jitted(a, b), mode="PIJit")
    steps[0](x, y)
    jstep(x, y)
    for net in nets:  # the optimizer keeps the old Parameter; the forward reads the new one
        net.fc.weight = ms.Parameter(ms.Tensor(np.full((5, 16), 0.01, np.float32)), name="fc.weight")
    for _ in range(2):
        np.testing.assert_allclose(jstep(x, y).asnumpy(), steps[0](x, y).asnumpy(), rtol=1e-5)
    for pe, pj in zip(nets[0].get_parameters(), nets[1].get_parameters()):
        np.testing.assert_allclose(pj.asnumpy(), pe.asnumpy(), rtol=1e-5, atol=1e-7)
    s = ms.get_code_extra(jstep)
    assert s["compile_count"] == 2 and s["break_count"] == 0 and s["eager_count"] == 0, s


@pytest.mark.parametrize("rows", [(0, 1, 2, 3), (3, -3, 1, 0), (0, 1, 2)])
def test_gradients_of_rows_taken_one_by_one_are_stacked_when_they_cover_the_axis(rows):
    a = RNG.standard_normal((4, 3))

    def loss(t):
        total = 0.0
        for k, i in enumerate(rows):
            total = total + (ops.tanh(t[i]) * (k + 1)).sum()
        return total

    def f(x):
        return ms.grad(loss)(x)

    jf = ms.jit(f)
    got = jf(T(a)).asnumpy()
    want = np.zeros_like(a)
    for k, i in enumerate(rows):
        want[i] += (k + 1) * (1 - np.tanh(a[i]) ** 2)
    np.testing.assert_allclose(got, want, rtol=1e-5)  # float32
    np.testing.assert_allclose(f(T(a)).asnumpy(), want, rtol=1e-5)  # the eager tape too
    graph = ms.get_code_extra(jf)["graphs"][0]
    covered = sorted(i % 4 for i in rows) == [0, 1, 2, 3]
    assert ("stack(" in graph) == covered, graph
    assert ("index_grad" in graph) != covered, graph
