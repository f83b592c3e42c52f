"""interpolate (nearest, bilinear, linear, area; align_corners), adaptive average and max
pooling, pixel_shuffle/unshuffle, AvgPool1d/MaxPool1d, GroupNorm, InstanceNorm, BatchNorm1d,
channel dropout and Unflatten: values against NumPy references written element by element,
jitted equal to eager in one graph, gradients against central differences, clear errors, and
ops.constexpr (the compile-time helper these are built with)."""
import math

import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops

from gradcheck_util import check_weighted_gradient


def rng(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def ref_nearest(a, out):
    h, w = a.shape[2:]
    rows = [min(int(math.floor(i * h / out[0])), h - 1) for i in range(out[0])]
    cols = [min(int(math.floor(j * w / out[1])), w - 1) for j in range(out[1])]
    return a[:, :, rows][:, :, :, cols]


def ref_linear_1d(n_in, n_out, align_corners):
    """For each output position: (lo, hi, weight of hi)."""
    taps = []
    for i in range(n_out):
        if align_corners:
            src = i * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        else:
            src = max((i + 0.5) * n_in / n_out - 0.5, 0.0)
        lo = min(int(math.floor(src)), n_in - 1)
        taps.append((lo, min(lo + 1, n_in - 1), src - lo))
    return taps


def ref_bilinear(a, out, align_corners):
    h, w = a.shape[2:]
    ty, tx = ref_linear_1d(h, out[0], align_corners), ref_linear_1d(w, out[1], align_corners)
    y = np.zeros(a.shape[:2] + tuple(out))
    for i, (y0, y1, wy) in enumerate(ty):
        for j, (x0, x1, wx) in enumerate(tx):
            y[:, :, i, j] = ((1 - wy) * ((1 - wx) * a[:, :, y0, x0] + wx * a[:, :, y0, x1]) +
                             wy * ((1 - wx) * a[:, :, y1, x0] + wx * a[:, :, y1, x1]))
    return y


def ref_adaptive(a, out, reduce):
    h, w = a.shape[2:]
    y = np.zeros(a.shape[:2] + tuple(out))
    for i in range(out[0]):
        for j in range(out[1]):
            r0, r1 = (i * h) // out[0], math.ceil((i + 1) * h / out[0])
            c0, c1 = (j * w) // out[1], math.ceil((j + 1) * w / out[1])
            y[:, :, i, j] = reduce(a[:, :, r0:r1, c0:c1], axis=(2, 3))
    return y


def check(fn, want, *arrays, rtol=1e-10):
    args = [ms.Tensor(a) for a in arrays]
    got = fn(*args)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=rtol, atol=1e-12)
    jf = ms.jit(fn)
    ms.reset(jf)
    np.testing.assert_allclose(jf(*args).asnumpy(), got.asnumpy(), rtol=1e-12, atol=1e-14)
    stats = ms.get_code_extra(jf)
    assert stats["total_break_count"] == 0 and stats["eager_count"] == 0, stats["all_reasons"]


