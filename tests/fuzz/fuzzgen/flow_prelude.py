"""The module-level definitions of the "flow" feature's programs (appended to the prelude
under that feature only): NumPy array constants and one the programs store into (MUT), context
managers written in Python (Cm, Hold, Loud, Quiet, Picky, the generator-based scope) and
module-level instances of them (MGR, HOLD), a second log (EXITS), inlinable helpers with a
with block or a try/except inside, helpers for map and filter, generator functions (while
loops, returns, tensors, numbers and pairs, reading a list or an attribute as they are
stepped, logging, try/finally, yield from, a graph break, raising) and the object KNOB they
read, and reset_flow/read_flow, which the harness calls around each run."""

FLOW_PRELUDE = '''\

import contextlib

import numpy as np
from pijit import Tensor

ARR = np.array([0.5, -1.25, 2.0, 0.75])
IARR = np.array([3, 1, 2])
ARR2 = np.array([[1.0, 0.5, -1.0], [0.25, 2.0, 1.5]])
ARR2I = np.arange(6).reshape(2, 3)
# Items whose arithmetic stays NumPy's: float32 rounding, int64 wrap-around, uint8, bool.
F32 = np.array([0.1, 0.2, 0.3], dtype=np.float32)
BIG = np.array([2 ** 62, 2 ** 62, 5], dtype=np.int64)
U8 = np.array([200, 100, 7], dtype=np.uint8)
FLAGS = np.array([True, False, True])
EXITS = []


class Cm:
    # __enter__ returns the manager; __exit__ counts and logs (returns False).
    def __init__(self, n=0):
        self.n = n
        self.entered = 0
        self.exited = 0

    def __enter__(self):
        self.entered += 1
        return self

    def __exit__(self, *exc):
        self.exited += 1
        LOG.append(("exit", self.n, exc[0] is None))
        return False


class Hold:
    # __enter__ returns the value held (a number or a tensor); __exit__ returns None.
    def __init__(self, v):
        self.v = v
        self.depth = 0

    def __enter__(self):
        self.depth += 1
        return self.v

    def __exit__(self, *exc):
        self.depth -= 1
        EXITS.append(("hold", self.depth))


class Loud:
    # Prints on the way in and out (graph breaks at both ends).
    def __enter__(self):
        print("loud enter")
        return 1.5

    def __exit__(self, exc_type, exc, tb):
        print("loud exit", exc_type.__name__ if exc_type else None)
        return None


class Quiet:
    # Swallows a ValueError raised in its body.
    def __init__(self):
        self.caught = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        EXITS.append(("quiet", exc_type.__name__ if exc_type else None))
        if exc_type is ValueError:
            self.caught = exc.args
            return True
        return False


class Picky:
    # __enter__ raises for a large n (the body never runs, __exit__ is not called).
    def __init__(self, n):
        self.n = n

    def __enter__(self):
        if self.n > 2:
            raise IndexError("picky", self.n)
        return self.n

    def __exit__(self, *exc):
        EXITS.append(("picky", self.n))
        return False


@contextlib.contextmanager
def scope(n):
    # A generator-based manager: code before and after its yield, a finally.
    LOG.append(("in", n))
    try:
        yield n * 2
    finally:
        EXITS.append(("out", n))


def scaled(t, n):
    # Inlinable: a with block and a return from inside it.
    with Cm(n) as c:
        return t * (c.n + c.entered)


def scaled_brk(t, n):
    # A with block whose body breaks the graph, in an inlined helper.
    with Cm(n) as c:
        print("scaled_brk", c.n)
        t = t * (c.n + 1)
    return t + c.exited


def safe_brk(t, n):
    # try/except with a graph break inside the try, in an inlined helper.
    try:
        print("safe_brk", n)
        if n % 2:
            raise ValueError("odd", n)
        return t + n
    except ValueError as err:
        return t * len(err.args)


def safe(t, n):
    # Inlinable: an exception raised and caught in the helper.
    try:
        if n > 2:
            raise KeyError(n)
        return t * n
    except KeyError as err:
        return t - len(err.args)


class Tally:
    # Tensor work in __enter__ and __exit__; __exit__ returns self.n (an int: a nonzero one
    # swallows the exception of the body).
    def __init__(self, t, n=0):
        self.t = t
        self.n = n

    def __enter__(self):
        self.t = self.t + 1.0
        return self

    def __exit__(self, exc_type, exc, tb):
        self.t = self.t * 0.5
        LOG.append(("tally", self.t, exc_type is None))
        return self.n


class FlowError(Exception):
    # A user exception with an attribute and its own args.
    def __init__(self, n):
        super().__init__("flow", n)
        self.n = n


def countdown(n):
    # A while loop and a return value (the StopIteration's value, which loops drop).
    while n > 0:
        yield n
        n -= 1
    return "done"


def ramp(t, n, step=1.0):
    # Tensors: t * 0, t * step, t * 2 * step, ...
    i = 0
    while i < n:
        yield t * (i * step)
        i += 1


def pairs(t, n):
    # Tuples of a number and a tensor.
    for i in range(n):
        yield i, t + float(i)


def reads(xs, cap=6):
    # Reads the list by index as it is consumed: items the consumer appends are yielded too.
    i = 0
    while i < len(xs) and i < cap:
        yield xs[i]
        i += 1


def by_attr(b, t, n):
    # Reads b.step at each item (the consumer may change it in between).
    for i in range(n):
        yield t * b.step + float(i)


def logged(n, tag="gen"):
    # A side effect before each item: its order with the consumer's effects counts.
    for i in range(n):
        LOG.append((tag, i))
        yield i * 1.5
    LOG.append((tag, "end"))


def guarded(t, n):
    # try/finally: the finally runs when the generator finishes or is closed.
    try:
        for i in range(n):
            yield t * float(i + 1)
    finally:
        EXITS.append(("gen finally", n))


def delegate(n):
    # yield from another generator (its return value is the yield from's value).
    got = yield from countdown(n)
    yield len(got)


def delegate_t(t, n):
    yield t
    yield from ramp(t, n, 0.5)


def noisy(t, n):
    # A graph break inside the generator's frame.
    for i in range(n):
        print("noisy", i)
        yield t - float(i)


def raising(n, bad):
    # Raises at item `bad` (the consumer sees the exception from its loop).
    for i in range(n):
        if i == bad:
            raise ValueError("gen", i)
        yield i


def early(t, n):
    # return inside the loop.
    i = 0
    while True:
        if i >= n:
            return
        yield t * 0.5 ** i
        i += 1


KNOB = Obj()  # an object whose attribute generators read (by_attr) and functions change


MGR = Cm(7)
HOLD = Hold(2.5)
MUT = np.array([1.0, 2.0, 3.0])
ARRS = {"a": np.array([1.0, 2.0])}  # arrays in a dict and an attribute, replaced and stored to
HOLDER = Obj()


def reset_flow():
    MGR.entered = 0
    MGR.exited = 0
    HOLD.depth = 0
    HOLD.v = 2.5
    MUT[:] = (1.0, 2.0, 3.0)
    ARR2[:] = ((1.0, 0.5, -1.0), (0.25, 2.0, 1.5))
    ARRS["a"] = np.array([1.0, 2.0])
    HOLDER.arr = np.array([3.0, 4.0, -1.0])
    KNOB.step = 1.0
    EXITS.clear()


def read_flow():
    return (MGR.entered, MGR.exited, HOLD.depth, HOLD.v, MUT.copy(), ARR2.copy(),
            ARRS["a"].copy(), HOLDER.arr.copy(), list(EXITS), KNOB.step)


def twice(t):
    return t * 2.0


def shift(t, s):
    return t + s


def positive(v):
    return v > 0


def big(t):
    return float(t.sum()) > 0.5

'''
