"""sys.monitoring (PEP 669, CPython 3.12+: coverage 7.4+, debuggers, profilers) over jitted code.

Code that runs as Python under pijit (bridges that run a breaking instruction, resume
functions, eager fallbacks) reports its events with the original function's file and lines;
code compiled into a graph runs no Python and reports none, as with any compiler. A tool that
is active while pijit captures must neither crash it nor change its results.
"""
import sys

import numpy as np
import pytest

import pijit

pytestmark = pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is 3.12's")

gb = pijit.graph_break


def broken_once(x, n):
    y = x * 2.0
    gb()
    z = y + n
    return z * 3.0


def runs_eagerly_after_a_break(x, items):
    y = x + 1.0
    gb()
    total = 0
    for k, v in sorted(items.items()):  # dict views sorted by key: plain Python
        total += len(k) * v
    try:
        total += int("12")
    except ValueError:
        total = -1
    return y * total


class Events:
    """Collects LINE and PY_START events of the functions named, as (name, line offset)."""

    def __init__(self, *fns):
        self.fns = {fn.__code__.co_name: fn.__code__ for fn in fns}
        self.lines, self.starts = [], []

    def __enter__(self):
        mon = sys.monitoring
        self.tool = next(t for t in range(6) if mon.get_tool(t) is None)
        mon.use_tool_id(self.tool, "pijit-test")
        mon.register_callback(self.tool, mon.events.LINE, self.on_line)
        mon.register_callback(self.tool, mon.events.PY_START, self.on_start)
        mon.set_events(self.tool, mon.events.LINE | mon.events.PY_START)
        return self

    def __exit__(self, *exc):
        mon = sys.monitoring
        mon.set_events(self.tool, 0)
        mon.register_callback(self.tool, mon.events.LINE, None)
        mon.register_callback(self.tool, mon.events.PY_START, None)
        mon.free_tool_id(self.tool)

    def original(self, code):
        orig = self.fns.get(code.co_name)
        return orig if orig is not None and code.co_filename == orig.co_filename else None

    def on_line(self, code, line):
        orig = self.original(code)
        if orig is not None:
            self.lines.append((code.co_qualname, line - orig.co_firstlineno))

    def on_start(self, code, offset):
        if self.original(code) is not None:
            self.starts.append(code.co_qualname)


def T(*shape):
    return pijit.Tensor(np.arange(np.prod(shape), dtype=np.float32).reshape(shape) - 1.0)


def test_a_bridge_reports_the_line_of_the_break_on_every_call():
    jf = pijit.jit(broken_once, capture_mode="bytecode")
    pijit.reset(jf)
    for _ in range(3):
        with Events(broken_once) as ev:
            got = jf(T(3), 1.0)
        np.testing.assert_array_equal(got.asnumpy(), broken_once(T(3), 1.0).asnumpy())
        assert [offset for _, offset in ev.lines] == [2], ev.lines  # the gb() line only
    stats = pijit.get_code_extra(jf)
    assert stats["eager_count"] == 0 and stats["total_break_count"] == 1


def test_code_that_runs_as_python_reports_the_original_lines():
    items = {"ab": 2, "c": 5}
    with Events(runs_eagerly_after_a_break) as ev:
        eager = runs_eagerly_after_a_break(T(2), items)
    expected_lines = {offset for _, offset in ev.lines}
    jf = pijit.jit(runs_eagerly_after_a_break, capture_mode="bytecode")
    pijit.reset(jf)
    for _ in range(2):
        with Events(runs_eagerly_after_a_break) as ev:
            got = jf(T(2), items)
        np.testing.assert_array_equal(got.asnumpy(), eager.asnumpy())
        reported = {offset for _, offset in ev.lines}
        # Every line reported is a line of the function as it runs eagerly; the lines after the
        # break that run as Python (the loop, the try) are among them.
        assert reported <= expected_lines, (reported, expected_lines)
        assert {4, 5, 7} <= reported, reported
        assert ev.starts, "no frame of the function started under the tool"


def test_capture_under_an_active_tool_gives_eager_results():
    def step(x, w):
        h = x * w + 1.0
        if h.sum() > 0:  # a tensor branch: a bridge runs the jump, resume functions go on
            h = h - 2.0
        return h.max(), h

    jf = pijit.jit(step, capture_mode="bytecode")
    pijit.reset(jf)
    with Events(step):
        for sign in (1.0, -1.0, 1.0):
            got = jf(T(2, 3) * sign, T(3))
            want = step(T(2, 3) * sign, T(3))
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g.asnumpy(), w.asnumpy())
    assert pijit.get_code_extra(jf)["eager_count"] == 0
