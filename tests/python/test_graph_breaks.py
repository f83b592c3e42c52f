"""Graph breaks: a function that meets something capture cannot follow runs the graph of the
prefix, runs the breaking instruction in a bridge and continues in a resume function.

Every test runs a function eagerly, jitted with mode="PIJit" (twice: compiling, then from the
cache) and under `pijit.capture()`, on fresh inputs and state, and compares the results
(tensors exactly, or within the fused-exp tolerance where exp is fused), the printed output,
the side effects (log appends, attribute, global and dict stores: same order and count) and
exceptions (same type and message). Counter tests check the shape of the split: graphs,
breaks and resume functions. The regression tests at the end come from tests/fuzz/gen.py and
from probing the bridge and resume code; those that the product gets wrong are strict xfails
naming the bug."""
import sys
import traceback
import warnings

import numpy as np
import pytest

import pijit as ms
from pijit import ops
from pijit_testutil import assert_close_result, assert_same_result


def T(a, dtype=np.float32):
    return ms.Tensor(np.asarray(a, dtype=dtype))


def X():
    """A (2, 3) float32 tensor with mixed signs (sum 1.5 > 0)."""
    return T(np.arange(6).reshape(2, 3) - 2.25)


def NEG():
    return T(-(np.arange(6).reshape(2, 3) + 1.0))


# ---- module state the functions under test write to -------------------------------------------

LOG = []
G = 0
STATE = {}


class Obj:
    pass


@pytest.fixture(autouse=True)
def _reset_state():
    reset_state()
    with np.errstate(all="ignore"):
        yield
    reset_state()


def reset_state():
    global G
    LOG.clear()
    STATE.clear()
    G = 0


def module_state(_args=None):
    """The side effects a function made on module state, in order."""
    return (list(LOG), G, sorted(STATE.items()))


# ---- comparison machinery ---------------------------------------------------------------------

def outcome(fn, args, kwargs=None):
    try:
        return ("ok", fn(*args, **(kwargs or {})))
    except Exception as e:  # noqa: BLE001 - comparing whatever is raised
        return ("raise", type(e), str(e))


def assert_same_outcome(got, want, close=False):
    assert got[0] == want[0], f"jitted {got!r} but eager {want!r}"
    if want[0] == "raise":
        assert got[1:] == want[1:], f"jitted raised {got[1:]!r}, eager {want[1:]!r}"
    elif close:
        assert_close_result(got[1], want[1])
    else:
        assert_same_result(got[1], want[1])


def assert_same_state(got, want):
    assert_same_result(got, want)


def compare(fn, make_args=lambda: (X(),), *, capsys, state=module_state, close=False, calls=2,
            kwargs=None, capture=True):
    """Runs `fn` eagerly, jitted (`calls` times) and under pijit.capture(); every run gets
    fresh inputs and state. Returns (counters of the jitted function after its calls,
    the eager outcome, the eager output)."""

    def run(call):
        reset_state()
        args = make_args()
        capsys.readouterr()
        out = outcome(call, args, kwargs)
        printed = capsys.readouterr().out
        return out, printed, state(args)

    want = run(fn)
    jf = ms.jit(fn, mode="PIJit")
    ms.reset(jf)
    for i in range(calls):
        got = run(jf)
        assert_same_outcome(got[0], want[0], close)
        assert got[1] == want[1], f"call {i}: printed {got[1]!r}, eager printed {want[1]!r}"
        assert_same_state(got[2], want[2])
    stats = ms.get_code_extra(jf)
    if capture:
        ms.reset(fn)
        with ms.capture():
            got = run(fn)
        assert_same_outcome(got[0], want[0], close)
        assert got[1] == want[1], f"capture: printed {got[1]!r}, eager printed {want[1]!r}"
        assert_same_state(got[2], want[2])
    ms.reset(fn)
    return stats, want[0], want[1]


def counters(stats):
    return {k: stats[k] for k in ("graph_count", "total_break_count", "resume_functions",
                                  "compile_count")}


