"""Optimizers (nn.SGD, nn.Momentum, nn.Adam) against NumPy reference updates, the training
wrappers (WithLossCell, TrainOneStepCell, ForwardValueAndGrad), and a shortened run of
examples/train_lenet.py: eager and PIJit training from the same weights lose the same."""
import importlib.util
import os

import numpy as np
import pytest

import pijit as ms
import pijit.nn as nn
from pijit import ops

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHAPES = [(3, 4), (4,), ()]


@pytest.fixture(autouse=True)
def pynative_after():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def make_params(seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    values = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    params = [ms.Parameter(ms.Tensor(v), name=f"w{i}") for i, v in enumerate(values)]
    return values, params


def grad_steps(steps=4, seed=1, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(steps)]


def run(optimizer_cls, kwargs, reference, dtype=np.float32, rtol=1e-5):
    values, params = make_params(dtype=dtype)
    opt = optimizer_cls(params, **kwargs)
    ref = [v.astype(np.float64) for v in values]
    state = {}
    for t, grads in enumerate(grad_steps(dtype=dtype), 1):
        assert opt(tuple(ms.Tensor(g) for g in grads)) is True
        ref = [reference(i, p, g.astype(np.float64), state, t) for i, (p, g) in
               enumerate(zip(ref, grads))]
        for p, r in zip(params, ref):
            assert p.dtype == (ms.float32 if dtype == np.float32 else ms.float64)
            np.testing.assert_allclose(p.asnumpy(), r, rtol=rtol, atol=1e-6)
    return opt


def sgd_reference(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    def update(i, p, g, state, t):
        g = g + weight_decay * p
        if momentum == 0.0:
            return p - lr * g
        buf = g if t == 1 else momentum * state[i] + (1 - dampening) * g
        state[i] = buf
        return p - lr * (g + momentum * buf if nesterov else buf)
    return update


def momentum_reference(learning_rate, momentum, weight_decay=0.0, use_nesterov=False):
    lr = learning_rate

    def update(i, p, g, state, t):
        g = g + weight_decay * p
        m = momentum * state.get(i, 0.0) + g
        state[i] = m
        return p - lr * (g + momentum * m if use_nesterov else m)
    return update


def adam_reference(learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
    lr = learning_rate

    def update(i, p, g, state, t):
        g = g + weight_decay * p
        m = beta1 * state.get(("m", i), 0.0) + (1 - beta1) * g
        v = beta2 * state.get(("v", i), 0.0) + (1 - beta2) * g * g
        state["m", i], state["v", i] = m, v
        # MindSpore folds the bias correction into the step: eps is not corrected.
        lr_t = lr * np.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
        return p - lr_t * m / (np.sqrt(v) + eps)
    return update


@pytest.mark.parametrize("kwargs", [
    dict(learning_rate=0.1),
    dict(learning_rate=0.05, weight_decay=0.01),
    dict(learning_rate=0.1, momentum=0.9),
    dict(learning_rate=0.1, momentum=0.9, dampening=0.3),
    dict(learning_rate=0.1, momentum=0.9, nesterov=True),
    dict(learning_rate=0.05, momentum=0.8, weight_decay=0.1, nesterov=True),
], ids=str)
def test_sgd_matches_numpy(kwargs):
    run(nn.SGD, kwargs, sgd_reference(kwargs["learning_rate"], **{k: v for k, v in kwargs.items()
                                                                   if k != "learning_rate"}))


@pytest.mark.parametrize("kwargs", [
    dict(learning_rate=0.1, momentum=0.9),
    dict(learning_rate=0.1, momentum=0.9, use_nesterov=True),
    dict(learning_rate=0.05, momentum=0.5, weight_decay=0.01),
], ids=str)
def test_momentum_matches_numpy(kwargs):
    run(nn.Momentum, kwargs, momentum_reference(**kwargs))


@pytest.mark.parametrize("kwargs", [
    dict(),
    dict(learning_rate=0.01, beta1=0.8, beta2=0.99, eps=1e-6),
    dict(learning_rate=0.01, weight_decay=0.1),
], ids=str)
def test_adam_matches_numpy(kwargs):
    run(nn.Adam, kwargs, adam_reference(**kwargs), rtol=2e-5)


def test_float64_parameters_stay_float64():
    run(nn.Momentum, dict(learning_rate=0.1, momentum=0.9), momentum_reference(0.1, 0.9),
        dtype=np.float64, rtol=1e-6)
    run(nn.Adam, dict(learning_rate=0.01), adam_reference(0.01), dtype=np.float64, rtol=1e-5)


def test_optimizer_state_is_parameters_of_the_optimizer_cell():
    _, params = make_params()
    opt = nn.Adam(params)
    names = [p.name for p in opt.get_parameters()]
    assert names == ["global_step", "learning_rate", "moment1.w0", "moment1.w1", "moment1.w2",
                     "moment2.w0", "moment2.w1", "moment2.w2", "beta1_power", "beta2_power"]
    assert not any(p.requires_grad for p in opt.get_parameters())
    assert tuple(opt.parameters) == tuple(params)
    mom = nn.Momentum(params, 0.1, 0.9)
    assert [p.name for p in mom.moments] == ["moments.w0", "moments.w1", "moments.w2"]
    assert all(np.all(m.asnumpy() == 0) for m in mom.moments)
    assert float(mom.get_lr().asnumpy()) == pytest.approx(0.1)


def test_learning_rate_set_data_changes_later_steps():
    values, params = make_params()
    opt = nn.SGD(params, learning_rate=0.1)
    opt.learning_rate.set_data(0.5)
    grads = [np.ones(s, np.float32) for s in SHAPES]
    opt(tuple(ms.Tensor(g) for g in grads))
    np.testing.assert_allclose(params[0].asnumpy(), values[0] - 0.5, rtol=1e-6)


def test_updates_are_seen_by_compiled_code():
    net = nn.Dense(3, 2)
    x = ms.Tensor(np.ones((1, 3), np.float32))

    @ms.jit(mode="PIJit")
    def forward(x):
        return net(x)

    before = forward(x).asnumpy()
    opt = nn.SGD(net.trainable_params(), learning_rate=1.0)
    opt((ms.Tensor(np.ones((2, 3), np.float32)), ms.Tensor(np.ones(2, np.float32))))
    np.testing.assert_allclose(forward(x).asnumpy(), before - 4.0, rtol=1e-5)
    np.testing.assert_allclose(net(x).asnumpy(), before - 4.0, rtol=1e-5)


def test_optimizer_argument_errors():
    _, params = make_params()
    with pytest.raises(ValueError, match="2 gradients for 3 parameters"):
        nn.SGD(params)((ms.Tensor(np.ones((3, 4), np.float32)), ms.Tensor(np.ones(4, np.float32))))
    with pytest.raises(ValueError, match=r"'w1' has shape \(3,\), the parameter \(4,\)"):
        nn.SGD(params)(tuple(ms.Tensor(np.ones(s, np.float32)) for s in [(3, 4), (3,), ()]))
    with pytest.raises(ValueError, match="empty"):
        nn.Momentum([], 0.1, 0.9)
    with pytest.raises(TypeError, match="Parameters"):
        nn.Adam([ms.Tensor(np.ones(2, np.float32))])
    with pytest.raises(ValueError, match="learning_rate must be >= 0"):
        nn.SGD(params, learning_rate=-1.0)
    with pytest.raises(ValueError, match="beta1"):
        nn.Adam(params, beta1=1.0)
    with pytest.raises(ValueError, match="nesterov"):
        nn.SGD(params, nesterov=True)


# ---- wrappers -----------------------------------------------------------------------------------

class Linear(nn.Cell):
    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(3)
        self.w = ms.Parameter(ms.Tensor(rng.standard_normal((3, 2)).astype(np.float32)), name="w")
        self.b = ms.Parameter(ms.Tensor(np.zeros(2, np.float32)), name="b")

    def construct(self, x):
        return ops.matmul(x, self.w) + self.b


def linear_data():
    rng = np.random.default_rng(4)
    return rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal((5, 2)).astype(np.float32)


def mse_grads(w, b, x, y):
    diff = x @ w + b - y
    n = diff.size
    return float(np.mean(diff ** 2)), x.T @ (2 * diff / n), np.sum(2 * diff / n, 0)


def test_with_loss_cell_and_train_one_step_cell_match_numpy():
    net = Linear()
    x, y = linear_data()
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    assert loss_net.backbone_network is net
    w, b = net.w.asnumpy().astype(np.float64), net.b.asnumpy().astype(np.float64)
    np.testing.assert_allclose(loss_net(ms.Tensor(x), ms.Tensor(y)).asnumpy(), mse_grads(w, b, x, y)[0],
                               rtol=1e-5)
    step = nn.TrainOneStepCell(loss_net, nn.SGD(net.trainable_params(), 0.1), sens=2.0)
    for _ in range(3):
        loss = step(ms.Tensor(x), ms.Tensor(y))
        want, gw, gb = mse_grads(w, b, x, y)
        np.testing.assert_allclose(loss.asnumpy(), want, rtol=1e-5)
        w, b = w - 0.1 * 2.0 * gw, b - 0.1 * 2.0 * gb
        np.testing.assert_allclose(net.w.asnumpy(), w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(net.b.asnumpy(), b, rtol=1e-5, atol=1e-6)


def test_forward_value_and_grad():
    net = Linear()
    x, y = linear_data()
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    w, b = net.w.asnumpy().astype(np.float64), net.b.asnumpy().astype(np.float64)
    want, gw, gb = mse_grads(w, b, x, y)
    weights = ms.ParameterTuple(net.trainable_params())
    loss, (dw, db) = nn.ForwardValueAndGrad(loss_net, weights, get_by_list=True)(ms.Tensor(x),
                                                                                 ms.Tensor(y))
    np.testing.assert_allclose(loss.asnumpy(), want, rtol=1e-5)
    np.testing.assert_allclose(dw.asnumpy(), gw, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(db.asnumpy(), gb, rtol=1e-4, atol=1e-6)
    loss, (gx, (dw2, _)) = nn.ForwardValueAndGrad(loss_net, weights, get_all=True, get_by_list=True,
                                                  sens_param=True)(
        ms.Tensor(x), ms.Tensor(y), ms.Tensor(np.float32(3.0)))
    np.testing.assert_allclose(dw2.asnumpy(), 3 * gw, rtol=1e-4, atol=1e-6)
    assert len(gx) == 2 and gx[0].shape == (5, 3)
    loss, dx = nn.ForwardValueAndGrad(loss_net)(ms.Tensor(x), ms.Tensor(y))
    diff = x @ w + b - y
    np.testing.assert_allclose(dx.asnumpy(), (2 * diff / diff.size) @ w.T, rtol=1e-4, atol=1e-6)


def test_train_one_step_cell_in_graph_mode_and_under_jit_matches_eager():
    x, y = linear_data()
    losses = {}
    for mode in ("eager", "graph", "jit"):
        net = Linear()
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                                   nn.Momentum(net.trainable_params(), 0.1, 0.9))
        call = step
        if mode == "graph":
            ms.set_context(mode=ms.GRAPH_MODE)
        elif mode == "jit":
            call = ms.jit(lambda a, b: step(a, b), mode="PIJit")
        losses[mode] = [float(call(ms.Tensor(x), ms.Tensor(y)).asnumpy()) for _ in range(4)]
        ms.set_context(mode=ms.PYNATIVE_MODE)
    assert losses["eager"][-1] < losses["eager"][0]
    np.testing.assert_allclose(losses["graph"], losses["eager"], rtol=1e-5)
    np.testing.assert_allclose(losses["jit"], losses["eager"], rtol=1e-5)


# ---- LeNet-5 training (examples/train_lenet.py, shortened) -----------------------------------------

def load_example():
    spec = importlib.util.spec_from_file_location(
        "train_lenet", os.path.join(ROOT, "examples", "train_lenet.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lenet_training_loss_falls_and_eager_and_pijit_agree():
    ex = load_example()
    images, labels = ex.make_dataset(samples=512)
    initial = ex.snapshot(ex.build()[0])
    eager = ex.train("eager", initial, images, labels, epochs=3, batch=32, max_steps=40,
                     log=lambda *a: None)
    jitted = ex.train("PIJit", initial, images, labels, epochs=3, batch=32, max_steps=40,
                      log=lambda *a: None)
    assert len(eager) == len(jitted) == 40
    assert np.mean(eager[-4:]) < eager[0] - 0.3, eager
    np.testing.assert_allclose(jitted, eager, rtol=1e-4, atol=1e-5)


# ---- layer gradients on the tape (conv2d and pooling have no tape rule of their own) ----------------

def conv_grads_numpy(x, w, dout, pads):
    t, b, l, r = pads
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)))
    kh, kw = w.shape[2:]
    oh, ow = dout.shape[2:]
    dw = np.zeros_like(w)
    dxp = np.zeros_like(xp)
    for a in range(kh):
        for c in range(kw):
            patch = xp[:, :, a:a + oh, c:c + ow]
            dw[:, :, a, c] = np.einsum("noij,ncij->oc", dout, patch)
            dxp[:, :, a:a + oh, c:c + ow] += np.einsum("noij,oc->ncij", dout, w[:, :, a, c])
    return dxp[:, :, t:t + x.shape[2], l:l + x.shape[3]], dw, dout.sum((0, 2, 3))


@pytest.mark.parametrize("kwargs,pads", [
    (dict(pad_mode="valid", has_bias=True), (0, 0, 0, 0)),
    (dict(pad_mode="same"), (1, 1, 1, 1)),
    (dict(pad_mode="pad", padding=(1, 2, 0, 1), has_bias=True), (1, 2, 0, 1)),
], ids=["valid", "same", "pad"])
def test_conv2d_layer_gradients_match_numpy(kwargs, pads):
    rng = np.random.default_rng(5)
    conv = nn.Conv2d(3, 4, 3, **kwargs)
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    sens = None

    def f(x):
        out = conv(x)
        return ops.sum(out * ms.Tensor(sens))

    out_shape = conv(ms.Tensor(x)).shape
    sens = rng.standard_normal(out_shape).astype(np.float32)
    gx, gw = ms.grad(f, 0, conv.trainable_params())(ms.Tensor(x))
    dx, dw, db = conv_grads_numpy(x.astype(np.float64), conv.weight.asnumpy().astype(np.float64),
                                  sens.astype(np.float64), pads)
    np.testing.assert_allclose(gx.asnumpy(), dx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gw[0].asnumpy(), dw, rtol=1e-4, atol=1e-4)
    if kwargs.get("has_bias"):
        np.testing.assert_allclose(gw[1].asnumpy(), db, rtol=1e-4, atol=1e-4)


def test_pooling_layer_gradients_match_numpy():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 7, 6)).astype(np.float32)  # row 6 is outside every window
    sens = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    gx = ms.grad(lambda t: ops.sum(nn.MaxPool2d(2, 2)(t) * ms.Tensor(sens)))(ms.Tensor(x))
    want = np.zeros_like(x)
    for n, c, i, j in np.ndindex(2, 3, 3, 3):
        win = x[n, c, 2 * i:2 * i + 2, 2 * j:2 * j + 2]
        a, b = np.unravel_index(np.argmax(win), win.shape)
        want[n, c, 2 * i + a, 2 * j + b] = sens[n, c, i, j]
    np.testing.assert_allclose(gx.asnumpy(), want, rtol=1e-6)
    gx = ms.grad(lambda t: ops.sum(nn.AvgPool2d(2, 2)(t) * ms.Tensor(sens)))(ms.Tensor(x))
    want = np.zeros_like(x)
    want[:, :, :6, :6] = np.repeat(np.repeat(sens, 2, 2), 2, 3) / 4
    np.testing.assert_allclose(gx.asnumpy(), want, rtol=1e-6)
