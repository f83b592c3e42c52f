"""Ordinary Python that capture now keeps in the graph: round, pow and divmod of numbers (pow
of a tensor is the op), dict(...), item assignment into lists and dicts made in the
function, class attributes, staticmethod, classmethod and property (on the class and on
instances). Each function is compared with eager execution (results, output, side effects;
jitted twice and under pijit.capture()) and must run with no graph break; changing what a
guard read recompiles."""
import numpy as np
import pytest

import pijit as ms
from graph_break_testutil import _reset_state  # noqa: F401 (autouse fixture)
from graph_break_testutil import (LOG, X, compare,  # noqa: F401 (LOG: the functions' log)
                                  compare_as_one_graph)


class Scaler:
    factor = 2.0

    def __init__(self):
        self.offset = 0.5

    @staticmethod
    def twice(t):
        return t * 2.0

    @classmethod
    def scaled(cls, t):
        return t * cls.factor

    @property
    def shift(self):
        return self.offset + 1.0

    def apply(self, t):
        return self.scaled(t) + self.shift + Scaler.twice(t)


SCALER = Scaler()


def numbers_builtins(x):
    a = round(2.567, 2) + round(7.5)
    q, r = divmod(17, 5)
    return x * a + pow(2, 3) * q - r + pow(x, 2)


def dict_constructor(x):
    d = dict(a=x, b=2.0)
    e = dict([("c", x * 3.0), ("d", 1.0)], f=4.0)
    g = dict(d)
    return d["a"] * d["b"] + e["c"] * e["f"] + g["a"] + len(e)


def item_assignment(x):
    values = [x, x + 1.0, x + 2.0]
    values[0] = x * 10.0
    values[-1] = values[1] * 2.0
    table = {}
    table["k"] = x - 1.0
    table["k"] = table["k"] * 3.0
    return values[0] + values[2] + table["k"]


def class_level_access(x):
    return Scaler.twice(x) + Scaler.scaled(x) * Scaler.factor


def instance_level_access(x):
    return SCALER.twice(x) + SCALER.scaled(x) + SCALER.shift * x + SCALER.apply(x)


CASES = [numbers_builtins, dict_constructor, item_assignment, class_level_access,
         instance_level_access]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_captured_without_a_break_and_equal_to_eager(fn, capsys):
    compare_as_one_graph(fn, capsys=capsys)


def assigning_while_looping(x):
    values = [x, x + 1.0, x + 2.0]
    out = x * 0.0
    for v in values:
        values[2] = v * 5.0  # Python's loop sees this on its third item
        out = out + v
    return out


def test_assignment_into_a_list_being_looped_over_matches_eager(capsys):
    compare(assigning_while_looping, capsys=capsys)


def out_of_range(x):
    values = [x]
    values[3] = x
    return values[0]


def test_assignment_out_of_range_raises_as_eagerly(capsys):
    compare(out_of_range, capsys=capsys)


def test_changing_a_class_attribute_or_method_recompiles():
    jf = ms.jit(class_level_access, capture_mode="bytecode")
    ms.reset(jf)
    x = X()
    np.testing.assert_array_equal(jf(x).asnumpy(), class_level_access(x).asnumpy())
    saved_factor, saved_twice = Scaler.factor, Scaler.__dict__["twice"]
    try:
        Scaler.factor = 3.0
        np.testing.assert_array_equal(jf(x).asnumpy(), class_level_access(x).asnumpy())
        Scaler.twice = staticmethod(lambda t: t * 7.0)
        np.testing.assert_array_equal(jf(x).asnumpy(), class_level_access(x).asnumpy())
    finally:
        Scaler.factor = saved_factor
        Scaler.twice = saved_twice
    assert ms.get_code_extra(jf)["compile_count"] == 3


def test_a_property_reads_the_instance_of_each_call():
    jf = ms.jit(instance_level_access, capture_mode="bytecode")
    ms.reset(jf)
    x = X()
    saved = SCALER.offset
    try:
        for offset in (0.5, 1.5):
            SCALER.offset = offset
            np.testing.assert_array_equal(jf(x).asnumpy(), instance_level_access(x).asnumpy())
    finally:
        SCALER.offset = saved


