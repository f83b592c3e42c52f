"""THOR (pijit.nn.thor, the THOR layers and pijit.train.train_thor): conversion keeps a
network's outputs and Parameters; the layers' statistics A and G match NumPy/torch computed
from the layer's input and output gradient; THOR steps (the inverses refreshed every
`frequency` steps and reused in between) match thor_reference.py eagerly, in a jitted step,
through TrainOneStepCell and Model.train; bad arguments raise clear errors."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn
from pijit.train.train_thor import ConvertModelUtils, ConvertNetUtils

try:
    import torch
    from thor_reference import ThorReference, conv_forward, covariance, mlp_forward
except ImportError:  # the tests below that need the reference skip
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="the THOR reference (thor_reference.py) "
                                 "computes with torch's float64 autograd, not installed")

RTOL, ATOL = 2e-4, 2e-5


def _mlp(seed=0):
    ms.set_seed(seed)
    return nn.SequentialCell(nn.Dense(4, 6), nn.ReLU(), nn.Dense(6, 2))


class _ConvNet(nn.Cell):
    def __init__(self):
        super().__init__()
        ms.set_seed(1)
        self.conv = nn.Conv2d(2, 3, 3, pad_mode="same", has_bias=True, bias_init="normal")
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(3 * 4 * 4, 2)

    def construct(self, x):
        return self.fc(self.flatten(self.relu(self.conv(x))))


def _data(shape, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape).astype(np.float32),
            rng.standard_normal((shape[0], 2)).astype(np.float32))


def _weights(net):
    """{name: value} of the weights and biases (the statistics left out)."""
    return {p.name: p.asnumpy().copy() for p in net.get_parameters()
            if p.name.endswith(("weight", "bias"))}


def _step_fn(net, opt, capture_mode=None):
    """A training step of net with opt: eager, or jitted in capture_mode."""
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    grad_fn = ms.value_and_grad(loss_net, None, opt.parameters)

    def step(x, t):
        loss, grads = grad_fn(x, t)
        opt(grads)
        return loss
    return ms.jit(step, capture_mode=capture_mode) if capture_mode else step


# ---- conversion ----------------------------------------------------------------------------------

def test_convert_keeps_outputs_and_parameters():
    net = _mlp()
    x = ms.Tensor(_data((5, 4), 0)[0])
    before = net(x).asnumpy()
    weights = {id(p): p.name for p in net.get_parameters()}
    ConvertNetUtils().convert_to_thor_net(net)
    assert isinstance(net[0], nn.DenseThor) and isinstance(net[2], nn.DenseThor)
    np.testing.assert_array_equal(net(x).asnumpy(), before)
    names = [p.name for p in net.get_parameters()]
    assert names == ["0.weight", "0.bias", "0.matrix_a", "0.matrix_g",
                     "2.weight", "2.bias", "2.matrix_a", "2.matrix_g"]
    kept = [p for p in net.get_parameters() if id(p) in weights]
    assert len(kept) == 4 and all(weights[id(p)] == p.name for p in kept)


def test_convert_conv_and_embedding_nets():
    net = _ConvNet()
    x = ms.Tensor(_data((2, 2, 4, 4), 1)[0])
    before = net(x).asnumpy()
    ConvertNetUtils().convert_to_thor_net(net)
    assert isinstance(net.conv, nn.Conv2dThor) and isinstance(net.fc, nn.DenseThor)
    np.testing.assert_allclose(net(x).asnumpy(), before, rtol=1e-6, atol=1e-6)
    assert "conv.a_normalizer" in [p.name for p in net.get_parameters()]

    ms.set_seed(2)
    emb = nn.SequentialCell(nn.Embedding(7, 3), nn.Dense(3, 2))
    ids = ms.Tensor(np.array([[1, 4, 4], [6, 0, 1]], np.int32))
    before = emb(ids).asnumpy()
    ConvertNetUtils().convert_to_thor_net(emb)
    assert isinstance(emb[0], nn.EmbeddingThor)
    np.testing.assert_allclose(emb(ids).asnumpy(), before, rtol=1e-6)


def test_a_shared_layer_stays_one_thor_layer():
    class Twice(nn.Cell):
        def __init__(self):
            super().__init__()
            self.first = nn.Dense(3, 3)
            self.second = self.first

        def construct(self, x):
            return self.second(self.first(x))

    net = Twice()
    opt = nn.thor(net, 0.1, 0.1, 0.9)
    assert net.first is net.second and isinstance(net.first, nn.DenseThor)
    assert len(opt.parameters) == 4  # weight, bias, matrix_a, matrix_g


# ---- statistics ----------------------------------------------------------------------------------

def _statistic_grads(net, inputs, loss):
    stats = [p for p in net.get_parameters() if "matrix" in p.name or "normalizer" in p.name]
    grad_fn = ms.grad(lambda *xs: loss(net(*xs)), None, stats)
    return dict(zip([p.name for p in stats], (g.asnumpy() for g in grad_fn(*inputs))))


@needs_torch
def test_dense_statistics_match_input_and_output_gradient():
    layer = nn.DenseThor(3, 4, has_bias=True, activation="tanh")
    x = np.random.default_rng(3).standard_normal((2, 5, 3)).astype(np.float32)
    got = _statistic_grads(layer, (ms.Tensor(x),), lambda y: (y ** 2).sum())
    xt = torch.tensor(x, dtype=torch.float64)
    z = xt @ torch.tensor(layer.weight.asnumpy(), dtype=torch.float64, requires_grad=True).T
    z.retain_grad()
    (torch.tanh(z + torch.tensor(layer.bias.asnumpy(), dtype=torch.float64)) ** 2).sum().backward()
    np.testing.assert_allclose(got["matrix_a"], covariance(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["matrix_g"], covariance(z.grad.numpy()), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("pad_mode,padding,stride,size", [
    ("same", 0, 1, 5), ("same", 0, 2, 6), ("valid", 0, 1, 5), ("pad", 1, 2, 5),
    ("pad", (0, 1, 2, 1), 1, 4)])
@needs_torch
def test_conv_statistics_match_unfolded_windows(pad_mode, padding, stride, size):
    layer = nn.Conv2dThor(2, 3, 3, stride=stride, pad_mode=pad_mode, padding=padding)
    x = np.random.default_rng(4).standard_normal((2, 2, size, size)).astype(np.float32)
    got = _statistic_grads(layer, (ms.Tensor(x),), lambda y: (y ** 3).sum())
    xt = torch.tensor(x, dtype=torch.float64)
    if pad_mode == "same":
        total = max((-(-size // stride) - 1) * stride + 3 - size, 0)
        pads = (total // 2, total - total // 2) * 2
    elif pad_mode == "pad":
        p = (padding,) * 4 if isinstance(padding, int) else padding
        pads = (p[2], p[3], p[0], p[1])
    else:
        pads = (0, 0, 0, 0)
    xt = torch.nn.functional.pad(xt, pads)
    w = torch.tensor(layer.weight.asnumpy(), dtype=torch.float64, requires_grad=True)
    z = torch.nn.functional.conv2d(xt, w, stride=stride)
    z.retain_grad()
    (z ** 3).sum().backward()
    windows = torch.nn.functional.unfold(xt, 3, stride=stride)
    rows = windows.permute(0, 2, 1).reshape(-1, 18).numpy()
    np.testing.assert_allclose(got["matrix_a"], covariance(rows), rtol=1e-5, atol=1e-5)
    dout = z.grad.permute(0, 2, 3, 1).reshape(-1, 3).numpy()
    np.testing.assert_allclose(got["matrix_g"], covariance(dout), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got["a_normalizer"], [windows.shape[2]])


@needs_torch
def test_embedding_statistics_count_ids():
    layer = nn.EmbeddingThor(6, 3)
    ids = np.array([[1, 2, 2], [5, 1, 1]], np.int32)
    got = _statistic_grads(layer, (ms.Tensor(ids),), lambda y: (y ** 2).sum())
    np.testing.assert_array_equal(got["matrix_a"], np.bincount(ids.ravel(), minlength=6))
    out = layer.embedding_table.asnumpy()[ids.ravel()]
    np.testing.assert_allclose(got["matrix_g"], covariance(2 * out), rtol=1e-5, atol=1e-6)


def test_statistics_are_zero_with_thor_off():
    layer = nn.DenseThor(3, 2)
    layer.thor = False
    got = _statistic_grads(layer, (ms.Tensor(np.ones((4, 3), np.float32)),),
                           lambda y: (y ** 2).sum())
    assert not got["matrix_a"].any() and not got["matrix_g"].any()


# ---- steps against the reference -----------------------------------------------------------------

LRS = [0.05, 0.04, 0.03, 0.02, 0.01]
DAMPINGS = [0.3, 0.2, 0.1, 0.05]


def _run(make_net, forward, shape, frequency, steps, capture_mode=None, **kwargs):
    net = make_net()
    reference = ThorReference(_weights(net), forward, LRS, DAMPINGS, momentum=0.9,
                              frequency=frequency, batch_size=shape[0], **kwargs)
    opt = nn.thor(net, LRS, ms.Tensor(np.array(DAMPINGS, np.float32)), 0.9,
                  batch_size=shape[0], frequency=frequency, **kwargs)
    step = _step_fn(net, opt, capture_mode)
    for k in range(steps):
        x, t = _data(shape, 10 + k)
        loss = step(ms.Tensor(x), ms.Tensor(t))
        want_loss = reference.step(x, t)
        np.testing.assert_allclose(float(loss.asnumpy()), want_loss, rtol=1e-4)
        got = _weights(net)
        for name, value in reference.params.items():
            np.testing.assert_allclose(got[name], value, rtol=RTOL, atol=ATOL,
                                       err_msg=f"{name} after step {k}")
    return net, opt


@needs_torch
@pytest.mark.parametrize("frequency", [1, 2, 3])
def test_mlp_steps_match_reference(frequency):
    _run(_mlp, mlp_forward, (6, 4), frequency, 5)


@needs_torch
def test_conv_net_steps_match_reference():
    _run(_ConvNet, conv_forward, (3, 2, 4, 4), 2, 4)


@needs_torch
@pytest.mark.parametrize("clip", [False, True])
def test_loss_scale_weight_decay_nesterov_and_clipping_match_reference(clip):
    net = _mlp()
    opt_kwargs = dict(weight_decay=0.01, loss_scale=8.0, use_nesterov=True,
                      enable_clip_grad=clip)
    # The reference differentiates the unscaled loss: THOR must undo the scale (G by its
    # square).
    reference = ThorReference(_weights(net), mlp_forward, LRS, DAMPINGS, momentum=0.9,
                              frequency=2, batch_size=6, loss_scale=1.0, weight_decay=0.01,
                              nesterov=True, clip=clip)
    opt = nn.thor(net, LRS, DAMPINGS, 0.9, batch_size=6, frequency=2, **opt_kwargs)
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    grad_fn = ms.grad(lambda x, t: loss_net(x, t) * 8.0, None, opt.parameters)
    for k in range(3):
        x, t = _data((6, 4), 20 + k)
        t = t * 30.0 if clip else t  # large gradients, for the clipping to act
        opt(grad_fn(ms.Tensor(x), ms.Tensor(t)))
        reference.step(x, t)
    got = _weights(net)
    for name, value in reference.params.items():
        np.testing.assert_allclose(got[name], value, rtol=RTOL, atol=ATOL, err_msg=name)


@needs_torch
def test_stored_inverses_are_reused_between_refreshes():
    net, opt = _run(_mlp, mlp_forward, (6, 4), 3, 2)
    x, _ = _data((6, 4), 10)  # the refresh step's batch: step 1 reused its inverses
    a = covariance(x)
    want = np.linalg.inv(a + np.sqrt(DAMPINGS[0]) * np.eye(4))
    np.testing.assert_allclose(opt.matrix_a_inv_0.asnumpy(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(net[0].matrix_a.asnumpy(), a, rtol=1e-5, atol=1e-6)


@needs_torch
def test_embedding_step_matches_numpy():
    ms.set_seed(5)
    net = nn.SequentialCell(nn.Embedding(5, 3), nn.Flatten(), nn.Dense(6, 2))
    table, w, b = (p.asnumpy().astype(np.float64) for p in net.get_parameters())
    opt = nn.thor(net, 0.1, 0.2, 0.0, batch_size=2, frequency=1)
    ids = np.array([[0, 3], [3, 4]], np.int32)
    t = np.array([[1.0, -1.0], [0.5, 2.0]], np.float32)
    _step_fn(net, opt)(ms.Tensor(ids), ms.Tensor(t))
    emb = table[ids]  # (2, 2, 3)
    h = emb.reshape(2, 6)
    dy = 2 * (h @ w.T + b - t) / 4
    demb = (dy @ w).reshape(2, 2, 3)
    dtable = np.zeros_like(table)
    np.add.at(dtable, ids.ravel(), demb.reshape(-1, 3))
    counts = np.bincount(ids.ravel(), minlength=5)
    a_inv = 1 / (counts / 2 + np.sqrt(0.2))
    g = covariance(demb) * 4
    g_inv = np.linalg.inv(g + np.sqrt(0.2) * np.eye(3))
    want = table - 0.1 * (a_inv[:, None] * dtable) @ g_inv
    np.testing.assert_allclose(net[0].embedding_table.asnumpy(), want, rtol=1e-4, atol=1e-6)


@needs_torch
def test_layer_norm_gradients_are_rescaled():
    ms.set_seed(6)
    net = nn.SequentialCell(nn.Dense(4, 3), nn.LayerNorm((3,)), nn.Dense(3, 2))
    values = {p.name: p.asnumpy().astype(np.float64) for p in net.get_parameters()}
    opt = nn.thor(net, 0.1, 0.04, 0.0, batch_size=6, frequency=1)
    x, t = _data((6, 4), 40)
    _step_fn(net, opt)(ms.Tensor(x), ms.Tensor(t))
    w1, b1, gamma, beta, w2, b2 = (
        torch.tensor(values[k], requires_grad=True)
        for k in ("0.weight", "0.bias", "1.gamma", "1.beta", "2.weight", "2.bias"))
    h = torch.nn.functional.layer_norm(torch.tensor(x, dtype=torch.float64) @ w1.T + b1, (3,),
                                       gamma, beta, eps=1e-7)
    ((h @ w2.T + b2 - torch.tensor(t, dtype=torch.float64)) ** 2).mean().backward()
    for name, param in (("1.gamma", gamma), ("1.beta", beta)):
        g = param.grad.numpy()
        want = values[name] - 0.1 * g / (g * g / 6 + np.sqrt(0.04))
        got = {p.name: p.asnumpy() for p in net.get_parameters()}[name]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6, err_msg=name)


# ---- eager, compiled and the training wrappers ---------------------------------------------------

@needs_torch
@pytest.mark.parametrize("capture_mode", ["ast", "bytecode"])
def test_jitted_step_equals_eager_step(capture_mode):
    # Whole-graph capture compiles the refresh choice as a cond; bytecode capture breaks the
    # graph there and Python takes the branch.
    eager_net, _ = _run(_mlp, mlp_forward, (6, 4), 2, 4)
    jit_net, _ = _run(_mlp, mlp_forward, (6, 4), 2, 4, capture_mode=capture_mode)
    for name, value in _weights(eager_net).items():
        np.testing.assert_allclose(_weights(jit_net)[name], value, rtol=1e-5, atol=1e-6)


@pytest.fixture(params=["PYNATIVE_MODE", "GRAPH_MODE"])
def mode(request):
    ms.set_context(mode=getattr(ms, request.param))
    yield request.param
    ms.set_context(mode=ms.PYNATIVE_MODE)


@needs_torch
def test_train_one_step_cell_and_model_match_reference(mode):
    net = _mlp()
    reference = ThorReference(_weights(net), mlp_forward, [0.05], [0.1], momentum=0.9,
                              frequency=2, batch_size=6)
    opt = nn.thor(net, 0.05, 0.1, 0.9, batch_size=6, frequency=2)
    train = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    batches = [_data((6, 4), 30 + k) for k in range(4)]
    for x, t in batches[:2]:
        train(ms.Tensor(x), ms.Tensor(t))
        reference.step(x, t)
    loss_fn = nn.MSELoss()
    model = ms.train.Model(net, loss_fn, opt)
    model = ConvertModelUtils.convert_to_thor_model(model, net, loss_fn, opt)
    dataset = ms.dataset.NumpySlicesDataset(
        {"x": np.concatenate([b[0] for b in batches[2:]]),
         "t": np.concatenate([b[1] for b in batches[2:]])}, shuffle=False).batch(6)
    model.train(1, dataset)
    for x, t in batches[2:]:
        reference.step(x, t)
    got = _weights(net)
    for name, value in reference.params.items():
        np.testing.assert_allclose(got[name], value, rtol=RTOL, atol=ATOL, err_msg=name)


@needs_torch
def test_mixed_precision_model_with_loss_scale_trains():
    # MindSpore's documented use: Model with amp O2 and a fixed loss scale, then converted.
    net = _mlp()
    opt = nn.thor(net, 0.05, 0.1, 0.9, batch_size=6, frequency=2, loss_scale=128.0)
    manager = ms.train.FixedLossScaleManager(128, drop_overflow_update=False)
    model = ms.train.Model(net, nn.MSELoss(), opt, amp_level="O2", loss_scale_manager=manager)
    same = ConvertModelUtils.convert_to_thor_model(model, net, nn.MSELoss(), opt, None, "O2",
                                                   manager)
    assert same is model
    x, t = _data((18, 4), 50)
    before = _weights(net)
    model.train(1, ms.dataset.NumpySlicesDataset({"x": x, "t": t}, shuffle=False).batch(6))
    # Steps 0 and 2 refresh: the stored A is the third batch's, measured in float16.
    a = {p.name: p for p in net.get_parameters()}["0.matrix_a"].asnumpy()
    np.testing.assert_allclose(a, covariance(x[12:].astype(np.float16)), rtol=2e-2, atol=2e-2)
    after = _weights(net)
    assert all(np.isfinite(v).all() for v in after.values())
    assert any(not np.array_equal(after[k], before[k]) for k in before)


def test_convert_to_thor_model_keeps_other_models():
    net = _mlp()
    opt = nn.Momentum(net.trainable_params(), 0.1, 0.9)
    model = ms.train.Model(net, nn.MSELoss(), opt)
    assert ConvertModelUtils.convert_to_thor_model(model, net, nn.MSELoss(), opt) is model


def _final_loss(x, t, make_optimizer, steps=20):
    ms.set_seed(3)
    net = nn.SequentialCell(nn.Dense(4, 2))
    step = _step_fn(net, make_optimizer(net))
    for _ in range(steps):
        loss = step(ms.Tensor(x), ms.Tensor(t))
    return float(loss.asnumpy())


def test_loss_decreases_at_least_as_fast_as_momentum():
    rng = np.random.default_rng(7)
    # An ill-conditioned linear regression: THOR's preconditioning evens out the scales.
    x = (rng.standard_normal((64, 4)) * np.array([3.0, 1.0, 0.3, 0.1])).astype(np.float32)
    t = (x @ rng.standard_normal((4, 2)) + 0.5).astype(np.float32)
    # Each optimizer at its best learning rate of a small grid.
    momentum = min(_final_loss(x, t, lambda n, lr=lr: nn.Momentum(n.trainable_params(), lr, 0.9))
                   for lr in (0.005, 0.01, 0.02, 0.05, 0.1))
    thor = min(_final_loss(x, t, lambda n, lr=lr: nn.thor(n, lr, 0.01, 0.9, batch_size=64,
                                                          frequency=5))
               for lr in (0.1, 0.2, 0.3))
    # The loss before any update (a step returns the loss it differentiated).
    initial = _final_loss(x, t, lambda n: nn.Momentum(n.trainable_params(), 0.0, 0.9), 1)
    assert thor <= momentum, (thor, momentum)
    assert thor < 0.01 * initial, (thor, initial)


# ---- bad arguments -------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,error,match", [
    ({"damping": -0.1}, ValueError, "damping must be positive"),
    ({"damping": [0.1, 0.0]}, ValueError, "damping must be positive"),
    ({"damping": "big"}, TypeError, "damping must be"),
    ({"frequency": 0}, ValueError, "frequency must be at least 1"),
    ({"frequency": 2.5}, TypeError, "frequency must be an int"),
    ({"momentum": -0.5}, ValueError, "momentum must be >= 0"),
    ({"batch_size": 0}, ValueError, "batch_size must be a positive int"),
    ({"loss_scale": 0.0}, ValueError, "loss_scale must be > 0"),
    ({"split_indices": "0"}, TypeError, "split_indices"),
    ({"decay_filter": 3}, TypeError, "decay_filter must be callable"),
])
def test_bad_arguments_raise(kwargs, error, match):
    args = {"learning_rate": 0.1, "damping": 0.1, "momentum": 0.9}
    args.update(kwargs)
    with pytest.raises(error, match=match):
        nn.thor(_mlp(), **args)


def test_net_without_thor_layers_raises():
    with pytest.raises(ValueError, match="no Dense, Conv2d or Embedding layer"):
        nn.thor(nn.SequentialCell(nn.ReLU(), nn.LayerNorm((3,))), 0.1, 0.1, 0.9)
    with pytest.raises(TypeError, match="net must be a Cell"):
        nn.thor(object(), 0.1, 0.1, 0.9)


def test_grouped_conv2d_thor_raises():
    with pytest.raises(ValueError, match="only group=1"):
        nn.Conv2dThor(4, 4, 3, group=2)
