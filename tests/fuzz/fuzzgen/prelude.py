"""The module prelude of every generated program: the state it writes to (LOG, G, STATE, an
Obj for attributes) and the helpers it calls (uncapturable ones that print or log, inlinable
ones, generators, raisers, random ops, objects whose operators run Python code, a context
manager and a base class for methods using super())."""

PRELUDE = '''\
import pijit as ms
from pijit import ops

LOG = []
G = 0
STATE = {}


class Obj:
    pass


def unk(t):
    # An ordinary function pijit cannot capture: it prints and appends to the log.
    print("unk", t.shape)
    LOG.append(("unk", t))
    return t * 0.5 + 1.0


def note(v):
    print("note", v)
    LOG.append(("note", v))
    return v


def helper(a, b):
    # Capturable: inlined into the caller's graph.
    return a * 0.5 - b


def helper_brk(a, b):
    # Inlined until the print, which breaks the graph at the call in the caller.
    c = a + b
    print("helper_brk", c.shape)
    return c * 2.0


def gen_vals(t, n):
    for i in range(n):
        yield t * float(i)


def sum_gen(t, n):
    acc = t * 0.0
    for v in gen_vals(t, n):
        acc = acc + v
    return acc


def boom(flag, code):
    if flag:
        raise ValueError("boom %d" % code)
    return code


def rand_brk(t):
    # Random numbers, then a break inside an inlined helper.
    r = ops.rand(2, 3)
    print("rand_brk")
    return r + t


class Box:
    # An object whose operators run Python code.
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


BOX = Box()


def mutate(lst, t):
    lst.append(t)
    print("mutate", len(lst))
    return len(lst)


def unk_kw(t, scale=1.0, *, shift=0.0):
    print("unk_kw", scale, shift)
    return t * scale + shift


class Ctx:
    def __enter__(self):
        print("enter")
        return self

    def __exit__(self, *exc):
        print("exit", exc[0].__name__ if exc[0] else None)
        return False


class Rows:
    # A user iterator: __iter__ and __next__ written in Python.
    def __init__(self, t, n):
        self.t, self.i, self.n = t, 0, n

    def __iter__(self):
        return self

    def __next__(self):
        if self.i >= self.n:
            raise StopIteration
        self.i += 1
        return self.t * float(self.i)


class Base:
    def base_op(self, t):
        return t * 0.25 + 1.0

    def base_brk(self, t):
        print("base_brk")
        return t - 0.5

'''

# Helpers the "effects" feature's programs call (appended to PRELUDE under that feature only,
# so other programs keep their line numbers).
EFFECTS_PRELUDE = '''\

def drop(d, key):
    # Inlined: a pop recorded on the caller's dict.
    return d.pop(key, None)


def put(d, key, v):
    d[key] = v
    return len(d)


def unset(obj, name):
    if hasattr(obj, name):
        delattr(obj, name)
        return True
    return False


def make_counter():
    n = 0

    def bump(by):
        nonlocal n
        n = n + by
        return n

    def reset():
        nonlocal n
        n = 0

    return bump, reset, lambda: n


bump, reset_bump, read_bump = make_counter()


def swap(d, a, b):
    va, vb = d.get(a), d.get(b)
    d[a], d[b] = vb, va
    return tuple(d.items())


class Tools:
    k = 1.5

    @staticmethod
    def s(t):
        return t * 2.0

    @classmethod
    def c(cls, t):
        return t * cls.k

    @property
    def p(self):
        return self.base + 0.5

    def __init__(self):
        self.base = 0.25


TOOLS = Tools()

import collections
Pair = collections.namedtuple("Pair", "left right")


class Acc:
    def __init__(self, t, k=1.0):
        self.total = t
        self.k = k

    def add(self, t):
        self.total = self.total + t * self.k
        return self

'''
