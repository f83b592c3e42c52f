"""Batch norm fused with its neighbours in compiled graphs, against eager execution, NumPy,
torch and central differences.

Inference: batch_norm with moving statistics becomes the per-channel affine map (x - mean) *
gamma / sqrt(var + eps) + beta (graph/passes/batch_norm_affine.h), which a preceding
convolution applies as its epilogue, with a following residual add and relu: one
fused_conv2d node. The scale is rounded once and the operations run in another order than
the batch_norm kernel's, so results agree within float32 rounding: 1e-5 relative to the
output's largest magnitude (checked at 1e-4 below).

Training: batch_norm_train's gradient is two kernels (batch_norm_grad_sums, then
batch_norm_grad_input) instead of reductions and elementwise passes; the moving statistics
follow MindSpore's BatchNorm2d (moving = momentum * moving + (1 - momentum) * batch, the
variance's update with the unbiased batch variance)."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops

from fusion_testutil import first_graph, fresh_jit
from gradcheck_util import tensor_central_differences


class Block(nn.Cell):
    """ResNet's basic block: conv-bn-relu, conv-bn, the shortcut (a 1x1 conv-bn when the
    shape changes), add, relu."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, pad_mode="pad", padding=1, has_bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, pad_mode="pad", padding=1, has_bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.SequentialCell([nn.Conv2d(cin, cout, 1, stride, has_bias=False),
                                           nn.BatchNorm2d(cout)])
        self.relu = nn.ReLU()

    def construct(self, x):
        y = self.b2(self.c2(self.relu(self.b1(self.c1(x)))))
        return self.relu(y + (self.down(x) if self.down is not None else x))


def _batch_norms(cell):
    return [c for _, c in cell.cells_and_names() if isinstance(c, nn.BatchNorm2d)]


def _randomise_statistics(cell, rng):
    """Moving statistics and affine parameters away from their initial 0 and 1."""
    for bn in _batch_norms(cell):
        c = bn.num_features
        bn.moving_mean.set_data(ms.Tensor(rng.standard_normal(c).astype(np.float32) * 0.5))
        bn.moving_variance.set_data(ms.Tensor(rng.uniform(0.5, 2.0, c).astype(np.float32)))
        bn.gamma.set_data(ms.Tensor(rng.uniform(0.5, 1.5, c).astype(np.float32)))
        bn.beta.set_data(ms.Tensor(rng.standard_normal(c).astype(np.float32) * 0.3))


def _close(got, want, rel=1e-4):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=rel, atol=rel * max(1.0, np.abs(want).max()))


# (cin, cout, stride, spatial size): identity shortcut, downsampling shortcut, and channel
# counts on both sides of the blocked-layout threshold of the convolutions.
BLOCKS = [(8, 8, 1, 10), (8, 16, 2, 9), (32, 32, 1, 8), (32, 64, 2, 8)]


@pytest.mark.parametrize("cin,cout,stride,size", BLOCKS)
def test_eval_block_is_fused_and_matches_eager(cin, cout, stride, size):
    rng = np.random.default_rng(cin + cout + stride)
    net = Block(cin, cout, stride)
    _randomise_statistics(net, rng)
    net.set_train(False)
    x = ms.Tensor(rng.standard_normal((2, cin, size, size)).astype(np.float32))
    jf = fresh_jit(lambda t: net(t))
    got = jf(x).asnumpy()
    _close(got, net(x).asnumpy())
    text = first_graph(jf)
    # Every batch norm went into a convolution's epilogue or an elementwise loop: no pass of
    # its own.
    assert " batch_norm(" not in text, text
    assert text.count("fused_conv2d(") == (3 if net.down is not None else 2), text
    if cout >= 16:  # channel post-ops join oneDNN's kernels over blocked layouts only
        assert "post=[bias,mul,add,add,relu]" in text, text
    else:  # -mean as the bias; the rest in one elementwise loop after the convolution
        assert "post=[bias]" in text, text


