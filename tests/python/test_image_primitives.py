"""Pooling, normalisation, convolution and patch primitives with MindSpore's names
(AdaptiveMaxPool2D, MaxPoolWithArgmax, MaxPool3D, MaxPool3DWithArgmax, AvgPool3D, BatchNorm,
Conv2DTranspose, Im2Col, ExtractVolumePatches, Dilation2D) against NumPy references written
here, eagerly and jitted, with finite-difference gradients in float64."""
import itertools

import numpy as np
import pytest

import pijit as ms
from pijit import ops
from mint_testutil import T, grad_matches, same
from test_image_ops import jit_same, rng


def windows(x, kernel, stride, pads, fill):
    """Dict out-index -> (values of the window, flat indices into the unpadded input)."""
    spatial = x.shape[2:]
    padded = np.pad(x, ((0, 0), (0, 0)) + tuple(pads), constant_values=fill)
    out = [(n + lo + hi - k) // s + 1 for n, (lo, hi), k, s in zip(spatial, pads, kernel,
                                                                   stride)]
    result = {}
    for o in itertools.product(*map(range, out)):
        starts = [i * s for i, s in zip(o, stride)]
        sl = tuple(slice(st, st + k) for st, k in zip(starts, kernel))
        vals = padded[(slice(None), slice(None)) + sl].reshape(x.shape[:2] + (-1,))
        places = [np.ravel_multi_index(tuple(st + d - lo for st, d, (lo, _) in
                                             zip(starts, off, pads)), spatial, mode="clip")
                  for off in itertools.product(*map(range, kernel))]
        result[o] = (vals, np.array(places))
    return result, tuple(out)


def ref_pool(x, kernel, stride, pads, fill, reduce):
    res, out = windows(x, kernel, stride, pads, fill)
    values = np.zeros(x.shape[:2] + out)
    index = np.zeros(x.shape[:2] + out, np.int64)
    for o, (vals, places) in res.items():
        values[(slice(None), slice(None)) + o] = reduce(vals, -1)
        index[(slice(None), slice(None)) + o] = places[np.argmax(vals, -1)]
    return values, index


