"""Graph breaks and side effects: input dicts after mutations. After `d[k] = v`, `del d[k]`,
d.pop, d.update, d.setdefault, d.popitem and d.clear in the same graph, d.keys(), d.values(),
d.items(), len(d), iteration and `in` give what eager gives (insertion order included), and
the mutating methods are replayed after the graph in order.

Every test compares eager, jitted and captured runs with graph_break_testutil.compare."""
import pytest

import pijit as ms
from graph_break_testutil import _reset_state  # noqa: F401 (autouse fixture)
from graph_break_testutil import LOG, X, compare, show


def items(a):
    return list(a[1].items())


def views_after_mutations(x, d):
    d["new"] = x + 1.0
    del d["a"]
    v = d.pop("b")
    d.update(c=30, e=5)
    s = d.setdefault("f", 6)
    t = d.setdefault("c", 0)
    keys = list(d.keys())
    values = [k for k in d.values() if not isinstance(k, int)]
    pairs = [(k, v) for k, v in d.items() if k != "new"]
    order = [k for k in d]
    return x * v, keys, len(values), pairs, order, len(d), "a" in d, "new" in d, s, t


def test_views_after_mutations_in_one_graph(capsys):
    stats, out, _ = compare(views_after_mutations, lambda: (X(), {"a": 1, "b": 2, "c": 3}),
                            capsys=capsys, state=items)
    assert out[1][1] == ["c", "new", "e", "f"]
    assert stats["total_break_count"] == 0, stats


def pop_default_popitem_clear(x, d):
    a = d.pop("missing", 7)
    k, v = d.popitem()
    LOG.append((k, v))
    n = len(d)
    d.clear()
    d["z"] = n
    return x * a, k, v, bool(d), list(d.items())


def test_pop_with_default_popitem_and_clear(capsys):
    stats, _, _ = compare(pop_default_popitem_clear, lambda: (X(), {"a": 1, "b": 2}), capsys=capsys,
                          state=lambda a: (list(LOG), items(a)))
    assert stats["total_break_count"] == 0, stats


def pop_missing(x, d):
    d["k"] = 1
    return x * d.pop("missing")


def popitem_empty(x, d):
    d.clear()
    return d.popitem()


def mutate_while_iterating(x, d):
    d["k"] = 1
    for k in d:
        d[k + "2"] = 2
    return x


def view_then_mutate(x, d):
    d["k"] = 1
    keys = d.keys()
    d["later"] = 2  # the view is live in Python
    return x * len(keys), list(keys)


@pytest.mark.parametrize("fn", [pop_missing, popitem_empty, mutate_while_iterating,
                                view_then_mutate], ids=lambda f: f.__name__)
def test_errors_and_live_views_match_eager(fn, capsys):
    compare(fn, lambda: (X(), {"a": 1}), capsys=capsys, state=items)


def update_from_dicts(x, d, other):
    local = {"p": 1, "a": x}
    d.update(local)
    d.update(other)
    return x * len(d), list(d)


def test_update_from_a_built_dict_and_another_input(capsys):
    stats, _, _ = compare(update_from_dicts, lambda: (X(), {"a": 0}, {"o": 3, "p": 4}),
                          capsys=capsys, state=lambda a: (items(a), list(a[2].items())))
    assert stats["total_break_count"] == 0, stats


def update_from_pairs(x, d):
    d.update([("q", 2)])  # pairs: not modelled, the call runs in Python
    return x * len(d), list(d)


def test_update_from_pairs_breaks_and_matches_eager(capsys):
    stats, _, _ = compare(update_from_pairs, lambda: (X(), {"a": 0}), capsys=capsys, state=items)
    assert stats["total_break_count"] >= 1, stats


def bool_and_int_keys(x, d):
    d[True] = "t"  # the key 1 stays, its value changes
    d[2.0] = "f"
    return x, list(d.items())


def test_equal_keys_of_other_types_keep_the_first_key(capsys):
    _, out, _ = compare(bool_and_int_keys, lambda: (X(), {1: "a", 2: "b"}), capsys=capsys,
                        state=lambda a: [(type(k).__name__, k, v) for k, v in a[1].items()])
    assert [type(k) for k, _ in out[1][1]] == [int, int]


def store_then_list_keys(x, d):
    d["k"] = 1
    return x * len(d), list(d)


def test_key_order_is_guarded():
    jf = ms.jit(store_then_list_keys, mode="PIJit")
    ms.reset(jf)
    for d in ({"a": 1, "b": 2}, {"b": 2, "a": 1}, {"a": 1, "b": 2}):
        want = store_then_list_keys(X(), dict(d))[1]
        got = jf(X(), dict(d))[1]
        assert got == want
    ms.reset(jf)


def mutate_then_read_alias(x, d, alias):
    d["k"] = 5
    d.pop("j", None)
    return x * len(alias), list(alias), alias.get("k", 0)


def test_alias_read_when_compiled_distinct_then_the_same():
    jf = ms.jit(mutate_then_read_alias, mode="PIJit")
    ms.reset(jf)
    shared = {}
    for same in (False, False, True, True, False):
        for fn in (mutate_then_read_alias, jf):
            shared.clear()
            shared.update(j=1)
            alias = shared if same else {"j": 1}
            r = fn(X(), shared, alias)
            if fn is mutate_then_read_alias:
                want = (r[1:], list(shared.items()))
            else:
                assert (r[1:], list(shared.items())) == want
    ms.reset(jf)


def keys_of_an_unmutated_dict(x, d):
    return x * 2.0, list(d.keys()), list(d.values())


