"""Eager tensor operations compared against NumPy: every op, every way to call it, every dtype,
MindSpore's promotion rules (result dtypes from ms_dtypes, values from NumPy computed in them),
broadcasting, 0-d/empty/non-contiguous inputs and the errors."""
import operator
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pijit as ms
from pijit import ops
# Division by zero and log of negatives give inf/nan in both libraries; no warnings needed.
from jit_testutil import _quiet_numpy  # noqa: F401 (autouse fixture)
from ms_dtypes import (computed_in, float_function_dtype, reduction_dtype, result_dtype,
                       with_python_scalar)
from pijit_testutil import (FLOAT_NP_DTYPES, NP_DTYPES, NUMERIC_NP_DTYPES, assert_matches_numpy,
                            elements_for, random_array, rtol_for)

HYP = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture
def rng():
    return np.random.default_rng(20240611)


def T(a):
    return ms.Tensor(np.asarray(a))


# ---- binary elementwise ops ----------------------------------------------------------------------

NP_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide}


def binary_dtype(name, da, db):
    """MindSpore's result dtype of `name` on two tensors: div is a float function of the
    promoted dtype (int32 / int32 -> float32), the others give the promoted dtype."""
    rt = result_dtype(da, db)
    return float_function_dtype(rt) if name == "div" else rt


def scalar_dtype(name, dtype, scalar):
    """MindSpore's result dtype of `name` on a tensor of `dtype` and a Python scalar."""
    rt = with_python_scalar(dtype, scalar)
    return float_function_dtype(rt) if name == "div" else rt
PRIMITIVE = {"add": ops.Add, "sub": ops.Sub, "mul": ops.Mul, "div": ops.Div}
OPERATOR = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv}
BINARY_STYLES = {
    "operator": lambda name, a, b: OPERATOR[name](a, b),
    "method": lambda name, a, b: getattr(a, name)(b),
    "function": lambda name, a, b: getattr(ops, name)(a, b),
    "primitive": lambda name, a, b: PRIMITIVE[name]()(a, b),
}


@pytest.mark.parametrize("style", BINARY_STYLES, ids=str)
@pytest.mark.parametrize("name", NP_BINARY, ids=str)
def test_binary_op_call_styles_match_numpy(rng, name, style):
    a = random_array(rng, (3, 4), np.float32)
    b = random_array(rng, (3, 4), np.float32) + 6.0  # no division by ~0
    out = BINARY_STYLES[style](name, T(a), T(b))
    assert_matches_numpy(out, NP_BINARY[name](a, b))


@pytest.mark.parametrize("name", NP_BINARY, ids=str)
def test_binary_op_keyword_arguments(rng, name):
    a = random_array(rng, (2, 3), np.float64)
    b = random_array(rng, (2, 3), np.float64) + 6.0
    fn = getattr(ops, name)
    assert_matches_numpy(fn(x=T(a), y=T(b)), NP_BINARY[name](a, b))
    assert_matches_numpy(fn(input=T(a), other=T(b)), NP_BINARY[name](a, b))


@pytest.mark.parametrize("name,da,db", [
    (name, da, db) for name in NP_BINARY for da in NP_DTYPES for db in NP_DTYPES
    if not (name == "sub" and da == np.bool_ and db == np.bool_)],  # an error, tested below
    ids=str)
def test_binary_op_dtype_promotion_follows_mindspore(rng, name, da, db):
    a = random_array(rng, (4, 3), da)
    b = random_array(rng, (4, 3), db)
    rt = binary_dtype(name, da, db)
    expected = computed_in(rt, NP_BINARY[name])(a, b)
    assert expected.dtype == rt
    assert_matches_numpy(getattr(ops, name)(T(a), T(b)), expected)


def test_int32_plus_float32_is_float32():
    # NumPy widens to float64 to hold every int32; MindSpore keeps the float's dtype.
    out = T(np.array([1, 2], np.int32)) + T(np.array([0.5, 0.25], np.float32))
    assert out.dtype == ms.float32
    assert_matches_numpy(out, np.array([1.5, 2.25], np.float32))


def test_python_float_plus_int32_tensor_is_float32():
    out = 1.5 + T(np.array([1, 2], np.int32))
    assert out.dtype == ms.float32
    np.testing.assert_array_equal(out.asnumpy(), np.array([2.5, 3.5], np.float32))


def test_python_int_plus_float32_tensor_is_float32():
    out = 3 + T(np.array([0.5, 1.5], np.float32))
    assert out.dtype == ms.float32
    np.testing.assert_array_equal(out.asnumpy(), np.array([3.5, 4.5], np.float32))


