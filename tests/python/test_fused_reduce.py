"""Reductions of elementwise chains in jitted functions (sum, mean, max, min) run as one
fused_reduce loop that never stores the chain's values, and match the eager results bit for
bit (within the fused exp's documented error where exp is involved), also when the inputs'
layout makes the kernel materialise the chain first (broadcasts, strided views, leading axes)."""
import numpy as np
import pytest

import pijit
from pijit import ops

from fusion_testutil import fresh_jit

EXP_RTOL = {np.float32: 4e-7, np.float64: 1e-15}  # kFusedExpRelTol (kernels/fused.h)


def _graphs(jf):
    return "\n".join(pijit.get_code_extra(jf)["graphs"])


@pytest.fixture(params=["auto", "interpreter"])
def fused_backend(request, monkeypatch):
    """Runs the test with generated code and again with the fused-program interpreter."""
    if request.param == "interpreter":
        monkeypatch.setenv("PIJIT_FUSED_BACKEND", "interpreter")
    return request.param


def dot(a, b):
    return (a * b).sum()


def mse(a, b):
    return ((a - b) * (a - b)).mean()


def scaled_min(a, b):
    return (a * 2.0 - b).min()


def relu_max(a, b):
    return ops.relu(a - b * 0.5).max()


def row_mse(a, b):
    return ((a - b) * (a - b)).mean(axis=-1, keepdims=True)


def row_sum(a, b):
    return (a * b + a).sum(axis=-1)


def column_sum(a, b):
    return (a * b + a).sum(axis=0)


def shifted_exp_max(a, m):
    return ops.exp(a - m).max()


def _arrays(shape, dtype, seed, special=False):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(dtype)
    b = rng.standard_normal(shape).astype(dtype)
    if special and a.size >= 8:
        flat = a.reshape(-1)
        flat[[1, a.size // 2, a.size - 2]] = [np.inf, -0.0, -np.inf]
        b.reshape(-1)[3] = np.nan
    return a, b


def _check(fn, args, expect_fused=True):
    jf = fresh_jit(fn)
    tensors = [pijit.Tensor(x) if isinstance(x, np.ndarray) else x for x in args]
    got, want = jf(*tensors), fn(*tensors)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
    assert ("fused_reduce(" in _graphs(jf)) == expect_fused, _graphs(jf)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [dot, mse, scaled_min, relu_max])
@pytest.mark.parametrize("shape", [(1,), (7,), (1003,), (3, 17), (2, 3, 5), (40000,), (140000,)])
def test_full_reductions_match_eager_exactly(fn, shape, dtype, fused_backend):
    _check(fn, _arrays(shape, dtype, seed=len(shape) * 7 + shape[-1]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [dot, mse, scaled_min, relu_max])
def test_special_values_match_eager_exactly(fn, dtype, fused_backend):
    _check(fn, _arrays((5000,), dtype, seed=1, special=True))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [row_mse, row_sum])
@pytest.mark.parametrize("shape", [(1, 9), (4, 37), (3, 40000), (300, 65), (2, 3, 5)])
def test_last_axis_reductions_match_eager_exactly(fn, shape, dtype, fused_backend):
    _check(fn, _arrays(shape, dtype, seed=shape[0]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exp_of_shifted_values_within_fused_exp_tolerance(dtype, fused_backend):
    rng = np.random.default_rng(2)
    a = pijit.Tensor(rng.standard_normal(70000).astype(dtype))
    m = pijit.Tensor(np.array(0.5, dtype=dtype))
    jf = fresh_jit(shifted_exp_max)
    np.testing.assert_allclose(jf(a, m).asnumpy(), shifted_exp_max(a, m).asnumpy(),
                               rtol=EXP_RTOL[dtype], atol=0)
    assert "fused_reduce(" in _graphs(jf)


def test_partial_broadcast_stays_unfused():
    a, b = _arrays((6, 17), np.float32, seed=3)
    _check(mse, (a, b[:1]), expect_fused=False)  # b broadcast along axis 0


def middle_mean(a, b):
    return ops.maximum(a - b, b).mean(axis=1, keepdims=True)


def outer_axes_min(a, b):
    return (a * b - a).min(axis=(0, 2))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(6, 17), (300, 600), (9000, 37), (40, 5000)])
def test_leading_axis_reductions_match_eager_exactly(shape, dtype, fused_backend):
    # A bias gradient's shape of reduction: the eager column schedule, rows computed in a buffer.
    _check(column_sum, _arrays(shape, dtype, seed=5, special=True))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_middle_axis_reductions_match_eager_exactly(dtype, fused_backend):
    _check(middle_mean, _arrays((4, 300, 6), dtype, seed=6, special=True))
    _check(middle_mean, _arrays((2, 70000, 3), dtype, seed=7))
    _check(outer_axes_min, _arrays((3, 4, 5), dtype, seed=8), expect_fused=False)  # axes apart


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_strided_arguments_take_the_materialising_path(dtype, fused_backend):
    a, b = _arrays((40, 33), dtype, seed=4)
    at = pijit.Tensor(a).T  # a strided view: the kernel cannot read it as a span
    assert not at.is_contiguous()
    for fn in (mse, dot, row_sum, scaled_min):
        jf = fresh_jit(fn)
        bt = pijit.Tensor(np.ascontiguousarray(b.T))
        got, want = jf(at, bt), fn(at, bt)
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())


def transposed_sse(a, b):
    at = ops.transpose(a, (1, 0))
    return ((at - b) * (at - b)).sum()


def test_transpose_inside_the_function_matches_eager(fused_backend):
    a, b = _arrays((20, 30), np.float64, seed=5)
    _check(transposed_sse, (a, np.ascontiguousarray(b.T)), expect_fused=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_symbolic_sizes_match_eager_at_every_size(dtype):
    jf = fresh_jit(mse)
    rng = np.random.default_rng(6)
    for n in [100, 37, 1, 70000, 5]:
        a = pijit.Tensor(rng.standard_normal((n, 4)).astype(dtype))
        b = pijit.Tensor(rng.standard_normal((n, 4)).astype(dtype))
        np.testing.assert_array_equal(jf(a, b).asnumpy(), mse(a, b).asnumpy())
        c = pijit.Tensor(rng.standard_normal((1, 4)).astype(dtype))  # broadcast at run time
        np.testing.assert_array_equal(jf(a, c).asnumpy(), mse(a, c).asnumpy())
    assert pijit.get_code_extra(jf)["compile_count"] >= 2
    assert "fused_reduce(" in _graphs(jf)


def test_reduction_of_an_output_chain_keeps_the_chain():
    def f(a, b):
        d = a * b - a
        return d, d.sum()

    a, b = _arrays((1000,), np.float32, seed=7)
    jf = fresh_jit(f)
    ta, tb = pijit.Tensor(a), pijit.Tensor(b)
    (gd, gs), (wd, ws) = jf(ta, tb), f(ta, tb)
    np.testing.assert_array_equal(gd.asnumpy(), wd.asnumpy())
    np.testing.assert_array_equal(gs.asnumpy(), ws.asnumpy())
    assert "fused_reduce(" not in _graphs(jf)
