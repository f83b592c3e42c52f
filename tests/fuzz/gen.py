"""Differential fuzzer for pijit's graph breaks.

Generates random Python functions (source text) that mix tensor ops (pijit.ops add, sub, mul,
exp, relu, matmul, sum, mean, reshape, transpose, maximum, where, softmax, clip, operators,
indexing with constant slices), Python scalars, tuples, lists and dicts, branches on constants
and on tensor values (`float(t.sum()) > c`, tensor truth, and/or/not), `for` loops over
range(k) and over lists, calls pijit cannot capture (helpers that print or append to a log,
keyword calls, nested calls, calls with values on the stack, generators, comprehensions,
.asnumpy()), try/except and `with`, `del`, side effects (a global log list, a global counter,
a global dict, attributes of an object, lists mutated through aliases), objects whose
operators run Python code; as plain functions, closures and methods using super(). Each
returns a tuple.

Each program runs eagerly, then jitted with mode="PIJit" (a compiling call, the same inputs
again from the cache, other inputs and `k`) and under `pijit.capture()`, every run on fresh
inputs and state; results (float tensors within a tolerance that covers the fused exp),
printed output, side-effect logs and exceptions (type and message) must agree.

    python tests/fuzz/gen.py --seeds 0:300            # run programs 0..299, print a summary
    python tests/fuzz/gen.py --show 17                # print program 17
    python tests/fuzz/gen.py --check 17 -v            # run program 17 in process, show diffs
    python tests/fuzz/gen.py --minimize 17            # shrink a failing program

Programs run in worker subprocesses (batches), so a crash (segfault, abort) of the
interpreter is recorded for the program that caused it and the campaign goes on; a batch that
hangs is killed and its current program recorded as a timeout. $PIJIT_FUZZ_FEATURES turns on
opt-in generator features (see FEATURES). benchmarks/fuzz_long.py runs time-bounded campaigns.
"""
import argparse
import contextlib
import io
import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# ---- generation --------------------------------------------------------------------------------

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


class Base:
    def base_op(self, t):
        return t * 0.25 + 1.0

    def base_brk(self, t):
        print("base_brk")
        return t - 0.5

