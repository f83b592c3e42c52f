"""Elementwise chains in jitted functions run as fused kernels and match eager results."""
import numpy as np
import pytest

import pijit
from pijit import ops

from fusion_testutil import first_graph, fresh_jit


def chain(a, b, c, d):
    return a * b + c * d - a * 0.5


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1,), (7,), (8,), (9,), (1003,), (3, 17), (2, 3, 5)])
def test_fused_chain_is_bit_identical_to_numpy(dtype, shape):
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(shape).astype(dtype) for _ in range(4)]
    jf = fresh_jit(chain)
    got = jf(*[pijit.Tensor(x) for x in arrays]).asnumpy()
    a, b, c, d = arrays
    np.testing.assert_array_equal(got, a * b + c * d - a * dtype(0.5))
    assert "fused(" in first_graph(jf)


def test_fused_chain_with_broadcast_inputs():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((6, 10)).astype(np.float32)
    b = rng.standard_normal((10,)).astype(np.float32)
    c = rng.standard_normal((6, 1)).astype(np.float32)
    d = rng.standard_normal(()).astype(np.float32)
    jf = fresh_jit(chain)
    got = jf(*[pijit.Tensor(x) for x in (a, b, c, d)]).asnumpy()
    np.testing.assert_array_equal(got, a * b + c * d - a * np.float32(0.5))


def test_fused_exp_within_tolerance_of_eager():
    def f(x, y):
        return ops.relu(ops.exp(x * -1.5) * y)

    rng = np.random.default_rng(5)
    xn = rng.uniform(-20, 20, 1001).astype(np.float32)
    yn = rng.standard_normal(1001).astype(np.float32)
    x, y = pijit.Tensor(xn), pijit.Tensor(yn)
    jf = pijit.jit(f, mode="PIJit")
    np.testing.assert_allclose(jf(x, y).asnumpy(), f(x, y).asnumpy(), rtol=4e-7, atol=0)


def relu_grad(x, g, h):
    return ops.where(x > 0, g, 0.0) + h


def clip_select(x, y, z):
    c = ops.minimum(ops.maximum(x, -1.0), 0.5)
    a = ops.where(c <= y, c, x)
    b = ops.where(a != x, a, y)
    b = ops.where(x == y, b, z)
    b = ops.where(a >= y, b, a)
    return ops.where(x < a, b, c * 2.0)


def clip_select_numpy(x, y, z):
    dt = x.dtype.type
    c = np.minimum(np.maximum(x, dt(-1.0)), dt(0.5))
    a = np.where(c <= y, c, x)
    b = np.where(a != x, a, y)
    b = np.where(x == y, b, z)
    b = np.where(a >= y, b, a)
    return np.where(x < a, b, c * dt(2.0))


@pytest.fixture(params=["auto", "interpreter"])
def fused_backend(request, monkeypatch):
    """Runs the test with generated code and again with the fused-program interpreter."""
    if request.param == "interpreter":
        monkeypatch.setenv("PIJIT_FUSED_BACKEND", "interpreter")
    return request.param


_SHAPES = [((1,), (1,), (1,)), ((7,), (7,), (7,)), ((9,), (), (9,)), ((1003,), (1003,), (1,)),
           ((3, 17), (17,), (3, 1)), ((2, 3, 5), (3, 1), (2, 3, 5)), ((4, 8), (1, 8), ())]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shapes", _SHAPES)
def test_fused_masks_match_numpy_exactly(dtype, shapes, fused_backend):
    rng = np.random.default_rng(6)
    x, y, z = (rng.standard_normal(s).astype(dtype) for s in shapes)
    x.reshape(-1)[::5] = 0.0  # ties with the constants and between inputs
    if y.size == x.size:
        y.reshape(-1)[::3] = x.reshape(-1)[::3]
    args = [pijit.Tensor(v) for v in (x, y, z)]
    jf = fresh_jit(clip_select)
    got = jf(*args).asnumpy()
    np.testing.assert_array_equal(got, clip_select_numpy(x, y, z))
    np.testing.assert_array_equal(got, clip_select(*args).asnumpy())
    text = first_graph(jf)
    assert "fused(" in text and "= where(" not in text, text

    jg = fresh_jit(relu_grad)
    got = jg(*args).asnumpy()
    np.testing.assert_array_equal(got, np.where(x > 0, y, dtype(0)) + z)
    assert "= greater(" not in first_graph(jg), first_graph(jg)


