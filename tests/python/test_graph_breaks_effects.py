"""Graph breaks and side effects: log appends, attribute, global and dict stores in the eager
order and count, item stores into input dicts and extend/insert on input lists replayed after
the graph, lists mutated at breaks, aliasing and identity of containers and inputs
across a break, and other breaking instructions (iterating a tensor, stores to subscripts,
.asnumpy(), isinstance, operators of Python objects that run Python code).

Every test compares eager, jitted and captured runs with graph_break_testutil.compare."""
import pytest

import pijit as ms
from graph_break_testutil import _reset_state  # noqa: F401 (autouse fixture)
from graph_break_testutil import (LOG, Obj, STATE, X, assert_same_outcome, compare, log, show,
                                  module_state, opaque_mutate, unknown)


# ---- side effects: order and count -------------------------------------------------------------

G = 0  # a global the functions under test store to (STORE_GLOBAL around breaks)


def reset_g():
    global G
    G = 0


def global_state(_args=None):
    """The side effects on module state, with this module's G."""
    return module_state() + (G,)


def side_effects(x, o, d):
    global G
    y = x + 1.0
    LOG.append("start")
    o.first = y
    G = G + 1
    d["k"] = y * 2.0
    show("middle")
    LOG.append(G)
    o.second = G * 10
    G = G + 1
    d.update(n=G)
    del d["k"]
    STATE["last"] = G
    LOG.append("end")
    return y * G


def side_effect_state(args):
    _, o, d = args
    return global_state() + (sorted(vars(o).items()), sorted(d.items()))


def test_side_effects_in_order_and_count(capsys):
    stats, out, printed = compare(side_effects, lambda: (X(), Obj(), {}), capsys=capsys,
                                  state=side_effect_state, reset=reset_g)
    assert printed == "middle\n"
    # print breaks the graph; the stores, d.update and del d["k"] replay around it.
    assert stats["total_break_count"] >= 1


def store_attr_of_tensor(x, o):
    y = x + 1.0
    o.value = y
    o.count = getattr(o, "count", 0) + 1
    return o.value * o.count


def test_attribute_stores_at_breaks(capsys):
    compare(store_attr_of_tensor, lambda: (X(), Obj()), capsys=capsys,
            state=lambda a: sorted(vars(a[1]).items()))


def global_counter(x):
    global G
    y = x + 1.0
    G = G + 1
    z = y * G
    G = G * 10
    return z, G


def test_global_stores_at_breaks(capsys):
    stats, _, _ = compare(global_counter, capsys=capsys, state=global_state, reset=reset_g)
    assert stats["total_break_count"] == 0  # the stores are replayed after the graph


def logged(x):
    a = log(1)
    y = x * 2.0
    b = log(float(y.sum()))
    LOG.append(y)
    c = log("three")
    return y + a, b, c


def test_log_appends_of_python_values_and_tensors(capsys):
    _, _, printed = compare(logged, capsys=capsys)
    assert printed == "log 1\nlog 3.0\nlog three\n"


def listarg(x, lst):
    y = x + 1.0
    lst.append(1)
    lst.append(y)
    return y * len(lst)


def append_to_argument_list(x, out):
    y = x * 2.0
    out.append(unknown(y))  # LOAD_METHOD breaks; the bridge leaves (NULL, bound method)
    out.append(y - 1.0)
    out.insert(0, len(out))
    return y + 1.0, len(out)


def test_method_calls_on_an_argument_list_at_breaks(capsys):
    stats, _, _ = compare(append_to_argument_list, lambda: (X(), []), capsys=capsys,
                          state=lambda a: list(a[1]))
    assert stats["resume_functions"] >= 1 and stats["graph_count"] >= 1


def test_list_argument_mutated_at_breaks(capsys):
    compare(listarg, lambda: (X(), []), capsys=capsys, state=lambda a: list(a[1]))


# ---- aliasing and identity ---------------------------------------------------------------------

