"""ops.deformable_conv2d against a direct NumPy loop of the modulated deformable convolution, and
its gradients against finite differences."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops


def bilinear(plane, y, x):
    h, w = plane.shape
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    total = 0.0
    for cy in (y0, y0 + 1):
        for cx in (x0, x0 + 1):
            if 0 <= cy < h and 0 <= cx < w:
                total += plane[cy, cx] * (1 - abs(y - cy)) * (1 - abs(x - cx))
    return total


def reference(x, weight, offsets, stride, pad, dil, groups, dgroups, bias):
    n, c, h, w = x.shape
    o, cg, kh, kw = weight.shape
    oh, ow = offsets.shape[2:]
    k = kh * kw
    parts = offsets.reshape(n, 3, dgroups, k, oh, ow)
    out = np.zeros((n, o, oh, ow))
    for b in range(n):
        for oc in range(o):
            g = oc // (o // groups)
            for i in range(oh):
                for j in range(ow):
                    acc = 0.0
                    for ic in range(cg):
                        ch = g * cg + ic
                        dg = ch // (c // dgroups)
                        for t in range(k):
                            ty, tx = divmod(t, kw)
                            y = i * stride[0] - pad[0] + ty * dil[0] + parts[b, 1, dg, t, i, j]
                            xx = j * stride[1] - pad[2] + tx * dil[1] + parts[b, 0, dg, t, i, j]
                            acc += weight[oc, ic, ty, tx] * parts[b, 2, dg, t, i, j] * \
                                bilinear(x[b, ch], y, xx)
                    out[b, oc, i, j] = acc + (bias[oc] if bias is not None else 0)
    return out


CASES = [
    # (x shape, weight shape, stride, pad (t, b, l, r), dilation, groups, deformable groups)
    ((1, 2, 5, 6), (3, 2, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, 1),
    ((2, 4, 7, 5), (4, 2, 2, 3), (2, 1), (0, 1, 2, 0), (1, 2), 2, 2),
    ((1, 4, 6, 6), (2, 4, 3, 3), (1, 2), (2, 2, 2, 2), (2, 1), 1, 4),
]


def make(case, seed=0, scale=1.5):
    xs, ws, stride, pad, dil, groups, dgroups = case
    rng = np.random.default_rng(seed)
    kh, kw = ws[2:]
    oh = (xs[2] + pad[0] + pad[1] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xs[3] + pad[2] + pad[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    x = rng.normal(size=xs).astype(np.float32)
    w = rng.normal(size=ws).astype(np.float32)
    off = rng.uniform(-scale, scale, size=(xs[0], 3 * dgroups * kh * kw, oh, ow))
    k = dgroups * kh * kw
    off[:, 2 * k:] = rng.uniform(0, 1, size=off[:, 2 * k:].shape)  # masks
    bias = rng.normal(size=(ws[0],)).astype(np.float32)
    return x, w, off.astype(np.float32), bias


def call(case, x, w, off, bias):
    _, ws, stride, pad, dil, groups, dgroups = case
    return ops.deformable_conv2d(x, w, off, ws[2:], (1, 1) + stride, pad, bias,
                                 (1, 1) + dil, groups, dgroups)


@pytest.mark.parametrize("case", CASES)
def test_matches_direct_loops(case):
    x, w, off, bias = make(case)
    got = call(case, ms.Tensor(x), ms.Tensor(w), ms.Tensor(off), ms.Tensor(bias)).asnumpy()
    _, _, stride, pad, dil, groups, dgroups = case
    want = reference(x.astype(np.float64), w, off, stride, pad, dil, groups, dgroups, bias)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_zero_offsets_and_unit_masks_give_a_plain_convolution():
    case = CASES[1]
    x, w, off, _ = make(case)
    k = off.shape[1] // 3
    off[:, :2 * k] = 0
    off[:, 2 * k:] = 1
    got = call(case, ms.Tensor(x), ms.Tensor(w), ms.Tensor(off), None)
    want = ops.conv2d(ms.Tensor(np.pad(x, ((0, 0), (0, 0), (0, 1), (2, 0)))), ms.Tensor(w),
                      stride=(2, 1), dilation=(1, 2), groups=2)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-5)


def test_gradients_against_finite_differences():
    case = CASES[0]
    x, w, off, bias = make(case, seed=3, scale=0.4)
    probe = np.random.default_rng(9).normal(size=call(
        case, ms.Tensor(x), ms.Tensor(w), ms.Tensor(off), ms.Tensor(bias)).shape)

    def loss(xv, wv, ov):
        return (call(case, xv, wv, ov, ms.Tensor(bias)) * ms.Tensor(probe.astype(np.float32))).sum()

    grads = ms.grad(loss, grad_position=(0, 1, 2))(ms.Tensor(x), ms.Tensor(w), ms.Tensor(off))
    _, _, stride, pad, dil, groups, dgroups = case

    def value(xv, wv, ov):
        return float((reference(xv, wv, ov, stride, pad, dil, groups, dgroups, bias)
                      * probe).sum())

    rng = np.random.default_rng(1)
    args = [x.astype(np.float64), w.astype(np.float64), off.astype(np.float64)]
    for which in range(3):
        for _ in range(6):
            at = tuple(rng.integers(0, n) for n in args[which].shape)
            eps = 1e-4
            plus = [a.copy() for a in args]
            minus = [a.copy() for a in args]
            plus[which][at] += eps
            minus[which][at] -= eps
            numeric = (value(*plus) - value(*minus)) / (2 * eps)
            assert abs(grads[which].asnumpy()[at] - numeric) <= 2e-3 * (1 + abs(numeric)), \
                (which, at, grads[which].asnumpy()[at], numeric)


def test_jitted_equals_eager():
    case = CASES[1]
    x, w, off, bias = make(case, seed=5)
    args = [ms.Tensor(a) for a in (x, w, off, bias)]
    eager = call(case, *args)
    jitted = ms.jit(lambda *a: call(case, *a))(*args)
    np.testing.assert_allclose(jitted.asnumpy(), eager.asnumpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("change, error", [
    (lambda a: dict(a, offsets=ms.Tensor(np.zeros((1, 26, 5, 6), np.float32))), ValueError),
    (lambda a: dict(a, kernel_size=(2, 2)), ValueError),
    (lambda a: dict(a, strides=(1, 2, 1, 1)), ValueError),
    (lambda a: dict(a, padding=(1, 1)), TypeError),
    (lambda a: dict(a, modulated=False), ValueError),
    (lambda a: dict(a, x=a["x"].astype(ms.float64)), TypeError),
    (lambda a: dict(a, groups=3), ValueError),
])
def test_bad_arguments(change, error):
    x, w, off, _ = make(CASES[0])
    base = dict(x=ms.Tensor(x), weight=ms.Tensor(w), offsets=ms.Tensor(off), kernel_size=(3, 3),
                strides=(1, 1, 1, 1), padding=(1, 1, 1, 1))
    with pytest.raises(error):
        ops.deformable_conv2d(**change(base))
