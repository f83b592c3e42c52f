"""Memory planning of compiled graphs (graph/memory_plan.h): jitted functions give the same
results with a plan and without one (PIJIT_MEMORY_PLAN=0, read when a graph compiles), over
chains, diamonds, views, outputs that alias inputs or each other, several dtypes and graph
breaks; a steady-state call allocates only its outputs; threads share one compiled graph."""
import threading

import numpy as np
import pytest

import pijit as ms
from pijit import _C, ops


def fresh(fn):
    jf = ms.jit(fn, mode="PIJit")
    ms.reset(jf)
    return jf


def planned_and_plain(fn, args, monkeypatch):
    """Results of `fn(*args)` jitted with a plan and without, three calls each (later calls
    reuse the arena that held the previous call's values)."""
    jf = fresh(fn)
    got = [jf(*args) for _ in range(3)]
    stats = ms.get_code_extra(jf)
    monkeypatch.setenv("PIJIT_MEMORY_PLAN", "0")
    ms.reset(jf)
    want = [jf(*args) for _ in range(3)]
    assert all(b == 0 for b in ms.get_code_extra(jf)["arena_bytes"])
    monkeypatch.delenv("PIJIT_MEMORY_PLAN")
    ms.reset(jf)
    return got, want, stats


def as_list(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def assert_identical(got, want):
    for g_call, w_call in zip(got, want):
        for g, w in zip(as_list(g_call), as_list(w_call)):
            g, w = g.asnumpy(), w.asnumpy()
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)


def chain(x, y):
    a = ops.exp(x * 0.1) * x
    b = ops.matmul(a, ops.transpose(y, (1, 0)))
    c = ops.softmax(b, -1)
    return ops.matmul(ops.transpose(c, (1, 0)), a).sum(0)


def diamond(x, y):
    h = ops.matmul(x, y)
    l, r = ops.relu(h), ops.tanh(h)
    m = ops.matmul(l, ops.transpose(r, (1, 0)))
    return ops.matmul(m, h) + h


def views(x, y):
    h = ops.matmul(x, y)
    t = ops.transpose(h, (1, 0))                       # a view of an intermediate, returned
    r = ops.exp(h).reshape(-1)    # a view of an intermediate, read later
    s = ops.matmul(t, x).sum()
    return t, r * 2.0, s


def aliasing_outputs(x, y):
    h = ops.exp(ops.matmul(x, y) * 0.1)
    k = ops.matmul(h, y)                  # an intermediate: planned
    g = ops.relu(ops.matmul(k, y) - 1.0)
    return x, x.reshape(-1), g, g, h.reshape(-1), ops.matmul(g, ops.transpose(y, (1, 0)))


def in_place_looking(x, y):
    x2 = ops.matmul(x, y)
    x2 = ops.exp(x2)
    x2 = ops.matmul(x2, ops.transpose(y, (1, 0))) * x2.sum()
    x2 = x2 - x2.mean()
    return x2


CASES = [chain, diamond, views, aliasing_outputs, in_place_looking]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_planned_results_equal_unplanned(fn, monkeypatch):
    rng = np.random.default_rng(3)
    x = ms.Tensor(rng.standard_normal((48, 40)).astype(np.float32))
    y = ms.Tensor(rng.standard_normal((40, 40)).astype(np.float32))
    got, want, stats = planned_and_plain(fn, (x, y), monkeypatch)
    assert stats["break_count"] == 0, stats["reasons"]
    assert stats["arena_bytes"][0] > 0, stats["graphs"][0]
    # All three calls are compared after the last one: an output left in arena memory would
    # have been overwritten by the later calls.
    assert_identical(got, want)


def mixed_dtypes(x, y):
    a = x * y + x
    b = a - y
    m = ops.maximum(b, a)
    mask = ops.logical_not(m > a)
    both = ops.logical_and(mask, m > b)
    t = ops.transpose(a, (1, 0)) + 1      # reads its input transposed: needs its own bytes
    u = ops.transpose(t, (1, 0)) - m
    return both, ops.transpose(m * 2, (1, 0)), ops.where(both, u, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int64])
def test_planned_dtypes(dtype, monkeypatch):
    rng = np.random.default_rng(4)
    x, y = (ms.Tensor((rng.standard_normal((64, 32)) * 4).astype(dtype)) for _ in range(2))
    got, want, stats = planned_and_plain(mixed_dtypes, (x, y), monkeypatch)
    assert stats["break_count"] == 0, stats["reasons"]
    assert stats["arena_bytes"][0] > 0, stats["graphs"][0]
    assert_identical(got, want)
    eager = mixed_dtypes(x, y)
    for g, e in zip(got[-1], eager):
        np.testing.assert_array_equal(g.asnumpy(), e.asnumpy())


