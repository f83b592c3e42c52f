"""pijit.mint's element-wise functions, reductions and creation functions against NumPy
(values, dtypes, torch-style keywords), jitted against eager as one graph, gradients
against central differences, and clear errors for bad arguments."""
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import special

import pijit as ms
from pijit import mint
from jit_testutil import _quiet_numpy  # noqa: F401 (autouse fixture)
from mint_testutil import T, grad_matches, jitted_matches, same

NAMES = Path(__file__).resolve().parents[2] / "docs" / "api_names" / "mint.txt"
# mindspore.mint names left out (none: nonzero and unique, whose output shape depends on the
# data, read it on the host).
LEFT_OUT = set()


@pytest.fixture
def rng():
    return np.random.default_rng(11)


def _resolve(root, dotted):
    for part in dotted.split("."):
        if not hasattr(root, part):
            return None
        root = getattr(root, part)
    return root


def test_every_mint_name_but_the_data_shaped_ones():
    names = [n.strip() for n in NAMES.read_text().splitlines() if n.strip() and
             not n.startswith("#")]
    missing = {n for n in names if _resolve(mint, n) is None}
    assert missing == LEFT_OUT
    assert len(set(mint.__all__)) == len(mint.__all__)
    assert all(hasattr(mint, n) for n in mint.__all__)


# ---- element-wise ------------------------------------------------------------------------------

def test_add_sub_with_alpha(rng):
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(4,))
    same(mint.add(T(a), T(b), alpha=2.5), a + 2.5 * b)
    same(mint.sub(T(a), T(b), alpha=-3), a + 3 * b)
    same(mint.add(T(a), 2.0), a + 2.0)
    same(mint.mul(T(a), T(b)), a * b)
    jitted_matches(lambda x, y: mint.sub(mint.add(x, y, alpha=2), y, alpha=0.5), T(a), T(b))
    with pytest.raises(TypeError, match="alpha"):
        mint.add(T(a), T(b), alpha="2")


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
def test_div_rounding_modes(mode):
    a = np.array([7.0, -7.0, 7.5, -7.5, 3.0])
    b = np.array([2.0, 2.0, -2.0, -2.0, 4.0])
    expected = {None: a / b, "trunc": np.trunc(a / b), "floor": np.floor(a / b)}[mode]
    same(mint.div(T(a), T(b), rounding_mode=mode), expected)
    same(mint.divide(T(a), T(b), rounding_mode=mode), expected)
    ai, bi = a.astype(np.int32), b.astype(np.int32)
    if mode is not None:  # integers stay integers when rounded (truncation toward zero)
        want = np.trunc(ai / bi) if mode == "trunc" else np.floor_divide(ai, bi)
        same(mint.div(T(ai), T(bi), rounding_mode=mode), want.astype(np.int32))
    jitted_matches(lambda x, y: mint.div(x, y, rounding_mode=mode), T(a), T(b))


def test_div_rejects_an_unknown_rounding_mode():
    with pytest.raises(ValueError, match="rounding_mode"):
        mint.div(T([1.0]), T([2.0]), rounding_mode="round")


def test_clamp_one_or_both_bounds(rng):
    a = rng.normal(size=(5,))
    same(mint.clamp(T(a), -0.5, 0.5), np.clip(a, -0.5, 0.5))
    same(mint.clamp(T(a), min=0.1), np.maximum(a, 0.1))
    same(mint.clamp(T(a), max=0.1), np.minimum(a, 0.1))
    with pytest.raises(ValueError, match="min and max"):
        mint.clamp(T(a))


def test_erfinv_values_edges_and_gradient():
    x = np.array([-0.999, -0.5, -1e-6, 0.0, 0.3, 0.9, 0.99999])
    same(mint.erfinv(T(x)), special.erfinv(x), rtol=1e-12, atol=1e-12)
    x32 = x.astype(np.float32)  # the reference at the float32 inputs themselves
    same(mint.erfinv(T(x32)), special.erfinv(x32.astype(np.float64)).astype(np.float32),
         rtol=1e-5, atol=1e-6)
    same(mint.erfinv(T([-1.0, 1.0, 1.5, np.nan])), np.array([-np.inf, np.inf, np.nan, np.nan]))
    same(mint.erfinv(T([0, 1], np.int32)), np.array([0.0, np.inf], np.float32))
    # d/dx erfinv(x) = sqrt(pi) / 2 * exp(erfinv(x)^2)
    grad_matches(mint.erfinv, np.array([-0.8, -0.1, 0.2, 0.7]), rtol=1e-5)
    jitted_matches(mint.erfinv, T(x))


