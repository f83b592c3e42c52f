"""Tensor.__getitem__ with advanced indices (index arrays, boolean masks), gather and take,
compared against NumPy."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pijit as ms
from pijit import ops

SHAPE = (3, 4, 5)
A = np.arange(60, dtype=np.float32).reshape(SHAPE) * 0.5 - 7


def check(index, a=A, as_tensor=False):
    """t[index] against a[index]: values, dtype, shape."""
    t = ms.Tensor(a)
    if as_tensor:
        index = tuple(ms.Tensor(i) if isinstance(i, np.ndarray) else i for i in index)
    got = t[index].asnumpy()
    want = a[tuple(np.asarray(i) if isinstance(i, ms.Tensor) else i for i in index)]
    assert got.dtype == want.dtype and got.shape == want.shape, (index, got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


# ---- hypothesis: index expressions over a (3, 4, 5) tensor -------------------------------------

def _item(axis_size):
    """One index item for an axis of `axis_size`: int, slice, int array or list."""
    ints = st.integers(-axis_size, axis_size - 1)
    return st.one_of(
        ints,
        st.builds(slice, st.none() | st.integers(-6, 6), st.none() | st.integers(-6, 6),
                  st.none() | st.sampled_from([-2, -1, 1, 2, 3])),
        st.lists(ints, min_size=0, max_size=4).map(lambda v: np.array(v, dtype=np.int64)),
        st.lists(ints, min_size=1, max_size=3).map(lambda v: np.array(v, dtype=np.int32).reshape(-1, 1)),
        st.lists(ints, min_size=1, max_size=3),
    )


@st.composite
def index_exprs(draw):
    n = draw(st.integers(1, 3))
    items = [draw(_item(SHAPE[k])) for k in range(n)]
    # Arrays of different lengths do not broadcast: give every array the first one's length,
    # keeping its rank ((n,) and (n, 1) broadcast together).
    length = None
    for k, it in enumerate(items):
        if not isinstance(it, (list, np.ndarray)):
            continue
        arr = np.asarray(it, dtype=np.int64)
        if length is None:
            length = arr.shape[0]
            continue
        flat = np.resize(arr.ravel(), length) if arr.size and length else np.zeros(length, np.int64)
        items[k] = flat.reshape((length,) + arr.shape[1:])
    if draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), None)
    if len(items) < 3 and draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), Ellipsis)
    return tuple(items)


@settings(max_examples=300, deadline=None)
@given(index_exprs(), st.booleans())
def test_getitem_matches_numpy(index, as_tensor):
    check(index, as_tensor=as_tensor)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.booleans(), min_size=12, max_size=12), st.sampled_from(["front", "back", "mid"]))
def test_boolean_masks_match_numpy(bits, where):
    mask2 = np.array(bits).reshape(3, 4)
    for index in {"front": [(mask2,), (mask2, slice(1, None)), (mask2, [0, -1, 2][: int(mask2.sum()) % 3 or 1])],
                  "back": [(Ellipsis, np.array(bits[:5])), (0, slice(None), np.array(bits[:5]))],
                  "mid": [(slice(None), np.array(bits[:4])), (slice(None), np.array(bits[:4]), 1)]}[where]:
        try:
            want = A[index]
        except IndexError:
            with pytest.raises(IndexError):
                ms.Tensor(A)[index]
            continue
        check(index)
        check(index, as_tensor=True)


# ---- NumPy's placement rules and special cases -------------------------------------------------

@pytest.mark.parametrize("index", [
    ([0, 2],),
    ([[0, 1], [2, 0]],),
    (slice(None), [3, 0, 0]),
    ([0, 1], slice(None), [4, 0]),        # separated by a slice: the block goes first
    (0, slice(None), [1, 2]),             # an int counts as an index array
    (slice(None), 1, [1, 2]),             # adjacent int and array: in place
    ([[0], [2]], [1, 3]),                 # broadcasting arrays
    (Ellipsis, [-1, -5]),                 # negative indices
    (None, [1], None, [2]),
    ([1, 2], None, [0, 0]),
    (np.array([], dtype=np.int64),),
    ([],),
    (True,),
    (False, 0),
    (np.array(2),),
    (np.int64(1), [0, 1]),
])
def test_advanced_placement_matches_numpy(index):
    check(index)


def test_index_dtypes_and_sources():
    for dt in (np.bool_, np.int32, np.int64, np.float64):
        a = (np.arange(12).reshape(3, 4) % 3).astype(dt)
        for idx in ([2, 0], np.array([[1], [0]], np.int32), ms.Tensor(np.array([-1, 1], np.int64)),
                    a.astype(bool) if dt != np.bool_ else a):
            want = a[np.asarray(idx) if isinstance(idx, ms.Tensor) else idx]
            got = ms.Tensor(a)[idx].asnumpy()
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_advanced_index_is_a_copy_and_basic_a_view():
    t = ms.Tensor(A.copy())
    c = t[[0, 1]]
    v = t[np.int64(0)]
    t[0, 0, 0] = 1000
    assert c.asnumpy()[0, 0, 0] == A[0, 0, 0]
    assert v.asnumpy()[0, 0] == 1000


def test_index_of_a_non_contiguous_view():
    a = A.transpose(2, 0, 1)[::2, :, 1:]
    check(([2, 0], slice(None), [0, 1]), a=a)
    t = ms.Tensor(A).transpose(2, 0, 1)[::2, :, 1:]
    np.testing.assert_array_equal(t[[2, 0], :, [0, 1]].asnumpy(), a[[2, 0], :, [0, 1]])


def test_indexing_errors_match_numpy_types():
    t = ms.Tensor(A)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        t[[0, 3]]
    with pytest.raises(IndexError, match="index -6 is out of bounds for axis 2 with size 5"):
        t[:, :, ms.Tensor(np.array([-6]))]
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 1 with size 4"):
        t[0, [1, 7]]
    with pytest.raises(IndexError, match=r"could not be broadcast together with shapes \(2,\) \(3,\)"):
        t[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="boolean index did not match indexed tensor along axis 0; "
                                         "size of axis is 3 but size of corresponding boolean axis is 2"):
        t[np.array([True, False])]
    with pytest.raises(IndexError, match="integer .or boolean. type, got float"):
        t[np.array([0.0, 1.0])]
    with pytest.raises(IndexError, match="integer .or boolean. type, got Float32"):
        t[ms.Tensor(np.array([0.0], np.float32))]
    with pytest.raises(IndexError, match="too many indices"):
        t[[0], [0], [0], [0]]
    with pytest.raises(IndexError, match="only integers, slices"):
        t[{"a": 1}]
    with pytest.raises(IndexError, match="only integers, slices"):
        t[0.5, [1]]


# ---- gather / take ------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_gather_matches_take(axis):
    idx = np.array([[1, 0], [-1, 2]]) % SHAPE[axis]
    want = np.take(A, idx, axis)
    np.testing.assert_array_equal(ops.gather(ms.Tensor(A), ms.Tensor(idx), axis).asnumpy(), want)
    np.testing.assert_array_equal(ms.Tensor(A).gather(idx.tolist(), axis=axis).asnumpy(), want)
    np.testing.assert_array_equal(ops.take(ms.Tensor(A), idx, axis=axis).asnumpy(), want)


def test_take_flattens_without_axis():
    np.testing.assert_array_equal(ms.Tensor(A).take([0, 59, -1]).asnumpy(), np.take(A, [0, 59, -1]))


def test_gather_errors():
    with pytest.raises(TypeError, match="gather: indices must be integers, got Bool"):
        ops.gather(ms.Tensor(A), ms.Tensor(np.array([True, False, True])), 0)
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 1 with size 4"):
        ops.gather(ms.Tensor(A), [4], 1)
    with pytest.raises(TypeError, match="gather: indices must be a Tensor, a list or a NumPy array"):
        ops.gather(ms.Tensor(A), 1.5, 0)
