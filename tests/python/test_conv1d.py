"""nn.Conv1d and nn.Conv1dTranspose (MindSpore's 4-D weights (out, in / group, 1, k) and
(in, out / group, 1, k)) against NumPy references written element by element, for every pad
mode, strides, dilations and groups; jitted equal to eager in one graph; input gradients
against central differences."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn


def conv1d_ref(x, w, b, stride, pad_mode, padding, dilation, groups):
    n, c, length = x.shape
    o, cg, _, k = w.shape
    ext = dilation * (k - 1) + 1
    if pad_mode == "same":
        out = -(-length // stride)
        total = max((out - 1) * stride + ext - length, 0)
        left = total // 2
        xp = np.pad(x, ((0, 0), (0, 0), (left, total - left)))
    elif pad_mode == "pad":
        xp = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    else:
        xp = x
    out = (xp.shape[2] - ext) // stride + 1
    y = np.zeros((n, o, out))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for t in range(out):
            window = xp[:, g * cg:(g + 1) * cg, t * stride:t * stride + ext:dilation]
            y[:, oc, t] = (window * w[oc, :, 0, :]).sum(axis=(1, 2))
    return y if b is None else y + b[None, :, None]


def conv1d_transpose_ref(x, w, b, stride, pad_mode, padding, dilation, groups):
    n, c, length = x.shape
    _, og, _, k = w.shape
    ext = dilation * (k - 1) + 1
    full = (length - 1) * stride + ext
    canvas = np.zeros((n, og * groups, full + stride))
    cg = c // groups
    for ch in range(c):
        g = ch // cg
        for j in range(k):
            canvas[:, g * og:(g + 1) * og, j * dilation:j * dilation + (length - 1) * stride + 1:stride] += \
                np.einsum("nl,o->nol", x[:, ch], w[ch, :, 0, j])
    if pad_mode == "same":
        size, start = length * stride, max(ext - stride, 0) // 2
    elif pad_mode == "valid":
        size, start = length * stride + max(ext - stride, 0), 0
    else:
        size, start = full - 2 * padding, padding
    y = canvas[:, :, start:start + size]
    return y if b is None else y + b[None, :, None]


CASES = [  # (stride, pad_mode, padding, dilation, groups, kernel)
    (1, "same", 0, 1, 1, 3), (2, "same", 0, 1, 2, 4), (2, "valid", 0, 2, 1, 3),
    (3, "pad", 2, 1, 1, 5), (1, "pad", 1, 2, 2, 3),
]


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_values_match_reference_eager_and_jitted(case, transposed):
    stride, pad_mode, padding, dilation, groups, k = case
    ms.set_seed(0)
    cls = nn.Conv1dTranspose if transposed else nn.Conv1d
    net = cls(4, 6, k, stride=stride, pad_mode=pad_mode, padding=padding, dilation=dilation,
              group=groups, has_bias=True, dtype=ms.float64)
    x = np.random.default_rng(1).standard_normal((2, 4, 9))
    ref = conv1d_transpose_ref if transposed else conv1d_ref
    want = ref(x, net.weight.asnumpy(), net.bias.asnumpy(), stride, pad_mode, padding, dilation,
               groups)
    got = net(ms.Tensor(x)).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    jf = ms.jit(net.construct)
    np.testing.assert_allclose(jf(ms.Tensor(x)).asnumpy(), got, rtol=1e-12, atol=1e-14)
    stats = ms.get_code_extra(jf)
    assert stats["total_break_count"] == 0 and stats["eager_count"] == 0, stats["all_reasons"]


@pytest.mark.parametrize("transposed", [False, True])
def test_input_gradient_matches_finite_differences(transposed):
    ms.set_seed(2)
    cls = nn.Conv1dTranspose if transposed else nn.Conv1d
    net = cls(2, 3, 3, stride=2, pad_mode="pad", padding=1, dtype=ms.float64)
    x = np.random.default_rng(3).standard_normal((1, 2, 5))
    w = ms.Tensor(np.random.default_rng(4).standard_normal(net(ms.Tensor(x)).shape))

    def loss(t):
        return (net(t) * w).sum()

    got = ms.grad(loss)(ms.Tensor(x)).asnumpy()
    want = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[i] += 1e-6
        down[i] -= 1e-6
        want[i] = (float(loss(ms.Tensor(up)).asnumpy()) -
                   float(loss(ms.Tensor(down)).asnumpy())) / 2e-6
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kwargs, match", [
    (dict(kernel_size=0), "kernel_size"), (dict(padding=1), "pad_mode"),
    (dict(group=4), "divisible"), (dict(stride=(1, 2)), "stride"),
])
def test_bad_arguments_raise_clear_errors(kwargs, match):
    args = dict(in_channels=2, out_channels=6, kernel_size=3)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        nn.Conv1d(**args)
    with pytest.raises(ValueError, match="(N, C, L)"):
        nn.Conv1d(2, 4, 3)(ms.Tensor(np.zeros((2, 2, 3, 3), np.float32)))