# ---- lists holding tensors as inputs ----------------------------------------------------------

def concat_of_a_list(xs):
    return ms.ops.concat(xs) * 2.0 + ms.ops.stack(xs).sum()


def loop_over_a_list(xs):
    acc = xs[0] * 0.0
    for t in xs:
        acc = acc + t * len(xs)
    return acc, xs[-1]


def returns_the_list(xs):
    return xs, xs[0] + 1.0


def mutates_the_list(xs):
    y = xs[0] * 2.0
    xs.append(y)  # breaks: the append runs in Python, on the caller's list
    xs[0] = y + 1.0
    return xs[-1] + xs[0], len(xs)


def extends_its_own_list(x):
    own = [x]
    alias = own
    own += [x * 2.0, x * 3.0]  # in place: the alias sees it
    return alias[-1], len(alias)


def list_state(args):
    """The caller's list after the call, compared like the result."""
    return [t.asnumpy().tolist() for t in args[0]] if isinstance(args[0], list) else None


LIST_CASES = [concat_of_a_list, loop_over_a_list, returns_the_list]


@pytest.mark.parametrize("fn", LIST_CASES, ids=lambda f: f.__name__)
def test_lists_of_tensors_are_inputs_like_tuples(fn, capsys):
    compare_as_one_graph(fn, make_args=lambda: ([X(), X() + 1.0, X() * 2.0],), capsys=capsys,
                         state=list_state)


def test_a_returned_input_list_is_the_callers_own_object():
    jf = ms.jit(returns_the_list, capture_mode="bytecode")
    xs = [X(), X()]
    assert jf(xs)[0] is xs and jf(xs)[0] is xs


def test_mutating_an_input_list_breaks_and_matches_eager(capsys):
    stats, _, _ = compare(mutates_the_list, make_args=lambda: ([X(), X() + 1.0],),
                          capsys=capsys, state=list_state)
    assert stats["total_break_count"] >= 1


def test_list_plus_equals_extends_in_place(capsys):
    stats, _, _ = compare(extends_its_own_list, capsys=capsys)
    assert stats["total_break_count"] == 0


# ---- namedtuples made in captured code ---------------------------------------------------------

import collections  # noqa: E402
import typing  # noqa: E402

Pair = collections.namedtuple("Pair", "left right")
Scaled = collections.namedtuple("Scaled", ["value", "scale"], defaults=[2.0])


class Typed(typing.NamedTuple):
    tensor: object
    weight: float = 0.5


def builds_namedtuples(x):
    p = Pair(x, right=x * 2.0)
    s = Scaled(p.right)
    t = Typed(x + 1.0)
    left, right = p
    return p.left + s.value * s.scale + t.tensor * t.weight + right - left + p[1]


def returns_a_namedtuple(x):
    return Pair(x * 2.0, x - 1.0), Typed(x)


def namedtuple_crosses_a_break(x):
    p = Pair(x * 2.0, x + 1.0)
    print("between", type(p).__name__)
    return p.left * p.right, p


def reads_an_input_namedtuple(p):
    return p.left * 3.0 + p.right, isinstance(p, Pair)


def test_namedtuples_made_inside_stay_in_the_graph(capsys):
    compare_as_one_graph(builds_namedtuples, capsys=capsys)


def test_returned_namedtuples_are_rebuilt_with_their_class(capsys):
    stats, out, _ = compare(returns_a_namedtuple, capsys=capsys)
    assert stats["total_break_count"] == 0
    jf = ms.jit(returns_a_namedtuple, capture_mode="bytecode")
    got = jf(X())
    assert type(got[0]) is Pair and type(got[1]) is Typed
    assert got[0].right.shape == (2, 3) and got[1].weight == 0.5


def test_a_namedtuple_handed_to_a_break_keeps_its_class(capsys):
    compare(namedtuple_crosses_a_break, capsys=capsys)


def test_fields_of_an_input_namedtuple(capsys):
    stats, _, _ = compare(reads_an_input_namedtuple, make_args=lambda: (Pair(X(), X() + 1.0),),
                          capsys=capsys)
    assert stats["total_break_count"] == 0


