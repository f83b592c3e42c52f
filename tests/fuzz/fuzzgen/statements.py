"""The statements of generated programs, a mixin of `Gen` (generator.py): assignments, calls
pijit cannot capture (printing and logging helpers, keyword and nested calls, calls with values
on the stack, generators, comprehensions, .asnumpy()), side effects (the log, attributes,
globals, a dict, lists mutated through aliases, containers inside tuples), branches on
constants and on tensor values, loops, try/except, `with`, `del`, raises and objects whose
operators run Python code; and the bookkeeping of which names are bound on every path."""
from .program import FEATURES


class Statements:
    """Statement generation; uses Gen's random source `r`, names, expressions and `lines`."""

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
        self.bind(sc, "t", name)

    def stmt(self, sc, depth, in_loop, in_try):
        r = self.r
        kinds = ["assign"] * 6 + ["scalar", "unk", "note", "helper_brk", "log", "attr", "glob",
                                   "if_data", "if_truth", "if_const", "for", "try", "tuple",
                                   "list", "list_mut", "gen", "raise_cond", "stack_call",
                                   "kwcall", "nested", "print", "dict", "bool_ops", "for_list",
                                   "with", "comp", "del", "unk_kw", "asnumpy", "method_call",
                                   "box", "attr_read", "tuple_alias", "iter_rest", "descr",
                                   "local_store", "objects"]
        if "random" in FEATURES:
            kinds += ["rand_stmt"]
        if "made" in FEATURES:
            kinds += ["made"] * 8
        if "flow" in FEATURES:
            kinds += ["flow"] * 14
        if "ctl" in FEATURES and in_loop:
            kinds += ["loop_ctl"] * 2
        if "effects" in FEATURES:
            kinds += ["del_attr", "state_del", "state_view", "state_mut", "log_del", "glob_del",
                      "cell"] * 2 + ["state_alias", "state_helper", "state_loop", "del_try"]
            kinds += ["view_mut"] * 2
        kind = r.choice(kinds)
        if kind in self.EFFECTS:
            self.effect_stmt(kind, sc, depth)
            return
        if kind == "made":
            self.made_stmt(sc, depth)
            return
        if kind == "flow":
            self.flow_stmt(sc, depth, in_loop, in_try)
            return
        if kind == "assign":
            name = r.choice(sorted(sc["t"])) if r.random() < 0.3 else self.fresh("v")
            self.assign_t(sc, name, depth, self.texpr(sc))
        elif kind == "scalar":
            name = self.fresh("s")
            self.emit(depth, f"{name} = {self.sexpr(sc)}")
            self.bind(sc, "s", name)
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
            self.bind(sc, "l", name)
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
        elif kind == "iter_rest":
            self.iter_rest(sc, depth)
        elif kind == "descr":
            # staticmethod, classmethod and property, on the class and on an instance.
            name = self.fresh("v")
            form = r.choice([f"Tools.s({self.texpr(sc)}) + TOOLS.c({self.texpr(sc)}) * TOOLS.p",
                             f"TOOLS.s({self.texpr(sc)}) - Tools.c({self.texpr(sc)}) * Tools.k",
                             f"{self.texpr(sc)} * round(TOOLS.p + {self.sexpr(sc)}, 1)"])
            self.assign_t(sc, name, depth, form)
        elif kind == "objects":
            # A namedtuple and an object made here: fields, methods, attribute stores, and
            # sometimes a break while they are alive or the object logged (rebuilt).
            p, acc, name = self.fresh("p"), self.fresh("o"), self.fresh("v")
            self.emit(depth, f"{p} = Pair({self.texpr(sc)}, right={self.texpr(sc)})")
            self.emit(depth, f"{acc} = Acc({p}.left, k={self.sexpr(sc)})")
            self.emit(depth, f"{acc}.add({p}.right).add({self.texpr(sc)})")
            if r.random() < 0.3:
                self.emit(depth, f"note(type({acc}).__name__)")
            if r.random() < 0.3:
                self.emit(depth, f"LOG.append(({p}, {acc}.k))")
            self.assign_t(sc, name, depth, f"{acc}.total - {p}[0]")
        elif kind == "local_store":
            # Item stores into a list and a dict made here (dict(...) too).
            lst, dct, name = self.fresh("l"), self.fresh("d"), self.fresh("v")
            self.emit(depth, f"{lst} = [{self.texpr(sc)}, {self.texpr(sc)}]")
            self.emit(depth, f"{lst}[{r.choice([0, 1, -1])}] = {self.texpr(sc)}")
            self.emit(depth, f"{dct} = dict(a={self.texpr(sc)}, n={r.randint(1, 3)})")
            self.emit(depth, f"{dct}['a'] = {dct}['a'] * {dct}['n'] + {lst}[0]")
            self.assign_t(sc, name, depth, f"{dct}['a'] + {lst}[1] * float(pow(2, {dct}['n']))")
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

    def iter_rest(self, sc, depth):
        """A loop that leaves an iterator early (zip, enumerate, map, filter, reversed, a dict
        view's iterator, a user iterator), then a use of the rest of it (a second loop, list(),
        next(), any()), sometimes with a break inside the loop or before the use."""
        if depth > 2:
            return
        r = self.r
        it, item, acc = self.fresh("it"), self.fresh("i"), self.fresh("v")
        a, b, c = self.texpr(sc), self.texpr(sc), self.texpr(sc)
        maker, get = r.choice([
            (f"enumerate([{a}, {b}, {c}])", "{}[1]"),
            (f"zip([{a}, {b}, {c}], range(3))", "{}[0]"),
            (f"zip(enumerate([{a}, {b}, {c}]), [1, 2, 3, 4])", "{}[0][1]"),
            (f"enumerate(zip([{a}, {b}, {c}], 'xyz'))", "{}[1][0]"),
            (f"zip([{a}, {b}], [{c}, {a}, {b}])", "{}[1]"),
            (f"map(lambda t: t * 2.0, [{a}, {b}, {c}])", "{}"),
            (f"filter(lambda t: True, ({a}, {b}, {c}))", "{}"),
            (f"reversed([{a}, {b}, {c}])", "{}"),
            (f"iter({{'p': {a}, 'q': {b}, 'r': {c}}}.values())", "{}"),
            (f"Rows({a}, 3)", "{}"),
        ])
        self.emit(depth, f"{it} = {maker}")
        self.assign_t(sc, acc, depth, self.texpr(sc))
        self.emit(depth, f"for {item} in {it}:")
        self.emit(depth + 1, f"{acc} = {acc} + {get.format(item)}")
        if r.random() < 0.3:
            self.emit(depth + 1, f"note({acc}.shape[0])")
        cond = r.choice([f"float({get.format(item)}.sum()) > {round(r.uniform(-3, 3), 2)}",
                         f"{acc}.shape[0] > 1", "k % 2 == 0"])
        self._break_if(depth + 1, cond)
        if r.random() < 0.3:
            self.emit(depth, f"print(\"rest\", {acc}.shape, sep=\"|\")")
        how = r.randrange(4)
        if how == 0:
            self.emit(depth, f"for {item} in {it}:")
            self.emit(depth + 1, f"{acc} = {acc} * 0.5 + {get.format(item)}")
        elif how == 1:
            rest = self.fresh("r")
            self.emit(depth, f"{rest} = list({it})")
            self.emit(depth, f"LOG.append(len({rest}))")
            self.emit(depth, f"if {rest}:")
            self.emit(depth + 1, f"{acc} = {acc} - {get.format(rest + '[0]')}")
        elif how == 2:
            self.emit(depth, f"{item} = next({it}, None)")
            self.emit(depth, f"if {item} is not None:")
            self.emit(depth + 1, f"{acc} = {acc} + {get.format(item)} * 2.0")
        else:
            self.emit(depth, f"LOG.append(any(True for _ in {it}))")
            self.emit(depth, f"LOG.append(len(list({it})))")

    # -- deletions, closure cells and dict mutations (the "effects" feature)
    EFFECTS = frozenset(["del_attr", "state_del", "state_view", "state_mut", "log_del", "glob_del",
                         "cell", "state_alias", "state_helper", "state_loop", "del_try",
                         "view_mut"])

    def effect_stmt(self, kind, sc, depth):
        r = self.r
        key = repr(r.choice(["a", "b", "n"]))
        if kind == "del_attr":
            attr = repr(r.choice(["a", "b", "c"]))[1:-1]
            if r.random() < 0.85:
                self.emit(depth, f"if hasattr(o, {attr!r}):")
                depth += 1
            self.emit(depth, f"del o.{attr}")  # else: AttributeError, on purpose
        elif kind == "state_del":
            how = r.randrange(4)
            if how == 0:
                self.emit(depth, f"if {key} in STATE:")
                self.emit(depth + 1, f"del STATE[{key}]")
            elif how == 1:
                self.emit(depth, f"LOG.append(STATE.pop({key}, {self.sexpr(sc)}))")
            elif how == 2:
                self.emit(depth, f"if STATE:")
                self.emit(depth + 1, "LOG.append(STATE.popitem()[0])")
            else:
                self.emit(depth, f"del STATE[{key}]")  # may raise KeyError, on purpose
        elif kind == "state_view":
            # Tuples, numbers and bools are appended inside the graph (a list breaks it).
            form = r.choice(["tuple(STATE.keys())", "len(STATE)", f"{key} in STATE",
                             "tuple(kk for kk in STATE)", "tuple(STATE.items())",
                             "tuple(STATE.values())", f"STATE.get({key}, -1)", "bool(STATE)",
                             "[kk for kk in STATE]", "tuple(STATE)"])
            self.emit(depth, f"LOG.append({form})")
        elif kind == "state_mut":
            how = r.randrange(4)
            val = r.choice([self.texpr(sc), self.sexpr(sc)])
            if how == 0:
                self.emit(depth, f"LOG.append(STATE.setdefault({key}, {val}))")
            elif how == 1:
                self.emit(depth, f"STATE.update({key[1:-1]}={val}, m={self.sexpr(sc)})")
            elif how == 2:
                self.emit(depth, f"STATE[{key}] = {val}")
            else:
                self.emit(depth, f"STATE.clear()")
        elif kind == "log_del":
            idx = r.choice([0, -1, 1])
            if r.random() < 0.85:
                self.emit(depth, f"if len(LOG) > {abs(idx) if idx >= 0 else 0}:")
                depth += 1
            self.emit(depth, f"del LOG[{idx}]")  # else: IndexError, on purpose
        elif kind == "glob_del":
            self.uses_global = True
            self.emit(depth, "del G")
            if r.random() < 0.9:
                self.emit(depth, f"G = {r.choice(['k', str(r.randint(0, 3))])}")
            else:
                self.emit(depth, "note(G)")  # NameError, on purpose
        elif kind == "state_alias":
            alias = self.fresh("st")
            self.emit(depth, f"{alias} = STATE")
            self.emit(depth, f"{alias}[{key}] = {r.choice([self.texpr(sc), self.sexpr(sc)])}")
            self.emit(depth, f"LOG.append((tuple(STATE), len({alias}), {key} in STATE))")
        elif kind == "state_helper":
            # Inlined helpers of the effects prelude that mutate the dict or the object.
            call = r.choice([f"drop(STATE, {key})", f"put(STATE, {key}, {self.sexpr(sc)})",
                             f"unset(o, {key})", f"swap(STATE, {key}, 'm')"])
            self.emit(depth, f"LOG.append({call})")
        elif kind == "state_loop":
            if depth > 2:
                return
            kk = self.fresh("kk")
            live = r.random() < 0.3  # the dict itself: a mutation in the loop raises
            self.emit(depth, f"for {kk} in {'STATE' if live else 'list(STATE)'}:")
            how = r.randrange(4 if live else 3)
            if how == 3:
                self.emit(depth + 1, f"LOG.append(STATE.pop({kk}))")
                return
            if how == 0:
                self.emit(depth + 1, f"STATE[{kk}] = {self.sexpr(sc)}")
            elif how == 1:
                self.emit(depth + 1, f"if {kk} != {key}:")
                self.emit(depth + 2, f"del STATE[{kk}]")
            else:
                self.emit(depth + 1, f"LOG.append(({kk}, STATE.get({kk}, None) is None))")
        elif kind == "view_mut":
            # A view taken, the dict (STATE or one built here) mutated, the view read.
            target = r.choice(["STATE", "STATE", self.fresh("ld")])
            if target != "STATE":
                self.emit(depth, f"{target} = {{'a': {self.sexpr(sc)}, 'n': 1}}")
            elif r.random() < 0.8:
                self.emit(depth, f"STATE['v'] = {self.sexpr(sc)}")  # modelled from here
            view = self.fresh("vw")
            self.emit(depth, f"{view} = {target}.{r.choice(['keys', 'values', 'items'])}()")
            self.emit(depth, r.choice([f"{target}.update(z={self.sexpr(sc)})",
                                       f"{target}.pop('n', None)", f"{target}.clear()",
                                       f"{target}.setdefault('w', 1)", f"{target}[{key}] = 4"]))
            self.emit(depth, f"LOG.append(tuple({view}))")  # a tuple: appended in the graph
        elif kind == "del_try":
            if depth > 2:
                return
            self.emit(depth, "try:")
            self.emit(depth + 1, r.choice([f"del STATE[{key}]", "del o.b", "del LOG[5]",
                                           f"LOG.append(STATE.pop({key}))"]))
            self.emit(depth, "except (KeyError, AttributeError, IndexError) as e:")
            self.emit(depth + 1, "LOG.append(type(e).__name__)")
        elif kind == "cell":
            if self.shape == "closure" and r.random() < 0.6:
                # The counter in the enclosing function (nonlocal at the top of prog).
                self.emit(depth, f"cnt = cnt + {r.randint(1, 3)}")
                if r.random() < 0.5:
                    self.emit(depth, "LOG.append(('cnt', cnt))")
                return
            if r.random() < 0.7:
                # A counter in the closure of a module-level function (inlined: its cell is
                # the function's), read back by the harness.
                s = self.fresh("s")
                self.emit(depth, f"{s} = bump({r.choice([str(r.randint(1, 3)), self.svar(sc)])})")
                self.bind(sc, "s", s)
                return
            # A nested function over a local of prog (prog then has cells: its breaks run
            # the whole call eagerly).
            c, inc, s = self.fresh("c"), self.fresh("inc"), self.fresh("s")
            self.emit(depth, f"{c} = {r.randint(0, 3)}")
            self.emit(depth, f"def {inc}(d):")
            self.emit(depth + 1, f"nonlocal {c}")
            self.emit(depth + 1, f"{c} = {c} + d")
            self.emit(depth + 1, f"return {c}")
            self.emit(depth, f"{s} = {inc}({r.randint(1, 3)}) + {inc}({self.svar(sc)})")
            self.bind(sc, "s", s)

    @staticmethod
    def merge(sc, a, b):
        for kind in ("t", "s", "l"):
            both = a[kind] & b[kind]
            either = (a[kind] | b[kind] | a["maybe_" + kind] | b["maybe_" + kind])
            sc[kind] = both
            sc["maybe_" + kind] = either - both
