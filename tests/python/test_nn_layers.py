"""pijit.nn layers and losses: each matches a NumPy reference and gives the eager result in
GRAPH_MODE (construct compiled once) and under @jit(mode="PIJit")."""
import math

import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops
from pijit.common.initializer import Normal
import nn_reference as ref
from pijit_testutil import assert_close_result

T = ms.Tensor


@pytest.fixture(autouse=True)
def pynative_after():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def np_of(p):
    return p.asnumpy().copy()


def rand(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _jit_caller(nargs=1):
    """A fresh function (own code object) calling a cell, for @jit(mode="PIJit")."""
    namespace = {}
    xs = ", ".join(f"x{i}" for i in range(nargs))
    exec(f"def call(net, {xs}):\n    return net({xs})\n", {}, namespace)
    return ms.jit(namespace["call"], mode="PIJit")


def check_modes(net, *inputs):
    """Eager, GRAPH_MODE and PIJit results agree (within fused-kernel rounding); returns the
    eager result. GRAPH_MODE compiles construct once for these inputs."""
    eager = net(*inputs)
    ms.reset(type(net).construct)
    ms.set_context(mode=ms.GRAPH_MODE)
    graph = [net(*inputs), net(*inputs)]
    stats = ms.get_code_extra(type(net).construct)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    assert stats["compile_count"] == 1 and stats["reasons"] == [], stats["reasons"]
    jitted = _jit_caller(len(inputs))
    pij = [jitted(net, *inputs), jitted(net, *inputs)]
    jstats = ms.get_code_extra(jitted)
    assert jstats["compile_count"] == 1 and jstats["reasons"] == [], jstats["reasons"]
    for r in graph + pij:
        assert_close_result(r, eager)
    return eager


def close(t, expected, rtol=1e-5, atol=1e-6):
    assert t.shape == expected.shape, (t.shape, expected.shape)
    np.testing.assert_allclose(t.asnumpy(), expected, rtol=rtol, atol=atol)


# ---- layers -----------------------------------------------------------------------------------

@pytest.mark.parametrize("activation", [None, "relu", "sigmoid"])
@pytest.mark.parametrize("has_bias", [True, False])
def test_dense(activation, has_bias):
    ms.set_seed(3)
    net = nn.Dense(5, 4, weight_init=Normal(0.5), bias_init="uniform", has_bias=has_bias,
                   activation=activation)
    x = rand((3, 5))
    y = x @ np_of(net.weight).T + (np_of(net.bias) if has_bias else 0)
    if activation == "relu":
        y = np.maximum(y, 0)
    elif activation == "sigmoid":
        y = 1 / (1 + np.exp(-y))
    close(check_modes(net, T(x)), y)


def test_dense_on_batched_input():
    net = nn.Dense(3, 2)
    x = rand((2, 4, 3))
    close(check_modes(net, T(x)), x @ np_of(net.weight).T + np_of(net.bias))


@pytest.mark.parametrize("kw", [
    dict(kernel_size=3),
    dict(kernel_size=3, pad_mode="valid", stride=2),
    dict(kernel_size=(3, 2), pad_mode="pad", padding=1, has_bias=True, bias_init="normal"),
    dict(kernel_size=3, group=2, dilation=2, pad_mode="same"),
])
def test_conv2d(kw):
    net = nn.Conv2d(4, 6, **kw)
    x = rand((2, 4, 9, 8))
    b = np_of(net.bias) if net.has_bias else None
    expected = ref.conv2d(x, np_of(net.weight), b, stride=net.stride, pad_mode=net.pad_mode,
                          padding=net.padding, dilation=net.dilation, groups=net.group)
    close(check_modes(net, T(x)), expected, rtol=1e-4, atol=1e-5)


def test_conv2d_checks_its_arguments():
    with pytest.raises(ValueError, match="divisible by group"):
        nn.Conv2d(3, 4, 3, group=2)
    with pytest.raises(ValueError, match="padding must be 0 when pad_mode is 'same'"):
        nn.Conv2d(3, 4, 3, padding=1)
    with pytest.raises(ValueError, match="conv2d: input .* has 3 channels but weight"):
        nn.Conv2d(2, 4, 3)(T(np.ones((1, 3, 5, 5), np.float32)))


@pytest.mark.parametrize("cell, fn", [
    (nn.ReLU(), lambda x: np.maximum(x, 0)),
    (nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x))),
    (nn.Tanh(), np.tanh),
    (nn.GELU(approximate=False), ref.gelu),
    (nn.GELU(), lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
    (nn.Softmax(), lambda x: np.exp(ref.log_softmax(x, -1))),
    (nn.Softmax(axis=0), lambda x: np.exp(ref.log_softmax(x, 0))),
    (nn.Flatten(), lambda x: x.reshape(x.shape[0], -1)),
], ids=["relu", "sigmoid", "tanh", "gelu", "gelu_tanh", "softmax", "softmax0", "flatten"])
def test_elementwise_and_shape_layers(cell, fn):
    x = rand((3, 2, 4))
    close(check_modes(cell, T(x)), fn(x.astype(np.float64)).astype(np.float32))


