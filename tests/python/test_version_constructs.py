"""Constructs that CPython versions compile differently, jitted against eager.

Each function runs on every interpreter pijit supports; the comments say what 3.12 emits for
it where that differs from 3.11 (comprehensions inlined into their function, BINARY_SLICE and
STORE_SLICE, RETURN_CONST, LOAD_SUPER_ATTR, COMPARE_OP with a branch mask, END_FOR after
FOR_ITER, CALL_INTRINSIC_1 for unary + and list-to-tuple) and what 3.13 emits (TO_BOOL before
jumps and `not`, COMPARE_OP with a bool flag, CALL_KW, the NULL after the callable, paired
local loads and stores, CONVERT_VALUE and FORMAT_SIMPLE/FORMAT_WITH_SPEC,
SET_FUNCTION_ATTRIBUTE, END_FOR + POP_TOP after a loop). Graph breaks (pijit.graph_break)
put the construct into a bridge or a resume function, which re-encode it for the running
interpreter. The hook's frame handling is checked through reference counts and deep
recursion (3.12's hook releases the frames it answers itself).
"""
import sys
import textwrap

import numpy as np
import pytest

import pijit
from pijit import ops

gb = pijit.graph_break


def T(*shape):
    n = int(np.prod(shape))
    return pijit.Tensor((np.arange(n, dtype=np.float32).reshape(shape) * 0.5 - 1.0))


def same(a, b):
    if isinstance(a, pijit.Tensor):
        return isinstance(b, pijit.Tensor) and a.dtype == b.dtype and np.array_equal(
            a.asnumpy(), b.asnumpy())
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def run_both(fn, make_args, calls=3):
    """Eager and jitted results of `calls` calls, each call with fresh arguments."""
    eager = [fn(*make_args()) for _ in range(calls)]
    jf = pijit.jit(fn, capture_mode="bytecode")
    pijit.reset(jf)
    got = [jf(*make_args()) for _ in range(calls)]
    return eager, got, pijit.get_code_extra(jf)


def comprehension_with_break(x, xs):
    v = "outer"  # 3.12 saves and restores it around the inlined comprehension's own `v`
    ys = [x * (gb() or v) for v in xs]
    zs = {v: x + v for v in xs}
    return ys, zs, v


def comprehension_filter_with_break(x, xs):
    return [x * w for w in xs if gb() is None], (x + 1 for _ in ()) is not None


def comprehension_variable_unbound_before(x, xs):
    ys = [x + w for w in xs]
    gb()
    w = 5  # the comprehension's `w` was unbound before it and is again after it
    return ys, x * w


class Box:
    def __init__(self):
        self.items = [1, 2, 3, 4]

    def __getitem__(self, k):
        return self.items[k]

    def __setitem__(self, k, v):
        self.items[k] = v


def slices(x, box, lst):
    a = box[1:3]       # BINARY_SLICE on 3.12
    box[0:2] = [9, 9]  # STORE_SLICE on 3.12
    lst[1:] = [7]
    gb()
    return x[1:3], x[::2], a, box.items, lst[:2]


def comparisons_across_breaks(x, a, b):
    rows = []
    for _ in range(2):
        gb()
        rows.append((a < b, a <= b, a == b, a != b, a > b, a >= b))
    return x + 1, rows


class Ordered:
    """Comparisons that run Python code: they break the graph and run in a bridge."""

    def __init__(self, v):
        self.v = v

    def __lt__(self, o):
        return ("lt", self.v < o)

    def __ge__(self, o):
        return ("ge", self.v >= o)

    def __eq__(self, o):
        return ("eq", self.v == o)

    __hash__ = object.__hash__


def comparisons_in_bridges(x, w):
    return x + 1, w < 3, w >= 3, w == 2


def gen(n):
    yield from range(n)


def loop_over_generator_with_break(x, n):
    for i in gen(n):  # a generator's FOR_ITER lands on END_FOR when it finishes (3.12)
        x = x + i
        gb()
    return x


def loop_with_else_and_break(x, xs):
    for v in xs:
        x = x + v
        if v > 1:
            gb()
    else:
        x = x * 2
    return x


def return_constant_after_break(x, flag):
    gb()
    if flag:
        return None  # RETURN_CONST on 3.12
    return x


def unary_plus_and_list_to_tuple(x, lst):
    t = (*lst, 1)  # CALL_INTRINSIC_1 LIST_TO_TUPLE on 3.12
    gb()
    return +x, -x, t, not lst, +len(lst)


class Base:
    def f(self, x):
        return x * 2

    scale = 3


class Child(Base):
    def f(self, x):
        return super().f(x) + 1  # LOAD_SUPER_ATTR (method form) on 3.12

    def g(self, x):
        m = super().f  # LOAD_SUPER_ATTR (attribute form)
        return m(x) - super().scale


