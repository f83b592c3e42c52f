"""Graph breaks inside loop bodies, `with` blocks and `try` blocks.

A break inside a loop does not make the function eager: the loop runs in Python (its
FOR_ITER is a break of its own once the iterator comes from outside the trace) while the
tensor work before the loop, between the breaks of the body and after the loop is captured
in resume functions. Bridges return to a driver loop, so a break per iteration costs no
Python frames. An exception raised by a breaking instruction reaches the handler of its
try/with block, exactly as eagerly.

Every test compares against eager execution with graph_break_testutil.compare (results,
printed output, side effects, exceptions; jitted twice and under pijit.capture()) and checks
the shape of the split through get_code_extra."""
import contextlib
import inspect

import numpy as np
import pytest

import pijit as ms
from graph_break_testutil import _reset_state  # noqa: F401 (autouse fixture)
from graph_break_testutil import LOG, STATE, X, Ctx, compare, not_caught, raiser, unknown, show

# ---- loops -------------------------------------------------------------------------------------


def print_between_tensor_ops(x):
    y = x + 1.0
    for i in range(3):
        y = y * 2.0
        show("iteration", i, y.shape)
        y = y - 1.0
    return y * 3.0


def test_print_inside_a_loop_keeps_the_body_compiled(capsys):
    stats, _, printed = compare(print_between_tensor_ops, capsys=capsys)
    assert printed == "".join(f"iteration {i} (2, 3)\n" for i in range(3))
    # Prefix (+1, *2), the rest of an iteration (-1), the next one's start (*2), after (*3).
    graphs = stats["all_graphs"]
    assert stats["graph_count"] >= 4
    assert any("mul" in g and "add" not in g for g in graphs), graphs
    assert any("sub" in g for g in graphs), graphs
    assert stats["compile_count"] == 1


def depth_probe():
    LOG.append(len(inspect.stack(0)))


def long_loop(x):
    for i in range(200):
        x = x + 1.0
        depth_probe()
    return x


def test_breaks_in_a_long_loop_do_not_nest_python_frames(capsys):
    compare(long_loop, capsys=capsys)
    jf = ms.jit(long_loop, mode="PIJit")
    ms.reset(jf)
    LOG.clear()
    jf(X())
    # One bridge and one resume frame at most: the same depth in every iteration.
    assert len(set(LOG[2:])) == 1, sorted(set(LOG))
    ms.reset(jf)


def several_breaks_per_iteration(x):
    for i in range(4):
        x = x * 2.0
        show("a", i)
        x = x - 1.0
        show("b", i)
        x = x + 0.5
        show("c", i)
    return x


def test_n_breaks_in_a_loop_give_linearly_many_functions(capsys):
    stats, _, _ = compare(several_breaks_per_iteration, capsys=capsys)
    # Three calls and a FOR_ITER per iteration: each resumes at most two ways.
    assert stats["resume_functions"] <= 2 * 4 + 1
    assert stats["graph_count"] >= 4


def while_with_break_and_continue(x):
    i = 0
    while i < 10:
        i += 1
        if i == 2:
            continue
        x = x * 1.5
        show("while", i)
        if i >= 5:
            break
        x = x - 1.0
    return x, i


def return_inside_loop(x):
    for i in range(5):
        x = x + 1.0
        show("step", i)
        if i == 2:
            return x * 10.0
    return x


def nested_loops(x):
    for i in range(2):
        x = x * 2.0
        for j in range(3):
            x = x + float(j)
            show("inner", i, j)
        x = x - 1.0
    return x


def loop_over_tensors(x):
    acc = x * 0.0
    for t in (x, x * 2.0, x * 3.0):
        acc = acc + t
        show("acc", acc.shape)
    return acc


def loop_over_an_iterator(x, it):
    acc = x * 1.0
    for v in it:
        acc = acc + float(v)
        LOG.append(v)
    return acc


def test_loop_over_an_iterator_made_outside(capsys):
    def make():
        return X(), (i * 2 for i in range(3))
    stats, _, _ = compare(loop_over_an_iterator, make, capsys=capsys)
    assert stats["graph_count"] >= 2


def for_else(x):
    for i in range(3):
        x = x + 1.0
        show("for", i)
    else:
        x = x * 2.0
    return x


def loop_break_then_tensor_work(x):
    for i in range(6):
        show("check", i)
        if i == 3:
            break
        x = x * 2.0
    return x - 1.0


@pytest.mark.parametrize("fn", [while_with_break_and_continue, return_inside_loop, nested_loops,
                                loop_over_tensors, for_else,
                                loop_break_then_tensor_work],
                         ids=lambda f: f.__name__)
def test_loops_with_breaks_match_eager(fn, capsys):
    stats, _, _ = compare(fn, capsys=capsys)
    assert stats["resume_functions"] >= 1
    assert stats["graph_count"] >= 2


# ---- with blocks -------------------------------------------------------------------------------

class Suppress:
    def __enter__(self):
        return "suppressing"

    def __exit__(self, t, v, tb):
        LOG.append(("suppress", t.__name__ if t else None))
        return True