SCALARS = [True, False, 2, -3, 0, 1.5, -0.25, 1e30]


@pytest.mark.parametrize("name", NP_BINARY, ids=str)
@pytest.mark.parametrize("dtype", NP_DTYPES, ids=str)
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
@pytest.mark.parametrize("reflected", [False, True], ids=["tensor_op_scalar", "scalar_op_tensor"])
def test_python_scalar_operand_is_weak(rng, name, dtype, scalar, reflected):
    a = random_array(rng, (5,), dtype)
    args_np = (scalar, a) if reflected else (a, scalar)
    args_ms = (scalar, T(a)) if reflected else (T(a), scalar)
    try:
        # NumPy raises where pijit must: bool subtraction, a Python int out of the range of
        # the tensor's integer dtype (uint8 - 3).
        NP_BINARY[name](*args_np)
    except (TypeError, OverflowError) as e:
        with pytest.raises(type(e)):
            OPERATOR[name](*args_ms)
        return
    rt = scalar_dtype(name, dtype, scalar)
    expected = computed_in(rt, NP_BINARY[name])(*args_np)
    assert expected.dtype == rt
    out = OPERATOR[name](*args_ms)
    assert_matches_numpy(out, expected)
    assert_matches_numpy(getattr(ops, name)(*args_ms), expected)


def test_python_bool_plus_bool_tensor_stays_bool():
    out = T(np.array([True, False])) + True
    assert out.dtype == ms.bool_
    np.testing.assert_array_equal(out.asnumpy(), np.array([True, True]))


def test_python_int_out_of_int32_range_raises_overflow_error():
    with pytest.raises(OverflowError, match="int32|Int32"):
        T(np.array([1, 2], np.int32)) + 2 ** 40


def test_python_int_out_of_int64_range_raises_overflow_error():
    with pytest.raises(OverflowError):
        ops.mul(T(np.array([1, 2], np.int64)), 2 ** 70)


def test_python_int_beyond_int64_with_float_tensor_is_converted_to_float():
    out = T(np.array([1.0], np.float64)) + 2 ** 70
    np.testing.assert_array_equal(out.asnumpy(), np.array([1.0]) + 2 ** 70)


def test_int_true_division_gives_float32_with_inf_and_nan_like_numpy():
    a = np.array([1, 0, -3], np.int32)
    b = np.array([0, 0, 2], np.int32)
    out = T(a) / T(b)
    assert_matches_numpy(out, a.astype(np.float32) / b.astype(np.float32))
    np.testing.assert_array_equal(out.asnumpy(), np.array([np.inf, np.nan, -1.5], np.float32))


def test_float_division_by_zero_keeps_sign_of_zero_like_numpy():
    a = np.array([1.0, 1.0, -1.0], np.float32)
    b = np.array([0.0, -0.0, 0.0], np.float32)
    out = (T(a) / T(b)).asnumpy()
    np.testing.assert_array_equal(out, a / b)


@given(data=st.data(),
       shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=4),
       name=st.sampled_from(sorted(NP_BINARY)),
       da=st.sampled_from(NP_DTYPES), db=st.sampled_from(NP_DTYPES))
@HYP
def test_binary_broadcasting_matches_numpy_hypothesis(data, shapes, name, da, db):
    assume(not (name == "sub" and da == np.bool_ and db == np.bool_))

    a = data.draw(hnp.arrays(da, shapes.input_shapes[0], elements=elements_for(da, 1000)), label="a")
    b = data.draw(hnp.arrays(db, shapes.input_shapes[1], elements=elements_for(db, 1000)), label="b")
    rt = binary_dtype(name, da, db)
    with np.errstate(all="ignore"):
        expected = computed_in(rt, NP_BINARY[name])(a, b)
    assert expected.dtype == rt
    assert_matches_numpy(getattr(ops, name)(T(a), T(b)), expected)
    assert expected.shape == shapes.result_shape


@given(a=hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
                    elements=st.floats(-1e6, 1e6)),
       scalar=st.one_of(st.integers(-10 ** 6, 10 ** 6), st.floats(-1e6, 1e6), st.booleans()),
       name=st.sampled_from(sorted(NP_BINARY)), dtype=st.sampled_from(NUMERIC_NP_DTYPES))
@HYP
def test_binary_with_python_scalar_matches_numpy_hypothesis(a, scalar, name, dtype):
    with np.errstate(all="ignore"):
        a = a.astype(dtype)
        try:
            NP_BINARY[name](a, scalar)
        except OverflowError:  # a Python int out of the (small) integer dtype's range
            with pytest.raises(OverflowError, match="out of bounds"):
                OPERATOR[name](T(a), scalar)
            return
        rt = scalar_dtype(name, dtype, scalar)
        expected = computed_in(rt, NP_BINARY[name])(a, scalar)
    assert expected.dtype == rt
    assert_matches_numpy(OPERATOR[name](T(a), scalar), expected)


