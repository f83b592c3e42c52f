"""Graph breaks and side effects: closure cells. `nonlocal x; x = ...` in a jitted function, in
a function it inlines, or in a function defined inside it, is replayed into the cell so the
enclosing function sees the new value; reads after the store in the same graph see it; a
counter kept in a closure counts over repeated calls (each call reads the cell's content)."""
import sys

import numpy as np

import pijit as ms
from graph_break_testutil import _reset_state  # noqa: F401 (autouse fixture)
from graph_break_testutil import X, compare, unknown, show
from jit_testutil import pijit
from pijit_testutil import assert_same_result


def make_counter():
    count = 0
    last = None

    def step(x):
        nonlocal count, last
        count += 1
        y = x * count
        count += 1  # the second store reads the first
        last = y
        return y + 1.0, count

    def state():
        return count, last

    return step, state


def test_closure_counter_counts_over_repeated_calls():
    eager_step, eager_state = make_counter()
    step, state = make_counter()
    jf = pijit(step)
    for _ in range(4):
        want = eager_step(X())
        got = jf(X())
        assert_same_result(got, want)
        assert state()[0] == eager_state()[0]
        assert_same_result(state()[1], eager_state()[1])
        assert state()[1] is not None
    stats = ms.get_code_extra(jf)
    assert stats["total_break_count"] == 0 and stats["graph_count"] >= 1, stats
    ms.reset(jf)


def test_two_closures_of_one_code_keep_their_own_counts():
    a_step, a_state = make_counter()
    b_step, b_state = make_counter()
    with ms.capture():
        a_step(X())
        a_step(X())
        b_step(X())
    assert a_state()[0] == 4 and b_state()[0] == 2
    ms.reset(a_step)


def make_inlined_store():
    total = 0

    def add(k):
        nonlocal total
        total = total + k
        return total

    def f(x):
        add(2)
        t = add(3)  # the store of the call before is seen
        return x * t

    return f, lambda: total


def test_store_in_an_inlined_function_reaches_its_cell():
    f, total = make_inlined_store()
    ef, etotal = make_inlined_store()
    jf = pijit(f)
    for _ in range(3):
        assert_same_result(jf(X()), ef(X()))
        assert total() == etotal()
    stats = ms.get_code_extra(jf)
    assert stats["total_break_count"] == 0, stats
    ms.reset(jf)


def nested_counter(x):
    n = 0
    acc = x

    def bump(t):
        nonlocal n, acc
        n += 1
        acc = acc + t * n

    bump(x)
    bump(x)
    return acc, n


def test_cells_of_a_function_defined_inside(capsys):
    stats, out, _ = compare(nested_counter, capsys=capsys)
    assert out[1][1] == 2
    assert stats["total_break_count"] == 0, stats


def make_tensor_cell():
    saved = None

    def f(x):
        nonlocal saved
        saved = x * 2.0
        show("stored")
        y = unknown(saved)  # a break: the cell holds the tensor before it
        return y + saved

    return f, lambda: saved


def test_cell_store_before_a_break_and_printed_order(capsys):
    f, saved = make_tensor_cell()
    ef, esaved = make_tensor_cell()
    want = ef(X())
    want_out = capsys.readouterr().out
    jf = pijit(f)
    for _ in range(2):
        assert_same_result(jf(X()), want)
        assert capsys.readouterr().out == want_out
        np.testing.assert_array_equal(saved().asnumpy(), esaved().asnumpy())
    assert ms.get_code_extra(jf)["total_break_count"] >= 1
    ms.reset(jf)


class Payload:
    pass


def make_payload_cell(p):
    box = None

    def f(x):
        nonlocal box
        box = p
        box = None  # the payload's reference goes again
        box = x + 1.0
        return box

    return f


def test_cell_stores_do_not_leak():
    p = Payload()
    f = make_payload_cell(p)
    jf = pijit(f)
    jf(X())
    base = sys.getrefcount(p)
    for _ in range(3):
        r = jf(X())
        assert f.__closure__[0].cell_contents is r
    assert sys.getrefcount(p) == base
    ms.reset(jf)
