"""The activations beyond the first ones (ops.elu, celu, selu, silu, mish, fast_gelu,
softsign, tanhshrink, hardtanh, logsigmoid, softmin, softshrink, hardshrink, threshold, glu,
prelu and their nn Cells): values against NumPy references written from the formulas, eager
and jitted (one graph), gradients against central finite differences, and clear errors."""
import math

import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops

from gradcheck_util import check_weighted_gradient

SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805


def np_softplus(a):
    return np.logaddexp(0, a)


def np_sigmoid(a):
    return 1 / (1 + np.exp(-a))


def np_softmax(a, axis):
    e = np.exp(a - a.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


CASES = {
    "elu": (lambda t: ops.elu(t, 0.7), lambda a: np.where(a > 0, a, 0.7 * np.expm1(a))),
    "celu": (lambda t: ops.celu(t, 2.0), lambda a: np.maximum(a, 0) + np.minimum(0, 2.0 * np.expm1(a / 2.0))),
    "selu": (ops.selu, lambda a: SELU_SCALE * np.where(a > 0, a, SELU_ALPHA * np.expm1(a))),
    "silu": (ops.silu, lambda a: a * np_sigmoid(a)),
    "mish": (ops.mish, lambda a: a * np.tanh(np_softplus(a))),
    "fast_gelu": (ops.fast_gelu, lambda a: a / (1 + np.exp(-1.702 * np.abs(a))) * np.exp(0.851 * (a - np.abs(a)))),
    "softsign": (ops.softsign, lambda a: a / (1 + np.abs(a))),
    "tanhshrink": (ops.tanhshrink, lambda a: a - np.tanh(a)),
    "hardtanh": (lambda t: ops.hardtanh(t, -1.5, 2.0), lambda a: np.clip(a, -1.5, 2.0)),
    "logsigmoid": (ops.logsigmoid, lambda a: np.log(np_sigmoid(a))),
    "softmin": (lambda t: ops.softmin(t, 0), lambda a: np_softmax(-a, 0)),
    "softshrink": (lambda t: ops.softshrink(t, 0.6), lambda a: np.where(a > 0.6, a - 0.6, np.where(a < -0.6, a + 0.6, 0))),
    "hardshrink": (lambda t: ops.hardshrink(t, 0.6), lambda a: np.where(np.abs(a) > 0.6, a, 0)),
    "threshold": (lambda t: ops.threshold(t, 0.3, -2.0), lambda a: np.where(a > 0.3, a, -2.0)),
    "glu": (lambda t: ops.glu(t, 1), lambda a: a[:, :2] * np_sigmoid(a[:, 2:])),
    "ELU cell": (nn.ELU(0.5), lambda a: np.where(a > 0, a, 0.5 * np.expm1(a))),
    "SiLU cell": (nn.SiLU(), lambda a: a * np_sigmoid(a)),
    "Hardtanh cell": (nn.Hardtanh(min_val=-0.5, max_val=0.5), lambda a: np.clip(a, -0.5, 0.5)),
    "Softmin cell": (nn.Softmin(axis=1), lambda a: np_softmax(-a, 1)),
    "HShrink cell": (nn.HShrink(0.2), lambda a: np.where(np.abs(a) > 0.2, a, 0)),
    "Threshold cell": (nn.Threshold(0.1, 20.0), lambda a: np.where(a > 0.1, a, 20.0)),
    "GLU cell": (nn.GLU(), lambda a: a[:, :2] * np_sigmoid(a[:, 2:])),
    "LogSigmoid cell": (nn.LogSigmoid(), lambda a: -np_softplus(-a)),
    "Mish cell": (nn.Mish(), lambda a: a * np.tanh(np_softplus(a))),
    "SeLU cell": (nn.SeLU(), lambda a: SELU_SCALE * np.where(a > 0, a, SELU_ALPHA * np.expm1(a))),
}
KINKS = np.array([0.0, -1.5, 2.0, 0.6, -0.6, 0.3, 0.5, -0.5, 0.2, -0.2, 0.1])


def _inputs():
    a = np.random.default_rng(0).uniform(-4, 4, (3, 4))
    # Away from the kinks, where the derivative jumps.
    a[np.abs(a[..., None] - KINKS).min(-1) < 0.05] += 0.13
    return a


@pytest.mark.parametrize("name", CASES)
def test_values_eager_jitted_and_gradients(name):
    fn, ref = CASES[name]
    a = _inputs()
    got = fn(ms.Tensor(a))
    np.testing.assert_allclose(got.asnumpy(), ref(a), rtol=1e-10, atol=1e-12)

    def f(t):
        return fn(t)

    jf = ms.jit(f)
    ms.reset(jf)
    np.testing.assert_allclose(jf(ms.Tensor(a)).asnumpy(), got.asnumpy(), rtol=1e-12, atol=1e-14)
    stats = ms.get_code_extra(jf)
    assert stats["total_break_count"] == 0 and stats["eager_count"] == 0, stats["all_reasons"]

    w = np.random.default_rng(1).standard_normal(got.shape)
    check_weighted_gradient(fn, a, w, rtol=1e-6, atol=1e-6)


def test_large_inputs_stay_finite():
    x = ms.Tensor(np.array([-1000.0, -50.0, 50.0, 1000.0]))
    for fn in (ops.elu, ops.selu, ops.celu, ops.logsigmoid, ops.mish, ops.silu, ops.fast_gelu):
        assert np.isfinite(fn(x).asnumpy()).all(), fn.__name__


def test_prelu_cell_learns_one_slope_per_channel():
    cell = nn.PReLU(3, 0.1)
    assert [n for n, _ in cell.parameters_and_names()] == ["w"]
    a = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    want = np.where(a > 0, a, 0.1 * a)
    np.testing.assert_allclose(cell(ms.Tensor(a)).asnumpy(), want, rtol=1e-6)
    grads = ms.grad(lambda x: cell(x).sum(), None, cell.trainable_params())(ms.Tensor(a))
    g = grads[0] if isinstance(grads, (tuple, list)) else grads
    np.testing.assert_allclose(g.asnumpy(), np.where(a > 0, 0, a).sum((0, 2)), rtol=1e-5)
    np.testing.assert_allclose(ms.jit(cell.construct)(ms.Tensor(a)).asnumpy(), want, rtol=1e-6)


def test_get_activation_knows_the_new_names():
    for name, cls in [("elu", nn.ELU), ("silu", nn.SiLU), ("fast_gelu", nn.FastGelu),
                      ("prelu", nn.PReLU), ("logsigmoid", nn.LogSigmoid), ("mish", nn.Mish)]:
        assert isinstance(nn.get_activation(name), cls)
    assert nn.Dense(3, 2, activation="silu").activation_flag


@pytest.mark.parametrize("call, error, match", [
    (lambda x: ops.hardtanh(x, 2.0, 1.0), ValueError, "must not exceed"),
    (lambda x: ops.softshrink(x, -1.0), ValueError, "non-negative"),
    (lambda x: ops.glu(x, 0), ValueError, "even size"),
    (lambda x: ops.glu(x, 5), ValueError, "axis"),
    (lambda x: ops.elu(x, "a"), TypeError, "alpha"),
    (lambda x: ops.celu(x, 0.0), ValueError, "alpha"),
    (lambda x: ops.prelu(x, ms.Tensor(np.ones(5, np.float32))), ValueError, "slopes"),
    (lambda x: nn.Hardtanh(1.0, -1.0), ValueError, "must not exceed"),
    (lambda x: nn.ELU(1.0, 2.0), TypeError, "at most"),
    (lambda x: nn.PReLU(0), ValueError, "channel"),
])
def test_bad_arguments_raise_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(ms.Tensor(np.ones((3, 4), np.float32)))