# ---- helpers the functions under test call ----------------------------------------------------

def unknown(t):
    """An ordinary function capture cannot inline (it prints)."""
    print("unknown", t.shape)
    return t * 0.5 + 1.0


def unknown_kw(t, scale=1.0, *, shift=0.0):
    print("unknown_kw", scale, type(shift).__name__)
    return t * scale + shift


def log(v):
    print("log", v)
    LOG.append(v)
    return v


def mutate(lst, t):
    lst.append(t)
    print("mutate", len(lst))
    return len(lst)


class Mutator:
    """A callable object: capture does not look inside, the call itself is the break."""

    def __call__(self, lst, t):
        lst.append(t)
        print("mutate", len(lst))
        return len(lst)


opaque_mutate = Mutator()


def raiser(t):
    raise KeyError(f"raiser {t.shape}")


def count_up(n):
    for i in range(n):
        yield i


def tensor_gen(t, n):
    for i in range(n):
        yield t * float(i + 1)


# ---- the split: graphs, breaks, resume functions ----------------------------------------------

def one_print(x):
    a = x * 2.0 + 1.0
    b = a - x
    print("middle", a.shape)
    c = b * b
    return c + a


def test_one_print_between_two_tensor_blocks_gives_two_graphs_and_one_break(capsys):
    stats, out, printed = compare(one_print, capsys=capsys, calls=3)
    assert printed == "middle (2, 3)\n"
    assert stats["graph_count"] == 2
    assert stats["total_break_count"] == 1
    assert stats["resume_functions"] == 1
    assert stats["compile_count"] == 1 and stats["cache_hits"] == 2
    r = stats["all_reasons"][0]
    assert r["category"] == "unsupported_call" and "print" in r["explanation"]
    assert r["line"] == one_print.__code__.co_firstlineno + 3


def three_prints(x):
    a = x + 1.0
    print("one")
    b = a * 2.0
    print("two")
    c = b - 3.0
    print("three")
    return c * c


def test_three_breaks_in_sequence_give_four_functions(capsys):
    stats, out, printed = compare(three_prints, capsys=capsys, calls=3)
    assert printed == "one\ntwo\nthree\n"
    assert stats["total_break_count"] == 3
    assert stats["resume_functions"] == 3  # + the function itself: four functions
    assert stats["graph_count"] == 4
    assert sorted(r["line"] for r in stats["all_reasons"]) == [
        three_prints.__code__.co_firstlineno + i for i in (2, 4, 6)]


def test_repeated_calls_do_not_recompile(capsys):
    jf = ms.jit(three_prints, mode="PIJit")
    ms.reset(jf)
    x = X()
    jf(x)
    first = counters(ms.get_code_extra(jf))
    for _ in range(5):
        assert_same_result(jf(x), three_prints(x))
    later = ms.get_code_extra(jf)
    assert counters(later) == first
    assert later["call_count"] == 6 and later["cache_hits"] == 5
    assert len(later["all_reasons"]) == 3
    assert capsys.readouterr().out == "one\ntwo\nthree\n" * 11


def test_new_shapes_and_dtypes_after_a_break_recompile_and_stay_correct(capsys):
    jf = ms.jit(one_print, mode="PIJit")
    ms.reset(jf)
    for shape, dtype in [((2, 3), np.float32), ((4,), np.float32), ((2, 2), np.float64),
                         ((3,), np.int32), ((2, 3), np.float32)]:
        x = T(np.arange(np.prod(shape)).reshape(shape) - 1, dtype)
        assert_same_result(jf(x), one_print(x))
    out = capsys.readouterr().out.splitlines()
    assert out[0::2] == out[1::2]


def test_strict_mode_raises_before_running_anything(capsys):
    jf = ms.jit(one_print)  # PSJit
    ms.reset(jf)
    with pytest.raises(ms.GraphBreakError, match=r'print\("middle", a.shape\)'):
        jf(X())
    assert capsys.readouterr().out == ""
    jf = ms.jit(one_print, mode="PIJit", fullgraph=True)
    with pytest.raises(ms.GraphBreakError):
        jf(X())
    assert capsys.readouterr().out == ""