def test_adaptive_max_pool_2d_values_and_argmax():
    x = rng((2, 3, 5, 7))
    prim = ops.AdaptiveMaxPool2D((2, 3))
    values, index = jit_same(prim, T(x))
    want_v = np.zeros((2, 3, 2, 3))
    want_i = np.zeros((2, 3, 2, 3), np.int64)
    for i, (t, b) in enumerate([(0, 3), (2, 5)]):
        for j, (le, r) in enumerate([(0, 3), (2, 5), (4, 7)]):
            win = x[:, :, t:b, le:r].reshape(2, 3, -1)
            want_v[:, :, i, j] = win.max(-1)
            k = win.argmax(-1)
            want_i[:, :, i, j] = (k // (r - le) + t) * 7 + k % (r - le) + le
    same((values, index), (want_v, want_i))
    grad_matches(lambda t: ops.AdaptiveMaxPool2D(2)(t)[0], rng((1, 1, 4, 4)))
    with pytest.raises(ValueError, match="AdaptiveMaxPool2D: x must be 3-D or 4-D"):
        prim(T(rng((4, 4))))


@pytest.mark.parametrize("mode", ["valid", "same"])
def test_max_pool_with_argmax(mode):
    x = rng((2, 2, 5, 6))
    pads = ((0, 1), (0, 0)) if mode == "same" else ((0, 0), (0, 0))  # 5 -> 3 rows, 6 -> 3 cols
    want_v, want_i = ref_pool(x, (2, 2), (2, 2), pads, -np.inf, np.max)
    got = jit_same(ops.MaxPoolWithArgmax(2, 2, mode), T(x))
    same(got, (want_v, want_i.astype(np.int32)))
    grad_matches(lambda t: ops.MaxPoolWithArgmax(2, 1)(t)[0], rng((1, 1, 3, 3)))
    with pytest.raises(ValueError, match="MaxPoolWithArgmax: data_format must be 'NCHW'"):
        ops.MaxPoolWithArgmax(2, 2, "valid", "NHWC")


def test_max_pool_3d_with_argmax_and_max_pool_3d():
    x = rng((1, 2, 4, 5, 3))
    pads = ((1, 1), (1, 1), (0, 0))
    want_v, want_i = ref_pool(x, (2, 3, 2), (2, 2, 1), pads, -np.inf, np.max)
    prim = ops.MaxPool3DWithArgmax((2, 3, 2), (2, 2, 1), (1, 1, 0))
    same(jit_same(prim, T(x)), (want_v, want_i))
    same(jit_same(ops.MaxPool3D((2, 3, 2), (2, 2, 1), "pad", (1, 1, 1, 1, 0, 0)), T(x)), want_v)
    same_pads = ((0, 0), (0, 1), (0, 0))  # ceil(4/2)=2, ceil(5/2)=3, ceil(3/1)=3 outputs
    want_same, _ = ref_pool(x, (2, 2, 1), (2, 2, 1), same_pads, -np.inf, np.max)
    same(ops.MaxPool3D((2, 2, 1), (2, 2, 1), "SAME")(T(x)), want_same)
    ceil_v, _ = ref_pool(x, (2, 2, 2), (2, 2, 2), ((0, 0), (0, 1), (0, 1)), -np.inf, np.max)
    same(ops.MaxPool3D(2, 2, ceil_mode=True)(T(x)), ceil_v)
    grad_matches(lambda t: ops.MaxPool3D(2, 1)(t), rng((1, 1, 3, 2, 2)))
    with pytest.raises(ValueError, match="MaxPool3D: pad_mode must be one of"):
        ops.MaxPool3D(2, 2, "full")(T(x))
    with pytest.raises(ValueError, match="MaxPool3DWithArgmax: argmax_type must be"):
        ops.MaxPool3DWithArgmax(2, 2, 0, argmax_type=ms.float32)


@pytest.mark.parametrize("include", [True, False])
def test_avg_pool_3d_divisors(include):
    x = rng((1, 2, 3, 4, 5))
    pads = ((1, 1), (0, 0), (1, 1))
    sums, _ = ref_pool(x, (2, 2, 3), (1, 2, 2), pads, 0.0, np.sum)
    ones, _ = ref_pool(np.ones_like(x), (2, 2, 3), (1, 2, 2), pads, 0.0, np.sum)
    want = sums / (12 if include else ones)
    prim = ops.AvgPool3D((2, 2, 3), (1, 2, 2), "pad", (1, 0, 1), count_include_pad=include)
    same(jit_same(prim, T(x)), want)
    same(ops.AvgPool3D((2, 2, 3), (1, 2, 2), "pad", (1, 0, 1), divisor_override=5)(T(x)),
         sums / 5)
    grad_matches(lambda t: ops.AvgPool3D(2, 1, "pad", 1, count_include_pad=False)(t),
                 rng((1, 1, 2, 2, 2)))
    with pytest.raises(ValueError, match="AvgPool3D: data_format must be 'NCDHW'"):
        ops.AvgPool3D(data_format="NDHWC")


def test_batch_norm_inference_and_training():
    x = rng((4, 3, 2, 2))
    scale, bias = rng((3,), 1, 0.5, 1.5), rng((3,), 2)
    mean, var = rng((3,), 3), rng((3,), 4, 0.5, 2.0)
    shape = (1, 3, 1, 1)
    y_inf = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-5) * \
        scale.reshape(shape) + bias.reshape(shape)
    out = jit_same(ops.BatchNorm(), T(x), T(scale), T(bias), T(mean), T(var))
    same(out, (y_inf, mean, var, mean, var))
    bm, bv = x.mean((0, 2, 3)), x.var((0, 2, 3))
    y_train = (x - bm.reshape(shape)) / np.sqrt(bv.reshape(shape) + 1e-3) * \
        scale.reshape(shape) + bias.reshape(shape)
    running_mean, running_var = ms.Parameter(T(mean)), ms.Parameter(T(var))
    out = ops.BatchNorm(True, 1e-3, 0.2)(T(x), T(scale), T(bias), running_mean, running_var)
    same(out, (y_train, bm, bv, bm, bv))
    same(running_mean, 0.8 * mean + 0.2 * bm)
    grad_matches(lambda t: ops.BatchNorm()(t, T(scale), T(bias), T(mean), T(var))[0],
                 rng((2, 3, 1, 2)))
    with pytest.raises(ValueError, match="BatchNorm: data_format must be 'NCHW'"):
        ops.BatchNorm(data_format="NHWC")


def ref_conv2d(x, w, stride, pads):
    x = np.pad(x, ((0, 0), (0, 0)) + pads)
    kh, kw = w.shape[2:]
    oh, ow = (x.shape[2] - kh) // stride + 1, (x.shape[3] - kw) // stride + 1
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out


@pytest.mark.parametrize("mode,pads", [("valid", ((0, 0), (0, 0))), ("same", ((0, 1), (0, 1))),
                                       ("pad", ((1, 0), (2, 1)))])
