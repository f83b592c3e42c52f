"""Shared checks of the pijit.mint, pijit.numpy, ops and nn tests: values against NumPy,
jitted against eager as one graph, gradients against central finite differences, and a test
that runs all three over a table of cases."""
import numpy as np
import pytest

import pijit as ms

from gradcheck_util import tensor_central_differences


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


def jitted_equals_eager(fn, *args):
    """fn, giving one Tensor, captured by bytecode as one graph gives fn's eager result,
    which it returns."""
    eager = fn(*args)
    jf = ms.jit(fn, capture_mode="bytecode")
    ms.reset(jf)
    got = jf(*args)
    stats = ms.get_code_extra(jf)
    assert stats["total_break_count"] == 0, stats["all_reasons"]
    assert stats["graph_count"] == 1, stats
    np.testing.assert_allclose(got.asnumpy(), eager.asnumpy(), rtol=1e-12, atol=1e-12)
    return eager


def grad_matches(fn, a, eps=1e-6, rtol=1e-6, atol=1e-7, weighted=True):
    """pijit.grad of sum(fn(x) * weights) at the float64 array `a` against central finite
    differences (fixed pseudo-random weights make every output element count differently;
    weighted=False sums the outputs as they are)."""
    weights = None

    def loss(t):
        nonlocal weights
        out = fn(t)
        if not weighted:
            return out.sum()
        if weights is None:
            weights = T(np.random.default_rng(3).uniform(0.5, 1.5, out.shape))
        return (out * weights).sum()

    a = np.asarray(a, dtype=np.float64)
    got = ms.grad(loss)(T(a)).asnumpy()
    np.testing.assert_allclose(got, tensor_central_differences(loss, a, eps, to_tensor=T),
                               rtol=rtol, atol=atol)


def jitted_call_matches(fn, *args):
    """jitted_matches for any callable (a primitive, a Cell, a Python function): what is
    jitted is a Python function that calls it."""
    return jitted_matches(lambda *a: fn(*a), *args)


def check_against_numpy(fn, reference, inputs, differentiable, jitted=jitted_call_matches):
    """fn of the arrays `inputs` (as Tensors) has the values and dtype of NumPy's `reference`,
    `jitted(fn, *tensors)` checks it jitted, and, where `differentiable`, its gradient in the
    first input is the one central differences give."""
    with np.errstate(all="ignore"):
        want = reference(*inputs)
    want_dtype = None if isinstance(want, tuple) else np.asarray(want).dtype
    same(fn(*[T(a) for a in inputs]), want, dtype=want_dtype, rtol=1e-9, atol=1e-12)
    jitted(fn, *[T(a) for a in inputs])
    if differentiable:
        rest = [T(a) for a in inputs[1:]]
        grad_matches(lambda x: fn(x, *rest), inputs[0], rtol=1e-5, atol=1e-6)


def against_numpy_test(cases, jitted=jitted_call_matches):
    """A test, parametrized by `cases` (id, fn, NumPy reference, input arrays, differentiable),
    that runs check_against_numpy on each; the case's id names its run."""
    @pytest.mark.parametrize("case", cases, ids=[c[0] for c in cases])
    def test(case):
        _, fn, reference, inputs, differentiable = case
        check_against_numpy(fn, reference, inputs, differentiable, jitted)
    return test
