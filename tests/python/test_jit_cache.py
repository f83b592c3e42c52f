"""pijit.jit's cache: counters of compiles, hits and recompiles, what recompiles (dtype, shape,
Python scalars of other types or values, strides) and what does not, the recompile limit,
reset and get_code_extra, Tensor subclasses and Parameters as inputs, and guarded globals,
closure variables and attributes (rebinding gives the new result)."""
import inspect
import warnings

import numpy as np
import pytest

import pijit as ms
from pijit import ops
from jit_testutil import _quiet_numpy, rng  # noqa: F401 (fixtures)
from jit_testutil import (T, f_add_op, f_exp_method, f_mul_op, f_neg_op, f_tensor_cal, pijit,
                          run_and_compare, stats)
from pijit_testutil import assert_same_tensor, random_array


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
        return a * s if s != 5.5 else a  # the comparison makes each entry depend on s's value
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
        return a * s if s != 5.5 else a  # the comparison makes each entry depend on s's value
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
        return a * s if s != 5.5 else a  # the comparison makes each entry depend on s's value
    jf = pijit(scale)
    x = T(np.ones(2, np.float32))
    nan = float("nan")
    jf(x, nan)
    assert_same_tensor(jf(x, nan), scale(x, nan))
    assert stats(jf)["compile_count"] == 1


def test_repeated_nan_value_argument_is_a_cache_hit():
    def scale(a, s):
        return a * s if s != 5.5 else a  # the comparison makes each entry depend on s's value
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
        return a * s if s != 5.5 else a  # the comparison makes each entry depend on s's value
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


def compiled_uses_globals(shape):
    """uses_globals freshly jitted and compiled for an input of ones of `shape`; both."""
    jf = pijit(uses_globals)
    x = T(np.ones(shape, np.float32))
    jf(x)
    return jf, x


def test_global_tensor_rebinding_to_new_shape_recompiles(monkeypatch):
    jf, x = compiled_uses_globals((2, 3))
    monkeypatch.setitem(globals(), "GLOBAL_BIAS", ms.Tensor(np.ones((2, 1), np.float64)))
    assert_same_tensor(jf(x), uses_globals(x))
    assert stats(jf)["compile_count"] == 2


def test_global_float_rebinding_gives_new_result(monkeypatch):
    jf, x = compiled_uses_globals(3)
    monkeypatch.setitem(globals(), "GLOBAL_SCALE", 5.0)
    out = jf(x)
    np.testing.assert_array_equal(out.asnumpy(), [6.0, 7.0, 8.0])
    assert_same_tensor(out, uses_globals(x))
    assert stats(jf)["compile_count"] == 2


def test_global_rebinding_back_hits_the_first_entry(monkeypatch):
    jf, x = compiled_uses_globals(3)
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