# ---- data-dependent branches -------------------------------------------------------------------

def branch_on_float(x):
    y = x * 2.0
    if float(y.sum()) > 0:
        z = y + 1.0
    else:
        z = y - 1.0
    return z * 3.0


def branch_on_tensor_truth(x):
    y = x * 2.0
    if y.sum() > 0:
        z = y + 1.0
    else:
        z = y - 1.0
    return z * 3.0


@pytest.mark.parametrize("make", [X, NEG], ids=["positive", "negative"])
def test_branch_on_python_float_of_tensor(make, capsys):
    stats, out, _ = compare(branch_on_float, lambda: (make(),), capsys=capsys)
    assert stats["total_break_count"] == 1
    assert stats["resume_functions"] == 1
    assert stats["graph_count"] == 2
    assert stats["all_reasons"][0]["category"] == "data_dependent"


@pytest.mark.parametrize("make", [X, NEG], ids=["positive", "negative"])
def test_branch_on_tensor_truth(make, capsys):
    stats, out, _ = compare(branch_on_tensor_truth, lambda: (make(),), capsys=capsys)
    assert stats["total_break_count"] == 1
    # The bridge runs the jump; one resume function per way it can go.
    assert stats["resume_functions"] == 2
    assert stats["graph_count"] == 2


def test_both_ways_of_a_tensor_branch_in_one_cache(capsys):
    jf = ms.jit(branch_on_tensor_truth, mode="PIJit")
    ms.reset(jf)
    for make in (X, NEG, X, NEG):
        x = make()
        assert_same_result(jf(x), branch_on_tensor_truth(x))
    s = ms.get_code_extra(jf)
    assert s["compile_count"] == 1 and s["total_break_count"] == 1
    assert s["resume_functions"] == 2 and s["graph_count"] == 3


def and_or_not(x):
    y = x * 2.0
    a = (y.sum() > 0) and (y.mean() < 100.0)
    b = (y.sum() < 0) or (y.max() > 1.0)
    if not (y.min() > 0):
        y = y - 1.0
    return bool(a), bool(b), y + 1.0


@pytest.mark.parametrize("make", [X, NEG], ids=["positive", "negative"])
def test_and_or_not_on_tensors(make, capsys):
    stats, _, _ = compare(and_or_not, lambda: (make(),), capsys=capsys)
    assert stats["total_break_count"] >= 3


def data_dependent_return(x):
    y = x * 2.0
    if float(y.sum()) > 0:
        print("positive")
        return y
    print("negative")
    return -y


@pytest.mark.parametrize("make", [X, NEG], ids=["positive", "negative"])
def test_returns_in_both_branches_after_breaks(make, capsys):
    compare(data_dependent_return, lambda: (make(),), capsys=capsys)


def python_number_of_tensor(x):
    s = float(ops.sum(x))
    n = int(ops.mean(x) > 0)
    return x * s + n, s, n


def test_python_numbers_from_tensors(capsys):
    compare(python_number_of_tensor, capsys=capsys)


# ---- values on the stack, keyword arguments, NULLs ----------------------------------------------

def stack_value(x):
    y = x * 2.0 + unknown(x)
    return y - 1.0


def nested_unknown(x):
    return ops.relu(unknown(unknown(x + 1.0))) * 2.0


def outer_of_unknown(x):
    a = x * 3.0
    return ops.add(a, unknown(a - x)), a


def deep_stack(x):
    return (x + 1.0, x * 2.0, [x - 1.0, unknown(x)], unknown(x * 3.0), 7)


def list_method_calls(x):
    out = []
    out.append(unknown(x))
    out.extend([x * 2.0, unknown(x + 1.0)])
    out.insert(0, x - 1.0)
    return tuple(out), len(out)


