"""pijit.jit: jitted results equal eager results, the cache and its counters, guards,
fallback to eager execution, strict mode, explain, capture regions, Cells and refcounts."""
import gc
import inspect
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pijit as ms
from pijit import nn, ops
from pijit_testutil import (NP_DTYPES, assert_close_result, assert_same_result, assert_same_tensor,
                            random_array)

HYP = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def T(a, dtype=None):
    return ms.Tensor(np.asarray(a, dtype=dtype))


def pijit(fn, **kw):
    """A fresh PIJit-compiled `fn` (counters reset: parametrized tests share code objects)."""
    jf = ms.jit(fn, mode="PIJit", **kw)
    ms.reset(jf)
    return jf


def stats(fn):
    return ms.get_code_extra(fn)


def outcome(fn, *args, **kwargs):
    """('ok', result) or (exception type, message)."""
    try:
        return "ok", fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - comparing whatever is raised
        return type(e), str(e)


def marked_line(fn, marker="# BREAK"):
    """The line number of the line of `fn`'s source that carries `marker`."""
    lines, first = inspect.getsourcelines(fn)
    for i, text in enumerate(lines):
        if marker in text:
            return first + i
    raise AssertionError(f"no {marker} in {fn.__name__}")


def marked_source(fn, marker="# BREAK"):
    lines, _ = inspect.getsourcelines(fn)
    text = next(line for line in lines if marker in line)
    return text.split("#")[0].strip()


@pytest.fixture
def rng():
    return np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _quiet_numpy():
    with np.errstate(all="ignore"):
        yield


@pytest.fixture
def pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


# ---- the functions under test ----------------------------------------------------------------------

ADD = ops.Add()
SUB = ops.Sub()
MUL = ops.Mul()
DIV = ops.Div()
MATMUL = ops.MatMul()
RSUM_KEEP = ops.ReduceSum(keep_dims=True)
RMEAN = ops.ReduceMean()
RESHAPE = ops.Reshape()
TRANSPOSE = ops.Transpose()
NEG, EXP, LOG, RELU = ops.Neg(), ops.Exp(), ops.Log(), ops.ReLU()


def f_add_op(a, b): return a + b
def f_sub_op(a, b): return a - b
def f_mul_op(a, b): return a * b
def f_div_op(a, b): return a / b
def f_add_fn(a, b): return ops.add(a, b)
def f_sub_fn(a, b): return ops.sub(a, b)
def f_mul_fn(a, b): return ops.mul(a, b)
def f_div_fn(a, b): return ops.div(a, b)
def f_add_method(a, b): return a.add(b)
def f_mul_method(a, b): return a.mul(b)
def f_add_prim(a, b): return ADD(a, b)
def f_sub_prim(a, b): return SUB(a, b)
def f_mul_prim(a, b): return MUL(a, b)
def f_div_prim(a, b): return DIV(a, b)
def f_add_kw(a, b): return ops.add(x=a, y=b)
def f_inplace(a, b):
    c = a
    c += b
    c *= b
    c -= a
    return c


BINARY_FUNCS = [f_add_op, f_sub_op, f_mul_op, f_div_op, f_add_fn, f_sub_fn, f_mul_fn, f_div_fn,
                f_add_method, f_mul_method, f_add_prim, f_sub_prim, f_mul_prim, f_div_prim,
                f_add_kw, f_inplace]


