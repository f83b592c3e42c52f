"""Resume functions as bytecode round trips.

A resume function is the original code object behind a prologue (restore the value stack,
unbind the locals unbound at the break, jump to the break's offset). It must decode with
`dis`, map every original instruction to its original line and positions (the prologue to
none), keep the names, constants and flags of the original, and behave as the original from
that offset on.

Resume code objects made by graph breaks are taken from where Python can see them: the
frames of tracebacks raised inside a resume function (and the bridge frame that called it,
which holds the arguments it was called with). Every plain function of a few standard-library
modules is round-tripped directly through `pijit._C._make_resume_code(code, offset_in_code_units,
stack_null, unbound)` (at offset 0 with an empty stack, and at the start of each line for
structure), and through what the rest of pijit exposes: the decoder and the abstract
interpreter (`pijit._C._capture`), jit(mode="PIJit") on sample inputs, and real graph breaks in
colorsys's functions called with tensors. The tests that need `_make_resume_code` skip when
the extension does not have it.
"""
import colorsys
import dis
import fractions
import importlib
import inspect
import json
import re
import shlex
import statistics
import string
import textwrap
import sys
import types

import numpy as np
import pytest

import pijit as ms
from pijit import _C, ops
from jit_testutil import _quiet_numpy  # noqa: F401 (autouse fixture)
from jit_testutil import pijit
from pijit_testutil import assert_same_result

STDLIB_MODULES = ["textwrap", "json.encoder", "json.decoder", "json", "string", "colorsys",
                  "fractions", "statistics", "shlex"]

PROLOGUE_OPS = {"COPY_FREE_VARS", "RESUME", "DELETE_FAST", "LOAD_FAST", "PUSH_NULL",
                "JUMP_FORWARD", "EXTENDED_ARG"}


def T(a, dtype=np.float32):
    return ms.Tensor(np.asarray(a, dtype=dtype))


# ---- harvesting resume functions --------------------------------------------------------------

class Grab(LookupError):
    """Raised inside a resume function, as `raise Grab from None`: capture does not follow
    `raise ... from`, so the resume function runs as a Python frame (no graph, no bridge)."""


def harvest(jf, *args):
    """Calls jitted `jf` (which raises Grab inside a resume function) and returns
    (resume code, the arguments it was called with: every local of the original, None
    where unbound, then the values of the stack after the breaking instruction)."""
    calls = []

    def profile(frame, event, arg):
        if event == "call" and "<resume@" in frame.f_code.co_qualname:
            code = frame.f_code
            calls.append((code, [frame.f_locals.get(n) for n in code.co_varnames[:code.co_argcount]]))

    sys.setprofile(profile)
    try:
        with pytest.raises(Grab) as info:
            jf(*args)
    finally:
        sys.setprofile(None)
    frames = []
    tb = info.value.__traceback__
    while tb:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    resume = [f for f in frames if "<resume@" in f.f_code.co_qualname]
    assert resume, "no resume function ran as a frame"
    code = resume[-1].f_code
    called = [a for c, a in calls if c is code]
    assert called, "the resume function that raised was not seen starting"
    return code, called[-1]


def resume_offset(code):
    m = re.search(r"<resume@(\d+)>$", code.co_qualname)
    assert m, code.co_qualname
    return int(m.group(1))


def prologue_bytes(resume, original):
    return len(resume.co_code) - len(original.co_code)


