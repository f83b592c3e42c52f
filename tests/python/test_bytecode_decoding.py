"""The decoder's version-neutral instructions and the emitter's encoding of them.

`pijit._C._decode_bytecode(code)` gives the instructions the step handlers read: CPython
3.11's instructions with their 3.11 meaning, whatever the running interpreter (3.12's
LOAD_ATTR with the method bit is LOAD_METHOD, its COMPARE_OP argument has no branch mask,
its POP_JUMP_IF_* are 3.11's forward jumps, an exhausted FOR_ITER goes past END_FOR).
`pijit._C._encode_instructions` encodes neutral instructions for the running interpreter;
decoding then encoding every function of a few standard-library modules must give back the
interpreter's own bytecode.
"""
import dis
import importlib
import inspect
import sys
import types

import pytest

from pijit import _C

MODULES = ["textwrap", "json.encoder", "json.decoder", "string", "colorsys", "shlex",
           "fractions", "statistics", "dataclasses", "argparse"]


def functions_of(module_name):
    module = importlib.import_module(module_name)
    seen = []
    for _, obj in inspect.getmembers(module):
        if inspect.isfunction(obj) and obj.__module__ == module.__name__:
            seen.append(obj)
        elif inspect.isclass(obj) and obj.__module__ == module.__name__:
            seen.extend(v for v in vars(obj).values() if inspect.isfunction(v))
    return seen


def all_code(code):
    """The code object and those nested in its constants (lambdas, inner functions)."""
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from all_code(c)


def own_bytecode(code):
    """The interpreter's bytecode of `code` (inline caches zeroed), with 3.12's
    LOAD_FAST_CHECK as LOAD_FAST: the decoder reads both as LOAD_FAST, which is encoded back
    as the plain load."""
    raw = bytearray(code.co_code)
    check = dis.opmap.get("LOAD_FAST_CHECK")
    for ins in dis.get_instructions(code):  # dis lists EXTENDED_ARG units apart
        if ins.opcode == check:
            raw[ins.offset] = dis.opmap["LOAD_FAST"]
    return bytes(raw)


@pytest.mark.parametrize("module_name", MODULES)
def test_decoding_then_encoding_gives_the_interpreters_bytecode(module_name):
    checked = 0
    for fn in functions_of(module_name):
        for code in all_code(fn.__code__):
            instrs = _C._decode_bytecode(code)
            encoded = _C._encode_instructions([(name, arg) for _, name, arg, _ in instrs])
            assert encoded == own_bytecode(code), f"{code.co_qualname} ({module_name})"
            checked += 1
    assert checked >= 5


@pytest.mark.parametrize("module_name", MODULES)
def test_jump_targets_are_instructions(module_name):
    for fn in functions_of(module_name):
        for code in all_code(fn.__code__):
            instrs = _C._decode_bytecode(code)
            by_offset = {off: name for off, name, _, _ in instrs}
            for off, name, arg, target in instrs:
                if target < 0:
                    continue
                assert target in by_offset, (code.co_qualname, off, name)
                if name == "FOR_ITER":  # an exhausted loop goes past the loop's END_FOR
                    assert by_offset[target] != "END_FOR", (code.co_qualname, off)


def names(fn):
    return [(name, arg) for _, name, arg, _ in _C._decode_bytecode(fn.__code__)]


def test_attribute_and_method_loads():
    def f(a):
        return a.x, a.m()

    got = names(f)
    assert ("LOAD_ATTR", f.__code__.co_names.index("x")) in got
    assert ("LOAD_METHOD", f.__code__.co_names.index("m")) in got


def test_comparisons_keep_their_operator_only():
    def f(a, b):
        return a < b, a <= b, a == b, a != b, a > b, a >= b

    assert [arg for name, arg in names(f) if name == "COMPARE_OP"] == [0, 1, 2, 3, 4, 5]


def test_conditional_jumps_are_forward_jumps_and_loops_exit_past_end_for():
    def f(a, xs):
        for x in xs:
            if x is None:
                continue
            if not x:
                a = a + 1
        return +a, (*xs,)

    got = names(f)
    jumps = {n for n, _ in got if n.startswith("POP_JUMP")}
    assert jumps and all("FORWARD" in n or "BACKWARD" in n for n in jumps)
    assert ("UNARY_POSITIVE", 0) in got
    assert ("LIST_TO_TUPLE", 0) in got
    instrs = _C._decode_bytecode(f.__code__)
    by_offset = {off: name for off, name, _, _ in instrs}
    (for_iter,) = [t for _, n, _, t in instrs if n == "FOR_ITER"]
    assert by_offset[for_iter] not in ("END_FOR", "CACHE")


@pytest.mark.skipif(sys.version_info < (3, 12), reason="3.12's instructions")
def test_later_instructions_of_312():
    def f(a, xs, d):
        ys = [a * v for v in xs]  # inlined: LOAD_FAST_AND_CLEAR saves `v`
        d[1:2] = xs[0:1]          # STORE_SLICE, BINARY_SLICE
        return None               # RETURN_CONST

    got = {n for n, _ in names(f)}
    assert {"LOAD_FAST_AND_CLEAR", "STORE_SLICE", "BINARY_SLICE", "RETURN_CONST"} <= got
    # 3.12 has no LOAD_METHOD opcode (only a compiler pseudo-instruction, numbered from 256).
    assert dis.opmap.get("LOAD_METHOD", 256) >= 256 and ("LOAD_METHOD", 0) in names(
        lambda a: a.m())


def test_unknown_names_are_refused():
    with pytest.raises(ValueError):
        _C._encode_instructions([("NOT_AN_OPCODE", 0)])
    if sys.version_info >= (3, 12):
        # 3.11's JUMP_IF_TRUE_OR_POP has no 3.12 encoding: code using it is refused.
        with pytest.raises(ValueError, match="JUMP_IF_TRUE_OR_POP"):
            _C._encode_instructions([("JUMP_IF_TRUE_OR_POP", 2)])
