"""Depthwise and grouped conv2d in float32 (the depthwise kernels and oneDNN's grouped ones),
forward and both gradients: against torch's float64 convolution where torch is installed,
against central differences in float64 everywhere; a MobileNetV2 block's training step jitted
equals the eager one."""
import numpy as np
import pytest

import pijit as ms
import pijit.nn as nn
from pijit import ops

from gradcheck_util import central_differences

try:
    import torch
except ImportError:
    torch = None

CASES = [  # (N, C, H, W), multiplier, kernel, stride, pad_mode, padding, dilation
    ((2, 8, 14, 14), 1, 3, 1, "pad", 1, 1),       # MobileNetV2
    ((2, 6, 15, 15), 1, 3, 2, "same", 0, 1),      # odd size, stride 2
    ((2, 6, 16, 16), 1, 3, 2, "pad", 1, 1),
    ((1, 4, 13, 11), 1, 5, 1, "same", 0, 1),      # EfficientNet 5x5
    ((2, 4, 17, 17), 1, 5, 2, "pad", 2, 1),
    ((1, 3, 12, 12), 2, 3, 1, "pad", (0, 1, 2, 0), 2),  # multiplier, uneven pads, dilation
    ((3, 5, 9, 70), 1, 3, 1, "valid", 0, 1),      # long rows
    ((2, 4, 6, 6), 1, 1, 1, "valid", 0, 1),       # 1x1
]