def test_eval_batch_norm_without_convolution_matches_numpy_in_float64_and_float32():
    rng = np.random.default_rng(3)
    for dtype, rel in ((np.float64, 1e-12), (np.float32, 1e-5)):
        x = rng.standard_normal((3, 4, 5, 6)).astype(dtype)
        mean, var = rng.standard_normal(4).astype(dtype), rng.uniform(0.1, 3, 4).astype(dtype)
        gamma, beta = rng.standard_normal(4).astype(dtype), rng.standard_normal(4).astype(dtype)

        def f(a, m, v, g, b):
            return ops.relu(ops.batch_norm(a, m, v, g, b, eps=1e-3)) * 2.0

        args = [ms.Tensor(a) for a in (x, mean, var, gamma, beta)]
        got = fresh_jit(f)(*args).asnumpy()
        shape = (1, 4, 1, 1)
        ref = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-3)
        ref = np.maximum(ref * gamma.reshape(shape) + beta.reshape(shape), 0) * 2.0
        _close(got, ref.astype(dtype), rel)
        _close(got, f(*args).asnumpy(), rel)


def test_eval_batch_norm_keeps_nan_and_infinity_as_eager_does():
    x = np.ones((1, 2, 3, 3), np.float32)
    x[0, 0, 0, 0], x[0, 1, 1, 1] = np.nan, np.inf
    p = [ms.Tensor(np.array(v, np.float32)) for v in ([0.5, -1], [1, 2], [2, 1], [0, 1])]

    def f(a, m, v, g, b):
        return ops.relu(ops.batch_norm(a, m, v, g, b))

    got = fresh_jit(f)(ms.Tensor(x), *p).asnumpy()
    want = f(ms.Tensor(x), *p).asnumpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=1e-6)


def _train_grads(net, x, jitted):
    params = net.trainable_params()

    def loss(t):
        return (net(t) ** 2).sum()

    fn = ms.value_and_grad(loss, 0, params)
    if jitted:
        fn = ms.jit(fn, mode="PIJit")
    value, (dx, dparams) = fn(x)
    return value.asnumpy(), dx.asnumpy(), [d.asnumpy() for d in dparams]


@pytest.mark.parametrize("cin,cout,stride,size", BLOCKS[:3])
def test_train_block_gradients_match_eager(cin, cout, stride, size):
    rng = np.random.default_rng(7)
    x = ms.Tensor(rng.standard_normal((4, cin, size, size)).astype(np.float32))
    nets = []
    for _ in range(2):
        net = Block(cin, cout, stride)
        nets.append(net)
    # The same weights in both copies.
    for a, b in zip(nets[0].get_parameters(), nets[1].get_parameters()):
        b.set_data(ms.Tensor(a.asnumpy()))
    _randomise_statistics(nets[0], np.random.default_rng(1))
    _randomise_statistics(nets[1], np.random.default_rng(1))
    for net in nets:
        net.set_train(True)
    v_eager, dx_eager, dp_eager = _train_grads(nets[0], x, jitted=False)
    v_jit, dx_jit, dp_jit = _train_grads(nets[1], x, jitted=True)
    _close(v_jit, v_eager)
    _close(dx_jit, dx_eager, 2e-4)
    for got, want in zip(dp_jit, dp_eager):
        _close(got, want, 2e-4)
    # The moving statistics advanced the same way (the forward ran twice in each loss).
    for a, b in zip(_batch_norms(nets[0]), _batch_norms(nets[1])):
        _close(b.moving_mean.asnumpy(), a.moving_mean.asnumpy(), 1e-5)
        _close(b.moving_variance.asnumpy(), a.moving_variance.asnumpy(), 1e-5)


def _bn_train_loss(gamma, beta, w, eps=1e-5):
    def loss(t):
        c = t.shape[1]
        mean, var = ms.Tensor(np.zeros(c)), ms.Tensor(np.ones(c))
        y = ops.batch_norm(t, mean, var, gamma, beta, training=True, momentum=0.1, eps=eps)
        return (y * w).sum()
    return loss


