"""Compiled convolutional networks keep their activations in oneDNN's blocked layouts between
convolutions (graph/passes/layout_assignment.h): the graphs hold the blocked nodes, reorders
remain only at the edges, and results are those of eager mode (bit for bit where no batch
norm is rewritten; within the affine rewrite's rounding otherwise). Also the NCHW kernels
that moved onto blocked ones: max and average pooling, a network's stem convolution."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops

from fusion_testutil import first_graph, fresh_jit
from test_batch_norm_fusion import Block, _close, _randomise_statistics
from test_conv_depthwise import _InvertedResidual


class PlainNet(nn.Cell):
    """A stem, max pooling, two residual blocks of biased convolutions and relus, average
    pooling: no batch norm, so every op keeps eager's rounding."""

    def __init__(self, width=32):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 7, 2, pad_mode="pad", padding=3, has_bias=True)
        self.pool = nn.MaxPool2d(3, 2, pad_mode="same")
        self.c1 = nn.Conv2d(width, width, 3, 1, pad_mode="pad", padding=1, has_bias=True)
        self.c2 = nn.Conv2d(width, width, 3, 1, pad_mode="pad", padding=1, has_bias=True)
        self.c3 = nn.Conv2d(width, 2 * width, 1, 2, has_bias=True)
        self.avg = nn.AvgPool2d(2, 2)
        self.relu = nn.ReLU()

    def construct(self, x):
        x = self.pool(self.relu(self.stem(x)))
        y = self.relu(self.c1(x))
        y = self.relu(self.c2(y) + x)
        y = self.relu(self.c3(y)) * 0.5 + 0.25
        return self.avg(y)


def test_plain_network_is_blocked_and_bit_equal_to_eager():
    rng = np.random.default_rng(0)
    net = PlainNet()
    x = rng.standard_normal((2, 3, 40, 40)).astype(np.float32)
    x[0, 1, 3, 3] = np.inf
    x[1, 2, 10, 10] = -0.0
    x = ms.Tensor(x)
    jf = fresh_jit(lambda t: net(t))
    got, want = jf(x).asnumpy(), net(x).asnumpy()
    np.testing.assert_array_equal(got, want)
    text = first_graph(jf)
    assert text.count("block=") >= 4, text      # the convolutions give blocked results
    # the output is reordered back; where oneDNN computes the stem in another layout than
    # the convolutions after it (its first-layer kernels), the residual read through NCHW too
    assert text.count("from_blocked(") <= 2, text
    assert "max_pool2d(" in text and "avg_pool2d(" in text, text


@pytest.mark.parametrize("cin,cout,stride,size", [(32, 32, 1, 8), (32, 64, 2, 9), (16, 16, 1, 7)])
def test_eval_blocks_match_eager(cin, cout, stride, size):
    rng = np.random.default_rng(cin + cout)
    net = Block(cin, cout, stride)
    _randomise_statistics(net, rng)
    net.set_train(False)
    x = ms.Tensor(rng.standard_normal((2, cin, size, size)).astype(np.float32))
    jf = fresh_jit(lambda t: net(t))
    _close(jf(x).asnumpy(), net(x).asnumpy())
    text = first_graph(jf)
    assert "to_blocked(" in text and "block=" in text, text
    # The output; and where the shortcut's 1x1 convolution computes in another layout than
    # the 3x3 ones (nChw8c against NHWC), its result read through NCHW once.
    assert text.count("from_blocked(") <= 2, text


def test_training_step_gradients_match_eager():
    """Training graphs read the convolutions' results in NCHW (batch norm's statistics, the
    weight gradients): the convolutions still run blocked, and gradients equal eager's."""
    rng = np.random.default_rng(4)
    net = Block(32, 32, 1)
    x = ms.Tensor(rng.standard_normal((2, 32, 6, 6)).astype(np.float32))
    params = net.trainable_params()
    grad = ms.value_and_grad(lambda t: ops.sum(net(t) * net(t)), None, params)
    want_loss, want = grad(x)
    jf = ms.jit(grad, mode="PIJit")
    got_loss, got = jf(x)
    _close(got_loss.asnumpy(), want_loss.asnumpy())
    for g, w in zip(got, want):
        _close(g.asnumpy(), w.asnumpy(), rel=1e-3)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("shape,kernel,stride,pad_mode",
                         [((2, 16, 13, 13), 3, 2, "same"), ((1, 32, 8, 8), 2, 2, "valid"),
                          ((3, 8, 9, 7), 3, 1, "valid")])
