"""The "flow" feature's map() and filter() forms and its exception forms (see flow.py), a mixin
of Flow: map and filter with lambdas, module-level helpers and builtins, over several
iterables, over a list mutated before they are consumed, partly consumed by next(), with side
effects whose order counts; exception objects built and read (args, str, isinstance,
attributes, identity), raised under conditions on Python values, caught in the function (user
exception classes too), saved past their except clause, try/except/else, try/finally and
raise ... from in an except clause."""


class FlowCalls:
    """Uses Flow's helpers (_pycond, _cond, _body, _maybe_exit, _maybe_break_stmt, _ret,
    _scale_by_scalar, _snap) and Gen's r, fresh, emit, bind, merge, texpr, sexpr, svar,
    assign_t."""

    # -- map and filter
    def _map_sum(self, sc, depth, in_loop, in_try):
        r = self.r
        fn = r.choice([f"lambda t: t * {round(r.uniform(-2, 2), 2)}", "twice",
                       "lambda t: ops.relu(t) + 1.0"])
        items = ", ".join(self.texpr(sc) for _ in range(r.randint(1, 3)))
        seq = r.choice([f"[{items}]", f"({items},)"])
        self.assign_t(sc, self.fresh("v"), depth, f"sum(map({fn}, {seq}))")

    def _map_list(self, sc, depth, in_loop, in_try):
        r = self.r
        lst = self.fresh("l")
        a, b, c, d = (self.texpr(sc) for _ in range(4))
        self.emit(depth, f"{lst} = " + r.choice([
            f"list(map(helper, [{a}, {b}], [{c}, {d}]))",
            f"list(map(shift, [{a}, {b}, {c}], ({self.sexpr(sc)}, 1.0)))",
            f"list(map(lambda p, q: p * q, ({a}, {b}), [{c}, {d}]))",
            f"list(map(ops.add, [{a}, {b}], [{c}, {d}]))"]))
        self.bind(sc, "l", lst)

    def _filter_nums(self, sc, depth, in_loop, in_try):
        r = self.r
        p, s = self.fresh("p"), self.fresh("s")
        self.emit(depth, f"{p} = tuple(filter(" + r.choice([
            "lambda v: v > 1", "positive", "None", "lambda v: v % 2 == 0"]) +
            f", [1, 2, 3, k, {self.svar(sc)} - 2, 0]))")
        if r.random() < 0.5:
            self.emit(depth, f"LOG.append({p})")
        self.emit(depth, f"{s} = len({p}) + sum({p})")
        self.bind(sc, "s", s)

    def _map_abs(self, sc, depth, in_loop, in_try):
        r = self.r
        if r.random() < 0.6:
            lst = self.fresh("l")
            self.emit(depth, f"{lst} = list(map(abs, ({self.texpr(sc)}, {self.texpr(sc)})))")
            self.bind(sc, "l", lst)
        else:
            self.emit(depth, f"LOG.append(list(map(abs, (k - 3, -1.5, {self.svar(sc)}))))")

    def _map_mutated(self, sc, depth, in_loop, in_try):
        # The map reads the list lazily: what is stored before it is consumed counts.
        r = self.r
        lst, m = self.fresh("l"), self.fresh("m")
        self.emit(depth, f"{lst} = [{self.texpr(sc)}, {self.texpr(sc)}]")
        self.emit(depth, f"{m} = map({r.choice(['twice', 'lambda t: t - 1.0', 'ops.relu'])}, "
                         f"{lst})")
        self.emit(depth, r.choice([f"{lst}.append({self.texpr(sc)})",
                                   f"{lst}[0] = {self.texpr(sc)}",
                                   f"mutate({lst}, {self.texpr(sc)})",
                                   f"{lst}.pop()"]))
        self.assign_t(sc, self.fresh("v"), depth, f"sum({m}, {self.tvar(sc)} * 0.0)")

    def _map_next(self, sc, depth, in_loop, in_try):
        r = self.r
        m, first, rest = self.fresh("m"), self.fresh("v"), self.fresh("l")
        if r.random() < 0.6:
            self.emit(depth, f"{m} = map({r.choice(['lambda t: t + 1.0', 'twice', 'unk'])}, "
                             f"[{self.texpr(sc)}, {self.texpr(sc)}, {self.texpr(sc)}])")
            self.assign_t(sc, first, depth, f"next({m})")
            self._maybe_break_stmt(sc, depth)
            self.emit(depth, f"{rest} = list({m})")
            self.bind(sc, "l", rest)
            self.assign_t(sc, self.fresh("v"), depth, f"{first} + {rest}[-1]")
        else:
            s = self.fresh("s")
            self.emit(depth, f"{m} = filter(positive, [0, k, -1, 2, {self.svar(sc)}])")
            self.emit(depth, f"{s} = next({m}, -5)")
            self.emit(depth, f"LOG.append(({s}, list({m}), list({m})))")
            self.bind(sc, "s", s)

    def _filter_tensors(self, sc, depth, in_loop, in_try):
        r = self.r
        fn = r.choice(["big", "lambda t: float(t.mean()) < 0.2", "lambda t: t.shape[0] == 2"])
        items = ", ".join(self.texpr(sc) for _ in range(3))
        self.assign_t(sc, self.fresh("v"), depth,
                      f"sum(filter({fn}, [{items}]), {self.tvar(sc)} * 0.0)")

    def _map_brk(self, sc, depth, in_loop, in_try):
        # The mapped function breaks the graph.
        r = self.r
        if r.random() < 0.6:
            self.assign_t(sc, self.fresh("v"), depth,
                          f"sum(map(unk, [{self.texpr(sc)}, {self.texpr(sc)}]))")
        else:
            s = self.fresh("s")
            self.emit(depth, f"{s} = sum(map(note, [1, k, {self.svar(sc)}]))")
            self.bind(sc, "s", s)

    def _map_misc(self, sc, depth, in_loop, in_try):
        r = self.r
        if r.random() < 0.4:
            # A lambda over a local (prog gets a cell).
            s = self.svar(sc)
            self.assign_t(sc, self.fresh("v"), depth,
                          f"list(map(lambda t: t * {s}, [{self.texpr(sc)}]))[0]")
            return
        self.emit(depth, "LOG.append(" + r.choice([
            "list(map(str, (k, 1.5, 'a')))", "list(map(len, ['ab', 'c', '']))",
            "dict(map(lambda i: (i, i * k), range(3)))", "list(map(pow, [2, 3], [k, 2]))",
            "tuple(map(int, ARR))", "sorted(filter(None, (k, 0, 2, 1)))"]) + ")")

    def _map_arr(self, sc, depth, in_loop, in_try):
        r = self.r
        how = r.randrange(3)
        if how == 0:
            self.emit(depth, f"LOG.append(list(map(float, {r.choice(['ARR', 'IARR', 'MUT'])})))")
        elif how == 1:
            t = self.texpr(sc)
            self.assign_t(sc, self.fresh("v"), depth,
                          f"sum(map(lambda v: {t} * float(v), ARR), {self.tvar(sc)})")
        else:
            acc, a, b = self.fresh("v"), self.fresh("i"), self.fresh("i")
            self.assign_t(sc, acc, depth, self.texpr(sc))
            self.emit(depth, f"for {a}, {b} in zip(IARR, map(twice, [{self.texpr(sc)}, "
                             f"{self.texpr(sc)}])):")
            self.emit(depth + 1, f"{acc} = {acc} + {b} * int({a})")

    def _map_lazy(self, sc, depth, in_loop, in_try):
        # map and filter call their function when consumed: the side effects' order counts.
        r = self.r
        m = self.fresh("m")
        items = f"[{self.texpr(sc)}, {self.texpr(sc)}]"
        if r.random() < 0.6:
            self.emit(depth, f"{m} = map(lambda t: LOG.append(('map', t.shape)) or t * 2.0, "
                             f"{items})")
        else:
            self.emit(depth, f"{m} = filter(lambda t: LOG.append(('filter', len(LOG))) is None, "
                             f"{items})")
        self.emit(depth, "LOG.append('between')")
        self._maybe_break_stmt(sc, depth)
        how = r.randrange(3)
        if how == 0:
            self.assign_t(sc, self.fresh("v"), depth, f"sum({m})")
        elif how == 1:
            lst = self.fresh("l")
            self.emit(depth, f"{lst} = list({m})")
            self.bind(sc, "l", lst)
        else:
            v = self.fresh("v")
            self.assign_t(sc, v, depth, f"next({m})")
            self.emit(depth, "LOG.append('after next')")
            self.emit(depth, f"{v} = {v} + sum({m}, {v} * 0.0)")

    def _map_shared(self, sc, depth, in_loop, in_try):
        # map over several iterables stops at the shortest; an item of the longer one read
        # before that is lost. The rest of a shared iterator is read afterwards.
        r = self.r
        it, rest = self.fresh("it"), self.fresh("l")
        self.emit(depth, f"{it} = iter([{self.texpr(sc)}, {self.texpr(sc)}, {self.texpr(sc)}])")
        fn = r.choice(["helper", "lambda p, q: p * q", "shift"])
        other = r.choice([f"[{self.texpr(sc)}]", f"({self.sexpr(sc)},)", "[1.0, 2.0]"])
        if fn != "shift" and not other.startswith("["):
            other = f"[{self.texpr(sc)}]"
        if fn == "shift":
            other = r.choice(["[1.0]", f"({self.sexpr(sc)},)", "(0.5, 2.0)"])
        lst = self.fresh("l")
        self.emit(depth, f"{lst} = list(map({fn}, {it}, {other}))")
        self.emit(depth, f"{rest} = list({it})")
        self.emit(depth, f"LOG.append((len({lst}), len({rest})))")
        self.bind(sc, "l", lst)
        self.bind(sc, "l", rest)

    # -- exception objects
    def _exc_obj(self, sc, depth, in_loop, in_try):
        r = self.r
        e = self.fresh("e")
        how = r.randrange(4)
        if how == 3:
            self.emit(depth, f"{e} = RuntimeError({self.texpr(sc)}, k)")
            self.assign_t(sc, self.fresh("v"), depth,
                          f"{e}.args[0] * (len({e}.args) + {e}.args[1])")
            return
        make = r.choice([f'ValueError("m", {self.svar(sc)})', "KeyError(k)",
                         'IndexError("at %d" % k)', 'TypeError("t", 1, 2.5)'])
        self.emit(depth, f"{e} = {make}")
        if how == 0:
            self.emit(depth, f"LOG.append(({e}.args, len({e}.args), str({e}), "
                             f"isinstance({e}, Exception), type({e}).__name__))")
        elif how == 1:
            s = self.fresh("s")
            self.emit(depth, f"{s} = len({e}.args) + (2 if isinstance({e}, LookupError) else 1)")
            self._scale_by_scalar(sc, depth, s)
        else:
            self.emit(depth, f"LOG.append({e})")
            if r.random() < 0.5:
                self.emit(depth, f"if {self._pycond(sc)}:")
                self.emit(depth + 1, f"raise {e}")

    def _exc_raise(self, sc, depth, in_loop, in_try):
        r = self.r
        self.emit(depth, f"if {self._pycond(sc)}:")
        self.emit(depth + 1, "raise " + r.choice([
            "ValueError(\"flow\", k)", f"KeyError({self.svar(sc)})", "IndexError(f\"at {k}\")",
            "RuntimeError()", f"TypeError(\"t%d\" % k, {self.svar(sc)})"]))

    def _exc_caught(self, sc, depth, in_loop, in_try):
        r = self.r
        s = self.fresh("s")
        exc = r.choice(["KeyError", "ValueError", "LookupError"])
        raised = "KeyError" if exc == "LookupError" else exc
        self.emit(depth, f"{s} = {r.randint(0, 2)}")
        self.bind(sc, "s", s)
        before = self._snap(sc)
        self.emit(depth, "try:")
        self._body(sc, depth + 1, in_loop, True, 0, 2)
        self.emit(depth + 1, f"if {self._cond(sc)}:")
        extra = r.choice(["", ', "x"'])
        self.emit(depth + 2, f"raise {raised}(k{extra})")
        self._maybe_break_stmt(sc, depth + 1)
        after = self._snap(sc)
        self.emit(depth, f"except {exc} as err:")
        self.emit(depth + 1, f"{s} = {s} + len(err.args)")
        if r.random() < 0.5:
            self.emit(depth + 1, r.choice(["LOG.append(err.args)", "LOG.append(str(err))",
                                           "LOG.append(err)", "note(type(err).__name__)"]))
        self.merge(sc, after, before)

    def _exc_else(self, sc, depth, in_loop, in_try):
        before = self._snap(sc)
        self.emit(depth, "try:")
        self._body(sc, depth + 1, in_loop, True)
        self.emit(depth, "except (KeyError, IndexError) as err:")
        self.emit(depth + 1, "LOG.append(type(err).__name__)")
        if self.r.random() < 0.6:
            self.emit(depth, "else:")
            self.emit(depth + 1, "LOG.append(\"else\")")
            self._maybe_break_stmt(sc, depth + 1)
        self.merge(sc, self._snap(sc), before)

    def _exc_finally(self, sc, depth, in_loop, in_try):
        r = self.r
        self.emit(depth, "try:")
        self._maybe_break_stmt(sc, depth + 1)
        self._body(sc, depth + 1, in_loop, True)
        self._maybe_exit(sc, depth + 1, in_loop)
        if r.random() < 0.3:
            self.emit(depth + 1, f"if {self._pycond(sc)}:")
            self.emit(depth + 2, self._ret(sc))
        self.emit(depth, "finally:")
        self.emit(depth + 1, r.choice(["LOG.append((\"fin\", k))", "note(\"fin\")",
                                       "EXITS.append(len(LOG))"]))

    def _exc_chain(self, sc, depth, in_loop, in_try):
        # Raising in an except clause (from the caught exception), under a condition.
        self.emit(depth, "try:")
        self.emit(depth + 1, f"raise KeyError({self.svar(sc)})")
        self.emit(depth, "except KeyError as err:")
        self.emit(depth + 1, "LOG.append(err.args)")
        self.emit(depth + 1, f"if {self._pycond(sc)}:")
        self.emit(depth + 2, f"raise RuntimeError(\"chained\", k) from "
                             f"{self.r.choice(['err', 'None'])}")

    def _exc_gone(self, sc, depth, in_loop, in_try):
        # The name of an except clause is unbound after it.
        s = self.fresh("s")
        self.emit(depth, "try:")
        self.emit(depth + 1, f"raise ValueError({self.svar(sc)})")
        self.emit(depth, "except ValueError as err:")
        self.emit(depth + 1, f"{s} = len(err.args)")
        self.bind(sc, "s", s)
        self.emit(depth, "try:")
        self.emit(depth + 1, "LOG.append(err)")
        self.emit(depth, "except NameError as gone:")
        self.emit(depth + 1, "LOG.append(type(gone).__name__)")

    def _exc_unpack(self, sc, depth, in_loop, in_try):
        e, a, b = self.fresh("e"), self.fresh("s"), self.fresh("s")
        self.emit(depth, f"{e} = {self.r.choice(['ValueError', 'KeyError'])}(\"u\", k)")
        self.emit(depth, f"{a}, {b} = {e}.args")
        self.emit(depth, f"LOG.append(({a}, {b}, {e}.args == (\"u\", k), repr({e}), "
                         f"isinstance({e}, (KeyError, IndexError)), "
                         f"issubclass(type({e}), LookupError)))")
        self.bind(sc, "s", b)

    def _exc_user(self, sc, depth, in_loop, in_try):
        # A user exception class: raised under a condition, caught or not; its attribute.
        r = self.r
        s = self.fresh("s")
        self.emit(depth, f"{s} = 0")
        self.bind(sc, "s", s)
        if r.random() < 0.7:
            before = self._snap(sc)
            self.emit(depth, "try:")
            self.emit(depth + 1, f"if {self._pycond(sc)}:")
            self.emit(depth + 2, f"raise FlowError({self.svar(sc)})")
            self._maybe_break_stmt(sc, depth + 1)
            self.merge(sc, self._snap(sc), before)
            self.emit(depth, f"except {r.choice(['FlowError', 'Exception'])} as err:")
            self.emit(depth + 1, f"{s} = err.n + len(err.args)")
            self.emit(depth + 1, r.choice(["LOG.append((str(err), err.args, err.n))",
                                           "LOG.append(err)", "err.add_note('noted')",
                                           "LOG.append(isinstance(err, FlowError))"]))
        else:
            self.emit(depth, f"if {self._pycond(sc)}:")
            self.emit(depth + 1, f"raise FlowError({self.svar(sc)})")

    def _exc_ident(self, sc, depth, in_loop, in_try):
        # The caught exception is the object raised; attributes set on it.
        e = self.fresh("e")
        self.emit(depth, f"{e} = {self.r.choice(['ValueError', 'RuntimeError'])}(\"id\", k)")
        self.emit(depth, f"{e}.extra = {self.sexpr(sc)}")
        self.emit(depth, "try:")
        self.emit(depth + 1, f"if {self._pycond(sc)}:")
        self.emit(depth + 2, f"raise {e}")
        self.emit(depth + 1, "LOG.append('not raised')")
        self.emit(depth, "except Exception as err:")
        self.emit(depth + 1, f"LOG.append((err is {e}, err.extra, err.args))")

    def _exc_saved(self, sc, depth, in_loop, in_try):
        # The caught exception kept past its except clause, then logged and read.
        saved = self.fresh("e")
        self.emit(depth, f"{saved} = None")
        before = self._snap(sc)
        self.emit(depth, "try:")
        self._body(sc, depth + 1, in_loop, True, 0, 1)
        self.emit(depth + 1, f"if {self._pycond(sc)}:")
        self.emit(depth + 2, f"raise {self.r.choice(['ValueError', 'KeyError'])}(\"saved\", k)")
        self.merge(sc, self._snap(sc), before)
        self.emit(depth, "except (ValueError, KeyError) as err:")
        self.emit(depth + 1, f"{saved} = err")
        self._maybe_break_stmt(sc, depth)
        self.emit(depth, f"LOG.append({saved})")
        self.emit(depth, f"if {saved} is not None:")
        self.emit(depth + 1, f"LOG.append(({saved}.args, {saved}.__traceback__ is None, "
                             f"type({saved}.__context__).__name__))")