def tensor_method_with_break_in_argument(x):
    y = x * 2.0
    return y.add(unknown(x)) * 3.0, y.reshape(unknown(x).shape[::-1])


def keyword_call_at_break(x):
    y = x + 1.0
    z = unknown_kw(y, scale=3.0, shift=x)
    w = unknown_kw(y, 2.0, shift=1.5)
    print("a", "b", sep="-", end="!\n")
    return z * 2.0, w


def keywords_around_break(x):
    return ops.add(x=x * 2.0, y=unknown_kw(t=x, shift=2.0)), ops.mul(x, y=unknown(x))


@pytest.mark.parametrize("fn", [stack_value, nested_unknown, outer_of_unknown, deep_stack,
                                list_method_calls, tensor_method_with_break_in_argument,
                                keyword_call_at_break, keywords_around_break],
                         ids=lambda f: f.__name__)
def test_break_with_values_on_the_stack(fn, capsys):
    stats, out, _ = compare(fn, capsys=capsys)
    assert out[0] == "ok"
    assert stats["total_break_count"] >= 1


def test_stack_value_break_counts(capsys):
    stats, _, printed = compare(stack_value, capsys=capsys)
    assert printed == "unknown (2, 3)\n"
    assert stats["total_break_count"] == 1 and stats["resume_functions"] == 1
    assert stats["graph_count"] == 2


def test_nested_unknown_calls_break_twice(capsys):
    stats, _, printed = compare(nested_unknown, capsys=capsys)
    assert printed == "unknown (2, 3)\nunknown (2, 3)\n"
    assert stats["total_break_count"] == 2 and stats["resume_functions"] == 2


def test_keyword_arguments_to_a_jitted_function_with_a_break(capsys):
    def scaled(x, scale=1.0, *, shift=0.0):
        y = x * scale
        print("scaled", scale, shift)
        return y + shift

    jf = ms.jit(scaled, mode="PIJit")
    ms.reset(jf)
    for kw in ({}, {"scale": 2.0}, {"shift": 1.0, "scale": 3.0}, {"shift": 1.0}):
        assert_same_result(jf(X(), **kw), scaled(X(), **kw))
    out = capsys.readouterr().out.splitlines()
    assert out[0::2] == out[1::2]


# ---- locals: unbound, deleted, closures, super() ----------------------------------------------

def unbound_after_float_branch(x):
    y = x * 2.0
    if float(y.sum()) > 0:
        z = y + 1.0
    print("after")
    return z * 3.0


def unbound_after_tensor_branch(x):
    y = x * 2.0
    if y.sum() > 0:
        z = y + 1.0
    print("after")
    return z * 3.0


def deleted_then_break(x):
    y = x + 1.0
    z = y * 2.0
    del y
    print("deleted")
    return z, x


def deleted_then_used(x):
    y = x + 1.0
    del y
    print("deleted")
    return y


@pytest.mark.parametrize("make", [X, NEG], ids=["bound", "unbound"])
@pytest.mark.parametrize("fn", [unbound_after_float_branch, unbound_after_tensor_branch],
                         ids=lambda f: f.__name__)
def test_local_assigned_in_one_branch_only(fn, make, capsys):
    stats, out, printed = compare(fn, lambda: (make(),), capsys=capsys)
    assert printed == "after\n"
    if make is NEG:
        assert out[1] is UnboundLocalError and "'z'" in out[2]
    else:
        assert out[0] == "ok"


@pytest.mark.parametrize("fn", [deleted_then_break, deleted_then_used], ids=lambda f: f.__name__)
def test_deleted_locals_at_a_break(fn, capsys):
    stats, out, _ = compare(fn, capsys=capsys)
    assert stats["total_break_count"] >= 1
    if fn is deleted_then_used:
        assert out[1] is UnboundLocalError


def make_closure(scale, offset):
    def inner(x):
        y = x * scale
        print("closure", scale)
        return y + offset, scale
    return inner