# ---- objects of plain classes made in captured code --------------------------------------------

import dataclasses  # noqa: E402


class Accumulator:
    scale = 0.5

    def __init__(self, start, step=1.0):
        self.total = start
        self.step = step

    def add(self, t):
        self.total = self.total + t * self.step * self.scale
        return self

    def __call__(self, t):
        return self.total * t


@dataclasses.dataclass
class Options:
    weight: object
    bias: float = 0.25


def uses_objects(x):
    acc = Accumulator(x, step=2.0)
    alias = acc
    acc.add(x).add(x * 3.0)
    opts = Options(x * 0.5)
    opts.bias = opts.bias * 2.0
    return alias.total + acc(x) + opts.weight * opts.bias, isinstance(acc, Accumulator)


def returns_an_object(x):
    acc = Accumulator(x)
    acc.add(x)
    return acc


def object_crosses_a_break(x):
    acc = Accumulator(x)
    print("between", type(acc).__name__)
    acc.add(x)
    return acc.total


def missing_attribute(x):
    return Accumulator(x).nothing


def gradient_operation_made_inside(x):
    def loss(t):
        return (t * t).sum()
    return ms.ops.GradOperation()(loss)(x) * 2.0


def test_objects_made_inside_stay_in_the_graph(capsys):
    for fn in (uses_objects, gradient_operation_made_inside):
        compare_as_one_graph(fn, capsys=capsys)


def test_a_returned_object_is_a_fresh_instance_with_its_attributes():
    jf = ms.jit(returns_an_object, capture_mode="bytecode")
    a, b = jf(X()), jf(X())
    assert type(a) is Accumulator and a is not b
    assert vars(a).keys() == {"total", "step"}
    np.testing.assert_array_equal(a.total.asnumpy(), returns_an_object(X()).total.asnumpy())
    assert ms.get_code_extra(jf)["total_break_count"] == 0


def test_objects_across_breaks_and_errors_match_eager(capsys):
    compare(object_crosses_a_break, capsys=capsys)
    compare(missing_attribute, capsys=capsys)


def logs_a_namedtuple_after_a_break(x):
    y = x * 2.0
    print("break", y.shape)
    LOG.append((Pair(x - y, right=y), 1.0))  # an effect replayed after the resume's graph
    return y


def test_a_namedtuple_in_a_replayed_effect_keeps_its_class(capsys):
    # compare() checks the log of every run, capture mode's included, against eager's.
    compare(logs_a_namedtuple_after_a_break, capsys=capsys)


# ---- properties: getters on objects made in the function, setters inlined --------------------

class Tracked:
    def __init__(self, k=2.0):
        self.k = k

    @property
    def doubled(self):
        return self.k * 2.0

    @doubled.setter
    def doubled(self, v):
        self.k = v / 2.0 + 1.0

    @property
    def fixed(self):
        return 7.0


def getter_of_an_object_made_inside(x):
    t = Tracked(3.0)
    return x * t.doubled + t.fixed


def setter_of_an_object_made_inside(x):
    t = Tracked()
    t.doubled = 8.0  # the setter runs inlined: k becomes 5
    return x * t.k + t.doubled


def setter_of_an_input(x, t):
    t.doubled = 4.0  # replayed on the caller's object after the graph
    return x * t.doubled


@pytest.mark.parametrize("fn, make_args", [
    (getter_of_an_object_made_inside, lambda: (X(),)),
    (setter_of_an_object_made_inside, lambda: (X(),)),
    (setter_of_an_input, lambda: (X(), Tracked())),
], ids=["getter_made_inside", "setter_made_inside", "setter_of_input"])
def test_property_accessors_stay_in_the_graph(fn, make_args, capsys):
    stats, _, _ = compare(fn, make_args, capsys=capsys,
                          state=lambda args: [vars(a) for a in args[1:]])
    assert stats["total_break_count"] == 0, stats["all_reasons"]


def test_a_property_without_a_setter_raises_as_eagerly():
    def store_read_only(x, t):
        t.fixed = 1.0
        return x

    jf = ms.jit(store_read_only, capture_mode="bytecode")
    with pytest.raises(AttributeError, match="fixed"):
        jf(X(), Tracked())
