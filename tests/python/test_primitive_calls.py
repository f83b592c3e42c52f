"""Primitive instances call their op natively (pijit/csrc/primitive_py.cc): results, the
attributes passed as keywords, subclasses, copying, errors and references."""
import copy
import pickle
import sys

import numpy as np
import pytest

import pijit
from pijit import ops


def t(*shape):
    return pijit.Tensor(np.arange(np.prod(shape), dtype=np.float32).reshape(shape) - 2)


def test_simple_primitive_equals_function():
    x, y = t(2, 3), t(2, 3) * 0.5
    for prim, fn in ((ops.Add(), np.add), (ops.Mul(), np.multiply), (ops.Sub(), np.subtract)):
        np.testing.assert_array_equal(prim(x, y).asnumpy(), fn(x.asnumpy(), y.asnumpy()))
    np.testing.assert_allclose(ops.Exp()(x).asnumpy(), np.exp(x.asnumpy()), rtol=1e-6)


def test_attributes_are_keywords_of_the_op():
    x = t(2, 3)
    keep = ops.ReduceSum(keep_dims=True)
    np.testing.assert_array_equal(keep(x, 1).asnumpy(), x.asnumpy().sum(1, keepdims=True))
    drop = ops.ReduceSum()
    np.testing.assert_array_equal(drop(x, 1).asnumpy(), x.asnumpy().sum(1))
    # A call's own keywords come before the attributes.
    np.testing.assert_array_equal(keep(x, axis=0).asnumpy(), x.asnumpy().sum(0, keepdims=True))


def test_subclass_with_call_keeps_it_and_subclass_without_takes_op():
    calls = []

    class Twice(ops.Primitive):
        def __call__(self, x):
            calls.append(1)
            return x * 2

    class MyAdd(ops.Primitive):
        _pijit_op = staticmethod(ops.add)

    x = t(3)
    np.testing.assert_array_equal(Twice()(x).asnumpy(), x.asnumpy() * 2)
    assert calls == [1]
    np.testing.assert_array_equal(MyAdd()(x, x).asnumpy(), x.asnumpy() * 2)


def test_primitive_without_op_is_a_type_error():
    class Empty(ops.Primitive):
        pass

    with pytest.raises(TypeError, match="Empty: a primitive without an op"):
        Empty()(t(2))


def test_bad_kwargs_is_a_type_error():
    class Bad(ops.Primitive):
        _pijit_op = staticmethod(ops.add)

        def _pijit_kwargs(self):
            return [1]

    with pytest.raises(TypeError, match="must return a dict, got list"):
        Bad()(t(2), t(2))


def test_copy_and_pickle():
    x = t(2, 3)
    keep = ops.ReduceSum(keep_dims=True)
    keep(x, 1)  # resolved before copying: the copy resolves again
    for other in (copy.deepcopy(keep), copy.copy(keep), pickle.loads(pickle.dumps(keep))):
        assert type(other) is ops.ReduceSum and other.keep_dims is True
        np.testing.assert_array_equal(other(x, 1).asnumpy(), keep(x, 1).asnumpy())
    assert repr(keep) == "ReduceSum(keep_dims=True)"


def test_attributes_fixed():
    with pytest.raises(AttributeError, match="fixed at construction"):
        ops.Add().foo = 1


def test_call_leaks_no_reference():
    add, x, y = ops.ReduceSum(keep_dims=True), t(4), t(4)
    add(x, 0)
    before = (sys.getrefcount(add), sys.getrefcount(x), sys.getrefcount(ops.sum))
    for _ in range(100):
        add(x, 0)
    assert (sys.getrefcount(add), sys.getrefcount(x), sys.getrefcount(ops.sum)) == before


def test_primitive_is_collected():
    import gc
    import weakref

    prim = ops.ReduceSum(keep_dims=True)
    prim(t(3), 0)
    ref = weakref.ref(prim)
    cycle = [prim]
    object.__setattr__(prim, "_cycle", cycle)  # a cycle through the instance dict
    del prim, cycle
    gc.collect()
    assert ref() is None


def test_captured_call_equals_eager():
    add, keep = ops.Add(), ops.ReduceSum(keep_dims=True)

    def f(x, y):
        return keep(add(x, y), 1)

    x, y = t(2, 3), t(2, 3)
    jf = pijit.jit(f)
    np.testing.assert_array_equal(jf(x, y).asnumpy(), f(x, y).asnumpy())
    assert pijit.get_code_extra(jf)["break_count"] == 0