def test_views_of_an_unmutated_input_follow_its_key_order():
    # The views' items are guarded in their order: the same keys in another order recompile.
    jf = ms.jit(keys_of_an_unmutated_dict, mode="PIJit")
    ms.reset(jf)
    for d in ({"a": 1, "b": 2}, {"b": 2, "a": 1}, {"a": 1, "b": 2}):
        assert jf(X(), dict(d))[1:] == keys_of_an_unmutated_dict(X(), dict(d))[1:]
    ms.reset(jf)


def in_a_view(x, d):
    d["b"] = 2
    return x * ("b" in d.keys()), "z" in d.keys(), 2 in d.values(), ("a", 1) in d.items()


def test_in_over_a_view_in_one_graph(capsys):
    stats, _, _ = compare(in_a_view, lambda: (X(), {"a": 1}), capsys=capsys, state=items)
    assert stats["total_break_count"] == 0, stats


def get_then_store(x, d):
    d["b"] = d.get("b", 0) + 1  # get takes no live view: the store is recorded
    return x * d["b"], list(d)


def test_store_after_get_in_one_graph(capsys):
    stats, _, _ = compare(get_then_store, lambda: (X(), {"a": 1, "b": 2}), capsys=capsys,
                          state=items)
    assert stats["total_break_count"] == 0, stats


def key_in_an_unmutated_input(x, d):
    return x * ("a" in d), "z" in d


def test_in_over_an_unmutated_input_follows_its_keys():
    jf = ms.jit(key_in_an_unmutated_input, mode="PIJit")
    ms.reset(jf)
    for d in ({"a": 1}, {"z": 1}, {"a": 1, "z": 2}, {"a": 1}):
        assert jf(X(), d)[1:] == key_in_an_unmutated_input(X(), d)[1:]
        assert (jf(X(), d)[0].asnumpy() == key_in_an_unmutated_input(X(), d)[0].asnumpy()).all()
    stats = ms.get_code_extra(jf)
    assert stats["total_break_count"] == 0, stats
    ms.reset(jf)


def test_a_mutated_input_dict_is_guarded_by_identity_and_key_order():
    def store(x, d):
        d["k"] = 1
        return x * len(d)

    jf = ms.jit(store, mode="PIJit")
    ms.reset(jf)
    jf(X(), {"b": 1, "a": 2})
    guards = ms.get_code_extra(jf)["guards"][0]
    assert "ID_MATCH(args[1]): dict" in guards, guards
    assert "DICT_KEYS(args[1]): ('b', 'a')" in guards, guards
    ms.reset(jf)


def pop_while_iterating(x, d):
    d["k"] = 1
    for k in d:
        d.pop(k)  # the next step of the loop raises
    return x + 1.0


def update_after_view(x, d):
    d["k"] = 1
    keys = d.keys()
    d.update(z=2)  # the view sees it
    return x + 1.0, list(keys)


def local_dict_pop_while_iterating(x, d):
    loc = {"a": 1, "b": 2}
    for k in loc:
        loc.pop(k)
    return x + 1.0


def local_dict_update_after_view(x, d):
    loc = {"a": 1}
    keys = loc.keys()
    loc.update(z=2)
    return x + 1.0, list(keys)


def local_dict_methods(x, d):
    loc = {"a": 1}
    loc.update(z=2)
    v = loc.pop("a")
    loc.setdefault("q", 3)
    return x * v, list(loc.items()), loc.popitem(), loc


@pytest.mark.parametrize("fn", [pop_while_iterating, update_after_view,
                                local_dict_pop_while_iterating, local_dict_update_after_view,
                                local_dict_methods], ids=lambda f: f.__name__)
def test_mutating_methods_after_a_view_or_inside_a_loop_match_eager(fn, capsys):
    # Views and loops see later mutations in Python: after one is taken, mutating methods
    # are not recorded (they run in Python, or the call runs eagerly).
    compare(fn, lambda: (X(), {"a": 1, "b": 2}), capsys=capsys, state=items)


# ---- loops over an input dict the trace has not mutated -----------------------------------------

def loop_with_a_break(x, d):
    acc = x
    for k in d:
        show("key", k)  # a break: Python continues with the dict's own iterator
        acc = acc + d[k]
    return acc


def loop_mutating_after_a_break(x, d):
    for k in d:
        show(k)
        d[k + "2"] = 1  # the next step raises RuntimeError, as eagerly
    return x


def loop_deleting_after_a_break(x, d):
    for k in d:
        if k == "b":
            show("b")
            del d["a"]
    return x


def comprehension_then_store(x, d):
    keys = [k for k in d]
    s = sorted(d)
    d["z"] = 1  # after the loop: breaks (the dict was iterated), then Python stores
    return x * len(keys), s, list(d)


@pytest.mark.parametrize("fn", [loop_with_a_break, loop_mutating_after_a_break,
                                loop_deleting_after_a_break, comprehension_then_store],
                         ids=lambda f: f.__name__)
def test_loops_over_an_input_dict_match_eager(fn, capsys):
    stats, _, _ = compare(fn, lambda: (X(), {"a": 1.0, "b": 2.0, "c": 3.0}), capsys=capsys,
                          state=items)
    if fn is loop_with_a_break:
        assert stats["graph_count"] >= 1 and stats["total_break_count"] >= 1, stats


def loop_in_one_graph(x, d):
    acc = x
    for k in d:
        acc = acc * d[k]
    return acc, tuple(k for k in d)


def test_loop_over_an_input_dict_in_one_graph(capsys):
    stats, _, _ = compare(loop_in_one_graph, lambda: (X(), {"a": 1.0, "b": 2.0}), capsys=capsys,
                          state=items)
    assert stats["total_break_count"] == 0, stats
