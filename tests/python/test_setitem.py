"""Tensor.__setitem__ for every index form, compared against NumPy's assignment."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pijit as ms

from test_indexing import SHAPE, index_exprs

A = np.arange(60, dtype=np.float32).reshape(SHAPE) - 20


def check_set(index, value, a=A):
    """t[index] = value against a[index] = value (on copies): the whole tensor afterwards."""
    want = a.copy()
    t = ms.Tensor(a.copy())
    np_index = tuple(np.asarray(i) if isinstance(i, ms.Tensor) else i for i in index) \
        if isinstance(index, tuple) else index
    np_value = value.asnumpy() if isinstance(value, ms.Tensor) else value
    try:
        want[np_index] = np_value
    except (ValueError, IndexError) as e:  # NumPy refuses: pijit must refuse the same way
        with pytest.raises(type(e)):
            t[index] = value
        np.testing.assert_array_equal(t.asnumpy(), a)  # and leave the tensor unchanged
        return
    t[index] = value
    got = t.asnumpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@settings(max_examples=300, deadline=None)
@given(index_exprs(), st.sampled_from(["scalar", "full", "row", "tensor"]))
def test_setitem_matches_numpy(index, kind):
    # NumPy assigns repeated indices in order (the last write wins); so does pijit.
    shape = A[index].shape
    if kind == "scalar":
        value = 3.5
    elif kind == "full":
        value = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    elif kind == "row":
        value = np.arange(shape[-1] if shape else 1, dtype=np.int64)
    else:
        value = ms.Tensor(np.full(shape, -1.25, np.float32))
    check_set(index, value)


@pytest.mark.parametrize("index", [
    1, (0, 2), slice(1, None), (Ellipsis, 0), (slice(None), slice(None, None, -2)),
    [0, 2], ([0, 1], slice(None), [4, 0]), (0, slice(None), [1, 2]), (None, 1),
    A > 10, (A[:, :, 0] > 0,), (slice(None), np.array([True, False, True, False])),
])
def test_setitem_forms(index):
    check_set(index, 0.0)
    check_set(index, -7)
    if isinstance(index, tuple):
        check_set(tuple(ms.Tensor(i) if isinstance(i, np.ndarray) else i for i in index), 9.0)


def test_basic_setitem_writes_through_views():
    t = ms.Tensor(A.copy())
    v = t[1]
    w = t[:, 2]
    t[1, 2] = 100
    assert v.asnumpy()[2, 0] == 100 and w.asnumpy()[1, 0] == 100
    v[0] = -1                       # through a view into its base
    assert (t.asnumpy()[1, 0] == -1).all()
    t.transpose()[0, 0] = 55        # a non-contiguous view
    assert t.asnumpy()[0, 0, 0] == 55


def test_setitem_into_numpy_backed_tensor_writes_the_array():
    a = A.copy()
    t = ms.Tensor(a)  # shares a's memory
    t[0, 0, :] = 1
    np.testing.assert_array_equal(t.asnumpy()[0, 0], np.ones(5, np.float32))


@pytest.mark.parametrize("dst,src", [
    (slice(1, None), slice(None, -1)),
    (slice(None, -1), slice(1, None)),
    (slice(None, None, -1), slice(None)),
])
def test_overlapping_assignment_matches_numpy(dst, src):
    t = ms.Tensor(A.copy())
    a = A.copy()
    t[dst] = t[src]
    a[dst] = a[src]
    np.testing.assert_array_equal(t.asnumpy(), a)
    t[[2, 0, 1]] = t[[0, 1, 2]]
    a[[2, 0, 1]] = a[[0, 1, 2]]
    np.testing.assert_array_equal(t.asnumpy(), a)


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.int64, np.float32, np.float64])
@pytest.mark.parametrize("value", [True, 3, -2.75, np.float32(1.5), [1, 0, 2, 5]])
def test_setitem_casts_like_numpy(dtype, value):
    a = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    check_set((slice(None), slice(None)), value, a=a)
    check_set(([0, 2],), np.array(value, dtype=np.float64), a=a)
    check_set((1,), ms.Tensor(np.array(value)), a=a)


def test_setitem_value_with_leading_unit_axes():
    check_set((0,), np.ones((1, 1, 4, 5)))


def test_setitem_errors():
    t = ms.Tensor(A.copy())
    with pytest.raises(ValueError, match=r"could not broadcast a value of shape \(3,\) into the "
                                         r"indexed shape \(2, 4, 5\)"):
        t[[0, 1]] = np.ones(3)
    with pytest.raises(ValueError, match=r"shape \(2, 2\) into the indexed shape \(5,\)"):
        t[0, 0] = ms.Tensor(np.ones((2, 2)))
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        t[3] = 1
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 2 with size 5"):
        t[..., [9]] = 1
    with pytest.raises(IndexError, match="only integers, slices"):
        t["x"] = 1
    with pytest.raises(IndexError, match="boolean index did not match"):
        t[np.array([True])] = 1
    i = ms.Tensor(np.zeros(3, np.int32))
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        i[0] = float("nan")
    with pytest.raises(OverflowError, match="out of bounds for Int32"):
        i[0] = 2 ** 40
    with pytest.raises(ValueError):
        t[0] = "abc"
    np.testing.assert_array_equal(t.asnumpy(), A)  # failed assignments change nothing