def test_free_variables_around_a_break(capsys):
    fn = make_closure(3.0, T([1.0, 2.0, 3.0]))
    stats, _, printed = compare(fn, capsys=capsys)
    assert printed == "closure 3.0\n"
    assert stats["resume_functions"] == 1 and stats["graph_count"] == 2


def test_free_variables_with_values_on_the_stack_around_a_break(capsys):
    k = T([1.0, -1.0, 0.5])

    def inner(x):
        return x * k + unknown(x * k) - k

    stats, _, _ = compare(inner, capsys=capsys)
    assert stats["resume_functions"] == 1


def test_function_with_cell_variables_runs_eagerly(capsys):
    def with_cells(x):
        y = x + 1.0

        def add_y(t):
            return t + y
        print("cells")
        return add_y(x) * 2.0

    stats, _, printed = compare(with_cells, capsys=capsys)
    assert printed == "cells\n"
    assert stats["resume_functions"] == 0


class Base:
    def scale(self, x):
        return x * 2.0


class Child(Base):
    def scale(self, x):
        y = super().scale(x)
        print("child", type(self).__name__)
        LOG.append("child")
        return super().scale(y) + 1.0


class JitChild(Base):
    @ms.jit(mode="PIJit")
    def scale(self, x):
        y = super().scale(x)
        print("child", type(self).__name__)
        LOG.append("child")
        return super().scale(y) + 1.0


def test_zero_argument_super_around_a_break(capsys):
    compare(Child.scale, lambda: (Child(), X()), capsys=capsys)


def test_jitted_method_with_super_and_breaks(capsys):
    c, p = JitChild(), Child()
    for _ in range(2):
        reset_state()
        assert_same_result(c.scale(X()), Child.scale(p, X()))
        assert LOG == ["child", "child"]
    out = capsys.readouterr().out
    assert out == "child JitChild\nchild Child\n" * 2
    assert ms.get_code_extra(JitChild.scale)["total_break_count"] >= 1


# ---- exceptions -------------------------------------------------------------------------------

def raise_after_break(x):
    y = x * 2.0
    print("before")
    z = y + 1.0
    raise ValueError(f"bad value {z.shape}")


def unknown_raises(x):
    y = x * 2.0
    z = raiser(y)
    return z


def raises_in_resume_helper(x):
    y = x * 2.0
    print("before")
    return raiser(y + 1.0)


def python_error_after_break(x, d):
    y = x * 2.0
    print("before")
    return y * d["missing"]


def tensor_error_after_break(x):
    y = x * 2.0
    print("before")
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
        print("iteration", i)
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
        print("in try")
        raiser(y)
    except KeyError as e:
        LOG.append(str(e))
        y = y * 2.0
    return y


def break_in_try_not_caught(x):
    y = x + 1.0
    try:
        print("in try")
        raiser(y)
    except ValueError:
        y = y * 2.0
    return y


def break_in_finally(x):
    y = x + 1.0
    try:
        y = y * 3.0
    finally:
        print("finally")
    return y


class Ctx:
    def __enter__(self):
        print("enter")
        LOG.append("enter")
        return self

    def __exit__(self, *exc):
        print("exit", exc[0].__name__ if exc[0] else None)
        LOG.append("exit")
        return False


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
                                break_in_try_not_caught, break_in_finally, with_block,
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
        print("resumed")
        yield y * 2.0

    jg = ms.jit(gen, mode="PIJit")
    ms.reset(jg)
    for _ in range(2):
        assert_same_result(list(jg(X())), list(gen(X())))
    assert capsys.readouterr().out == "resumed\n" * 4


# ---- side effects: order and count -------------------------------------------------------------

def side_effects(x, o, d):
    global G
    y = x + 1.0
    LOG.append("start")
    o.first = y
    G = G + 1
    d["k"] = y * 2.0
    print("middle")
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
    return module_state() + (sorted(vars(o).items()), sorted(d.items()))