@pytest.mark.parametrize("cls, kind", [(nn.MaxPool2d, "max"), (nn.AvgPool2d, "avg")])
@pytest.mark.parametrize("kw", [dict(kernel_size=2, stride=2), dict(kernel_size=3, stride=2, pad_mode="same"),
                                dict(kernel_size=3, stride=1), {}])
def test_pooling(cls, kind, kw):
    net = cls(**kw)
    x = rand((2, 3, 7, 7))
    expected = ref.pool2d(x, kind, kw.get("kernel_size", 1), kw.get("stride", 1),
                          pad_mode=kw.get("pad_mode", "valid"))
    close(check_modes(net, T(x)), expected)


def test_batch_norm_eval_uses_moving_statistics():
    net = nn.BatchNorm2d(3, eps=1e-3, gamma_init=Normal(1.0), beta_init="normal",
                         moving_mean_init="normal", moving_var_init=2.0)
    x = rand((2, 3, 4, 4))
    expected = ref.batch_norm(x, np_of(net.moving_mean), np_of(net.moving_variance),
                              np_of(net.gamma), np_of(net.beta), eps=1e-3)
    close(check_modes(net, T(x)), expected)


def test_batch_norm_training_updates_moving_statistics_in_every_mode():
    x = rand((4, 3, 5, 5), seed=1) * 2 + 1
    bm, bv, bv1 = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3)), x.var(axis=(0, 2, 3), ddof=1)
    results = {}
    for mode in ("eager", "graph", "pijit"):
        net = nn.BatchNorm2d(3, momentum=0.9).set_train()
        if mode == "graph":
            ms.reset(nn.BatchNorm2d.construct)
            ms.set_context(mode=ms.GRAPH_MODE)
            call = net
        elif mode == "pijit":
            jitted = _jit_caller()
            call = lambda x: jitted(net, x)  # noqa: E731
        else:
            call = net
        outs = [call(T(x)) for _ in range(2)]
        ms.set_context(mode=ms.PYNATIVE_MODE)
        close(outs[0], ref.batch_norm(x, bm, bv, np.ones(3), np.zeros(3)), rtol=1e-4, atol=1e-5)
        close(net.moving_mean, (0.81 * 0 + (0.1 + 0.09) * bm).astype(np.float32), rtol=1e-5)
        close(net.moving_variance, (0.81 * 1 + 0.19 * bv1).astype(np.float32), rtol=1e-5)
        # Back in evaluation mode, later calls (compiled too) read the updated statistics.
        net.set_train(False)
        ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
        after = call(T(x))
        ms.set_context(mode=ms.PYNATIVE_MODE)
        close(after, ref.batch_norm(x, np_of(net.moving_mean), np_of(net.moving_variance),
                                    np.ones(3), np.zeros(3)), rtol=1e-4, atol=1e-5)
        results[mode] = (outs, np_of(net.moving_mean), after)
    for mode in ("graph", "pijit"):
        assert_close_result(results[mode][0], results["eager"][0])
        assert_close_result(results[mode][2], results["eager"][2])
        np.testing.assert_allclose(results[mode][1], results["eager"][1], rtol=1e-6)


