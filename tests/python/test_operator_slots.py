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


# The slots added for the remaining operators, against NumPy (an independent reference).
MORE_BINARY = [
    (operator.floordiv, np.floor_divide), (operator.mod, np.mod), (operator.pow, np.power),
]
BITWISE = [(operator.and_, np.bitwise_and), (operator.or_, np.bitwise_or),
           (operator.xor, np.bitwise_xor)]


@pytest.mark.parametrize("py_op, np_op", MORE_BINARY)
def test_arithmetic_slots_match_numpy(py_op, np_op):
    a = np.array([1.5, -2.0, 3.0, 0.5], np.float32)
    b = np.array([2.0, -3.0, 1.0, 4.0], np.float32)
    np.testing.assert_allclose(py_op(Tensor(a), Tensor(b)).asnumpy(), np_op(a, b), rtol=1e-6)
    np.testing.assert_allclose(py_op(Tensor(a), 2).asnumpy(), np_op(a, np.float32(2)), rtol=1e-6)
    np.testing.assert_allclose(py_op(3, Tensor(b)).asnumpy(), np_op(np.float32(3), b), rtol=1e-6)


@pytest.mark.parametrize("py_op, np_op", BITWISE)
def test_bitwise_slots_match_numpy(py_op, np_op):
    a, b = np.array([1, 6, -3], np.int32), np.array([3, 5, 7], np.int32)
    np.testing.assert_array_equal(py_op(Tensor(a), Tensor(b)).asnumpy(), np_op(a, b))
    np.testing.assert_array_equal(py_op(Tensor(a), 12).asnumpy(), np_op(a, np.int32(12)))
    m, n = np.array([True, False, True]), np.array([True, True, False])
    np.testing.assert_array_equal(py_op(Tensor(m), Tensor(n)).asnumpy(), np_op(m, n))


def test_matmul_slot_matches_numpy_and_rejects_scalars():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    np.testing.assert_allclose((Tensor(a) @ Tensor(b)).asnumpy(), a @ b, rtol=1e-6)
    np.testing.assert_allclose((Tensor(a[0]) @ Tensor(b)).asnumpy(), a[0] @ b, rtol=1e-6)
    with pytest.raises(TypeError):
        Tensor(a) @ 2
    with pytest.raises((TypeError, ValueError), match="matmul"):
        Tensor(a) @ Tensor(a)


def test_unary_slots_match_numpy():
    f = np.array([1.5, -2.0, 0.0], np.float32)
    i = np.array([1, -6, 0], np.int64)
    np.testing.assert_array_equal((-Tensor(f)).asnumpy(), -f)
    np.testing.assert_array_equal(abs(Tensor(f)).asnumpy(), np.abs(f))
    np.testing.assert_array_equal((~Tensor(i)).asnumpy(), ~i)
    np.testing.assert_array_equal((~Tensor(i > 0)).asnumpy(), ~(i > 0))


def test_three_argument_pow_is_refused():
    with pytest.raises(TypeError):
        pow(Tensor(np.array([2], np.int64)), 2, 5)


def test_new_slots_keep_refcounts():
    x = Tensor(np.array([1.0, 2.0], np.float32))
    m = Tensor(np.eye(2, dtype=np.float32))
    for fn in (lambda: x ** 2, lambda: x // 2, lambda: x % 2, lambda: m @ m, lambda: -x, lambda: abs(x)):
        fn()
        before = (sys.getrefcount(x), sys.getrefcount(m))
        for _ in range(50):
            fn()
        assert (sys.getrefcount(x), sys.getrefcount(m)) == before
