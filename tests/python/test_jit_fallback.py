"""pijit.jit falling back: bad input raises what eager raises, unsupported code breaks the
graph or runs eagerly and records why, strict mode (PSJit, bare @jit, fullgraph=True) raises
instead, and explain reports all of it."""
import inspect
import sys
import warnings

import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops
from jit_testutil import rng  # noqa: F401 (fixture)
from jit_testutil import (T, f_add_fn, f_add_op, f_exp_fn, f_kwonly, f_log_prim, f_matmul_fn,
                          f_matmul_op, f_mlp, f_mul_op, f_mul_prim, f_sub_op, f_sum_axis,
                          f_tensor_cal, marked_line, marked_source, outcome, pijit,
                          run_and_compare, stats)
from pijit_testutil import assert_close_result, assert_same_result, assert_same_tensor, random_array

# ---- bad input raises what eager raises -------------------------------------------------------------

def f_int_overflow(a):
    return a + 2 ** 40


def f_bad_transpose(a):
    return ops.transpose(a, (0, 0))


def f_bad_reshape(a):
    return ops.reshape(a, (4, 4))


BAD_INPUTS = {
    "matmul_misaligned": (f_matmul_op, lambda: (T(np.ones((2, 3))), T(np.ones((4, 2))))),
    "matmul_0d": (f_matmul_fn, lambda: (T(np.float32(1)), T(np.ones(2, np.float32)))),
    "broadcast_mismatch": (f_add_op, lambda: (T(np.ones((2, 3))), T(np.ones(4)))),
    "broadcast_mismatch_prim": (f_mul_prim, lambda: (T(np.ones((2, 3))), T(np.ones((3, 2))))),
    "exp_of_bool": (f_exp_fn, lambda: (T(np.array([True, False])),)),
    "log_of_bool": (f_log_prim, lambda: (T(np.array([True])),)),
    "bool_subtract": (f_sub_op, lambda: (T(np.array([True])), T(np.array([False])))),
    "int32_overflow": (f_int_overflow, lambda: (T(np.array([1], np.int32)),)),
    "bad_axis": (f_sum_axis, lambda: (T(np.float32(2)),)),
    "bad_transpose": (f_bad_transpose, lambda: (T(np.ones((2, 2))),)),
    "bad_reshape": (f_bad_reshape, lambda: (T(np.ones((2, 3))),)),
    "function_with_none": (f_add_fn, lambda: (T(np.ones(2)), None)),
    "operator_with_none": (f_add_op, lambda: (T(np.ones(2)), None)),
    "operator_with_str": (f_mul_op, lambda: (T(np.ones(2)), "s")),
}

def bad_input_params():
    for name, case in BAD_INPUTS.items():
        for mode in ("PIJit", "PSJit"):
            yield pytest.param(case, mode, id=f"{name}-{mode}")


@pytest.mark.parametrize("case,mode", bad_input_params())
def test_bad_input_raises_same_exception_jitted_as_eager(case, mode):
    fn, make_args = case
    args = make_args()
    eager = outcome(fn, *args)
    assert eager[0] not in ("ok", ms.GraphBreakError), eager
    jf = ms.jit(fn, mode=mode)
    ms.reset(jf)
    assert outcome(jf, *args) == eager
    assert outcome(jf, *args) == eager  # from the cached entry
    assert stats(jf)["compile_count"] == 1


def test_bad_input_error_message_names_both_shapes_when_jitted():
    jf = pijit(f_matmul_op)
    with pytest.raises(ValueError) as info:
        jf(T(np.ones((2, 3))), T(np.ones((4, 2))))
    assert "(2, 3)" in str(info.value) and "(4, 2)" in str(info.value)


def test_bad_input_after_good_input_still_raises():
    jf = pijit(f_add_op)
    jf(T(np.ones((2, 3))), T(np.ones(3)))
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(4,\)"):
        jf(T(np.ones((2, 3))), T(np.ones(4)))
    assert_same_tensor(jf(T(np.ones((2, 3))), T(np.ones(3))), f_add_op(T(np.ones((2, 3))), T(np.ones(3))))


# ---- unsupported code runs eagerly and records why ---------------------------------------------------

def helper_that_prints(a):
    b = a + 1
    print("helper side effect")  # captured: replayed after the graph
    return b


def helper_that_breaks(a):
    b = a + 1
    ms.graph_break()  # BREAK
    return b


def u_if(a):
    if float(ops.sum(a)) > 0:  # BREAK
        return a * 2
    return a


def u_truth_value(a):
    if a:  # BREAK
        return a * 2
    return -a


def u_print(a):
    b = a + 1
    print("side effect", b.shape)  # captured: replayed after the graph
    return b * 3


def u_helper(a, b):
    c = a * b
    return helper_that_prints(c) - b


