"""conv_transpose2d and nn.Conv2dTranspose (MindSpore's transposed convolution): values against a
NumPy scatter reference for every pad mode, strides, dilations, groups and output padding,
eagerly and jitted; gradients of input, weight and bias against central differences; the
layer's parameters and shapes; and clear errors for bad arguments."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops


def reference(x, w, b, stride, pad_mode, padding, output_padding, dilation, groups):
    """Scatter each input element times the kernel onto the full output, then crop by pad_mode."""
    n, c, h, wd = x.shape
    og, kh, kw = w.shape[1:]
    s, d = stride, dilation
    ext = (d[0] * (kh - 1) + 1, d[1] * (kw - 1) + 1)
    full = ((h - 1) * s[0] + ext[0], (wd - 1) * s[1] + ext[1])
    canvas = np.zeros((n, og * groups, full[0] + s[0], full[1] + s[1]))
    cg = c // groups
    for ch in range(c):
        g = ch // cg
        for i in range(kh):
            for j in range(kw):
                canvas[:, g * og:(g + 1) * og,
                       i * d[0]:i * d[0] + (h - 1) * s[0] + 1:s[0],
                       j * d[1]:j * d[1] + (wd - 1) * s[1] + 1:s[1]] += \
                    np.einsum("nij,o->noij", x[:, ch], w[ch, :, i, j])
    if pad_mode == "same":
        out = (h * s[0], wd * s[1])
        top = (max(ext[0] - s[0], 0) // 2, max(ext[1] - s[1], 0) // 2)
    elif pad_mode == "valid":
        out = (h * s[0] + max(ext[0] - s[0], 0), wd * s[1] + max(ext[1] - s[1], 0))
        top = (0, 0)
    else:
        out = (full[0] - padding[0] - padding[1] + output_padding[0],
               full[1] - padding[2] - padding[3] + output_padding[1])
        top = (padding[0], padding[2])
    y = canvas[:, :, top[0]:top[0] + out[0], top[1]:top[1] + out[1]]
    return y if b is None else y + b.reshape(1, -1, 1, 1)


# (stride, pad_mode, padding (top, bottom, left, right), output_padding, dilation, groups, kernel)
CASES = [
    ((1, 1), "same", (0, 0, 0, 0), (0, 0), (1, 1), 1, (3, 3)),
    ((2, 2), "same", (0, 0, 0, 0), (0, 0), (1, 1), 2, (4, 4)),
    ((2, 2), "same", (0, 0, 0, 0), (0, 0), (1, 1), 1, (1, 1)),
    ((3, 2), "valid", (0, 0, 0, 0), (0, 0), (1, 1), 1, (2, 3)),
    ((3, 3), "valid", (0, 0, 0, 0), (0, 0), (1, 1), 1, (2, 2)),  # kernel below the stride
    ((3, 3), "pad", (0, 0, 0, 0), (0, 0), (1, 1), 1, (2, 2)),    # differs from 'valid'
    ((2, 2), "pad", (1, 1, 1, 1), (1, 1), (1, 1), 1, (3, 3)),
    ((2, 1), "pad", (0, 1, 2, 0), (1, 0), (2, 1), 1, (3, 2)),
    ((1, 2), "pad", (1, 0, 0, 1), (0, 1), (1, 2), 2, (2, 3)),
]


def _args(case, seed=0, shape=(2, 4, 5, 6)):
    stride, pad_mode, padding, output_padding, dilation, groups, kernel = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    w = rng.standard_normal((shape[1], 3) + kernel)
    b = rng.standard_normal(3 * groups)
    kwargs = dict(stride=stride, padding=padding, output_padding=output_padding,
                  dilation=dilation, groups=groups, pad_mode=pad_mode)
    return x, w, b, kwargs


@pytest.mark.parametrize("case", CASES)
def test_values_match_reference_eager_and_jitted(case):
    x, w, b, kw = _args(case)
    want = reference(x, w, b, kw["stride"], kw["pad_mode"], kw["padding"],
                     kw["output_padding"], kw["dilation"], kw["groups"])

    stride, padding, output_padding = kw["stride"], kw["padding"], kw["output_padding"]
    dilation, groups, pad_mode = kw["dilation"], kw["groups"], kw["pad_mode"]

    def f(x, w, b):
        return ops.conv_transpose2d(x, w, b, stride=stride, padding=padding,
                                    output_padding=output_padding, dilation=dilation,
                                    groups=groups, pad_mode=pad_mode)

    args = [ms.Tensor(a) for a in (x, w, b)]
    got = f(*args).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    jf = ms.jit(f)
    ms.reset(jf)  # one code object for every case: start each from an empty cache
    for _ in range(2):
        np.testing.assert_array_equal(jf(*args).asnumpy(), got)
    stats = ms.get_code_extra(jf)
    assert stats["total_break_count"] == 0 and stats["eager_count"] == 0, stats["all_reasons"]


def test_float32_without_bias_matches_reference():
    x, w, _, kw = _args(CASES[6], seed=3, shape=(3, 8, 7, 7))
    got = ops.conv_transpose2d(ms.Tensor(x.astype(np.float32)), ms.Tensor(w.astype(np.float32)),
                               **kw)
    assert got.dtype == ms.float32
    want = reference(x, w, None, kw["stride"], "pad", kw["padding"], kw["output_padding"],
                     kw["dilation"], 1)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4, atol=1e-4)


def _numeric_grad(loss, arrays, which):
    a = arrays[which]
    out = np.zeros_like(a)
    eps = 1e-6
    for i in np.ndindex(*a.shape):
        up = [v.copy() for v in arrays]
        down = [v.copy() for v in arrays]
        up[which][i] += eps
        down[which][i] -= eps
        out[i] = (float(loss(*map(ms.Tensor, up)).asnumpy())
                  - float(loss(*map(ms.Tensor, down)).asnumpy())) / (2 * eps)
    return out


@pytest.mark.parametrize("case", [CASES[1], CASES[4], CASES[7], CASES[8]])
def test_gradients_match_finite_differences(case):
    x, w, b, kw = _args(case, seed=5, shape=(1, 2, 3, 3))
    w = w[:, :2]
    b = b[:2 * kw["groups"]]
    probe = ops.conv_transpose2d(ms.Tensor(x), ms.Tensor(w), ms.Tensor(b), **kw)
    weights = ms.Tensor(np.random.default_rng(9).standard_normal(probe.shape))

    stride, padding, output_padding = kw["stride"], kw["padding"], kw["output_padding"]
    dilation, groups, pad_mode = kw["dilation"], kw["groups"], kw["pad_mode"]

    def loss(x, w, b):
        y = ops.conv_transpose2d(x, w, b, stride=stride, padding=padding,
                                 output_padding=output_padding, dilation=dilation,
                                 groups=groups, pad_mode=pad_mode)
        return (y * weights).sum()

    arrays = [x, w, b]
    got = ms.grad(loss, grad_position=(0, 1, 2))(*map(ms.Tensor, arrays))
    jitted = ms.jit(ms.grad(loss, grad_position=(0, 1, 2)))(*map(ms.Tensor, arrays))
    for k in range(3):
        np.testing.assert_allclose(got[k].asnumpy(), _numeric_grad(loss, arrays, k),
                                   rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(jitted[k].asnumpy(), got[k].asnumpy(), rtol=1e-12, atol=1e-12)


def test_layer_parameters_shapes_and_inverse_of_conv2d():
    ms.set_seed(1)
    up = nn.Conv2dTranspose(8, 4, 3, stride=2, pad_mode="pad", padding=1, output_padding=1,
                            has_bias=True)
    assert up.weight.shape == (8, 4, 3, 3) and up.bias.shape == (4,)
    assert [p.name for p in up.get_parameters()] == ["weight", "bias"]
    bound = np.sqrt(6 / (1 + 5) / (4 * 9))  # HeUniform(sqrt(5)) over fan_in = 4 * 3 * 3
    assert np.abs(up.weight.asnumpy()).max() <= bound + 1e-7
    down = nn.Conv2d(4, 8, 3, stride=2, pad_mode="pad", padding=1)
    x = ms.Tensor(np.random.default_rng(0).standard_normal((2, 8, 5, 5)).astype(np.float32))
    y = up(x)
    assert y.shape == (2, 4, 10, 10)
    assert down(y).shape == x.shape  # shapes invert, as MindSpore documents for pad mode
    want = reference(x.asnumpy().astype(np.float64), up.weight.asnumpy().astype(np.float64),
                     up.bias.asnumpy().astype(np.float64), (2, 2), "pad", (1, 1, 1, 1), (1, 1),
                     (1, 1), 1)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-4, atol=1e-5)
    assert nn.Conv2dTranspose(8, 4, 4, stride=2)(x).shape == (2, 4, 10, 10)  # 'same'
    assert nn.Conv2dTranspose(8, 4, 4, stride=2, pad_mode="valid")(x).shape == (2, 4, 12, 12)


def test_layer_trains_jitted_equal_to_eager():
    ms.set_seed(2)
    net = nn.SequentialCell([nn.Conv2dTranspose(3, 2, 3, stride=2, has_bias=True), nn.ReLU()])
    x = ms.Tensor(np.random.default_rng(1).standard_normal((2, 3, 4, 4)).astype(np.float32))

    def loss_fn(x):
        return (net(x) ** 2).mean()

    step = ms.value_and_grad(loss_fn, None, net.trainable_params())
    eager_loss, eager_grads = step(x)
    jit_loss, jit_grads = ms.jit(step)(x)
    np.testing.assert_allclose(jit_loss.asnumpy(), eager_loss.asnumpy(), rtol=1e-6)
    for g, e in zip(jit_grads, eager_grads):
        np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("call, match", [
    (lambda x, w: ops.conv_transpose2d(x, w[:3]), "channels"),
    (lambda x, w: ops.conv_transpose2d(x, w, stride=2, output_padding=2, pad_mode="pad"),
     "smaller than the stride"),
    (lambda x, w: ops.conv_transpose2d(x, w, stride=2, output_padding=1, pad_mode="same"),
     "needs pad_mode 'pad'"),
    (lambda x, w: ops.conv_transpose2d(x, w, pad_mode="full"), "pad_mode"),
    (lambda x, w: ops.conv_transpose2d(x, w, groups=0), "groups"),
    (lambda x, w: ops.conv_transpose2d(x, w, ms.Tensor(np.zeros(5))), "bias"),
    (lambda x, w: ops.conv_transpose2d(x.reshape(4, 25), w), "4-D"),
])
def test_bad_arguments_raise_clear_errors(call, match):
    x = ms.Tensor(np.zeros((1, 4, 5, 5)))
    w = ms.Tensor(np.zeros((4, 3, 3, 3)))
    with pytest.raises((ValueError, TypeError), match=match):
        call(x, w)


@pytest.mark.parametrize("kwargs, match", [
    (dict(output_padding=1), "output_padding"),
    (dict(stride=2, output_padding=1, pad_mode="same"), "pad_mode='pad'"),
    (dict(group=3), "divisible"),
    (dict(pad_mode="pad", padding=-1), "non-negative"),
])
def test_layer_rejects_bad_configuration(kwargs, match):
    with pytest.raises(ValueError, match=match):
        nn.Conv2dTranspose(4, 2, 3, **kwargs)