def test_side_effects_in_order_and_count(capsys):
    stats, out, printed = compare(side_effects, lambda: (X(), Obj(), {}), capsys=capsys,
                                  state=side_effect_state)
    assert printed == "middle\n"
    assert stats["total_break_count"] >= 5


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
    stats, _, _ = compare(global_counter, capsys=capsys)
    assert stats["total_break_count"] == 2


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
    print("identity")
    return z is x, z, y


def identity_of_results(x):
    y = x + 1.0
    z = y
    print("identity")
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
        print("contains", k)
        return k == "a"

    def __neg__(self):
        print("neg")
        return 5

    def __getitem__(self, k):
        print("getitem", k)
        return 2.0

    def __bool__(self):
        print("bool")
        return True

    @property
    def maybe(self):
        print("maybe")
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


# ---- guards of resume functions: values read after a break can change between calls -----------

SCALE = 2.0


def reads_global_after_break(x):
    y = x * 2.0
    print("p")
    return y * SCALE


def reads_attribute_after_break(x, o):
    y = x * 2.0
    print("p")
    return y * o.scale


def test_resume_function_guards_globals(capsys, monkeypatch):
    jf = ms.jit(reads_global_after_break, mode="PIJit")
    ms.reset(jf)
    for v in (2.0, 3.0, 2.0, 7):
        monkeypatch.setattr(sys.modules[__name__], "SCALE", v)
        assert_same_result(jf(X()), reads_global_after_break(X()))


def test_resume_function_guards_attributes(capsys):
    jf = ms.jit(reads_attribute_after_break, mode="PIJit")
    ms.reset(jf)
    o = Obj()
    for v in (2.0, 3.0, 2.0, 5):
        o.scale = v
        assert_same_result(jf(X(), o), reads_attribute_after_break(X(), o))


def test_resume_functions_of_closures_sharing_code(capsys):
    a, b = make_closure(2.0, 1.0), make_closure(3.0, -1.0)
    assert a.__code__ is b.__code__
    ja, jb = ms.jit(a, mode="PIJit"), ms.jit(b, mode="PIJit")
    ms.reset(ja)
    for _ in range(2):
        assert_same_result(ja(X()), a(X()))
        assert_same_result(jb(X()), b(X()))


def test_closure_cell_changed_between_calls(capsys):
    def make():
        k = 1.0

        def inner(x):
            y = x * 2.0
            print("p")
            return y * k

        def set_k(v):
            nonlocal k
            k = v
        return inner, set_k

    inner, set_k = make()
    ji = ms.jit(inner, mode="PIJit")
    ms.reset(ji)
    for v in (1.0, 4.0, 1.0):
        set_k(v)
        assert_same_result(ji(X()), inner(X()))


def fused_exp_around_break(x):
    y = ops.exp(x * 0.5) + 1.0
    print("exp")
    return ops.exp(-y) * y


def test_fused_exp_around_a_break_is_close(capsys):
    compare(fused_exp_around_break, capsys=capsys, close=True)


def recursive(x, n):
    y = x + 1.0
    print("depth", n)
    if n > 0:
        return recursive(y, n - 1) * 2.0
    return y


def test_recursion_through_breaks(capsys):
    compare(recursive, lambda: (X(), 3), capsys=capsys)


def test_jitted_function_called_from_its_own_bridge(capsys):
    def rec(x, n):
        y = x + 1.0
        if n > 0:
            print("rec", n)
            return jrec(y, n - 1) * 2.0
        return y

    jrec = ms.jit(rec, mode="PIJit")
    ms.reset(jrec)
    assert_same_result(jrec(X(), 3), rec(X(), 3))
    out = capsys.readouterr().out
    assert out == "rec 3\nrec 2\nrec 1\n" * 2


# ---- capture mode: nested frames are captured and break on their own -------------------------

def capture_inner(x):
    y = x * 3.0
    print("inner")
    return y - 1.0


def capture_outer(x):
    a = x + 1.0
    b = capture_inner(a)
    LOG.append("outer")
    return a * b


