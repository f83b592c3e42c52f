"""Graph breaks, the basics: a function that meets something capture cannot follow runs the
graph of the prefix, runs the breaking instruction in a bridge and continues in a resume
function. The shape of the split (graphs, breaks, resume functions, recompiles), branches on
tensor values (Python floats of tensors, tensor truth, and/or/not), breaks with values on the
value stack, keyword arguments and NULLs, and nested frames under `pijit.capture()`.

Every test compares eager, jitted and captured runs with graph_break_testutil.compare."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops
from graph_break_testutil import _reset_state  # noqa: F401 (autouse fixture)
from graph_break_testutil import LOG, NEG, T, X, compare, counters, unknown, unknown_kw, show
from pijit_testutil import assert_same_result


# ---- the split: graphs, breaks, resume functions ----------------------------------------------

def one_print(x):
    a = x * 2.0 + 1.0
    b = a - x
    show("middle", a.shape)
    c = b * b
    return c + a


def test_one_print_between_two_tensor_blocks_gives_two_graphs_and_one_break(capsys):
    stats, out, printed = compare(one_print, capsys=capsys, calls=3)
    assert printed == "middle (2, 3)\n"
    assert stats["graph_count"] == 2
    assert stats["total_break_count"] == 1
    assert stats["resume_functions"] == 1
    assert stats["compile_count"] == 1 and stats["cache_hits"] == 2
    r = stats["all_reasons"][0]
    assert r["category"] == "unsupported_call" and "cannot be captured" in r["explanation"]
    assert r["line"] == one_print.__code__.co_firstlineno + 3


def three_prints(x):
    a = x + 1.0
    show("one")
    b = a * 2.0
    show("two")
    c = b - 3.0
    show("three")
    return c * c


def test_three_breaks_in_sequence_give_four_functions(capsys):
    stats, out, printed = compare(three_prints, capsys=capsys, calls=3)
    assert printed == "one\ntwo\nthree\n"
    assert stats["total_break_count"] == 3
    assert stats["resume_functions"] == 3  # + the function itself: four functions
    assert stats["graph_count"] == 4
    assert sorted(r["line"] for r in stats["all_reasons"]) == [
        three_prints.__code__.co_firstlineno + i for i in (2, 4, 6)]


def test_repeated_calls_do_not_recompile(capsys):
    jf = ms.jit(three_prints, mode="PIJit")
    ms.reset(jf)
    x = X()
    jf(x)
    first = counters(ms.get_code_extra(jf))
    for _ in range(5):
        assert_same_result(jf(x), three_prints(x))
    later = ms.get_code_extra(jf)
    assert counters(later) == first
    assert later["call_count"] == 6 and later["cache_hits"] == 5
    assert len(later["all_reasons"]) == 3
    assert capsys.readouterr().out == "one\ntwo\nthree\n" * 11


def test_new_shapes_and_dtypes_after_a_break_recompile_and_stay_correct(capsys):
    jf = ms.jit(one_print, mode="PIJit")
    ms.reset(jf)
    for shape, dtype in [((2, 3), np.float32), ((4,), np.float32), ((2, 2), np.float64),
                         ((3,), np.int32), ((2, 3), np.float32)]:
        x = T(np.arange(np.prod(shape)).reshape(shape) - 1, dtype)
        assert_same_result(jf(x), one_print(x))
    out = capsys.readouterr().out.splitlines()
    assert out[0::2] == out[1::2]


def one_print_then_numpy(x):
    a = x * 2.0 + 1.0
    print("middle", a.shape)
    return ms.Tensor(a.asnumpy()) + x


def test_strict_mode_raises_before_running_anything(capsys):
    jf = ms.jit(one_print_then_numpy)  # PSJit: the print would run after the graph
    ms.reset(jf)
    with pytest.raises(ms.GraphBreakError, match=r"a.asnumpy\(\)"):
        jf(X())
    assert capsys.readouterr().out == ""
    jf = ms.jit(one_print_then_numpy, mode="PIJit", fullgraph=True)
    with pytest.raises(ms.GraphBreakError):
        jf(X())
    assert capsys.readouterr().out == ""


# ---- data-dependent branches -------------------------------------------------------------------

def branch_on_float(x):
    y = x * 2.0
    if float(y.sum()) > 0:
        z = y + 1.0
    else:
        z = y - 1.0
    return z * 3.0


def branch_on_tensor_truth(x):
    y = x * 2.0
    if y.sum() > 0:
        z = y + 1.0
    else:
        z = y - 1.0
    return z * 3.0


# A Python float of a tensor breaks before the jump (one resume function); on a tensor's truth
# the bridge runs the jump, with one resume function per way it can go.
@pytest.mark.parametrize("fn, resume_functions", [(branch_on_float, 1),
                                                  (branch_on_tensor_truth, 2)],
                         ids=["python_float_of_tensor", "tensor_truth"])
@pytest.mark.parametrize("make", [X, NEG], ids=["positive", "negative"])
def test_branch_on_data_breaks_once(fn, resume_functions, make, capsys):
    stats, out, _ = compare(fn, lambda: (make(),), capsys=capsys)
    assert stats["total_break_count"] == 1
    assert stats["resume_functions"] == resume_functions
    assert stats["graph_count"] == 2
    assert stats["all_reasons"][0]["category"] == "data_dependent"


def test_both_ways_of_a_tensor_branch_in_one_cache(capsys):
    jf = ms.jit(branch_on_tensor_truth, mode="PIJit")
    ms.reset(jf)
    for make in (X, NEG, X, NEG):
        x = make()
        assert_same_result(jf(x), branch_on_tensor_truth(x))
    s = ms.get_code_extra(jf)
    assert s["compile_count"] == 1 and s["total_break_count"] == 1
    assert s["resume_functions"] == 2 and s["graph_count"] == 3


def and_or_not(x):
    y = x * 2.0
    a = (y.sum() > 0) and (y.mean() < 100.0)
    b = (y.sum() < 0) or (y.max() > 1.0)
    if not (y.min() > 0):
        y = y - 1.0
    return bool(a), bool(b), y + 1.0


@pytest.mark.parametrize("make", [X, NEG], ids=["positive", "negative"])
def test_and_or_not_on_tensors(make, capsys):
    stats, _, _ = compare(and_or_not, lambda: (make(),), capsys=capsys)
    assert stats["total_break_count"] >= 3


def data_dependent_return(x):
    y = x * 2.0
    if float(y.sum()) > 0:
        show("positive")
        return y
    show("negative")
    return -y


@pytest.mark.parametrize("make", [X, NEG], ids=["positive", "negative"])
def test_returns_in_both_branches_after_breaks(make, capsys):
    compare(data_dependent_return, lambda: (make(),), capsys=capsys)


def python_number_of_tensor(x):
    s = float(ops.sum(x))
    n = int(ops.mean(x) > 0)
    return x * s + n, s, n


def test_python_numbers_from_tensors(capsys):
    compare(python_number_of_tensor, capsys=capsys)


# ---- values on the stack, keyword arguments, NULLs ----------------------------------------------

def stack_value(x):
    y = x * 2.0 + unknown(x)
    return y - 1.0


def nested_unknown(x):
    return ops.relu(unknown(unknown(x + 1.0))) * 2.0


def outer_of_unknown(x):
    a = x * 3.0
    return ops.add(a, unknown(a - x)), a


def deep_stack(x):
    return (x + 1.0, x * 2.0, [x - 1.0, unknown(x)], unknown(x * 3.0), 7)


def list_method_calls(x):
    out = []
    out.append(unknown(x))
    out.extend([x * 2.0, unknown(x + 1.0)])
    out.insert(0, x - 1.0)
    return tuple(out), len(out)


def tensor_method_with_break_in_argument(x):
    y = x * 2.0
    return y.add(unknown(x)) * 3.0, y.reshape(unknown(x).shape[::-1])


def keyword_call_at_break(x):
    y = x + 1.0
    z = unknown_kw(y, scale=3.0, shift=x)
    w = unknown_kw(y, 2.0, shift=1.5)
    show("a", "b", sep="-", end="!\n")
    return z * 2.0, w


def keywords_around_break(x):
    return ops.add(x=x * 2.0, y=unknown_kw(t=x, shift=2.0)), ops.mul(x, y=unknown(x))


@pytest.mark.parametrize("fn", [stack_value, nested_unknown, outer_of_unknown, deep_stack,
                                list_method_calls, tensor_method_with_break_in_argument,
                                keyword_call_at_break, keywords_around_break],
                         ids=lambda f: f.__name__)
def test_break_with_values_on_the_stack(fn, capsys):
    stats, out, _ = compare(fn, capsys=capsys)
    assert out[0] == "ok"
    assert stats["total_break_count"] >= 1


def test_stack_value_break_counts(capsys):
    stats, _, printed = compare(stack_value, capsys=capsys)
    assert printed == "unknown (2, 3)\n"
    assert stats["total_break_count"] == 1 and stats["resume_functions"] == 1
    assert stats["graph_count"] == 2


def test_nested_unknown_calls_break_twice(capsys):
    stats, _, printed = compare(nested_unknown, capsys=capsys)
    assert printed == "unknown (2, 3)\nunknown (2, 3)\n"
    assert stats["total_break_count"] == 2 and stats["resume_functions"] == 2


def test_keyword_arguments_to_a_jitted_function_with_a_break(capsys):
    def scaled(x, scale=1.0, *, shift=0.0):
        y = x * scale
        show("scaled", scale, shift)
        return y + shift

    jf = ms.jit(scaled, mode="PIJit")
    ms.reset(jf)
    for kw in ({}, {"scale": 2.0}, {"shift": 1.0, "scale": 3.0}, {"shift": 1.0}):
        assert_same_result(jf(X(), **kw), scaled(X(), **kw))
    out = capsys.readouterr().out.splitlines()
    assert out[0::2] == out[1::2]


# ---- capture mode: nested frames are captured and break on their own -------------------------

def capture_inner(x):
    y = x * 3.0
    show("inner")
    return y - 1.0


def capture_outer(x):
    a = x + 1.0
    b = capture_inner(a)
    LOG.append("outer")
    return a * b


def test_capture_mode_breaks_nested_frames(capsys):
    compare(capture_outer, capsys=capsys)
    ms.reset(capture_outer)
    ms.reset(capture_inner)
    with ms.capture():
        capture_outer(X())
    assert ms.get_code_extra(capture_outer)["total_break_count"] >= 1
