"""clip (ReLU6, Hardtanh, ops.clip_by_value) joins fused elementwise loops as np.clip's maximum
then minimum: jitted results equal eager ones bit for bit, NaN, infinities, signed zeros and
values on the bounds included, and the graph holds one loop instead of a separate clip."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops

from fusion_testutil import first_graph, fresh_jit


def _awkward(shape, dtype, seed):
    """Normal values with the cases clip decides on: NaN, +-inf, +-0.0, the bounds 0 and 6."""
    x = np.random.default_rng(seed).standard_normal(shape) * 4
    flat = x.reshape(-1)
    flat[:8] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 6.0, -6.0, 5.999999]
    return x.astype(dtype)


def _bit_equal(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    same = (got == want) & (np.signbit(got) == np.signbit(want))
    np.testing.assert_array_equal(same | (np.isnan(got) & np.isnan(want)), True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu6_after_an_affine_map_is_one_loop_equal_to_eager(dtype):
    relu6 = nn.ReLU6()
    x = ms.Tensor(_awkward((4, 8, 5, 5), dtype, 1))
    scale = ms.Tensor(np.linspace(-2, 2, 8).reshape(1, 8, 1, 1).astype(dtype))
    scale_np = scale.asnumpy()
    scale_np[0, 3] = -0.0

    def f(t, s):
        return relu6(t * s + 1.0) * 0.5

    s = ms.Tensor(scale_np)
    jf = fresh_jit(f)
    _bit_equal(jf(x, s).asnumpy(), f(x, s).asnumpy())
    text = first_graph(jf)
    assert "clip(" not in text and "maximum(0, " in text and "minimum(6, " in text, text


@pytest.mark.parametrize("low,high", [(-1.5, 2.5), (0.0, None), (None, 0.0), (-0.0, 3.0)])
def test_clip_by_value_with_either_bound_fuses_and_matches_eager(low, high):
    x = ms.Tensor(_awkward((3, 33), np.float32, 2))

    def f(t):
        return ops.clip_by_value(t * 2.0, low, high) + 1.0

    jf = fresh_jit(f)
    _bit_equal(jf(x).asnumpy(), f(x).asnumpy())
    assert "clip(" not in first_graph(jf)


def test_clip_with_tensor_bounds_of_another_dtype_stays_a_clip():
    """Float64 bounds promote a float32 x: the loop would need a cast of x inside, so the clip
    stays its own op, results unchanged."""
    x = ms.Tensor(_awkward((2, 16), np.float32, 3))
    lo, hi = ms.Tensor(np.float64(-1.0)), ms.Tensor(np.float64(1.0))

    def f(t):
        return ops.clip_by_value(t * 2.0, lo, hi) + 1.0

    jf = fresh_jit(f)
    _bit_equal(jf(x).asnumpy(), f(x).asnumpy())
    assert "clip(" in first_graph(jf)


def test_a_clip_alone_runs_as_a_loop():
    """A clip between ops that do not fuse (a matrix product before, a reduction after) runs
    as a loop of its own rather than the broadcasting clip kernel."""
    rng = np.random.default_rng(4)
    a = ms.Tensor(rng.standard_normal((16, 8)).astype(np.float32))
    b = ms.Tensor(rng.standard_normal((8, 24)).astype(np.float32))

    def f(p, q):
        return ops.clip_by_value(ops.matmul(p, q), -1.0, 1.0).sum(axis=1)

    jf = fresh_jit(f)
    _bit_equal(jf(a, b).asnumpy(), f(a, b).asnumpy())
    text = first_graph(jf)
    assert "clip(" not in text and "fused" in text, text