def method_and_keyword_calls(x, lst):
    lst.append(3)
    gb()
    s = sorted(lst, reverse=True)
    return x.sum() + len(s), s, dict(a=1, b=2)


def truth_tests_across_breaks(x, a, flag):
    gb()
    y = x + 1 if not flag else x - 1      # TO_BOOL + UNARY_NOT (3.13), in a resume function
    z = a and flag                        # COPY, TO_BOOL, POP_JUMP_IF_FALSE
    while a > 0:                          # COMPARE_OP with the bool flag (3.13)
        a -= 1
        gb()
    return y, z, a


def tensor_truth_in_bridges(x):
    y = x * 2.0
    if y.sum() > 0:  # the jump runs in a bridge: 3.13's needs the TO_BOOL put back
        y = y + 1.0
    n = not (y.sum() > 100)  # UNARY_NOT of a tensor, in a bridge
    if y.max() > 0 and n:
        y = y * 3.0
    return y, n


def truth_of_comparisons_in_bridges(x, w):
    hits = []
    if w < 3:  # Ordered.__lt__ runs in a bridge; 3.13 makes its tuple a bool right there
        hits.append("lt")
    if not w >= 3:
        hits.append("not ge")
    return x + 1, hits


def keyword_calls_in_bridges(x, text):
    short = textwrap.shorten(text, width=12, placeholder="..")  # CALL_KW (3.13)
    parts = sorted(text.split(), key=len, reverse=True)
    return x * len(short), short, parts


class CallableAttributes:
    def __init__(self):
        self.scale = lambda v: v * 3.0  # an instance attribute: (callable, NULL) on 3.13

    @property
    def shift(self):
        # A getter capture cannot inline: the method-form load runs in a bridge.
        k = sum(map(float, [2.5]))
        return lambda v: v + k


def callable_attributes(x, obj):
    gb()
    return obj.scale(x), obj.shift(x), len([x])


def star_calls_across_breaks(x, args, kw):
    gb()
    r = max(*args, **kw)  # CALL_FUNCTION_EX: 3.13 has the NULL above the callable
    return x + r, dict(**kw)


def paired_locals(x):
    a, b = x, x * 2.0   # STORE_FAST_STORE_FAST (3.13)
    gb()
    c = a + b           # LOAD_FAST_LOAD_FAST
    gb()
    d = c * 2.0
    w = d + c           # loads of locals unbound at the first break, paired
    e = w; f = e + a    # noqa: E702 - STORE_FAST_LOAD_FAST
    return f + w


def formatted_strings(x, a, b):
    gb()
    s = f"{a!r:>8}|{b!s}|{a:.2f}|{b!a}|{a}"  # CONVERT_VALUE, FORMAT_WITH_SPEC, FORMAT_SIMPLE
    return x + len(s), s


def functions_with_defaults(x, k):
    gb()
    scale = lambda v, m=2.0: v * m  # noqa: E731 - MAKE_FUNCTION, SET_FUNCTION_ATTRIBUTE
    shift = lambda v, d=k: v + d  # noqa: E731
    return scale(x), shift(x), scale(x, 0.5)


def closures_with_defaults(x, k):
    def inner(v, m=k):  # closure and defaults: two SET_FUNCTION_ATTRIBUTEs (3.13)
        return v * m + x
    return inner(x), inner(x, 3.0)


CASES = {
    "comprehension_with_break": (comprehension_with_break, lambda: (T(2), [1, 2, 3])),
    "comprehension_filter_with_break": (comprehension_filter_with_break, lambda: (T(2), [1, 2])),
    "comprehension_variable_unbound_before": (comprehension_variable_unbound_before,
                                              lambda: (T(3), [1, 2])),
    "slices": (slices, lambda: (T(5), Box(), [1, 2, 3])),
    "comparisons_across_breaks": (comparisons_across_breaks, lambda: (T(2), 1.5, 2)),
    "comparisons_in_bridges": (comparisons_in_bridges, lambda: (T(2), Ordered(2))),
    "loop_over_generator_with_break": (loop_over_generator_with_break, lambda: (T(2), 3)),
    "loop_with_else_and_break": (loop_with_else_and_break, lambda: (T(2), [1, 2, 3])),
    "return_constant_after_break": (return_constant_after_break, lambda: (T(2), True)),
    "return_value_after_break": (return_constant_after_break, lambda: (T(2), False)),
    "unary_plus_and_list_to_tuple": (unary_plus_and_list_to_tuple, lambda: (T(2), [1, 2])),
    "super_method_at_root": (Child.f, lambda: (Child(), T(3))),
    "super_attribute_at_root": (Child.g, lambda: (Child(), T(3))),
    "super_inlined": (lambda x: (Child().f(x), Child().g(x)), lambda: (T(3),)),
    "method_and_keyword_calls": (method_and_keyword_calls, lambda: (T(2), [1])),
    "truth_tests_across_breaks": (truth_tests_across_breaks, lambda: (T(2), 2, True)),
    "truth_tests_across_breaks_false": (truth_tests_across_breaks, lambda: (T(2), 0, False)),
    "tensor_truth_in_bridges": (tensor_truth_in_bridges, lambda: (T(3),)),
    "tensor_truth_in_bridges_negative": (tensor_truth_in_bridges, lambda: (T(3) - 9.0,)),
    "truth_of_comparisons_in_bridges": (truth_of_comparisons_in_bridges,
                                        lambda: (T(2), Ordered(2))),
    "keyword_calls_in_bridges": (keyword_calls_in_bridges,
                                 lambda: (T(2), "pijit captures bytecode")),
    "callable_attributes": (callable_attributes, lambda: (T(2), CallableAttributes())),
    "star_calls_across_breaks": (star_calls_across_breaks,
                                 lambda: (T(2), (3, -4, 2), {"key": abs})),
    "paired_locals": (paired_locals, lambda: (T(3),)),
    "formatted_strings": (formatted_strings, lambda: (T(2), 1.5, "é")),
    "functions_with_defaults": (functions_with_defaults, lambda: (T(2), 4.0)),
    "closures_with_defaults": (closures_with_defaults, lambda: (T(2), 2.0)),
}


