"""Graph breaks and side effects: deletions. `del obj.attr`, `del d[k]`, `del lst[i]` and `del`
of a global are replayed after the graph in order with the other effects; reads after them in
the same graph see the deleted state (hasattr, getattr with a default, `in`, len); deleting
something absent raises what eager Python raises, from the same point.

Every test compares eager, jitted and captured runs with graph_break_testutil.compare."""
import sys

import pytest

import pijit as ms
from graph_break_testutil import _reset_state  # noqa: F401 (autouse fixture)
from graph_break_testutil import LOG, Obj, X, compare, unknown, show


def obj_with(**attrs):
    o = Obj()
    for k, v in attrs.items():
        setattr(o, k, v)
    return o


def obj_state(a):
    return sorted(vars(a[1]).items())


# ---- del obj.attr -------------------------------------------------------------------------------

def delete_attr_then_read(x, o):
    o.b = x + 1.0
    del o.a
    gone = hasattr(o, "a")
    dflt = getattr(o, "a", 7)
    o.c = o.n * 2
    return x * dflt, gone, hasattr(o, "b")


def test_attribute_deletion_replays_after_one_graph(capsys):
    stats, out, _ = compare(delete_attr_then_read, lambda: (X(), obj_with(a=1, n=3)),
                            capsys=capsys, state=obj_state)
    assert out[0] == "ok" and out[1][1] is False
    assert stats["total_break_count"] == 0 and stats["graph_count"] >= 1, stats


def delete_then_store_again(x, o):
    del o.a
    o.a = x * 2.0
    del o.a
    o.a = 5
    return x + o.a


def test_attribute_deleted_then_stored_again(capsys):
    stats, _, _ = compare(delete_then_store_again, lambda: (X(), obj_with(a=1)), capsys=capsys,
                          state=obj_state)
    assert stats["total_break_count"] == 0, stats


def delete_missing_attr(x, o):
    LOG.append("before")
    y = x + 1.0
    del o.missing
    LOG.append("after")
    return y


def delete_attr_twice(x, o):
    del o.a
    del o.a
    return x


def read_deleted_attr(x, o):
    del o.a
    return x * o.a


class WithClassAttr:
    a = 10


def read_deleted_attr_of_the_class(x, o):
    del o.a
    return x * o.a, hasattr(o, "a"), getattr(o, "a", -1)


@pytest.mark.parametrize("fn", [delete_missing_attr, delete_attr_twice, read_deleted_attr],
                         ids=lambda f: f.__name__)
def test_deleting_or_reading_a_missing_attribute_raises_as_eager(fn, capsys):
    stats, out, _ = compare(fn, lambda: (X(), obj_with(a=1)), capsys=capsys,
                            state=lambda a: (list(LOG), obj_state(a)))
    assert out[0] == "raise" and out[1] is AttributeError, out
    assert stats["total_break_count"] >= 1, stats


def test_deleted_instance_attribute_reads_the_class_attribute(capsys):
    def make():
        o = WithClassAttr()
        o.a = 1
        return X(), o
    _, out, _ = compare(read_deleted_attr_of_the_class, make, capsys=capsys,
                        state=lambda a: sorted(vars(a[1]).items()))
    assert out[0] == "ok" and out[1][1:] == (True, 10)


# ---- del d[k] -----------------------------------------------------------------------------------

def delete_item_then_read(x, d):
    del d["a"]
    d["z"] = x * 2.0
    del d[1]
    return x * len(d), "a" in d, 1 in d, list(d), d.get("a", -1)


def test_dict_deletion_replays_after_one_graph(capsys):
    stats, out, _ = compare(delete_item_then_read, lambda: (X(), {"a": 1, 1: 2, "c": 3}),
                            capsys=capsys, state=lambda a: list(a[1].items()))
    assert out[1][1:] == (False, False, ["c", "z"], -1)
    assert stats["total_break_count"] == 0, stats


def delete_missing_key(x, d):
    LOG.append(len(d))
    d["k"] = 1
    del d["missing"]
    return x


def delete_key_twice(x, d):
    del d["a"]
    del d["a"]
    return x


@pytest.mark.parametrize("fn", [delete_missing_key, delete_key_twice], ids=lambda f: f.__name__)
def test_deleting_a_missing_key_raises_key_error_as_eager(fn, capsys):
    stats, out, _ = compare(fn, lambda: (X(), {"a": 1}), capsys=capsys,
                            state=lambda a: (list(LOG), list(a[1].items())))
    assert out[0] == "raise" and out[1] is KeyError, out


def delete_then_readd(x, d):
    del d["a"]
    d["a"] = 9  # moves to the end, as in eager
    return x * d["a"], list(d.items())


def test_dict_deleted_key_added_again_goes_last(capsys):
    stats, out, _ = compare(delete_then_readd, lambda: (X(), {"a": 1, "b": 2}), capsys=capsys,
                            state=lambda a: list(a[1].items()))
    assert out[1][1] == [("b", 2), ("a", 9)]
    assert stats["total_break_count"] == 0, stats