'''

INDENT = "    "

# Opt-in generator features (comma-separated in $PIJIT_FUZZ_FEATURES; the same seed gives
# another program under other features):
#   random  seeded random ops (ops.rand), the random stream after the call is compared too
#   wide    250 extra locals in every program (EXTENDED_ARG in prologues and bridges)
#   long    40 to 90 statements (long chains of breaks in one call)
#   ctl     `break`/`continue` under a condition inside loop bodies (often around breaks)
FEATURES = frozenset(f for f in os.environ.get("PIJIT_FUZZ_FEATURES", "").split(",") if f)


class Program:
    def __init__(self, seed, source, dtype, k):
        self.seed = seed
        self.source = source
        self.dtype = dtype
        self.k = k


class Gen:
    """Builds one random function `prog(x, y, o, k)` (x, y: tensors of shape (2, 3))."""

    def __init__(self, seed, max_stmts=None):
        self.r = random.Random(seed)
        self.n = 0
        self.lines = []
        if max_stmts is not None:
            self.budget = max_stmts
        elif "long" in FEATURES:
            self.budget = self.r.randint(40, 90)
        else:
            self.budget = self.r.randint(3, 14)
        self.uses_global = False
        self.iterating = set()

    # -- names
    def fresh(self, prefix):
        self.n += 1
        return f"{prefix}{self.n}"

    def emit(self, depth, text):
        self.lines.append(INDENT * depth + text)

    # -- expressions (scope: dict with 't' tensors (2,3), 's' Python numbers, 'l' lists of
    #    tensors; 'maybe' names assigned only on some paths)
    def tvar(self, sc):
        r = self.r
        if sc["maybe_t"] and r.random() < 0.04:
            return r.choice(sorted(sc["maybe_t"]))  # may raise UnboundLocalError: on purpose
        return r.choice(sorted(sc["t"]))

    def svar(self, sc):
        return self.r.choice(sorted(sc["s"]))

    def texpr(self, sc, d=0):
        """A float tensor expression of shape (2, 3)."""
        r = self.r
        if d >= 2 or r.random() < 0.4:
            return self.tvar(sc)
        a = lambda: self.texpr(sc, d + 1)
        c = lambda: repr(round(r.uniform(-2, 2), 2))
        choice = r.randrange(24)
        if choice == 0:
            return f"({a()} + {a()})"
        if choice == 1:
            return f"({a()} - {a()})"
        if choice == 2:
            return f"({a()} * {c()})"
        if choice == 3:
            return f"ops.clip({a()} * {a()}, -20.0, 20.0)"
        if choice == 4:
            return f"({a()} / (ops.relu({a()}) + 1.0))"
        if choice == 5:
            return f"ops.exp(-ops.relu({a()}))"
        if choice == 6:
            return f"ops.exp(ops.softmax({a()}, -1))"
        if choice == 7:
            return f"ops.relu({a()})"
        if choice == 8:
            return f"ops.matmul(ops.matmul({a()}, ops.transpose({a()}, (1, 0))), {a()}) * 0.1"
        if choice == 9:
            return f"(({a()}) * {self.sexpr(sc)})"
        if choice == 10:
            return f"ops.reshape(ops.transpose({a()}, (1, 0)), (2, 3))"
        if choice == 11:
            return f"ops.maximum({a()}, {a()})"
        if choice == 12:
            return f"ops.where({a()} > {a()}, {a()}, {a()})"
        if choice == 13:
            return f"ops.softmax({a()}, {r.choice([-1, 0, 1])})"
        if choice == 14:
            return f"({a()} + {a()}[{r.choice(['0:1', '1:2', '-1:'])}])"
        if choice == 15:
            return f"({a()} * {a()}[:, {r.choice(['0:1', '1:2', '2:3'])}])"
        if choice == 16:
            return f"({a()} - ops.mean({a()}))"
        if choice == 17:
            return f"({a()} * ops.sum({a()}, {r.choice([0, 1])}, keepdims=True) * 0.1)"
        if choice == 18:
            return f"(-{a()})"
        if choice == 19:
            return f"ops.add({a()}, {a()})"
        if choice == 20:
            return f"ops.mul({a()}, {c()})"
        if choice == 21:
            return f"helper({a()}, {a()})"
        if choice == 22 and sc["l"]:
            lst = r.choice(sorted(sc["l"]))
            return f"{lst}[{r.choice([0, -1])}]"
        if choice == 23:
            return f"ops.sub({a()}, {a()}).reshape(3, 2).reshape(2, 3)"
        if "random" in FEATURES and r.random() < 0.3:
            return f"({a()} + ops.rand(2, 3))"
        return self.tvar(sc)

    def rexpr(self, sc):
        """A 0-d tensor (a reduction)."""
        r = self.r
        t = self.texpr(sc, 1)
        return r.choice([f"ops.sum({t})", f"ops.mean({t})", f"{t}.sum()", f"{t}.mean()"])

    def sexpr(self, sc):
        """A Python number."""
        r = self.r
        choice = r.randrange(6)
        if choice == 0:
            return str(r.randint(-3, 5))
        if choice == 1:
            return repr(round(r.uniform(-2, 2), 2))
        if choice == 2:
            return f"({self.svar(sc)} + {r.randint(1, 3)})"
        if choice == 3:
            return f"({self.svar(sc)} * 2)"
        if choice == 4:
            return "x.shape[0]"
        return self.svar(sc)

    # -- statements
    def block(self, sc, depth, n, in_loop=False, in_try=False):
        start = len(self.lines)
        for _ in range(n):
            if self.budget <= 0:
                break
            self.budget -= 1
            self.stmt(sc, depth, in_loop, in_try)
        if len(self.lines) == start:
            self.emit(depth, "pass")

    def assign_t(self, sc, name, depth, expr):
        self.emit(depth, f"{name} = {expr}")
        sc["t"].add(name)
        sc["maybe_t"].discard(name)

    def stmt(self, sc, depth, in_loop, in_try):
        r = self.r
        kinds = ["assign"] * 6 + ["scalar", "unk", "note", "helper_brk", "log", "attr", "glob",
                                   "if_data", "if_truth", "if_const", "for", "try", "tuple",
                                   "list", "list_mut", "gen", "raise_cond", "stack_call",
                                   "kwcall", "nested", "print", "dict", "bool_ops", "for_list",
                                   "with", "comp", "del", "unk_kw", "asnumpy", "method_call",
                                   "box", "attr_read", "tuple_alias"]
        if "random" in FEATURES:
            kinds += ["rand_stmt"]
        if "ctl" in FEATURES and in_loop:
            kinds += ["loop_ctl"] * 2
        kind = r.choice(kinds)
        if kind == "assign":
            name = r.choice(sorted(sc["t"])) if r.random() < 0.3 else self.fresh("v")
            self.assign_t(sc, name, depth, self.texpr(sc))
        elif kind == "scalar":
            name = self.fresh("s")
            self.emit(depth, f"{name} = {self.sexpr(sc)}")
            sc["s"].add(name)
            sc["maybe_s"].discard(name)
        elif kind == "unk":
            name = self.fresh("v")
            self.assign_t(sc, name, depth, f"unk({self.texpr(sc)})")
        elif kind == "note":
            self.emit(depth, f"note({self.sexpr(sc)})")
        elif kind == "print":
            self.emit(depth, f"print(\"at\", {self.sexpr(sc)}, {self.tvar(sc)}.shape, sep=\"|\")")
        elif kind == "helper_brk":
            name = self.fresh("v")
            self.assign_t(sc, name, depth, f"helper_brk({self.texpr(sc)}, {self.texpr(sc)})")
        elif kind == "log":
            what = r.choice([self.texpr(sc), self.sexpr(sc), repr("tag%d" % r.randint(0, 9))])
            self.emit(depth, f"LOG.append({what})")
        elif kind == "attr":
            attr = r.choice(["a", "b", "c"])
            self.emit(depth, f"o.{attr} = {r.choice([self.texpr(sc), self.sexpr(sc)])}")
        elif kind == "glob":
            self.uses_global = True
            self.emit(depth, f"G = G + {r.randint(1, 3)}")
        elif kind == "dict":
            key = repr(r.choice(["a", "b", "n"]))
            how = r.randrange(3)
            if how == 0:
                self.emit(depth, f"STATE[{key}] = {r.choice([self.texpr(sc), self.sexpr(sc)])}")
            elif how == 1:
                self.emit(depth, f"STATE.update({key[1:-1]}={self.sexpr(sc)})")
            else:
                self.emit(depth, f"STATE[{key}] = STATE.get({key}, 0) + 1")
        elif kind in ("if_data", "if_truth", "if_const", "bool_ops"):
            if depth > 3:
                return
            if kind == "if_data":
                cond = f"float({self.rexpr(sc)}) > {round(r.uniform(-3, 3), 2)}"
            elif kind == "if_truth":
                cond = f"{self.rexpr(sc)} > {round(r.uniform(-3, 3), 2)}"
            elif kind == "bool_ops":
                a = f"{self.rexpr(sc)} > {round(r.uniform(-3, 3), 2)}"
                b = f"{self.rexpr(sc)} < {round(r.uniform(-3, 3), 2)}"
                cond = r.choice([f"({a}) and ({b})", f"({a}) or ({b})", f"not ({a})",
                                 f"({a}) and {self.svar(sc)} > 1"])
            else:
                cond = r.choice([f"{self.svar(sc)} > {r.randint(0, 3)}", "k % 2 == 0", "True"])
            self.emit(depth, f"if {cond}:")
            before = {key: set(v) for key, v in sc.items()}
            self.block(sc, depth + 1, r.randint(1, 3), in_loop, in_try)
            then = {key: set(v) for key, v in sc.items()}
            if r.random() < 0.6:
                # Variables of one branch only are "maybe" afterwards.
                for key in sc:
                    sc[key] = set(before[key])
                self.emit(depth, "else:")
                self.block(sc, depth + 1, r.randint(1, 3), in_loop, in_try)
                other = {key: set(v) for key, v in sc.items()}
            else:
                other = before
            self.merge(sc, then, other)
        elif kind in ("for", "for_list"):
            if depth > 2:
                return
            i = self.fresh("i")
            saved = set(self.iterating)
            if kind == "for" or not sc["l"]:
                self.emit(depth, f"for {i} in range({r.randint(0, 3)}):")
                before = {key: set(v) for key, v in sc.items()}
                sc["s"].add(i)
            else:
                lst = r.choice(sorted(sc["l"]))
                self.emit(depth, f"for {i} in {lst}:")
                before = {key: set(v) for key, v in sc.items()}
                sc["t"].add(i)
                # No appending to a list while iterating over it (that would never end).
                self.iterating.add(lst)
            self.block(sc, depth + 1, r.randint(1, 3), True, in_try)
            self.iterating = saved
            # The body may not run (range(0)): its names are "maybe".
            self.merge(sc, {key: set(v) for key, v in sc.items()}, before)
        elif kind == "try":
            if depth > 2:
                return
            self.emit(depth, "try:")
            before = {key: set(v) for key, v in sc.items()}
            self.block(sc, depth + 1, r.randint(1, 3), in_loop, True)
            if r.random() < 0.5:
                self.emit(depth + 1, f"boom({self.rexpr(sc)} > {round(r.uniform(-3, 3), 2)}, "
                                     f"{r.randint(0, 99)})")
            after = {key: set(v) for key, v in sc.items()}
            self.emit(depth, f"except {r.choice(['ValueError', 'Exception'])} as e:")
            self.emit(depth + 1, "LOG.append(str(e))")
            self.merge(sc, after, before)
        elif kind == "with":
            if depth > 2:
                return
            self.emit(depth, "with Ctx():")
            self.block(sc, depth + 1, r.randint(1, 2), in_loop, True)
        elif kind == "loop_ctl":
            cond = r.choice([f"{self.svar(sc)} > {r.randint(0, 3)}", "k % 2 == 1",
                             f"float({self.rexpr(sc)}) > {round(r.uniform(-3, 3), 2)}"])
            self.emit(depth, f"if {cond}:")
            self.emit(depth + 1, r.choice(["break", "continue"]))
        elif kind == "tuple":
            name = self.fresh("p")
            a, b = self.texpr(sc), self.texpr(sc)
            self.emit(depth, f"{name} = ({a}, {b}, {self.sexpr(sc)})")
            v = self.fresh("v")
            self.assign_t(sc, v, depth, f"{name}[0] * {name}[2] + {name}[1]")
        elif kind == "list":
            name = self.fresh("l")
            self.emit(depth, f"{name} = [{self.texpr(sc)}, {self.texpr(sc)}]")
            sc["l"].add(name)
            sc["maybe_l"].discard(name)
        elif kind == "list_mut":
            if not sc["l"] - self.iterating:
                return
            lst = r.choice(sorted(sc["l"] - self.iterating))
            how = r.randrange(5)
            if how == 0:
                self.emit(depth, f"{lst}.append({self.texpr(sc)})")
            elif how == 1:
                self.emit(depth, f"mutate({lst}, {self.texpr(sc)})")
            elif how == 2:
                self.emit(depth, f"{lst}.append(unk({self.texpr(sc)}))")
            elif how == 3:
                self.emit(depth, f"{lst}.insert(0, {self.texpr(sc)})")
            else:
                alias = self.fresh("a")
                self.emit(depth, f"{alias} = {lst}")
                self.emit(depth, f"mutate({alias}, {self.texpr(sc)})")
                self.emit(depth, f"LOG.append(({alias} is {lst}, len({lst})))")
        elif kind == "gen":
            name = self.fresh("v")
            self.assign_t(sc, name, depth, f"sum_gen({self.texpr(sc)}, {r.randint(0, 3)})")
        elif kind == "comp":
            name = self.fresh("v")
            a, b = self.texpr(sc), self.texpr(sc)
            form = r.choice([f"sum([unk(t) for t in ({a}, {b})])",
                             f"sum(t * 2.0 for t in ({a}, {b}))",
                             f"[t + 1.0 for t in ({a}, {b})][1]"])
            self.assign_t(sc, name, depth, form)
        elif kind == "raise_cond":
            if r.random() < 0.5:
                cond = f"float({self.rexpr(sc)}) > {round(r.uniform(2, 8), 2)}"
            else:
                cond = f"{self.svar(sc)} > {r.randint(3, 8)}"
            self.emit(depth, f"if {cond}:")
            self.emit(depth + 1, f"raise {r.choice(['ValueError', 'KeyError', 'RuntimeError'])}"
                                 f"(\"raised {r.randint(0, 99)}\")")
        elif kind == "stack_call":
            # A break with values on the value stack.
            name = self.fresh("v")
            self.assign_t(sc, name, depth, f"{self.texpr(sc)} * 2.0 + unk({self.texpr(sc)})")
        elif kind == "kwcall":
            name = self.fresh("v")
            self.assign_t(sc, name, depth,
                          f"ops.add(x={self.texpr(sc)}, y=helper_brk(b={self.texpr(sc)}, "
                          f"a={self.texpr(sc)}))")
        elif kind == "unk_kw":
            name = self.fresh("v")
            kw = r.choice(["", f", scale={self.sexpr(sc)}", f", shift={self.sexpr(sc)}",
                           f", {self.sexpr(sc)}, shift=1.5"])
            self.assign_t(sc, name, depth, f"{self.texpr(sc)} - unk_kw({self.texpr(sc)}{kw})")
        elif kind == "nested":
            name = self.fresh("v")
            self.assign_t(sc, name, depth, f"ops.relu(unk(unk({self.texpr(sc)}) + 1.0))")
        elif kind == "asnumpy":
            name = self.fresh("v")
            self.assign_t(sc, name, depth,
                          f"ms.Tensor({self.texpr(sc)}.asnumpy() * 2) + {self.tvar(sc)}")
        elif kind == "del":
            cands = sorted(v for v in sc["t"] if v.startswith("v") and v != "v0")
            if not cands:
                return
            name = r.choice(cands)
            self.emit(depth, f"del {name}")
            sc["t"].discard(name)
            sc["maybe_t"].add(name)
        elif kind == "tuple_alias":
            # Containers built in the function, held in locals and inside tuples or lists.
            holder = self.fresh("p")
            if sc["l"] - self.iterating and r.random() < 0.6:
                c = r.choice(sorted(sc["l"] - self.iterating))
            else:
                c = self.fresh("d")
                self.emit(depth, f"{c} = {{'a': {self.texpr(sc)}}}")
            if r.random() < 0.6:
                self.emit(depth, f"{holder} = ({c}, {self.sexpr(sc)})")
            else:
                self.emit(depth, f"{holder} = [{c}, {self.sexpr(sc)}]")
            if r.random() < 0.6:
                self.emit(depth, f"print(\"alias\", len({c}))")
            if c.startswith("l") and r.random() < 0.5:
                self.emit(depth, f"{holder}[0].append({self.texpr(sc)})")
            self.emit(depth, f"LOG.append(({holder}[0] is {c}, len({c}), len({holder}[0])))")
        elif kind == "box":
            name = self.fresh("v")
            form = r.choice([f"{self.texpr(sc)} * -BOX", f"{self.texpr(sc)} * BOX['k']",
                             f"{self.texpr(sc)} * (2.0 if 'a' in BOX else 3.0)",
                             f"{self.texpr(sc)} * (1.0 if BOX else 0.5)"])
            self.assign_t(sc, name, depth, form)
        elif kind == "attr_read":
            name = self.fresh("v")
            attr = r.choice(["a", "b", "c"])
            self.assign_t(sc, name, depth,
                          f"{self.texpr(sc)} * (1.0 if getattr(o, {attr!r}, None) is None "
                          f"else 2.0)")
        elif kind == "rand_stmt":
            how = r.randrange(3)
            if how == 0:
                self.emit(depth, "ops.rand(2)")
            elif how == 1:
                name = self.fresh("v")
                self.assign_t(sc, name, depth, f"rand_brk({self.texpr(sc)})")
            else:
                name = self.fresh("v")
                self.assign_t(sc, name, depth, f"{self.texpr(sc)} * ops.rand(2, 3)")
        elif kind == "method_call":
            if self.shape != "method":
                return
            name = self.fresh("v")
            call = r.choice(["super().base_op", "super().base_brk", "self.base_op",
                             "self.base_brk"])
            self.assign_t(sc, name, depth, f"{call}({self.texpr(sc)})")

    @staticmethod
    def merge(sc, a, b):
        for kind in ("t", "s", "l"):
            both = a[kind] & b[kind]
            either = (a[kind] | b[kind] | a["maybe_" + kind] | b["maybe_" + kind])
            sc[kind] = both
            sc["maybe_" + kind] = either - both

    def program(self, seed):
        r = self.r
        # The function: a plain function, a closure (free variables), or a method that
        # calls super().
        self.shape = r.choice(["plain"] * 3 + ["closure", "method"])
        sc = {"t": {"x", "y"}, "s": {"k"}, "l": set(), "maybe_t": set(), "maybe_s": set(),
              "maybe_l": set()}
        if self.shape == "closure":
            sc["s"].add("c0")
        if "wide" in FEATURES:
            for i in range(250):
                self.emit(1, f"w{i} = {i}")
        self.emit(1, "v0 = x + y" if self.shape != "closure" else "v0 = x + y * c0")
        sc["t"].add("v0")
        self.block(sc, 1, self.budget)
        outs = sorted(sc["t"])
        r.shuffle(outs)
        ret = outs[:r.randint(1, 3)]
        if sc["s"] and r.random() < 0.5:
            ret.append(r.choice(sorted(sc["s"])))
        if sc["l"] and r.random() < 0.5:
            ret.append(r.choice(sorted(sc["l"])))
        self.emit(1, f"return ({', '.join(ret)},)")
        body = list(self.lines)
        if self.uses_global:
            body.insert(0, INDENT + "global G")
        dtype = r.choice(["float32", "float64"])
        if self.shape == "plain":
            src = ["def prog(x, y, o, k):"] + body
        elif self.shape == "closure":
            src = ["def make(c0):", INDENT + "def prog(x, y, o, k):"]
            src += [INDENT + line for line in body]
            src += [INDENT + "return prog", "", "", "prog = make(1.5)"]
        else:
            src = ["class P(Base):", INDENT + "def prog(self, x, y, o, k):"]
            src += [INDENT + line for line in body]
            src += ["", "", "prog = P().prog"]
        return Program(seed, "\n".join(src) + "\n", dtype, r.randint(0, 4))


def generate(seed, max_stmts=None):
    return Gen(seed, max_stmts).program(seed)


# ---- running and comparing ---------------------------------------------------------------------

FILENAME = "<string>"  # pijit captures <string> code (other <...> files are skipped)


def make_inputs(seed, dtype):
    import numpy as np
    import pijit as ms
    rng = np.random.default_rng(seed)
    x = (rng.random((2, 3)) * 4 - 2).astype(dtype)
    y = (rng.random((2, 3)) * 4 - 2).astype(dtype)
    return ms.Tensor(x), ms.Tensor(y)


def namespace(source):
    ns = {"__name__": "pijit_fuzz_prog"}
    exec(compile(PRELUDE + source, FILENAME, "exec"), ns)
    return ns


def execute(fn, ns, prog, wrap=None, input_seed=None, k=None):
    """Runs fn on fresh inputs and state; returns the observable record."""
    k = prog.k if k is None else k
    ns["LOG"].clear()
    ns["STATE"].clear()
    ns["G"] = 0
    o = ns["Obj"]()
    x, y = make_inputs(prog.seed if input_seed is None else input_seed, prog.dtype)
    if "random" in FEATURES:
        ns["ms"].set_seed(1234)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            if wrap is not None:
                with wrap():
                    out = ("ok", fn(x, y, o, k))
            else:
                out = ("ok", fn(x, y, o, k))
        except Exception as e:  # noqa: BLE001 - comparing whatever is raised
            out = ("raise", type(e).__name__, str(e))
    rec = {"result": out, "stdout": buf.getvalue(), "log": list(ns["LOG"]), "G": ns["G"],
           "state": dict(ns["STATE"]), "attrs": dict(sorted(vars(o).items()))}
    if "random" in FEATURES:
        rec["stream"] = ns["ops"].rand(3)  # where the seeded random stream is after the call
    return rec


def jitted(fn):
    """jit(mode="PIJit") of a function or of a bound method's function."""
    import types
    import pijit as ms
    if isinstance(fn, types.MethodType):
        return types.MethodType(ms.jit(fn.__func__, mode="PIJit"), fn.__self__)
    return ms.jit(fn, mode="PIJit")


RTOL = {"float32": 2e-5, "float64": 1e-12}


def diff(a, b, path="", dtype="float32"):
    """Differences between two observed values (None when equal): tensors within a
    tolerance, everything else exactly."""
    import numpy as np
    import pijit as ms
    if type(a) is not type(b):
        return f"{path}: type {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, ms.Tensor):
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"{path}: tensor {a.dtype}{a.shape} != {b.dtype}{b.shape}"
        x, y = a.asnumpy(), b.asnumpy()
        if x.dtype.kind != "f":
            return None if np.array_equal(x, y) else f"{path}: {x} != {y}"
        rtol = RTOL[str(x.dtype)]
        finite = np.abs(np.where(np.isfinite(x), x, 0))
        scale = max(1.0, float(finite.max())) if x.size else 1.0
        ok = np.allclose(x, y, rtol=rtol, atol=rtol * scale, equal_nan=True)
        return None if ok else f"{path}: {x.tolist()} != {y.tolist()}"
    if isinstance(a, (tuple, list)):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = diff(x, y, f"{path}[{i}]", dtype)
            if d:
                return d
        return None
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{path}: keys {list(a)} != {list(b)}"
        for k in a:
            d = diff(a[k], b[k], f"{path}.{k}", dtype)
            if d:
                return d
        return None
    if isinstance(a, float):
        if a == b or (a != a and b != b):
            return None
        return None if abs(a - b) <= 1e-5 * max(1.0, abs(a)) else f"{path}: {a!r} != {b!r}"
    return None if a == b else f"{path}: {a!r} != {b!r}"


MODES = ("jit", "jit_again", "jit_other", "capture")


def check_program(prog, modes=MODES):
    """Runs `prog` eagerly and in `modes`; returns a list of (mode, difference).

    jit: the first (compiling) call; jit_again: the same inputs again (from the cache);
    jit_other: other input data and k (other branches, recompiles); capture: `pijit.capture()`."""
    import pijit as ms
    ns = namespace(prog.source)
    expected = execute(ns["prog"], ns, prog)
    problems = []
    jns = None
    for mode in modes:
        want = expected
        if mode in ("jit", "jit_again", "jit_other"):
            if jns is None:
                jns = namespace(prog.source)
                jns["jitted"] = jitted(jns["prog"])
            if mode == "jit_other":
                other, k = prog.seed + 100003, (prog.k + 1) % 5
                want = execute(ns["prog"], ns, prog, input_seed=other, k=k)
                got = execute(jns["jitted"], jns, prog, input_seed=other, k=k)
            else:
                got = execute(jns["jitted"], jns, prog)
        elif mode == "capture":
            cns = namespace(prog.source)
            got = execute(cns["prog"], cns, prog, wrap=ms.capture)
        else:
            raise ValueError(mode)
        d = diff(want, got, "", prog.dtype)
        if d:
            problems.append((mode, d))
    return problems


def stats_of(prog):
    """Graph-break counters of the jitted program (for the campaign's statistics)."""
    import pijit as ms
    ns = namespace(prog.source)
    jf = jitted(ns["prog"])
    execute(jf, ns, prog)
    s = ms.get_code_extra(getattr(jf, "__func__", jf))
    return {"graphs": s["graph_count"], "breaks": s["total_break_count"],
            "resumes": s["resume_functions"]}


# ---- workers and campaigns ---------------------------------------------------------------------

def import_pijit(attempts=30, wait=10.0):
    """Imports pijit, waiting while a concurrent rebuild leaves it briefly unimportable."""
    for i in range(attempts):
        try:
            import pijit  # noqa: F401
            return
        except Exception:  # noqa: BLE001
            if i == attempts - 1:
                raise
            for name in [m for m in sys.modules if m == "pijit" or m.startswith("pijit.")]:
                del sys.modules[name]
            time.sleep(wait)


def worker(seeds, out=sys.stdout):
    """Runs programs in this process, one JSON line per program (and a START line before)."""
    import numpy as np
    np.seterr(all="ignore")
    import_pijit()
    for seed in seeds:
        out.write(json.dumps({"start": seed}) + "\n")
        out.flush()
        rec = {"seed": seed}
        try:
            prog = generate(seed)
            problems = check_program(prog)
            rec["status"] = "mismatch" if problems else "ok"
            if problems:
                rec["detail"] = [f"{m}: {d}"[:2000] for m, d in problems]
            try:
                rec.update(stats_of(prog))
            except Exception:  # noqa: BLE001 - statistics are best effort
                pass
        except Exception as e:  # noqa: BLE001 - a harness error is a finding too
            rec["status"] = "error"
            rec["detail"] = [f"{type(e).__name__}: {e}"[:2000]]
        out.write(json.dumps(rec) + "\n")
        out.flush()


def run_batch(seeds, timeout=120.0):
    """Runs `seeds` in worker subprocesses; a worker that dies marks its current seed as a
    crash and a new worker continues after it. Returns one record per seed."""
    todo = list(seeds)
    records = {}
    retries = 0
    while todo:
        env = dict(os.environ)
        env.pop("PIJIT_LOG", None)
        cmd = [sys.executable, os.path.abspath(__file__), "--worker",
               ",".join(str(s) for s in todo)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
        current = None
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            timed_out = True
        for line in out.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if "start" in rec:
                current = rec["start"]
            else:
                records[rec["seed"]] = rec
                current = None
        done = [s for s in todo if s in records]
        if current is not None and current not in records:
            records[current] = {"seed": current, "status": "timeout" if timed_out else "crash",
                                "detail": [f"exit {proc.returncode}: {err[-1500:]}"]}
        elif len(done) < len(todo) and current is None:
            # Died between programs or before the first (killed from outside, or the import
            # failed): try again, then blame the next program.
            retries += 1
            if retries > 2:
                nxt = next(s for s in todo if s not in records)
                records[nxt] = {"seed": nxt, "status": "crash",
                                "detail": [f"exit {proc.returncode}: {err[-1500:]}"]}
                retries = 0
        todo = [s for s in todo if s not in records]
    return [records[s] for s in seeds]


def run_parallel(seeds, jobs=2, batch=25, timeout=120.0):
    """Runs batches of seeds with `jobs` workers at a time."""
    from concurrent.futures import ThreadPoolExecutor
    seeds = list(seeds)
    chunks = [seeds[i:i + batch] for i in range(0, len(seeds), batch)]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(lambda c: run_batch(c, timeout), chunks))
    return [r for chunk in results for r in chunk]


def summarize(records):
    counts = {"programs": len(records)}
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    for key in ("graphs", "breaks", "resumes"):
        counts["total_" + key] = sum(r.get(key, 0) for r in records)
    counts["with_breaks"] = sum(1 for r in records if r.get("breaks", 0) > 0)
    return counts


# ---- minimization ------------------------------------------------------------------------------

def _blocks(lines):
    """Indices of statements (a line and its more-indented continuation)."""
    out = []
    for i, line in enumerate(lines):
        text = line.strip()
        if (i == 0 or not text or text == "global G" or text.startswith(("def ", "class ")) or
                text in ("return prog",) or text.startswith("prog =")):
            continue
        if line.strip().startswith(("else:", "except")):
            continue
        ind = len(line) - len(line.lstrip())
        j = i + 1
        while j < len(lines) and (len(lines[j]) - len(lines[j].lstrip()) > ind or
                                  lines[j].strip().startswith(("else:", "except"))
                                  and len(lines[j]) - len(lines[j].lstrip()) == ind and
                                  line.strip().startswith(("if ", "try:"))):
            j += 1
        out.append((i, j))
    return out


def _still_fails(prog, source, want_modes):
    cand = Program(prog.seed, source, prog.dtype, prog.k)
    try:
        compile(source, "<min>", "exec")
        ns = namespace(source)
        base = execute(ns["prog"], ns, cand)
        if base["result"][0] == "raise" and base["result"][1] in ("NameError", "SyntaxError"):
            return False
        problems = check_program(cand)
    except Exception:  # noqa: BLE001
        return False
    return bool({m for m, _ in problems} & want_modes)


def minimize(prog):
    problems = check_program(prog)
    if not problems:
        return prog.source
    want = {m for m, _ in problems}
    lines = prog.source.splitlines()
    changed = True
    while changed:
        changed = False
        for i, j in sorted(_blocks(lines), key=lambda b: b[0] - b[1]):
            if lines[i].lstrip().startswith("return"):
                continue
            cand = lines[:i] + lines[j:]
            # A block left empty needs a body.
            src = "\n".join(cand) + "\n"
            if _still_fails(prog, src, want):
                lines = cand
                changed = True
                break
            # Or keep a compound statement's body but drop its header (dedent).
            if lines[i].rstrip().endswith(":") and lines[i].lstrip().startswith(("if ", "for ")):
                ind = len(lines[i]) - len(lines[i].lstrip())
                body = [ln for ln in lines[i + 1:j] if not ln.strip().startswith("else:")]
                body = [ln[4:] if len(ln) - len(ln.lstrip()) > ind else ln for ln in body]
                cand = lines[:i] + body + lines[j:]
                src = "\n".join(cand) + "\n"
                if _still_fails(prog, src, want):
                    lines = cand
                    changed = True
                    break
    return "\n".join(lines) + "\n"


# ---- command line ------------------------------------------------------------------------------

def parse_seeds(text):
    out = []
    for part in text.split(","):
        if ":" in part:
            a, b = part.split(":")
            out.extend(range(int(a), int(b)))
        elif part:
            out.append(int(part))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0:100")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--show", type=int)
    ap.add_argument("--check", type=int)
    ap.add_argument("--minimize", type=int)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.worker is not None:
        worker(parse_seeds(args.worker))
        return 0
    if args.show is not None:
        p = generate(args.show)
        print(f"# seed {p.seed}: dtype {p.dtype}, k = {p.k}")
        print(p.source)
        return 0
    if args.check is not None:
        p = generate(args.check)
        if args.verbose:
            print(p.source)
        problems = check_program(p)
        for m, d in problems:
            print(f"{m}: {d}")
        print("ok" if not problems else f"{len(problems)} mismatching modes")
        return 1 if problems else 0
    if args.minimize is not None:
        p = generate(args.minimize)
        print(f"# seed {p.seed}: dtype {p.dtype}, k = {p.k}")
        print(minimize(p))
        return 0
    t0 = time.time()
    records = run_parallel(parse_seeds(args.seeds), jobs=args.jobs)
    for r in records:
        if r["status"] != "ok":
            print(json.dumps(r))
    print(json.dumps(summarize(records)), f"in {time.time() - t0:.1f}s")
    return 0 if all(r["status"] == "ok" for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
