"""Graph breaks and control flow: exceptions raised after a break (the eager type, message and
line), and breaks around loops, try/except/finally, `with` blocks and generators
(more in test_graph_breaks_loops.py).

Every test compares eager, jitted and captured runs with graph_break_testutil.compare."""
import traceback

import pytest

import pijit as ms
from graph_break_testutil import _reset_state  # noqa: F401 (autouse fixture)
from graph_break_testutil import (LOG, X, Ctx, compare, count_up, not_caught, raiser,
                                  tensor_gen, unknown, show)
from pijit_testutil import assert_same_result


# ---- exceptions -------------------------------------------------------------------------------

def raise_after_break(x):
    y = x * 2.0
    show("before")
    z = y + 1.0
    raise ValueError(f"bad value {z.shape}")


def unknown_raises(x):
    y = x * 2.0
    z = raiser(y)
    return z


def raises_in_resume_helper(x):
    y = x * 2.0
    show("before")
    return raiser(y + 1.0)


def python_error_after_break(x, d):
    y = x * 2.0
    show("before")
    return y * d["missing"]


def tensor_error_after_break(x):
    y = x * 2.0
    show("before")
    return y.reshape(5)


@pytest.mark.parametrize("fn", [raise_after_break, unknown_raises, raises_in_resume_helper,
                                tensor_error_after_break], ids=lambda f: f.__name__)
def test_exception_after_a_break_has_the_eager_type_and_message(fn, capsys):
    _, out, _ = compare(fn, capsys=capsys)
    assert out[0] == "raise"


def test_key_error_after_a_break(capsys):
    _, out, _ = compare(python_error_after_break, lambda: (X(), {}), capsys=capsys)
    assert out[1] is KeyError


def innermost_frame(fn, *args):
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001
        frames = traceback.extract_tb(e.__traceback__)
        return frames[-1].name, frames[-1].lineno, frames[-1].line
    raise AssertionError("no exception")


@pytest.mark.parametrize("fn", [raise_after_break, unknown_raises, raises_in_resume_helper],
                         ids=lambda f: f.__name__)
def test_exception_after_a_break_points_at_the_eager_line(fn, capsys):
    want = innermost_frame(fn, X())
    jf = ms.jit(fn, mode="PIJit")
    ms.reset(jf)
    assert innermost_frame(jf, X()) == want
    assert innermost_frame(jf, X()) == want


# ---- loops, try, with, generators: around the break ------------------------------------------

def break_in_loop(x):
    acc = x * 0.0
    for i in range(3):
        acc = acc + x * i
        show("iteration", i)
    return acc * 2.0


def break_in_loop_with_data_branch(x):
    acc = x * 1.0
    for i in range(4):
        if float(acc.sum()) > 10.0:
            acc = acc - 1.0
        else:
            acc = acc * 2.0
    return acc


def break_in_try(x):
    y = x + 1.0
    try:
        show("in try")
        raiser(y)
    except KeyError as e:
        LOG.append(str(e))
        y = y * 2.0
    return y


def break_in_finally(x):
    y = x + 1.0
    try:
        y = y * 3.0
    finally:
        show("finally")
    return y


def with_block(x):
    y = x + 1.0
    with Ctx():
        y = unknown(y * 2.0)
    return y


def with_block_raises(x):
    y = x + 1.0
    with Ctx():
        raiser(y)
    return y


def generator_consumer(x):
    y = x + 1.0
    s = sum(count_up(4))
    t = sum(tensor_gen(y, 3))
    return y * s, t


def generator_next(x):
    y = x + 1.0
    g = tensor_gen(y, 3)
    a = next(g)
    return a * 2.0, list(g)


def generator_expression(x):
    y = x * 2.0
    return sum(t * 2.0 for t in (x, y)), [unknown(t) for t in (x, y)]


@pytest.mark.parametrize("fn", [break_in_loop, break_in_loop_with_data_branch, break_in_try,
                                not_caught, break_in_finally, with_block,
                                with_block_raises, generator_consumer, generator_next,
                                generator_expression],
                         ids=lambda f: f.__name__)
def test_loops_try_with_and_generators_give_eager_results(fn, capsys):
    compare(fn, capsys=capsys)


@pytest.mark.parametrize("fn", [break_in_loop, break_in_try, with_block],
                         ids=lambda f: f.__name__)
def test_breaks_inside_loops_try_and_with_blocks_resume(fn, capsys):
    # More in test_graph_breaks_loops.py.
    stats, _, _ = compare(fn, capsys=capsys)
    assert stats["resume_functions"] >= 1 and stats["graph_count"] >= 1
    assert stats["all_reasons"]


def test_jitted_generator_function(capsys):
    def gen(x):
        y = x + 1.0
        yield y
        show("resumed")
        yield y * 2.0

    jg = ms.jit(gen, mode="PIJit")
    ms.reset(jg)
    for _ in range(2):
        assert_same_result(list(jg(X())), list(gen(X())))
    assert capsys.readouterr().out == "resumed\n" * 4