def test_broadcast_mismatch_raises_value_error_naming_both_shapes():
    with pytest.raises(ValueError) as info:
        T(np.ones((2, 3))) + T(np.ones((4,)))
    assert "(2, 3)" in str(info.value) and "(4,)" in str(info.value)


@pytest.mark.parametrize("name", NP_BINARY, ids=str)
def test_broadcast_mismatch_error_for_every_binary_op(name):
    with pytest.raises(ValueError, match=r"\(3, 2\).*\(3,\)|\(3,\).*\(3, 2\)"):
        getattr(ops, name)(T(np.ones((3, 2))), T(np.ones(3)))


def test_bool_subtract_raises_type_error():
    b = T(np.array([True, False]))
    with pytest.raises(TypeError, match="sub"):
        b - b
    with pytest.raises(TypeError):
        ops.sub(b, True)


def test_binary_op_without_tensor_operand_raises_type_error():
    with pytest.raises(TypeError):
        ops.add(1, 2)


def test_binary_op_with_string_operand_raises_type_error():
    with pytest.raises(TypeError):
        T(np.ones(2)) + "a"


def test_binary_op_missing_argument_raises_type_error():
    with pytest.raises(TypeError, match="missing"):
        ops.add(T(np.ones(2)))


def test_binary_op_unknown_keyword_raises_type_error():
    with pytest.raises(TypeError, match="unexpected keyword"):
        ops.add(T(np.ones(2)), T(np.ones(2)), alpha=2)


def test_numpy_scalar_operand_gives_tensor():
    out = T(np.ones(2, np.float32)) * np.float32(2)
    assert isinstance(out, ms.Tensor)
    assert_matches_numpy(out, np.ones(2, np.float32) * np.float32(2))


# ---- unary ops -----------------------------------------------------------------------------------

def np_relu(x):
    return np.maximum(x, 0)


NP_UNARY = {"neg": np.negative, "exp": np.exp, "log": np.log, "relu": np_relu}
UNARY_PRIMITIVE = {"neg": ops.Neg, "exp": ops.Exp, "log": ops.Log, "relu": ops.ReLU}
UNARY_STYLES = {
    "method": lambda name, a: getattr(a, name)(),
    "function": lambda name, a: getattr(ops, name)(a),
    "primitive": lambda name, a: UNARY_PRIMITIVE[name]()(a),
    "keyword": lambda name, a: getattr(ops, name)(x=a),
}


def unary_input(rng, name, dtype, shape=(3, 5)):
    lo = 1 if name == "log" else -5
    return random_array(rng, shape, dtype, low=lo, high=6)


# exp and log compute integers in float32; neg and relu keep the dtype.
FLOAT_UNARY = {"exp", "log"}


@pytest.mark.parametrize("style", UNARY_STYLES, ids=str)
@pytest.mark.parametrize("name", NP_UNARY, ids=str)
@pytest.mark.parametrize("dtype", NUMERIC_NP_DTYPES, ids=str)
def test_unary_op_matches_numpy(rng, name, style, dtype):
    a = unary_input(rng, name, dtype)
    out = UNARY_STYLES[style](name, T(a))
    rt = float_function_dtype(dtype) if name in FLOAT_UNARY else np.dtype(dtype)
    expected = computed_in(rt, NP_UNARY[name])(a)
    assert expected.dtype == rt
    assert_matches_numpy(out, expected, rtol=rtol_for(expected.dtype, transcendental=True))


@pytest.mark.parametrize("dtype", NUMERIC_NP_DTYPES, ids=str)
def test_negation_operator_matches_numpy(rng, dtype):
    a = random_array(rng, (4,), dtype)
    assert_matches_numpy(-T(a), -a)


def test_exp_of_large_and_small_values_matches_numpy():
    a = np.array([-1000.0, -50.0, 0.0, 50.0, 88.0, 1000.0], np.float32)
    assert_matches_numpy(ops.exp(T(a)), np.exp(a), rtol=1e-5)


def test_log_of_zero_and_negative_gives_minus_inf_and_nan():
    a = np.array([0.0, -1.0, 1.0, np.inf], np.float64)
    assert_matches_numpy(ops.log(T(a)), np.log(a))


def test_relu_of_negative_zero_and_infinities():
    a = np.array([-np.inf, -1.0, 0.0, 2.0, np.inf], np.float32)
    assert_matches_numpy(ops.relu(T(a)), np_relu(a))


