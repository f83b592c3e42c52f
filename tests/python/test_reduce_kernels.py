"""Float32/float64 reductions, softmax and layer norm against NumPy on the shapes that pick each
kernel path: vector tails, odd sizes, empty axes, NaN/inf, sizes past the parallel threshold
and the chunk size, leading/middle/trailing axes and non-contiguous views."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops
from pijit_testutil import assert_matches_numpy
import nn_reference as ref

FLOATS = [np.float32, np.float64]
T = ms.Tensor

# Past rvec::kParallelMin (2^17) and several rvec::kChunk (2^15) chunks, with an odd tail.
BIG = (1 << 17) * 3 + 13


def reference(name, a, axis, ddof=0):
    """NumPy's result computed in float64 (NumPy's float32 column sums are less accurate than
    pijit's double accumulation), returned in a's dtype."""
    with np.errstate(all="ignore"):
        if name in ("var", "std"):
            r = getattr(np, name)(a.astype(np.float64), axis=axis, ddof=ddof)
        else:
            r = getattr(np, name)(a.astype(np.float64), axis=axis)
    return np.asarray(r).astype(a.dtype)


def tol(dtype):
    return dict(rtol=2e-6, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)


SHAPES_AXES = [
    ((1,), None), ((7,), None), ((33,), 0), ((BIG,), None),
    ((3, 5), 1), ((3, 5), 0), ((17, 300), 1), ((17, 300), 0), ((300, 17), 0),
    ((5, 70001), 1), ((70001, 5), 0), ((2, 3, 4), 1), ((31, 9, 513), 1), ((4, 5, 6, 7), (1, 2)),
    ((4, 5, 6, 7), (0, 2)), ((4, 5, 6, 7), (0, 3)), ((6, 1, 9), (0, 1)), ((600, 300), None),
    ((1, 1, 1), None), ((1000, 300), 0), ((2, 4000, 70), 1),  # partial rows folded in order
    # Reduced axes on both sides of the kept ones (batch norm's statistics): rows read in place.
    ((8, 16, 9, 9), (0, 2, 3)), ((5, 3, 4, 40), (0, 3)), ((3, 1, 6, 2, 33), (0, 4)),
    ((4, 7, 1, 17), (0, 3)), ((2, 3, 15), (0, 2)),  # a row under 16: the row-wise layout
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", SHAPES_AXES)
@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "var", "std"])
def test_reduction_matches_numpy(dtype, shape, axis, name):
    a = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    got = getattr(ops, name)(T(a), axis)
    want = reference({"amax": "max", "amin": "min"}.get(name, name), a, axis)
    if name in ("amax", "amin"):
        assert_matches_numpy(got, want, rtol=0)  # exact
    else:
        assert_matches_numpy(got, want, **tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", [((9,), None), ((3, 17), 1), ((17, 3), 0), ((2, 5, 3), 1)])
def test_prod_matches_numpy(dtype, shape, axis):
    a = np.random.default_rng(2).uniform(0.5, 1.5, shape).astype(dtype)
    assert_matches_numpy(ops.prod(T(a), axis), reference("prod", a, axis), **tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_sum_is_at_least_as_accurate_as_numpy_pairwise(dtype):
    a = (np.random.default_rng(3).random(BIG) + 1e3).astype(dtype)
    exact = np.sum(a.astype(np.longdouble))
    err = abs(float(T(a).sum().asnumpy()) - exact)
    assert err <= abs(float(a.sum()) - exact) + abs(float(exact)) * np.finfo(dtype).eps / 2


@pytest.mark.parametrize("dtype", FLOATS)
def test_sum_of_large_input_is_deterministic(dtype):
    a = np.random.default_rng(4).standard_normal(BIG).astype(dtype)
    t = T(a)
    first = t.sum().asnumpy()
    for _ in range(5):
        assert t.sum().asnumpy().tobytes() == first.tobytes()


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("view", ["transposed", "strided", "sliced"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reduction_of_non_contiguous_views(dtype, view, axis):
    base = np.random.default_rng(5).standard_normal((40, 70)).astype(dtype)
    take = {"transposed": lambda x: x.T, "strided": lambda x: x[::3, ::2],
            "sliced": lambda x: x[1:-1, 3:]}[view]
    t = {"transposed": lambda x: x.T, "strided": lambda x: x[::3, ::2],
         "sliced": lambda x: x[1:-1, 3:]}[view](T(base))
    a = take(base)
    for name in ("sum", "mean", "var"):
        assert_matches_numpy(getattr(ops, name)(t, axis), reference(name, a, axis), **tol(dtype))
    assert_matches_numpy(ops.amax(t, axis), reference("max", a, axis), rtol=0)
    if axis is not None:
        assert_matches_numpy(ops.argmax(t, axis), np.argmax(a, axis))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [1, 5, 8, 33, BIG])
def test_nan_and_inf_follow_numpy(dtype, n):
    a = np.random.default_rng(6).standard_normal(n).astype(dtype)
    a[n // 2] = np.inf
    assert_matches_numpy(ops.amax(T(a)), np.max(a), rtol=0)
    assert_matches_numpy(ops.sum(T(a)), np.asarray(np.inf, dtype))
    if n > 1:
        a[0] = -np.inf
    a[n - 1] = np.nan
    for name in ("sum", "mean", "amax", "amin", "var"):
        assert np.isnan(getattr(ops, name)(T(a)).asnumpy()), name
    assert int(ops.argmax(T(a)).asnumpy()) == n - 1
    assert int(ops.argmin(T(a)).asnumpy()) == n - 1


@pytest.mark.parametrize("dtype", FLOATS)
def test_argmax_returns_the_first_nan_and_the_first_tie(dtype):
    a = np.array([[1, 3, 3, 0, np.nan, 2, np.nan, 1, 3],
                  [5, 1, 5, 1, 5, -1, -1, 0, 0]], dtype)
    for f, nf in ((ops.argmax, np.argmax), (ops.argmin, np.argmin)):
        for axis in (0, 1, None):
            assert_matches_numpy(f(T(a), axis), nf(a, axis))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", [((BIG,), None), ((3, 70001), 1), ((70001, 3), 0),
                                        ((17, 301), 1), ((4, 6, 9), 1)])
def test_argmax_argmin_match_numpy(dtype, shape, axis):
    a = np.random.default_rng(7).standard_normal(shape).astype(dtype)
    assert_matches_numpy(ops.argmax(T(a), axis), np.argmax(a, axis))
    assert_matches_numpy(ops.argmin(T(a), axis), np.argmin(a, axis))


@pytest.mark.parametrize("dtype", FLOATS)
def test_empty_reductions(dtype):
    a = np.zeros((4, 0), dtype)
    assert_matches_numpy(ops.sum(T(a), 1), np.zeros(4, dtype))
    assert_matches_numpy(ops.prod(T(a), 1), np.ones(4, dtype))
    assert np.isnan(ops.mean(T(a), 1).asnumpy()).all()
    assert np.isnan(ops.var(T(a), 1).asnumpy()).all()
    assert_matches_numpy(ops.sum(T(a), 0), np.zeros(0, dtype))
    with pytest.raises(ValueError, match="identity"):
        ops.amax(T(a), 1)


@pytest.mark.filterwarnings("ignore:Degrees of freedom")
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ddof", [0, 1, 3])
def test_var_ddof(dtype, ddof):
    a = np.random.default_rng(8).standard_normal((5, 3, 40)).astype(dtype) + 100
    for axis in (None, 0, 1, 2):
        assert_matches_numpy(ops.var(T(a), axis, ddof=ddof), reference("var", a, axis, ddof),
                             **tol(dtype))
        assert_matches_numpy(ops.std(T(a), axis, ddof=ddof), reference("std", a, axis, ddof),
                             **tol(dtype))


# ---- softmax -------------------------------------------------------------------------------

def np_softmax(a, axis, log):
    a = a.astype(np.float64)
    with np.errstate(all="ignore"):
        m = np.max(a, axis=axis, keepdims=True)
        m = np.where(np.isneginf(m), 0, m)
        e = np.exp(a - m)
        s = e.sum(axis=axis, keepdims=True)
        return (a - m - np.log(s)) if log else e / s


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape,axis", [((1,), 0), ((7,), 0), ((3, 33), 1), ((4096, 17), -1),
                                        ((2, BIG), 1), ((65, 4, 9), 1), ((65, 4, 9), 0),
                                        ((300, 513), -1)])
def test_softmax_matches_numpy(dtype, log, shape, axis):
    a = (np.random.default_rng(9).standard_normal(shape) * 10).astype(dtype)
    got = (ops.log_softmax if log else ops.softmax)(T(a), axis)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    assert_matches_numpy(got, np_softmax(a, axis, log).astype(dtype), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_nan_and_inf_rows(dtype, log):
    a = np.array([[0, 1, 2, 3, 4, 5, 6, 7, 8],
                  [-np.inf] * 9,
                  [1, np.nan, 2, 3, 4, 5, 6, 7, 8],
                  [1, np.inf, 2, 3, 4, 5, 6, 7, 8],
                  [-np.inf, 0, -np.inf, 1, 2, 3, 4, 5, 6]], dtype)
    got = (ops.log_softmax if log else ops.softmax)(T(a), -1)
    assert_matches_numpy(got, np_softmax(a, -1, log).astype(dtype), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("n", [1000, 1024])
def test_softmax_large_float32_results_match_numpy(log, n):
    # Over 8 MB: rows are written with streamed stores where the CPU has AVX-512 (rows of
    # 1000 floats alternate between 64-byte aligned starts and others).
    a = (np.random.default_rng(14).standard_normal((2100, n)) * 10).astype(np.float32)
    a[5, 17] = np.nan
    a[6] = -np.inf
    got = (ops.log_softmax if log else ops.softmax)(T(a), -1)
    assert_matches_numpy(got, np_softmax(a, -1, log).astype(np.float32), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_of_non_contiguous_view(dtype):
    a = np.random.default_rng(10).standard_normal((50, 40)).astype(dtype)
    assert_matches_numpy(ops.softmax(T(a).T, -1), np_softmax(a.T, -1, False).astype(dtype),
                         rtol=1e-5, atol=1e-7)


# ---- layer norm ----------------------------------------------------------------------------

def np_layer_norm(x, k, gamma, beta, eps):
    """Layer norm over the last k axes of x, in float64."""
    return ref.layer_norm(x, x.shape[x.ndim - k:], gamma, beta, eps)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,k", [((3, 7), 1), ((64, 64), 1), ((9, 300), 1), ((2, 5, 257), 2),
                                     ((300, 33), 1), ((5, 1024), 1), ((1, 1), 1)])
@pytest.mark.parametrize("affine", ["none", "gamma", "beta", "both"])
def test_layer_norm_matches_numpy(dtype, shape, k, affine):
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    ns = shape[-k:]
    g = rng.standard_normal(ns).astype(dtype) if affine in ("gamma", "both") else None
    b = rng.standard_normal(ns).astype(dtype) if affine in ("beta", "both") else None
    got = ops.layer_norm(T(x), ns, None if g is None else T(g), None if b is None else T(b))
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    assert_matches_numpy(got, np_layer_norm(x, k, g, b, 1e-5), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("affine", ["none", "both"])
def test_layer_norm_large_float32_results_match_numpy(affine):
    # Over 8 MB: streamed stores where the CPU has AVX-512; rows of 1000 floats alternate
    # between 64-byte aligned starts and others.
    rng = np.random.default_rng(15)
    x = (rng.standard_normal((2100, 1000)) * 3 + 1).astype(np.float32)
    x[7, 3] = np.nan
    g = rng.standard_normal(1000).astype(np.float32) if affine == "both" else None
    b = rng.standard_normal(1000).astype(np.float32) if affine == "both" else None
    got = ops.layer_norm(T(x), (1000,), None if g is None else T(g), None if b is None else T(b))
    assert np.isnan(got.asnumpy()[7]).all()
    assert_matches_numpy(got, np_layer_norm(x, 1, g, b, 1e-5), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", FLOATS)
def test_layer_norm_non_contiguous_and_nan(dtype):
    x = np.random.default_rng(12).standard_normal((40, 30)).astype(dtype)
    assert_matches_numpy(ops.layer_norm(T(x).T, (40,)), np_layer_norm(x.T, 1, None, None, 1e-5),
                         rtol=1e-4, atol=1e-5)
    x[3, 7] = np.nan
    got = ops.layer_norm(T(x), (30,)).asnumpy()
    assert np.isnan(got[3]).all() and not np.isnan(np.delete(got, 3, axis=0)).any()


def test_reductions_jitted_equal_eager():
    a = np.random.default_rng(13).standard_normal((300, 513)).astype(np.float32)

    def f(x):
        return ops.sum(x, 1) + ops.amax(x, 1) + ops.var(x, 1) + ops.softmax(x, -1).sum(0)[:300]

    jf = ms.jit(f, mode="PIJit")
    want = f(T(a)).asnumpy()
    np.testing.assert_array_equal(jf(T(a)).asnumpy(), want)


@pytest.mark.parametrize("dtype", FLOATS)
def test_reductions_around_kept_axes_propagate_nan_and_keep_dims(dtype):
    a = np.random.default_rng(2).standard_normal((6, 4, 5, 20)).astype(dtype)
    a[2, 1, 3, 7] = np.nan
    for name in ("sum", "mean", "amax", "amin"):
        got = getattr(ops, name)(T(a), (0, 2, 3), True) if name in ("sum", "mean") else getattr(ops, name)(T(a), (0, 2, 3))
        want = reference({"amax": "max", "amin": "min"}.get(name, name), a, (0, 2, 3))
        want = want.reshape(1, 4, 1, 1) if name in ("sum", "mean") else want
        assert_matches_numpy(got, want, **tol(dtype))
        assert np.isnan(got.asnumpy()).ravel()[1] and not np.isnan(got.asnumpy()).ravel()[0]