def list_alias(x):
    lst = [x + 1.0]
    other = lst
    opaque_mutate(lst, x * 2.0)
    return lst is other, len(lst), other, lst


def list_alias_in_tuple(x):
    lst = [x + 1.0, x]
    pair = (lst, lst)
    opaque_mutate(pair[0], x * 3.0)
    return pair[0] is pair[1], pair[1] is lst, len(lst)


def list_alias_returned(x):
    lst = [x + 1.0]
    n = opaque_mutate(lst, x)
    LOG.append(lst)
    return lst is LOG[0], n, lst


def identity_of_inputs(x, y):
    z = x
    show("identity")
    return z is x, z, y


def identity_of_results(x):
    y = x + 1.0
    z = y
    show("identity")
    return y is z, z


@pytest.mark.parametrize("fn", [list_alias, list_alias_in_tuple, list_alias_returned,
                                identity_of_results],
                         ids=lambda f: f.__name__)
def test_aliasing_survives_a_break(fn, capsys):
    _, out, _ = compare(fn, capsys=capsys)
    assert out[1][0] is True


def test_input_identity_survives_a_break(capsys):
    x, y = X(), (1, 2)
    jf = ms.jit(identity_of_inputs, mode="PIJit")
    ms.reset(jf)
    same, z, w = jf(x, y)
    assert same is True and z is x and w is y


# ---- other breaking instructions ---------------------------------------------------------------

def iterate_tensor(x):
    y = x * 2.0
    acc = y[0] * 0.0
    for row in y:
        acc = acc + row
    return acc


def store_subscript(x, d):
    y = x + 1.0
    d["k"] = y
    d["j"] = 2
    del d["j"]
    return d["k"] * 2.0


def asnumpy_round_trip(x):
    y = x + 1.0
    n = y.asnumpy()
    return ms.Tensor(n * 2.0) + y


def isinstance_and_compare(x, o):
    y = x * 2.0
    if o == 3:
        y = y + 1.0
    if "a" in STATE:
        y = y * 5.0
    return -y


@pytest.mark.parametrize("fn,make", [
    (iterate_tensor, lambda: (X(),)),
    (store_subscript, lambda: (X(), {})),
    (asnumpy_round_trip, lambda: (X(),)),
    (isinstance_and_compare, lambda: (X(), Obj())),
], ids=["iterate_tensor", "store_subscript", "asnumpy", "compare_unknown"])
def test_other_breaking_instructions(fn, make, capsys):
    compare(fn, make, capsys=capsys)


class Box:
    """An object whose operators run Python code: each use is a break at that instruction."""

    def __contains__(self, k):
        show("contains", k)
        return k == "a"

    def __neg__(self):
        show("neg")
        return 5

    def __getitem__(self, k):
        show("getitem", k)
        return 2.0

    def __bool__(self):
        show("bool")
        return True

    @property
    def maybe(self):
        show("maybe")
        return None


BOX = Box()


def unary_of_object(x):
    y = x + 1.0
    return y * -BOX


def contains_of_object(x):
    y = x + 1.0
    if "a" in BOX:
        y = y * 2.0
    return y


def subscript_of_object(x):
    y = x + 1.0
    return y * BOX["k"]


def truth_of_object(x):
    y = x + 1.0
    if BOX:
        y = y * 3.0
    return y


def property_is_none(x):
    y = x + 1.0
    if BOX.maybe is None:
        y = y * 2.0
    return y


def tensor_attributes(x):
    y = x + 1.0
    s = y.strides
    c = y.is_contiguous()
    return y * len(s), c


@pytest.mark.parametrize("fn", [unary_of_object, contains_of_object, subscript_of_object,
                                truth_of_object, property_is_none, tensor_attributes],
                         ids=lambda f: f.__name__)
def test_bridges_for_operators_of_python_objects(fn, capsys):
    stats, out, _ = compare(fn, capsys=capsys)
    assert out[0] == "ok"
    assert stats["total_break_count"] >= 1 and stats["resume_functions"] >= 1


# ---- effects recorded during capture and replayed after the graph ----------------------------

