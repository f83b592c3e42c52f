"""pijit.amp: mixed precision levels O1/O2/O3 in float16 and bfloat16 (checked on the compiled
graph's dtypes and against values computed in the low dtype), float32 master parameters and
gradients, loss scaling inside a jitted step (the scale sequence against MindSpore's rule
written in Python, overflowing steps leaving the parameters and the optimizer untouched), and
Model(amp_level=..., loss_scale_manager=...)."""
import re

import numpy as np
import pytest

import pijit as ms
import pijit.dataset as ds
from pijit import amp, nn, ops
from pijit.train import (DynamicLossScaleManager, FixedLossScaleManager, LossMonitor, Model,
                         load_param_into_net)
from pijit.train.loss_scale_cells import (DynamicLossScaleUpdateCell,
                                          TrainOneStepWithLossScaleCell)

from test_train_extras import blobs, classifier

LOW = [pytest.param(ms.float16, "f16", id="float16"), pytest.param(ms.bfloat16, "bf16",
                                                                    id="bfloat16")]


class ConvNet(nn.Cell):
    """conv -> batch norm -> relu -> dense -> a MatMul primitive with a parameter."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, pad_mode="valid")
        self.bn = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(4 * 6 * 6, 3)
        self.matmul = ops.MatMul()
        self.mix = ms.Parameter(np.eye(3, dtype=np.float32) * 0.5 + 0.1, name="mix")

    def construct(self, x):
        y = self.fc(self.flatten(self.relu(self.bn(self.conv(x)))))
        return self.matmul(y, self.mix)


def conv_net(seed=0):
    ms.set_seed(seed)
    return ConvNet()


def images(n=8, seed=0):
    rng = np.random.default_rng(seed)
    return (ms.Tensor(rng.standard_normal((n, 1, 8, 8)).astype(np.float32)),
            ms.Tensor((np.arange(n) % 3).astype(np.int32)))


def graph_text(function, *args):
    explained = ms.explain(function, *args)
    assert explained.graph_count == 1 and explained.graph_break_count == 0, str(explained)
    return "\n".join(explained.graphs)


def op_dtypes(text, op):
    """The dtype of each `op` node in a graph's text: '%9: f16[8,3] = matmul(...)'."""
    return re.findall(rf"%\d+: (\w+)\[[^\]]*\] = {op}\(", text)


def params_of(net):
    return {p.name: p.asnumpy().copy() for p in net.get_parameters()}


# ---- the levels ----------------------------------------------------------------------------------

def check_low_precision_graph(level, dtype, short):
    """conv_net at the amp `level` in `dtype`, jitted: in its one graph the convolution and
    both matmuls run in the low dtype (`short` in the graph's text), batch norm in float32.
    Returns the jitted forward function and its input."""
    net = amp.auto_mixed_precision(conv_net(), level, dtype=dtype)
    x, _ = images()
    forward = ms.jit(lambda x: net(x))
    text = graph_text(forward, x)
    assert op_dtypes(text, "conv2d") == [short]
    assert op_dtypes(text, "matmul") == [short, short]  # Dense and the MatMul primitive
    assert set(op_dtypes(text, "batch_norm")) == {"f32"}  # not white-listed: float32
    return forward, x


@pytest.mark.parametrize("dtype,short", LOW)
def test_o1_white_listed_layers_and_primitives_compute_in_the_low_dtype(dtype, short):
    forward, x = check_low_precision_graph("O1", dtype, short)
    out = forward(x)
    assert out.dtype == ms.float32
    # The same numbers as the float32 network up to the low dtype's rounding.
    reference = conv_net()(x).asnumpy()
    tolerance = 2e-2 if dtype == ms.float16 else 1e-1
    np.testing.assert_allclose(out.asnumpy(), reference, rtol=tolerance, atol=tolerance)
    assert not np.array_equal(out.asnumpy(), reference)


@pytest.mark.parametrize("dtype,short", LOW)
def test_o1_dense_rounds_its_inputs_and_weights_to_the_low_dtype(dtype, short):
    dense = nn.Dense(4, 2, weight_init="ones", bias_init="zeros")
    # 1 + 2**-13 is 1 in float16 and bfloat16, not in float32.
    x = ms.Tensor(np.full((1, 4), 1 + 2 ** -13, np.float32))
    dense.weight.set_data(ms.Tensor(np.full((2, 4), 1 + 2 ** -13, np.float32)))
    assert dense(x).asnumpy()[0, 0] > 4.0
    amp.auto_mixed_precision(dense, "O1", dtype=dtype)
    out = dense(x)
    assert out.dtype == ms.float32
    np.testing.assert_array_equal(out.asnumpy(), np.full((1, 2), 4.0, np.float32))