@pytest.mark.parametrize("shape", [(3, 2, 3, 2), (4, 3), (2, 3, 5)])
def test_train_input_gradient_matches_central_differences(shape):
    rng = np.random.default_rng(11)
    x = rng.standard_normal(shape)
    c = shape[1]
    gamma, beta = ms.Tensor(rng.uniform(0.5, 1.5, c)), ms.Tensor(rng.standard_normal(c))
    w = ms.Tensor(rng.standard_normal(shape))
    loss = _bn_train_loss(gamma, beta, w)
    want = tensor_central_differences(loss, x)
    eager = ms.grad(loss)(ms.Tensor(x)).asnumpy()
    jitted = ms.jit(ms.grad(loss), mode="PIJit")(ms.Tensor(x)).asnumpy()
    np.testing.assert_allclose(eager, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(jitted, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_train_gradients_match_torch(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((4, 6, 5, 7)) * 2 + 1).astype(dtype)
    gamma, beta = rng.uniform(0.5, 1.5, 6).astype(dtype), rng.standard_normal(6).astype(dtype)
    w = rng.standard_normal(x.shape).astype(dtype)

    def loss(t, g, b):
        y = ops.batch_norm(t, ms.Tensor(np.zeros(6, dtype)), ms.Tensor(np.ones(6, dtype)), g, b,
                           training=True, momentum=0.1, eps=1e-5)
        return (ops.relu(y) * ms.Tensor(w)).sum()

    grads = ms.jit(ms.grad(loss, (0, 1, 2)), mode="PIJit")(ms.Tensor(x), ms.Tensor(gamma), ms.Tensor(beta))
    tx, tg, tb = (torch.tensor(a, requires_grad=True) for a in (x, gamma, beta))
    ty = torch.nn.functional.batch_norm(tx, torch.zeros(6, dtype=tx.dtype), torch.ones(6, dtype=tx.dtype),
                                        tg, tb, training=True, momentum=0.1, eps=1e-5)
    (torch.relu(ty) * torch.from_numpy(w)).sum().backward()
    rel = 1e-4 if dtype == np.float32 else 1e-10
    for got, want in zip(grads, (tx.grad, tg.grad, tb.grad)):
        _close(got.asnumpy(), want.numpy(), rel)


def test_train_gradient_of_a_constant_channel_is_finite():
    x = np.ones((2, 2, 3, 3), np.float32)
    x[:, 1] = np.arange(18, dtype=np.float32).reshape(2, 3, 3)
    w = ms.Tensor(np.random.default_rng(0).standard_normal(x.shape).astype(np.float32))
    g, b = ms.Tensor(np.ones(2, np.float32)), ms.Tensor(np.zeros(2, np.float32))

    def loss(t):
        y = ops.batch_norm(t, ms.Tensor(np.zeros(2, np.float32)), ms.Tensor(np.ones(2, np.float32)),
                           g, b, training=True)
        return (y * w).sum()

    jitted = ms.jit(ms.grad(loss), mode="PIJit")(ms.Tensor(x)).asnumpy()
    eager = ms.grad(loss)(ms.Tensor(x)).asnumpy()
    assert np.isfinite(jitted).all()
    _close(jitted, eager, 1e-4)


def test_moving_statistics_follow_mindspore_momentum():
    rng = np.random.default_rng(2)
    bn_eager, bn_jit = nn.BatchNorm2d(3, momentum=0.8), nn.BatchNorm2d(3, momentum=0.8)
    for bn in (bn_eager, bn_jit):
        bn.set_train(True)
    step = ms.jit(lambda t: bn_jit(t), mode="PIJit")
    mean, var = np.zeros(3), np.ones(3)
    for i in range(3):
        x = (rng.standard_normal((4, 3, 5, 5)) * (i + 1) + i).astype(np.float32)
        y_eager = bn_eager(ms.Tensor(x)).asnumpy()
        y_jit = step(ms.Tensor(x)).asnumpy()
        _close(y_jit, y_eager, 1e-5)
        xd = x.astype(np.float64)
        mean = 0.8 * mean + 0.2 * xd.mean(axis=(0, 2, 3))
        var = 0.8 * var + 0.2 * xd.var(axis=(0, 2, 3), ddof=1)
        for bn in (bn_eager, bn_jit):
            np.testing.assert_allclose(bn.moving_mean.asnumpy(), mean, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(bn.moving_variance.asnumpy(), var, rtol=1e-5, atol=1e-5)


def test_train_graph_uses_the_fused_gradient_kernels():
    bn = nn.BatchNorm2d(4)
    bn.set_train(True)
    params = bn.trainable_params()
    fn = ms.value_and_grad(lambda t: (bn(t) ** 2).sum(), 0, params)
    jf = ms.jit(fn, mode="PIJit")
    jf(ms.Tensor(np.random.default_rng(0).standard_normal((2, 4, 3, 3)).astype(np.float32)))
    text = first_graph(jf)
    assert text.count("batch_norm_grad_sums(") == 1, text
    assert text.count("batch_norm_grad_input(") == 1, text