def test_relu_propagates_nan():
    a = np.array([np.nan, 1.0], np.float32)
    assert_matches_numpy(ops.relu(T(a)), np_relu(a))


@pytest.mark.parametrize("name", ["exp", "log"])
def test_transcendental_of_bool_raises_type_error(name):
    with pytest.raises(TypeError, match=f"{name}.*Bool"):
        getattr(ops, name)(T(np.array([True, False])))


def test_neg_of_bool_raises_type_error():
    with pytest.raises(TypeError):
        -T(np.array([True]))


def test_unary_op_of_python_scalar_raises_type_error():
    with pytest.raises(TypeError, match="expected a Tensor"):
        ops.exp(1.0)


@given(a=hnp.arrays(st.sampled_from(FLOAT_NP_DTYPES), hnp.array_shapes(min_dims=0, max_dims=3),
                    elements=st.floats(-80, 80, width=32)),
       name=st.sampled_from(["neg", "exp", "relu"]))
@HYP
def test_unary_matches_numpy_hypothesis(a, name):
    expected = NP_UNARY[name](a)
    assert_matches_numpy(getattr(ops, name)(T(a)), expected,
                         rtol=rtol_for(a.dtype, transcendental=True))


# ---- 0-d, empty and non-contiguous inputs --------------------------------------------------------

@pytest.mark.parametrize("name", NP_BINARY, ids=str)
def test_binary_on_0d_tensors(name):
    a = np.array(3.5, np.float32)
    b = np.array(2.0, np.float64)
    out = getattr(ops, name)(T(a), T(b))
    assert out.shape == ()
    assert_matches_numpy(out, NP_BINARY[name](a, b))


@pytest.mark.parametrize("name", NP_BINARY, ids=str)
def test_binary_0d_broadcasts_against_matrix(name):
    a = np.array(2, np.int32)
    b = np.arange(1, 7, dtype=np.int64).reshape(2, 3)
    expected = computed_in(binary_dtype(name, a.dtype, b.dtype), NP_BINARY[name])(a, b)
    assert_matches_numpy(getattr(ops, name)(T(a), T(b)), expected)


@pytest.mark.parametrize("name", NP_BINARY, ids=str)
@pytest.mark.parametrize("shapes", [((0,), (0,)), ((0, 3), (3,)), ((2, 0), (1, 0)), ((0, 1), (1, 4))],
                         ids=str)
def test_binary_on_empty_tensors(name, shapes):
    a = np.ones(shapes[0], np.float32)
    b = np.ones(shapes[1], np.float64)
    assert_matches_numpy(getattr(ops, name)(T(a), T(b)), NP_BINARY[name](a, b))


@pytest.mark.parametrize("name", NP_UNARY, ids=str)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0)], ids=str)
def test_unary_on_0d_and_empty(name, shape):
    a = np.full(shape, 2.0, np.float32)
    assert_matches_numpy(getattr(ops, name)(T(a)), NP_UNARY[name](a), rtol=1e-5)


NONCONTIG = {
    "transposed": lambda a: a.T,
    "steps": lambda a: a[::2, ::3],
    "negative_strides": lambda a: a[::-1, ::-2],
    "column": lambda a: a[:, 1:2],
}


@pytest.mark.parametrize("view", NONCONTIG.values(), ids=NONCONTIG.keys())
@pytest.mark.parametrize("name", NP_BINARY, ids=str)
def test_binary_on_noncontiguous_inputs(rng, view, name):
    a = view(random_array(rng, (6, 6), np.float32))
    b = view(random_array(rng, (6, 6), np.float64, low=1, high=4))
    assert_matches_numpy(getattr(ops, name)(T(a), T(b)), NP_BINARY[name](a, b))


@pytest.mark.parametrize("view", NONCONTIG.values(), ids=NONCONTIG.keys())
@pytest.mark.parametrize("name", NP_UNARY, ids=str)
def test_unary_on_noncontiguous_inputs(rng, view, name):
    a = view(unary_input(rng, name, np.float64, (6, 6)))
    assert_matches_numpy(getattr(ops, name)(T(a)), NP_UNARY[name](a))


@pytest.mark.parametrize("view", NONCONTIG.values(), ids=NONCONTIG.keys())
def test_reductions_on_noncontiguous_inputs(rng, view):
    a = view(random_array(rng, (6, 6), np.float64))
    for axis in (None, 0, -1, (0, 1)):
        assert_matches_numpy(ops.sum(T(a), axis), np.sum(a, axis=axis))
        assert_matches_numpy(ops.mean(T(a), axis, keepdims=True), np.mean(a, axis=axis, keepdims=True))