def _torch_padding(x_shape, k, stride, dilation, pad_mode, padding):
    """(top, bottom, left, right) padding as pijit resolves it."""
    if pad_mode == "valid":
        return (0, 0, 0, 0)
    if pad_mode == "pad":
        return (padding,) * 4 if isinstance(padding, int) else tuple(padding)
    pads = []
    for size in x_shape[2:]:
        out = -(-size // stride)
        total = max(0, (out - 1) * stride + (k - 1) * dilation + 1 - size)
        pads += [total // 2, total - total // 2]
    return tuple(pads)


def _torch_conv(x, w, groups, stride, dilation, pads):
    """torch's float64 convolution with explicit (top, bottom, left, right) padding."""
    t, b, l, r = pads
    xp = torch.nn.functional.pad(x, (l, r, t, b))
    return torch.nn.functional.conv2d(xp, w, None, stride, 0, dilation, groups)


def _run_pijit(x, w, g, groups, kw, jitted):
    def loss(a, b):
        return ops.sum(ops.conv2d(a, b, groups=groups, **kw) * ms.Tensor(g))

    def both(a, b):
        return ops.conv2d(a, b, groups=groups, **kw), ms.grad(loss, grad_position=(0, 1))(a, b)

    fn = ms.jit(both, mode="PIJit") if jitted else both
    y, (gx, gw) = fn(ms.Tensor(x), ms.Tensor(w))
    return y.asnumpy(), gx.asnumpy(), gw.asnumpy()


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize("jitted", [False, True])
@pytest.mark.parametrize("shape,mult,k,stride,pad_mode,padding,dilation", CASES)
def test_depthwise_matches_torch(shape, mult, k, stride, pad_mode, padding, dilation, jitted):
    rng = np.random.default_rng(sum(shape) + k * 7 + stride)
    c = shape[1]
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((c * mult, 1, k, k)).astype(np.float32)
    kw = dict(stride=stride, pad_mode=pad_mode, padding=padding, dilation=dilation)
    pads = _torch_padding(shape, k, stride, dilation, pad_mode, padding)
    tx = torch.from_numpy(x.astype(np.float64)).requires_grad_()
    tw = torch.from_numpy(w.astype(np.float64)).requires_grad_()
    ty = _torch_conv(tx, tw, c, stride, dilation, pads)
    g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    ty.backward(torch.from_numpy(g.astype(np.float64)))
    y, gx, gw = _run_pijit(x, w, g, c, kw, jitted)
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-4, atol=1e-4 * mult)
    np.testing.assert_allclose(gw, tw.grad.numpy(), rtol=1e-4, atol=1e-5 * g.size / w.shape[0])


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize("groups,per_group,stride", [(32, 4, 1), (8, 8, 2), (4, 2, 1)])
def test_grouped_matches_torch(groups, per_group, stride):
    # ResNeXt's and ShuffleNet's grouped convolutions: several channels per group.
    rng = np.random.default_rng(groups + per_group)
    c = groups * per_group
    x = rng.standard_normal((2, c, 10, 10)).astype(np.float32)
    w = rng.standard_normal((c, per_group, 3, 3)).astype(np.float32) * 0.2
    tx = torch.from_numpy(x.astype(np.float64)).requires_grad_()
    tw = torch.from_numpy(w.astype(np.float64)).requires_grad_()
    ty = _torch_conv(tx, tw, groups, stride, 1, (1, 1, 1, 1))
    g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    ty.backward(torch.from_numpy(g.astype(np.float64)))
    for jitted in (False, True):
        y, gx, gw = _run_pijit(x, w, g, groups, dict(stride=stride, pad_mode="pad", padding=1),
                               jitted)
        np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(gw, tw.grad.numpy(), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("shape,mult,k,stride,pad_mode,padding,dilation",
                         [CASES[1], CASES[3], CASES[5]])
def test_depthwise_float32_gradients_match_finite_differences(shape, mult, k, stride, pad_mode,
                                                              padding, dilation):
    rng = np.random.default_rng(k + stride)
    shape = (1, shape[1], min(shape[2], 9), min(shape[3], 8))
    c = shape[1]
    x = rng.standard_normal(shape)
    w = rng.standard_normal((c * mult, 1, k, k))
    kw = dict(stride=stride, pad_mode=pad_mode, padding=padding, dilation=dilation, groups=c)

    def f(a, b):
        y = ops.conv2d(a, b, **kw)
        return ops.sum(y * y)

    T = ms.Tensor
    numeric = (central_differences(lambda v: f(T(v), T(w)).asnumpy(), x),
               central_differences(lambda v: f(T(x), T(v)).asnumpy(), w))
    got = ms.grad(f, grad_position=(0, 1))(T(x.astype(np.float32)), T(w.astype(np.float32)))
    for g, want in zip(got, numeric):
        assert g.dtype == ms.float32
        np.testing.assert_allclose(g.asnumpy(), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_depthwise_special_values_follow_float64():
    # A padded tap adds nothing: an infinite weight at a corner must not meet the zero padding.
    x = np.random.default_rng(3).standard_normal((1, 4, 6, 6))
    w = np.random.default_rng(4).standard_normal((4, 1, 3, 3))
    w[0, 0, 0, 0], x[0, 1, 2, 3] = np.inf, np.nan
    kw = dict(pad_mode="pad", padding=1, groups=4)
    want = ops.conv2d(ms.Tensor(x), ms.Tensor(w), **kw).asnumpy()
    got = ops.conv2d(ms.Tensor(x.astype(np.float32)), ms.Tensor(w.astype(np.float32)), **kw)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-5)


def test_depthwise_bad_groups_raise():
    x = ms.Tensor(np.ones((1, 6, 5, 5), np.float32))
    with pytest.raises(ValueError, match="groups"):
        ops.conv2d(x, ms.Tensor(np.ones((6, 1, 3, 3), np.float32)), groups=4)
    with pytest.raises(ValueError, match="conv2d"):
        ops.conv2d(x, ms.Tensor(np.ones((6, 2, 3, 3), np.float32)), groups=6)


class _InvertedResidual(nn.Cell):
    def __init__(self, channels=8, expand=6, stride=1):
        super().__init__()
        hidden = channels * expand
        self.expand = nn.Conv2d(channels, hidden, 1, has_bias=False)
        self.b1 = nn.BatchNorm2d(hidden)
        self.depthwise = nn.Conv2d(hidden, hidden, 3, stride, pad_mode="pad", padding=1,
                                   group=hidden, has_bias=False)
        self.b2 = nn.BatchNorm2d(hidden)
        self.project = nn.Conv2d(hidden, channels, 1, has_bias=False)
        self.b3 = nn.BatchNorm2d(channels)
        self.relu6 = nn.ReLU6()
        self.head = nn.Dense(channels, 10)
        self.stride = stride

    def construct(self, x):
        y = self.relu6(self.b1(self.expand(x)))
        y = self.b3(self.project(self.relu6(self.b2(self.depthwise(y)))))
        if self.stride == 1:
            y = x + y
        return self.head(ops.mean(y, (2, 3)))


@pytest.mark.parametrize("stride", [1, 2])
def test_mobilenet_block_training_step_jitted_equals_eager(stride):
    rng = np.random.default_rng(stride)
    x = ms.Tensor(rng.standard_normal((4, 8, 14, 14)).astype(np.float32))
    y = ms.Tensor((np.arange(4) % 10).astype(np.int32))
    results = []
    for jitted in (False, True):
        ms.set_seed(0)
        net = _InvertedResidual(stride=stride)
        loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        opt = nn.Momentum(net.trainable_params(), 0.1, 0.9)
        grad_fn = ms.value_and_grad(lambda a, b: loss_fn(net(a), b), None, opt.parameters)

        def step(a, b):
            loss, grads = grad_fn(a, b)
            opt(grads)
            return loss

        call = ms.jit(step, mode="PIJit") if jitted else step
        losses = [call(x, y).asnumpy() for _ in range(3)]
        results.append((losses, [p.asnumpy().copy() for p in net.trainable_params()]))
    (eager_losses, eager_params), (jit_losses, jit_params) = results
    np.testing.assert_allclose(jit_losses, eager_losses, rtol=1e-5, atol=1e-6)
    assert eager_losses[2] < eager_losses[0]  # it trains
    for a, b in zip(jit_params, eager_params):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
