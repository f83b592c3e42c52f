"""Generators stepped an item at a time: a `for` loop, a comprehension or next() over a
generator made in the function runs the generator's frame up to its next yield for each item,
as Python does, so a loop body that changes what the generator reads next is seen, a loop left
early leaves the rest for a later consumer, and next() takes one item. Each case is one graph
and matches eager Python; generators with effects and `yield from` run in Python."""
import pytest

import pijit as ms
from graph_break_testutil import _reset_state  # noqa: F401 (autouse fixture)
from graph_break_testutil import LOG, X, compare, compare_as_one_graph


def countdown(n):
    while n > 0:
        yield n
        n -= 1
    return "done"


def scaled(t, factors):
    for f in factors:
        yield t * f


def reads_a_list(xs):
    i = 0
    while i < len(xs):
        yield xs[i]
        i += 1


def loop_over_a_generator_function(x):
    acc = x
    for n in countdown(3):
        acc = acc * 0.5 + n
    return acc


def loop_yielding_tensors(x):
    acc = x * 0.0
    for t in scaled(x, (1.0, -2.0, 0.25)):
        acc = acc + t
    return acc


def body_appends_to_what_the_generator_reads(x):
    xs = [x]
    out = x * 0.0
    for t in reads_a_list(xs):
        if len(xs) < 4:
            xs.append(t + 1.0)
        out = out + t
    return out, len(xs)


def left_early_then_the_rest(x):
    g = countdown(5)
    for n in g:
        if n == 3:
            break
    return x + n, list(g)


def next_then_loop(x):
    g = scaled(x, (1.0, 2.0, 3.0))
    first = next(g)
    rest = x * 0.0
    for t in g:
        rest = rest + t
    return first, rest, next(g, "empty")


def comprehension_over_a_generator(x):
    return [t * 2.0 for t in scaled(x, (0.5, 1.5))], {n: n * n for n in countdown(2)}


def nested_generators(x):
    acc = x
    for a in countdown(2):
        for b in countdown(a):
            acc = acc + a * b
    return acc


def exhausted_generator_looped_again(x):
    g = countdown(2)
    total = sum(g)
    for n in g:
        total += 100 * n
    return x + total


@pytest.mark.parametrize("fn", [loop_over_a_generator_function, loop_yielding_tensors,
                                body_appends_to_what_the_generator_reads, left_early_then_the_rest,
                                next_then_loop, comprehension_over_a_generator, nested_generators,
                                exhausted_generator_looped_again])
def test_generator_stepped_item_by_item_is_one_graph(fn, capsys):
    compare_as_one_graph(fn, capsys=capsys)


def logs(n):
    for i in range(n):
        LOG.append(i)
        yield i


def loop_over_a_generator_with_an_effect(x):
    acc = x
    for i in logs(3):
        LOG.append(("body", i))
        acc = acc + i
    return acc


def delegating(n):
    yield from countdown(n)


def loop_over_yield_from(x):
    return x + sum(n for n in delegating(3))


def next_past_the_end(x):
    g = countdown(1)
    next(g)
    return x + next(g)


@pytest.mark.parametrize("fn", [loop_over_a_generator_with_an_effect, loop_over_yield_from,
                                next_past_the_end])
def test_generators_capture_cannot_step_stay_correct(fn, capsys):
    compare(fn, capsys=capsys)


def test_interleaving_of_generator_and_body_matches_python():
    order = []

    def traced(n):
        for i in range(n):
            order.append(("yield", i))
            yield i

    def f(x):
        acc = x
        for i in traced(3):
            acc = acc + i
        return acc

    want = f(X()).asnumpy()
    jf = ms.jit(f, mode="PIJit")
    order.clear()
    got = jf(X()).asnumpy()
    assert (got == want).all()
    # The generator appends to a closure list (an effect): it runs in Python, in order.
    assert order == [("yield", 0), ("yield", 1), ("yield", 2)]


def with_cleanup(t, n):
    try:
        for i in range(n):
            yield t * float(i + 1)
    finally:
        LOG.append(("generator cleanup", n))


def left_suspended_in_its_try(x):
    acc = x
    for v in with_cleanup(x, 3):
        acc = acc + v
        break
    LOG.append("after loop")
    return acc


def one_next_then_dropped(x):
    first = next(with_cleanup(x, 2))
    LOG.append("after next")
    return first


@pytest.mark.parametrize("fn", [left_suspended_in_its_try, one_next_then_dropped])
def test_a_generator_dropped_inside_its_try_runs_its_cleanup_first(fn, capsys):
    # Python closes the generator when it is dropped (its finally runs before "after ...");
    # the trace cannot, so such a call runs eagerly.
    _, outcome, _ = compare(fn, capsys=capsys)
    assert outcome[0] == "ok"
