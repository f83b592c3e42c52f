"""Indexing in captured code (jit and capture regions) against eager runs, and gradients of
advanced indexing."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops

A = np.arange(20, dtype=np.float32).reshape(4, 5) * 0.25 - 1


def fresh():
    return ms.Tensor(A.copy())


def reasons(jf):
    return [r["category"] for r in ms.get_code_extra(jf)["all_reasons"]]


def all_graphs(jf):
    return "".join(ms.get_code_extra(jf)["all_graphs"])


# ---- __getitem__ ---------------------------------------------------------------------------------

def gather_rows(x, i):
    return x[i, 1:] * 2 + x[[0, 3]].sum() + ops.gather(x, i, 1) + x[:, i].transpose()


def test_tensor_index_is_an_adv_index_node_without_a_break():
    jf = ms.jit(gather_rows, mode="PIJit")
    for idx in ([2, 0, -1, 3], [1, 1, 0, 0]):
        i = ms.Tensor(np.array(idx))
        np.testing.assert_allclose(jf(fresh(), i).asnumpy(), gather_rows(fresh(), i).asnumpy())
    assert "adv_index" in all_graphs(jf)
    assert reasons(jf) == []


def test_out_of_range_index_in_jit_raises_like_eager():
    jf = ms.jit(gather_rows, mode="PIJit")
    jf(fresh(), ms.Tensor(np.array([0, 1, 2, 3])))
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 4"):
        jf(fresh(), ms.Tensor(np.array([0, 7, 2, 3])))


def masked(x):
    y = x * 2
    return x[x > 0.5] + 1, y[:, [True, False, True, False, True]].sum(1)


def test_boolean_mask_breaks_the_graph_and_is_right():
    jf = ms.jit(masked, mode="PIJit")
    for scale in (1.0, -1.0, 3.0):
        x = ms.Tensor(A * scale)
        got, want = jf(x), masked(x)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g.asnumpy(), w.asnumpy())
    assert "data_dependent" in reasons(jf)


def numpy_index(x):
    return x[np.array([1, 0])] * 2


def test_numpy_array_index_runs_in_python_and_is_right():
    jf = ms.jit(numpy_index, mode="PIJit")
    np.testing.assert_allclose(jf(fresh()).asnumpy(), A[[1, 0]] * 2)
    np.testing.assert_allclose(jf(fresh()).asnumpy(), A[[1, 0]] * 2)


def test_capture_region_indexing_matches_eager():
    def body(x, i):
        return x[i][:, [0, 4]] - x[..., i[:2]].sum()
    x, i = fresh(), ms.Tensor(np.array([3, 1, 2]))
    with ms.capture():
        got = body(x, i)
    np.testing.assert_allclose(got.asnumpy(), body(x, i).asnumpy())


# ---- __setitem__: mutation visible to the caller and to later code ------------------------------

def assign_then_read(x, v):
    before = x + 1
    x[0] = v
    x[:, 1] = 0
    x[[2, 3], [4, 4]] = -v
    after = x * 3
    return before, after


@pytest.mark.parametrize("v", [100.0, 5.0, -2.0])
def test_setitem_in_jit_mutates_the_callers_tensor(v):
    jf = ms.jit(assign_then_read, mode="PIJit")
    for _ in range(2):  # a second call runs from the cache
        t, e = fresh(), fresh()
        got, want = jf(t, v), assign_then_read(e, v)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.asnumpy(), w.asnumpy())
        np.testing.assert_array_equal(t.asnumpy(), e.asnumpy())
    assert "tensor_mutation" in reasons(jf)


def write_through_view(x):
    v = x[1]
    s = v.sum()
    v[0] = -5.0
    m = x[[1]]
    x[x < 0] = 0.0
    return x * 1, s, m


def test_setitem_through_a_view_in_jit():
    jf = ms.jit(write_through_view, mode="PIJit")
    for _ in range(2):
        t, e = fresh(), fresh()
        got, want = jf(t), write_through_view(e)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.asnumpy(), w.asnumpy())
        np.testing.assert_array_equal(t.asnumpy(), e.asnumpy())


def overlap(x):
    x[1:] = x[:-1] * 2
    return x.sum()


def test_overlapping_setitem_in_jit_matches_numpy():
    jf = ms.jit(overlap, mode="PIJit")
    t = fresh()
    a = A.copy()
    a[1:] = a[:-1] * 2
    np.testing.assert_allclose(jf(t).asnumpy(), a.sum(), rtol=1e-6)
    np.testing.assert_array_equal(t.asnumpy(), a)


def test_setitem_of_a_computed_tensor_does_not_touch_the_input():
    def f(x):
        r = x * 1
        r[0] = 50.0
        return r
    jf = ms.jit(f, mode="PIJit")
    t = fresh()
    np.testing.assert_array_equal(jf(t).asnumpy(), f(fresh()).asnumpy())
    np.testing.assert_array_equal(t.asnumpy(), A)


def test_setitem_errors_in_jit_match_eager():
    def f(x):
        y = x + 1
        x[[0, 1]] = ms.Tensor(np.ones(3, np.float32))
        return y
    jf = ms.jit(f, mode="PIJit")
    with pytest.raises(ValueError, match="could not broadcast a value of shape"):
        jf(fresh())


def test_strict_mode_reports_tensor_mutation():
    def f(x):
        x[0] = 1.0
        return x + 1
    jf = ms.jit(f, fullgraph=True)
    with pytest.raises(Exception, match="t\\[index\\] = value"):
        jf(fresh())


# ---- gradients -------------------------------------------------------------------------------------

def test_grad_of_advanced_index_is_scatter_add():
    idx = [0, 3, 0, 0]

    def f(x):
        return (x[idx, 1:] ** 2).sum() + ops.gather(x, ms.Tensor(np.array([4, 4])), 1).sum() \
            + x[x > 2.0].sum() + x[[True, False, True, False], 0].sum() + ops.take(x, [1, 1]).sum()
    got = ms.grad(f)(fresh()).asnumpy()
    want = np.zeros_like(A)
    np.add.at(want, (idx, slice(1, None)), 2 * A[idx, 1:])
    want[:, 4] += 2
    want += A > 2.0
    want[[0, 2], 0] += 1
    want[0, 1] += 2
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_grad_of_jitted_indexing_matches_eager():
    def f(x, i):
        return (x[i] * x[i]).sum()
    i = ms.Tensor(np.array([[1, 1], [2, 0]]))
    want = ms.grad(f)(fresh(), i).asnumpy()
    got = ms.grad(ms.jit(f, mode="PIJit"))(fresh(), i).asnumpy()
    np.testing.assert_allclose(got, want)
    expected = np.zeros_like(A)
    np.add.at(expected, [1, 1, 2, 0], 2 * A[[1, 1, 2, 0]])
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_setitem_on_a_recorded_tensor_is_a_clear_error():
    def f(x):
        y = x * 2
        y[0] = 0.0
        return y.sum()
    with pytest.raises(Exception, match="__setitem__ writes in place into a tensor the gradient tape records"):
        ms.grad(f)(fresh())