def check_gradient(fn, a):
    check_weighted_gradient(fn, a, rng(fn(ms.Tensor(a)).shape, seed=9), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("out", [(10, 14), (3, 4), (5, 7), (7, 3)])
def test_interpolate_nearest(out):
    a = rng((2, 3, 5, 7))
    check(lambda x: ops.interpolate(x, size=out), ref_nearest(a, out), a)


def test_interpolate_nearest_by_scale_factor_and_upsample_cell():
    a = rng((1, 2, 3, 4))
    check(lambda x: ops.interpolate(x, scale_factor=2), ref_nearest(a, (6, 8)), a)
    up = nn.Upsample(scale_factor=2)
    check(lambda x: up(x), ref_nearest(a, (6, 8)), a)


@pytest.mark.parametrize("out, align", [((8, 9), False), ((8, 9), True), ((3, 2), False),
                                        ((3, 2), True), ((1, 1), True)])
def test_interpolate_bilinear(out, align):
    a = rng((2, 3, 5, 4))
    check(lambda x: ops.interpolate(x, size=out, mode="bilinear", align_corners=align),
          ref_bilinear(a, out, align), a)


def test_interpolate_linear_1d_matches_bilinear_on_one_row():
    a = rng((2, 3, 6))
    want = ref_bilinear(a[:, :, None, :], (1, 11), False)[:, :, 0]
    check(lambda x: ops.interpolate(x, size=11, mode="linear"), want, a)


@pytest.mark.parametrize("out", [(1, 1), (2, 3), (3, 3), (5, 7), (4, 6)])
def test_adaptive_pooling(out):
    a = rng((2, 3, 5, 7))
    check(lambda x: ops.adaptive_avg_pool2d(x, out), ref_adaptive(a, out, np.mean), a)
    check(lambda x: ops.adaptive_max_pool2d(x, out), ref_adaptive(a, out, np.max), a)
    check(lambda x: ops.interpolate(x, size=out, mode="area"), ref_adaptive(a, out, np.mean), a)
    cell = nn.AdaptiveAvgPool2d(out)
    check(lambda x: cell(x), ref_adaptive(a, out, np.mean), a)


def test_adaptive_pooling_keeps_a_size_given_as_none_and_1d():
    a = rng((2, 3, 5, 7))
    check(lambda x: ops.adaptive_avg_pool2d(x, (None, 2)), ref_adaptive(a, (5, 2), np.mean), a)
    b = rng((2, 3, 7))
    want = ref_adaptive(b[:, :, None, :], (1, 3), np.max)[:, :, 0]
    pool = nn.AdaptiveMaxPool1d(3)
    check(lambda x: pool(x), want, b)


def test_pixel_shuffle_and_unshuffle():
    a = rng((2, 8, 3, 4))
    r = 2
    want = np.zeros((2, 2, 6, 8))
    for c in range(2):
        for i in range(r):
            for j in range(r):
                want[:, c, i::r, j::r] = a[:, c * r * r + i * r + j]
    check(lambda x: ops.pixel_shuffle(x, r), want, a)
    shuffle, unshuffle = nn.PixelShuffle(r), nn.PixelUnshuffle(r)
    check(lambda x: unshuffle(shuffle(x)), a, a)


@pytest.mark.parametrize("cls, reduce", [(nn.AvgPool1d, np.mean), (nn.MaxPool1d, np.max)])
def test_pool1d(cls, reduce):
    a = rng((2, 3, 11))
    pool = cls(kernel_size=3, stride=2)
    want = np.stack([reduce(a[:, :, s:s + 3], axis=2) for s in range(0, 9, 2)], axis=2)
    check(lambda x: pool(x), want, a)


def ref_group_norm(a, groups, gamma, beta, eps):
    n, c = a.shape[:2]
    g = a.reshape(n, groups, -1)
    y = (g - g.mean(2, keepdims=True)) / np.sqrt(g.var(2, keepdims=True) + eps)
    shape = (1, c) + (1,) * (a.ndim - 2)
    return y.reshape(a.shape) * gamma.reshape(shape) + beta.reshape(shape)


@pytest.mark.parametrize("shape, groups", [((2, 6, 4, 5), 3), ((3, 4, 7), 4), ((2, 4), 1)])
def test_group_norm(shape, groups):
    ms.set_seed(1)
    gn = nn.GroupNorm(groups, shape[1], dtype=ms.float64, gamma_init="normal",
                      beta_init="normal")
    a = rng(shape) * 3 + 1
    want = ref_group_norm(a, groups, gn.gamma.asnumpy(), gn.beta.asnumpy(), 1e-5)
    check(lambda x: gn(x), want, a)
    assert [n for n, _ in gn.parameters_and_names()] == ["gamma", "beta"]


@pytest.mark.parametrize("cls, shape", [(nn.InstanceNorm1d, (2, 3, 6)),
                                        (nn.InstanceNorm2d, (2, 3, 4, 5)),
                                        (nn.InstanceNorm3d, (1, 2, 3, 4, 2))])
def test_instance_norm(cls, shape):
    norm = cls(shape[1], dtype=ms.float64, gamma_init="normal", beta_init="normal")
    a = rng(shape) * 2 - 1
    want = ref_group_norm(a, shape[1], norm.gamma.asnumpy(), norm.beta.asnumpy(), 1e-5)
    check(lambda x: norm(x), want, a)


def test_batch_norm_1d_equals_2d_on_a_reshaped_input():
    a = rng((4, 3, 5)).astype(np.float32)
    bn1, bn2 = nn.BatchNorm1d(3), nn.BatchNorm2d(3)
    bn1.set_train()
    bn2.set_train()
    got = bn1(ms.Tensor(a)).asnumpy()
    want = bn2(ms.Tensor(a.reshape(4, 3, 5, 1))).asnumpy().reshape(4, 3, 5)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(bn1.moving_mean.asnumpy(), bn2.moving_mean.asnumpy(), rtol=1e-6)
    mean, var = a.mean((0, 2)), a.var((0, 2))
    np.testing.assert_allclose(got, (a - mean[:, None]) / np.sqrt(var[:, None] + 1e-5),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("fn, shape", [
    (lambda x: ops.interpolate(x, size=(5, 3), mode="bilinear"), (1, 2, 3, 4)),
    (lambda x: ops.interpolate(x, size=(4, 6)), (1, 2, 3, 4)),
    (lambda x: ops.adaptive_avg_pool2d(x, (2, 3)), (1, 2, 5, 4)),
    (lambda x: ops.adaptive_max_pool2d(x, (2, 3)), (1, 2, 5, 4)),
    (lambda x: nn.GroupNorm(2, 4, dtype=ms.float64)(x), (2, 4, 3)),
    (lambda x: nn.InstanceNorm2d(2, dtype=ms.float64)(x), (2, 2, 2, 3)),
    (lambda x: ops.pixel_shuffle(x, 2), (1, 4, 2, 2)),
])
def test_gradients_match_finite_differences(fn, shape):
    check_gradient(fn, rng(shape, seed=4))


def test_channel_dropout_zeroes_whole_channels():
    ms.set_seed(3)
    drop = nn.Dropout2d(p=0.5)
    x = ms.Tensor(np.ones((8, 16, 3, 3), np.float32))
    assert drop(x) is x  # evaluation mode
    drop.set_train()
    y = drop(x).asnumpy()
    per_channel = y.reshape(8, 16, 9)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert (per_channel.min(2) == per_channel.max(2)).all()  # each channel all kept or dropped
    assert 0.2 < (per_channel[:, :, 0] == 0).mean() < 0.8


def test_unflatten():
    a = rng((2, 12, 3))
    split_channels, split_last = nn.Unflatten(1, (3, 4)), nn.Unflatten(-1, (1, 3))
    check(lambda x: split_channels(x), a.reshape(2, 3, 4, 3), a)
    check(lambda x: split_last(x), a.reshape(2, 12, 1, 3), a)


@pytest.mark.parametrize("call, error, match", [
    (lambda x: ops.interpolate(x), ValueError, "exactly one"),
    (lambda x: ops.interpolate(x, size=3, scale_factor=2), ValueError, "exactly one"),
    (lambda x: ops.interpolate(x, size=(3, 3), mode="cubic"), ValueError, "mode"),
    (lambda x: ops.interpolate(x[0], size=3, mode="bilinear"), ValueError, "4-D"),
    (lambda x: ops.interpolate(x, size=(3, 3), align_corners=True), ValueError, "linear"),
    (lambda x: ops.adaptive_avg_pool2d(x, (0, 2)), ValueError, "positive"),
    (lambda x: ops.adaptive_avg_pool2d(x[0, 0], 2), ValueError, "4-D"),
    (lambda x: ops.pixel_shuffle(x, 3), ValueError, "divisible"),
    (lambda x: nn.GroupNorm(3, 4), ValueError, "divisible"),
    (lambda x: nn.GroupNorm(2, 4)(x[:, :2]), ValueError, "expects"),
    (lambda x: nn.InstanceNorm2d(4, eps=0), ValueError, "eps"),
    (lambda x: nn.Dropout2d(1.5), ValueError, "p must"),
    (lambda x: nn.AvgPool1d(2, padding=1), ValueError, "pad_mode"),
])
def test_bad_arguments_raise_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(ms.Tensor(np.ones((2, 4, 3, 3), np.float32)))


def test_constexpr_runs_at_compile_time_and_is_guarded_by_its_arguments():
    calls = []

    @ops.constexpr
    def table(n, scale):
        calls.append(n)
        return ms.Tensor(np.arange(n) * scale)  # NumPy: capture could not trace this

    def f(x, scale):
        return x + table(x.shape[0], scale)

    jf = ms.jit(f, capture_mode="bytecode")
    x = ms.Tensor(np.ones(4))
    for scale in (1.0, 1.0, 2.0):
        np.testing.assert_array_equal(jf(x, scale).asnumpy(), 1 + np.arange(4) * scale)
    stats = ms.get_code_extra(jf)
    assert stats["total_break_count"] == 0 and stats["compile_count"] == 2, stats
    assert calls == [4, 4]  # once per compile, not per call

    def g(x):
        return table(x, 1.0)  # a tensor argument: not a constant, the graph breaks there

    jg = ms.jit(g, capture_mode="bytecode")
    out = jg(ms.Tensor(np.array(3)))
    assert out.shape == (3,)  # the call ran in Python
    reasons = ms.get_code_extra(jg)["all_reasons"]
    assert any("constexpr" in r["explanation"] for r in reasons), reasons