def check_resume_code(resume, original):
    """Structure, names, lines and positions of a resume code against its original."""
    p = prologue_bytes(resume, original)
    assert p > 0 and p % 2 == 0
    # The prologue: only the instructions that rebuild the frame, ending in the jump.
    instrs = list(dis.get_instructions(resume))
    pro = [i for i in instrs if i.offset < p]
    body = [i for i in instrs if i.offset >= p]
    assert {i.opname for i in pro} <= PROLOGUE_OPS, [i.opname for i in pro]
    jump = [i for i in pro if i.opname == "JUMP_FORWARD"]
    assert len(jump) == 1 and jump[0] is pro[-1]
    assert jump[0].argval == p + resume_offset(resume)
    assert any(i.offset == resume_offset(resume) for i in dis.get_instructions(original))
    # The body: the original instructions, same arguments (closure slots renumbered so that
    # they still name the same variables), same positions.
    want = list(dis.get_instructions(original))
    jumps = set(dis.hasjrel) | set(dis.hasjabs)

    def target(i, shift):
        return i.argval - shift if i.opcode in jumps else i.argval

    def name(i):  # 3.12: loads of locals the resume function unbinds are checked loads
        return "LOAD_FAST" if i.opname == "LOAD_FAST_CHECK" else i.opname
    assert [(i.offset - p, name(i), target(i, p), i.positions) for i in body] == \
           [(i.offset, name(i), target(i, 0), i.positions) for i in want]
    # co_positions / co_lines: nothing for the prologue, the original's for the rest.
    positions = list(resume.co_positions())
    assert all(pos == (None, None, None, None) for pos in positions[:p // 2])
    assert positions[p // 2:] == list(original.co_positions())
    # Per code unit: co_lines merges neighbouring ranges of one line, which on 3.12 joins the
    # prologue's "no line" with an original that starts without one (COPY_FREE_VARS).
    def unit_lines(code):
        return [line for start, end, line in code.co_lines() for _ in range(start, end, 2)]
    lines = unit_lines(resume)
    assert all(line is None for line in lines[:p // 2])
    assert lines[p // 2:] == unit_lines(original)
    # Names and metadata.
    nstack = sum(n.startswith("___stack") for n in resume.co_varnames)
    nloc = original.co_nlocals
    assert resume.co_varnames[:nloc] == original.co_varnames
    assert resume.co_varnames[nloc:] == tuple(f"___stack{i}" for i in range(nstack))
    assert resume.co_argcount == nloc + nstack and resume.co_nlocals == nloc + nstack
    assert resume.co_kwonlyargcount == 0 and resume.co_posonlyargcount == 0
    assert resume.co_freevars == original.co_freevars and resume.co_cellvars == ()
    for attr in ("co_name", "co_filename", "co_firstlineno", "co_consts", "co_names"):
        assert getattr(resume, attr) == getattr(original, attr), attr
    assert resume.co_qualname.startswith(original.co_qualname + ".<resume@")
    assert resume.co_flags == original.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    assert resume.co_stacksize >= original.co_stacksize
    # The exception table: every range and handler moved by the prologue.
    table = [(e.start - p, e.end - p, e.target - p, e.depth, e.lasti)
             for e in dis._parse_exception_table(resume)]
    assert table == [(e.start, e.end, e.target, e.depth, e.lasti)
                     for e in dis._parse_exception_table(original)]
    # pijit's own decoder reads it: every instruction but EXTENDED_ARG prefixes.
    closure = tuple(types.CellType(None) for _ in resume.co_freevars) or None
    fn = types.FunctionType(resume, {"__builtins__": __builtins__}, None, None, closure)
    info = _C._capture(fn, [None] * resume.co_argcount)
    # try/with bodies are simulated too (capture never takes an exception path).
    assert info["instructions"] == sum(i.opname != "EXTENDED_ARG" for i in instrs)


# ---- templates: one kind of break each, then `raise Grab` in the resume function --------------

class Obj:
    pass


class WithProperty:
    @property
    def scale(self):
        # A getter capture cannot inline (it breaks the graph): the LOAD_ATTR breaks.
        ms.graph_break()
        return 2.5


def _half_plus_one(t):
    return t * 0.5 + 1.0


def _scale_shift(t, scale=1.0, *, shift=0.0):
    return t * scale + shift


class _Opaque:
    def half_plus_one(self, t):
        return _half_plus_one(t)

    def scale_shift(self, t, scale=1.0, *, shift=0.0):
        return _scale_shift(t, scale, shift=shift)


# Bound methods held as values: capture does not call into them, so calling them breaks the
# graph.
opaque = _Opaque().half_plus_one
opaque_kw = _Opaque().scale_shift
# print at a graph break: capture records a plain print as an effect (no break); print's bound
# __call__ is a C callable it does not look into, so the graph breaks at its call.
show = print.__call__


def t_store_attr(x, o, grab):
    y = x * 2.0
    o.a = [y]  # STORE_ATTR (of a list: not replayed): empty stack after it
    z = y + 1.0
    if grab:
        raise Grab from None
    return z * 3.0, o.a


def t_print_statement(x, o, grab):
    y = x * 2.0
    show("statement")  # CALL show, then POP_TOP in the resume function
    z = y + 1.0
    if grab:
        raise Grab from None
    return z - x


def t_value_on_stack(x, o, grab):
    y = x * 2.0
    z = y * 3.0 + opaque(x)  # y * 3.0 waits on the stack
    if grab:
        raise Grab from None
    return z, y


def t_null_on_stack(x, o, grab):
    y = x * 2.0
    z = ops.add(y, opaque(x))  # NULL, ops.add, y wait on the stack
    if grab:
        raise Grab from None
    return z


def t_keywords(x, o, grab):
    y = x * 2.0
    z = opaque_kw(y, 2.0, shift=1.5)  # KW_NAMES before the CALL
    if grab:
        raise Grab from None
    return z + y


def t_unbound_local(x, o, grab):
    y = x * 2.0
    if o is None:
        w = y
    show("unbound w")
    if grab:
        raise Grab from None
    return y, w  # noqa: F821 - UnboundLocalError when o is not None, on purpose


def t_tensor_branch(x, o, grab):
    y = x * 2.0
    if y.sum() > 0:  # POP_JUMP on a tensor: two resume functions
        z = y + 1.0
    else:
        z = y - 1.0
    if grab:
        raise Grab from None
    return z


def t_float_branch(x, o, grab):
    y = x * 2.0
    s = float(y.sum())
    z = y * 2.0 if s > 0 else y
    if grab:
        raise Grab from None
    return z, s


def t_property(x, o, grab):
    y = x * 2.0
    z = y * o.scale  # LOAD_ATTR of a property
    if grab:
        raise Grab from None
    return z


G = 0


def t_store_global(x, o, grab):
    global G
    y = x * 2.0
    G = [5]  # a list is not replayed: STORE_GLOBAL breaks
    z = y * G[0]
    if grab:
        raise Grab from None
    return z


def make_closure_template(k):
    def t_closure(x, o, grab):
        y = x * k
        z = y * 3.0 + opaque(x * k)  # stack values shift the closure slots
        if grab:
            raise Grab from None
        return z + k, k
    return t_closure


def generated_template(name, body, y, result):
    """A template too large to write out: `body`, then y = `y`, a break at opaque() and the
    `result`."""
    src = (f"def {name}(x, o, grab):\n" + body +
           f"    y = {y}\n"
           "    z = y * 3.0 + opaque(x)\n"
           "    if grab:\n"
           "        raise Grab from None\n"
           f"    return {result}\n")
    ns = dict(globals())
    exec(compile(src, f"{__file__}:{name}", "exec"), ns)
    return ns[name]


def long_template():
    body = "".join(f"    x = x + {i}.0\n" for i in range(150))
    return generated_template("t_long", body, "x * 2.0", "z")


def wide_template():
    body = "".join(f"    v{i} = {i}.5\n" for i in range(270))
    return generated_template("t_wide", body, "x * v269", "z + v1")


def X():
    return T(np.arange(6).reshape(2, 3) - 2.25)


TEMPLATES = {
    "store_attr": (t_store_attr, lambda: (X(), Obj())),
    "print_statement": (t_print_statement, lambda: (X(), Obj())),
    "value_on_stack": (t_value_on_stack, lambda: (X(), Obj())),
    "null_on_stack": (t_null_on_stack, lambda: (X(), Obj())),
    "keywords": (t_keywords, lambda: (X(), Obj())),
    "unbound_local": (t_unbound_local, lambda: (X(), Obj())),
    "bound_local": (t_unbound_local, lambda: (X(), None)),
    "tensor_branch_true": (t_tensor_branch, lambda: (X(), Obj())),
    "tensor_branch_false": (t_tensor_branch, lambda: (-X() - 5.0, Obj())),
    "float_branch": (t_float_branch, lambda: (X(), Obj())),
    "property": (t_property, lambda: (X(), WithProperty())),
    "store_global": (t_store_global, lambda: (X(), Obj())),
    "closure": (make_closure_template(T([1.0, -2.0, 0.5])), lambda: (X(), Obj())),
    "long": (long_template(), lambda: (X(), Obj())),
    "wide": (wide_template(), lambda: (X(), Obj())),
}


def outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except Exception as e:  # noqa: BLE001
        return ("raise", type(e), str(e))


@pytest.mark.parametrize("name", TEMPLATES)
def test_resume_code_structure_lines_and_positions(name, capsys):
    fn, make = TEMPLATES[name]
    jf = pijit(fn)
    code, _ = harvest(jf, *make(), True)
    check_resume_code(code, fn.__code__)


@pytest.mark.parametrize("name", TEMPLATES)
def test_resume_code_behaves_as_the_original_from_its_offset(name, capsys):
    fn, make = TEMPLATES[name]
    jf = pijit(fn)
    code, args = harvest(jf, *make(), True)
    resume = types.FunctionType(code, fn.__globals__, code.co_name, None, fn.__closure__)
    grab = code.co_varnames.index("grab")
    # With the arguments its bridge passed: it raises where the original raises.
    with pytest.raises(Grab):
        resume(*args)
    # The same state without `grab`: what the original returns (or raises) on these inputs.
    args[grab] = False
    inputs = make()
    assert_same_outcome(outcome(resume, *args), outcome(fn, *inputs, False))
    # And the jitted function agrees too.
    assert_same_outcome(outcome(jf, *make(), False), outcome(fn, *make(), False))


def assert_same_outcome(got, want):
    assert got[0] == want[0], (got, want)
    if want[0] == "raise":
        assert got[1:] == want[1:]
    else:
        assert_same_result(got[1], want[1])


def test_both_ways_of_a_tensor_branch_resume_at_different_offsets(capsys):
    fn = t_tensor_branch
    jf = pijit(fn)
    taken, _ = harvest(jf, X(), Obj(), True)
    other, _ = harvest(jf, -X() - 5.0, Obj(), True)
    assert resume_offset(taken) != resume_offset(other)
    assert ms.get_code_extra(jf)["resume_functions"] == 2
    # Both start at an instruction of the original, right after the jump or at its target.
    instrs = list(dis.get_instructions(fn.__code__))
    at = next(k for k, i in enumerate(instrs) if i.opname.startswith("POP_JUMP"))
    assert {resume_offset(taken), resume_offset(other)} == {instrs[at + 1].offset, instrs[at].argval}


def test_resume_codes_are_made_once_per_break(capsys):
    fn, make = TEMPLATES["value_on_stack"]
    jf = pijit(fn)
    first, _ = harvest(jf, *make(), True)
    again, _ = harvest(jf, *make(), True)
    assert first is again
    assert ms.get_code_extra(jf)["resume_functions"] == 1


# ---- standard library: decoder, capture, jit on sample inputs ----------------------------------

def plain_functions(modname):
    """(qualified name, function) of the plain functions of a module: module-level functions
    and methods of its classes, without cell variables, not generators or coroutines."""
    mod = importlib.import_module(modname)
    out = {}

    def consider(fn):
        if not inspect.isfunction(fn) or fn.__module__ != mod.__name__:
            return
        c = fn.__code__
        if c.co_cellvars or c.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE |
                                          inspect.CO_ASYNC_GENERATOR):
            return
        out[f"{modname}.{fn.__qualname__}"] = fn

    for v in list(vars(mod).values()):
        consider(v)
        if isinstance(v, type) and v.__module__ == mod.__name__:
            for m in vars(v).values():
                if isinstance(m, (staticmethod, classmethod)):
                    m = m.__func__
                if isinstance(m, property):
                    m = m.fget
                consider(m)
    return sorted(out.items())


STDLIB_FUNCTIONS = [item for m in STDLIB_MODULES for item in plain_functions(m)]


def test_stdlib_modules_have_plain_functions():
    assert len(STDLIB_FUNCTIONS) > 100
    for m in STDLIB_MODULES:
        assert plain_functions(m), m


@pytest.mark.parametrize("qualname,fn", STDLIB_FUNCTIONS, ids=[q for q, _ in STDLIB_FUNCTIONS])
def test_stdlib_function_decodes_like_dis(qualname, fn):
    code = fn.__code__
    nargs = code.co_argcount + code.co_kwonlyargcount
    # The parameter slots: None for each named parameter, then an empty *args tuple and an
    # empty **kwargs dict where the function has them.
    slots = [None] * nargs + [()] * bool(code.co_flags & inspect.CO_VARARGS) + \
        [{}] * bool(code.co_flags & inspect.CO_VARKEYWORDS)
    info = _C._capture(fn, slots)
    want = [i for i in dis.get_instructions(code) if i.opname != "EXTENDED_ARG"]
    assert info["instructions"] == len(want)
    if info["reason"] is not None:
        # The reason names a line of this function or of a function it inlines.
        assert info["reason"]["line"] > 0 and info["reason"]["file"]
        if info["reason"]["file"] != code.co_filename:
            assert info["reason"]["file"] == fractions.__file__ or info["reason"]["file"]


def sample_calls():
    """(id, callable, args, kwargs) on which stdlib functions are compared jitted vs eager."""
    text = "  Hello world,\n    this is   indented text\n  with two lines\n"
    frac = fractions.Fraction(3, 7)
    return [
        ("textwrap.dedent", textwrap.dedent, (text,), {}),
        ("textwrap.indent", textwrap.indent, (text, "> "), {}),
        ("textwrap.indent_predicate", textwrap.indent, (text, "+"), {"predicate": str.strip}),
        ("textwrap.fill", textwrap.fill, ("word " * 30,), {"width": 21}),
        ("textwrap.shorten", textwrap.shorten, ("Hello  world, this is long",), {"width": 15}),
        ("textwrap.TextWrapper._split",
         textwrap.TextWrapper._split, (textwrap.TextWrapper(), "a-b c--d e"), {}),
        ("json.dumps", json.dumps, ({"a": [1, 2.5, None, True], "b": "x\u00e9"},), {}),
        ("json.dumps_indent", json.dumps, ([1, {"k": "v"}],), {"indent": 2, "sort_keys": True}),
        ("json.loads", json.loads, ('{"a": [1, 2.5, null, true], "b": "x\\u00e9"}',), {}),
        ("json.decoder.py_scanstring", json.decoder.py_scanstring, ('"abc\\n" tail', 1), {}),
        ("json.encoder.py_encode_basestring", json.encoder.py_encode_basestring,
         ("q\"\n\u2028",), {}),
        ("json.encoder.py_encode_basestring_ascii", json.encoder.py_encode_basestring_ascii,
         ("q\"\n\u00e9",), {}),
        ("string.capwords", string.capwords, ("hello   big world",), {}),
        ("string.capwords_sep", string.capwords, ("a-b-c",), {"sep": "-"}),
        ("string.Template.substitute", string.Template("$a and ${b}").substitute,
         ({"a": 1, "b": 2},), {}),
        ("string.Formatter.vformat", string.Formatter().vformat, ("{0}-{x:>4}", (1,), {"x": 2}),
         {}),
        ("colorsys.rgb_to_hsv", colorsys.rgb_to_hsv, (0.2, 0.4, 0.6), {}),
        ("colorsys.hsv_to_rgb", colorsys.hsv_to_rgb, (0.3, 0.5, 0.7), {}),
        ("colorsys.rgb_to_hls", colorsys.rgb_to_hls, (0.9, 0.1, 0.5), {}),
        ("colorsys.hls_to_rgb", colorsys.hls_to_rgb, (0.9, 0.1, 0.5), {}),
        ("colorsys.rgb_to_yiq", colorsys.rgb_to_yiq, (0.9, 0.1, 0.5), {}),
        ("colorsys.yiq_to_rgb", colorsys.yiq_to_rgb, (0.5, 0.4, -0.3), {}),
        ("fractions.Fraction.__add__", fractions.Fraction.__add__, (frac, fractions.Fraction(1, 3)),
         {}),
        ("fractions.Fraction.limit_denominator", fractions.Fraction.limit_denominator,
         (fractions.Fraction(355, 113) + frac, 10), {}),
        ("fractions.Fraction.__round__", fractions.Fraction.__round__, (frac, 2), {}),
        ("fractions.Fraction.__floordiv__", fractions.Fraction.__floordiv__, (frac, 2), {}),
        ("statistics.mean", statistics.mean, ([1, 2, 3, 4.5],), {}),
        ("statistics.median", statistics.median, ([5, 1, 3, 2],), {}),
        ("statistics.pstdev", statistics.pstdev, ([1.5, 2.5, 2.5, 2.75, 3.25, 4.75],), {}),
        ("statistics.mode_error", statistics.mode, ([],), {}),
        ("shlex.split", shlex.split, ("a 'b c' \"d e\" f\\ g",), {}),
        ("shlex.quote", shlex.quote, ("it's a test",), {}),
        ("shlex.join", shlex.join, (["a b", "c", "it's"],), {}),
    ]


SAMPLES = sample_calls()


def as_plain_function_call(sample):
    """(function, args, kwargs) of a sample; a bound method becomes its function with the
    instance as the first argument."""
    _, fn, args, kwargs = sample
    if isinstance(fn, types.MethodType):
        return fn.__func__, (fn.__self__,) + tuple(args), kwargs
    return fn, args, kwargs


def assert_equal_outcome_of_the_same_type(got, want):
    """The same exception, or equal plain (non-tensor) results of the same type."""
    assert got[0] == want[0]
    if want[0] == "raise":
        assert got[1:] == want[1:]
    else:
        assert got[1] == want[1] and type(got[1]) is type(want[1])


@pytest.mark.parametrize("sample", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_stdlib_function_jitted_gives_the_eager_result(sample):
    base, args, kwargs = as_plain_function_call(sample)
    want = outcome(lambda: base(*args, **kwargs))
    jf = pijit(base)
    for _ in range(2):
        assert_equal_outcome_of_the_same_type(outcome(lambda: jf(*args, **kwargs)), want)


COLORSYS = ["rgb_to_yiq", "yiq_to_rgb", "rgb_to_hls", "hls_to_rgb", "rgb_to_hsv", "hsv_to_rgb"]
COLOR_INPUTS = [(0.2, 0.4, 0.6), (0.9, 0.1, 0.5), (0.5, 0.5, 0.5), (0.0, 1.0, 0.3),
                (0.95, 0.05, 0.0), (0.1, 0.9, 0.8)]


@pytest.mark.parametrize("name", COLORSYS)
def test_colorsys_with_tensors_breaks_on_data_and_matches_eager(name):
    """colorsys's functions branch on their arguments; with 1-element tensors those branches
    are graph breaks inside standard-library code, resumed in generated functions."""
    fn = getattr(colorsys, name)
    jf = pijit(fn)
    for _ in range(2):
        for vals in COLOR_INPUTS:
            args = [T([v], np.float64) for v in vals]
            assert_same_outcome(outcome(jf, *args), outcome(fn, *args))
    s = ms.get_code_extra(jf)
    if name != "rgb_to_yiq":  # the only one without branches
        assert s["total_break_count"] > 0 and s["resume_functions"] > 0
    else:
        assert s["total_break_count"] == 0 and s["graph_count"] == 1


# ---- the direct round trip, once pijit._C exposes MakeResumeCode --------------------------------

make_resume_code = getattr(_C, "_make_resume_code", None)
NEEDS_BINDING = pytest.mark.skipif(
    make_resume_code is None,
    reason="pijit._C._make_resume_code(code, offset, stack_null, unbound) is not exposed "
           "(bytecode::MakeResumeCode has no Python binding in this build)")


ROUND_TRIP = [(q, fn) for q, fn in STDLIB_FUNCTIONS if not fn.__code__.co_freevars]


def unbound_slots(code):
    """Every local slot but the parameters: unbound at the start of a call."""
    nargs = code.co_argcount + code.co_kwonlyargcount + \
        bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return list(range(nargs, code.co_nlocals))


@NEEDS_BINDING
@pytest.mark.parametrize("qualname,fn", ROUND_TRIP, ids=[q for q, _ in ROUND_TRIP])
def test_stdlib_resume_at_offset_zero_round_trips(qualname, fn):
    code = fn.__code__
    resume = make_resume_code(code, 0, [], unbound_slots(code))
    assert resume.co_qualname == f"{code.co_qualname}.<resume@0>"
    check_resume_code(resume, code)


@NEEDS_BINDING
@pytest.mark.parametrize("qualname,fn", ROUND_TRIP, ids=[q for q, _ in ROUND_TRIP])
def test_stdlib_resume_at_line_starts_round_trips(qualname, fn):
    """Structure, lines and positions of resume codes at the first instruction of lines (the
    stack there is not known to be empty: these are not run)."""
    code = fn.__code__
    starts = sorted({start for start, _, line in code.co_lines() if line is not None})
    instr = {i.offset for i in dis.get_instructions(code)}
    starts = [s for s in starts if s in instr and s > 0]
    step = max(1, len(starts) // 8)
    for offset in starts[::step]:
        resume = make_resume_code(code, offset // 2, [], [])
        check_resume_code(resume, code)


@NEEDS_BINDING
def test_make_resume_code_rebuilds_stack_values_and_nulls():
    def f(a, b):
        c = a + b
        return c * 2

    code = f.__code__
    ret = next(i for i in dis.get_instructions(code) if i.opname == "RETURN_VALUE")
    # Resume at RETURN_VALUE with one value on the stack: returns that value.
    resume = make_resume_code(code, ret.offset // 2, [False], [])
    assert resume.co_varnames == code.co_varnames + ("___stack0",)
    check_resume_code(resume, code)
    g = types.FunctionType(resume, f.__globals__)
    assert g(1, 2, 3, "on the stack") == "on the stack"
    # A NULL below a value: PUSH_NULL in the prologue, no parameter for it.
    resume = make_resume_code(code, ret.offset // 2, [True, False], [2])
    assert "PUSH_NULL" in [i.opname for i in dis.get_instructions(resume)]
    assert resume.co_argcount == code.co_nlocals + 1
    assert types.FunctionType(resume, f.__globals__)(1, 2, None, 42) == 42


@NEEDS_BINDING
def test_make_resume_code_unbinds_locals():
    def f(a):
        b = 1
        return b * 2 + a  # b loaded alone (3.13 pairs the loads of `b + a`)

    code = f.__code__
    ret_line = [i for i in dis.get_instructions(code) if i.opname == "LOAD_FAST" and
                i.argval == "b"][0]
    resume = make_resume_code(code, ret_line.offset // 2, [], [1])
    with pytest.raises(UnboundLocalError, match="'b'"):
        types.FunctionType(resume, f.__globals__)(1, 5)
    resume = make_resume_code(code, ret_line.offset // 2, [], [])
    assert types.FunctionType(resume, f.__globals__)(1, 5) == 11


@NEEDS_BINDING
def test_make_resume_code_refuses_cell_variables():
    def f(a):
        def g():
            return a
        return g

    with pytest.raises(ValueError, match="closures"):
        make_resume_code(f.__code__, 0, [], [])


@NEEDS_BINDING
@pytest.mark.parametrize("sample", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_stdlib_resume_at_offset_zero_behaves_as_the_original(sample):
    base, args, kwargs = as_plain_function_call(sample)
    code = base.__code__
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) or code.co_freevars or \
            code.co_cellvars:
        pytest.skip("*args/**kwargs or closures: not a plain function")
    bound = inspect.signature(base).bind(*args, **kwargs)
    bound.apply_defaults()
    nargs = code.co_argcount + code.co_kwonlyargcount
    values = [bound.arguments[n] for n in code.co_varnames[:nargs]]
    resume = make_resume_code(code, 0, [], unbound_slots(code))
    rfn = types.FunctionType(resume, base.__globals__)
    # Keyword-only parameters are positional in the resume function, like every local.
    got = outcome(rfn, *values, *([None] * (code.co_nlocals - nargs)))
    assert_equal_outcome_of_the_same_type(got, outcome(lambda: base(*args, **kwargs)))