def test_atan2_isclose_where_and_the_aliases(rng):
    y, x = rng.normal(size=(4,)), rng.normal(size=(4,))
    same(mint.atan2(T(y), T(x)), np.arctan2(y, x))
    same(mint.arctan2(T(y), T(x)), np.arctan2(y, x))
    b = y + np.array([0.0, 1e-9, 1e-3, 0.0])
    same(mint.isclose(T(y), T(b)), np.isclose(y, b))
    same(mint.where(T(x > 0), T(x), T(y)), np.where(x > 0, x, y))
    same(mint.negative(T(x)), -x)
    same(mint.isfinite(T([1.0, np.inf, np.nan])), np.array([True, False, False]))
    same(mint.silu(T(x)), x / (1 + np.exp(-x)))
    for name, ref in [("eq", np.equal), ("ne", np.not_equal), ("gt", np.greater),
                      ("le", np.less_equal), ("lt", np.less), ("greater_equal", np.greater_equal),
                      ("maximum", np.maximum), ("minimum", np.minimum), ("pow", None)]:
        if ref is not None:
            same(getattr(mint, name)(T(y), T(x)), ref(y, x))
    same(mint.pow(T(np.abs(y)), T(x)), np.abs(y) ** x)
    jitted_matches(lambda a, b: mint.atan2(a, b) + mint.where(a > b, a, b), T(y), T(x))


# ---- reductions --------------------------------------------------------------------------------

@pytest.mark.parametrize("name, ref", [("sum", np.sum), ("mean", np.mean), ("prod", np.prod)])
@pytest.mark.parametrize("dim, keepdim", [(None, False), (1, False), (-1, True), ((0, 2), True)])
def test_reductions_with_dim_and_keepdim(rng, name, ref, dim, keepdim):
    if name == "prod" and isinstance(dim, tuple):
        dim = 0
    a = rng.uniform(0.5, 1.5, size=(2, 3, 4))
    fn = getattr(mint, name)
    same(fn(T(a), dim, keepdim), ref(a, axis=dim, keepdims=keepdim), rtol=1e-12)
    same(fn(T(a), dim=dim, keepdim=keepdim, dtype=ms.float32),
         ref(a.astype(np.float32), axis=dim, keepdims=keepdim), rtol=1e-6)
    jitted_matches(lambda x: fn(x, dim, keepdim), T(a))
    grad_matches(lambda x: fn(x, dim, keepdim), a)


def test_sum_of_integers_is_int64_and_bad_dims_raise():
    a = np.array([[1, 2], [3, 4]], np.int32)
    same(mint.sum(T(a)), np.array(10, np.int64))
    with pytest.raises(ValueError, match="dim"):
        mint.sum(T(a), dim=2)
    with pytest.raises(TypeError, match="dim"):
        mint.mean(T(a.astype(np.float32)), dim=1.0)
    with pytest.raises(TypeError, match="keepdim"):
        mint.sum(T(a), 0, keepdim=1)


@pytest.mark.parametrize("name, ref, arg", [("max", np.max, np.argmax),
                                            ("min", np.min, np.argmin)])
def test_max_min_forms(rng, name, ref, arg):
    a = rng.normal(size=(3, 5))
    a[1, 3] = a[1, 1] = 9.0 if name == "max" else -9.0  # the first of equal extremes
    fn = getattr(mint, name)
    same(fn(T(a)), ref(a))
    values, indices = fn(T(a), 1)
    same((values, indices), (ref(a, 1), arg(a, 1)))
    values, indices = fn(T(a), dim=0, keepdim=True)
    same((values, indices), (ref(a, 0, keepdims=True), np.expand_dims(arg(a, 0), 0)))
    b = rng.normal(size=(5,))
    same(fn(T(a), T(b)), (np.maximum if name == "max" else np.minimum)(a, b))
    jitted_matches(lambda x: fn(x, 1, True), T(a))
    grad_matches(lambda x: fn(x, 1)[0], a)
    with pytest.raises(ValueError, match="keepdim"):
        fn(T(a), keepdim=True)