def f_neg_op(a): return -a
def f_neg_fn(a): return ops.neg(a)
def f_neg_prim(a): return NEG(a)
def f_exp_fn(a): return ops.exp(a)
def f_exp_method(a): return a.exp()
def f_exp_prim(a): return EXP(a)
def f_log_fn(a): return ops.log(a)
def f_log_prim(a): return LOG(a)
def f_relu_fn(a): return ops.relu(a)
def f_relu_method(a): return a.relu()
def f_relu_prim(a): return RELU(a)
def f_sum_all(a): return ops.sum(a)
def f_sum_axis(a): return ops.sum(a, -1)
def f_sum_tuple_keep(a): return ops.sum(a, (0, 1), keepdims=True)
def f_sum_method(a): return a.sum(axis=0)
def f_sum_prim(a): return RSUM_KEEP(a, 1)
def f_mean_all(a): return ops.mean(a)
def f_mean_axis_keep(a): return ops.mean(a, 0, True)
def f_mean_method(a): return a.mean(-1, keepdims=True)
def f_mean_prim(a): return RMEAN(a, (0, -1))
def f_reshape_fn(a): return ops.reshape(a, (-1,))
def f_reshape_method(a): return a.reshape(a.shape[1], -1)
def f_reshape_prim(a): return RESHAPE(a, (1, -1, 1))
def f_transpose_fn(a): return ops.transpose(a, (1, 0))
def f_transpose_method(a): return a.transpose()
def f_transpose_prim(a): return TRANSPOSE(a, (1, 0))
def f_scalars(a): return 2 * a + 1.5 - a / 4 * 3.0 + True
def f_python_arith(a): return a * (2 ** 3 - 1.5) + (7 // 2) - (5 % 3)
def f_chain(a): return ops.log(ops.exp(a) + 1.0) * -a - ops.neg(a)
def f_reflected(a): return 2 - a, 3.0 / (a * a + 1), True * a, 7 + a
def f_shape_attrs(a): return a * a.ndim + a.size - a.shape[0]


UNARY_FUNCS = [f_neg_op, f_neg_fn, f_neg_prim, f_exp_fn, f_exp_method, f_exp_prim, f_log_fn,
               f_log_prim, f_relu_fn, f_relu_method, f_relu_prim, f_sum_all, f_sum_axis,
               f_sum_tuple_keep, f_sum_method, f_sum_prim, f_mean_all, f_mean_axis_keep,
               f_mean_method, f_mean_prim, f_reshape_fn, f_reshape_method, f_reshape_prim,
               f_transpose_fn, f_transpose_method, f_transpose_prim, f_scalars, f_python_arith,
               f_chain, f_reflected, f_shape_attrs]


def f_matmul_op(a, b): return a @ b
def f_matmul_fn(a, b): return ops.matmul(a, b)
def f_matmul_method(a, b): return a.matmul(b)
def f_matmul_prim(a, b): return MATMUL(a, b)


MATMUL_FUNCS = [f_matmul_op, f_matmul_fn, f_matmul_method, f_matmul_prim]


def f_mlp(x, w1, b1, w2):
    h = ops.relu(ops.matmul(x, w1) + b1)
    return ops.mean(h @ w2, -1)


def f_many_outputs(a, b):
    s = a + b
    return s, ops.sum(s), [s * 2, a], 3, "text", None, 2.5


def f_tensor_cal(x, y, z):
    return ops.matmul(x, y) + z


def run_and_compare(fn, *args, expect_graph=True):
    """Eager vs PIJit on the same arguments: same result or the same error, twice (the second
    call is a cache hit). Exactly equal, except within the fused-exp tolerance for functions
    whose graphs fuse exp with other ops. Returns the jitted function."""
    same = assert_close_result if fn in FUSES_EXP else assert_same_result
    jf = pijit(fn)
    before = [a.asnumpy().copy() for a in args if isinstance(a, ms.Tensor)]
    eager = outcome(fn, *args)
    for _ in range(2):
        jitted = outcome(jf, *args)
        if eager[0] == "ok":
            assert jitted[0] == "ok", f"jitted call raised {jitted}"
            same(jitted[1], eager[1])
        else:
            assert jitted == eager
    after = [a.asnumpy() for a in args if isinstance(a, ms.Tensor)]
    for b, a in zip(before, after):  # the jitted calls leave their inputs alone
        np.testing.assert_array_equal(a, b)
    s = stats(jf)
    assert s["compile_count"] == 1
    assert s["cache_hits"] == 1
    if expect_graph and eager[0] == "ok":
        assert s["reasons"] == [], s["reasons"]
        assert s["eager_count"] == 0
    return jf


# ---- every op gives the eager result ----------------------------------------------------------------

@pytest.mark.parametrize("fn", BINARY_FUNCS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)),
                                    ((), (3,)), ((), ()), ((0, 4), (4,))], ids=str)
def test_binary_op_jitted_equals_eager(rng, fn, shapes):
    a = T(random_array(rng, shapes[0], np.float32))
    b = T(random_array(rng, shapes[1], np.float32, low=1, high=5))
    run_and_compare(fn, a, b)


@pytest.mark.parametrize("fn", [f_add_op, f_sub_op, f_mul_op, f_div_op], ids=lambda f: f.__name__)
@pytest.mark.parametrize("da", NP_DTYPES, ids=str)
@pytest.mark.parametrize("db", NP_DTYPES, ids=str)
def test_binary_op_every_dtype_pair_jitted_equals_eager(rng, fn, da, db):
    a = T(random_array(rng, (2, 3), da))
    b = T(random_array(rng, (3,), db))
    # bool - bool raises: then the jitted call must raise the same error
    run_and_compare(fn, a, b)


@pytest.mark.parametrize("fn", UNARY_FUNCS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64], ids=str)
def test_unary_and_shape_op_jitted_equals_eager(rng, fn, dtype):
    a = T(random_array(rng, (3, 4), dtype, low=1, high=6))
    run_and_compare(fn, a)


@pytest.mark.parametrize("fn", [f_neg_op, f_exp_fn, f_log_fn, f_relu_fn, f_sum_all, f_mean_all,
                                f_scalars, f_chain], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", [(), (0,), (2, 0)], ids=str)
def test_unary_op_on_0d_and_empty_jitted_equals_eager(fn, shape):
    run_and_compare(fn, T(np.full(shape, 1.5, np.float32)))


NONCONTIG = {
    "transposed": lambda a: a.T,
    "steps": lambda a: a[::2, 1::2],
    "negative_strides": lambda a: a[::-1, ::-1],
}


@pytest.mark.parametrize("view", NONCONTIG.values(), ids=NONCONTIG.keys())
@pytest.mark.parametrize("fn", [f_add_op, f_mul_fn, f_matmul_op], ids=lambda f: f.__name__)
def test_binary_op_on_noncontiguous_inputs_jitted_equals_eager(rng, view, fn):
    a = view(random_array(rng, (6, 6), np.float32))
    b = view(random_array(rng, (6, 6), np.float32))
    run_and_compare(fn, T(a), T(b))


@pytest.mark.parametrize("view", NONCONTIG.values(), ids=NONCONTIG.keys())
@pytest.mark.parametrize("fn", [f_chain, f_sum_axis, f_mean_axis_keep, f_reshape_fn,
                                f_transpose_fn], ids=lambda f: f.__name__)
def test_unary_op_on_noncontiguous_input_jitted_equals_eager(rng, view, fn):
    run_and_compare(fn, T(view(random_array(rng, (6, 6), np.float64))))


@pytest.mark.parametrize("fn", MATMUL_FUNCS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((4,), (4,)), ((4,), (4, 2)), ((3, 4), (4,)),
                                    ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)),
                                    ((2, 0), (0, 3))], ids=str)