def test_capture_mode_breaks_nested_frames(capsys):
    compare(capture_outer, capsys=capsys)
    ms.reset(capture_outer)
    ms.reset(capture_inner)
    with ms.capture():
        capture_outer(X())
    assert ms.get_code_extra(capture_outer)["total_break_count"] >= 1


# ---- regressions: bugs found by tests/fuzz/gen.py and by probing the bridge --------------------
#
# Each is the smallest program that showed the difference. A test the product gets wrong is a
# strict xfail whose reason names the bug; the comment above a test names the commit that fixed
# the bug it was written for.

def append_in_inlined_helper_then_break(x):
    lst = [x + 1.0, x * 2.0]
    mutate(lst, x - 1.0)  # mutate: lst.append(t); print(...)
    return len(lst), lst


# Was a strict xfail (list mutation in an inlined helper replayed at the break); fixed by e8001e8.
def test_regression_list_append_in_inlined_helper_before_its_break(capsys):
    _, out, printed = compare(append_in_inlined_helper_then_break, capsys=capsys)
    assert out[1][0] == 3 and printed == "mutate 3\n"


def del_of_unbound_local(x):
    y = x + 1.0
    del z  # noqa: F821 - raises UnboundLocalError, on purpose
    return y


# Was a strict xfail (del of an unbound local did not raise); fixed by e8001e8.
def test_regression_del_of_unbound_local_raises(capsys):
    _, out, _ = compare(del_of_unbound_local, capsys=capsys)
    assert out[1] is UnboundLocalError


def many_locals_source(n):
    body = "".join(f"    v{i} = {i}\n" for i in range(n))
    return ("def many_locals(x):\n" + body +
            "    y = x * 2.0\n"
            "    if y.sum() > 0:\n"
            "        y = y + v1\n"
            "    return y\n")


def test_data_dependent_branch_with_many_locals_within_the_limit(capsys):
    ns = {}
    exec(compile(many_locals_source(200), __file__, "exec"), ns)
    stats, _, _ = compare(ns["many_locals"], capsys=capsys)
    assert stats["resume_functions"] == 2


# Was a strict xfail (SystemError: bridge epilogue too long for one jump); fixed by e8001e8.
def test_regression_data_dependent_branch_with_many_locals(capsys):
    ns = {}
    exec(compile(many_locals_source(260), __file__, "exec"), ns)
    compare(ns["many_locals"], capsys=capsys)


def closure_many_locals_source(n):
    body = "".join(f"        v{i} = {i}\n" for i in range(n))
    return ("def make(k):\n"
            "    def inner(x):\n" + body +
            "        y = x * k\n"
            "        z = y + len(repr(print))\n"
            "        return z + k\n"
            "    return inner\n")


# Was a strict xfail (SystemError: closure slot numbers do not fit one byte); fixed by e8001e8.
def test_regression_break_in_closure_with_many_locals(capsys):
    ns = {}
    exec(compile(closure_many_locals_source(260), __file__, "exec"), ns)
    compare(ns["make"](2.0), capsys=capsys)


def rand_then_break(x):
    ops.rand(2)
    print("drawn")
    return x


def rand_unused(x):
    ops.rand(2)
    return x


def seeded_state(_args):
    # The random stream after the call: the function must have drawn exactly as eagerly.
    return ops.rand(3)


# Found while probing; fixed by a76b65c (graphs with effects run without outputs).
@pytest.mark.parametrize("fn", [rand_then_break, rand_unused], ids=lambda f: f.__name__)
def test_regression_unused_random_op_advances_the_stream(fn, capsys):
    def make():
        ms.set_seed(11)
        return (X(),)
    compare(fn, make, capsys=capsys, state=seeded_state)


def rand_helper(t):
    r = ops.rand(2, 3)
    print("rand_helper")
    return r + t


def calls_rand_helper(x):
    y = x * 2.0
    return rand_helper(y)


