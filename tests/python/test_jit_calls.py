"""Calling jitted functions: outputs (inputs returned as the same objects, tuples, lists,
constants), keyword and default arguments and the TypeErrors of wrong calls, jitted methods,
the jit decorator itself (modes, options, what it accepts and keeps), and reference counts
(inputs and results are not leaked by jitted calls)."""
import gc
import sys

import numpy as np
import pytest

import pijit as ms
from pijit import ops
from jit_testutil import _quiet_numpy  # noqa: F401 (autouse fixture)
from jit_testutil import (T, f_add_op, f_kwonly, f_many_outputs, f_tensor_cal, outcome, pijit,
                          run_and_compare, stats)
from pijit_testutil import assert_same_result, assert_same_tensor


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
