"""Compiled functions of one Python function share its code object's cache whatever their
settings. A whole-graph call (fullgraph=True, capture_mode="ast") must not run an entry with a
graph break that a call allowing breaks made, nor may such a call be left running eagerly by a
whole-graph entry that gave up: each finds an entry of its own mode, and alternating calls do
not recompile."""
import numpy as np
import pytest

import pijit as ms


def x3():
    return ms.Tensor(np.arange(3, dtype=np.float32))


def explicit_break(x):
    y = x + 1
    ms.graph_break()
    return y * 2


def branch_on_data(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def compile_count(fn):
    return ms.get_code_extra(fn)["compile_count"]


def test_whole_graph_call_after_a_break_entry_raises():
    ms.reset(explicit_break)
    x = x3()
    loose = ms.jit(explicit_break, capture_mode="bytecode")
    np.testing.assert_array_equal(loose(x).asnumpy(), explicit_break(x).asnumpy())
    strict = ms.jit(explicit_break, capture_mode="bytecode", fullgraph=True)
    with pytest.raises(ms.GraphBreakError):
        strict(x)
    # Each keeps its mode: the loose one still runs its graphs, the strict one still raises,
    # and neither recompiles on the calls that follow.
    compiles = compile_count(loose)
    for _ in range(3):
        np.testing.assert_array_equal(loose(x).asnumpy(), explicit_break(x).asnumpy())
        with pytest.raises(ms.GraphBreakError):
            strict(x)
    assert compile_count(loose) == compiles


def test_whole_graph_call_compiles_what_breaks_in_bytecode_mode():
    ms.reset(branch_on_data)
    x = x3()
    loose = ms.jit(branch_on_data, capture_mode="bytecode")
    np.testing.assert_array_equal(loose(x).asnumpy(), branch_on_data(x).asnumpy())
    whole = ms.jit(branch_on_data)  # capture_mode="ast": the branch is part of the graph
    for _ in range(2):
        np.testing.assert_array_equal(whole(x).asnumpy(), branch_on_data(x).asnumpy())
        np.testing.assert_array_equal(loose(x).asnumpy(), branch_on_data(x).asnumpy())
    np.testing.assert_array_equal(whole(-x).asnumpy(), branch_on_data(-x).asnumpy())


def test_strict_first_then_loose_runs_its_graphs():
    def f(x):
        y = x + 1
        ms.graph_break()
        return y * 2

    x = x3()
    strict = ms.jit(f, capture_mode="bytecode", fullgraph=True)
    with pytest.raises(ms.GraphBreakError):
        strict(x)
    loose = ms.jit(f, capture_mode="bytecode")
    np.testing.assert_array_equal(loose(x).asnumpy(), f(x).asnumpy())
    extra = ms.get_code_extra(loose)
    # It ran its break entry (a graph, Python, the resume graph), not the whole call eagerly.
    assert extra["break_count"] >= 1 and extra["eager_count"] == 0
    compiles = extra["compile_count"]
    for _ in range(3):
        with pytest.raises(ms.GraphBreakError):
            strict(x)
        np.testing.assert_array_equal(loose(x).asnumpy(), f(x).asnumpy())
    assert compile_count(loose) == compiles


def test_each_jit_level_runs_its_own_graph():
    def chain(x, y):
        return ms.ops.relu(x * y + x) - y * 0.5

    x, y = x3(), x3() + 2.0
    optimised = ms.jit(chain, capture_mode="bytecode")
    plain = ms.jit(chain, capture_mode="bytecode", jit_level="O0")
    for _ in range(2):
        np.testing.assert_array_equal(optimised(x, y).asnumpy(), chain(x, y).asnumpy())
        np.testing.assert_array_equal(plain(x, y).asnumpy(), chain(x, y).asnumpy())
    graphs = ms.get_code_extra(plain)["graphs"]
    assert len(graphs) == 2
    assert sum("fused" in g for g in graphs) == 1
    assert compile_count(plain) == 2
