"""conv3d, max_pool3d, avg_pool3d, the Conv3D primitive and nn.Conv3d against direct NumPy
loops written here (pad modes, strides, dilations, groups, bias), jitted against eager as one
graph, and gradients against central differences."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops
from mint_testutil import T, grad_matches, jitted_matches, same

R = np.random.default_rng(151)


def _conv3d_reference(x, w, stride, pads, dilation, groups):
    x = np.pad(x, ((0, 0), (0, 0)) + pads)
    n, c, *size = x.shape
    o, cg, *k = w.shape
    out_size = [(s - d * (kk - 1) - 1) // st + 1 for s, kk, st, d in zip(size, k, stride, dilation)]
    out = np.zeros((n, o, *out_size))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for pos in np.ndindex(*out_size):
            window = x[:, g * cg:(g + 1) * cg,
                       pos[0] * stride[0]:pos[0] * stride[0] + dilation[0] * (k[0] - 1) + 1:dilation[0],
                       pos[1] * stride[1]:pos[1] * stride[1] + dilation[1] * (k[1] - 1) + 1:dilation[1],
                       pos[2] * stride[2]:pos[2] * stride[2] + dilation[2] * (k[2] - 1) + 1:dilation[2]]
            out[(slice(None), oc) + pos] = (window * w[oc]).sum((1, 2, 3, 4))
    return out


@pytest.mark.parametrize("stride, pad_mode, padding, dilation, groups", [
    (1, "valid", 0, 1, 1), ((2, 1, 2), "pad", (1, 0, 2, 1, 0, 1), 1, 1),
    (1, "pad", 1, (2, 1, 1), 2), (2, "same", 0, 1, 1)])
def test_conv3d(stride, pad_mode, padding, dilation, groups):
    x = R.normal(size=(2, 4, 5, 6, 5))
    w = R.normal(size=(6, 4 // groups, 3, 2, 3))
    b = R.normal(size=6)
    s3 = (stride,) * 3 if isinstance(stride, int) else stride
    d3 = (dilation,) * 3 if isinstance(dilation, int) else dilation
    if pad_mode == "valid":
        pads = ((0, 0),) * 3
    elif pad_mode == "same":
        pads = []
        for size, k, s in zip(x.shape[2:], w.shape[2:], s3):
            total = max((-(-size // s) - 1) * s + k - size, 0)
            pads.append((total // 2, total - total // 2))
        pads = tuple(pads)
    else:
        p6 = (padding,) * 6 if isinstance(padding, int) else padding
        pads = ((p6[0], p6[1]), (p6[2], p6[3]), (p6[4], p6[5]))
    want = _conv3d_reference(x, w, s3, pads, d3, groups) + b.reshape(1, -1, 1, 1, 1)
    args = dict(stride=stride, pad_mode=pad_mode, padding=padding, dilation=dilation,
                groups=groups)
    same(ops.conv3d(T(x), T(w), T(b), **args), want, rtol=1e-10, atol=1e-10)
    jitted_matches(lambda a, k: ops.conv3d(a, k, **args), T(x), T(w))
    tw = T(w)
    grad_matches(lambda a: ops.conv3d(a, tw, **args), x[:1, :, :4, :3, :3], rtol=1e-5)
    tx = T(x[:1, :, :4, :3, :3])
    grad_matches(lambda k: ops.conv3d(tx, k, **args), w[:, :, :, :1, :2], rtol=1e-5)


def test_conv3d_primitive_and_layer():
    x = R.normal(size=(1, 2, 4, 4, 4)).astype(np.float32)
    layer = nn.Conv3d(2, 3, 3, has_bias=True)  # pad_mode 'same' by default
    assert layer.weight.shape == (3, 2, 3, 3, 3) and layer.bias.shape == (3,)
    want = _conv3d_reference(x.astype(np.float64), layer.weight.asnumpy().astype(np.float64),
                             (1, 1, 1), ((1, 1),) * 3, (1, 1, 1), 1) \
        + layer.bias.asnumpy().reshape(1, -1, 1, 1, 1)
    same(layer(T(x)), want, dtype=np.float32, rtol=1e-4, atol=1e-5)
    prim = ops.Conv3D(out_channel=3, kernel_size=3, pad_mode="pad", pad=1)
    same(prim(T(x), layer.weight), (want - layer.bias.asnumpy().reshape(1, -1, 1, 1, 1)),
         dtype=np.float32, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="5-D"):
        ops.conv3d(T(x[0]), layer.weight)


def _pool_reference(x, k, s, p, reduce, fill):
    x = np.pad(x, ((0, 0), (0, 0)) + ((p, p),) * 3, constant_values=fill)
    out_size = [(n - k) // s + 1 for n in x.shape[2:]]
    out = np.zeros(x.shape[:2] + tuple(out_size))
    for pos in np.ndindex(*out_size):
        window = x[:, :, pos[0] * s:pos[0] * s + k, pos[1] * s:pos[1] * s + k,
                   pos[2] * s:pos[2] * s + k]
        out[(slice(None), slice(None)) + pos] = reduce(window.reshape(*x.shape[:2], -1), -1)
    return out


@pytest.mark.parametrize("k, s, p", [(2, 2, 0), (3, 2, 1), (2, 1, 0)])
def test_pool3d(k, s, p):
    x = R.normal(size=(2, 3, 5, 6, 5))
    same(ops.max_pool3d(T(x), k, s, p), _pool_reference(x, k, s, p, np.max, -np.inf))
    same(ops.avg_pool3d(T(x), k, s, p), _pool_reference(x, k, s, p, np.mean, 0.0), rtol=1e-12)
    same(ops.avg_pool3d(T(x), k, s, p, divisor_override=5),
         _pool_reference(x, k, s, p, np.sum, 0.0) / 5, rtol=1e-12)
    jitted_matches(lambda a: ops.max_pool3d(a, k, s, p) + ops.avg_pool3d(a, k, s, p), T(x))
    grad_matches(lambda a: ops.avg_pool3d(a, k, s, p), x[:1, :1])
    grad_matches(lambda a: ops.max_pool3d(a, k, s, p), x[:1, :1])
    with pytest.raises(ValueError, match="ceil_mode"):
        ops.max_pool3d(T(x), 2, ceil_mode=True)


def _adaptive_reference(x, out, reduce):
    bins = [[(i * n // o, -(-(i + 1) * n // o)) for i in range(o)]
            for n, o in zip(x.shape[2:], out)]
    result = np.zeros(x.shape[:2] + tuple(out))
    for i, (d0, d1) in enumerate(bins[0]):
        for j, (h0, h1) in enumerate(bins[1]):
            for k, (w0, w1) in enumerate(bins[2]):
                box = x[:, :, d0:d1, h0:h1, w0:w1].reshape(*x.shape[:2], -1)
                result[:, :, i, j, k] = reduce(box, -1)
    return result


@pytest.mark.parametrize("out", [(2, 3, 2), (3, 4, 5), (1, 1, 1)])
def test_adaptive_pool3d(out):
    x = R.normal(size=(2, 3, 5, 7, 5))
    same(ops.adaptive_avg_pool3d(T(x), out), _adaptive_reference(x, out, np.mean), rtol=1e-12)
    same(ops.adaptive_max_pool3d(T(x), out), _adaptive_reference(x, out, np.max))
    same(nn.AdaptiveAvgPool3d(out)(T(x)), _adaptive_reference(x, out, np.mean), rtol=1e-12)
    same(ops.AdaptiveAvgPool3D(out)(T(x)), _adaptive_reference(x, out, np.mean), rtol=1e-12)
    same(ops.AdaptiveMaxPool3D()(T(x), out), _adaptive_reference(x, out, np.max))
    jitted_matches(lambda a: ops.adaptive_avg_pool3d(a, out), T(x))
    grad_matches(lambda a: ops.adaptive_avg_pool3d(a, out), x[:1, :1])
    grad_matches(lambda a: ops.adaptive_max_pool3d(a, out), x[:1, :1])
    same(ops.adaptive_avg_pool3d(T(x), (None, 2, None)),
         _adaptive_reference(x, (5, 2, 5), np.mean), rtol=1e-12)
