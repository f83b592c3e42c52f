"""Graph breaks and names: locals assigned on one path only or deleted, free variables,
zero-argument super() in methods, and the guards of resume functions (globals, attributes and
closure cells read after a break can change between calls); fused exp around a break and
recursion through breaks.

Every test compares eager, jitted and captured runs with graph_break_testutil.compare, or
jitted and eager results call after call."""
import sys

import pytest

import pijit as ms
from pijit import ops
from graph_break_testutil import _reset_state  # noqa: F401 (autouse fixture)
from graph_break_testutil import LOG, NEG, Obj, T, X, compare, reset_state, unknown, show
from pijit_testutil import assert_same_result


# ---- locals: unbound, deleted, closures, super() ----------------------------------------------

def unbound_after_float_branch(x):
    y = x * 2.0
    if float(y.sum()) > 0:
        z = y + 1.0
    show("after")
    return z * 3.0


def unbound_after_tensor_branch(x):
    y = x * 2.0
    if y.sum() > 0:
        z = y + 1.0
    show("after")
    return z * 3.0


def deleted_then_break(x):
    y = x + 1.0
    z = y * 2.0
    del y
    show("deleted")
    return z, x


def deleted_then_used(x):
    y = x + 1.0
    del y
    show("deleted")
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
        show("closure", scale)
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
        show("cells")
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
        show("child", type(self).__name__)
        LOG.append("child")
        return super().scale(y) + 1.0


class JitChild(Base):
    @ms.jit(mode="PIJit")
    def scale(self, x):
        y = super().scale(x)
        show("child", type(self).__name__)
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


# ---- guards of resume functions: values read after a break can change between calls -----------

SCALE = 2.0


def reads_global_after_break(x):
    y = x * 2.0
    show("p")
    return y * SCALE


def reads_attribute_after_break(x, o):
    y = x * 2.0
    show("p")
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
            show("p")
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
    show("exp")
    return ops.exp(-y) * y


def test_fused_exp_around_a_break_is_close(capsys):
    compare(fused_exp_around_break, capsys=capsys, close=True)


def recursive(x, n):
    y = x + 1.0
    show("depth", n)
    if n > 0:
        return recursive(y, n - 1) * 2.0
    return y


def test_recursion_through_breaks(capsys):
    compare(recursive, lambda: (X(), 3), capsys=capsys)


def test_jitted_function_called_from_its_own_bridge(capsys):
    def rec(x, n):
        y = x + 1.0
        if n > 0:
            show("rec", n)
            return jrec(y, n - 1) * 2.0
        return y

    jrec = ms.jit(rec, mode="PIJit")
    ms.reset(jrec)
    assert_same_result(jrec(X(), 3), rec(X(), 3))
    out = capsys.readouterr().out
    assert out == "rec 3\nrec 2\nrec 1\n" * 2
