"""functools.partial made inside captured code (called with more positional and keyword
arguments, keywords overridden, a partial of a partial, of a pijit op) and getattr with a
default of an attribute the object lacks (the absence guarded: setting the attribute later,
on the object or its class, recompiles) are captured in the graph; each case against eager."""
import functools

import numpy as np
import pytest

import pijit as ms
from pijit import ops
from graph_break_testutil import _reset_state  # noqa: F401 (autouse fixture)
from graph_break_testutil import X, compare, compare_as_one_graph


def scaled(a, b=1.0, *, c=0.0):
    return a * b + c


def partial_keyword(x):
    return functools.partial(scaled, b=2.0)(x)


def partial_positional_and_override(x):
    f = functools.partial(scaled, c=5.0)
    return functools.partial(scaled, x)(3.0, c=1.0) + f(x, c=1.0) + f(x)


def partial_of_partial_and_of_an_op(x):
    inner = functools.partial(scaled, b=2.0)
    return functools.partial(inner, c=3.0)(x) + functools.partial(ops.mul, x)(2.0)


def partial_returned(x):
    return functools.partial(scaled, b=2.0), x * 2.0


@pytest.mark.parametrize("fn", [partial_keyword, partial_positional_and_override,
                                partial_of_partial_and_of_an_op])
def test_partial_made_inside_is_one_graph(fn, capsys):
    compare_as_one_graph(fn, lambda: (X(),), capsys=capsys)


def test_a_returned_partial_is_a_functools_partial():
    jf = ms.jit(partial_returned, capture_mode="bytecode")
    for _ in range(2):
        f, y = jf(X())
        assert isinstance(f, functools.partial)
        np.testing.assert_array_equal(f(X()).asnumpy(), (X() * 2.0).asnumpy())
        np.testing.assert_array_equal(y.asnumpy(), (X() * 2.0).asnumpy())


class Plain:
    pass


class Computed:
    def __getattr__(self, name):
        return 7.0


OBJ = Plain()


def getattr_missing(x):
    return x * getattr(OBJ, "scale", 1.5)


def getattr_missing_of_an_argument(x, o):
    return x * getattr(o, "w", 2.0)


def test_getattr_default_of_a_missing_attribute_is_one_graph(capsys):
    stats, _, _ = compare(getattr_missing, lambda: (X(),), capsys=capsys)
    assert stats["total_break_count"] == 0, stats["all_reasons"]


def test_the_absence_is_guarded():
    jf = ms.jit(getattr_missing, capture_mode="bytecode")
    np.testing.assert_array_equal(jf(X()).asnumpy(), (X() * 1.5).asnumpy())
    OBJ.scale = 4.0
    try:
        np.testing.assert_array_equal(jf(X()).asnumpy(), (X() * 4.0).asnumpy())
    finally:
        del OBJ.scale
    Plain.scale = 9.0
    try:
        np.testing.assert_array_equal(jf(X()).asnumpy(), (X() * 9.0).asnumpy())
    finally:
        del Plain.scale
    np.testing.assert_array_equal(jf(X()).asnumpy(), (X() * 1.5).asnumpy())
    jo = ms.jit(getattr_missing_of_an_argument, capture_mode="bytecode")
    o = Plain()
    np.testing.assert_array_equal(jo(X(), o).asnumpy(), (X() * 2.0).asnumpy())
    o.w = 5.0
    np.testing.assert_array_equal(jo(X(), o).asnumpy(), (X() * 5.0).asnumpy())
    # __getattr__ computes attributes: never folded, still right.
    np.testing.assert_array_equal(jo(X(), Computed()).asnumpy(), (X() * 7.0).asnumpy())


def stored_then_read_with_a_default(x, o, k):
    o.a = k + 3
    print("between", k)
    return x * (1.0 if getattr(o, "a", None) is None else 2.0), getattr(o, "b", 0.5)


def test_an_attribute_the_trace_stored_is_found(capsys):
    # The object lacks `a` when the call starts; the trace stores it first, so getattr finds
    # it (an earlier version took the object's state at the call's start for the default).
    stats, _, _ = compare(stored_then_read_with_a_default, lambda: (X(), Plain(), 1),
                          capsys=capsys)
    assert stats["total_break_count"] == 0, stats["all_reasons"]
