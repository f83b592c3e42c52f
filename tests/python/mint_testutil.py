"""Shared checks of the pijit.mint tests: values against NumPy, jitted against eager as one
graph, and gradients against central finite differences."""
import numpy as np

import pijit as ms


def T(a, dtype=None):
    return ms.Tensor(np.asarray(a, dtype=dtype))


def flat(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


def same(got, expected, dtype=None, rtol=1e-6, atol=1e-12):
    """`got` (a Tensor or a sequence of them) has NumPy's values and shape, and the NumPy
    dtype `dtype` (expected's own by default)."""
    if isinstance(got, (tuple, list)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            same(g, e, dtype, rtol, atol)
        return
    assert isinstance(got, ms.Tensor), type(got)
    expected = np.asarray(expected)
    want = np.dtype(dtype) if dtype is not None else expected.dtype
    assert np.dtype(got.dtype.to_numpy()) == want, (got.dtype, want)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if want.kind == "f":
        np.testing.assert_allclose(got.asnumpy(), expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got.asnumpy(), expected)


def jitted_matches(fn, *args, graphs=1):
    """fn under pijit.jit gives fn's eager result, captured without a graph break."""
    eager = fn(*args)
    jf = ms.jit(fn)
    ms.reset(jf)
    got = jf(*args)
    stats = ms.get_code_extra(jf)
    assert stats["total_break_count"] == 0, stats["all_reasons"]
    assert stats["compile_count"] == 1, stats
    for e, g in zip(flat(eager), flat(got), strict=True):
        assert e.dtype == g.dtype and e.shape == g.shape
        np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-12, atol=1e-12,
                                   equal_nan=True)
    return got


def grad_matches(fn, a, eps=1e-6, rtol=1e-6, atol=1e-7):
    """pijit.grad of sum(fn(x) * weights) at the float64 array `a` against central finite
    differences (fixed pseudo-random weights make every output element count differently)."""
    weights = None

    def loss(t):
        nonlocal weights
        out = fn(t)
        if weights is None:
            weights = T(np.random.default_rng(3).uniform(0.5, 1.5, out.shape))
        return (out * weights).sum()

    got = ms.grad(loss)(T(a, np.float64)).asnumpy()
    numeric = np.zeros_like(a, dtype=np.float64)
    for i in np.ndindex(*a.shape):
        up, down = a.astype(np.float64), a.astype(np.float64)
        up[i] += eps
        down[i] -= eps
        numeric[i] = (float(loss(T(up)).asnumpy()) - float(loss(T(down)).asnumpy())) / (2 * eps)
    np.testing.assert_allclose(got, numeric, rtol=rtol, atol=atol)
