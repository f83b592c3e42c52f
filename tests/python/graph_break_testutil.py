"""Shared machinery of the graph-break tests (test_graph_breaks_*.py): the inputs, the module
state the functions under test write to (LOG, STATE, attributes of an Obj), `compare`, which
runs a function eagerly, jitted with mode="PIJit" (twice: compiling, then from the cache) and
under `pijit.capture()` on fresh inputs and state and compares the results (tensors exactly,
or within the fused-exp tolerance where exp is fused), the printed output, the side effects
and exceptions (same type and message), and the helpers those functions call (ordinary
functions capture cannot inline, raisers, generators).

Test modules import the autouse fixture `_reset_state` from here, which clears the module
state around every test."""
import numpy as np
import pytest

import pijit as ms
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
    LOG.clear()
    STATE.clear()


def module_state(_args=None):
    """The side effects a function made on module state, in order."""
    return (list(LOG), sorted(STATE.items()))


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


def compare(fn, make_args=lambda: (X(),), *, capsys, state=module_state, reset=None, close=False,
            calls=2, kwargs=None, capture=True):
    """Runs `fn` eagerly, jitted (`calls` times) and under pijit.capture(); every run gets
    fresh inputs and state (`reset`, when given, resets state of the caller's own module, such
    as its globals, before each run). Returns (counters of the jitted function after its calls,
    the eager outcome, the eager output)."""

    def run(call):
        reset_state()
        if reset is not None:
            reset()
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


def compare_as_one_graph(fn, *args, **kwargs):
    """compare(fn, ...), checked to have jitted fn as one graph without a break; its result."""
    result = compare(fn, *args, **kwargs)
    stats = result[0]
    assert stats["total_break_count"] == 0 and stats["graph_count"] == 1, stats["all_reasons"]
    return result


def counters(stats):
    return {k: stats[k] for k in ("graph_count", "total_break_count", "resume_functions",
                                  "compile_count")}


# ---- helpers the functions under test call ----------------------------------------------------

# print(...) at a graph break. Capture records a plain print as an effect of the graph (no
# break), so the graph-break tests print through print's bound __call__, a C callable capture
# does not look into: the graph breaks at the call itself (its line is the reason's line) and
# Python prints.
show = print.__call__


def unknown(t):
    """An ordinary function capture cannot inline (it breaks the graph, and prints)."""
    ms.graph_break()
    print("unknown", t.shape)
    return t * 0.5 + 1.0


def unknown_kw(t, scale=1.0, *, shift=0.0):
    ms.graph_break()
    print("unknown_kw", scale, type(shift).__name__)
    return t * scale + shift


def log(v):
    ms.graph_break()
    print("log", v)
    LOG.append(v)
    return v


def mutate(lst, t):
    ms.graph_break()
    lst.append(t)
    print("mutate", len(lst))
    return len(lst)


class Mutator:
    """A callable object: capture does not look inside, the call itself is the break."""

    def __call__(self, lst, t):
        ms.graph_break()
        lst.append(t)
        print("mutate", len(lst))
        return len(lst)


opaque_mutate = Mutator()


def raiser(t):
    raise KeyError(f"raiser {t.shape}")


def not_caught(x):
    """A break inside a try block whose except clause does not match what the break raises."""
    y = x + 1.0
    try:
        show("in try")
        raiser(y)
    except ValueError:
        y = y * 2.0
    return y


class Ctx:
    """A context manager whose enter and exit print (exit: the type of the exception it sees,
    if any) and log; it does not suppress exceptions."""

    def __enter__(self):
        show("enter")
        LOG.append("enter")
        return self

    def __exit__(self, *exc):
        show("exit", exc[0].__name__ if exc[0] else None)
        LOG.append("exit")
        return False


def count_up(n):
    for i in range(n):
        yield i


def tensor_gen(t, n):
    for i in range(n):
        yield t * float(i + 1)

