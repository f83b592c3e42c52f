"""pijit's result dtypes against MindSpore's rules, written down in ms_dtypes: the full table of
two tensors (all ten dtypes, bfloat16 included) for add, mul, maximum, where, concat, matmul
and true division; Python scalars; float functions and reductions; the places where these
rules lose precision that NumPy's would keep. Where the mindspore package is installed the
rules themselves are checked against MindSpore."""
import numpy as np
import pytest

import pijit as ms
import ms_dtypes
from ms_dtypes import (ALL_DTYPES, BFLOAT16, float_function_dtype, reduction_dtype,
                       result_dtype, true_division_dtype, with_python_scalar)
from pijit import ops
from pijit_testutil import MS_OF_NP, np_dtype

PIJIT_OF = dict(MS_OF_NP)
if BFLOAT16 is not None:
    PIJIT_OF[BFLOAT16] = ms.bfloat16
# Small values, exact in every dtype (bool: nonzero is True), so that results of every dtype
# can be compared exactly after widening to float64.
A_VALUES = np.array([[1, 0], [2, 3]])
B_VALUES = np.array([[2, 1], [0, 1]])
CONDITION = np.array([[True, False], [False, True]])


def tensor(values, dtype):
    return ms.Tensor(values.astype(dtype))


def widened(t):
    """A pijit tensor's values as float64 (bfloat16 too, through pijit's own cast)."""
    return t.astype(ms.float64).asnumpy()


def assert_dtype_and_values(got, rt, expected_float64):
    """`got` has dtype rt and the values of a float64 computation rounded to rt."""
    assert np_dtype(got) == rt, f"dtype {got.dtype} != {PIJIT_OF[rt]}"
    expected = np.asarray(expected_float64).astype(rt).astype(np.float64)
    np.testing.assert_array_equal(widened(got), expected)


# Each binary op: pijit's call and the NumPy computation of its values in float64.
BINARY_OPS = {
    "add": (lambda x, y: x + y, np.add),
    "mul": (ops.mul, np.multiply),
    "maximum": (ops.maximum, np.maximum),
    "where": (lambda x, y: ops.where(ms.Tensor(CONDITION), x, y),
              lambda x, y: np.where(CONDITION, x, y)),
    "concat": (lambda x, y: ops.concat((x, y), 1), lambda x, y: np.concatenate((x, y), 1)),
    "matmul": (lambda x, y: x @ y, np.matmul),
}