def u_graph_break(a):
    b = a + 1
    ms.graph_break()  # BREAK
    return b * 3


def u_break_helper(a, b):
    c = a * b
    return helper_that_breaks(c) - b


def u_asnumpy(a):
    n = a.asnumpy()  # BREAK
    return ms.Tensor(n * 2) + a


def u_while_loop(a):
    while float(ops.mean(a)) < 100.0:  # BREAK
        a = a * 2.0
    return a


def u_python_number(a):
    return float(ops.sum(a)) * a  # BREAK


# function under test -> function whose "# BREAK" line stops capture (in bytecode mode)
UNSUPPORTED = {u_if: u_if, u_truth_value: u_truth_value, u_graph_break: u_graph_break,
               u_break_helper: helper_that_breaks, u_asnumpy: u_asnumpy,
               u_while_loop: u_while_loop, u_python_number: u_python_number}
UNSUPPORTED_PARAMS = [pytest.param(fn, site, id=fn.__name__) for fn, site in UNSUPPORTED.items()]
# Every mode compiles print (replayed after the graph); whole-graph mode compiles an `if` on a
# tensor (both ways, joined: tests/python/test_whole_graph_if.py) and refuses the rest.
STRICT_UNSUPPORTED_PARAMS = [p for p in UNSUPPORTED_PARAMS if p.values[0] is not u_truth_value]


def unsupported_args(fn):
    if fn is u_truth_value:
        return (T(np.array([1.5], np.float32)),)
    x = T(np.arange(6, dtype=np.float32).reshape(2, 3))
    return (x, T(np.full(3, 2.0, np.float32))) if fn in (u_helper, u_break_helper) else (x,)


@pytest.mark.parametrize("fn,site", UNSUPPORTED_PARAMS)
def test_unsupported_code_returns_the_eager_result(fn, site, capsys):
    args = unsupported_args(fn)
    jf = pijit(fn)
    assert_same_result(jf(*args), fn(*args))
    assert_same_result(jf(*args), fn(*args))


@pytest.mark.parametrize("fn,site", UNSUPPORTED_PARAMS)
def test_unsupported_code_records_reason_with_category_file_and_line(fn, site, capsys):
    jf = pijit(fn)
    jf(*unsupported_args(fn))
    s = stats(jf)
    assert len(s["reasons"]) == 1
    r = s["reasons"][0]
    assert isinstance(r["category"], str) and r["category"].isidentifier()
    assert r["category"] not in ("internal", "invalid_input", "python_error")
    assert r["file"] == __file__
    assert r["line"] == marked_line(site)
    assert r["explanation"]
    assert r["category"] in r["text"] and f"{r['file']}:{r['line']}" in r["text"]
    # The function either breaks its graph there or, where it cannot, runs eagerly.
    assert s["compile_count"] == 1 and s["break_count"] == 1


@pytest.mark.parametrize("fn,site", UNSUPPORTED_PARAMS)
def test_unsupported_code_is_not_recompiled_on_repeated_calls(fn, site, capsys):
    jf = pijit(fn)
    args = unsupported_args(fn)
    for _ in range(3):
        jf(*args)
    s = stats(jf)
    assert s["compile_count"] == 1
    assert s["cache_hits"] == 2
    assert len(s["reasons"]) == 1


def static_if(a):
    if a.ndim > 1:
        return a * 2
    return a


def range_loop(a):
    for i in range(3):
        a = a + i
    return a


def plain_helper(a):
    return a * 3.0 - 1.0


def calls_plain_helper(a, b):
    return plain_helper(a) + b


def shape_branch(a):
    n = a.shape[0]
    if n == 2 and a.dtype == ms.float32:
        return a.reshape(-1)
    return a.sum(0)