def test_fused_masks_with_nan_and_signed_zero(fused_backend):
    nan = np.nan
    x = np.array([nan, 0.0, -0.0, 1.0, nan, -2.0, 0.25, np.inf, -np.inf], np.float32)
    y = np.array([1.0, -0.0, 0.0, nan, nan, -2.0, 0.5, np.inf, 0.0], np.float32)
    z = np.array([3.0, 4.0, -5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0], np.float32)
    jf = fresh_jit(clip_select)
    got = jf(*[pijit.Tensor(v) for v in (x, y, z)]).asnumpy()
    np.testing.assert_array_equal(got, clip_select_numpy(x, y, z))
    assert np.array_equal(np.signbit(got), np.signbit(clip_select_numpy(x, y, z)))


def test_escaping_comparison_stays_a_bool_tensor(fused_backend):
    def f(x, g):
        m = x > 0
        return ops.where(m, g * 2.0, 0.0) - g, m

    rng = np.random.default_rng(8)
    x, g = (rng.standard_normal((5, 6)).astype(np.float32) for _ in range(2))
    jf = fresh_jit(f)
    out, mask = jf(pijit.Tensor(x), pijit.Tensor(g))
    np.testing.assert_array_equal(out.asnumpy(), np.where(x > 0, g * np.float32(2), 0) - g)
    assert mask.asnumpy().dtype == np.bool_
    np.testing.assert_array_equal(mask.asnumpy(), x > 0)


def test_relu_backward_fuses_in_a_training_step(fused_backend):
    def loss(w, x):
        return ops.relu(x * w - 0.5).sum()

    rng = np.random.default_rng(9)
    w, x = (rng.standard_normal((16, 8)).astype(np.float32) for _ in range(2))
    grad_fn = pijit.grad(loss)
    jf = pijit.jit(grad_fn, mode="PIJit")
    got = jf(pijit.Tensor(w), pijit.Tensor(x)).asnumpy()
    np.testing.assert_array_equal(got, grad_fn(pijit.Tensor(w), pijit.Tensor(x)).asnumpy())
    np.testing.assert_allclose(got, np.where(x * w - 0.5 > 0, x, 0), rtol=1e-6)


def normalize(x, m, v):
    # A normalisation's elementwise tail: sqrt and rsqrt fuse, correctly rounded.
    s = v + 1e-5
    return (x - m) * ops.rsqrt(s) + ops.sqrt(s) * 0.5


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7,), (33,), (4, 129)])
def test_sqrt_and_rsqrt_fuse_bit_identical_to_numpy(dtype, shape, fused_backend):
    rng = np.random.default_rng(11)
    x, m = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    v = np.abs(rng.standard_normal(shape)).astype(dtype)
    v.reshape(-1)[:3] = [0.0, np.inf, -1.0]  # sqrt(eps), inf, NaN
    jf = fresh_jit(normalize)
    got = jf(pijit.Tensor(x), pijit.Tensor(m), pijit.Tensor(v)).asnumpy()
    s = v + dtype(1e-5)
    want = (x - m) * (dtype(1) / np.sqrt(s)) + np.sqrt(s) * dtype(0.5)
    np.testing.assert_array_equal(got, want)
    eager = normalize(pijit.Tensor(x), pijit.Tensor(m), pijit.Tensor(v)).asnumpy()
    np.testing.assert_array_equal(got, eager)
    text = first_graph(jf)
    assert text.count("= fused(") == 1 and "rsqrt(#" in text and " = sqrt(" not in text, text