@pytest.mark.parametrize("dtype,short", LOW)
def test_o2_keeps_batch_norm_in_float32_and_gives_float32_outputs(dtype, short):
    forward, x = check_low_precision_graph("O2", dtype, short)
    assert forward(x).dtype == ms.float32


def test_o3_computes_everything_but_batch_norm_in_the_low_dtype():
    class WithLayerNorm(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(4, 4)
            self.norm = nn.LayerNorm((4,))

        def construct(self, x):
            return self.norm(self.fc(x)) * 2.0

    net = amp.auto_mixed_precision(WithLayerNorm(), "O3")
    x = ms.Tensor(np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32))
    forward = ms.jit(lambda x: net(x))
    text = graph_text(forward, x)
    assert op_dtypes(text, "matmul") == ["f16"]
    assert set(op_dtypes(text, "layer_norm")) == {"f16"}  # O2 would keep it in float32
    assert forward(x).dtype == ms.float32
    o2 = amp.auto_mixed_precision(WithLayerNorm(), "O2")
    assert set(op_dtypes(graph_text(ms.jit(lambda x: o2(x)), x), "layer_norm")) == {"f32"}


def test_o0_returns_the_network_unchanged():
    net = conv_net()
    assert amp.auto_mixed_precision(net, "O0") is net
    x, _ = images()
    assert "f16" not in graph_text(ms.jit(lambda x: net(x)), x)


# ---- parameters stay float32 masters -------------------------------------------------------------

def test_parameters_stay_float32_with_their_names_and_their_gradients_are_float32():
    net = conv_net()
    names = [p.name for p in net.trainable_params()]
    wrapped = amp.auto_mixed_precision(net, "O2")
    assert [p.name for p in wrapped.trainable_params()] == names
    assert all(p.dtype == ms.float32 for p in wrapped.get_parameters())
    assert isinstance(net.fc.weight, ms.Parameter) and net.fc.weight.dtype == ms.float32
    x, y = images()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    grads = ms.grad(lambda x, y: loss_fn(wrapped(x), y), grad_position=None,
                    weights=wrapped.trainable_params())(x, y)
    assert [g.dtype for g in grads] == [ms.float32] * len(names)
    assert all(np.isfinite(g.asnumpy()).all() for g in grads)
    assert np.abs(grads[names.index("fc.weight")].asnumpy()).sum() > 0


def test_a_converted_network_saves_and_loads_like_the_original(tmp_path):
    net = amp.auto_mixed_precision(conv_net(seed=1), "O2")
    path = str(tmp_path / "amp.ckpt")
    ms.save_checkpoint(net, path)
    plain = conv_net(seed=2)
    assert load_param_into_net(plain, ms.load_checkpoint(path)) == ([], [])
    for name, value in params_of(net).items():
        np.testing.assert_array_equal(params_of(plain)[name], value)


def test_setting_a_parameter_outside_construct_reaches_the_cast_view():
    dense = nn.Dense(2, 1, weight_init="zeros", bias_init="zeros")
    amp.auto_mixed_precision(dense, "O1")
    x = ms.Tensor(np.ones((1, 2), np.float32))
    forward = ms.jit(lambda x: dense(x))
    assert forward(x).asnumpy()[0, 0] == 0.0
    dense.weight.set_data(ms.Tensor(np.array([[1.0, 2.0]], np.float32)))
    assert forward(x).asnumpy()[0, 0] == 3.0
    dense.bias = ms.Parameter(np.array([10.0], np.float32), name="bias")  # a new Parameter
    assert dense(x).asnumpy()[0, 0] == 13.0