def test_float32_pooling_matches_float64(kind, shape, kernel, stride, pad_mode):
    """Float32 pooling over channel multiples of 8 runs on the blocked kernels inside: the
    float64 loops are the reference."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape)
    x[0, 0, 0, :3] = -np.inf
    layer = (nn.MaxPool2d if kind == "max" else nn.AvgPool2d)(kernel, stride, pad_mode=pad_mode)
    got = layer(ms.Tensor(x.astype(np.float32))).asnumpy()
    want = layer(ms.Tensor(x)).asnumpy()
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-6, atol=1e-6)


def test_stem_convolution_matches_float64():
    """A 7x7 stride-2 convolution from 3 channels to 64 runs on oneDNN's first-layer kernels
    (NCHW in, blocked out, reordered back in eager mode)."""
    rng = np.random.default_rng(8)
    x, w = rng.standard_normal((2, 3, 30, 30)), rng.standard_normal((64, 3, 7, 7)) * 0.1
    got = ops.conv2d(ms.Tensor(x.astype(np.float32)), ms.Tensor(w.astype(np.float32)),
                     stride=2, pad_mode="pad", padding=3).asnumpy()
    want = ops.conv2d(ms.Tensor(x), ms.Tensor(w), stride=2, pad_mode="pad", padding=3).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_stem_weight_gradient_matches_float64():
    """The stem's weight gradient runs on oneDNN's first-layer kernels (it ran on a scalar
    row loop below 4 input channels): against the float64 loops."""
    rng = np.random.default_rng(9)
    x, w = rng.standard_normal((2, 3, 30, 30)), rng.standard_normal((32, 3, 7, 7)) * 0.1
    seed = rng.standard_normal((2, 32, 15, 15))

    def loss(a, b, s):
        return ops.sum(ops.conv2d(a, b, stride=2, pad_mode="pad", padding=3) * s)

    grad = ms.grad(loss, grad_position=1)
    got = grad(*(ms.Tensor(v.astype(np.float32)) for v in (x, w, seed))).asnumpy()
    want = grad(ms.Tensor(x), ms.Tensor(w), ms.Tensor(seed)).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("cin,cout,stride,size", [(32, 32, 1, 8), (32, 64, 2, 9), (16, 32, 2, 7)])
def test_training_mode_step_runs_blocked_and_matches_eager(cin, cout, stride, size):
    """Batch norm with the batch's statistics: its forward and gradients, the convolutions'
    gradients and the relu masks run on blocked activations in the compiled step; the loss,
    every gradient and the running statistics it updates match eager's (the blocked kernels
    sum in another order)."""
    rng = np.random.default_rng(cin + cout + size)

    def make():
        net = Block(cin, cout, stride)
        net.set_train()
        return net

    x = ms.Tensor(rng.standard_normal((4, cin, size, size)).astype(np.float32))
    eager_net, jit_net = make(), make()
    for a, b in zip(eager_net.get_parameters(), jit_net.get_parameters()):
        b.set_data(ms.Tensor(a.asnumpy()))

    def step_of(net):
        return ms.value_and_grad(lambda t: ops.sum(net(t) * net(t)) * 0.01, None,
                                 net.trainable_params())

    want_loss, want = step_of(eager_net)(x)
    jf = fresh_jit(step_of(jit_net))
    got_loss, got = jf(x)
    _close(got_loss.asnumpy(), want_loss.asnumpy(), rel=1e-4)
    for g, w in zip(got, want):
        _close(g.asnumpy(), w.asnumpy(), rel=2e-3)
    for a, b in zip(eager_net.get_parameters(), jit_net.get_parameters()):
        if "moving" in a.name:
            _close(b.asnumpy(), a.asnumpy(), rel=1e-5)
    text = first_graph(jf)
    assert text.count("batch_norm_train(") >= 2 and "batch_norm_grad_input(" in text, text
    for op in ("batch_norm_train(", "batch_norm_grad_sums(", "batch_norm_grad_input(",
               "conv2d_grad_input("):
        lines = [line for line in text.splitlines() if op in line]
        assert lines and all("block=" in line for line in lines), (op, text)


@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_blocks_run_blocked_and_match_eager(stride):
    """Depthwise convolutions over multiples of 8 channels run on oneDNN's nChw8c kernels in
    compiled graphs (eager keeps the NCHW ones): inference and a training step's gradients
    against eager, and the graph keeps the block between the three convolutions."""
    rng = np.random.default_rng(10 + stride)
    x = ms.Tensor(rng.standard_normal((2, 16, 9, 9)).astype(np.float32))
    net = _InvertedResidual(16, 3, stride)
    _randomise_statistics(net, rng)
    net.set_train(False)
    jf = fresh_jit(lambda t: net(t))
    _close(jf(x).asnumpy(), net(x).asnumpy())
    text = first_graph(jf)
    # the depthwise convolution: its window's last int is its 48 groups
    depthwise = [line for line in text.splitlines() if "conv2d(" in line and ",48]" in line]
    assert depthwise and all("block=8" in line for line in depthwise), text
    assert text.count("from_blocked(") <= 1, text  # for the head's mean

    net.set_train()
    params = net.trainable_params()
    grad = ms.value_and_grad(lambda t: ops.sum(net(t) * net(t)), None, params)
    want_loss, want = grad(x)
    got_loss, got = fresh_jit(grad)(x)
    _close(got_loss.asnumpy(), want_loss.asnumpy(), rel=1e-3)
    for g, w in zip(got, want):
        _close(g.asnumpy(), w.asnumpy(), rel=2e-3)


def test_depthwise_special_values_in_blocked_layouts_follow_eager():
    """A padded tap adds nothing on the blocked kernels either: an infinite weight at a corner
    does not meet the padding, a NaN spreads to its window only."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 16, 6, 6)).astype(np.float32)
    w = rng.standard_normal((16, 1, 3, 3)).astype(np.float32)
    w1 = rng.standard_normal((16, 16, 1, 1)).astype(np.float32)
    w[0, 0, 0, 0], x[0, 1, 2, 3] = np.inf, np.nan

    def f(a, b, c):
        return ops.conv2d(ops.conv2d(a, c), b, pad_mode="pad", padding=1, groups=16)

    args = [ms.Tensor(v) for v in (x, w, w1)]
    jf = fresh_jit(f)
    got, want = jf(*args).asnumpy(), f(*args).asnumpy()
    assert "block=8" in first_graph(jf)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5)