class Counter:
    def __init__(self):
        self.count = 0


def replayed(x, log, obj):
    y = x * 2.0
    log.append(y)
    obj.count = obj.count + 1
    return y + 1.0


def test_append_and_attribute_store_replay_after_one_graph(capsys):
    stats, _, _ = compare(replayed, lambda: (X(), [], Counter()), capsys=capsys,
                          state=lambda a: (list(a[1]), a[2].count))
    assert stats["total_break_count"] == 0, stats  # one graph per new list (identity guard)


def store_then_read(x, obj):
    obj.count = obj.count + 1
    obj.count = obj.count * 3
    obj.t = x + 1.0
    return obj.t * obj.count, hasattr(obj, "t")


def test_attribute_read_after_store_sees_the_stored_value(capsys):
    stats, _, _ = compare(store_then_read, lambda: (X(), Counter()), capsys=capsys,
                          state=lambda a: (a[1].count, a[1].t))
    assert stats["total_break_count"] == 0, stats


def store_then_return_alias(x, obj):
    y = x * 3.0
    obj.t = y
    return y, obj


def test_stored_tensor_is_the_returned_object():
    o = Counter()
    r, same = ms.jit(store_then_return_alias, mode="PIJit")(X(), o)
    assert same is o and o.t is r


def append_then_read(x, log, alias):
    log.append(x + 1.0)
    n = len(alias)  # the same list: sees the append
    log.append(n)
    return x * n


def test_append_then_read_through_an_alias(capsys):
    def make():
        lst = [1]
        return X(), lst, lst
    compare(append_then_read, make, capsys=capsys, state=lambda a: list(a[1]))


def global_store_replayed(x):
    global G
    G = G + 1
    y = x * G
    G = G + 1
    return y + G


def test_global_stores_replay_after_the_graph(capsys):
    stats, _, _ = compare(global_store_replayed, capsys=capsys, state=global_state, reset=reset_g)
    assert stats["total_break_count"] == 0, stats


def effects_then_break(x, log, obj):
    log.append(x + 1.0)
    obj.count = 5
    show("between", obj.count)
    log.append(obj.count)
    return x * 2.0


def test_effects_before_a_break_run_before_it(capsys):
    _, _, printed = compare(effects_then_break, lambda: (X(), [], Counter()), capsys=capsys,
                            state=lambda a: (list(a[1]), a[2].count))
    assert printed == "between 5\n"


class Slotted:
    __slots__ = ("count",)

    def __init__(self):
        self.count = 0


class Prop:
    def __init__(self):
        self._v = 0

    @property
    def v(self):
        return self._v

    @v.setter
    def v(self, value):
        LOG.append(("set", value))
        self._v = value


def descriptor_stores(x, s, p):
    s.count = s.count + 1
    p.v = p.v + 2
    return x + s.count + p.v


def test_stores_through_descriptors_break_and_match_eager(capsys):
    compare(descriptor_stores, lambda: (X(), Slotted(), Prop()), capsys=capsys,
            state=lambda a: (a[1].count, a[2].v, list(LOG)))


def list_value_stored(x, obj):
    lst = [x + 1.0]
    obj.items = lst
    lst.append(2)
    return len(obj.items)


def test_storing_a_list_built_in_the_trace_matches_eager(capsys):
    compare(list_value_stored, lambda: (X(), Counter()), capsys=capsys,
            state=lambda a: list(a[1].items))


# ---- item stores into input dicts, extend and insert on input lists ---------------------------

def dict_store_then_read(x, d):
    d["k"] = x + 1.0
    d[1] = 3
    y = d["k"] * d[1]  # both read the stored values
    d["k"] = y
    d["n"] = d["n"] + 1  # a key not stored before: the caller's value
    return y + d["k"], d["n"], x * d["j"]


def test_dict_item_stores_replay_after_one_graph(capsys):
    stats, _, _ = compare(dict_store_then_read, lambda: (X(), {"n": 1, 1: 0, "j": 2}), capsys=capsys,
                          state=lambda a: list(a[1].items()))
    assert stats["total_break_count"] == 0, stats