def test_keyword_arguments_reach_the_converted_construct():
    class Scaled(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(3, 2, weight_init="ones", bias_init="zeros")

        def construct(self, x, scale=1.0):
            return self.fc(x) * scale

    net = amp.auto_mixed_precision(Scaled(), "O3")
    x = ms.Tensor(np.ones((2, 3), np.float32))
    forward = ms.jit(lambda x: net(x, scale=2.0))
    np.testing.assert_array_equal(forward(x).asnumpy(), np.full((2, 2), 6.0, np.float32))
    assert forward(x).dtype == ms.float32
    assert "f16" in graph_text(forward, x)


def test_a_converted_construct_keeps_the_original_signature():
    from pijit.amp import _mirrored

    def construct(self, x, y=2, *rest, k=3, **extra):
        pass

    calls = []
    mirrored = _mirrored(construct, "construct", lambda *a: calls.append(a))
    mirrored("cell", 1)
    mirrored("cell", 1, 5, 6, 7, k=8, z=9)
    assert calls == [("cell", (1, 2), {"k": 3}), ("cell", (1, 5, 6, 7), {"k": 8, "z": 9})]
    with pytest.raises(TypeError):
        mirrored("cell")  # x is required, as in the original


def test_converted_networks_compile_in_graph_mode():
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = amp.auto_mixed_precision(conv_net(), "O2")
        x, _ = images()
        graph_out = net(x)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    assert graph_out.dtype == ms.float32
    np.testing.assert_array_equal(graph_out.asnumpy(), net(x).asnumpy())


def test_argument_errors():
    with pytest.raises(TypeError, match="auto_mixed_precision.*'network' must be a Cell"):
        amp.auto_mixed_precision(lambda x: x, "O1")
    with pytest.raises(ValueError, match="auto_mixed_precision.*'amp_level' must be 'O0', 'O1', "
                                         "'O2' or 'O3', got 'O4'"):
        amp.auto_mixed_precision(conv_net(), "O4")
    with pytest.raises(ValueError, match="auto_mixed_precision.*'dtype' must be pijit.float16 "
                                         "or pijit.bfloat16"):
        amp.auto_mixed_precision(conv_net(), "O2", dtype=ms.float32)
    net = conv_net()
    amp.auto_mixed_precision(net, "O1")
    with pytest.raises(ValueError, match="already converted"):
        amp.auto_mixed_precision(net, "O2")
    optimizer = nn.SGD(net.trainable_params())
    with pytest.raises(ValueError, match="build_train_network.*keyword arguments may be"):
        amp.build_train_network(conv_net(), optimizer, level="O2", cast_type=ms.float16)
    with pytest.raises(ValueError, match="build_train_network.*'cast_model_type' must be"):
        amp.build_train_network(conv_net(), optimizer, level="O2", cast_model_type=ms.int32)
    with pytest.raises(TypeError, match="build_train_network.*'optimizer' must be an Optimizer"):
        amp.build_train_network(conv_net(), None)
    with pytest.raises(ValueError, match="build_train_network.*level 'auto' chooses by device"):
        amp.build_train_network(conv_net(), optimizer, level="auto")
    with pytest.raises(ValueError, match="custom_mixed_precision.*exactly one"):
        amp.custom_mixed_precision(conv_net())
    with pytest.raises(ValueError, match="StaticLossScaler.*'scale_value' must be finite and "
                                         ">= 1"):
        amp.StaticLossScaler(0.5)
    with pytest.raises(TypeError, match="DynamicLossScaler.*'scale_window' must be an int"):
        amp.DynamicLossScaler(1024, 2, 1.5)
    with pytest.raises(TypeError, match="all_finite.*'inputs' must be a Tensor or a non-empty"):
        amp.all_finite([])


def test_custom_lists():
    white = amp.custom_mixed_precision(conv_net(), white_list=[nn.Conv2d])
    x, _ = images()
    text = graph_text(ms.jit(lambda x: white(x)), x)
    assert op_dtypes(text, "conv2d") == ["f16"] and op_dtypes(text, "matmul") == ["f32", "f32"]
    black = amp.custom_mixed_precision(conv_net(), black_list=[nn.Dense])
    text = graph_text(ms.jit(lambda x: black(x)), x)
    assert op_dtypes(text, "conv2d") == ["f16"] and op_dtypes(text, "matmul") == ["f32", "f16"]
    assert amp.get_black_list() == [nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.LayerNorm]
    assert nn.Dense in amp.get_white_list() and ops.MatMul in amp.get_white_list()


# ---- all_finite and the loss scalers -------------------------------------------------------------

@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_all_finite(jitted):
    check = ms.jit(amp.all_finite) if jitted else amp.all_finite
    finite = (ms.Tensor(np.array([1.0, -65504.0], np.float16)),
              ms.Tensor(np.array([3.0e38], np.float32)), ms.Tensor(np.array([7], np.int32)))
    assert bool(check(finite).asnumpy()) is True
    for bad in (np.inf, -np.inf, np.nan):
        for dtype in (np.float16, np.float32, np.float64):
            values = finite + (ms.Tensor(np.array([0.0, bad], dtype)),)
            assert bool(check(values).asnumpy()) is False, (bad, dtype)
    huge = ms.Tensor(np.array([3.0e38], np.float32)).astype(ms.bfloat16) * 4.0
    assert bool(amp.all_finite(huge).asnumpy()) is False


def test_static_loss_scaler_scales_and_unscales():
    scaler = amp.StaticLossScaler(1024)
    loss = ms.Tensor(np.array(0.5, np.float32))
    np.testing.assert_array_equal(scaler.scale(loss).asnumpy(), 512.0)
    grads = (ms.Tensor(np.array([1024.0, 2048.0], np.float16)),
             ms.Tensor(np.array([3.0], np.float32)))
    unscaled = scaler.unscale(grads)
    assert [g.dtype for g in unscaled] == [ms.float16, ms.float32]
    np.testing.assert_array_equal(unscaled[0].asnumpy(), [1.0, 2.0])
    np.testing.assert_allclose(unscaled[1].asnumpy(), [3.0 / 1024])
    assert scaler.adjust(ms.Tensor(False)) is False
    assert float(scaler.scale_value.asnumpy()) == 1024.0


def reference_dynamic_scale(scale, factor, window, finite_flags):
    """MindSpore's DynamicLossScaler.adjust in plain Python: the scale after each step."""
    counter, scales = 0, []
    for finite in finite_flags:
        if finite:
            if counter == window - 1 and np.isfinite(np.float32(scale * factor)):
                scale = scale * factor
        else:
            scale = max(1.0, scale / factor)
        counter = (counter + 1) % window if finite else 0
        scales.append(scale)
    return scales


def test_dynamic_loss_scaler_adjusts_inside_a_jitted_step():
    scaler = amp.DynamicLossScaler(scale_value=2 ** 4, scale_factor=2, scale_window=3)

    @ms.jit
    def step(grads):
        finite = amp.all_finite(scaler.unscale(grads))
        scaler.adjust(finite)
        return finite

    flags = [True, True, True, True, False, True, False, False, False, False, False, True,
             True, True, True, True, True]
    scales = []
    for finite in flags:
        grads = (ms.Tensor(np.array([1.0, 1.0 if finite else np.inf], np.float32)),)
        assert bool(step(grads).asnumpy()) is finite
        scales.append(float(scaler.scale_value.asnumpy()))
    assert scales == reference_dynamic_scale(16.0, 2, 3, flags)
    assert min(scales) == 1.0  # never below 1
    assert ms.explain(step, (ms.Tensor(np.ones(2, np.float32)),)).graph_count == 1


# ---- loss scaling in the training step -----------------------------------------------------------

def cross_entropy():
    return nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")


def train_steps(train_network, batches):
    step = ms.jit(lambda x, y: train_network(x, y))
    return [step(ms.Tensor(x), ms.Tensor(y)) for x, y in batches]


def batches_of(points, labels, size=16):
    return [(points[i:i + size], labels[i:i + size]) for i in range(0, len(points), size)]


def test_a_power_of_two_loss_scale_gives_the_same_training_in_float32():
    points, labels = blobs(samples=64)
    batches = batches_of(points, labels) * 2
    plain_net, scaled_net = classifier(seed=0), classifier(seed=0)
    plain = nn.TrainOneStepCell(nn.WithLossCell(plain_net, cross_entropy()),
                                nn.Momentum(plain_net.trainable_params(), 0.1, 0.9))
    scaled = amp.build_train_network(scaled_net, nn.Momentum(scaled_net.trainable_params(),
                                                             0.1, 0.9), cross_entropy(),
                                     level="O0",
                                     loss_scale_manager=FixedLossScaleManager(1024.0))
    assert isinstance(scaled, TrainOneStepWithLossScaleCell)
    plain_losses = train_steps(plain, batches)
    outputs = train_steps(scaled, batches)
    for loss, (scaled_loss, overflow, scale) in zip(plain_losses, outputs):
        assert float(scaled_loss.asnumpy()) == float(loss.asnumpy())
        assert bool(overflow.asnumpy()) is False and float(scale.asnumpy()) == 1024.0
    for name, value in params_of(plain_net).items():
        np.testing.assert_array_equal(params_of(scaled_net)[name], value)


def test_fixed_scale_without_dropping_divides_in_the_optimizer():
    points, labels = blobs(samples=64)
    batches = batches_of(points, labels)
    reference_net, net = classifier(seed=0), classifier(seed=0)
    reference = nn.TrainOneStepCell(nn.WithLossCell(reference_net, cross_entropy()),
                                    nn.SGD(reference_net.trainable_params(), 0.1))
    scaled = amp.build_train_network(
        net, nn.SGD(net.trainable_params(), 0.1, loss_scale=256.0), cross_entropy(),
        loss_scale_manager=FixedLossScaleManager(256.0, drop_overflow_update=False))
    assert type(scaled) is nn.TrainOneStepCell and scaled.sens == 256.0
    train_steps(reference, batches)
    train_steps(scaled, batches)
    for name, value in params_of(reference_net).items():
        np.testing.assert_allclose(params_of(net)[name], value, rtol=1e-6, atol=1e-7)


def test_overflowing_steps_are_dropped_and_the_scale_follows_mindspores_rule():
    points, labels = blobs(samples=64)
    batches = batches_of(points, labels) * 3
    net = classifier(seed=0)
    optimizer = nn.Adam(net.trainable_params(), 0.01)
    manager = DynamicLossScaleManager(init_loss_scale=2.0 ** 24, scale_factor=2, scale_window=3)
    train_network = amp.build_train_network(net, optimizer, cross_entropy(), level="O2",
                                            loss_scale_manager=manager)
    step = ms.jit(lambda x, y: train_network(x, y))
    python_rule = DynamicLossScaleManager(2.0 ** 24, 2, 3)
    state = {p.name: p for p in optimizer.get_parameters()}
    overflows = []
    for x, y in batches:
        before = {name: p.asnumpy().copy() for name, p in state.items()}
        before.update(params_of(net))
        loss, overflow, scale = step(ms.Tensor(x), ms.Tensor(y))
        overflow = bool(overflow.asnumpy())
        overflows.append(overflow)
        assert float(scale.asnumpy()) == python_rule.get_loss_scale()
        python_rule.update_loss_scale(overflow)
        after = {name: p.asnumpy() for name, p in state.items()}
        after.update(params_of(net))
        changed = [name for name in before if not np.array_equal(before[name], after[name])]
        if overflow:
            assert changed == [], changed  # weights, moments, beta powers, step counter
        else:
            assert "0.weight" in changed and "global_step" in changed
        assert float(train_network.scale_sense.asnumpy()) == python_rule.get_loss_scale()
    # Float16 gradients overflow at 2**24; the scale comes down until they fit, then grows.
    assert overflows[0] and not all(overflows)
    assert any(not a and b for a, b in zip(overflows, overflows[1:]))  # grown too far again


def test_the_update_cell_matches_the_managers_python_rule():
    cell = DynamicLossScaleUpdateCell(loss_scale_value=64, scale_factor=4, scale_window=2)
    scale = ms.Parameter(np.array(64.0, np.float32), name="scale", requires_grad=False)
    update = ms.jit(lambda overflow: cell(scale, overflow))
    rule = DynamicLossScaleManager(64, 4, 2)
    for overflow in [False, False, False, True, True, False, False, False, True, False, False]:
        update(ms.Tensor(overflow))
        rule.update_loss_scale(overflow)
        assert float(scale.asnumpy()) == rule.get_loss_scale()


# ---- Model ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("level", ["O1", "O2", "O3"])
def test_model_trains_and_evaluates_with_mixed_precision(level, capsys):
    points, labels = blobs(samples=96)
    data = ds.NumpySlicesDataset({"x": points, "y": labels}, shuffle=False).batch(16)
    net = classifier(seed=0)
    manager = DynamicLossScaleManager(2 ** 12, 2, 4) if level == "O2" else None
    kwargs = {"loss_scale_manager": manager} if manager else {}
    model = Model(net, cross_entropy(), nn.Momentum(net.trainable_params(), 0.05, 0.9),
                  metrics={"accuracy", "loss"}, amp_level=level, **kwargs)
    before = model.eval(data)
    model.train(10, data, callbacks=[LossMonitor(6)])
    after = model.eval(data)
    assert isinstance(after["loss"], float) and after["loss"] < before["loss"]
    assert after["accuracy"] > 0.9
    printed = capsys.readouterr().out
    assert re.search(r"epoch: 10 step: 6, loss is \d", printed)
    assert all(p.dtype == ms.float32 for p in net.get_parameters())
    if level == "O2":
        assert isinstance(model.train_network, TrainOneStepWithLossScaleCell)
        assert float(model.train_network.scale_sense.asnumpy()) >= 1.0
    prediction = model.predict(ms.Tensor(points[:4]))
    assert prediction.dtype == (ms.float32 if level == "O1" else ms.float16)


def test_auto_level_is_o2_where_graphs_run_on_the_gpu(monkeypatch):
    from pijit import amp, context
    with pytest.raises(ValueError, match="level 'auto' chooses by device"):
        amp.check_level("build_train_network", "auto")
    # As set_context(device_target="GPU") leaves it on a machine with a usable GPU.
    monkeypatch.setitem(context._context, "device_target", "GPU")
    assert amp.check_level("build_train_network", "auto") == "O2"