def test_ops_do_not_modify_their_inputs(rng):
    a = random_array(rng, (3, 3), np.float32)
    b = random_array(rng, (3, 3), np.float32)
    ta, tb = T(a.copy()), T(b.copy())
    for out in (ta + tb, ta - tb, ta * tb, ta / tb, -ta, ops.exp(ta), ops.relu(ta), ta @ tb,
                ops.sum(ta, 0), ops.mean(ta), ops.reshape(ta, (9,)), ops.transpose(ta, (1, 0))):
        assert out is not ta
    np.testing.assert_array_equal(ta.asnumpy(), a)
    np.testing.assert_array_equal(tb.asnumpy(), b)


# ---- matmul --------------------------------------------------------------------------------------

MATMUL_SHAPES = {
    "2d": ((3, 4), (4, 5)),
    "1d_1d": ((4,), (4,)),
    "1d_2d": ((4,), (4, 3)),
    "2d_1d": ((3, 4), (4,)),
    "batched_3d": ((2, 3, 4), (2, 4, 5)),
    "batched_3d_2d": ((2, 3, 4), (4, 5)),
    "batched_2d_3d": ((3, 4), (2, 4, 5)),
    "batch_broadcast": ((2, 1, 3, 4), (5, 4, 2)),
    "batched_1d": ((2, 3, 4), (4,)),
    "1d_batched": ((4,), (2, 4, 3)),
    "empty_inner": ((2, 0), (0, 3)),
    "empty_outer": ((0, 4), (4, 3)),
}
MATMUL_STYLES = {
    "operator": lambda a, b: a @ b,
    "function": lambda a, b: ops.matmul(a, b),
    "method": lambda a, b: a.matmul(b),
    "primitive": lambda a, b: ops.MatMul()(a, b),
}


def matmul_rtol(dtype, k):
    # float16 products accumulate in float32 here and round once; NumPy's may round more.
    return {np.dtype(np.float16): 1e-3 * max(1, k), np.dtype(np.float32): 1e-5 * max(1, k),
            np.dtype(np.float64): 1e-12 * max(1, k)}.get(np.dtype(dtype), 0)