def dict_store_into_module_state(x):
    STATE["a"] = 1
    LOG.append(x + 1.0)
    STATE["b"] = x * 2.0
    STATE["a"] = STATE["a"] + 1
    return x - STATE["a"]


def test_dict_stores_to_a_global_dict_in_order_with_one_graph(capsys):
    stats, _, _ = compare(dict_store_into_module_state, capsys=capsys,
                          state=lambda _a: (list(LOG), list(STATE.items())))
    assert stats["total_break_count"] == 0 and stats["graph_count"] == 1, stats


def dict_store_then_len(x, d):
    d["k"] = x + 1.0
    return x * len(d)


def dict_store_then_contains(x, d):
    d["k"] = 2
    return x * ("k" in d), x * ("z" in d)


def dict_store_then_missing_key(x, d):
    d["k"] = x + 1.0
    return d["missing"]


def dict_store_then_iterate(x, d):
    d["k"] = 5
    acc = x
    for key in d:
        acc = acc + d[key]
    return acc


def dict_store_then_methods(x, d):
    d["k"] = 4
    return x * d.get("k"), sorted(d.keys()), x * sum(d.values())


def dict_store_then_call(x, d):
    d["k"] = x + 1.0
    return unknown(x) * len(opaque_items(d))


def opaque_items(d):
    LOG.append(sorted(d))
    return list(d.items())


def dict_store_then_print(x, d):
    d["k"] = 7
    show("k", d["k"])  # the stored value, then the break
    show("len", len(d))
    return x * d["k"]


@pytest.mark.parametrize("fn", [dict_store_then_len, dict_store_then_contains,
                                dict_store_then_iterate, dict_store_then_methods],
                         ids=lambda f: f.__name__)
def test_reads_of_a_dict_with_pending_stores_see_them_in_one_graph(fn, capsys):
    stats, out, _ = compare(fn, lambda: (X(), {"j": 2, "i": 3}), capsys=capsys,
                            state=lambda a: (list(LOG), list(a[1].items())))
    assert out[0] == "ok"
    assert stats["total_break_count"] == 0 and stats["graph_count"] >= 1, stats


@pytest.mark.parametrize("fn", [dict_store_then_missing_key, dict_store_then_call,
                                dict_store_then_print],
                         ids=lambda f: f.__name__)
def test_reads_of_a_dict_with_pending_stores_break_after_them(fn, capsys):
    stats, out, _ = compare(fn, lambda: (X(), {"j": 2, "i": 3}), capsys=capsys,
                            state=lambda a: (list(LOG), list(a[1].items())))
    if fn is not dict_store_then_missing_key:
        assert out[0] == "ok"
    assert stats["total_break_count"] >= 1, stats


def dict_store_through_alias(x, d, alias):
    d["k"] = x + 1.0
    y = alias["k"] * 2.0  # the stored value when alias is d, the caller's otherwise
    alias["k"] = y
    return d["k"] + y


@pytest.mark.parametrize("same", [True, False], ids=["same", "distinct"])
def test_dict_store_through_an_alias(same, capsys):
    def make():
        d = {"k": 10}
        return X(), d, d if same else {"k": 20}
    stats, _, _ = compare(dict_store_through_alias, make, capsys=capsys,
                          state=lambda a: (list(a[1].items()), list(a[2].items()), a[1] is a[2]))
    assert stats["total_break_count"] == 0, stats


def dict_store_alias_len(x, d, alias):
    d["new"] = 1
    return x * len(alias)


def test_dict_store_then_len_through_an_alias(capsys):
    def make():
        d = {"k": 10}
        return X(), d, d
    stats, out, _ = compare(dict_store_alias_len, make, capsys=capsys,
                            state=lambda a: list(a[1].items()))
    assert out[0] == "ok"
    assert stats["total_break_count"] == 0, stats


