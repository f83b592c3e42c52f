"""Tensor methods written in Python (pijit's own, set on Tensor at import) are inlined into
captured graphs like any Python function, guarded on the class attribute; and the methods
itemset and resize against NumPy."""
import numpy as np
import pytest

import pijit as ms
from pijit import Tensor

X = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.0


def _one_graph(fn, *args):
    """fn jitted gives fn's eager result in one graph without a break."""
    jf = ms.jit(fn, capture_mode="bytecode")
    ms.reset(jf)
    want = fn(*args)
    for _ in range(2):
        got = jf(*args)
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
        assert got.dtype == want.dtype
    extra = ms.get_code_extra(jf)
    assert extra["total_break_count"] == 0 and extra["graph_count"] == 1, extra["all_reasons"]
    return jf


@pytest.mark.parametrize("method", [
    lambda t: t.roll(1, 0),
    lambda t: t.fill(2.5),
    lambda t: t.copy() * 2,
    lambda t: t.addmm(t[:, :3], t[:3, :]),
    lambda t: t.flip(1).narrow(0, 1, 2),
    lambda t: t.itemset((1, 2), 9.0).resize(2, 7),
])
def test_python_tensor_methods_are_inlined(method):
    _one_graph(method, Tensor(X))


def test_replacing_a_method_on_the_class_recompiles():
    fn = lambda t: t.ptp(1)  # noqa: E731
    jf = _one_graph(fn, Tensor(X))
    original = Tensor.ptp
    try:
        Tensor.ptp = lambda self, axis=None, keepdims=False: self.sum(axis) * 0 - 1.0
        np.testing.assert_array_equal(jf(Tensor(X)).asnumpy(), np.full((3,), -1.0, np.float32))
    finally:
        Tensor.ptp = original
    np.testing.assert_array_equal(jf(Tensor(X)).asnumpy(), np.ptp(X, axis=1))


def test_a_method_a_subclass_overrides_runs_its_own():
    class Mine(Tensor):
        def roll(self, shifts, dims=None):
            return self * 0 + 7.0

    fn = lambda t: t.roll(1, 0)  # noqa: E731
    t = Mine(X)
    np.testing.assert_array_equal(ms.jit(fn, capture_mode="bytecode")(t).asnumpy(), fn(t).asnumpy())


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64])
@pytest.mark.parametrize("index, value", [((1, 2), 9.7), (5, -3), (-1, 4.0), ((-3, -4), 1)])
def test_itemset_against_numpy(dtype, index, value):
    a = X.astype(dtype)
    want = a.copy()
    if isinstance(index, tuple):
        want[index] = value
    else:
        want.reshape(-1)[index] = value
    t = Tensor(a)
    got = t.itemset(index, value)
    np.testing.assert_array_equal(got.asnumpy(), want)
    np.testing.assert_array_equal(t.asnumpy(), a)  # self is unchanged


def test_itemset_of_a_one_element_tensor_and_errors():
    np.testing.assert_array_equal(Tensor(np.array([[2.0]])).itemset(5.5).asnumpy(), [[5.5]])
    with pytest.raises(ValueError, match="one argument sets a one-element tensor"):
        Tensor(X).itemset(1.0)
    with pytest.raises(IndexError, match="out of range"):
        Tensor(X).itemset(12, 1.0)
    with pytest.raises(IndexError, match="axis 1"):
        Tensor(X).itemset((0, 4), 1.0)
    with pytest.raises(TypeError, match="index must be an int or a tuple of 2 ints"):
        Tensor(X).itemset((0,), 1.0)
    with pytest.raises(TypeError, match=r"expected \(value\) or \(index, value\)"):
        Tensor(X).itemset()


@pytest.mark.parametrize("shape", [(2, 7), (12,), (1, 3), (5,), (4, 4), ((2, 2),), ([20],), (0,)])
def test_resize_against_numpy(shape):
    want = X.copy()
    new = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    want.resize(tuple(new), refcheck=False)  # NumPy's in-place resize pads with zeros
    got = Tensor(X).resize(*shape)
    np.testing.assert_array_equal(got.asnumpy(), want)
    with pytest.raises(ValueError, match="new_shape"):
        Tensor(X).resize(-1, 2)
