"""The "flow" feature's generator forms (see flow.py), a mixin of Flow: `for` loops,
comprehensions and next() over generators, which a capturing JIT steps an item at a time (the
generator's frame runs to its next yield for each item, so the loop body runs between items as
in Python). Sources: module-level generator functions of flow_prelude.py (parameters, while
loops and returns, tensors, numbers and pairs, logging, try/finally, yield from, a graph break,
raising), generator functions defined in the function (parameters, while loops, returns, graph
breaks, try/finally, free variables of the function) and generator expressions (over ranges,
tuples of tensors, arrays and other generators; reading the function's locals lazily). Loop
bodies mix in the ordinary statements (graph breaks there) and change what the generator reads
next: a list it indexes, an attribute of an object it reads, a cell it closes over (rebound by
the function or through nonlocal in a helper). Loops left early with the rest taken by list(),
sum(), next() with a default or a second loop; next() interleaved with loops; nested loops;
comprehensions; a generator consumed twice (empty the second time); zip/enumerate over
generators; a generator raising into its consumer's try."""


class FlowGenerators:
    """Uses Flow's helpers (_pycond, _cond, _body, _maybe_exit, _maybe_break_stmt, _ret,
    _snap) and Gen's r, fresh, emit, bind, _break_if, merge, texpr, sexpr, svar, tvar,
    assign_t, iterating."""

    GEN_FORMS = (["gen_loop"] * 3 + ["gen_local"] * 3 + ["gen_expr"] * 2 +
                 ["gen_mut_list"] * 2 + ["gen_mut_attr"] * 2 + ["gen_mut_cell"] * 2 +
                 ["gen_break_rest"] * 3 + ["gen_next"] * 2 +
                 ["gen_nested", "gen_comp", "gen_comp", "gen_twice", "gen_effect", "gen_effect",
                  "gen_from", "gen_zip", "gen_zip", "gen_raise", "gen_lazy", "gen_reduce"])

    # -- helpers
    def _gen_n(self):
        """A small item count (k varies between the harness's calls: sometimes 0 items)."""
        r = self.r
        return r.choice(["k", "k % 3", "k % 3 + 1", str(r.randint(0, 3)), str(r.randint(1, 3)),
                         "k + 1"])

    def _gen_local_def(self, sc, depth, kind):
        """Defines a generator function in the function; returns its name. kind 't': it takes
        (t, n) and yields tensors; 's': it takes (n) and yields numbers. Sometimes a graph break,
        a return inside its loop, a try/finally, or a free variable of the function."""
        r = self.r
        g = self.fresh("g")
        free = None
        if r.random() < 0.3:
            free = self.tvar(sc) if kind == "t" else self.svar(sc)
        args = "t, n" if kind == "t" else "n"
        self.emit(depth, f"def {g}({args}):")
        d = depth + 1
        fin = r.random() < 0.2
        if fin:
            self.emit(d, "try:")
            d += 1
        how = r.randrange(3)
        if how == 0:
            self.emit(d, "i = 0")
            self.emit(d, "while i < n:")
            loop = d + 1
        else:
            self.emit(d, "for i in range(n):")
            loop = d + 1
        brk = r.random()
        if brk < 0.2:
            self.emit(loop, "note(i)")
        elif brk < 0.3:
            self.emit(loop, f"print(\"{g}\", i)")
        elif brk < 0.4:
            self.emit(loop, f"LOG.append((\"{g}\", i))")
        if r.random() < 0.3:
            self.emit(loop, f"if i == {r.randint(1, 3)}:")
            self.emit(loop + 1, "return")
        if kind == "t":
            item = r.choice(["t * (i + 0.5)", "t - float(i)", "ops.relu(t) * i + t"])
            if free:
                item = f"{item} + {free}"
        else:
            item = r.choice(["i * 2", "i + 0.5", "i * i - 1"])
            if free:
                item = f"{item} + {free}"
        self.emit(loop, f"yield {item}")
        if how == 0:
            self.emit(loop, "i += 1")
        if fin:
            self.emit(d - 1, "finally:")
            self.emit(d, f"EXITS.append((\"{g} finally\", n))")
        elif r.random() < 0.3:
            self.emit(d, "return n")
        return g

    def _gen_source(self, sc, depth, kind=None):
        """A generator of tensors ('t'), numbers ('s') or (number, tensor) pairs ('p'), made
        now (a call of a generator function or a generator expression); definitions it needs
        are emitted first. Returns (expression, kind)."""
        r = self.r
        if kind is None:
            kind = r.choice(["t", "t", "s", "s", "p"])
        n = self._gen_n()
        if kind == "p":
            return r.choice([f"pairs({self.texpr(sc)}, {n})",
                             f"((i, {self.tvar(sc)} * i) for i in range({n}))",
                             f"enumerate(ramp({self.texpr(sc)}, {n}))"]), "p"
        how = r.randrange(6)
        if how == 0:
            return self._gen_local_def(sc, depth, kind) + (
                f"({self.texpr(sc)}, {n})" if kind == "t" else f"({n})"), kind
        if kind == "t":
            if how == 1:  # a generator expression: its element reads the locals lazily
                return r.choice([f"({self.tvar(sc)} * i for i in range({n}))",
                                 f"(t * 2.0 for t in ({self.texpr(sc)}, {self.texpr(sc)}))",
                                 f"(t + 1.0 for t in ramp({self.texpr(sc)}, {n}))",
                                 f"({self.tvar(sc)} * float(v) for v in ARR)"]), kind
            return r.choice([f"ramp({self.texpr(sc)}, {n})", f"ramp({self.tvar(sc)}, {n}, 0.5)",
                             f"noisy({self.texpr(sc)}, {n})", f"guarded({self.texpr(sc)}, {n})",
                             f"early({self.texpr(sc)}, {n})", f"delegate_t({self.tvar(sc)}, {n})",
                             f"by_attr(KNOB, {self.texpr(sc)}, {n})"]), kind
        if how == 1:
            return r.choice([f"(i * i for i in range({n}))", "(float(v) for v in ARR)",
                             f"(v for v in countdown({n}) if v % 2)",
                             f"(i + {self.svar(sc)} for i in range({n}))"]), kind
        return r.choice([f"countdown({n})", f"logged({n})", f"delegate({n})",
                         f"countdown({n} + 0.5)"]), kind

    def _gen_use(self, sc, depth, acc, item, kind):
        """Uses one item in a loop body: acc (a tensor) takes it in."""
        r = self.r
        if kind == "t":
            self.emit(depth, r.choice([f"{acc} = {acc} + {item}",
                                       f"{acc} = {acc} * 0.5 + {item}",
                                       f"{acc} = ops.maximum({acc}, {item})"]))
        elif kind == "s":
            self.emit(depth, r.choice([f"{acc} = {acc} + {self.tvar(sc)} * {item}",
                                       f"{acc} = {acc} - {item}"]))
        else:
            self.emit(depth, f"{acc} = {acc} + {item}[1] * {item}[0]")

    def _gen_bind_item(self, sc, item, kind):
        if kind == "t":
            self.bind(sc, "t", item)
        elif kind == "s":
            self.bind(sc, "s", item)

    def _gen_loop_body(self, sc, depth, in_try, acc, item, kind, lo=0, hi=2):
        """The body of a loop over a generator: the item used, ordinary statements (breaks),
        sometimes a break or continue."""
        before = self._snap(sc)
        self._gen_bind_item(sc, item, kind)
        self._gen_use(sc, depth, acc, item, kind)
        self._maybe_break_stmt(sc, depth)
        self._body(sc, depth, True, in_try, lo, hi)
        self._maybe_exit(sc, depth, True)
        self.merge(sc, self._snap(sc), before)  # the body may not run (no items)

    def _gen_rest(self, sc, depth, g, kind):
        """Takes what is left of generator g."""
        r = self.r
        how = r.randrange(4)
        if how == 0:
            rest = self.fresh("r")
            self.emit(depth, f"{rest} = list({g})")
            self.emit(depth, f"LOG.append(len({rest}))")
            if kind == "t":
                self.emit(depth, f"if {rest}:")
                self.assign_t(sc, self.fresh("v"), depth + 1, f"{rest}[-1] * 2.0")
            elif kind == "s":
                self.emit(depth, f"LOG.append({rest})")
        elif how == 1:
            v = self.fresh("v")
            if kind == "t":
                self.assign_t(sc, v, depth, f"sum({g}, {self.tvar(sc)} * 0.0)")
            elif kind == "s":
                s = self.fresh("s")
                self.emit(depth, f"{s} = sum({g})")
                self.bind(sc, "s", s)
            else:
                self.emit(depth, f"LOG.append(sum(p[0] for p in {g}))")
        elif how == 2:
            v = self.fresh("v")
            if kind == "t":
                self.assign_t(sc, v, depth, f"next({g}, {self.tvar(sc)})")
            else:
                self.emit(depth, f"LOG.append(next({g}, -1))")
        else:
            i, acc = self.fresh("i"), self.fresh("v")
            self.assign_t(sc, acc, depth, self.texpr(sc))
            self.emit(depth, f"for {i} in {g}:")
            self._gen_use(sc, depth + 1, acc, i, kind)

    # -- forms
    def _gen_loop(self, sc, depth, in_loop, in_try):
        # A for loop over a generator; ordinary statements in its body.
        acc, item = self.fresh("v"), self.fresh("i")
        src, kind = self._gen_source(sc, depth)
        self.assign_t(sc, acc, depth, self.texpr(sc))
        self.emit(depth, f"for {item} in {src}:")
        self._gen_loop_body(sc, depth + 1, in_try, acc, item, kind, 1, 2)
        if self.r.random() < 0.3:
            self.emit(depth, f"LOG.append(({acc}.shape, len(EXITS)))")

    def _gen_local(self, sc, depth, in_loop, in_try):
        # A generator function defined here, looped over or consumed by a builtin.
        r = self.r
        kind = r.choice(["t", "s"])
        g = self._gen_local_def(sc, depth, kind)
        call = f"{g}({self.texpr(sc)}, {self._gen_n()})" if kind == "t" else \
            f"{g}({self._gen_n()})"
        if r.random() < 0.7:
            acc, item = self.fresh("v"), self.fresh("i")
            self.assign_t(sc, acc, depth, self.texpr(sc))
            self.emit(depth, f"for {item} in {call}:")
            self._gen_loop_body(sc, depth + 1, in_try, acc, item, kind, 0, 2)
        elif kind == "t":
            self.assign_t(sc, self.fresh("v"), depth,
                          r.choice([f"sum({call}, {self.tvar(sc)})",
                                    f"([t * 2.0 for t in {call}] or [{self.tvar(sc)}])[-1]"]))
        else:
            self.emit(depth, f"LOG.append({r.choice(['list', 'tuple', 'sum'])}({call}))")

    def _gen_expr(self, sc, depth, in_loop, in_try):
        # A generator expression whose element reads a local the loop body rebinds.
        r = self.r
        t, acc, item = self.fresh("v"), self.fresh("v"), self.fresh("i")
        self.assign_t(sc, t, depth, self.texpr(sc))
        self.assign_t(sc, acc, depth, self.texpr(sc) + " * 0.0")
        src = r.choice([f"({t} * float(i) for i in range({self._gen_n()}))",
                        f"({t} + u for u in ({self.texpr(sc)}, {self.texpr(sc)}))",
                        f"({t} * j for j in countdown({self._gen_n()}))"])
        self.emit(depth, f"for {item} in {src}:")
        before = self._snap(sc)
        self._gen_bind_item(sc, item, "t")
        self.emit(depth + 1, f"{acc} = {acc} + {item}")
        self.emit(depth + 1, r.choice([f"{t} = {t} * 0.5 + 1.0", f"{t} = -{t}",
                                       f"{t} = {t} + {acc}"]))
        self._maybe_break_stmt(sc, depth + 1)
        self._body(sc, depth + 1, True, in_try, 0, 1)
        self._maybe_exit(sc, depth + 1, True)
        self.merge(sc, self._snap(sc), before)

    def _gen_mut_list(self, sc, depth, in_loop, in_try):
        # The body appends to (or stores into) the list the generator indexes.
        r = self.r
        acc, item = self.fresh("v"), self.fresh("i")
        free = sorted(sc["l"] - self.iterating)
        if free and r.random() < 0.5:
            xs = r.choice(free)
        else:
            xs = self.fresh("l")
            self.emit(depth, f"{xs} = [{self.texpr(sc)}]")
            self.bind(sc, "l", xs)
        self.assign_t(sc, acc, depth, self.texpr(sc))
        cap = r.randint(2, 5)
        self.emit(depth, f"for {item} in reads({xs}{r.choice(['', f', {cap}'])}):")
        before = self._snap(sc)
        self._gen_bind_item(sc, item, "t")
        self.emit(depth + 1, f"{acc} = {acc} + {item}")
        how = r.randrange(3)
        if how == 0:
            self.emit(depth + 1, f"if len({xs}) < {cap}:")
            self.emit(depth + 2, f"{xs}.append({item} * 0.5 + {self.texpr(sc)})")
        elif how == 1:
            self.emit(depth + 1, f"{xs}[-1] = {item} + 1.0")
        else:
            self.emit(depth + 1, f"if len({xs}) < {cap}:")
            self.emit(depth + 2, f"mutate({xs}, {item} - 1.0)")
        self._maybe_break_stmt(sc, depth + 1)
        self._body(sc, depth + 1, True, in_try, 0, 1)
        self._maybe_exit(sc, depth + 1, True)
        self.merge(sc, self._snap(sc), before)
        self.emit(depth, f"LOG.append(len({xs}))")

    def _gen_mut_attr(self, sc, depth, in_loop, in_try):
        # The body changes the attribute the generator reads at its next step.
        r = self.r
        acc, item = self.fresh("v"), self.fresh("i")
        b = r.choice(["KNOB", "o", self.fresh("b")])
        if b not in ("KNOB", "o"):
            self.emit(depth, f"{b} = Obj()")
        if b != "KNOB" or r.random() < 0.5:
            self.emit(depth, f"{b}.step = {r.choice([self.sexpr(sc), '1.0', 'k'])}")
        self.assign_t(sc, acc, depth, self.texpr(sc))
        if r.random() < 0.7:
            src = f"by_attr({b}, {self.texpr(sc)}, {self._gen_n()})"
        else:
            src = f"({self.tvar(sc)} * {b}.step for _ in range({self._gen_n()}))"
        self.emit(depth, f"for {item} in {src}:")
        before = self._snap(sc)
        self._gen_bind_item(sc, item, "t")
        self.emit(depth + 1, f"{acc} = {acc} + {item}")
        self.emit(depth + 1, r.choice([f"{b}.step = {b}.step * -0.5 + k",
                                       f"{b}.step = {b}.step + 1",
                                       f"{b}.step = float({item}.sum())"]))
        self._maybe_break_stmt(sc, depth + 1)
        self._body(sc, depth + 1, True, in_try, 0, 1)
        self._maybe_exit(sc, depth + 1, True)
        self.merge(sc, self._snap(sc), before)
        self.emit(depth, f"LOG.append({b}.step)")

    def _gen_mut_cell(self, sc, depth, in_loop, in_try):
        # A generator closing over a local of the function, rebound between items (by the
        # function itself, or through nonlocal in a nested helper).
        r = self.r
        c, g, acc, item = self.fresh("c"), self.fresh("g"), self.fresh("v"), self.fresh("i")
        tensor = r.random() < 0.5
        self.emit(depth, f"{c} = {self.texpr(sc) if tensor else r.choice(['1.0', 'k', '2'])}")
        self.emit(depth, f"def {g}(n):")
        self.emit(depth + 1, "for i in range(n):")
        if r.random() < 0.3:
            self.emit(depth + 2, "note(i)")
        self.emit(depth + 2, f"yield {c} * (i + 1)")
        setter = None
        if r.random() < 0.5:
            setter = self.fresh("set")
            self.emit(depth, f"def {setter}(v):")
            self.emit(depth + 1, f"nonlocal {c}")
            self.emit(depth + 1, f"{c} = v")
        self.assign_t(sc, acc, depth, self.texpr(sc))
        self.emit(depth, f"for {item} in {g}({self._gen_n()}):")
        before = self._snap(sc)
        if tensor:
            self.emit(depth + 1, f"{acc} = {acc} + {item}")
            new = r.choice([f"{c} * 0.5 + 1.0", f"{item} - {c}", self.texpr(sc)])
        else:
            self.emit(depth + 1, f"{acc} = {acc} + {self.tvar(sc)} * {item}")
            new = r.choice([f"{c} + 1", f"{item} * -0.5", f"{c} * 2"])
        self._gen_bind_item(sc, item, "t" if tensor else "s")
        if setter:
            self.emit(depth + 1, f"{setter}({new})")
        else:
            self.emit(depth + 1, f"{c} = {new}")
        self._maybe_break_stmt(sc, depth + 1)
        self._body(sc, depth + 1, True, in_try, 0, 1)
        self._maybe_exit(sc, depth + 1, True)
        self.merge(sc, self._snap(sc), before)
        if tensor:
            self.assign_t(sc, self.fresh("v"), depth, f"{acc} + {c}")
        else:
            self.emit(depth, f"LOG.append({c})")

    def _gen_break_rest(self, sc, depth, in_loop, in_try):
        # A loop left early (a break under a condition), the rest taken afterwards.
        r = self.r
        g, acc, item = self.fresh("g"), self.fresh("v"), self.fresh("i")
        src, kind = self._gen_source(sc, depth)
        self.emit(depth, f"{g} = {src}")
        self.assign_t(sc, acc, depth, self.texpr(sc))
        self.emit(depth, f"for {item} in {g}:")
        before = self._snap(sc)
        self._gen_bind_item(sc, item, kind)
        self._gen_use(sc, depth + 1, acc, item, kind)
        self._maybe_break_stmt(sc, depth + 1)
        self._body(sc, depth + 1, True, in_try, 0, 1)
        cond = r.choice(["True", "k % 2 == 0", self._cond(sc)])
        if kind == "s":
            cond = r.choice([cond, f"{item} >= 1"])
        self._break_if(depth + 1, cond)
        self.merge(sc, self._snap(sc), before)
        self._maybe_break_stmt(sc, depth)
        self._gen_rest(sc, depth, g, kind)

    def _gen_next(self, sc, depth, in_loop, in_try):
        # next() before a loop and inside its body, over the same generator.
        r = self.r
        g, first, acc, item = self.fresh("g"), self.fresh("v"), self.fresh("v"), self.fresh("i")
        src, kind = self._gen_source(sc, depth, r.choice(["t", "t", "s"]))
        self.emit(depth, f"{g} = {src}")
        if kind == "t":
            self.assign_t(sc, first, depth, f"next({g}, {self.tvar(sc)} * 0.0)")
            self.assign_t(sc, acc, depth, f"{first} + {self.texpr(sc)}")
        else:
            s = self.fresh("s")
            self.emit(depth, f"{s} = next({g}, -2)")
            self.bind(sc, "s", s)
            self.assign_t(sc, acc, depth, f"{self.texpr(sc)} * {s}")
        self._maybe_break_stmt(sc, depth)
        self.emit(depth, f"for {item} in {g}:")
        before = self._snap(sc)
        self._gen_bind_item(sc, item, kind)
        self._gen_use(sc, depth + 1, acc, item, kind)
        if r.random() < 0.6:
            nxt = self.fresh("i")
            dflt = f"{self.tvar(sc)}" if kind == "t" else "0"
            self.emit(depth + 1, f"{nxt} = next({g}, {dflt})")
            self._gen_use(sc, depth + 1, acc, nxt, kind)
        self._maybe_break_stmt(sc, depth + 1)
        self._body(sc, depth + 1, True, in_try, 0, 1)
        self._maybe_exit(sc, depth + 1, True)
        self.merge(sc, self._snap(sc), before)
        self.emit(depth, f"LOG.append(next({g}, 'spent'))" if kind == "s" else
                  f"LOG.append(next({g}, None) is None)")

    def _gen_nested(self, sc, depth, in_loop, in_try):
        # A generator loop inside a generator loop (the inner one made per outer item).
        r = self.r
        a, b, acc = self.fresh("i"), self.fresh("i"), self.fresh("v")
        self.assign_t(sc, acc, depth, self.texpr(sc))
        outer = r.choice([f"countdown({r.randint(1, 3)})", f"logged({r.randint(1, 2)}, 'out')",
                          f"(j + 1 for j in range({self._gen_n()}))"])
        self.emit(depth, f"for {a} in {outer}:")
        before = self._snap(sc)
        self.bind(sc, "s", a)
        inner = r.choice([f"ramp({self.tvar(sc)}, {a})", f"countdown({a})",
                          f"early({self.tvar(sc)}, {a} + 1)", f"({a} * j for j in countdown({a}))"])
        kind = "s" if inner.startswith(("countdown", "(")) else "t"
        self.emit(depth + 1, f"for {b} in {inner}:")
        inner_before = self._snap(sc)
        self._gen_bind_item(sc, b, kind)
        self._gen_use(sc, depth + 2, acc, b, kind)
        self._maybe_break_stmt(sc, depth + 2)
        self._maybe_exit(sc, depth + 2, True)
        self.merge(sc, self._snap(sc), inner_before)
        if r.random() < 0.5:
            self._body(sc, depth + 1, True, in_try, 0, 1)
        self.merge(sc, self._snap(sc), before)

    def _gen_comp(self, sc, depth, in_loop, in_try):
        # Comprehensions over generators.
        r = self.r
        how = r.randrange(5)
        if how == 0:
            lst = self.fresh("l")
            src, _ = self._gen_source(sc, depth, "t")
            self.emit(depth, f"{lst} = [t * 2.0 for t in {src}]")
            self.emit(depth, f"if not {lst}:")
            self.emit(depth + 1, f"{lst}.append({self.texpr(sc)})")
            self.bind(sc, "l", lst)
        elif how == 1:
            src, _ = self._gen_source(sc, depth, "p")
            d = self.fresh("d")
            self.emit(depth, f"{d} = {{i: t for i, t in {src}}}")
            self.emit(depth, f"LOG.append(sorted({d}))")
            self.assign_t(sc, self.fresh("v"), depth,
                          f"{d}.get(0, {self.tvar(sc)}) + len({d})")
        elif how == 2:
            src, _ = self._gen_source(sc, depth, "s")
            self.emit(depth, f"LOG.append({r.choice(['sorted', 'set', 'list'])}"
                             f"(v * 2 for v in {src}))")
        elif how == 3:
            src, _ = self._gen_source(sc, depth, "t")
            self.assign_t(sc, self.fresh("v"), depth,
                          f"sum((t * 0.5 for t in {src}), {self.tvar(sc)})")
        else:
            s = self.fresh("s")
            src, _ = self._gen_source(sc, depth, "s")
            self.emit(depth, f"{s} = len([v for v in {src} if v > 0])")
            self.bind(sc, "s", s)

    def _gen_twice(self, sc, depth, in_loop, in_try):
        # A generator consumed twice: the second consumer gets nothing.
        r = self.r
        g, acc, item = self.fresh("g"), self.fresh("v"), self.fresh("i")
        src, kind = self._gen_source(sc, depth, r.choice(["t", "s"]))
        self.emit(depth, f"{g} = {src}")
        self.assign_t(sc, acc, depth, self.texpr(sc))
        if r.random() < 0.5:
            self.emit(depth, f"for {item} in {g}:")
            before = self._snap(sc)
            self._gen_bind_item(sc, item, kind)
            self._gen_use(sc, depth + 1, acc, item, kind)
            self._maybe_break_stmt(sc, depth + 1)
            self.merge(sc, self._snap(sc), before)
        else:
            first = self.fresh("r")
            self.emit(depth, f"{first} = list({g})")
            self.emit(depth, f"LOG.append(len({first}))")
        self._maybe_break_stmt(sc, depth)
        if r.random() < 0.5:
            self.emit(depth, f"LOG.append((list({g}), next({g}, 'empty')))")
        else:
            self.emit(depth, f"for {item} in {g}:")
            self.emit(depth + 1, "LOG.append('never')")

    def _gen_effect(self, sc, depth, in_loop, in_try):
        # Generators with effects (logging before each item, a finally): their order with the
        # body's effects counts; sometimes the loop is left early and the rest taken or not.
        r = self.r
        acc, item = self.fresh("v"), self.fresh("i")
        self.assign_t(sc, acc, depth, self.texpr(sc))
        if r.random() < 0.5:
            src, kind = f"logged({self._gen_n()}, {r.choice(['1', repr('e')])})", "s"
        else:
            src, kind = f"guarded({self.texpr(sc)}, {self._gen_n()})", "t"
        keep = r.random() < 0.5
        if keep:
            g = self.fresh("g")
            self.emit(depth, f"{g} = {src}")
            src = g
        self.emit(depth, f"for {item} in {src}:")
        before = self._snap(sc)
        self._gen_bind_item(sc, item, kind)
        self._gen_use(sc, depth + 1, acc, item, kind)
        self.emit(depth + 1, r.choice(["LOG.append('body')", "EXITS.append('body')",
                                       f"note({item})" if kind == "s" else "note('body')"]))
        self._maybe_break_stmt(sc, depth + 1)
        self._body(sc, depth + 1, True, in_try, 0, 1)
        if r.random() < 0.5:
            self._break_if(depth + 1, r.choice(["k % 2 == 1", "True", self._pycond(sc)]))
        self.merge(sc, self._snap(sc), before)
        self.emit(depth, "LOG.append(('after', len(EXITS)))")
        if keep and r.random() < 0.6:
            self._gen_rest(sc, depth, src, kind)
            self.emit(depth, "LOG.append(('rest', len(EXITS)))")

    def _gen_from(self, sc, depth, in_loop, in_try):
        # yield from (delegating generators).
        r = self.r
        acc, item = self.fresh("v"), self.fresh("i")
        self.assign_t(sc, acc, depth, self.texpr(sc))
        if r.random() < 0.5:
            src, kind = f"delegate({self._gen_n()})", "s"
        else:
            src, kind = f"delegate_t({self.texpr(sc)}, {self._gen_n()})", "t"
        self.emit(depth, f"for {item} in {src}:")
        self._gen_loop_body(sc, depth + 1, in_try, acc, item, kind, 0, 1)

    def _gen_zip(self, sc, depth, in_loop, in_try):
        # Generators passed to zip/enumerate in a loop (zip stops at the shortest, having read
        # an item of the longer ones first).
        r = self.r
        acc, a, b, i = self.fresh("v"), self.fresh("i"), self.fresh("i"), self.fresh("i")
        self.assign_t(sc, acc, depth, self.texpr(sc))
        ga, ka = self._gen_source(sc, depth, r.choice(["t", "s"]))
        gb, kb = self._gen_source(sc, depth, r.choice(["t", "s"]))
        keep = r.random() < 0.4
        if keep:
            g = self.fresh("g")
            self.emit(depth, f"{g} = {ga}")
            ga = g
        if r.random() < 0.5:
            self.emit(depth, f"for {i}, ({a}, {b}) in enumerate(zip({ga}, {gb})):")
            counter = True
        else:
            self.emit(depth, f"for {a}, {b} in zip({ga}, {gb}):")
            counter = False
        before = self._snap(sc)
        self._gen_bind_item(sc, a, ka)
        self._gen_bind_item(sc, b, kb)
        self._gen_use(sc, depth + 1, acc, a, ka)
        self._gen_use(sc, depth + 1, acc, b, kb)
        if counter:
            self.emit(depth + 1, f"{acc} = {acc} * ({i} + 1)")
        self._maybe_break_stmt(sc, depth + 1)
        self._body(sc, depth + 1, True, in_try, 0, 1)
        self._maybe_exit(sc, depth + 1, True)
        self.merge(sc, self._snap(sc), before)
        if keep:
            self._gen_rest(sc, depth, ga, ka)

    def _gen_raise(self, sc, depth, in_loop, in_try):
        # A generator raising into its consumer's loop, caught around it.
        r = self.r
        s, item = self.fresh("s"), self.fresh("i")
        self.emit(depth, f"{s} = 0")
        self.bind(sc, "s", s)
        before = self._snap(sc)
        self.emit(depth, "try:")
        self.emit(depth + 1, f"for {item} in raising({r.randint(1, 4)}, "
                             f"{r.choice(['k', '1', 'k % 2', '5'])}):")
        self.emit(depth + 2, f"{s} = {s} + {item}")
        self._maybe_break_stmt(sc, depth + 2)
        inner = self._snap(sc)
        self.bind(sc, "s", item)
        self._body(sc, depth + 2, True, True, 0, 1)
        self.merge(sc, self._snap(sc), inner)
        after = self._snap(sc)
        self.emit(depth, "except ValueError as err:")
        self.emit(depth + 1, f"LOG.append((err.args, {s}))")
        if r.random() < 0.4:
            self.emit(depth, "else:")
            self.emit(depth + 1, f"LOG.append(('no raise', {s}))")
        self.merge(sc, after, before)

    def _gen_lazy(self, sc, depth, in_loop, in_try):
        # A generator made, then what it reads changed before it is first stepped (a
        # generator expression's first iterable is read when it is made; the rest lazily).
        r = self.r
        g, lst, acc = self.fresh("g"), self.fresh("l"), self.fresh("v")
        self.emit(depth, f"{lst} = [{self.texpr(sc)}, {self.texpr(sc)}]")
        self.bind(sc, "l", lst)
        how = r.randrange(3)
        if how == 0:
            self.emit(depth, f"{g} = (t * 2.0 for t in {lst})")
        elif how == 1:
            self.emit(depth, f"{g} = reads({lst})")
        else:
            self.emit(depth, f"{g} = ({lst}[i] for i in range(len({lst})))")
        self.emit(depth, r.choice([f"{lst}.append({self.texpr(sc)})",
                                   f"{lst}[0] = {self.texpr(sc)}",
                                   f"{lst}.pop()", f"mutate({lst}, {self.texpr(sc)})"]))
        self._maybe_break_stmt(sc, depth)
        self.assign_t(sc, acc, depth, f"sum({g}, {self.tvar(sc)} * 0.0)")

    def _gen_reduce(self, sc, depth, in_loop, in_try):
        # A generator consumed whole by a builtin or taken one item by next() (no block).
        r = self.r
        how = r.randrange(4)
        if how == 0:
            s = self.fresh("s")
            self.emit(depth, f"{s} = " + r.choice([f"sum(countdown({self._gen_n()}))",
                                                   f"max(countdown(k + 1))",
                                                   f"len(list(delegate({self._gen_n()})))",
                                                   f"sum(i * 0.5 for i in countdown(k))"]))
            self.bind(sc, "s", s)
        elif how == 1:
            self.assign_t(sc, self.fresh("v"), depth,
                          f"sum(ramp({self.texpr(sc)}, {self._gen_n()}), {self.tvar(sc)})")
        elif how == 2:
            self.assign_t(sc, self.fresh("v"), depth,
                          f"next(ramp({self.texpr(sc)}, 3, 0.5)) + next(early({self.tvar(sc)}, "
                          f"{self._gen_n()}), {self.tvar(sc)})")
        else:
            self.emit(depth, f"LOG.append(next(countdown({self._gen_n()}), 'none'))")