@pytest.mark.parametrize("op", BINARY_OPS)
@pytest.mark.parametrize("da", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("db", ALL_DTYPES, ids=str)
def test_binary_ops_follow_the_promotion_table(op, da, db):
    pijit_fn, numpy_fn = BINARY_OPS[op]
    a, b = A_VALUES.astype(da), B_VALUES.astype(db)
    got = pijit_fn(tensor(A_VALUES, da), tensor(B_VALUES, db))
    rt = result_dtype(da, db)
    if rt == np.bool_:  # bool arithmetic is logical: + is or, * is and, matmul is or of ands
        a, b = a.astype(np.bool_), b.astype(np.bool_)
    assert_dtype_and_values(got, rt, numpy_fn(a.astype(np.float64), b.astype(np.float64)))


@pytest.mark.parametrize("da", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("db", ALL_DTYPES, ids=str)
def test_true_division_is_a_float_function_of_the_promoted_dtype(da, db):
    got = tensor(A_VALUES, da) / tensor(B_VALUES + 1, db)
    rt = true_division_dtype(da, db)
    a, b = A_VALUES.astype(da).astype(np.float64), (B_VALUES + 1).astype(db).astype(np.float64)
    assert np_dtype(got) == rt
    # One rounding of the exact quotient into rt (float32 for any two integers).
    np.testing.assert_array_equal(widened(got), (a / b).astype(rt).astype(np.float64))


SCALAR_OPS = {
    "add": (lambda x, s: x + s, np.add),
    "mul": (lambda x, s: s * x, np.multiply),  # reflected
    "maximum": (ops.maximum, np.maximum),
    "div": (lambda x, s: x / s, np.true_divide),
}


@pytest.mark.parametrize("op", SCALAR_OPS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("scalar", [True, 3, 2.5], ids=repr)
def test_python_scalars_follow_the_weak_rules(op, dtype, scalar):
    pijit_fn, numpy_fn = SCALAR_OPS[op]
    got = pijit_fn(tensor(A_VALUES, dtype), scalar)
    rt = with_python_scalar(dtype, scalar)
    if op == "div":
        rt = float_function_dtype(rt)
    values = A_VALUES.astype(dtype)
    if rt == np.bool_:
        values = values.astype(np.bool_)
    assert_dtype_and_values(got, rt, numpy_fn(values.astype(np.float64), float(scalar)))


@pytest.mark.parametrize("dtype, scalar, expected", [
    (np.bool_, True, np.bool_), (np.bool_, 2, np.int64), (np.bool_, 0.5, np.float32),
    (np.uint8, True, np.uint8), (np.int8, 2, np.int8), (np.int16, 0.5, np.float32),
    (np.int64, 0.5, np.float32), (np.float16, 2, np.float16), (np.float16, 0.5, np.float16),
    (np.float64, 0.5, np.float64)])
def test_scalar_rules_on_the_documented_examples(dtype, scalar, expected):
    assert with_python_scalar(dtype, scalar) == expected
    assert np_dtype(ms.Tensor(np.ones(2, dtype)) + scalar) == expected


@pytest.mark.parametrize("da, db, expected", [
    (np.int32, np.float32, np.float32), (np.int64, np.float16, np.float16),
    (np.int16, np.float16, np.float16), (np.uint8, np.int8, np.int16),
    (np.uint8, np.int16, np.int16), (np.bool_, np.int8, np.int8),
    (np.bool_, np.float16, np.float16), (np.float16, np.float64, np.float64),
    (np.int64, np.float64, np.float64)])
def test_promotion_on_the_documented_examples(da, db, expected):
    # Stated by hand, apart from ms_dtypes: a check of the reference itself.
    assert result_dtype(da, db) == result_dtype(db, da) == expected
    assert np_dtype(ms.Tensor(np.ones(2, da)) + ms.Tensor(np.ones(2, db))) == expected


@pytest.mark.skipif(BFLOAT16 is None,
                    reason="ml_dtypes, which gives bfloat16 to NumPy, is not installed")
@pytest.mark.parametrize("other, expected", [
    (np.bool_, "bfloat16"), (np.int64, "bfloat16"), (np.float16, np.float32),
    (np.float32, np.float32), (np.float64, np.float64)])
def test_bfloat16_rules_on_the_documented_examples(other, expected):
    expected = BFLOAT16 if expected == "bfloat16" else np.dtype(expected)
    assert result_dtype(BFLOAT16, other) == result_dtype(other, BFLOAT16) == expected


def test_the_reference_table_is_symmetric_and_idempotent():
    for a in ALL_DTYPES:
        assert result_dtype(a, a) == a
        for b in ALL_DTYPES:
            assert result_dtype(a, b) == result_dtype(b, a)


FLOAT_FUNCTIONS = {
    "exp": ops.exp, "sqrt": ops.sqrt, "sin": ops.sin, "sigmoid": ops.sigmoid,
    "softmax": lambda t: ops.softmax(t, -1), "log_softmax": lambda t: ops.log_softmax(t, -1),
}


@pytest.mark.parametrize("name", FLOAT_FUNCTIONS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_float_functions_give_float_function_dtype(name, dtype):
    t = tensor(A_VALUES, dtype)
    if dtype == np.bool_:  # pijit's own rule: no float functions of bools (MindSpore varies)
        with pytest.raises(TypeError, match="Bool"):
            FLOAT_FUNCTIONS[name](t)
        return
    got = FLOAT_FUNCTIONS[name](t)
    assert np_dtype(got) == float_function_dtype(dtype)
    # An integer computes as its float32 cast would, whatever its width.
    if dtype.kind in "iu":
        cast = FLOAT_FUNCTIONS[name](t.astype(ms.float32))
        np.testing.assert_allclose(got.asnumpy(), cast.asnumpy(), rtol=2e-7)


REDUCTIONS = ["sum", "prod", "mean", "var", "std", "max", "min", "all", "any"]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_reductions_give_reduction_dtype(name, dtype):
    # ops.max and ops.min return (values, indices), as MindSpore's do; amax/amin the values.
    got = getattr(ops, {"max": "amax", "min": "amin"}.get(name, name))(tensor(A_VALUES, dtype))
    rt = reduction_dtype(name, dtype)
    assert np_dtype(got) == rt
    values = A_VALUES.astype(dtype).astype(np.float64)
    expected = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "var": np.var, "std": np.std,
                "max": np.max, "min": np.min, "all": np.all, "any": np.any}[name](values)
    np.testing.assert_allclose(widened(got), np.asarray(expected).astype(rt).astype(np.float64),
                               rtol=1e-2 if np.dtype(rt).itemsize == 2 else 1e-6)


# ---- where these rules lose what NumPy's keep --------------------------------------------------
# NumPy picks a result dtype that holds both operands; MindSpore keeps the float's width. These
# tests pin the consequences down so that they stay deliberate.

def test_int32_beyond_two_to_the_24_rounds_when_added_to_float32():
    big = np.array([2 ** 24 + 1], np.int32)
    got = ms.Tensor(big) + ms.Tensor(np.zeros(1, np.float32))
    assert got.dtype == ms.float32 and got.asnumpy()[0] == 2 ** 24  # NumPy: float64, exact


def test_integers_beyond_float16_range_overflow_to_inf_with_float16():
    got = ms.Tensor(np.array([70000, -70000], np.int32)) * ms.Tensor(np.ones(2, np.float16))
    assert got.dtype == ms.float16
    np.testing.assert_array_equal(got.asnumpy(), [np.inf, -np.inf])  # NumPy: float64, finite


def test_python_float_with_an_integer_tensor_rounds_to_float32_first():
    # The scalar becomes float32 (123456.7 -> 123456.703125) before it meets the tensor.
    got = ms.Tensor(np.array([-123456], np.int32)) + 123456.7
    assert got.dtype == ms.float32
    assert got.asnumpy()[0] == np.float32(123456.7) - np.float32(123456)


def test_mean_of_int64_is_float32_and_rounds_large_values():
    big = np.array([2 ** 40 + 1, 2 ** 40 + 1], np.int64)
    got = ms.Tensor(big).mean()
    assert got.dtype == ms.float32 and got.item() == float(np.float32(2 ** 40))


def test_int_true_division_is_float32_and_rounds():
    got = ms.Tensor(np.array([2 ** 25 + 1], np.int64)) / ms.Tensor(np.array([1], np.int64))
    assert got.dtype == ms.float32 and got.asnumpy()[0] == 2 ** 25  # NumPy: float64, exact


# ---- the rules against MindSpore itself --------------------------------------------------------

@pytest.fixture(scope="module")
def mindspore():
    return pytest.importorskip(
        "mindspore",
        reason="mindspore is not installed: its rules are checked through ms_dtypes only")


def mindspore_tensor(mindspore, dtype):
    if dtype == BFLOAT16:  # MindSpore takes no ml_dtypes arrays: cast on its side
        return mindspore.Tensor(A_VALUES.astype(np.float32), mindspore.bfloat16)
    return mindspore.Tensor(A_VALUES.astype(dtype))


def mindspore_dtype_name(fn):
    """str() of the dtype of MindSpore's result ("Float32"), or a skip where MindSpore has no
    kernel for these dtypes on this machine."""
    try:
        return str(fn().dtype)
    except (TypeError, RuntimeError, ValueError) as e:
        pytest.skip(f"MindSpore does not compute this here: {e}")


@pytest.mark.parametrize("da", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("db", ALL_DTYPES, ids=str)
def test_promotion_table_agrees_with_mindspore(mindspore, da, db):
    x, y = mindspore_tensor(mindspore, da), mindspore_tensor(mindspore, db)
    assert mindspore_dtype_name(lambda: x + y) == str(PIJIT_OF[result_dtype(da, db)])
    assert mindspore_dtype_name(lambda: x / y) == str(PIJIT_OF[true_division_dtype(da, db)])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("scalar", [True, 3, 2.5], ids=repr)
def test_scalar_rules_agree_with_mindspore(mindspore, dtype, scalar):
    x = mindspore_tensor(mindspore, dtype)
    want = str(PIJIT_OF[with_python_scalar(dtype, scalar)])
    assert mindspore_dtype_name(lambda: x + scalar) == want


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != np.bool_], ids=str)
def test_float_function_and_mean_rules_agree_with_mindspore(mindspore, dtype):
    x = mindspore_tensor(mindspore, dtype)
    want = str(PIJIT_OF[float_function_dtype(dtype)])
    assert mindspore_dtype_name(lambda: mindspore.ops.exp(x)) == want
    assert mindspore_dtype_name(lambda: x.mean()) == str(PIJIT_OF[reduction_dtype("mean", dtype)])


def test_the_reference_lists_every_pijit_dtype():
    assert len(ALL_DTYPES) == (10 if BFLOAT16 is not None else 9)
    assert ms_dtypes.DEFAULT_FLOAT == np.float32
