"""ops.bessel_j0 .. bessel_k1e and their primitives against scipy.special over the whole
domain (the series, trapezoid and asymptotic regions and their seams), in float32 and
float64, jitted against eager, with gradients checked by central differences."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops

special = pytest.importorskip("scipy.special")

FUNCTIONS = {
    "bessel_j0": special.j0, "bessel_j1": special.j1, "bessel_y0": special.y0,
    "bessel_y1": special.y1, "bessel_k0": special.k0, "bessel_k0e": special.k0e,
    "bessel_k1": special.k1, "bessel_k1e": special.k1e,
}
PRIMITIVES = {"BesselJ0": "bessel_j0", "BesselJ1": "bessel_j1", "BesselY0": "bessel_y0",
              "BesselY1": "bessel_y1", "BesselK0": "bessel_k0", "BesselK0e": "bessel_k0e",
              "BesselK1": "bessel_k1", "BesselK1e": "bessel_k1e"}
# Both sides of every seam (2, 12, 15), tiny and huge arguments.
POSITIVE = np.concatenate([np.logspace(-6, 4, 400), [1.999, 2.0, 2.001, 11.999, 12.0, 12.001,
                                                     14.999, 15.0, 15.001, 1e5]])


def _domain(name):
    if name in ("bessel_j0", "bessel_j1"):
        return np.concatenate([-POSITIVE[::7], POSITIVE])
    return POSITIVE


def _assert_close(got, want, rtol, atol):
    # J and Y oscillate: near their zeros only an absolute error is meaningful.
    scale = np.maximum(np.abs(want), atol / rtol)
    assert np.max(np.abs(got - want) / scale) <= rtol


@pytest.mark.parametrize("name", FUNCTIONS)
def test_float64_matches_scipy(name):
    x = _domain(name)
    got = getattr(ops, name)(ms.Tensor(x)).asnumpy()
    assert got.dtype == np.float64
    _assert_close(got, FUNCTIONS[name](x), 1e-9, 1e-11)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_float32_matches_scipy_to_float32_rounding(name):
    x = _domain(name).astype(np.float32)
    got = getattr(ops, name)(ms.Tensor(x)).asnumpy()
    assert got.dtype == np.float32
    want = FUNCTIONS[name](x.astype(np.float64))
    _assert_close(got.astype(np.float64), want, 2e-7, 1e-8)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_special_values_follow_scipy(name):
    x = np.array([0.0, -1.0, np.nan, np.inf])
    got = getattr(ops, name)(ms.Tensor(x)).asnumpy()
    want = FUNCTIONS[name](x)
    want[3] = 0.0  # the limit at infinity (SciPy's J and Y give nan there)
    np.testing.assert_allclose(got, want, rtol=1e-14)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_jit_equals_eager(name):
    fn = getattr(ops, name)

    def f(t):
        return fn(t) * 2.0

    x = ms.Tensor(np.array([0.5, 3.0, 13.0, 40.0], np.float32))
    jf = ms.jit(f, capture_mode="bytecode")
    for _ in range(2):
        np.testing.assert_array_equal(jf(x).asnumpy(), f(x).asnumpy())
    stats = ms.get_code_extra(jf)
    assert stats["total_break_count"] == 0, stats["all_reasons"]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_gradient_matches_central_differences(name):
    fn = getattr(ops, name)
    x = np.array([0.3, 1.7, 2.5, 8.0, 13.0, 30.0])
    weights = ms.Tensor(np.linspace(0.5, 1.5, x.size))

    def loss(t):
        return (fn(t) * weights).sum()

    got = ms.grad(loss)(ms.Tensor(x)).asnumpy()
    eps = 1e-6
    want = (FUNCTIONS[name](x + eps) - FUNCTIONS[name](x - eps)) / (2 * eps) \
        * np.linspace(0.5, 1.5, x.size)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    jitted = ms.jit(ms.grad(loss), capture_mode="bytecode")(ms.Tensor(x)).asnumpy()
    np.testing.assert_allclose(jitted, got, rtol=1e-12)


def test_j1_gradient_at_zero_is_one_half():
    got = ms.grad(lambda t: ops.bessel_j1(t).sum())(ms.Tensor(np.array([0.0])))
    np.testing.assert_allclose(got.asnumpy(), [0.5])


@pytest.mark.parametrize("primitive", PRIMITIVES)
def test_primitives_call_the_functions(primitive):
    x = ms.Tensor(np.array([0.25, 5.0, 20.0], np.float32))
    np.testing.assert_array_equal(getattr(ops, primitive)()(x).asnumpy(),
                                  getattr(ops, PRIMITIVES[primitive])(x).asnumpy())


@pytest.mark.parametrize("name", FUNCTIONS)
def test_bad_arguments_raise(name):
    fn = getattr(ops, name)
    with pytest.raises(TypeError, match=name):
        fn([1.0, 2.0])
    with pytest.raises(TypeError, match=name):
        fn(ms.Tensor(np.array([1, 2], np.int32)))
