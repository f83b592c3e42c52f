"""Gradients of conv2d and of max/avg pooling swept over window geometry (stride, padding:
none, symmetric, asymmetric and 'same'; dilation; groups and depthwise; kernels larger than
the input), float32 and float64, eagerly (the tape) and inside a jitted function (one graph),
against references that share no code with pijit: NumPy loops over the kernel taps for
conv2d, and for pooling the vector-Jacobian product probed through NumPy forward references
(pooling is piecewise linear: on distinct integer inputs a raise of 1/4 moves no maximum).

A depthwise convolution with stride 2 whose last kernel column lies in the right padding
gave a wrong weight gradient (and read past the input) until the row loop's column bound
stopped truncating toward zero; MnasNet's depthwise layers hit it."""
import itertools

import numpy as np
import pytest

import pijit as ms
from pijit import ops


def same_pads(size, k, s, d):
    out = -(-size // s)
    total = max(0, (out - 1) * s + d * (k - 1) + 1 - size)
    return total // 2, total - total // 2


def resolve(x_shape, k, stride, pad, dil):
    if pad == "same":
        t, b = same_pads(x_shape[2], k[0], stride[0], dil[0])
        l, r = same_pads(x_shape[3], k[1], stride[1], dil[1])
        return (t, b, l, r)
    return pad


def conv_reference(x, w, stride, pad, dil, groups):
    """conv2d(x, w) and a function giving (dx, dw) for an output gradient, in float64."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    og = o // groups
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0], pad[1]), (pad[2], pad[3])))
    oh = (xp.shape[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1

    def window(i, j):
        r0, c0 = i * dil[0], j * dil[1]
        return (slice(r0, r0 + stride[0] * (oh - 1) + 1, stride[0]),
                slice(c0, c0 + stride[1] * (ow - 1) + 1, stride[1]))

    y = np.zeros((n, o, oh, ow))
    for g, i, j in itertools.product(range(groups), range(kh), range(kw)):
        rs, cs = window(i, j)
        patch = xp[:, g * cg:(g + 1) * cg, rs, cs]
        y[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j])

    def grads(dy):
        dxp, dw = np.zeros_like(xp), np.zeros(w.shape)
        for g, i, j in itertools.product(range(groups), range(kh), range(kw)):
            rs, cs = window(i, j)
            dys = dy[:, g * og:(g + 1) * og].astype(np.float64)
            dw[g * og:(g + 1) * og, :, i, j] += np.einsum("nohw,nchw->oc", dys,
                                                          xp[:, g * cg:(g + 1) * cg, rs, cs])
            dxp[:, g * cg:(g + 1) * cg, rs, cs] += np.einsum("nohw,oc->nchw", dys,
                                                             w[g * og:(g + 1) * og, :, i, j])
        return dxp[:, :, pad[0]:pad[0] + h, pad[2]:pad[2] + wd], dw

    return y, grads


CHANNELS = [(1, 2, 1), (3, 4, 1), (4, 4, 4), (4, 6, 2)]  # (in, out, groups); (4, 4, 4) depthwise
PADS = [(0, 0, 0, 0), (1, 1, 1, 1), (0, 2, 1, 0), "same"]
KERNELS = [(1, 1), (3, 3), (2, 5)]


def conv_cases(stride):
    for (c, o, groups), pad, dil, k in itertools.product(CHANNELS, PADS, (1, 2), KERNELS):
        x_shape = (2, c, 5, 6)
        p = resolve(x_shape, k, (stride, stride), pad, (dil, dil))
        if x_shape[2] + p[0] + p[1] < dil * (k[0] - 1) + 1 or x_shape[3] + p[2] + p[3] < dil * (k[1] - 1) + 1:
            continue
        yield x_shape, (o, c // groups) + k, pad, p, dil, groups
    # Kernels larger than the input, held by the padding; a late MnasNet stage (a 5x5
    # depthwise kernel, padding 2, over a 2x2 or 3x3 map); a tap in the right padding only.
    yield (1, 2, 3, 2), (2, 2, 5, 4), (2, 1, 3, 2), (2, 1, 3, 2), 1, 1
    for size in (2, 3):
        yield (2, 4, size, size), (4, 1, 5, 5), (2, 2, 2, 2), (2, 2, 2, 2), 1, 4
    yield (2, 1, 5, 6), (2, 1, 7, 7), (2, 0, 0, 3), (2, 0, 0, 3), 1, 1


def conv_loss(x, w, dy, stride, pad, dil, groups):
    if pad == "same":
        y = ops.conv2d(x, w, stride=stride, pad_mode="same", dilation=dil, groups=groups)
    else:
        y = ops.conv2d(x, w, stride=stride, pad_mode="pad", padding=pad, dilation=dil, groups=groups)
    return (y * dy).sum()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("stride", [1, 2, 3])
def test_conv2d_gradients_match_numpy_eagerly_and_jitted(dtype, stride):
    rng = np.random.default_rng(stride)
    tol = 2e-4 if dtype == np.float32 else 1e-10
    grad_fn = ms.grad(conv_loss, grad_position=(0, 1))
    jitted = ms.jit(grad_fn, mode="PIJit")
    checked = 0
    for x_shape, w_shape, pad, p, dil, groups in conv_cases(stride):
        x = rng.uniform(-1, 1, x_shape).astype(dtype)
        w = rng.uniform(-1, 1, w_shape).astype(dtype)
        y, grads = conv_reference(x, w, (stride, stride), p, (dil, dil), groups)
        dy = rng.uniform(-1, 1, y.shape).astype(dtype)
        want_dx, want_dw = grads(dy)
        what = f"x{x_shape} w{w_shape} stride {stride} pad {pad} dilation {dil} groups {groups}"
        args = (ms.Tensor(x), ms.Tensor(w), ms.Tensor(dy), stride, pad, dil, groups)
        ms.reset(jitted)
        for name, fn in (("eager", grad_fn), ("jit", jitted)):
            dx, dw = fn(*args)
            np.testing.assert_allclose(dx.asnumpy(), want_dx, atol=tol, err_msg=f"{name} dx {what}")
            np.testing.assert_allclose(dw.asnumpy(), want_dw, atol=tol, err_msg=f"{name} dw {what}")
        checked += 1
    assert checked > 80


def test_mnasnet_depthwise_stride_two_weight_gradient():
    # MnasNet's 5x5 depthwise layer of stride 2 and padding 2 on a 2x2 map (a late stage of
    # a 32x32 input): the last kernel column reads only the right padding.
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 8, 2, 2)).astype(np.float32)
    w = rng.standard_normal((8, 1, 5, 5)).astype(np.float32)
    y, grads = conv_reference(x, w, (2, 2), (2, 2, 2, 2), (1, 1), 8)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    _, want_dw = grads(dy)
    g = ms.grad(conv_loss, grad_position=1)
    args = (ms.Tensor(x), ms.Tensor(w), ms.Tensor(dy), 2, (2, 2, 2, 2), 1, 8)
    np.testing.assert_allclose(g(*args).asnumpy(), want_dw, atol=1e-4)
    np.testing.assert_allclose(ms.jit(g, mode="PIJit")(*args).asnumpy(), want_dw, atol=1e-4)


def pool_reference(kind, x, k, s, pad, include_pad):
    """max/avg pooling of x in float64 (padding: -inf for max; the divisor counts padding only
    with include_pad, as count_include_pad)."""
    n, c, h, w = x.shape
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0], pad[1]), (pad[2], pad[3])),
                constant_values=fill)
    inside = np.pad(np.ones((h, w)), ((pad[0], pad[1]), (pad[2], pad[3])))
    oh = (xp.shape[2] - k[0]) // s[0] + 1
    ow = (xp.shape[3] - k[1]) // s[1] + 1
    y = np.zeros((n, c, oh, ow))
    for i, j in itertools.product(range(oh), range(ow)):
        win = xp[:, :, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]]
        if kind == "max":
            y[:, :, i, j] = win.max(axis=(2, 3))
        else:
            count = k[0] * k[1] if include_pad else inside[i * s[0]:i * s[0] + k[0],
                                                           j * s[1]:j * s[1] + k[1]].sum()
            y[:, :, i, j] = win.sum(axis=(2, 3)) / count
    return y


def pool_loss(kind, x, dy, k, s, pad, include_pad):
    if kind == "max":
        y = ops.max_pool2d(x, k, s, padding=pad)
    else:
        y = ops.avg_pool2d(x, k, s, padding=pad, count_include_pad=include_pad)
    return (y * dy).sum()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling_gradients_match_probed_numpy_references(kind, dtype):
    rng = np.random.default_rng(1)
    grad_fn = ms.grad(pool_loss, grad_position=1)
    jitted = ms.jit(grad_fn, mode="PIJit")
    checked = 0
    for k, s, pad, include_pad in itertools.product([(2, 2), (3, 2), (3, 3)], [(1, 1), (2, 2), (3, 2)],
                                                    [(0, 0, 0, 0), (1, 1, 1, 1), (0, 1, 1, 0)],
                                                    [True, False]):
        if kind == "max" and not include_pad:
            continue
        # Distinct integers: unique maxima that a raise of 1/4 does not move.
        x = rng.permutation(2 * 2 * 5 * 7).reshape(2, 2, 5, 7).astype(dtype) - 30
        y = pool_reference(kind, x, k, s, pad, include_pad)
        dy = rng.uniform(-1, 1, y.shape)
        want = np.zeros(x.shape)
        base = (y * dy).sum()
        for idx in np.ndindex(*x.shape):
            probe = x.astype(np.float64)
            probe[idx] += 0.25
            want[idx] = ((pool_reference(kind, probe, k, s, pad, include_pad) * dy).sum() - base) / 0.25
        args = (kind, ms.Tensor(x), ms.Tensor(dy.astype(dtype)), k, s, pad, include_pad)
        what = f"{kind} kernel {k} stride {s} pad {pad} include_pad {include_pad}"
        ms.reset(jitted)
        for name, fn in (("eager", grad_fn), ("jit", jitted)):
            np.testing.assert_allclose(fn(*args).asnumpy(), want, atol=1e-4, err_msg=f"{name} {what}")
        checked += 1
    assert checked >= 27