# ---- del lst[i] ---------------------------------------------------------------------------------

def delete_list_items(x, lst):
    del lst[0]
    del lst[-1]
    lst.append(x + 1.0)
    n = len(lst)
    del lst[1]
    return x * n, len(lst)


def test_list_deletion_replays_after_one_graph(capsys):
    stats, out, _ = compare(delete_list_items, lambda: (X(), [1, 2, 3, 4]), capsys=capsys,
                            state=lambda a: list(a[1]))
    assert out[1][1] == 2
    assert stats["total_break_count"] == 0, stats


def delete_list_out_of_range(x, lst):
    lst.append(1)
    del lst[0]
    del lst[5]
    return x


def delete_after_appends(x, lst):
    lst.append(x)
    lst.insert(0, 1)
    lst.extend((2, 3))
    del lst[4]  # the length on entry is guarded then, and the appends counted
    del lst[-5]
    return x * len(lst), len(lst)


def test_list_deletion_after_appends_in_one_graph(capsys):
    stats, out, _ = compare(delete_after_appends, lambda: (X(), [5, 6]), capsys=capsys,
                            state=lambda a: list(a[1]))
    assert out[1][1] == 4
    assert stats["total_break_count"] == 0, stats


def delete_slice(x, lst):
    del lst[1:]
    return x * len(lst)


@pytest.mark.parametrize("fn", [delete_list_out_of_range, delete_slice], ids=lambda f: f.__name__)
def test_list_deletions_that_break_match_eager(fn, capsys):
    compare(fn, lambda: (X(), [5, 6]), capsys=capsys, state=lambda a: list(a[1]))


# ---- del of a global ----------------------------------------------------------------------------

GONE = 1
OTHER = 2


def reset_globals():
    global GONE, OTHER
    GONE, OTHER = 1, 2


def global_state(_args):
    g = globals()
    return ("GONE" in g, g.get("OTHER"), list(LOG))


def delete_global(x):
    global GONE, OTHER
    OTHER = OTHER + 1
    del GONE
    LOG.append("deleted")
    return x * OTHER


def delete_global_then_read(x):
    global GONE
    del GONE
    return x * GONE


def delete_global_twice(x):
    global GONE
    del GONE
    del GONE
    return x


def test_global_deletion_replays_after_one_graph(capsys):
    stats, _, _ = compare(delete_global, capsys=capsys, state=global_state, reset=reset_globals)
    assert stats["total_break_count"] == 0, stats


@pytest.mark.parametrize("fn", [delete_global_then_read, delete_global_twice],
                         ids=lambda f: f.__name__)
def test_deleted_global_raises_name_error_as_eager(fn, capsys):
    _, out, _ = compare(fn, capsys=capsys, state=global_state, reset=reset_globals)
    assert out[0] == "raise" and out[1] is NameError, out


# ---- order with other effects and output ----------------------------------------------------------

def deletions_in_order(x, o, d, lst):
    show("start", len(d))
    del d["a"]
    o.t = x * 2.0
    del lst[0]
    y = unknown(x)  # a break: the deletions before it run first
    show("in d:", "a" in d, "len:", len(lst))
    del o.t
    d["a"] = len(lst)
    return y, hasattr(o, "t")


def test_deletions_in_order_with_prints_and_breaks(capsys):
    stats, _, printed = compare(deletions_in_order,
                                lambda: (X(), Obj(), {"a": 1, "b": 2}, [1, 2, 3]), capsys=capsys,
                                state=lambda a: (sorted(vars(a[1])), list(a[2].items()), list(a[3])))
    assert printed.startswith("start 2\n")
    assert stats["total_break_count"] >= 1, stats


# ---- references --------------------------------------------------------------------------------

class Payload:
    pass


def pop_and_return(x, d, o):
    v = d["p"]
    del d["p"]
    w = o.p
    del o.p
    return x + 1.0, v, w


def test_deleted_values_are_returned_without_leaking():
    jf = ms.jit(pop_and_return, mode="PIJit")
    ms.reset(jf)
    p, q = Payload(), Payload()
    base = (sys.getrefcount(p), sys.getrefcount(q))
    for _ in range(3):
        o = Obj()
        o.p = q
        d = {"p": p}
        _, v, w = jf(X(), d, o)
        assert v is p and w is q and d == {} and not hasattr(o, "p")
        del v, w, o, d
        assert (sys.getrefcount(p), sys.getrefcount(q)) == base
    ms.reset(jf)


class Computed:
    def __getattr__(self, name):
        return 42


def delete_then_hasattr_computed(x, o):
    o.q = 1
    del o.q
    return x, hasattr(o, "q"), getattr(o, "q", 5)


def test_deleted_attribute_of_an_object_with_getattr_is_computed(capsys):
    _, out, _ = compare(delete_then_hasattr_computed, lambda: (X(), Computed()), capsys=capsys,
                        state=lambda a: sorted(vars(a[1]).items()))
    assert out[1][1:] == (True, 42)