@pytest.mark.parametrize("fn", [static_if, range_loop, calls_plain_helper, shape_branch],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_python_control_flow_and_helpers_give_eager_result(fn, dtype):
    # Captured or run eagerly: either way the result is the eager one, call after call.
    x = T(np.arange(6, dtype=dtype).reshape(2, 3))
    args = (x, T(np.ones(3, dtype))) if fn is calls_plain_helper else (x,)
    run_and_compare(fn, *args, expect_graph=False)
    y = T(np.arange(3, dtype=dtype))
    jf = pijit(fn)
    args = (y, y) if fn is calls_plain_helper else (y,)
    assert_same_result(jf(*args), fn(*args))


def maybe_log(a, verbose):
    if verbose:
        print("value", a.shape)  # captured: replayed after the graph
    return a * 2.0


def maybe_break(a, verbose):
    if verbose:
        ms.graph_break()  # BREAK
    return a * 2.0


GUARD_FREE_EAGER_BUG = ("an uncapturable call stores a guard-free eager cache entry (dispatch.cc: "
                        "'code pijit cannot capture will not [capture with other inputs]'), but "
                        "capture follows branches on Python values, so later calls that are "
                        "capturable match that entry: ")


def test_uncapturable_branch_does_not_stop_capture_of_other_branch(capsys):
    jf = pijit(maybe_break)
    x = T(np.ones(3, np.float32))
    assert_same_tensor(jf(x, True), maybe_break(x, True))
    assert_same_tensor(jf(x, False), maybe_break(x, False))
    assert_same_tensor(jf(x, False), maybe_break(x, False))
    s = stats(jf)
    assert s["compile_count"] == 2
    assert s["break_count"] == 1


def maybe_to_numpy(a, convert):
    if convert:
        a = ms.Tensor(a.asnumpy())  # BREAK
    return a * 2.0


def test_strict_graph_break_for_one_input_does_not_break_other_inputs(capsys):
    jf = ms.jit(maybe_to_numpy)
    ms.reset(jf)
    x = T(np.ones(3, np.float32))
    with pytest.raises(ms.GraphBreakError):
        jf(x, True)
    assert_same_tensor(jf(x, False), maybe_to_numpy(x, False))


def test_strict_mode_capturable_branch_first_then_uncapturable_branch_raises(capsys):
    jf = ms.jit(maybe_to_numpy)
    ms.reset(jf)
    x = T(np.ones(3, np.float32))
    assert_same_tensor(jf(x, False), maybe_to_numpy(x, False))
    with pytest.raises(ms.GraphBreakError, match=r"a.asnumpy\(\)"):
        jf(x, True)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("strict", [lambda fn: ms.jit(fn), lambda fn: ms.jit(fn, mode="PSJit"),
                                    lambda fn: ms.jit(fn, mode="PIJit", fullgraph=True)],
                         ids=["bare", "PSJit", "fullgraph"])
@pytest.mark.parametrize("fn", [maybe_log, u_print, u_helper], ids=lambda f: f.__name__)
def test_whole_graph_mode_prints_after_the_graph_with_this_calls_values(strict, fn, capsys):
    args = ((T(np.arange(3, dtype=np.float32)), True) if fn is maybe_log else unsupported_args(fn))
    want = fn(*args)
    printed = capsys.readouterr().out
    jf = strict(fn)
    ms.reset(jf)
    for _ in range(2):
        assert_same_result(jf(*args), want)
        assert capsys.readouterr().out == printed
    s = stats(jf)
    assert s["graph_count"] == 1 and s["total_break_count"] == 0 and s["compile_count"] == 1


def test_print_in_unsupported_function_runs_once_per_call(capsys):
    jf = pijit(u_print)
    x = T(np.ones((2, 3), np.float32))
    jf(x)
    jf(x)
    assert capsys.readouterr().out == "side effect (2, 3)\n" * 2


def test_helper_called_from_eager_fallback_runs_normally():
    calls = []

    def recorder(a):
        calls.append(1)
        return a

    def uses_recorder(a):
        return recorder(a) + 1
    jf = pijit(uses_recorder)
    jf(T(np.ones(2)))
    assert calls == [1]


def test_varargs_function_is_captured_and_guards_the_tuple_length():
    def varargs(*xs):
        return xs[0] + xs[1] * len(xs)
    jf = pijit(varargs)
    x, y = T(np.ones(2)), T(np.arange(2.0))
    assert_same_tensor(jf(x, y), varargs(x, y))
    assert_same_tensor(jf(y, x), varargs(y, x))
    assert stats(jf)["compile_count"] == 1 and stats(jf)["eager_count"] == 0
    assert_same_tensor(jf(x, y, y), varargs(x, y, y))  # another length: another entry
    assert stats(jf)["compile_count"] == 2


def test_kwargs_function_is_one_graph():
    def kwargs_fn(a, **kw):
        return a + kw["b"]
    jf = pijit(kwargs_fn)
    x = T(np.ones(2))
    assert_same_tensor(jf(x, b=x), kwargs_fn(x, b=x))
    assert stats(jf)["reasons"] == [] and stats(jf)["graph_count"] == 1


def test_try_block_body_without_breaks_is_one_graph():
    def guarded(a):
        try:
            return a + 1
        except ValueError:
            return a
    jf = pijit(guarded)
    x = T(np.ones(2))
    assert_same_tensor(jf(x), guarded(x))
    assert stats(jf)["reasons"] == [] and stats(jf)["graph_count"] == 1


def test_exception_raised_by_the_function_itself_propagates():
    def raises(a):
        b = a + 1
        raise KeyError("boom")  # BREAK
        return b  # noqa: unreachable
    jf = pijit(raises)
    with pytest.raises(KeyError, match="boom"):
        jf(T(np.ones(2)))


# ---- strict mode: PSJit, bare @jit, fullgraph=True --------------------------------------------------

STRICT_MODES = {
    "PSJit": lambda fn: ms.jit(fn, mode="PSJit"),
    "bare_decorator": lambda fn: ms.jit(fn),
    "fullgraph": lambda fn: ms.jit(fn, mode="PIJit", fullgraph=True),
    "decorator_factory": lambda fn: ms.jit()(fn),
    "ms_function": lambda fn: ms.ms_function(fn),
}


@pytest.mark.parametrize("strict", STRICT_MODES.values(), ids=STRICT_MODES.keys())
@pytest.mark.parametrize("fn,site", STRICT_UNSUPPORTED_PARAMS)
def test_strict_mode_raises_graph_break_error_with_the_source_line(strict, fn, site, capsys):
    jf = strict(fn)
    ms.reset(jf)
    args = unsupported_args(fn)
    for _ in range(2):  # the first call and the cached entry
        with pytest.raises(ms.GraphBreakError) as info:
            jf(*args)
        msg = str(info.value)
        assert marked_source(site) in msg
        assert f"{__file__}:{marked_line(site)}" in msg
        assert fn.__name__ in msg
    assert capsys.readouterr().out == ""  # nothing of the function ran


def test_graph_break_error_is_a_runtime_error():
    assert issubclass(ms.GraphBreakError, RuntimeError)


@pytest.mark.parametrize("strict", STRICT_MODES.values(), ids=STRICT_MODES.keys())
def test_strict_mode_on_capturable_code_gives_eager_result(strict, rng):
    jf = strict(f_mlp)
    ms.reset(jf)
    args = [T(random_array(rng, s, np.float32)) for s in [(4, 5), (5, 6), (6,), (6, 2)]]
    assert_same_tensor(jf(*args), f_mlp(*args))
    assert stats(jf)["compile_count"] == 1


def test_seed_psjit_tensor_cal_in_process():
    @ms.jit
    def tensor_cal(x, y, z):
        return ops.matmul(x, y) + z
    x = ms.Tensor(np.ones(shape=[2, 3]), ms.float32)
    y = ms.Tensor(np.ones(shape=[3, 4]), ms.float32)
    z = ms.Tensor(np.ones(shape=[2, 4]), ms.float32)
    np.testing.assert_array_equal(tensor_cal(x, y, z).asnumpy(), np.full((2, 4), 4.0, np.float32))


# ---- explain ----------------------------------------------------------------------------------------

def test_explain_capturable_function_has_graph_with_op_names_and_no_reasons():
    x = T(np.ones((2, 3), np.float32))
    y = T(np.ones((3, 4), np.float32))
    z = T(np.ones((2, 4), np.float32))
    out = ms.explain(f_tensor_cal, x, y, z)
    assert isinstance(out, ms.ExplainOutput)
    assert out.break_reasons == []
    assert len(out.graphs) == 1
    assert "matmul" in out.graphs[0] and "add" in out.graphs[0]
    assert out.ops_count == 2
    assert "Graph count: 1" in str(out)


@pytest.mark.parametrize("fn,site", UNSUPPORTED_PARAMS)
def test_explain_unsupported_function_has_break_reasons(fn, site, capsys):
    out = ms.explain(fn, *unsupported_args(fn))
    assert len(out.break_reasons) == 1
    r = out.break_reasons[0]
    assert r["file"] == __file__ and r["line"] == marked_line(site)
    # A graph break shows the graph of the part before it; an eager fallback shows none.
    assert len(out.graphs) <= 1 and (out.breaks_graph or out.graphs == [])
    assert capsys.readouterr().out == ""  # explain does not run the function


def test_explain_neither_runs_nor_caches():
    def plain(a):
        return a + 1
    ms.reset(plain)
    ms.explain(plain, T(np.ones(2)))
    s = ms.get_code_extra(plain)
    assert s["call_count"] == 0 and s["compile_count"] == 0


def test_explain_accepts_jitted_function_and_keyword_arguments():
    jf = pijit(f_kwonly)
    out = ms.explain(jf, T(np.ones(2)), b=T(np.ones(2)), scale=4.0)
    assert out.break_reasons == []
    assert "mul" in out.graphs[0] and "sub" in out.graphs[0]


def test_explain_reports_the_invalid_input_error():
    out = ms.explain(f_add_op, T(np.ones((2, 3))), T(np.ones(4)))
    assert out.break_reasons
    assert "(2, 3)" in out.break_reasons[0]["explanation"]


def test_explain_primitives_appear_as_their_ops():
    out = ms.explain(f_mul_prim, T(np.ones(2)), T(np.ones(2)))
    assert out.break_reasons == [] and "mul" in out.graphs[0]


