"""The "made" feature: statements that build objects inside the generated function and call
Python's object machinery on them (dataclasses, typing.NamedTuple, property setters, dict,
list, tuple and set constructors, `{**a, **b}`, functools.partial, divmod, zip(strict=True),
isinstance against user classes, Enum members, pijit.Tensor of Python values and of NumPy
constants, primitives and Cells constructed in the function, iterating a CellList and a
tensor's first axis, grad and value_and_grad called inside, methods of constant strings,
reversed(), generator functions consumed whole or by a loop). Each form is one statement group
that binds a new tensor name; some log what they built, which the harness compares."""

MADE_PRELUDE = '''\
import dataclasses
import enum
import functools
import typing

import numpy as np
from pijit import nn


@dataclasses.dataclass
class Rec:
    a: object
    b: float = 1.0

    def scaled(self):
        return self.a * self.b


class Named(typing.NamedTuple):
    a: object
    n: int = 2


class Temp:
    # A property with a setter written in Python.
    def __init__(self, t):
        self._v = t

    @property
    def v(self):
        return self._v

    @v.setter
    def v(self, value):
        self._v = value * 2.0


class Mode(enum.Enum):
    A = 1
    B = 2


def sq_sum(t):
    return (t * t).sum()


def halves(t, n):
    for i in range(n):
        yield t * (0.5 * i)


MODE = "Same"


CELLS = nn.CellList([nn.ReLU(), nn.Tanh()])
'''