@pytest.mark.parametrize("shapes", MATMUL_SHAPES.values(), ids=MATMUL_SHAPES.keys())
@pytest.mark.parametrize("style", MATMUL_STYLES, ids=str)
def test_matmul_shapes_and_styles_match_numpy(rng, shapes, style):
    a = random_array(rng, shapes[0], np.float32)
    b = random_array(rng, shapes[1], np.float32)
    expected = a @ b
    out = MATMUL_STYLES[style](T(a), T(b))
    assert_matches_numpy(out, expected, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("da", NP_DTYPES, ids=str)
@pytest.mark.parametrize("db", NP_DTYPES, ids=str)
def test_matmul_dtype_promotion_follows_mindspore(rng, da, db):
    a = random_array(rng, (3, 4), da)
    b = random_array(rng, (4, 2), db)
    rt = result_dtype(da, db)
    expected = a.astype(rt) @ b.astype(rt)
    assert expected.dtype == rt
    assert_matches_numpy(ops.matmul(T(a), T(b)), expected, rtol=matmul_rtol(expected.dtype, 4),
                         atol=1e-5)


def test_matmul_larger_float32_matches_numpy(rng):
    a = rng.standard_normal((64, 130)).astype(np.float32)
    b = rng.standard_normal((130, 33)).astype(np.float32)
    assert_matches_numpy(T(a) @ T(b), a @ b, rtol=1e-4, atol=1e-4)


def test_matmul_float64_is_exact_enough(rng):
    a = rng.standard_normal((17, 23))
    b = rng.standard_normal((23, 9))
    assert_matches_numpy(T(a) @ T(b), a @ b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("view", NONCONTIG.values(), ids=NONCONTIG.keys())
def test_matmul_on_noncontiguous_inputs(rng, view):
    a = view(random_array(rng, (6, 6), np.float32))
    b = np.ascontiguousarray(view(random_array(rng, (6, 6), np.float32)).T)
    assert_matches_numpy(T(a) @ T(b), a @ b, rtol=1e-5, atol=1e-5)
    assert_matches_numpy(T(a) @ T(a.T), a @ a.T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_primitive_transpose_flags(rng, ta, tb):
    a = random_array(rng, (4, 3) if ta else (3, 4), np.float64)
    b = random_array(rng, (5, 4) if tb else (4, 5), np.float64)
    expected = (a.T if ta else a) @ (b.T if tb else b)
    out = ops.MatMul(transpose_a=ta, transpose_b=tb)(T(a), T(b))
    assert_matches_numpy(out, expected)


@given(data=st.data(), m=st.integers(1, 5), k=st.integers(0, 5), n=st.integers(1, 5),
       batch=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3),
       dtype=st.sampled_from(NP_DTYPES))
@HYP
def test_matmul_matches_numpy_hypothesis(data, m, k, n, batch, dtype):
    sa = batch.input_shapes[0] + (m, k)
    sb = batch.input_shapes[1] + (k, n)
    elements = elements_for(dtype, 20 if dtype.kind in "iu" else 10)
    a = data.draw(hnp.arrays(dtype, sa, elements=elements))
    b = data.draw(hnp.arrays(dtype, sb, elements=elements))
    expected = a @ b
    # float16 sums of up to 5 products of size 100 cancel to within a float16 ulp of 500.
    assert_matches_numpy(T(a) @ T(b), expected, rtol=matmul_rtol(dtype, k),
                         atol=0.5 if dtype == np.float16 else 1e-5)


def test_matmul_misaligned_raises_value_error_naming_both_shapes():
    with pytest.raises(ValueError) as info:
        T(np.ones((2, 3))) @ T(np.ones((4, 2)))
    msg = str(info.value)
    assert "(2, 3)" in msg and "(4, 2)" in msg


def test_matmul_batch_mismatch_raises_value_error():
    with pytest.raises(ValueError):
        ops.matmul(T(np.ones((2, 3, 4))), T(np.ones((3, 4, 5))))


def test_matmul_of_0d_raises_value_error():
    with pytest.raises(ValueError, match="dimension"):
        ops.matmul(T(np.float32(2)), T(np.ones(2, np.float32)))


def test_matmul_with_python_scalar_raises_type_error():
    with pytest.raises(TypeError):
        ops.matmul(T(np.ones(2)), 2.0)


# ---- reductions ----------------------------------------------------------------------------------

NP_REDUCE = {"sum": np.sum, "mean": np.mean}
AXES = [None, 0, 1, 2, -1, -3, (0, 2), (-1, 0), (0, 1, 2), ()]


def np_reduce(name, a, axis, keepdims):
    if axis == ():  # pijit follows MindSpore: an empty axis tuple reduces every axis
        axis = None
    return NP_REDUCE[name](a, axis=axis, keepdims=keepdims)


REDUCE_STYLES = {
    "function_positional": lambda name, t, axis, kd: getattr(ops, name)(t, axis, kd),
    "function_keywords": lambda name, t, axis, kd: getattr(ops, name)(t, axis=axis, keepdims=kd),
    "method": lambda name, t, axis, kd: getattr(t, name)(axis, keepdims=kd),
    "primitive": lambda name, t, axis, kd: {"sum": ops.ReduceSum, "mean": ops.ReduceMean}[name](
        keep_dims=kd)(t, () if axis is None else axis),
    "alias": lambda name, t, axis, kd: {"sum": ops.reduce_sum, "mean": ops.reduce_mean}[name](
        t, axis, keepdims=kd),
}


@pytest.mark.parametrize("style", REDUCE_STYLES, ids=str)
@pytest.mark.parametrize("name", NP_REDUCE, ids=str)
@pytest.mark.parametrize("axis", AXES, ids=repr)
@pytest.mark.parametrize("keepdims", [False, True], ids=["drop", "keepdims"])
def test_reduction_axes_and_styles_match_numpy(rng, style, name, axis, keepdims):
    a = random_array(rng, (2, 3, 4), np.float64)
    out = REDUCE_STYLES[style](name, T(a), axis, keepdims)
    assert_matches_numpy(out, np_reduce(name, a, axis, keepdims))


@pytest.mark.parametrize("name", NP_REDUCE, ids=str)
@pytest.mark.parametrize("dtype", NP_DTYPES, ids=str)
@pytest.mark.parametrize("axis", [None, 1, (0, 1)], ids=repr)
def test_reduction_dtypes_follow_mindspore(rng, name, dtype, axis):
    a = random_array(rng, (5, 6), dtype)
    rt = reduction_dtype(name, dtype)  # sum: int64 for integers and bools; mean: float32
    expected = NP_REDUCE[name](a, axis=axis, dtype=rt)
    assert expected.dtype == rt
    assert_matches_numpy(ops.__dict__[name](T(a), axis), expected, rtol=1e-5)


def test_reduction_keyword_aliases():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert_matches_numpy(ops.sum(T(a), dim=1, keepdim=True), a.sum(axis=1, keepdims=True))
    assert_matches_numpy(ops.mean(T(a), axis=0, keep_dims=True), a.mean(axis=0, keepdims=True))


def test_sum_of_float32_is_accurate(rng):
    a = rng.standard_normal((300, 400)).astype(np.float32)
    exact = a.astype(np.float64).sum()
    assert abs(float(ops.sum(T(a)).item()) - exact) <= 1e-5 * np.abs(a).sum()


@pytest.mark.parametrize("name", NP_REDUCE, ids=str)
def test_reduction_of_0d_tensor(name):
    a = np.array(4.0, np.float32)
    assert_matches_numpy(getattr(ops, name)(T(a)), NP_REDUCE[name](a))


@pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning")
@pytest.mark.parametrize("axis", [None, 0, 1], ids=repr)
def test_reduction_of_empty_tensor(axis):
    a = np.ones((0, 3), np.float64)
    assert_matches_numpy(ops.sum(T(a), axis), np.sum(a, axis=axis))
    assert_matches_numpy(ops.mean(T(a), axis), np.mean(a, axis=axis))  # nan where nothing is summed


@given(a=hnp.arrays(np.int64, hnp.array_shapes(min_dims=1, max_dims=4, max_side=5),
                    elements=st.integers(-100, 100)),
       dtype=st.sampled_from(NP_DTYPES),
       data=st.data(), name=st.sampled_from(sorted(NP_REDUCE)), keepdims=st.booleans())
@HYP
def test_reduction_matches_numpy_hypothesis(a, dtype, data, name, keepdims):
    a = a.astype(dtype)
    axes = data.draw(st.lists(st.integers(-a.ndim, a.ndim - 1), unique_by=lambda i: i % a.ndim,
                              max_size=a.ndim), label="axes")
    form = data.draw(st.sampled_from(["none", "int", "tuple"]), label="form")
    if form == "none" or not axes:
        axis = None
    elif form == "int":
        axis = axes[0]
    else:
        axis = tuple(axes)
    rt = reduction_dtype(name, dtype)  # mean of integers: float32
    expected = NP_REDUCE[name](a, axis=axis, keepdims=keepdims, dtype=rt)
    if a.dtype == np.float16:
        # pijit accumulates float16 in float32 and rounds once; NumPy's float16 accumulation
        # drifts (100 x 31.0 sums to 3132 there), so the reference is the exact result rounded.
        expected = NP_REDUCE[name](a.astype(np.float64), axis=axis,
                                   keepdims=keepdims).astype(np.float16)
    assert_matches_numpy(getattr(ops, name)(T(a), axis, keepdims=keepdims), expected,
                         rtol=rtol_for(expected.dtype) * 10)


@pytest.mark.parametrize("name", NP_REDUCE, ids=str)
@pytest.mark.parametrize("axis", [2, -3, (0, 5)], ids=repr)
def test_reduction_axis_out_of_bounds_raises_value_error(name, axis):
    with pytest.raises(ValueError, match="axis"):
        getattr(ops, name)(T(np.ones((2, 3))), axis)


def test_reduction_duplicate_axis_raises_value_error():
    with pytest.raises(ValueError, match="duplicate"):
        ops.sum(T(np.ones((2, 3))), (1, -1))


@pytest.mark.parametrize("axis", [1.5, "0", True], ids=repr)
def test_reduction_axis_of_wrong_type_raises_type_error(axis):
    with pytest.raises(TypeError, match="axis"):
        ops.sum(T(np.ones((2, 3))), axis)


def test_reduction_keepdims_must_be_bool():
    with pytest.raises(TypeError, match="keepdims"):
        ops.mean(T(np.ones((2, 3))), 0, keepdims=1)


# ---- reshape and transpose -----------------------------------------------------------------------

RESHAPES = [(6, 4), (-1,), (2, -1, 3), (24,), (1, 24, 1), (4, 3, 2)]
CALL_STYLES = ["function", "method_tuple", "method_varargs", "primitive"]


def call_in_style(style, t, arg, function, method_name, primitive):
    """The op called on the Tensor `t` and the tuple `arg` in one of CALL_STYLES: as the
    function, the method given the tuple or its items, or the primitive."""
    method = getattr(t, method_name)
    return {"function": lambda: function(t, arg),
            "method_tuple": lambda: method(arg),
            "method_varargs": lambda: method(*arg),
            "primitive": lambda: primitive()(t, arg)}[style]()


@pytest.mark.parametrize("shape", RESHAPES, ids=str)
@pytest.mark.parametrize("style", CALL_STYLES)
def test_reshape_matches_numpy(rng, shape, style):
    a = random_array(rng, (2, 3, 4), np.int32)
    out = call_in_style(style, T(a), shape, ops.reshape, "reshape", ops.Reshape)
    assert_matches_numpy(out, a.reshape(shape))


@pytest.mark.parametrize("view", NONCONTIG.values(), ids=NONCONTIG.keys())
def test_reshape_of_noncontiguous_input(rng, view):
    a = view(random_array(rng, (6, 6), np.float32))
    assert_matches_numpy(ops.reshape(T(a), (-1,)), a.reshape(-1))


def test_reshape_to_and_from_0d():
    assert_matches_numpy(ops.reshape(T(np.array([5.0])), ()), np.array(5.0))
    assert_matches_numpy(ops.reshape(T(np.array(5.0)), (1, 1)), np.array([[5.0]]))


def test_reshape_of_contiguous_tensor_is_a_view():
    arr = np.zeros((2, 3), np.float32)
    r = ops.reshape(T(arr), (6,))
    arr[1, 2] = 3.0
    assert r.asnumpy()[5] == 3.0


def test_reshape_wrong_size_raises_value_error():
    with pytest.raises(ValueError, match="reshape"):
        ops.reshape(T(np.ones(6)), (4, 2))


def test_reshape_two_inferred_dims_raises_value_error():
    with pytest.raises(ValueError):
        ops.reshape(T(np.ones(6)), (-1, -1))


PERMS = [(0, 1, 2), (2, 1, 0), (1, 0, 2), (0, 2, 1), (-1, 0, 1)]


@pytest.mark.parametrize("perm", PERMS, ids=str)
@pytest.mark.parametrize("style", CALL_STYLES)
def test_transpose_matches_numpy(rng, perm, style):
    a = random_array(rng, (2, 3, 4), np.float64)
    out = call_in_style(style, T(a), perm, ops.transpose, "transpose", ops.Transpose)
    assert_matches_numpy(out, np.transpose(a, perm))


def test_transpose_without_axes_reverses_them(rng):
    a = random_array(rng, (2, 3, 4), np.int64)
    assert_matches_numpy(ops.transpose(T(a)), a.T)
    assert_matches_numpy(T(a).transpose(), a.T)
    assert_matches_numpy(T(a).T, a.T)


def test_transpose_then_ops_use_the_permuted_layout(rng):
    a = random_array(rng, (3, 4), np.float32)
    t = ops.transpose(T(a), (1, 0))
    assert_matches_numpy(t + 1.0, a.T + 1.0)
    assert_matches_numpy(ops.reshape(t, (-1,)), a.T.reshape(-1))
    assert_matches_numpy(ops.sum(t, 1), a.T.sum(axis=1))


def test_transpose_bad_permutation_raises_value_error():
    with pytest.raises(ValueError, match="transpose"):
        ops.transpose(T(np.ones((2, 3))), (0, 0))
    with pytest.raises(ValueError, match="transpose"):
        ops.transpose(T(np.ones((2, 3))), (0, 1, 2))


# ---- combinations --------------------------------------------------------------------------------

def test_expression_combining_all_ops_matches_numpy(rng):
    x = random_array(rng, (4, 5), np.float32)
    w = random_array(rng, (5, 3), np.float32)
    b = random_array(rng, (3,), np.float32)
    t = ops.relu(T(x) @ T(w) + T(b))
    t = ops.log(ops.exp(-t) + 1.0) * 2 - t / 3.0
    out = ops.mean(ops.transpose(ops.reshape(t, (2, 2, 3)), (2, 0, 1)), (1, 2), keepdims=True)
    h = np.maximum(x @ w + b, 0)
    h = np.log(np.exp(-h) + 1.0) * 2 - h / 3.0
    expected = h.reshape(2, 2, 3).transpose(2, 0, 1).mean(axis=(1, 2), keepdims=True)
    assert_matches_numpy(out, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["add", "matmul", "sum", "reshape"])
def test_ops_functions_are_named_after_the_op(name):
    assert getattr(ops, name).__name__ == name


def test_primitive_attributes_are_fixed_and_shown_in_repr():
    p = ops.ReduceSum(keep_dims=True)
    assert p.keep_dims is True
    assert "keep_dims=True" in repr(p)
    with pytest.raises(AttributeError):
        p.keep_dims = False


def test_refcount_of_operands_is_unchanged_by_many_eager_ops():
    a = T(np.ones((2, 3), np.float32))
    b = T(np.ones((3,), np.float32))
    start = (sys.getrefcount(a), sys.getrefcount(b))
    for _ in range(500):
        a + b, a * 2, ops.matmul(a, ops.reshape(b, (3, 1))), ops.sum(a, 0), a.transpose()
        try:
            a @ a
        except ValueError:
            pass
    assert (sys.getrefcount(a), sys.getrefcount(b)) == start