# Cases whose breaks must run in bridges and resume functions, never the whole function eagerly.
RESUMED = ["truth_tests_across_breaks", "tensor_truth_in_bridges", "truth_of_comparisons_in_bridges",
           "keyword_calls_in_bridges", "callable_attributes", "star_calls_across_breaks",
           "paired_locals", "formatted_strings", "functions_with_defaults"]


@pytest.mark.parametrize("name", RESUMED)
def test_breaks_resume_instead_of_running_eagerly(name):
    fn, make_args = CASES[name]
    _, _, stats = run_both(fn, make_args)
    assert stats["eager_count"] == 0, stats["all_reasons"]
    assert stats["total_break_count"] >= 1


@pytest.mark.parametrize("name", CASES)
def test_jitted_equals_eager(name):
    fn, make_args = CASES[name]
    eager, got, _ = run_both(fn, make_args)
    for call, (g, e) in enumerate(zip(got, eager)):
        assert same(g, e), f"{name} call {call}: jitted {g!r} != eager {e!r}"


def test_graph_breaks_inside_a_comprehension_resume_the_loop():
    # The break is in the comprehension's loop: on 3.12 the loop is part of the function and
    # continues in a resume function; on 3.11 the comprehension is its own function.
    _, _, stats = run_both(comprehension_with_break, CASES["comprehension_with_break"][1])
    assert stats["total_break_count"] >= 1


@pytest.mark.skipif(sys.version_info < (3, 12), reason="LOAD_SUPER_ATTR is 3.12's")
def test_super_at_the_root_breaks_instead_of_running_eagerly():
    for name in ("super_method_at_root", "super_attribute_at_root"):
        fn, make_args = CASES[name]
        _, _, stats = run_both(fn, make_args)
        assert stats["eager_count"] == 0, stats["all_reasons"]
        assert any("super()" in r["explanation"] for r in stats["all_reasons"])


def test_cached_calls_release_their_frames():
    def f(x, y):
        return x * y + 1

    jf = pijit.jit(f, capture_mode="bytecode")
    x, y = T(3), T(3)
    for _ in range(5):
        jf(x, y)
    before = sys.getrefcount(x), sys.getrefcount(y)
    for _ in range(500):
        jf(x, y)
    assert (sys.getrefcount(x), sys.getrefcount(y)) == before


def leaf(x):
    return ops.exp(x) + 1


def recurse(n, x):
    if n == 0:
        return leaf(x)
    return recurse(n - 1, x)


@pytest.mark.filterwarnings("ignore:pijit.*recompile limit:RuntimeWarning")  # n is a constant
@pytest.mark.parametrize("depth", [1, 200, 600])
def test_captured_frames_deep_in_the_data_stack(depth):
    # Deep enough that the answered frame starts a data-stack chunk of its own at some depth.
    want = recurse(depth, T(4)).asnumpy()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * depth + 200))
    try:
        with pijit.capture():
            for _ in range(3):
                got = recurse(depth, T(4)).asnumpy()
    finally:
        sys.setrecursionlimit(limit)
    np.testing.assert_array_equal(got, want)


def test_exceptions_from_captured_frames_propagate():
    def f(x):
        return x + undefined_name  # noqa: F821

    jf = pijit.jit(f, capture_mode="bytecode")
    for _ in range(3):
        with pytest.raises(NameError, match="undefined_name"):
            jf(T(2))
