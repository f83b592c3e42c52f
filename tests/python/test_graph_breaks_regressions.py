"""Graph-break regressions: the smallest programs that showed a bug, found by the differential
fuzzer (tests/fuzz/gen.py) and by probing the bridge and resume code: list appends in inlined
helpers, `del` of unbound locals, branches and closures with many locals (EXTENDED_ARG),
random ops around breaks, warning and traceback lines of second break sites, long chains of
sequential breaks, containers inside tuples, a stored attribute read through an alias, the key
order of dict views. A test the product gets wrong is a strict xfail naming the bug.

Every test compares eager, jitted and captured runs with graph_break_testutil.compare."""
import sys
import traceback
import warnings

import pytest

import pijit as ms
from pijit import ops
from graph_break_testutil import _reset_state  # noqa: F401 (autouse fixture)
from graph_break_testutil import X, compare, mutate, raiser, show


# ---- regressions: bugs found by tests/fuzz/gen.py and by probing the bridge --------------------
#
# Each is the smallest program that showed the difference. A test the product gets wrong is a
# strict xfail whose reason names the bug; the comment above a test names the commit that fixed
# the bug it was written for.

def append_in_inlined_helper_then_break(x):
    lst = [x + 1.0, x * 2.0]
    mutate(lst, x - 1.0)  # mutate: lst.append(t); show(...)
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


def defined(source, name):
    """The function `name` that the Python `source` defines."""
    ns = {}
    exec(compile(source, __file__, "exec"), ns)
    return ns[name]


def many_locals_source(n):
    body = "".join(f"    v{i} = {i}\n" for i in range(n))
    return ("def many_locals(x):\n" + body +
            "    y = x * 2.0\n"
            "    if y.sum() > 0:\n"
            "        y = y + v1\n"
            "    return y\n")


def test_data_dependent_branch_with_many_locals_within_the_limit(capsys):
    stats, _, _ = compare(defined(many_locals_source(200), "many_locals"), capsys=capsys)
    assert stats["resume_functions"] == 2


# Was a strict xfail (SystemError: bridge epilogue too long for one jump); fixed by e8001e8.
def test_regression_data_dependent_branch_with_many_locals(capsys):
    compare(defined(many_locals_source(260), "many_locals"), capsys=capsys)


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
    compare(defined(closure_many_locals_source(260), "make")(2.0), capsys=capsys)


def rand_then_break(x):
    ops.rand(2)
    show("drawn")
    return x


def rand_unused(x):
    ops.rand(2)
    return x


def seeded_state(_args):
    # The random stream after the call: the function must have drawn exactly as eagerly.
    return ops.rand(3)


def seeded_args(seed):
    """compare's argument maker: the random stream seeded with `seed`, then the input X()."""
    def make():
        ms.set_seed(seed)
        return (X(),)
    return make


# Found while probing; fixed by a76b65c (graphs with effects run without outputs).
@pytest.mark.parametrize("fn", [rand_then_break, rand_unused], ids=lambda f: f.__name__)
def test_regression_unused_random_op_advances_the_stream(fn, capsys):
    compare(fn, seeded_args(11), capsys=capsys, state=seeded_state)


def rand_helper(t):
    r = ops.rand(2, 3)
    show("rand_helper")
    return r + t


def calls_rand_helper(x):
    y = x * 2.0
    return rand_helper(y)


# Was a strict xfail (random draws of a partly inlined call done twice); fixed by e8001e8.
def test_regression_random_op_in_inlined_callee_before_its_break(capsys):
    compare(calls_rand_helper, seeded_args(5), capsys=capsys, state=seeded_state)


def rand_before_break_in_root(x):
    a = ops.rand(2)
    show("drawn")
    b = ops.rand(2)
    return a, b


def test_random_ops_around_a_break_in_the_function_itself(capsys):
    compare(rand_before_break_in_root, seeded_args(3), capsys=capsys, state=seeded_state)


def warns_after_break(x):
    y = x * 2.0
    show("first break")
    z = y + 1.0
    warnings.warn("careful")  # the same stack shape as the print: CALL 1 after NULL, callee
    return z


def raises_at_second_site(x):
    y = x * 2.0
    show("first break")
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
           "".join(f"    x = x + 1.0\n    show({i})\n" for i in range(n)) +
           "    return x * 2.0\n")
    ns = {"show": show}
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
    show("break")
    return pair[0] is lst


def tuple_holds_dict(x):
    d = {"k": x + 1.0}
    pair = (d,)
    show("break")
    return pair[0] is d


def tuple_holds_list_mutated_after_break(x):
    lst = [x + 1.0]
    pair = (lst,)
    show("break")
    lst.append(2)
    return len(pair[0])


def list_holds_list(x):
    lst = [x + 1.0]
    outer = [lst]
    show("break")
    return outer[0] is lst


# Were strict xfails: a list or dict built in the function and held both in a local and inside
# a tuple became two objects after a break (regression of e8001e8); fixed by 7d12611.
@pytest.mark.parametrize("fn", [tuple_holds_list, tuple_holds_dict,
                                tuple_holds_list_mutated_after_break, list_holds_list],
                         ids=lambda f: f.__name__)
def test_regression_container_identity_inside_tuples_across_a_break(fn, capsys):
    compare(fn, capsys=capsys)


# ---- regressions found while adding deletions, cells and dict models ---------------------------

class Holder:
    pass


def store_then_read_through_alias(x, o, alias):
    o.t = 1.0
    return x * alias.t  # the stored value only while alias is o


def test_regression_attribute_read_through_an_alias_guards_its_identity():
    # The read of a stored attribute through another argument did not guard that argument:
    # compiled with alias is o, a call with another object reused the stored value.
    jf = ms.jit(store_then_read_through_alias, mode="PIJit")
    ms.reset(jf)
    o, other = Holder(), Holder()
    other.t = 5.0
    for alias in (o, other, o):
        got = jf(X(), o, alias).asnumpy()
        assert float(got[0, 0]) == float(X().asnumpy()[0, 0]) * (5.0 if alias is other else 1.0)
    ms.reset(jf)


def dict_view_keys(x, d):
    return x * 2.0, list(d.keys())


def test_regression_dict_views_follow_the_key_order_of_each_call():
    # A dict's views listed its keys in the order seen at capture for any dict with the same
    # keys (guards checked the length and each key, not their order).
    jf = ms.jit(dict_view_keys, mode="PIJit")
    ms.reset(jf)
    assert jf(X(), {"a": 1, "b": 2})[1] == ["a", "b"]
    assert jf(X(), {"b": 2, "a": 1})[1] == ["b", "a"]
    ms.reset(jf)