def test_matmul_jitted_equals_eager(rng, fn, shapes):
    a = T(random_array(rng, shapes[0], np.float32))
    b = T(random_array(rng, shapes[1], np.float32))
    run_and_compare(fn, a, b)


@pytest.mark.parametrize("da", NP_DTYPES, ids=str)
@pytest.mark.parametrize("db", NP_DTYPES, ids=str)
def test_matmul_every_dtype_pair_jitted_equals_eager(rng, da, db):
    run_and_compare(f_matmul_op, T(random_array(rng, (3, 4), da)), T(random_array(rng, (4, 2), db)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_mlp_combination_jitted_equals_eager(rng, dtype):
    args = [T(random_array(rng, s, dtype)) for s in [(8, 16), (16, 32), (32,), (32, 4)]]
    jf = run_and_compare(f_mlp, *args)
    graph = stats(jf)["graphs"][0]
    for name in ("matmul", "add", "relu", "mean"):
        assert name in graph


def test_large_float32_combination_jitted_equals_eager_exactly(rng):
    a = T(rng.standard_normal((64, 257)).astype(np.float32))
    b = T(rng.standard_normal((257, 48)).astype(np.float32))
    run_and_compare(lambda_free_combo, a, b)


def lambda_free_combo(a, b):
    h = ops.exp(a * 0.1) - a / 3.0
    return ops.sum(ops.relu(h @ b) * 0.5, 0) + ops.mean(h)


# Functions whose graphs fuse exp with other elementwise ops.
FUSES_EXP = {f_chain, lambda_free_combo}


@given(data=st.data(),
       shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4),
       fn=st.sampled_from([f_add_op, f_sub_op, f_mul_op, f_div_op]),
       da=st.sampled_from(NP_DTYPES), db=st.sampled_from(NP_DTYPES))
@HYP
def test_binary_broadcasting_jitted_equals_eager_hypothesis(data, shapes, fn, da, db):
    a = data.draw(hnp.arrays(np.int64, shapes.input_shapes[0], elements=st.integers(-50, 50)))
    b = data.draw(hnp.arrays(np.int64, shapes.input_shapes[1], elements=st.integers(-50, 50)))
    with np.errstate(all="ignore"):
        run_and_compare(fn, T(a.astype(da)), T(b.astype(db)))


@given(a=hnp.arrays(st.sampled_from([np.float32, np.float64]),
                    hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
                    elements=st.floats(-20, 20, width=32)),
       data=st.data(), keepdims=st.booleans(), mean=st.booleans())
@HYP
def test_reduction_jitted_equals_eager_hypothesis(a, data, keepdims, mean):
    axis = data.draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1)))

    def reduce_sum(x, ax, kd): return ops.sum(x, ax, keepdims=kd)

    def reduce_mean(x, ax, kd): return ops.mean(x, ax, keepdims=kd)
    run_and_compare(reduce_mean if mean else reduce_sum, T(a), axis, keepdims)


# ---- cache counters ---------------------------------------------------------------------------------

def test_first_call_compiles_once(rng):
    jf = pijit(f_tensor_cal)
    args = [T(random_array(rng, s, np.float32)) for s in [(2, 3), (3, 4), (2, 4)]]
    assert_same_tensor(jf(*args), f_tensor_cal(*args))
    s = stats(jf)
    assert (s["call_count"], s["compile_count"], s["cache_hits"], s["eager_count"]) == (1, 1, 0, 0)
    assert s["cache_entries"] == 1


def test_repeated_call_is_a_cache_hit(rng):
    jf = pijit(f_tensor_cal)
    args = [T(random_array(rng, s, np.float32)) for s in [(2, 3), (3, 4), (2, 4)]]
    jf(*args)
    for i in range(1, 4):
        jf(*args)
        s = stats(jf)
        assert s["compile_count"] == 1
        assert s["cache_hits"] == i


def test_new_tensors_with_same_dtype_and_shape_hit_the_cache_and_use_new_values(rng):
    jf = pijit(f_mul_op)
    jf(T(np.ones((2, 2), np.float32)), T(np.ones((2, 2), np.float32)))
    a = T(random_array(rng, (2, 2), np.float32))
    b = T(random_array(rng, (2, 2), np.float32))
    assert_same_tensor(jf(a, b), f_mul_op(a, b))
    assert stats(jf)["compile_count"] == 1
    assert stats(jf)["cache_hits"] == 1