@contextlib.contextmanager
def managed(tag):
    LOG.append(("open", tag))
    try:
        yield tag
    finally:
        LOG.append(("close", tag))


def break_inside_with(x):
    y = x + 1.0
    with Ctx() as c:
        y = y * 2.0
        show("body", type(c).__name__)
        y = y - 1.0
    return y * 3.0


def exception_inside_with_reaches_exit_once(x):
    y = x + 1.0
    with Ctx():
        y = y * 2.0
        raiser(y)
        y = y - 1.0
    return y


def exception_suppressed_by_exit(x):
    y = x + 1.0
    with Suppress() as s:
        y = y * 2.0
        show(s)
        raiser(y)
    return y * 5.0


def contextmanager_in_a_loop(x):
    for i in range(2):
        with managed(i) as t:
            x = x * 2.0
            show("body", t)
            x = x + 1.0
    return x


def return_inside_with(x):
    with managed("r"):
        x = x * 2.0
        show("returning")
        return x + 1.0


def pijit_capture_context(x):
    y = x + 1.0
    with ms.capture():
        y = unknown(y)
    return y * 2.0


def nested_with_and_exception(x):
    y = x * 2.0
    with Suppress():
        with Ctx():
            y = y + 1.0
            raiser(y)
    return y


@pytest.mark.parametrize("fn", [break_inside_with, exception_inside_with_reaches_exit_once,
                                exception_suppressed_by_exit, contextmanager_in_a_loop,
                                return_inside_with, pijit_capture_context,
                                nested_with_and_exception],
                         ids=lambda f: f.__name__)
def test_with_blocks_with_breaks_match_eager(fn, capsys):
    stats, _, _ = compare(fn, capsys=capsys)
    assert stats["resume_functions"] >= 1


def test_exit_runs_once_when_the_body_raises(capsys):
    compare(exception_inside_with_reaches_exit_once, capsys=capsys)
    jf = ms.jit(exception_inside_with_reaches_exit_once, mode="PIJit")
    ms.reset(jf)
    LOG.clear()
    with pytest.raises(KeyError):
        jf(X())
    assert LOG == ["enter", "exit"]
    ms.reset(jf)


# ---- try blocks --------------------------------------------------------------------------------

def caught_by_except(x):
    y = x + 1.0
    try:
        y = y * 2.0
        show("in try")
        raiser(y)
        y = y + 100.0
    except KeyError as e:
        show("caught", e)
        y = y * 3.0
    return y + 1.0


def try_finally_raises(x):
    y = x + 1.0
    try:
        show("in try")
        raiser(y)
    finally:
        LOG.append("finally")
        show("finally")
    return y


def try_in_a_loop(x):
    y = x + 1.0
    for i in range(4):
        try:
            y = y * 2.0
            if i % 2:
                raiser(y)
            show("ok", i)
        except KeyError:
            show("caught", i)
            y = y - 1.0
        finally:
            LOG.append(i)
    return y


def nested_try(x):
    y = x + 1.0
    try:
        try:
            y = y * 2.0
            raiser(y)
        except ValueError:
            y = y - 100.0
        finally:
            LOG.append("inner finally")
    except KeyError as e:
        LOG.append(str(e))
        y = y * 4.0
    return y


def exception_state_in_handler(x):
    y = x + 1.0
    try:
        show("try")
        raiser(y)
    except KeyError:
        import sys
        LOG.append(sys.exc_info()[0].__name__)
    LOG.append(repr(__import__("sys").exc_info()[0]))
    return y


@pytest.mark.parametrize("fn", [caught_by_except, not_caught, try_finally_raises, try_in_a_loop,
                                nested_try, exception_state_in_handler],
                         ids=lambda f: f.__name__)
def test_try_blocks_with_breaks_match_eager(fn, capsys):
    stats, _, _ = compare(fn, capsys=capsys)
    assert stats["total_break_count"] >= 1


def test_try_body_before_the_break_is_compiled(capsys):
    stats, _, _ = compare(caught_by_except, capsys=capsys)
    assert stats["resume_functions"] >= 2
    assert any("mul" in g for g in stats["all_graphs"])


# ---- side effects inside loops -----------------------------------------------------------------
# Capture does not simulate stores to objects it did not create (STORE_ATTR, STORE_SUBSCR,
# STORE_GLOBAL, list.append on an argument): each is a break whose bridge runs the store in
# Python, after the graph of the work before it, so stores happen once and in eager order.

def side_effects_in_a_loop(x, o, lst):
    y = x + 1.0
    for i in range(3):
        y = y * 2.0
        o.last = y
        STATE[f"k{i}"] = i * 10
        STATE["g"] = STATE.get("g", 0) + i
        lst.append(i)
        LOG.append(("iter", i, len(lst)))
        y = y - 1.0
    return y, o.last, list(lst)


def test_side_effects_in_a_loop_happen_once_and_in_order(capsys):
    class O:
        pass

    def make():
        return X(), O(), []
    stats, _, _ = compare(side_effects_in_a_loop, make, capsys=capsys)
    assert stats["total_break_count"] >= 4
