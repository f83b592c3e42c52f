"""Gradients of conv2d and pooling (graph ops conv2d_grad_input/weight, max/avg_pool2d_grad)
against central finite differences in float64, and float32 against float64, for strides,
paddings, dilations, groups and overlapping windows."""
import numpy as np
import pytest

import pijit as ms
import pijit.nn as nn
from pijit import ops

from gradcheck_util import central_differences


CONV_CASES = [  # stride, pad_mode, padding, dilation, groups
    (1, "valid", 0, 1, 1),
    (2, "same", 0, 1, 1),
    (1, "pad", 1, 2, 2),
    (2, "pad", (1, 0, 2, 1), 1, 2),
    (3, "valid", 0, 1, 4),
]


@pytest.mark.parametrize("stride,pad_mode,padding,dilation,groups", CONV_CASES)
def test_conv2d_gradients_match_finite_differences(stride, pad_mode, padding, dilation, groups):
    rng = np.random.default_rng(stride * 10 + groups)
    x = rng.standard_normal((2, 4, 7, 6))
    w = rng.standard_normal((4, 4 // groups, 3, 2))
    b = rng.standard_normal(4)
    kw = dict(stride=stride, pad_mode=pad_mode, padding=padding, dilation=dilation, groups=groups)

    def f(x, w, b):
        y = ops.conv2d(x, w, b, **kw)
        return ops.sum(y * y)

    gx, gw, gb = ms.grad(f, grad_position=(0, 1, 2))(ms.Tensor(x), ms.Tensor(w), ms.Tensor(b))
    T = ms.Tensor
    numeric = (central_differences(lambda v: f(T(v), T(w), T(b)).asnumpy(), x),
               central_differences(lambda v: f(T(x), T(v), T(b)).asnumpy(), w),
               central_differences(lambda v: f(T(x), T(w), T(v)).asnumpy(), b))
    for got, want in zip((gx, gw, gb), numeric):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)
    # float32 runs on oneDNN's backward primitives: it agrees with the float64 loops.
    g32 = ms.grad(f, grad_position=(0, 1, 2))(*(T(a.astype(np.float32)) for a in (x, w, b)))
    for got, want in zip(g32, (gx, gw, gb)):
        assert got.dtype == ms.float32
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-4,
                                   atol=1e-4 * np.abs(want.asnumpy()).max())


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("kernel,stride,pad_mode", [(2, 2, "valid"), (3, 2, "valid"), (3, 1, "same"),
                                                    (2, 1, "same")])
def test_pool_gradients_match_finite_differences(kind, kernel, stride, pad_mode):
    rng = np.random.default_rng(kernel * 7 + stride)
    x = rng.standard_normal((2, 3, 7, 6))  # distinct values: the maximum of a window is unique
    layer = (nn.MaxPool2d if kind == "max" else nn.AvgPool2d)(kernel, stride, pad_mode=pad_mode)

    def f(t):
        y = layer(t)
        return ops.sum(y * y)

    g = ms.grad(f)(ms.Tensor(x)).asnumpy()
    np.testing.assert_allclose(g, central_differences(lambda v: f(ms.Tensor(v)).asnumpy(), x),
                               rtol=1e-5, atol=1e-7)
    g32 = ms.grad(f)(ms.Tensor(x.astype(np.float32))).asnumpy()
    np.testing.assert_allclose(g32, g, rtol=1e-4, atol=1e-5)


def test_max_pool_gradient_goes_to_the_first_maximum_of_a_window():
    x = np.zeros((1, 1, 2, 2), np.float32)  # all four tie
    g = ms.grad(lambda t: ops.sum(ops.max_pool2d(t, 2, 2)))(ms.Tensor(x)).asnumpy()
    np.testing.assert_array_equal(g, [[[[1, 0], [0, 0]]]])


def test_conv2d_gradient_bad_shapes_raise():
    with pytest.raises(ValueError, match="conv2d"):
        ms.grad(lambda x, w: ops.sum(ops.conv2d(x, w)))(
            ms.Tensor(np.ones((1, 2, 4, 4), np.float32)), ms.Tensor(np.ones((1, 3, 3, 3), np.float32)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_float_conv_and_pool_gradients_follow_float32(dtype):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)

    def f(x, w):
        return ops.sum(ops.max_pool2d(ops.conv2d(x, w, pad_mode="same"), 2, 2))

    want = ms.grad(f, grad_position=(0, 1))(ms.Tensor(x), ms.Tensor(w))
    half = getattr(ms, dtype)
    got = ms.grad(f, grad_position=(0, 1))(ms.Tensor(x).astype(half), ms.Tensor(w).astype(half))
    tol = 2e-2 if dtype == "float16" else 1e-1
    for g, r in zip(got, want):
        assert g.dtype == half
        np.testing.assert_allclose(g.astype(ms.float32).asnumpy(), r.asnumpy(), rtol=tol,
                                   atol=tol * np.abs(r.asnumpy()).max())


@pytest.mark.parametrize("stride,pad_mode,groups,bias", [(1, "same", 1, True), (2, "valid", 1, False),
                                                        (1, "pad", 2, True)])
def test_many_channel_float32_conv2d_matches_float64(stride, pad_mode, groups, bias):
    # 16+ channels per group run in oneDNN's blocked layouts, with reorders around them.
    rng = np.random.default_rng(stride + groups)
    x = rng.standard_normal((3, 32, 11, 9))
    w = rng.standard_normal((32, 32 // groups, 3, 3)) * 0.1
    b = rng.standard_normal(32) if bias else None
    kw = dict(stride=stride, pad_mode=pad_mode, padding=1 if pad_mode == "pad" else 0, groups=groups)

    def run(dt):
        args = [ms.Tensor(x.astype(dt)), ms.Tensor(w.astype(dt))]
        if bias:
            args.append(ms.Tensor(b.astype(dt)))
        return ops.conv2d(*args, **kw).asnumpy()

    want = run(np.float64)
    got = run(np.float32)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
