"""map() and filter() made in captured code and consumed whole (list, tuple, sum, sorted,
unpacking, min/max, all/any) are captured: the function runs on each item under the consumer,
in order, as Python's lazy map does. A loop over a map, a map over several iterables one of
which is an iterator, and a map whose function cannot be captured run in Python. Each case
against eager Python."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops
from graph_break_testutil import _reset_state  # noqa: F401 (autouse fixture)
from graph_break_testutil import LOG, X, compare, compare_as_one_graph, unknown


def double(t):
    return t * 2.0


def sum_of_mapped_tensors(x):
    return sum(map(lambda t: t * 2.0, [x, x + 1.0]))


def list_of_two_iterables(x):
    ys = list(map(lambda a, b: a * b, (x, x + 1.0, x - 1.0), (1.0, 2.0)))
    return ys[0] + ys[1], len(ys)


def module_function_and_builtin(x):
    a, b = map(double, (x, -x))
    return a + b, tuple(map(abs, (-1, 2, -3)))


def op_as_the_function(x):
    return tuple(map(ops.exp, (x, x * 0.5)))


def filtered_constants(x):
    kept = list(filter(lambda v: v > 1, [1, 2, 3, 0, 5]))
    return x * sum(kept), kept


def filter_none_keeps_truthy(x):
    return x + len(tuple(filter(None, (0, 1, "", "a", None, 2.0))))


def list_appended_after_map_is_made(x):
    xs = [x]
    m = map(double, xs)
    xs.append(x + 1.0)  # iter(xs) is live: the map sees the new item
    return list(m)


def consumed_by_min_and_all(x):
    return min(map(len, ("abc", "de"))), all(map(lambda v: v > 0, (1, 2))), x + 1.0


def iterator_consumed_whole(x):
    it = iter([x, x * 3.0])
    out = list(map(double, it))
    return out, list(it)


@pytest.mark.parametrize("fn", [sum_of_mapped_tensors, list_of_two_iterables,
                                module_function_and_builtin, op_as_the_function,
                                filtered_constants, filter_none_keeps_truthy,
                                list_appended_after_map_is_made, consumed_by_min_and_all,
                                iterator_consumed_whole])
def test_map_and_filter_consumed_whole_are_one_graph(fn, capsys):
    compare_as_one_graph(fn, capsys=capsys, close=fn is op_as_the_function)


def logged(v):
    LOG.append(v)
    return v * 10


def loop_over_map(x):
    s = x
    for v in map(logged, [1, 2, 3]):
        LOG.append(("body", v))
        s = s + v
    return s


def map_over_a_zip_of_an_iterator(x):
    it = iter([1, 2, 3])
    out = list(map(lambda a, b: a + b, it, [10, 20]))
    return x + out[-1], list(it)


def uncapturable_function(x):
    return list(map(unknown, [x, x * 2.0]))


def partly_consumed(x):
    m = map(double, [x, x + 1.0, x + 2.0])
    first = next(m)
    return first, list(m)


@pytest.mark.parametrize("fn", [loop_over_map, map_over_a_zip_of_an_iterator,
                                uncapturable_function, partly_consumed])
def test_map_that_is_not_consumed_whole_runs_in_python(fn, capsys):
    _, outcome, _ = compare(fn, capsys=capsys)
    assert outcome[0] == "ok"


def test_map_with_a_wrong_argument_raises_as_python_does(capsys):
    def bad(x):
        return list(map(double, 5))

    _, outcome, _ = compare(bad, capsys=capsys)
    assert outcome[0] == "raise" and outcome[1] is TypeError


def test_map_of_a_jitted_function_matches_numpy():
    jf = ms.jit(sum_of_mapped_tensors, mode="PIJit")
    x = X()
    np.testing.assert_allclose(jf(x).asnumpy(), 2.0 * x.asnumpy() + 2.0 * (x.asnumpy() + 1.0))
