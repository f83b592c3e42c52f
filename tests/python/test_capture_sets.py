"""Sets of plain values (numbers, strings, None, tuples of them) built during capture: set
displays, set comprehensions, set()/frozenset() calls, `in`, len() and sorted() are folded at
capture time. Sets holding tensors or unknown values, and set methods, still run in Python.
Every test compares jitted and eager runs."""
import numpy as np

import pijit as ms
from graph_break_testutil import _reset_state  # noqa: F401 (autouse fixture)
from graph_break_testutil import X, compare


def one_graph(stats):
    assert stats["graph_count"] == 1, stats
    assert stats["total_break_count"] == 0, stats


def display_in(x):
    s = {x.shape[0], x.shape[1], 7}
    if 3 in s and 5 not in s:
        return x * len(s)
    return x - 1.0


def test_set_display_in_and_len(capsys):
    stats, _, _ = compare(display_in, capsys=capsys)
    one_graph(stats)


def constant_set(x, mode):
    if mode in {"train", "eval"}:
        return x * 2.0
    if mode not in frozenset(("a", "b")):
        return x + 5.0
    return x - 1.0


def test_constant_set_membership(capsys):
    for mode in ("train", "eval", "other", "a"):
        stats, _, _ = compare(constant_set, lambda: (X(), mode), capsys=capsys)
        one_graph(stats)


def comprehension_sorted(x, names):
    s = {n * 2 for n in names}
    out = x
    for i, n in enumerate(sorted(s)):
        out = out + float(len(n) * (i + 1))
    return out, sorted(s), len(s)


def test_set_comprehension_iterated_sorted(capsys):
    names = ("b", "a", "bb", "a", "ccc", "b")
    stats, _, _ = compare(comprehension_sorted, lambda: (X(), names), capsys=capsys)
    one_graph(stats)


def set_calls(x, ps):
    s = set(ps)
    f = frozenset(p * 2 for p in ps)
    e = set()
    t = {(1, "a"), (2, None), *ps}
    k = 0.0
    if (1, "a") in t and 4 in f and not e:
        k = 1.0
    return x * float(len(s)) + k, len(f), len(e), len(t), 2 in s, sorted(f)


def test_set_and_frozenset_calls(capsys):
    stats, _, _ = compare(set_calls, lambda: (X(), (1, 2, 2, 3)), capsys=capsys)
    one_graph(stats)


def returns_sets(x, ps):
    s = {p * 2 for p in ps}
    return x + 1.0, s, s, frozenset(s)


def test_returned_set_is_a_new_object_each_call():
    jf = ms.jit(returns_sets, mode="PIJit")
    ms.reset(jf)
    want = returns_sets(X(), (1, 2))
    r1 = jf(X(), (1, 2))
    r2 = jf(X(), (1, 2))
    for r in (r1, r2):
        np.testing.assert_array_equal(r[0].asnumpy(), want[0].asnumpy())
        assert type(r[1]) is set and r[1] == want[1]
        assert r[1] is r[2]  # one set, returned twice
        assert type(r[3]) is frozenset and r[3] == want[3]
    assert r1[1] is not r2[1]
    r1[1].add(100)
    r3 = jf(X(), (1, 2))
    assert r3[1] == {2, 4} and r2[1] == {2, 4}
    one_graph(ms.get_code_extra(jf))
    ms.reset(jf)


def tensor_in_set(x, y):
    s = {x, y}
    return x * float(len(s))


def set_method(x, ps):
    s = set(ps)
    s.add(10)
    return x + float(len(s)), sorted(s)


def set_argument(x, s):
    if 3 in s:
        return x * 2.0
    return x - 1.0


def iterated_in_set_order(x, ps):
    out = x
    for p in {p for p in ps}:
        out = out * 2.0 + float(p)
    return out


def test_set_of_tensors_runs_in_python(capsys):
    stats, _, _ = compare(tensor_in_set, lambda: (X(), X()), capsys=capsys)
    assert stats["graph_count"] == 0, stats


def test_set_method_breaks_and_runs_in_python(capsys):
    compare(set_method, lambda: (X(), (1, 2)), capsys=capsys)


def test_iteration_in_set_order_runs_in_python(capsys):
    compare(iterated_in_set_order, lambda: (X(), (3, 1, 2)), capsys=capsys)


def test_set_argument_is_not_baked_in():
    # A set passed in may change between calls: membership is not baked into the trace.
    jf = ms.jit(set_argument, mode="PIJit")
    ms.reset(jf)
    s = {1, 2}
    x = X()
    for _ in range(2):
        np.testing.assert_array_equal(jf(x, s).asnumpy(), set_argument(x, s).asnumpy())
    s.add(3)
    np.testing.assert_array_equal(jf(x, s).asnumpy(), (x * 2.0).asnumpy())
    ms.reset(jf)


class Holder:
    pass


def stores_set(x, lst, obj):
    s = {1, 2}
    lst.append(s)
    obj.attr = s
    return x + 1.0, s


def test_set_stored_and_returned_is_one_object():
    jf = ms.jit(stores_set, mode="PIJit")
    ms.reset(jf)
    for _ in range(3):
        lst, obj = [], Holder()
        r = jf(X(), lst, obj)
        assert r[1] == {1, 2}
        assert lst[0] is r[1] and obj.attr is r[1]
        r[1].add(5)  # the next call's set is a new one
    one_graph(ms.get_code_extra(jf))
    ms.reset(jf)
