"""`with` blocks whose manager's __enter__ and __exit__ are Python functions of its class are
captured: both are inlined, the block's body is part of the graph, and the manager's state
changes are replayed after it. A block whose body breaks the graph breaks at its `with`, so
Python runs the block and __exit__ sees any exception; a manager written in C (a lock) or
with contextlib (a generator) breaks there as before. Each case against eager Python (values,
printed output, module state, exceptions)."""
import contextlib
import threading

import numpy as np
import pytest

from graph_break_testutil import _reset_state  # noqa: F401 (autouse fixture)
from graph_break_testutil import LOG, X, compare, unknown


class Counting:
    """Counts entries and exits in itself and in LOG; __exit__ records the exception type."""

    def __init__(self, start=0):
        self.n = start

    def __enter__(self):
        self.n += 1
        LOG.append(("enter", self.n))
        return self

    def __exit__(self, kind, value, tb):
        self.n += 10
        LOG.append(("exit", self.n, kind.__name__ if kind else None))
        return False


class Scaled:
    """__enter__ returns a value other than the manager."""

    def __init__(self, factor):
        self.factor = factor

    def __enter__(self):
        return self.factor * 2.0

    def __exit__(self, *exc):
        LOG.append(("scaled exit", self.factor))


class Suppressing(Counting):
    def __exit__(self, kind, value, tb):
        super().__exit__(kind, value, tb)
        return True  # swallows the exception


GLOBAL_MANAGER = Counting(100)


def made_inside(x):
    c = Counting(3)
    with c:
        y = x * 2.0
    return y + c.n


def made_inside_as(x):
    with Counting() as c:
        y = x + c.n
    return y, c.n


def enter_returns_a_value(x):
    with Scaled(1.5) as k:
        y = x * k
    return y


def global_manager(x):
    with GLOBAL_MANAGER as m:
        y = x - m.n
    return y + GLOBAL_MANAGER.n


def argument_manager(x, m):
    with m:
        y = x * m.n
    return y, m.n


def nested(x):
    with Counting(1) as a, Counting(2) as b:
        with Scaled(a.n) as k:
            y = x * k + b.n
    return y


def return_inside(x):
    with Counting(5) as c:
        return x * c.n


def in_a_loop(x):
    c = Counting()
    total = x
    for i in range(4):
        with c:
            if i == 1:
                continue
            if i == 3:
                break
            total = total + c.n
    return total, c.n


def body_breaks(x):
    with Counting(7) as c:
        y = unknown(x * c.n)
    return y + c.n


def body_raises(x, flag):
    with Counting() as c:
        if flag:
            raise ValueError(f"raised with n={c.n}")
        y = x + 1.0
    return y


def suppressed(x):
    y = x
    with Suppressing():
        y = x * 3.0
        raise KeyError("swallowed")
    return y


@contextlib.contextmanager
def generator_manager(log):
    log.append("in")
    yield 4.0
    log.append("out")


def contextlib_manager(x):
    with generator_manager(LOG) as k:
        y = x * k
    return y


LOCK = threading.Lock()


def lock_manager(x):
    with LOCK:
        y = x + 1.0
    return y


def graph_counts(stats):
    return stats["graph_count"], stats["total_break_count"]


@pytest.mark.parametrize("fn", [made_inside, made_inside_as, enter_returns_a_value, global_manager,
                                nested, return_inside, in_a_loop])
def test_with_block_is_one_graph(fn, capsys):
    def reset():
        GLOBAL_MANAGER.n = 100

    # The global manager's state is compared after every run (replayed once per call).
    stats, _, _ = compare(fn, capsys=capsys, reset=reset,
                          state=lambda args: (list(LOG), GLOBAL_MANAGER.n))
    assert graph_counts(stats) == (1, 0), stats["all_reasons"]


def test_with_on_an_argument_replays_its_state(capsys):
    managers = []

    def make_args():
        managers.append(Counting(2))
        return X(), managers[-1]

    stats, _, _ = compare(argument_manager, make_args, capsys=capsys,
                          state=lambda args: (list(LOG), args[1].n))
    # Each call passes another manager: the object is guarded by identity, as any argument
    # object whose attributes the graph reads, so each compiles; none breaks.
    assert stats["total_break_count"] == 0, stats["all_reasons"]
    assert all(m.n == 13 for m in managers)


def test_with_body_that_breaks_runs_the_block_in_python(capsys):
    stats, outcome, printed = compare(body_breaks, capsys=capsys)
    assert outcome[0] == "ok" and "unknown" in printed
    assert stats["total_break_count"] >= 1


@pytest.mark.parametrize("flag", [False, True])
def test_exception_in_a_with_body_reaches_exit(flag, capsys):
    _, outcome, _ = compare(body_raises, lambda: (X(), flag), capsys=capsys)
    assert outcome[0] == ("raise" if flag else "ok")


def test_exit_that_suppresses_the_exception(capsys):
    _, outcome, _ = compare(suppressed, capsys=capsys)
    assert outcome[0] == "ok"


@pytest.mark.parametrize("fn", [contextlib_manager, lock_manager])
def test_managers_not_written_as_python_methods_break_and_stay_correct(fn, capsys):
    stats, outcome, _ = compare(fn, capsys=capsys)
    assert outcome[0] == "ok"
    assert stats["total_break_count"] >= 1
    assert not LOCK.locked()


def test_with_block_recompiles_when_the_manager_class_changes(capsys):
    import pijit as ms

    jf = ms.jit(argument_manager, mode="PIJit")
    a = Counting(1)
    y, n = jf(X(), a)
    np.testing.assert_array_equal(y.asnumpy(), (X() * 2.0).asnumpy())
    assert n == 12 and a.n == 12
    LOG.clear()
    b = Suppressing(1)  # another class: its __exit__ differs
    jf(X(), b)
    assert LOG == [("enter", 2), ("exit", 12, None)]
    assert ms.get_code_extra(jf)["compile_count"] == 2
