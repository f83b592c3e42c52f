"""The direct number and comparison slots of pijit.Tensor (+, -, *, / and comparisons on
tensors and Python scalars): same results, errors and reference counts as the general path
(pijit.ops), and the general path still serves subclasses, NumPy scalars and a recording tape."""
import gc
import operator
import sys

import numpy as np
import pytest

import pijit
from pijit import Tensor, ops

BINARY = [
    (operator.add, ops.add), (operator.sub, ops.sub), (operator.mul, ops.mul),
    (operator.truediv, ops.div), (operator.eq, ops.equal), (operator.ne, ops.not_equal),
    (operator.lt, ops.less), (operator.le, ops.less_equal), (operator.gt, ops.greater),
    (operator.ge, ops.greater_equal),
]


def same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


@pytest.mark.parametrize("py_op, op", BINARY)
def test_tensor_operands_match_the_op(py_op, op):
    x = Tensor(np.array([1.5, -2.0, 3.0, 0.5], np.float32))
    y = Tensor(np.array([2.0, -2.0, 1.0, 4.0], np.float32))
    same(py_op(x, y), op(x, y))


@pytest.mark.parametrize("py_op, op", BINARY)
@pytest.mark.parametrize("scalar", [2, 2.5, True, -1])
def test_python_scalar_on_either_side_matches_the_op(py_op, op, scalar):
    x = Tensor(np.array([1, 2, 3], np.int32))
    same(py_op(x, scalar), op(x, scalar))
    same(py_op(scalar, x), op(scalar, x))


def test_mixed_dtypes_and_broadcasting_match_the_op():
    x = Tensor(np.ones((2, 3), np.int32))
    y = Tensor(np.arange(3, dtype=np.float32))
    same(x + y, ops.add(x, y))
    same(x / x, ops.div(x, x))


def test_errors_are_unchanged():
    x = Tensor(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="broadcast"):
        x + Tensor(np.ones((4,), np.float32))
    with pytest.raises(OverflowError, match="out of bounds"):
        Tensor(np.ones(2, np.uint8)) + 1000
    with pytest.raises(TypeError):
        Tensor(np.ones(2, np.bool_)) - Tensor(np.ones(2, np.bool_))
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(TypeError):
        "a" * x
    assert (x == "a") is False and (x != "a") is True


def test_numpy_scalars_and_arrays_take_the_general_path():
    x = Tensor(np.array([1, 2], np.int8))
    same(x + np.int8(3), ops.add(x, np.int8(3)))
    assert (x + np.float64(0.5)).dtype == pijit.float64


def test_subclasses_and_reflected_overrides_are_honoured():
    class Mine(Tensor):
        def __radd__(self, other):
            return "radd"

    x = Tensor(np.ones(2, np.float32))
    m = Mine(np.ones(2, np.float32))
    assert x + m == "radd"
    p = pijit.Parameter(np.ones(2, np.float32), name="p")
    same(x + p, ops.add(x, p))
    same(p * x, ops.mul(p, x))


def test_operators_record_on_a_tape():
    x = Tensor(np.array([1.0, 2.0], np.float32))
    grad = pijit.grad(lambda a: ops.sum(a * a + 3.0 * a))
    np.testing.assert_allclose(grad(x).asnumpy(), [5.0, 7.0])


def test_refcounts_are_unchanged_by_many_operator_calls():
    x = Tensor(np.arange(4, dtype=np.float32))
    y = Tensor(np.ones(4, np.float32))
    s = 2.5
    gc.collect()
    start = (sys.getrefcount(x), sys.getrefcount(y), sys.getrefcount(s))
    for _ in range(2000):
        x + y, x - y, x * s, s / x, x == y, x < 1
        r = x + y
        assert sys.getrefcount(r) == 2
    del r
    gc.collect()
    assert (sys.getrefcount(x), sys.getrefcount(y), sys.getrefcount(s)) == start


def test_results_are_freed():
    import weakref
    x = Tensor(np.ones(4, np.float32))
    r = x + x
    ref = weakref.ref(r)
    del r
    assert ref() is None