def test_mutating_the_numpy_buffer_of_an_input_is_seen_on_the_next_call():
    arr = np.ones(3, np.float32)
    x = ms.Tensor(arr)
    jf = pijit(f_add_op)
    jf(x, x)
    arr[:] = [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(jf(x, x).asnumpy(), [2.0, 4.0, 6.0])


def test_changed_dtype_recompiles_exactly_once():
    jf = pijit(f_add_op)
    f32 = T(np.ones(3, np.float32))
    f64 = T(np.ones(3, np.float64))
    jf(f32, f32)
    assert stats(jf)["compile_count"] == 1
    assert_same_tensor(jf(f64, f64), f_add_op(f64, f64))
    assert stats(jf)["compile_count"] == 2
    jf(f64, f64)
    jf(f32, f32)
    s = stats(jf)
    assert s["compile_count"] == 2
    assert s["cache_hits"] == 2


def test_changed_shape_recompiles_exactly_once():
    jf = pijit(f_mul_op)
    small = T(np.ones((2, 3), np.float32))
    big = T(np.ones((4, 3), np.float32))
    jf(small, small)
    assert_same_tensor(jf(big, big), f_mul_op(big, big))
    assert stats(jf)["compile_count"] == 2
    jf(big, big)
    jf(small, small)
    assert stats(jf)["compile_count"] == 2
    assert stats(jf)["cache_hits"] == 2


def test_changed_python_scalar_argument_recompiles_exactly_once():
    def scale(a, s):
        return a * s
    jf = pijit(scale)
    x = T(np.arange(3, dtype=np.float32))
    assert_same_tensor(jf(x, 2.0), scale(x, 2.0))
    assert_same_tensor(jf(x, 3.0), scale(x, 3.0))
    assert stats(jf)["compile_count"] == 2
    assert_same_tensor(jf(x, 3.0), scale(x, 3.0))
    assert_same_tensor(jf(x, 2.0), scale(x, 2.0))
    assert stats(jf)["compile_count"] == 2
    assert stats(jf)["cache_hits"] == 2


@pytest.mark.parametrize("first,second", [(2.0, 2), (2, True), (1, 1.0), (True, 1.0)], ids=repr)
def test_equal_python_scalars_of_different_types_are_not_confused(first, second):
    def scale(a, s):
        return a * s
    jf = pijit(scale)
    x = T(np.arange(3, dtype=np.int32))
    assert_same_tensor(jf(x, first), scale(x, first))
    assert_same_tensor(jf(x, second), scale(x, second))


def test_negative_zero_argument_is_not_confused_with_zero():
    def divide(a, s):
        return a / s
    jf = pijit(divide)
    x = T(np.array([1.0, -1.0], np.float32))
    jf(x, 0.0)
    assert_same_tensor(jf(x, -0.0), divide(x, -0.0))


def test_repeated_identical_nan_argument_is_a_cache_hit():
    def scale(a, s):
        return a * s
    jf = pijit(scale)
    x = T(np.ones(2, np.float32))
    nan = float("nan")
    jf(x, nan)
    assert_same_tensor(jf(x, nan), scale(x, nan))
    assert stats(jf)["compile_count"] == 1


def test_repeated_nan_value_argument_is_a_cache_hit():
    def scale(a, s):
        return a * s
    jf = pijit(scale)
    x = T(np.ones(2, np.float32))
    jf(x, float("nan"))
    jf(x, float("nan"))
    assert stats(jf)["compile_count"] == 1


def test_changed_strides_give_correct_results(rng):
    base = random_array(rng, (4, 4), np.float32)
    jf = pijit(f_add_op)
    c = T(base)
    t = T(base.T)
    assert_same_tensor(jf(c, c), f_add_op(c, c))
    assert_same_tensor(jf(t, t), f_add_op(t, t))
    assert_same_tensor(jf(c, t), f_add_op(c, t))


def test_recompile_limit_warns_once_and_stays_correct():
    def scale(a, s):
        return a * s
    jf = pijit(scale)
    x = T(np.ones(2, np.float32))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(12):
            assert_same_tensor(jf(x, float(i)), scale(x, float(i)))
    limit = [w for w in caught if "recompile limit" in str(w.message)]
    assert len(limit) == 1
    assert issubclass(limit[0].category, RuntimeWarning)
    s = stats(jf)
    assert s["compile_count"] == s["cache_entries"] < 12
    assert s["eager_count"] == 12 - s["compile_count"]


def test_reset_drops_cache_and_counters():
    jf = pijit(f_add_op)
    x = T(np.ones(2))
    jf(x, x)
    ms.reset(jf)
    assert stats(jf)["compile_count"] == 0
    assert stats(jf)["cache_entries"] == 0
    jf(x, x)
    assert stats(jf)["compile_count"] == 1


def test_get_code_extra_of_never_called_function_is_zero():
    def never(a):
        return a
    s = ms.get_code_extra(never)
    assert s["call_count"] == 0 and s["compile_count"] == 0 and s["reasons"] == []


def test_get_code_extra_of_plain_and_jitted_function_agree():
    def plain(a):
        return a + 1
    jf = pijit(plain)
    jf(T(np.ones(2)))
    assert ms.get_code_extra(plain)["compile_count"] == ms.get_code_extra(jf)["compile_count"] == 1


class OverridingTensor(ms.Tensor):
    """A Tensor subclass whose operators do something else."""

    def __add__(self, other):
        return ops.mul(self, other)

    def __neg__(self):
        return ops.exp(self)


@pytest.mark.parametrize("fn", [f_add_op, f_neg_op], ids=lambda f: f.__name__)
def test_tensor_subclass_operator_overrides_are_respected(fn):
    x = OverridingTensor(np.full(2, 3.0))
    args = (x, x)[:len(inspect.signature(fn).parameters)]
    assert_same_tensor(pijit(fn)(*args), fn(*args))


def test_tensor_subclass_method_override_is_respected():
    class OtherExp(ms.Tensor):
        def exp(self):
            return ops.neg(self)
    x = OtherExp(np.full(2, 3.0))
    assert_same_tensor(pijit(f_exp_method)(x), f_exp_method(x))


def test_parameter_inputs_give_eager_result():
    p = ms.Parameter(ms.Tensor(np.arange(3, dtype=np.float32)), name="p")
    x = T(np.ones(3, np.float32))
    run_and_compare(f_mlp_like_params, p, x)


def f_mlp_like_params(p, x):
    return ops.relu(p * x - 1.0) + p.sum()


# ---- outputs ----------------------------------------------------------------------------------------

def test_returning_an_input_tensor_returns_the_same_object():
    def identity(a):
        return a
    jf = pijit(identity)
    x = T(np.ones(3))
    assert jf(x) is x
    assert jf(x) is x  # cache hit too


def test_returning_a_second_argument_returns_that_object():
    def second(a, b):
        return b
    jf = pijit(second)
    x, y = T(np.ones(3)), T(np.zeros(3))
    assert jf(x, y) is y


def test_returning_a_tuple_of_tensors_and_constants():
    jf = pijit(f_many_outputs)
    a, b = T(np.arange(3, dtype=np.float32)), T(np.ones(3, np.float32))
    for _ in range(2):
        out = jf(a, b)
        assert_same_result(out, f_many_outputs(a, b))
        assert out[2][1] is a


def test_returning_the_same_computed_tensor_twice_gives_one_object():
    def twice(a):
        s = a + 1
        return s, s
    jf = pijit(twice)
    out = jf(T(np.ones(2)))
    assert out[0] is out[1]
    assert_same_result(out, twice(T(np.ones(2))))


def test_returning_a_list_of_tensors():
    def as_list(a, b):
        return [a * b, a - b]
    jf = pijit(as_list)
    a, b = T(np.arange(4.0)), T(np.full(4, 2.0))
    assert_same_result(jf(a, b), as_list(a, b))
    assert isinstance(jf(a, b), list)


def test_returning_only_python_constants():
    def constants(a):
        return 1, 2.5, "s", None, (True, False)
    jf = pijit(constants)
    assert jf(T(np.ones(1))) == constants(T(np.ones(1)))


def test_returning_a_mutable_argument_returns_the_same_object():
    def passthrough(a, items):
        return a + 1, items
    jf = pijit(passthrough)
    items = [1, 2]
    out = jf(T(np.ones(2)), items)
    assert out[1] is items


def test_unpacking_a_tuple_inside_the_function():
    def swap(a, b):
        c, d = b, a
        pair = (c, d)
        return pair[1] - pair[0]
    run_and_compare(swap, T(np.arange(3.0)), T(np.ones(3)))


def test_returned_tensor_is_new_each_call():
    jf = pijit(f_add_op)
    x = T(np.ones(2))
    r1 = jf(x, x)
    r2 = jf(x, x)
    assert r1 is not r2
    r1.asnumpy()[0] = 100.0  # writing into one result must not change the other
    assert r2.asnumpy()[0] == 2.0


# ---- arguments: keywords, defaults, errors ----------------------------------------------------------

def f_kwonly(a, *, b, scale=3.0):
    return a * scale - b


def test_keyword_arguments_give_eager_result():
    jf = pijit(f_add_op)
    x, y = T(np.arange(3.0)), T(np.ones(3))
    assert_same_tensor(jf(x, b=y), f_add_op(x, b=y))
    assert_same_tensor(jf(b=y, a=x), f_add_op(b=y, a=x))
    s = stats(jf)
    assert s["compile_count"] >= 1 and s["eager_count"] == 0 and s["reasons"] == []


def test_keyword_only_arguments_and_defaults_give_eager_result():
    jf = pijit(f_kwonly)
    x, y = T(np.arange(3.0)), T(np.ones(3))
    assert_same_tensor(jf(x, b=y), f_kwonly(x, b=y))
    assert_same_tensor(jf(x, b=y, scale=0.5), f_kwonly(x, b=y, scale=0.5))
    assert stats(jf)["eager_count"] == 0
    assert stats(jf)["compile_count"] == 2


def test_default_arguments_give_eager_result():
    def with_defaults(a, scale=2.0, shift=1):
        return a * scale + shift
    jf = pijit(with_defaults)
    x = T(np.arange(3, dtype=np.float32))
    assert_same_tensor(jf(x), with_defaults(x))
    assert_same_tensor(jf(x, 4.0), with_defaults(x, 4.0))
    assert_same_tensor(jf(x, shift=5), with_defaults(x, shift=5))
    s = stats(jf)
    assert s["eager_count"] == 0 and s["reasons"] == []


def test_repeated_keyword_call_is_a_cache_hit():
    jf = pijit(f_add_op)
    x = T(np.ones(2))
    jf(x, b=x)
    jf(x, b=x)
    assert stats(jf)["compile_count"] == 1
    assert stats(jf)["cache_hits"] == 1


WRONG_CALLS = {
    "too_few": ((T(np.ones(2)),), {}),
    "none": ((), {}),
    "too_many": ((T(np.ones(2)),) * 3, {}),
    "unexpected_keyword": ((T(np.ones(2)), T(np.ones(2))), {"c": 1}),
    "multiple_values": ((T(np.ones(2)),), {"a": T(np.ones(2))}),
}


@pytest.mark.parametrize("call", WRONG_CALLS.values(), ids=WRONG_CALLS.keys())
def test_wrong_arguments_raise_the_same_type_error_as_the_plain_function(call):
    args, kwargs = call
    jf = pijit(f_add_op)
    eager = outcome(f_add_op, *args, **kwargs)
    assert eager[0] is TypeError
    assert outcome(jf, *args, **kwargs) == eager


@pytest.mark.parametrize("kwargs", [{}, {"b": 1}, {"scale": 2.0}], ids=str)
def test_wrong_arguments_to_keyword_only_function_raise_the_same_type_error(kwargs):
    jf = pijit(f_kwonly)
    x = T(np.ones(2))
    eager = outcome(f_kwonly, x, x, **kwargs)
    assert eager[0] is TypeError
    assert outcome(jf, x, x, **kwargs) == eager


# ---- guarded globals, closures and attributes -------------------------------------------------------

GLOBAL_BIAS = ms.Tensor(np.array([1.0, 2.0, 3.0], np.float32))
GLOBAL_SCALE = 2.0


def uses_globals(a):
    return a * GLOBAL_SCALE + GLOBAL_BIAS


def test_global_tensor_rebinding_gives_new_result(monkeypatch):
    jf = pijit(uses_globals)
    x = T(np.ones(3, np.float32))
    assert_same_tensor(jf(x), uses_globals(x))
    monkeypatch.setitem(globals(), "GLOBAL_BIAS", ms.Tensor(np.array([10.0, 20.0, 30.0], np.float32)))
    out = jf(x)
    np.testing.assert_array_equal(out.asnumpy(), [12.0, 22.0, 32.0])
    assert_same_tensor(out, uses_globals(x))


def test_global_tensor_rebinding_to_new_shape_recompiles(monkeypatch):
    jf = pijit(uses_globals)
    x = T(np.ones((2, 3), np.float32))
    jf(x)
    monkeypatch.setitem(globals(), "GLOBAL_BIAS", ms.Tensor(np.ones((2, 1), np.float64)))
    assert_same_tensor(jf(x), uses_globals(x))
    assert stats(jf)["compile_count"] == 2


def test_global_float_rebinding_gives_new_result(monkeypatch):
    jf = pijit(uses_globals)
    x = T(np.ones(3, np.float32))
    jf(x)
    monkeypatch.setitem(globals(), "GLOBAL_SCALE", 5.0)
    out = jf(x)
    np.testing.assert_array_equal(out.asnumpy(), [6.0, 7.0, 8.0])
    assert_same_tensor(out, uses_globals(x))
    assert stats(jf)["compile_count"] == 2


def test_global_rebinding_back_hits_the_first_entry(monkeypatch):
    jf = pijit(uses_globals)
    x = T(np.ones(3, np.float32))
    jf(x)
    monkeypatch.setitem(globals(), "GLOBAL_SCALE", 5.0)
    jf(x)
    monkeypatch.setitem(globals(), "GLOBAL_SCALE", 2.0)
    assert_same_tensor(jf(x), uses_globals(x))
    assert stats(jf)["compile_count"] == 2


def test_closure_variable_rebinding_gives_new_result():
    k = ms.Tensor(np.full(3, 2.0, np.float32))

    def uses_closure(a):
        return a * k
    jf = pijit(uses_closure)
    x = T(np.arange(3, dtype=np.float32))
    assert_same_tensor(jf(x), uses_closure(x))
    k = ms.Tensor(np.full(3, 7.0, np.float32))  # noqa: F841 - read through the closure
    assert_same_tensor(jf(x), uses_closure(x))
    np.testing.assert_array_equal(jf(x).asnumpy(), [0.0, 7.0, 14.0])


def test_object_attribute_change_gives_new_result():
    class Holder:
        factor = 2.0
    h = Holder()

    def uses_attr(a, holder):
        return a * holder.factor
    jf = pijit(uses_attr)
    x = T(np.ones(2, np.float32))
    jf(x, h)
    h.factor = 9.0
    assert_same_tensor(jf(x, h), uses_attr(x, h))


# ---- capture regions --------------------------------------------------------------------------------

def captured_plain(a, b):
    return ops.mul(a, b) + a


def test_capture_context_compiles_plain_function_and_gives_eager_result():
    ms.reset(captured_plain)
    x = T(np.arange(4, dtype=np.float32))
    y = T(np.full(4, 3.0, np.float32))
    expected = captured_plain(x, y)
    with ms.capture():
        out = captured_plain(x, y)
    assert_same_tensor(out, expected)
    s = ms.get_code_extra(captured_plain)
    assert s["compile_count"] >= 1
    assert s["reasons"] == []


def test_capture_context_reuses_the_cache_on_repeated_calls():
    ms.reset(captured_plain)
    x = T(np.ones(3))
    with ms.capture():
        for _ in range(3):
            captured_plain(x, x)
    s = ms.get_code_extra(captured_plain)
    assert s["compile_count"] == 1 and s["cache_hits"] == 2


def test_calls_after_capture_context_are_not_captured():
    ms.reset(captured_plain)
    x = T(np.ones(3))
    with ms.capture():
        captured_plain(x, x)
    before = ms.get_code_extra(captured_plain)["call_count"]
    assert_same_tensor(captured_plain(x, x), ops.mul(x, x) + x)
    assert ms.get_code_extra(captured_plain)["call_count"] == before


def captured_outer(a):
    if float(ops.sum(a)) > 0:  # data-dependent: breaks the graph; the rest is captured on resume
        return captured_inner(a)
    return a


def captured_inner(a):
    return a * 2.0 - 1.0


def test_capture_context_captures_the_code_after_a_graph_break():
    ms.reset(captured_outer)
    ms.reset(captured_inner)
    x = T(np.arange(1, 4, dtype=np.float64))
    with ms.capture():
        out = captured_outer(x)
    assert_same_tensor(out, captured_inner(x))
    stats_outer = ms.get_code_extra(captured_outer)
    assert stats_outer["reasons"] and stats_outer["total_break_count"] >= 1
    # captured_inner is inlined into the graph of the resume function after the break.
    assert any("mul" in g and "sub" in g for g in stats_outer["all_graphs"])


def test_capture_context_exits_on_exception():
    with pytest.raises(ZeroDivisionError):
        with ms.capture():
            1 / 0
    ms.reset(captured_plain)
    captured_plain(T(np.ones(1)), T(np.ones(1)))
    assert ms.get_code_extra(captured_plain)["call_count"] == 0


# ---- nn.Cell and context modes ----------------------------------------------------------------------

class AddNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.add = ops.Add()

    def construct(self, x, y):
        return self.add(x, y)


class MulAddNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.add = ops.Add()
        self.mul = ops.Mul()
        self.w = ms.Parameter(ms.Tensor(np.array([0.5, 2.0, -1.0], np.float32)), name="w")

    def construct(self, x, y):
        return self.mul(self.add(x, y), self.w) + self.mul(x, y)


class PrintNet(nn.Cell):
    def construct(self, x):
        print(x)  # BREAK
        return x


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["GRAPH", "PYNATIVE"])
@pytest.mark.parametrize("net_cls", [AddNet, MulAddNet], ids=lambda c: c.__name__)
def test_cell_gives_eager_result_in_both_modes(pynative_after, mode, net_cls, rng):
    net = net_cls()
    x = T(random_array(rng, (3,), np.float32))
    y = T(random_array(rng, (3,), np.float32))
    expected = net.construct(x, y)
    ms.set_context(mode=mode)
    assert_same_tensor(net(x, y), expected)
    assert_same_tensor(net(x, y), expected)