def test_argmax_all_any_cumsum(rng):
    a = rng.normal(size=(3, 4))
    same(mint.argmax(T(a)), np.argmax(a))
    same(mint.argmax(T(a), 1, keepdim=True), np.argmax(a, 1)[:, None])
    same(mint.argmax(T(a), keepdim=True), np.argmax(a).reshape(1, 1))
    same(mint.all(T(a > -1), 1), np.all(a > -1, 1))
    same(mint.any(T(a > 1), dim=0, keepdim=True), np.any(a > 1, 0, keepdims=True))
    same(mint.cumsum(T(a), 1), np.cumsum(a, 1), rtol=1e-12)
    same(mint.cumsum(T(a), dim=-2, dtype=ms.float32), np.cumsum(a.astype(np.float32), 0))
    same(mint.cumsum(T(np.arange(4, dtype=np.int32)), 0), np.cumsum(np.arange(4)).astype(np.int32))
    grad_matches(lambda x: mint.cumsum(x, 0), a)
    jitted_matches(lambda x: (mint.argmax(x, 0), mint.cumsum(x, 1), mint.any(x > 0)), T(a))


# ---- creation ----------------------------------------------------------------------------------

def test_creation_defaults_and_sizes():
    same(mint.zeros(2, 3), np.zeros((2, 3), np.float32))
    same(mint.ones((2, 3), dtype=ms.int32), np.ones((2, 3), np.int32))
    same(mint.eye(3), np.eye(3, dtype=np.float32))
    same(mint.eye(2, 4, ms.float64), np.eye(2, 4))
    same(mint.arange(5), np.arange(5))
    same(mint.arange(1, 2, 0.25), np.arange(1, 2, 0.25, dtype=np.float32))
    x = T(np.arange(6.0).reshape(2, 3))
    same(mint.zeros_like(x), np.zeros((2, 3)))
    same(mint.ones_like(x, dtype=ms.int32), np.ones((2, 3), np.int32))
    with pytest.raises(ValueError, match="size"):
        mint.zeros(2, -1)
    with pytest.raises(ValueError, match="step"):
        mint.arange(0, 3, 0)
    jitted_matches(lambda t: t + mint.ones(2, 3) + mint.eye(2, 3), x)


def test_random_draws_are_seeded_and_distributed():
    ms.set_seed(5)
    first = mint.rand(2000).asnumpy()
    ms.set_seed(5)
    np.testing.assert_array_equal(mint.rand((2000,)).asnumpy(), first)
    assert first.dtype == np.float32 and 0.0 <= first.min() and first.max() < 1.0
    assert abs(first.mean() - 0.5) < 0.03
    like = mint.rand_like(T(np.zeros((3, 2))))
    assert like.shape == (3, 2) and like.dtype == ms.float64
    draws = mint.normal(T(np.full(4000, 3.0)), 2.0).asnumpy()
    assert abs(draws.mean() - 3.0) < 0.15 and abs(draws.std() - 2.0) < 0.15
    assert mint.normal(0.0, 1.0, (2, 5)).shape == (2, 5)
    assert mint.normal(T(np.zeros((3, 1))), T(np.ones(4))).shape == (3, 4)
    with pytest.raises(ValueError, match="generator"):
        mint.rand(3, generator=object())
    with pytest.raises(ValueError, match="size"):
        mint.normal(0.0, 1.0)


def test_float_function_aliases_are_the_native_ops():
    x = np.linspace(0.2, 2.0, 7)
    for name, ref in [("abs", np.abs), ("ceil", np.ceil), ("cos", np.cos), ("exp", np.exp),
                      ("floor", np.floor), ("log", np.log), ("reciprocal", np.reciprocal),
                      ("rsqrt", lambda v: 1 / np.sqrt(v)), ("sin", np.sin), ("sqrt", np.sqrt),
                      ("square", np.square), ("tanh", np.tanh),
                      ("sigmoid", lambda v: 1 / (1 + np.exp(-v))),
                      ("erf", np.vectorize(math.erf))]:
        same(getattr(mint, name)(T(x)), ref(x), rtol=1e-12)
    same(mint.logical_and(T(x > 1), T(x < 1.5)), (x > 1) & (x < 1.5))
    same(mint.logical_or(T(x > 1), T(x < 0.5)), (x > 1) | (x < 0.5))
    same(mint.logical_not(T(x > 1)), ~(x > 1))