@pytest.mark.parametrize("shape, kw, axes", [
    ((2, 3, 6), dict(normalized_shape=(6,)), (2,)),
    ((2, 3, 4, 4), dict(normalized_shape=(3, 4, 4), begin_norm_axis=1, begin_params_axis=1), (1, 2, 3)),
    ((2, 3, 4), dict(normalized_shape=(4,), begin_norm_axis=1), (1, 2)),
])
def test_layer_norm(shape, kw, axes):
    ms.set_seed(2)
    net = nn.LayerNorm(gamma_init="normal", beta_init="normal", epsilon=1e-5, **kw)
    x = rand(shape)
    mu = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    expected = (x - mu) / np.sqrt(var + 1e-5) * np_of(net.gamma) + np_of(net.beta)
    close(check_modes(net, T(x)), expected, rtol=1e-4, atol=1e-5)


def test_dropout_is_identity_in_eval_and_seeded_in_training():
    net = nn.Dropout(keep_prob=0.8)
    x = T(np.ones((8, 16), np.float32))
    assert_close_result(check_modes(net, x), x)
    net.set_train()
    ms.set_seed(11)
    eager = [net(x) for _ in range(2)]
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(11)
    graph = [net(x) for _ in range(2)]
    ms.set_context(mode=ms.PYNATIVE_MODE)
    for a, b in zip(eager, graph):
        assert_close_result(a, b)
    vals = eager[0].asnumpy()
    assert set(np.unique(vals)) <= {0.0, np.float32(1 / 0.8)}
    assert not np.array_equal(eager[0].asnumpy(), eager[1].asnumpy())


def test_embedding_looks_up_rows():
    net = nn.Embedding(7, 3, padding_idx=0)
    ids = np.array([[1, 0, 6], [2, 2, 5]], np.int32)
    table = np_of(net.embedding_table)
    assert np.all(table[0] == 0)
    close(check_modes(net, T(ids)), table[ids])


def test_sequential_cell_runs_its_cells_in_order_and_names_their_parameters():
    seq = nn.SequentialCell([nn.Dense(4, 3), nn.ReLU(), nn.Dense(3, 2)])
    assert [n for n, _ in seq.parameters_and_names()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert [p.name for p in seq.get_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    x = rand((5, 4))
    h = np.maximum(x @ np_of(seq[0].weight).T + np_of(seq[0].bias), 0)
    close(check_modes(seq, T(x)), h @ np_of(seq[2].weight).T + np_of(seq[2].bias))


# ---- losses -----------------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_and_l1_losses(reduction):
    a, b = rand((3, 4)), rand((3, 4), seed=1)
    reduce = {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction]
    close(check_modes(nn.MSELoss(reduction), T(a), T(b)), np.asarray(reduce((a - b) ** 2), np.float32))
    close(check_modes(nn.L1Loss(reduction), T(a), T(b)), np.asarray(reduce(np.abs(a - b)), np.float32))


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_softmax_cross_entropy(sparse, reduction):
    logits = rand((5, 4)) * 3
    labels = np.array([0, 3, 1, 1, 2], np.int32)
    onehot = np.eye(4, dtype=np.float32)[labels]
    per = -(onehot * ref.log_softmax(logits.astype(np.float64))).sum(-1)
    expected = {"none": per, "mean": per.mean(), "sum": per.sum()}[reduction]
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=sparse, reduction=reduction)
    got = check_modes(loss, T(logits), T(labels if sparse else onehot))
    close(got, np.asarray(expected, np.float32), rtol=1e-5)


def test_softmax_cross_entropy_is_stable_for_large_logits():
    logits = T(np.array([[1000.0, 0.0, -1000.0]], np.float32))
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")(logits, T(np.array([1], np.int32)))
    np.testing.assert_allclose(loss.asnumpy(), 1000.0, rtol=1e-6)


def test_loss_rejects_an_unknown_reduction():
    with pytest.raises(ValueError, match="reduction must be one of"):
        nn.MSELoss("avg")
