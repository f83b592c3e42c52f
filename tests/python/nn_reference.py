"""NumPy reference implementations of the layer ops (NCHW), for the nn tests."""
import math

import numpy as np


def same_padding(size, kernel, stride, dilation=1):
    """MindSpore's pad_mode 'same': (output size, pad before, pad after)."""
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + dilation * (kernel - 1) + 1 - size)
    return out, total // 2, total - total // 2


def _pads(pad):
    if isinstance(pad, int):
        return (pad,) * 4
    if len(pad) == 2:
        return (pad[0], pad[0], pad[1], pad[1])
    return tuple(pad)


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def conv2d(x, w, b=None, stride=1, pad_mode="valid", padding=0, dilation=1, groups=1):
    stride, dilation = _pair(stride), _pair(dilation)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    if pad_mode == "same":
        _, pt, pb = same_padding(h, kh, stride[0], dilation[0])
        _, pl, pr = same_padding(wd, kw, stride[1], dilation[1])
    else:
        pt, pb, pl, pr = _pads(padding)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (h + pt + pb - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + pl + pr - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for i in range(kh):
        for j in range(kw):
            y0, x0 = i * dilation[0], j * dilation[1]
            patch = xp[:, :, y0:y0 + stride[0] * (oh - 1) + 1:stride[0],
                       x0:x0 + stride[1] * (ow - 1) + 1:stride[1]]
            for g in range(groups):
                out[:, g * og:(g + 1) * og] += np.einsum(
                    "nchw,oc->nohw", patch[:, g * cg:(g + 1) * cg],
                    w[g * og:(g + 1) * og, :, i, j].astype(np.float64))
    if b is not None:
        out += b.astype(np.float64)[None, :, None, None]
    return out.astype(x.dtype)


def pool2d(x, kind, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
           pad_mode="pad", dilation=1):
    """kind 'max' or 'avg'; PyTorch's semantics for padding and ceil_mode, MindSpore's for
    pad_mode 'same' (average over the pixels inside the input)."""
    k = _pair(kernel_size)
    s = k if stride is None else _pair(stride)
    d = _pair(dilation)
    n, c, h, w = x.shape
    size = (h, w)
    outs, pads = [], []
    for a in range(2):
        eff = d[a] * (k[a] - 1) + 1
        if pad_mode == "same":
            out, lo, hi = same_padding(size[a], k[a], s[a], d[a])
        else:
            lo, hi = _pads(padding)[2 * a:2 * a + 2]
            span = size[a] + lo + hi - eff
            out = (-(-span // s[a]) if ceil_mode else span // s[a]) + 1
            if ceil_mode and (out - 1) * s[a] >= size[a] + lo:
                out -= 1
        outs.append(out)
        pads.append((lo, hi))
    include = count_include_pad and pad_mode != "same"
    res = np.zeros((n, c, outs[0], outs[1]), np.float64)
    xd = x.astype(np.float64)
    for oy in range(outs[0]):
        for ox in range(outs[1]):
            y0, x0 = oy * s[0] - pads[0][0], ox * s[1] - pads[1][0]
            ys = [y0 + i * d[0] for i in range(k[0]) if 0 <= y0 + i * d[0] < h]
            xs = [x0 + j * d[1] for j in range(k[1]) if 0 <= x0 + j * d[1] < w]
            win = xd[:, :, ys][:, :, :, xs]
            if kind == "max":
                res[:, :, oy, ox] = win.max(axis=(2, 3))
            else:
                if include:
                    cnt = (min(y0 + k[0], h + pads[0][1]) - y0) * (min(x0 + k[1], w + pads[1][1]) - x0)
                else:
                    cnt = len(ys) * len(xs)
                res[:, :, oy, ox] = win.sum(axis=(2, 3)) / cnt
    return res.astype(x.dtype)


def batch_norm(x, mean, var, gamma, beta, eps=1e-5):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    xd = x.astype(np.float64)
    y = (xd - mean.reshape(shape)) / np.sqrt(var.reshape(shape).astype(np.float64) + eps)
    return (y * gamma.reshape(shape) + beta.reshape(shape)).astype(x.dtype)


def layer_norm(x, normalized_shape, gamma=None, beta=None, eps=1e-5):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    xd = x.astype(np.float64)
    mu = xd.mean(axis=axes, keepdims=True)
    var = xd.var(axis=axes, keepdims=True)
    y = (xd - mu) / np.sqrt(var + eps)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y.astype(x.dtype)


def log_softmax(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def gelu(x):
    erf = np.vectorize(math.erf)
    return (0.5 * x * (1 + erf(x / math.sqrt(2)))).astype(x.dtype)