def test_graph_break_between_planned_graphs(monkeypatch):
    def f(x, y):
        h = ops.exp(ops.matmul(x, y))
        h = ops.matmul(h, y) * 0.5
        ms.graph_break()  # the prefix and the resume function are two graphs
        g = ops.tanh(ops.matmul(h, y))
        return ops.matmul(g, ops.transpose(y, (1, 0))).sum(1) + h.sum(1)

    rng = np.random.default_rng(5)
    x = ms.Tensor(rng.standard_normal((16, 24)).astype(np.float32))
    y = ms.Tensor((rng.standard_normal((24, 24)) * 0.2).astype(np.float32))
    got, want, stats = planned_and_plain(f, (x, y), monkeypatch)
    assert stats["break_count"] >= 1
    assert_identical(got, want)
    np.testing.assert_allclose(got[0].asnumpy(), f(x, y).asnumpy(), rtol=1e-5, atol=1e-5)


def test_steady_state_call_allocates_only_outputs():
    def mlp(x, w0, w1, w2):
        h = ops.relu(ops.matmul(x, w0))
        h = ops.tanh(ops.matmul(h, w1)) * 0.5
        return ops.matmul(h, w2), h.sum()

    rng = np.random.default_rng(6)
    args = [ms.Tensor(rng.standard_normal(s).astype(np.float32))
            for s in ((32, 64), (64, 64), (64, 64), (64, 10))]
    jf = fresh(mlp)
    for _ in range(3):
        jf(*args)
    assert ms.get_code_extra(jf)["arena_bytes"][0] > 0
    before = _C._storage_allocations()
    out = jf(*args)
    assert _C._storage_allocations() - before == len(out)


def test_one_graph_from_several_threads():
    def f(x, y):
        h = ops.exp(ops.matmul(x, y) * 0.01)
        return ops.matmul(h, ops.transpose(y, (1, 0))) - h.sum()

    rng = np.random.default_rng(8)
    y = ms.Tensor(rng.standard_normal((40, 40)).astype(np.float32))
    xs = [ms.Tensor(rng.standard_normal((24, 40)).astype(np.float32)) for _ in range(4)]
    jf = fresh(f)
    wants = [f(x, y).asnumpy() for x in xs]
    errors = []

    def work(i):
        for _ in range(30):
            got = jf(xs[i], y).asnumpy()
            if not np.allclose(got, wants[i], rtol=1e-5, atol=1e-4):
                errors.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


class SmallConvNet(ms.nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = ms.nn.Conv2d(1, 4, 3, pad_mode="valid")
        self.fc1 = ms.nn.Dense(4 * 6 * 6, 20)
        self.fc2 = ms.nn.Dense(20, 5)
        self.relu = ms.nn.ReLU()
        self.flatten = ms.nn.Flatten()

    def construct(self, x):
        h = self.flatten(self.relu(self.conv(x)))
        return self.fc2(self.relu(self.fc1(h)))


def training_step(labels_dtype):
    ms.set_seed(3)
    net = SmallConvNet()
    loss = ms.nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = ms.nn.TrainOneStepCell(ms.nn.WithLossCell(net, loss),
                                  ms.nn.Momentum(net.trainable_params(), 0.1, 0.9))
    rng = np.random.default_rng(9)
    x = ms.Tensor(rng.standard_normal((8, 1, 8, 8)).astype(np.float32))
    y = ms.Tensor(rng.integers(0, 5, 8).astype(labels_dtype))
    return step, net, x, y


@pytest.mark.parametrize("labels_dtype", [np.int32, np.int64, np.uint8])
def test_training_step_allocates_only_its_loss(labels_dtype):
    # The step's one-hot labels, the loss gradient's fill and the optimizer's updates of the
    # dense layers' weight gradients (computed transposed) all run without scratch storage.
    step, net, x, y = training_step(labels_dtype)
    jstep = fresh(lambda a, b: step(a, b))
    losses = [jstep(x, y).asnumpy() for _ in range(3)]
    assert ms.get_code_extra(jstep)["compile_count"] == 1
    before = _C._storage_allocations()
    losses.append(jstep(x, y).asnumpy())
    assert _C._storage_allocations() - before == 1
    estep, enet, ex, ey = training_step(labels_dtype)
    eager = [estep(ex, ey).asnumpy() for _ in range(4)]
    np.testing.assert_allclose(losses, eager, rtol=1e-5, atol=1e-6)
    for (name, p), (_, q) in zip(net.parameters_and_names(), enet.parameters_and_names()):
        np.testing.assert_allclose(p.asnumpy(), q.asnumpy(), rtol=1e-4, atol=1e-6, err_msg=name)