def log_chain(a, b):
    return ops.log(a * a + b) * b


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(5,), (40,), (3, 257)])
def test_fused_log_matches_eager_exactly_and_numpy_within_its_bound(dtype, shape):
    # Eager log runs the generated log too, so jitted and eager agree bit for bit; against
    # NumPy the generated log is within its documented bound (2e-7 float32, 5e-16 float64).
    rng = np.random.default_rng(12)
    a = rng.standard_normal(shape).astype(dtype)
    b = np.abs(rng.standard_normal(shape)).astype(dtype)
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    flat_a[:4], flat_b[:4] = 0, [0.0, np.inf, -1.0, 1e-30]  # -inf*0 = NaN, inf, NaN, tiny
    jf = fresh_jit(log_chain)
    ta, tb = pijit.Tensor(a), pijit.Tensor(b)
    got = jf(ta, tb).asnumpy()
    np.testing.assert_array_equal(got, log_chain(ta, tb).asnumpy())
    with np.errstate(all="ignore"):
        want = np.log(a * a + b) * b
    # The bound is against the exact log; NumPy's own log and the product each add up to an
    # ulp more.
    tol = (2e-7 if dtype == np.float32 else 5e-16) + 2 * np.finfo(dtype).eps
    np.testing.assert_allclose(got, want, rtol=tol, atol=0)
    text = first_graph(jf)
    assert text.count("= fused(") == 1 and "log(#" in text and " = log(" not in text, text


def inputs_with_specials(shape, dtype, seed, scale, specials):
    """Two random arrays, the first `scale` times wider and starting with the four `specials`."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * scale).astype(dtype)
    w = rng.standard_normal(shape).astype(dtype)
    x.reshape(-1)[:4] = specials
    return x, w


def fused_equals_eager(f, x, w, op):
    """f(x, w) jitted runs as one fused kernel holding both of f's `op` calls, and gives eager's
    result bit for bit; returns it."""
    jf = fresh_jit(f)
    tx, tw = pijit.Tensor(x), pijit.Tensor(w)
    got = jf(tx, tw).asnumpy()
    np.testing.assert_array_equal(got, f(tx, tw).asnumpy())
    text = first_graph(jf)
    assert text.count("= fused(") == 1 and text.count(f"{op}(") == 2, text
    assert f" = {op}(" not in text, text
    return got


def tanh_mlp_tail(h, w):
    return ops.tanh(h * w + 0.5) * 0.5 - ops.tanh(-h)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(9,), (3, 100)])
def test_fused_tanh_matches_eager_exactly_and_numpy_within_its_bound(dtype, shape):
    h, w = inputs_with_specials(shape, dtype, 13, 3, [0.0, -0.0, np.inf, np.nan])
    got = fused_equals_eager(tanh_mlp_tail, h, w, "tanh")
    with np.errstate(all="ignore"):
        want = np.tanh(h * w + dtype(0.5)) * dtype(0.5) - np.tanh(-h)
    # Two tanh values (each within 4e-7 / 1e-15 of the exact one) and NumPy's own errors: the
    # difference can cancel, so compare at the scale of the operands.
    tol = (4e-7 if dtype == np.float32 else 1e-15) * 2 + 4 * np.finfo(dtype).eps
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * 1.5)


def erf_chain(x, w):
    return ops.erf(x * w) * 0.5 + ops.erf(-x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(9,), (3, 100)])
def test_fused_erf_matches_eager_exactly_and_math_within_its_bound(dtype, shape):
    import math
    x, w = inputs_with_specials(shape, dtype, 14, 2, [0.0, -0.0, -np.inf, np.nan])
    got = fused_equals_eager(erf_chain, x, w, "erf")
    verf = np.vectorize(math.erf)
    with np.errstate(all="ignore"):
        want = (verf((x * w).astype(np.float64)) * 0.5 + verf(-x.astype(np.float64)))
    # Each erf within 6e-7 / 1.5e-15 of the exact one; the sum can cancel, so compare at the
    # operands' scale (both at most 1).
    tol = (6e-7 if dtype == np.float32 else 1.5e-15) * 2 + 4 * np.finfo(dtype).eps
    np.testing.assert_allclose(got, want.astype(dtype), rtol=0, atol=tol)