def test_cell_in_graph_mode_compiles_construct(pynative_after):
    ms.reset(MulAddNet.construct)
    net = MulAddNet()
    x, y = T(np.ones(3, np.float32)), T(np.full(3, 2.0, np.float32))
    ms.set_context(mode=ms.GRAPH_MODE)
    net(x, y)
    net(x, y)
    s = ms.get_code_extra(MulAddNet.construct)
    assert s["compile_count"] == 1 and s["cache_hits"] == 1 and s["reasons"] == []
    assert "mul" in s["graphs"][0] and "add" in s["graphs"][0]


def test_cell_in_pynative_mode_is_not_compiled(pynative_after):
    ms.reset(AddNet.construct)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    AddNet()(T(np.ones(2)), T(np.ones(2)))
    assert ms.get_code_extra(AddNet.construct)["compile_count"] == 0


def test_two_cell_instances_with_different_parameters_give_their_own_results(pynative_after):
    ms.set_context(mode=ms.GRAPH_MODE)
    a, b = MulAddNet(), MulAddNet()
    b.w = ms.Parameter(ms.Tensor(np.array([3.0, 3.0, 3.0], np.float32)), name="w")
    x, y = T(np.ones(3, np.float32)), T(np.full(3, 2.0, np.float32))
    assert_same_tensor(a(x, y), a.construct(x, y))
    assert_same_tensor(b(x, y), b.construct(x, y))
    assert_same_tensor(a(x, y), a.construct(x, y))