def test_conv2d_transpose_is_the_input_gradient_of_conv2d(mode, pads):
    x_shape, w = (2, 3, 6, 5), rng((4, 3, 3, 2), 1)
    dout = rng(ref_conv2d(np.zeros(x_shape), w, 2, pads).shape, 2)
    # the adjoint of the convolution: d(sum(conv(x) * dout))/dx, column by column
    want = np.zeros(x_shape)
    for idx in np.ndindex(*x_shape):
        e = np.zeros(x_shape)
        e[idx] = 1.0
        want[idx] = np.sum(ref_conv2d(e, w, 2, pads) * dout)
    pad = (pads[0][0], pads[0][1], pads[1][0], pads[1][1])
    prim = ops.Conv2DTranspose(3, (3, 2), mode, pad=pad if mode == "pad" else 0, stride=2)
    same(jit_same(lambda d, k: prim(d, k, x_shape), T(dout), T(w)), want, atol=1e-12)


def test_conv2d_transpose_gradient_and_errors():
    w = T(rng((2, 1, 2, 2), 1))
    grad_matches(lambda t: ops.Conv2DTranspose(1, 2, stride=2)(t, w, (1, 1, 4, 5)),
                 rng((1, 2, 2, 2)))
    with pytest.raises(ValueError, match="Conv2DTranspose: pad_mode must be one of"):
        ops.Conv2DTranspose(1, 2, "full")(T(rng((1, 2, 2, 2))), w, (1, 1, 4, 4))


def test_im2col_and_col2im_are_adjoint():
    x = rng((2, 3, 5, 6))
    prim = ops.Im2Col((2, 3), strides=(1, 2), dilations=1, pads=(1, 0))
    cols = jit_same(prim, T(x))
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (0, 0)))
    oh, ow = 6, 2
    want = np.zeros((2, 3, 6, oh * ow))
    for a in range(2):
        for b in range(3):
            for i in range(oh):
                for j in range(ow):
                    want[:, :, a * 3 + b, i * ow + j] = padded[:, :, i + a, j * 2 + b]
    same(cols, want)
    y = rng(want.shape, 5)
    back = ops.Col2Im((2, 3), 1, (1, 0), (1, 2))(T(y), (5, 6))
    np.testing.assert_allclose(np.sum(want * y), np.sum(x * back.asnumpy()), rtol=1e-12)
    grad_matches(ops.Im2Col(2), rng((1, 1, 3, 3)))


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_extract_volume_patches(padding):
    x = rng((1, 2, 3, 4, 5))
    kernel, stride = (2, 2, 3), (1, 2, 2)
    pads = ((0, 0),) * 3 if padding == "VALID" else ((0, 1), (0, 0), (1, 1))
    res, out = windows(x, kernel, stride, pads, 0.0)
    want = np.zeros((1, 12 * 2) + out)
    for o, (vals, _) in res.items():  # vals (N, C, K) -> channel k * C + c
        want[(slice(None), slice(None)) + o] = np.transpose(vals, (0, 2, 1)).reshape(1, -1)
    prim = ops.ExtractVolumePatches((1, 1) + kernel, (1, 1) + stride, padding)
    same(jit_same(prim, T(x)), want)
    with pytest.raises(ValueError, match="ExtractVolumePatches: padding must be one of"):
        ops.ExtractVolumePatches(1, 1, "FULL")


@pytest.mark.parametrize("mode", ["VALID", "SAME"])
def test_dilation2d(mode):
    x, f = rng((2, 3, 5, 6)), rng((3, 2, 2), 1)
    stride, rate = 2, 2  # the dilated kernel spans 3 x 3
    pads = ((0, 0), (0, 0)) if mode == "VALID" else ((1, 1), (0, 1))
    padded = np.pad(x, ((0, 0), (0, 0)) + pads, constant_values=-np.inf)
    oh = (padded.shape[2] - 3) // stride + 1
    ow = (padded.shape[3] - 3) // stride + 1
    want = np.full((2, 3, oh, ow), -np.inf)
    for i in range(oh):
        for j in range(ow):
            for a in range(2):
                for b in range(2):
                    want[:, :, i, j] = np.maximum(
                        want[:, :, i, j],
                        padded[:, :, i * stride + a * rate, j * stride + b * rate] + f[:, a, b])
    prim = ops.Dilation2D(stride, rate, mode)
    same(jit_same(prim, T(x), T(f)), want)
    grad_matches(lambda t: ops.Dilation2D(1, 1, "VALID")(t, T(f[:1])), rng((1, 1, 3, 3)))
    with pytest.raises(ValueError, match="Dilation2D: filter must be \\(C, kh, kw\\)"):
        prim(T(x), T(f[:2]))