class Made:
    """Statement generation for the "made" feature; a mixin of Gen (uses r, fresh, emit,
    texpr, sexpr, svar, assign_t)."""

    def made_stmt(self, sc, depth):
        r = self.r
        name = self.fresh("v")
        form = r.randrange(18)
        getattr(self, f"_made_{form}")(sc, depth, name)

    def _made_0(self, sc, depth, name):  # a dataclass: fields, a default, a method, a store
        rec = self.fresh("o")
        self.emit(depth, f"{rec} = Rec({self.texpr(sc)}, b={self.sexpr(sc)})")
        self.emit(depth, f"{rec}.b = {rec}.b + 1")
        if self.r.random() < 0.4:
            self.emit(depth, f"LOG.append((type({rec}).__name__, {rec}.b))")
        self.assign_t(sc, name, depth, f"{rec}.scaled() + {rec}.a")

    def _made_1(self, sc, depth, name):  # typing.NamedTuple: fields, defaults, unpacking
        p, a, n = self.fresh("p"), self.fresh("a"), self.fresh("s")
        extra = "" if self.r.random() < 0.5 else f", n={self.r.randint(1, 3)}"
        self.emit(depth, f"{p} = Named({self.texpr(sc)}{extra})")
        self.emit(depth, f"{a}, {n} = {p}")
        if self.r.random() < 0.3:
            self.emit(depth, f"LOG.append(({p}.n, len({p}), {p}._fields))")
        self.assign_t(sc, name, depth, f"{a} * {n} + {p}[0] - {p}.a")

    def _made_2(self, sc, depth, name):  # a property setter on an object made here
        tp = self.fresh("o")
        self.emit(depth, f"{tp} = Temp({self.texpr(sc)})")
        self.emit(depth, f"{tp}.v = {tp}.v + {self.texpr(sc)}")
        self.assign_t(sc, name, depth, f"{tp}.v * 0.5")

    def _made_3(self, sc, depth, name):  # {**a, **b}, dict(...) with keywords, key order
        d = self.fresh("d")
        self.emit(depth, f"{d} = {{**{{'a': {self.texpr(sc)}, 'n': 1}}, "
                         f"**dict(b={self.texpr(sc)}, n={self.r.randint(2, 4)})}}")
        if self.r.random() < 0.4:
            self.emit(depth, f"LOG.append(list({d}))")
        self.assign_t(sc, name, depth, f"{d}['a'] * {d}['n'] + {d}['b']")

    def _made_4(self, sc, depth, name):  # list(), tuple() and set() constructors
        l_, p = self.fresh("l"), self.fresh("p")
        self.emit(depth, f"{l_} = list(({self.texpr(sc)}, {self.texpr(sc)}))")
        self.emit(depth, f"{p} = tuple({l_})")
        self.emit(depth, f"LOG.append(len(set([1, k, 2, {self.svar(sc)}])))")
        self.assign_t(sc, name, depth, f"{p}[0] - {l_}[-1] * len({p})")

    def _made_5(self, sc, depth, name):  # functools.partial of an inlinable helper
        f = self.fresh("f")
        self.emit(depth, f"{f} = functools.partial(helper, b={self.texpr(sc)})")
        self.assign_t(sc, name, depth, f"{f}({self.texpr(sc)})")

    def _made_6(self, sc, depth, name):  # divmod and round of Python numbers
        q, m = self.fresh("s"), self.fresh("s")
        self.emit(depth, f"{q}, {m} = divmod({self.svar(sc)} + 7, {self.r.randint(2, 4)})")
        sc["s"].update((q, m))
        self.assign_t(sc, name, depth, f"{self.texpr(sc)} * round({q} - {m} * 0.5, 1)")

    def _made_7(self, sc, depth, name):  # zip(strict=True) over lists made here
        i, j = self.fresh("i"), self.fresh("j")
        self.assign_t(sc, name, depth, f"{self.texpr(sc)} * 0.5")
        self.emit(depth, f"for {i}, {j} in zip([{self.texpr(sc)}, {self.texpr(sc)}], "
                         f"[1.0, {self.sexpr(sc)}], strict=True):")
        self.emit(depth + 1, f"{name} = {name} + {i} * {j}")

    def _made_8(self, sc, depth, name):  # isinstance; getattr with a default, found or not
        check = self.r.choice(["isinstance(o, Obj)", "isinstance(o, (Box, Temp))",
                               "isinstance(Named(x), tuple)", "isinstance(k, (int, float))",
                               "getattr(o, 'zz', 1.5) > 1", "getattr(o, 'b', 0) == 0",
                               "getattr(TOOLS, 'missing', None) is None"])
        self.assign_t(sc, name, depth, f"{self.texpr(sc)} * (2.0 if {check} else 3.0)")

    def _made_9(self, sc, depth, name):  # Enum members: value, name, identity
        m = self.fresh("m")
        self.emit(depth, f"{m} = Mode.A if k % 2 else Mode.B")
        if self.r.random() < 0.4:
            self.emit(depth, f"LOG.append(({m}.name, {m} is Mode.A))")
        self.assign_t(sc, name, depth, f"{self.texpr(sc)} * {m}.value")

    def _made_10(self, sc, depth, name):  # pijit.Tensor of Python values and NumPy constants
        const = self.r.choice([
            "ms.Tensor([[1.0, -2.0, 0.5]])",
            "ms.Tensor(np.array([[0.5], [2.0]]))",
            "ms.Tensor(np.arange(6).reshape(2, 3) * 0.25)",
            "ms.Tensor(float(np.array([1.0, 2.0, 3.0]).sum()))"])
        self.assign_t(sc, name, depth, f"{self.texpr(sc)} * {const}")

    def _made_11(self, sc, depth, name):  # primitives and Cells constructed in the function
        form = self.r.choice([f"ops.Add()({self.texpr(sc)}, {self.texpr(sc)})",
                              f"nn.ReLU()({self.texpr(sc)})",
                              f"ops.Mul()({self.texpr(sc)}, {self.sexpr(sc)})",
                              f"nn.Tanh()({self.texpr(sc)}) + ops.Neg()({self.texpr(sc)})"])
        self.assign_t(sc, name, depth, form)

    def _made_12(self, sc, depth, name):  # iterating a CellList
        c = self.fresh("c")
        self.assign_t(sc, name, depth, self.texpr(sc))
        self.emit(depth, f"for {c} in CELLS:")
        self.emit(depth + 1, f"{name} = {c}({name}) + 0.5")

    def _made_13(self, sc, depth, name):  # iterating a tensor's first axis (rows of 3)
        row = self.fresh("i")
        self.assign_t(sc, name, depth, f"{self.texpr(sc)} * 0.0")
        self.emit(depth, f"for {row} in {self.texpr(sc)}:")
        self.emit(depth + 1, f"{name} = {name} + {row}")

    def _made_14(self, sc, depth, name):  # grad and value_and_grad called inside
        form = self.r.choice([f"ms.grad(sq_sum)({self.texpr(sc)})",
                              f"ms.value_and_grad(sq_sum)({self.texpr(sc)})[1] * 0.5",
                              f"ms.value_and_grad(sq_sum)({self.texpr(sc)})[0] + "
                              f"{self.texpr(sc)}"])
        self.assign_t(sc, name, depth, form)

    def _made_15(self, sc, depth, name):  # pure methods of constant strings
        cond = self.r.choice(['MODE.lower() == "same"', '"a,b".split(",")[-1].upper() == "B"',
                              '"-".join(("x", "y")).startswith("x")', 'MODE.endswith("e")'])
        self.assign_t(sc, name, depth, f"{self.texpr(sc)} * (2.0 if {cond} else 0.5)")

    def _made_16(self, sc, depth, name):  # reversed() of a range, a tuple, a list made here
        i = self.fresh("i")
        seq = self.r.choice([f"range({self.r.randint(0, 3)})", f"({self.texpr(sc)}, 1.5)",
                             f"[{self.texpr(sc)}, {self.texpr(sc)}]"])
        self.assign_t(sc, name, depth, self.texpr(sc))
        self.emit(depth, f"for {i} in reversed({seq}):")
        self.emit(depth + 1, f"{name} = {name} * 0.5 + {i}")

    def _made_17(self, sc, depth, name):  # a generator function, consumed whole or looped
        how = self.r.randrange(3)
        if how == 0:
            self.assign_t(sc, name, depth, f"sum(halves({self.texpr(sc)}, {self.r.randint(1, 3)}))")
        elif how == 1:
            self.assign_t(sc, name, depth, f"list(halves({self.texpr(sc)}, 2))[-1]")
        else:
            i = self.fresh("i")
            self.assign_t(sc, name, depth, self.texpr(sc))
            self.emit(depth, f"for {i} in halves({self.texpr(sc)}, {self.r.randint(0, 3)}):")
            self.emit(depth + 1, f"{name} = {name} + {i}")
            self.emit(depth + 1, f"LOG.append(len(LOG))")
