"""The "flow" feature: statements around Python's control-flow and iteration protocols that a
capturing JIT has to model or break at: `with` blocks over context managers written in Python
(made in the function or module-level instances whose state the function writes; __enter__
returning the manager, a number or a tensor, or raising; __exit__ counting, logging, printing,
doing tensor work or swallowing an exception; contextlib generators; managers in inlined
helpers; nested managers; `return` (whose value is computed before __exit__), `break` and
`continue` inside the body; exceptions through it) and iteration of NumPy arrays (1-D float
and int constants, float32, wrapping int64, uint8 and bool items added as NumPy scalars, 2-D
rows made tensors, views and columns, arrays in a dict or an attribute, arrays built in the
function, stores before the loop, into the array during the loop and through its rows;
enumerate/zip over them, sum(), list(), early exits). map/filter and exception forms are in
flow_calls.py, generators stepped an item at a time (loops, comprehensions, next()) in
flow_generators.py. Each form is one statement group; its bodies mix in the ordinary statements,
so graph breaks happen inside them. The module-level managers' and arrays' state and a second
log (EXITS) are reset and read back by the harness (reset_flow, read_flow); the definitions
the programs use are in flow_prelude.py."""
from .flow_calls import FlowCalls
from .flow_generators import FlowGenerators


class Flow(FlowCalls, FlowGenerators):
    """Statement generation for the "flow" feature; a mixin of Gen (uses r, fresh, emit,
    block, merge, texpr, sexpr, svar, rexpr, assign_t)."""

    FORMS = (["with_made"] * 3 + ["with_value"] * 2 + ["with_global"] * 2 + ["with_nested"] * 2 +
             ["with_return", "with_loop", "with_loop", "with_loud", "with_raise", "with_quiet"] +
             ["arr_sum", "arr_rows", "arr_reduce", "arr_list", "arr_enum", "arr_zip",
              "arr_nested", "arr_break"] +
             ["map_sum", "map_list", "filter_nums", "map_abs", "map_mutated", "map_next",
              "filter_tensors", "map_brk", "map_misc"] +
             ["exc_obj"] * 2 + ["exc_raise"] * 2 + ["exc_caught"] * 2 +
             ["exc_else", "exc_finally", "exc_finally", "exc_chain"] +
             ["with_gen", "with_attr", "with_helper", "with_enter_raise", "arr_mut", "arr_mut",
              "arr_local", "map_arr", "exc_gone", "exc_unpack"] +
             ["with_tally", "with_tally", "with_ret_state", "map_lazy", "map_lazy", "map_shared",
              "exc_user", "exc_user", "exc_ident", "arr_dtypes", "arr_dtypes", "exc_saved",
              "exc_saved", "arr_views", "arr_rowstore", "arr_rowstore", "arr_held", "arr_live"] +
             list(FlowGenerators.GEN_FORMS))
    # Forms without a nested block, for deep positions.
    FLAT = ("exc_obj", "exc_raise", "exc_unpack", "map_", "filter_", "arr_reduce", "arr_list",
            "with_helper", "gen_reduce", "gen_lazy")

    def flow_stmt(self, sc, depth, in_loop, in_try):
        form = self.r.choice(self.FORMS)
        if depth > 2 and not form.startswith(self.FLAT):
            form = self.r.choice(["exc_obj", "map_sum", "arr_reduce", "arr_list", "with_helper"])
        getattr(self, "_" + form)(sc, depth, in_loop, in_try)

    # -- helpers
    def _pycond(self, sc):
        """A condition on Python values (k and the scalars vary between the harness's
        calls, so both of its outcomes occur)."""
        r = self.r
        return r.choice([f"k > {r.randint(1, 3)}", "k % 2 == 0", "k % 2 == 1",
                         f"k == {r.randint(0, 4)}", f"{self.svar(sc)} > {r.randint(0, 3)}"])

    def _cond(self, sc):
        r = self.r
        if r.random() < 0.7:
            return self._pycond(sc)
        return f"float({self.rexpr(sc)}) > {round(r.uniform(-3, 3), 2)}"

    def _body(self, sc, depth, in_loop, in_try, lo=1, hi=2):
        self.block(sc, depth, self.r.randint(lo, hi), in_loop, in_try)

    def _maybe_exit(self, sc, depth, in_loop):
        """Inside a loop: sometimes leave it (or the iteration) under a condition."""
        if in_loop and self.r.random() < 0.4:
            self.emit(depth, f"if {self._cond(sc)}:")
            self.emit(depth + 1, self.r.choice(["break", "continue"]))

    def _maybe_break_stmt(self, sc, depth):
        """Sometimes a statement that surely breaks the graph."""
        r = self.r
        if r.random() < 0.35:
            how = r.randrange(3)
            if how == 0:
                self.emit(depth, f"note({self.sexpr(sc)})")
            elif how == 1:
                self.assign_t(sc, self.fresh("v"), depth, f"unk({self.texpr(sc)})")
            else:
                self.emit(depth, f"print(\"in\", {self.tvar(sc)}.shape, sep=\"|\")")

    def _ret(self, sc):
        outs = sorted(sc["t"])
        self.r.shuffle(outs)
        return f"return ({', '.join(outs[:self.r.randint(1, 2)])},)"

    def _scale_by_scalar(self, sc, depth, s):
        """Adds the number `s` to the scope and assigns a new tensor: a tensor expression
        times s (so the number reaches the results)."""
        self.bind(sc, "s", s)
        self.assign_t(sc, self.fresh("v"), depth, f"{self.texpr(sc)} * {s}")

    def _snap(self, sc):
        return {key: set(v) for key, v in sc.items()}

    # -- with blocks
    def _with_made(self, sc, depth, in_loop, in_try):
        c = self.fresh("c")
        self.emit(depth, f"with Cm({self.r.randint(0, 5)}) as {c}:")
        self._maybe_break_stmt(sc, depth + 1)
        self._body(sc, depth + 1, in_loop, in_try)
        self._maybe_exit(sc, depth + 1, in_loop)
        if self.r.random() < 0.5:
            self.emit(depth, f"LOG.append(({c}.n, {c}.entered, {c}.exited))")
        else:
            self.assign_t(sc, self.fresh("v"), depth,
                          f"{self.texpr(sc)} * ({c}.exited + {c}.entered * 0.5)")

    def _with_value(self, sc, depth, in_loop, in_try):
        r = self.r
        v = self.fresh("v")
        if r.random() < 0.6:
            t = self.fresh("t")
            self.emit(depth, f"with Hold({self.texpr(sc)}) as {t}:")
            self.bind(sc, "t", t)
            self.assign_t(sc, v, depth + 1, f"{t} * 2.0 + {self.texpr(sc)}")
        else:
            s = self.fresh("s")
            self.emit(depth, f"with Hold({self.sexpr(sc)}) as {s}:")
            self.bind(sc, "s", s)
            self.assign_t(sc, v, depth + 1, f"{self.texpr(sc)} * {s}")
        self._maybe_break_stmt(sc, depth + 1)
        if r.random() < 0.6:
            self._body(sc, depth + 1, in_loop, in_try)
        self._maybe_exit(sc, depth + 1, in_loop)

    def _with_global(self, sc, depth, in_loop, in_try):
        r = self.r
        if r.random() < 0.5:
            m = self.fresh("m")
            self.emit(depth, f"with MGR as {m}:")
            self.emit(depth + 1, f"LOG.append(({m}.n, {m}.entered, {m} is MGR))")
        else:
            s = self.fresh("s")
            self.emit(depth, f"with HOLD as {s}:")
            self.bind(sc, "s", s)
            self.assign_t(sc, self.fresh("v"), depth + 1, f"{self.texpr(sc)} * {s}")
        self._maybe_break_stmt(sc, depth + 1)
        self._body(sc, depth + 1, in_loop, in_try)
        self._maybe_exit(sc, depth + 1, in_loop)
        self.emit(depth, r.choice(["LOG.append((MGR.entered, MGR.exited, HOLD.depth))",
                                   "LOG.append(len(EXITS))"]))

    def _with_nested(self, sc, depth, in_loop, in_try):
        r = self.r
        c, t = self.fresh("c"), self.fresh("t")
        if r.random() < 0.6:  # one statement, two managers
            first = r.choice([f"Cm({r.randint(0, 5)}) as {c}", f"MGR as {c}"])
            self.emit(depth, f"with {first}, Hold({self.texpr(sc)}) as {t}:")
            inner = depth + 1
        else:
            self.emit(depth, f"with Cm({r.randint(0, 5)}) as {c}:")
            self._maybe_break_stmt(sc, depth + 1)
            self.emit(depth + 1, f"with Hold({self.texpr(sc)}) as {t}:")
            inner = depth + 2
        self.bind(sc, "t", t)
        self.assign_t(sc, self.fresh("v"), inner, f"{t} + {c}.entered * {self.texpr(sc)}")
        self._maybe_break_stmt(sc, inner)
        self._body(sc, inner, in_loop, in_try, 0, 2)
        self._maybe_exit(sc, inner, in_loop)
        self.emit(depth, f"LOG.append(({c}.exited, len(EXITS)))")

    def _with_return(self, sc, depth, in_loop, in_try):
        c = self.fresh("c")
        self.emit(depth, self.r.choice([f"with Cm({self.r.randint(0, 5)}) as {c}:",
                                        f"with MGR as {c}:"]))
        self._maybe_break_stmt(sc, depth + 1)
        self._body(sc, depth + 1, in_loop, in_try)
        self.emit(depth + 1, f"if {self._cond(sc)}:")
        self.emit(depth + 2, self._ret(sc))
        self.emit(depth, f"LOG.append(('after', {c}.exited))")

    def _with_loop(self, sc, depth, in_loop, in_try):
        r = self.r
        i, c, acc = self.fresh("i"), self.fresh("c"), self.fresh("v")
        self.assign_t(sc, acc, depth, self.texpr(sc))
        self.emit(depth, f"for {i} in range({r.randint(1, 4)}):")
        before = self._snap(sc)
        self.bind(sc, "s", i)
        self.emit(depth + 1, r.choice([f"with Cm({i}) as {c}:", f"with MGR as {c}:"]))
        self.emit(depth + 2, f"{acc} = {acc} + {self.texpr(sc)} * {i}")
        self._maybe_break_stmt(sc, depth + 2)
        if r.random() < 0.5:
            self._body(sc, depth + 2, True, in_try)
        self.emit(depth + 2, f"if {r.choice([f'{i} == k % 3', f'{i} >= 1', self._cond(sc)])}:")
        self.emit(depth + 3, r.choice(["break", "continue"]))
        if r.random() < 0.5:
            self.emit(depth + 2, f"{acc} = {acc} * 0.5")
        self.emit(depth + 1, f"LOG.append(('loop', {i}, {c}.exited))")
        self.merge(sc, self._snap(sc), before)

    def _with_loud(self, sc, depth, in_loop, in_try):
        s = self.fresh("s")
        self.emit(depth, f"with Loud() as {s}:")
        self.bind(sc, "s", s)
        self.assign_t(sc, self.fresh("v"), depth + 1, f"{self.texpr(sc)} * {s}")
        self._body(sc, depth + 1, in_loop, in_try)
        self._maybe_exit(sc, depth + 1, in_loop)

    def _with_raise(self, sc, depth, in_loop, in_try):
        # An exception out of a with body, through __exit__, caught around it.
        r = self.r
        c = self.fresh("c")
        exc = r.choice(["KeyError", "IndexError"])
        before = self._snap(sc)
        self.emit(depth, "try:")
        self.emit(depth + 1, f"with Cm({r.randint(0, 5)}) as {c}:")
        self._body(sc, depth + 2, in_loop, True)
        self.emit(depth + 2, f"if {self._pycond(sc)}:")
        self.emit(depth + 3, f"raise {exc}(\"in with\", k)")
        self._maybe_break_stmt(sc, depth + 2)
        after = self._snap(sc)
        self.emit(depth, f"except {exc} as err:")
        self.emit(depth + 1, f"LOG.append(({c}.exited, err.args, str(err)))")
        self.merge(sc, after, before)

    def _with_quiet(self, sc, depth, in_loop, in_try):
        q = self.fresh("q")
        before = self._snap(sc)
        self.emit(depth, f"with Quiet() as {q}:")
        self._body(sc, depth + 1, in_loop, True)
        self.emit(depth + 1, f"if {self._pycond(sc)}:")
        self.emit(depth + 2, f"raise ValueError(\"quiet\", {self.svar(sc)})")
        self._maybe_break_stmt(sc, depth + 1)
        after = self._snap(sc)
        self.emit(depth, f"LOG.append({q}.caught)")
        self.merge(sc, after, before)  # the body may have been left by the ValueError

    # -- iterating NumPy array constants
    def _sum_loop(self, depth, s, v, items):
        """`for v in items` adding float(v) to s (from 0.0); more of the body may follow at
        depth + 1."""
        self.emit(depth, f"{s} = 0.0")
        self.emit(depth, f"for {v} in {items}:")
        self.emit(depth + 1, f"{s} = {s} + float({v})")

    def _arr_sum(self, sc, depth, in_loop, in_try):
        r = self.r
        s, v = self.fresh("s"), self.fresh("i")
        arr = r.choice(["ARR", "IARR", "ARR2I[1]"])
        self._sum_loop(depth, s, v, arr)
        if r.random() < 0.3:
            self.emit(depth + 1, f"note(float({v}))")
        if r.random() < 0.3:
            self._break_if(depth + 1, f"float({v}) > {r.choice([0.6, 1.5, 2.5])}")
        self._scale_by_scalar(sc, depth, s)

    def _arr_rows(self, sc, depth, in_loop, in_try):
        r = self.r
        acc, row = self.fresh("v"), self.fresh("row")
        arr = r.choice(["ARR2", "ARR2", "ARR2I"])
        make = r.choice(["Tensor", "ms.Tensor"])
        self.assign_t(sc, acc, depth, f"{self.texpr(sc)} * 0.5")
        self.emit(depth, f"for {row} in {arr}:")
        self.emit(depth + 1, f"{acc} = {acc} + {make}({row})")
        if r.random() < 0.4:
            self.emit(depth + 1, f"{acc} = {acc} * float({row}[{r.randint(0, 2)}])")
        if r.random() < 0.3:
            self.emit(depth + 1, f"{acc} = unk({acc})")

    def _arr_reduce(self, sc, depth, in_loop, in_try):
        r = self.r
        s = self.fresh("s")
        self.emit(depth, f"{s} = " + r.choice([
            "sum(float(v) for v in ARR)", "float(sum(ARR))", "int(sum(IARR))",
            "sum([float(v) * 2 for v in IARR])", "max(float(v) for v in ARR)",
            "float(sum(ARR2)[1])", "len([v for v in ARR if v > 0])"]))
        self._scale_by_scalar(sc, depth, s)

    def _arr_list(self, sc, depth, in_loop, in_try):
        r = self.r
        lst = self.fresh("a")
        self.emit(depth, f"{lst} = list({r.choice(['ARR', 'IARR', 'ARR2', 'ARR2I'])})")
        how = r.randrange(3)
        if how == 0:
            self.emit(depth, f"LOG.append({lst})")
        elif how == 1:
            self.emit(depth, f"LOG.append((len({lst}), type({lst}[0]).__name__))")
        else:
            s = self.fresh("s")
            self.emit(depth, f"{s} = float({lst}[k % len({lst})].sum())")
            self.bind(sc, "s", s)

    def _arr_enum(self, sc, depth, in_loop, in_try):
        r = self.r
        acc, i, v = self.fresh("v"), self.fresh("i"), self.fresh("i")
        arr = r.choice(["ARR", "IARR"])
        t = self.texpr(sc)
        self.assign_t(sc, acc, depth, f"{t} * 0.0")
        self.emit(depth, f"for {i}, {v} in enumerate({arr}{r.choice(['', ', 1'])}):")
        self.emit(depth + 1, f"{acc} = {acc} + {t} * (float({v}) * {i})")
        if r.random() < 0.5:
            self._break_if(depth + 1, f"{i} >= k")
        if r.random() < 0.3:
            self.emit(depth + 1, f"LOG.append(({i}, float({v})))")

    def _arr_zip(self, sc, depth, in_loop, in_try):
        r = self.r
        acc, a, b = self.fresh("v"), self.fresh("i"), self.fresh("i")
        self.assign_t(sc, acc, depth, self.texpr(sc))
        how = r.randrange(3)
        if how == 0:
            self.emit(depth, f"for {a}, {b} in zip(ARR, [{self.texpr(sc)}, {self.texpr(sc)}, "
                             f"{self.texpr(sc)}]):")
            self.emit(depth + 1, f"{acc} = {acc} + {b} * float({a})")
        elif how == 1:
            s = self.fresh("s")
            self.emit(depth, f"{s} = 0.0")
            self.emit(depth, f"for {a}, {b} in zip(ARR, IARR):")
            self.emit(depth + 1, f"{s} = {s} + float({a}) * int({b})")
        else:
            self.emit(depth, f"for {a}, {b} in zip(ARR2, [{self.texpr(sc)}, {self.texpr(sc)}]):")
            self.emit(depth + 1, f"{acc} = {acc} + {b} * Tensor({a})")
        if r.random() < 0.3:
            self._break_if(depth + 1, self._pycond(sc))
        if r.random() < 0.25:
            self.emit(depth + 1, f"note({acc}.shape[0])")
        if how == 1:
            self.emit(depth, f"{acc} = {acc} * {s}")
            self.bind(sc, "s", s)

    def _arr_nested(self, sc, depth, in_loop, in_try):
        s, row, v = self.fresh("s"), self.fresh("row"), self.fresh("i")
        self.emit(depth, f"{s} = 0.0")
        self.emit(depth, f"for {row} in {self.r.choice(['ARR2', 'ARR2I'])}:")
        self.emit(depth + 1, f"for {v} in {row}:")
        self.emit(depth + 2, f"{s} = {s} + float({v}) * 0.5")
        self.bind(sc, "s", s)
        self.assign_t(sc, self.fresh("v"), depth, f"{self.texpr(sc)} + {s}")

    def _arr_break(self, sc, depth, in_loop, in_try):
        # An early exit from a loop over an array, then the loop variable used.
        r = self.r
        v, acc = self.fresh("i"), self.fresh("v")
        self.assign_t(sc, acc, depth, self.texpr(sc))
        self.emit(depth, f"for {v} in ARR:")
        self.emit(depth + 1, f"{acc} = {acc} - float({v})")
        self._maybe_break_stmt(sc, depth + 1)
        self._break_if(depth + 1, r.choice([f"float({v}) < 0", "k % 2 == 0", f"{v} > 1.0"]))
        self.emit(depth, f"LOG.append(float({v}))")

    # -- more managers and arrays
    def _with_gen(self, sc, depth, in_loop, in_try):
        # A contextlib.contextmanager generator.
        s = self.fresh("s")
        self.emit(depth, f"with scope({self.r.choice(['k', str(self.r.randint(0, 3))])}) as {s}:")
        self.bind(sc, "s", s)
        self.assign_t(sc, self.fresh("v"), depth + 1, f"{self.texpr(sc)} * {s}")
        self._maybe_break_stmt(sc, depth + 1)
        self._body(sc, depth + 1, in_loop, in_try, 0, 2)
        self._maybe_exit(sc, depth + 1, in_loop)

    def _with_attr(self, sc, depth, in_loop, in_try):
        # The module-level managers' state written and read by the function.
        r = self.r
        if r.random() < 0.5:
            h = self.fresh("h")
            if r.random() < 0.5:
                self.emit(depth, f"HOLD.v = {self.texpr(sc)}")
                self.emit(depth, f"with HOLD as {h}:")
                self.assign_t(sc, h, depth + 1, f"{h} * 0.5 + HOLD.v")
            else:
                self.emit(depth, f"HOLD.v = {self.sexpr(sc)}")
                self.emit(depth, f"with HOLD as {h}:")
                self.bind(sc, "s", h)
                self.assign_t(sc, self.fresh("v"), depth + 1, f"{self.texpr(sc)} * {h}")
            self.emit(depth + 1, "LOG.append(HOLD.depth)")
        else:
            acc, i = self.fresh("v"), self.fresh("i")
            self.assign_t(sc, acc, depth, self.texpr(sc))
            self.emit(depth, f"for {i} in range({r.randint(1, 3)}):")
            self.emit(depth + 1, "with MGR:")
            self.emit(depth + 2, f"{acc} = {acc} * 0.5 + {self.tvar(sc)} * MGR.entered")
            self._maybe_break_stmt(sc, depth + 2)
            self.emit(depth + 1, f"{acc} = {acc} - MGR.exited")

    def _with_helper(self, sc, depth, in_loop, in_try):
        r = self.r
        call = r.choice([f"scaled({self.texpr(sc)}, {r.randint(0, 3)})",
                         f"scaled({self.texpr(sc)}, k)", f"safe({self.texpr(sc)}, k)",
                         f"safe({self.texpr(sc)}, {self.svar(sc)})",
                         f"scaled_brk({self.texpr(sc)}, k)", f"safe_brk({self.texpr(sc)}, k)"])
        self.assign_t(sc, self.fresh("v"), depth, call)

    def _with_enter_raise(self, sc, depth, in_loop, in_try):
        n = self.fresh("s")
        before = self._snap(sc)
        self.emit(depth, "try:")
        self.emit(depth + 1, f"with Picky({self.r.choice(['k', self.svar(sc)])}) as {n}:")
        self.bind(sc, "s", n)
        self.assign_t(sc, self.fresh("v"), depth + 2, f"{self.texpr(sc)} * {n}")
        self._maybe_break_stmt(sc, depth + 2)
        after = self._snap(sc)
        self.emit(depth, "except IndexError as err:")
        self.emit(depth + 1, "LOG.append(err.args)")
        self.merge(sc, after, before)

    def _arr_mut(self, sc, depth, in_loop, in_try):
        # A module-level array stored into, then iterated (its items are not constants).
        r = self.r
        self.emit(depth, r.choice([f"MUT[k % 3] = float({self.svar(sc)})",
                                   "MUT[0] = MUT[0] + k", "MUT[1:] = MUT[1:] * 0.5",
                                   f"MUT[{r.randint(0, 2)}] = {self.sexpr(sc)}"]))
        s, v = self.fresh("s"), self.fresh("i")
        self.emit(depth, f"{s} = 0.0")
        if r.random() < 0.5:
            self.emit(depth, f"for {v} in MUT:")
            self.emit(depth + 1, f"{s} = {s} + float({v})")
        else:
            i = self.fresh("i")
            self.emit(depth, f"for {i}, {v} in enumerate(MUT):")
            self.emit(depth + 1, f"{s} = {s} + float({v}) * ({i} + 1)")
        if r.random() < 0.3:
            self.emit(depth + 1, f"note({s})")
        self._scale_by_scalar(sc, depth, s)

    def _arr_local(self, sc, depth, in_loop, in_try):
        # An array built in the function from Python values, iterated.
        r = self.r
        a, s, v = self.fresh("a"), self.fresh("s"), self.fresh("i")
        self.emit(depth, f"{a} = " + r.choice([f"np.array([k, 1.5, {self.svar(sc)}])",
                                               "np.arange(k + 1)", "np.linspace(0.0, k, 3)",
                                               "ARR * k"]))
        self._sum_loop(depth, s, v, a)
        if r.random() < 0.3:
            self._break_if(depth + 1, f"{s} > 2")
        self._scale_by_scalar(sc, depth, s)

    def _with_tally(self, sc, depth, in_loop, in_try):
        # Tensor work in the manager; a nonzero n swallows a ValueError of the body.
        r = self.r
        tl, v = self.fresh("o"), self.fresh("v")
        n = r.choice(["0", "0", "1", "k % 2"])
        before = self._snap(sc)
        self.emit(depth, f"with Tally({self.texpr(sc)}, {n}) as {tl}:")
        self.emit(depth + 1, f"{tl}.t = {tl}.t + {self.texpr(sc)}")
        self._maybe_break_stmt(sc, depth + 1)
        if r.random() < 0.5:
            self._body(sc, depth + 1, in_loop, True)
        if n != "0" and r.random() < 0.6:
            self.emit(depth + 1, f"if {self._pycond(sc)}:")
            self.emit(depth + 2, "raise ValueError(\"tally\", k)")
        self._maybe_exit(sc, depth + 1, in_loop)
        self.merge(sc, self._snap(sc), before)
        self.assign_t(sc, v, depth, f"{tl}.t * 2.0 + {self.tvar(sc)}")

    def _with_ret_state(self, sc, depth, in_loop, in_try):
        # The return value is computed before __exit__ runs (which changes what it reads).
        c = self.fresh("c")
        self.emit(depth, self.r.choice([f"with Cm({self.r.randint(0, 3)}) as {c}:",
                                        f"with MGR as {c}:"]))
        self._body(sc, depth + 1, in_loop, in_try, 0, 1)
        self.emit(depth + 1, f"if {self._pycond(sc)}:")
        outs = sorted(sc["t"])
        self.emit(depth + 2, f"return ({self.r.choice(outs)} * {c}.exited, {c}.entered, "
                             f"{c}.exited, len(LOG))")

    def _arr_dtypes(self, sc, depth, in_loop, in_try):
        # Items added as they are (NumPy scalars: their dtype and overflow are observable).
        r = self.r
        arr, s, v = r.choice(["F32", "BIG", "U8", "FLAGS"]), self.fresh("s"), self.fresh("i")
        self.emit(depth, f"{s} = {r.choice(['0', '0.0', 'k'])}")
        self.emit(depth, f"for {v} in {arr}:")
        self.emit(depth + 1, f"{s} = {s} + {v}{r.choice(['', ' * 2', ' - k'])}")
        self.emit(depth, f"LOG.append(({s}, type({s}).__name__, {arr}[0] + {arr}[-1]))")
        self.assign_t(sc, self.fresh("v"), depth, f"{self.texpr(sc)} * float({s} % 7)")

    def _arr_views(self, sc, depth, in_loop, in_try):
        # Views and columns of the constants.
        r = self.r
        acc, v = self.fresh("v"), self.fresh("row")
        self.assign_t(sc, acc, depth, self.texpr(sc))
        if r.random() < 0.5:
            self.emit(depth, f"for {v} in {r.choice(['ARR2.T', 'ARR2[::-1]', 'ARR2I.T'])}:")
            self.emit(depth + 1, f"{acc} = {acc} + Tensor({v}).sum() * 0.5")
        else:
            seq = r.choice(["ARR[::-1]", "ARR[1:]", "ARR2[:, 1]", "MUT[::2]", "np.flip(IARR)"])
            self.emit(depth, f"for {v} in {seq}:")
            self.emit(depth + 1, f"{acc} = {acc} * 0.5 + float({v})")

    def _arr_rowstore(self, sc, depth, in_loop, in_try):
        # Rows are views: stores through them change ARR2.
        r = self.r
        acc, row = self.fresh("v"), self.fresh("row")
        self.assign_t(sc, acc, depth, self.texpr(sc))
        if r.random() < 0.25:
            self.emit(depth, f"list(ARR2)[{r.randint(0, 1)}][k % 3] = {self.sexpr(sc)}")
        else:
            self.emit(depth, f"for {row} in ARR2:")
            self.emit(depth + 1, r.choice([f"{row}[k % 3] = {self.sexpr(sc)}",
                                           f"{row} += {self.sexpr(sc)}",
                                           f"{row}.fill({self.sexpr(sc)})"]))
            if r.random() < 0.3:
                self.emit(depth + 1, f"LOG.append(float({row}.sum()))")
        self._maybe_break_stmt(sc, depth)
        self.emit(depth, f"{acc} = {acc} + Tensor(ARR2)")

    def _arr_held(self, sc, depth, in_loop, in_try):
        # Arrays in a dict and in an attribute, replaced or stored into, then iterated.
        r = self.r
        where = r.choice(['ARRS["a"]', "HOLDER.arr"])
        self.emit(depth, r.choice([f"{where} = {where} * k", f"{where}[0] = {self.sexpr(sc)}",
                                   f"{where} = np.array([k, {self.svar(sc)}])"]))
        self._maybe_break_stmt(sc, depth)
        s, v = self.fresh("s"), self.fresh("i")
        self.emit(depth, f"{s} = 0.0")
        self.emit(depth, f"for {v} in {where}:")
        self.emit(depth + 1, f"{s} = {s} * 2 + float({v})")
        self._scale_by_scalar(sc, depth, s)

    def _arr_live(self, sc, depth, in_loop, in_try):
        # Stores into an array while a loop or an iterator over it is live: later items are
        # read after the store.
        r = self.r
        s, i, v = self.fresh("s"), self.fresh("i"), self.fresh("i")
        if r.random() < 0.3:
            it = self.fresh("it")
            self.emit(depth, f"{it} = iter(MUT)")
            self.emit(depth, f"{s} = float(next({it}))")
            self.emit(depth, f"MUT[1] = {self.sexpr(sc)}")
            self.emit(depth, f"{s} = {s} * 2 + float(next({it}))")
        else:
            self.emit(depth, f"{s} = 0.0")
            self.emit(depth, f"for {i}, {v} in enumerate(MUT):")
            self.emit(depth + 1, f"{s} = {s} * 2 + float({v})")
            self.emit(depth + 1, f"MUT[({i} + 1) % 3] = float({v}) * 2 + k")
        self._scale_by_scalar(sc, depth, s)