class SubDict(dict):
    def __setitem__(self, k, v):
        LOG.append(("set", k))
        super().__setitem__(k, v)


def dict_stores_not_replayed(x, d, s):
    d[(1, 2)] = 1          # a tuple key
    d[True] = 2            # a bool key (equal to 1)
    d["l"] = [x + 1.0]     # a list built in the trace
    s["k"] = 3             # a dict subclass with __setitem__
    return x * d[1] + s["k"]


def test_dict_stores_not_replayed_break_and_match_eager(capsys):
    stats, _, _ = compare(dict_stores_not_replayed, lambda: (X(), {1: 5}, SubDict()),
                          capsys=capsys,
                          state=lambda a: (list(LOG), list(a[1].items()), list(a[2].items())))
    assert stats["total_break_count"] >= 1, stats


def list_extend_insert(x, lst):
    lst.extend((x + 1.0, 2))
    lst.insert(0, "a")
    lst.extend([3, x * 2.0])
    lst.insert(-1, 4)
    lst.append(5)
    lst.insert(100, 6)
    return x - 1.0


def test_list_extend_and_insert_replay_after_one_graph(capsys):
    stats, _, _ = compare(list_extend_insert, lambda: (X(), [0]), capsys=capsys,
                          state=lambda a: list(a[1]))
    assert stats["total_break_count"] == 0, stats


def list_extend_then_read(x, lst, alias):
    lst.extend((1, x))
    lst.insert(1, 9)
    return x * len(alias), alias[1]


def list_extend_not_replayed(x, lst, other):
    lst.extend(v * 2.0 for v in (x, x))  # a generator
    lst.extend(other)                    # a list argument: replayed
    lst.insert(True, 1)                  # a bool index
    lst.extend([[x]])                    # a list built in the trace
    return x * len(lst)


def test_list_extend_and_insert_reads_and_fallbacks_match_eager(capsys):
    def make():
        lst = [7]
        return X(), lst, lst
    stats, _, _ = compare(list_extend_then_read, make, capsys=capsys, state=lambda a: list(a[1]))
    assert stats["total_break_count"] >= 1, stats
    stats, _, _ = compare(list_extend_not_replayed, lambda: (X(), [0], [1, 2]), capsys=capsys,
                          state=lambda a: (list(a[1]), list(a[2])))
    assert stats["total_break_count"] >= 1, stats


def store_then_read_other(x, d, other, lst, other_lst):
    d["k"] = 5
    lst.append(1)
    return x * other["k"], x * len(other_lst)


def test_containers_distinct_when_compiled_then_the_same(capsys):
    # Compiled with distinct containers, called with one container twice: the reads must see
    # the effects on the other argument (eager order), not the state the graph was built on.
    d, lst = {}, []

    def run(fn, same):
        d.clear()
        d["k"] = 1
        lst[:] = [0]
        other, other_lst = (d, lst) if same else ({"k": 1}, [0])  # equal contents at entry
        return fn(X(), d, other, lst, other_lst), dict(d), list(lst)

    jf = ms.jit(store_then_read_other, mode="PIJit")
    ms.reset(jf)
    for same in (False, False, True, True, False):
        want = run(store_then_read_other, same)
        got = run(jf, same)
        assert_same_outcome(("ok", got[0]), ("ok", want[0]))
        assert got[1:] == want[1:]
    ms.reset(jf)


def dict_store_while_iterating(x, d):
    for k, v in d.items():
        d[k + "2"] = v  # a new key: the next step of the iteration raises
    return x


def dict_store_after_view(x, d):
    keys = d.keys()
    d["new"] = x + 1.0
    return x * len(keys), sorted(keys)


@pytest.mark.parametrize("fn", [dict_store_while_iterating, dict_store_after_view],
                         ids=lambda f: f.__name__)
def test_dict_stores_with_views_taken_match_eager(fn, capsys):
    compare(fn, lambda: (X(), {"a": 1, "b": 2}), capsys=capsys,
            state=lambda a: sorted(a[1]))