def test_short_lived_cells_do_not_exhaust_the_cache(pynative_after):
    ms.reset(AddNet.construct)
    ms.set_context(mode=ms.GRAPH_MODE)
    x = T(np.arange(3, dtype=np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for _ in range(12):
            net = AddNet()
            assert_same_tensor(net(x, x), x + x)
            del net
            gc.collect()
    assert ms.get_code_extra(AddNet.construct)["eager_count"] == 0


def test_uncapturable_cell_in_graph_mode_raises_graph_break_error(pynative_after, capsys):
    ms.set_context(mode=ms.GRAPH_MODE)
    with pytest.raises(ms.GraphBreakError, match=r"print\(x\)"):
        PrintNet()(T(np.ones(2)))


def test_set_context_restores_pynative(pynative_after):
    ms.set_context(mode=ms.GRAPH_MODE)
    assert ms.get_context("mode") == ms.GRAPH_MODE
    ms.set_context(mode=ms.PYNATIVE_MODE)
    assert ms.get_context("mode") == ms.PYNATIVE_MODE


def test_set_context_rejects_unknown_mode():
    with pytest.raises(ValueError):
        ms.set_context(mode=5)


# ---- methods ----------------------------------------------------------------------------------------

class Scaler:
    def __init__(self, factor, bias):
        self.factor = factor
        self.bias = bias

    @ms.jit(mode="PIJit")
    def apply(self, x):
        return x * self.factor + self.bias

    def apply_eager(self, x):
        return x * self.factor + self.bias


def test_jitted_method_in_class_body_gives_eager_result():
    ms.reset(Scaler.apply)
    s = Scaler(3.0, ms.Tensor(np.array([1.0, -1.0], np.float32)))
    x = T(np.array([2.0, 4.0], np.float32))
    assert_same_tensor(s.apply(x), s.apply_eager(x))
    assert_same_tensor(s.apply(x), s.apply_eager(x))
    st_ = ms.get_code_extra(Scaler.apply)
    assert st_["compile_count"] == 1 and st_["cache_hits"] == 1 and st_["reasons"] == []


def test_jitted_method_distinguishes_instances():
    ms.reset(Scaler.apply)
    x = T(np.array([2.0, 4.0], np.float32))
    a = Scaler(3.0, ms.Tensor(np.zeros(2, np.float32)))
    b = Scaler(-1.0, ms.Tensor(np.ones(2, np.float32)))
    for _ in range(2):
        assert_same_tensor(a.apply(x), a.apply_eager(x))
        assert_same_tensor(b.apply(x), b.apply_eager(x))


def test_jitted_method_called_through_the_class():
    s = Scaler(2.0, 1.0)
    x = T(np.ones(2, np.float32))
    assert_same_tensor(Scaler.apply(s, x), s.apply_eager(x))


# ---- the jit decorator itself -----------------------------------------------------------------------

def test_jit_rejects_unknown_mode():
    with pytest.raises(ValueError, match="mode"):
        ms.jit(f_add_op, mode="Graph")


def test_jit_rejects_unknown_options():
    with pytest.raises(TypeError):
        ms.jit(f_add_op, speed=3)


def test_jit_rejects_non_functions():
    with pytest.raises(TypeError):
        ms.jit(len)


def test_jit_of_jitted_function_is_the_same_object():
    jf = ms.jit(f_add_op, mode="PIJit")
    assert ms.jit(jf) is jf


def test_jitted_function_exposes_wrapped_function_and_name():
    jf = ms.jit(f_add_op, mode="PIJit")
    assert jf.__wrapped__ is f_add_op
    assert jf.__name__ == "f_add_op"
    assert "f_add_op" in repr(jf)


def test_jitted_function_keeps_the_docstring():
    def documented(a):
        """Adds one."""
        return a + 1
    assert ms.jit(documented, mode="PIJit").__doc__ == "Adds one."


# ---- reference counts -------------------------------------------------------------------------------

def refcounts(*objs):
    gc.collect()
    return [sys.getrefcount(o) for o in objs]


def f_identity_and_tuple(a, b, c):
    return a, (b, a + c), [c]


def f_eager_fallback(a, b, c):
    if float(ops.sum(a)) > 0:
        return a @ b + c
    return a


def call_positional(jf, x, y, z):
    return jf(x, y, z)


def call_keywords(jf, x, y, z):
    return jf(x, y, c=z) if jf.__wrapped__ is not f_tensor_cal else jf(x, y=y, z=z)


@pytest.mark.parametrize("fn,call", [(f_tensor_cal, call_positional), (f_tensor_cal, call_keywords),
                                     (f_identity_and_tuple, call_positional),
                                     (f_eager_fallback, call_positional)],
                         ids=["graph", "keywords", "identity_tuple", "eager_fallback"])
def test_1000_jitted_calls_do_not_change_input_refcounts(fn, call):
    x = T(np.ones((2, 3), np.float32))
    y = T(np.ones((3, 3), np.float32))
    z = T(np.ones((2, 3), np.float32))
    jf = pijit(fn)
    call(jf, x, y, z)  # compile outside the measurement
    start = refcounts(x, y, z)
    for _ in range(1000):
        call(jf, x, y, z)
    assert refcounts(x, y, z) == start
    s = stats(jf)
    assert s["call_count"] == 1001 and s["compile_count"] == 1


def test_1000_failing_jitted_calls_do_not_change_input_refcounts():
    x = T(np.ones((2, 3), np.float32))
    bad = T(np.ones(4, np.float32))
    jf = pijit(f_add_op)
    start = refcounts(x, bad)
    for _ in range(1000):
        with pytest.raises(ValueError):
            jf(x, bad)
    assert refcounts(x, bad) == start


def test_jitted_function_does_not_keep_its_result_alive():
    jf = pijit(f_add_op)
    x = T(np.ones(2))
    out = jf(x, x)
    jf(x, x)
    assert sys.getrefcount(out) == 2  # only `out` and the getrefcount argument