# Was a strict xfail (random draws of a partly inlined call done twice); fixed by e8001e8.
def test_regression_random_op_in_inlined_callee_before_its_break(capsys):
    def make():
        ms.set_seed(5)
        return (X(),)
    compare(calls_rand_helper, make, capsys=capsys, state=seeded_state)


def rand_before_break_in_root(x):
    a = ops.rand(2)
    print("drawn")
    b = ops.rand(2)
    return a, b


def test_random_ops_around_a_break_in_the_function_itself(capsys):
    def make():
        ms.set_seed(3)
        return (X(),)
    compare(rand_before_break_in_root, make, capsys=capsys, state=seeded_state)


def warns_after_break(x):
    y = x * 2.0
    print("first break")
    z = y + 1.0
    warnings.warn("careful")  # the same stack shape as the print: CALL 1 after NULL, callee
    return z


def raises_at_second_site(x):
    y = x * 2.0
    print("first break")
    z = y + 1.0
    return raiser(z)


def warning_lines(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn(X())
    return [(r.lineno, str(r.message)) for r in w]


# Was a strict xfail (bridge cache key without the line); fixed by e8001e8.
def test_regression_warning_line_at_second_break_site(capsys):
    want = warning_lines(warns_after_break)
    jf = ms.jit(warns_after_break, mode="PIJit")
    ms.reset(jf)
    assert warning_lines(jf) == want


# Was a strict xfail (bridge cache key without the line); fixed by e8001e8.
def test_regression_traceback_line_at_second_break_site(capsys):
    def function_frames(fn):
        try:
            fn(X())
        except KeyError as e:
            return [(f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__)
                    if f.name == fn.__name__]
    want = function_frames(raises_at_second_site)
    jf = ms.jit(raises_at_second_site, mode="PIJit")
    ms.reset(jf)
    got = function_frames(jf)
    # The bridges and resume functions add frames of the function; the innermost one must be
    # at the eager line.
    assert got[-1] == want[-1]


def sequential_breaks(n):
    src = ("def sequential(x):\n" +
           "".join(f"    x = x + 1.0\n    print({i})\n" for i in range(n)) +
           "    return x * 2.0\n")
    ns = {}
    exec(compile(src, __file__, "exec"), ns)
    return ns["sequential"]


def test_two_hundred_sequential_breaks(capsys):
    fn = sequential_breaks(200)
    stats, out, printed = compare(fn, capsys=capsys, calls=2)
    assert printed == "".join(f"{i}\n" for i in range(200))
    # A chain of breaks in one call stops making resume functions at some depth (the rest of
    # the call runs eagerly), but it makes some, once.
    assert 1 <= stats["resume_functions"] <= 200
    assert stats["total_break_count"] == stats["resume_functions"]


# Was a strict xfail (RecursionError from nested break chains); fixed by e8001e8.
def test_regression_many_sequential_breaks_do_not_exhaust_the_stack(capsys):
    fn = sequential_breaks(sys.getrecursionlimit() + 200)
    compare(fn, capsys=capsys, calls=1, capture=False)


def tuple_holds_list(x):
    lst = [x + 1.0]
    pair = (lst, 1)
    print("break")
    return pair[0] is lst


def tuple_holds_dict(x):
    d = {"k": x + 1.0}
    pair = (d,)
    print("break")
    return pair[0] is d


def tuple_holds_list_mutated_after_break(x):
    lst = [x + 1.0]
    pair = (lst,)
    print("break")
    lst.append(2)
    return len(pair[0])


def list_holds_list(x):
    lst = [x + 1.0]
    outer = [lst]
    print("break")
    return outer[0] is lst


# Were strict xfails: a list or dict built in the function and held both in a local and inside
# a tuple became two objects after a break (regression of e8001e8); fixed by 7d12611.
@pytest.mark.parametrize("fn", [tuple_holds_list, tuple_holds_dict,
                                tuple_holds_list_mutated_after_break, list_holds_list],
                         ids=lambda f: f.__name__)
def test_regression_container_identity_inside_tuples_across_a_break(fn, capsys):
    compare(fn, capsys=capsys)
