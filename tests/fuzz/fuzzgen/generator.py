"""The generator of program text: `Gen` builds one random function from a seed (names,
expressions of tensors, reductions and Python numbers, and the assembly of a plain function,
closure or method); the statement kinds are in statements.py. `generate(seed)` is a Program."""
import random

from .flow import Flow
from .made import Made
from .program import FEATURES, INDENT, Program
from .statements import Statements


class Gen(Statements, Made, Flow):
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
        self.kw = ", **kw" if "kwargs" in FEATURES else ""
        self.ls = ", ls" if "lists" in FEATURES else ""  # a list of tensors passed in

    # -- names
    def fresh(self, prefix):
        self.n += 1
        return f"{prefix}{self.n}"

    def emit(self, depth, text):
        self.lines.append(INDENT * depth + text)

    def bind(self, sc, kind, name):
        """Records `name` in the scope as bound on every path, to a tensor (kind 't'), a
        Python number ('s') or a list of tensors ('l')."""
        sc[kind].add(name)
        sc["maybe_" + kind].discard(name)

    def _break_if(self, depth, cond):
        self.emit(depth, f"if {cond}:")
        self.emit(depth + 1, "break")

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


    def program(self, seed):
        r = self.r
        # The function: a plain function, a closure (free variables), or a method that
        # calls super().
        self.shape = r.choice(["plain"] * 3 + ["closure", "method"])
        sc = {"t": {"x", "y"}, "s": {"k"}, "l": {"ls"} if self.ls else set(), "maybe_t": set(),
              "maybe_s": set(), "maybe_l": set()}
        if self.shape == "closure":
            sc["s"].add("c0")
            if "effects" in FEATURES:
                sc["s"].add("cnt")  # a counter in the enclosing function's cell
        if "wide" in FEATURES:
            for i in range(250):
                self.emit(1, f"w{i} = {i}")
        self.emit(1, "v0 = x + y" if self.shape != "closure" else "v0 = x + y * c0")
        sc["t"].add("v0")
        if "kwargs" in FEATURES:  # the **kw slot: a number and a tensor, read in either order
            reads = [("kz", 's', 'kw["z"]'), ("kt", 't', 'kw.get("w", x)')]
            r.shuffle(reads)
            for name, kind, expr in reads:
                self.emit(1, f"{name} = {expr}")
                sc[kind].add(name)
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
        cells = self.shape == "closure" and "effects" in FEATURES
        dtype = r.choice(["float32", "float64"])
        if self.shape == "plain":
            src = [f"def prog(x, y, o, k{self.ls}{self.kw}):"] + body
        elif self.shape == "closure" and cells:
            # The harness resets and reads the counter around each run (reset_cells,
            # read_cells), since runs share the closure.
            src = ["def make(c0):", INDENT + "cnt = 0", INDENT + f"def prog(x, y, o, k{self.ls}{self.kw}):",
                   INDENT * 2 + "nonlocal cnt"]
            src += [INDENT + line for line in body]
            src += [INDENT + "def reset_cells():", INDENT * 2 + "nonlocal cnt",
                    INDENT * 2 + "cnt = 0", INDENT + "return prog, reset_cells, lambda: cnt",
                    "", "", "prog, reset_cells, read_cells = make(1.5)"]
        elif self.shape == "closure":
            src = ["def make(c0):", INDENT + f"def prog(x, y, o, k{self.ls}{self.kw}):"]
            src += [INDENT + line for line in body]
            src += [INDENT + "return prog", "", "", "prog = make(1.5)"]
        else:
            src = ["class P(Base):", INDENT + f"def prog(self, x, y, o, k{self.ls}{self.kw}):"]
            src += [INDENT + line for line in body]
            src += ["", "", "prog = P().prog"]
        return Program(seed, "\n".join(src) + "\n", dtype, r.randint(0, 4))


def generate(seed, max_stmts=None):
    return Gen(seed, max_stmts).program(seed)

