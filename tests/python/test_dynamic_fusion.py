"""Cache entries with symbolic sizes (compiled after a miss in sizes only) get elementwise
fusion: the fused loop takes its shape from its inputs at run time, so one entry serves every
size, including sizes of 1 that broadcast where the captured sizes did not."""
import numpy as np
import pytest

import pijit as ms

from jit_testutil import fresh  # noqa: F401 (autouse fixture)

RTOL = {np.float32: 2e-6, np.float64: 1e-13}  # fused exp vs the eager kernel's


def chain(a, b, c):
    return a * b + c * 0.5 - ms.ops.exp(a) * 2


def masked(a, b):
    return ms.ops.where(a > b, a - b, b * 3) + ms.ops.maximum(a, 0.25)


def fused_graphs(fn):
    return [g for g in ms.get_code_extra(fn)["graphs"] if "fused(" in g]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_varying_batch_sizes_run_one_fused_entry(dtype):
    f = ms.jit(chain, mode="PIJit")
    rng = np.random.default_rng(0)
    for n in [5, 7, 1, 33, 2, 1000, 1, 64]:
        a, b = (ms.Tensor(rng.standard_normal((n, 16)).astype(dtype)) for _ in range(2))
        c = ms.Tensor(rng.standard_normal((1, 16)).astype(dtype))
        got, want = f(a, b, c), chain(a, b, c)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=RTOL[dtype], atol=1e-6)
    stats = ms.get_code_extra(f)
    assert stats["compile_count"] == 2
    assert len(fused_graphs(f)) == 2  # the static first entry and the symbolic one


def test_sizes_that_start_or_stop_broadcasting_match_eager():
    f = ms.jit(masked, mode="PIJit")
    rng = np.random.default_rng(1)
    shapes = [((4, 8), (4, 8)), ((6, 8), (6, 8)), ((1, 8), (5, 8)), ((5, 8), (1, 8)),
              ((3, 1), (3, 8)), ((2, 8), (2, 8)), ((1, 1), (1, 1))]
    for sa, sb in shapes:
        a = ms.Tensor(rng.standard_normal(sa).astype(np.float32))
        b = ms.Tensor(rng.standard_normal(sb).astype(np.float32))
        got, want = f(a, b), masked(a, b)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
    assert fused_graphs(f)


def test_shapes_that_cannot_broadcast_raise_the_eager_error():
    f = ms.jit(masked, mode="PIJit")
    for n in (3, 4, 5):
        f(ms.Tensor(np.ones((n, 2), np.float32)), ms.Tensor(np.ones((n, 2), np.float32)))
    with pytest.raises(ValueError, match="broadcast"):
        masked(ms.Tensor(np.ones((3, 2), np.float32)), ms.Tensor(np.ones((4, 2), np.float32)))
    with pytest.raises(ValueError, match="broadcast"):
        f(ms.Tensor(np.ones((3, 2), np.float32)), ms.Tensor(np.ones((4, 2), np.float32)))


def test_views_and_reductions_in_a_symbolic_graph_keep_their_eager_results():
    def g(x, y):
        z = (x * y + 1).reshape(-1)
        return ms.ops.exp(z) - z.sum() + x.transpose(1, 0).reshape(-1) * 0

    f = ms.jit(g, mode="PIJit")
    rng = np.random.default_rng(2)
    for n in (3, 5, 9, 1, 17):
        x = ms.Tensor(rng.standard_normal((n, 4)).astype(np.float32))
        y = ms.Tensor(rng.standard_normal((n, 4)).astype(np.float32))
        got, want = f(x, y), g(x, y)
        assert got.shape == want.shape
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=2e-6, atol=1e-5)
