"""Golden capture tests: tests/capture/*.txt hold Python functions with the capture pijit.explain
reports for one call (graph text, guards, the reason capture stopped), and each function's
jitted result must equal its eager one.

File format (one file per handler family; any number of cases):

    === name
    def f(x, y):            the function under test is the last one the source defines
        return x * y
    --- args
    T(2, 3), T(2, 3)        a Python expression: the call's arguments (T(*shape) makes a
                            float32 tensor of distinct values; I(*shape) an int64 one)
    --- expect
    Graph count: 1          str(pijit.explain(f, *args)), addresses and paths made stable
    ...
    --- expect 3.12         optional: what this Python version reports where it differs
                            (and later versions too, unless they have a section of their own)

PIJIT_UPDATE_GOLDEN=1 rewrites the expectations from this interpreter's output (into its
version section when that differs from the common one) instead of failing.
"""
import math
import os
import re
import sys
import textwrap

import numpy as np
import pytest

import pijit
from pijit import nn, ops

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURE_DIR = os.path.join(os.path.dirname(HERE), "capture")
VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
UPDATE = bool(os.environ.get("PIJIT_UPDATE_GOLDEN"))


def version_key(v):
    return tuple(int(p) for p in v.split("."))


class Case:
    def __init__(self, path, name, source, args, expect, versions):
        self.path, self.name, self.source, self.args = path, name, source, args
        self.expect, self.versions = expect, versions  # versions: {"3.12": text}

    @property
    def id(self):
        return f"{os.path.basename(self.path)[:-4]}::{self.name}"

    def expected(self, version=VERSION):
        """The newest section for `version` or an older one: a difference that a version
        brought stays in the versions after it until one of them changes it again."""
        older = [v for v in self.versions if version_key(v) <= version_key(version)]
        return self.versions[max(older, key=version_key)] if older else self.expect


def parse(path):
    cases = []
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for chunk in re.split(r"^=== ", text, flags=re.M)[1:]:
        name, _, body = chunk.partition("\n")
        sections = re.split(r"^--- (.*)\n", body, flags=re.M)
        source, rest = sections[0], sections[1:]
        fields, versions = {}, {}
        for header, content in zip(rest[::2], rest[1::2]):
            header = header.strip()
            if header.startswith("expect "):
                versions[header.split()[1]] = content.rstrip("\n")
            else:
                fields[header] = content.rstrip("\n")
        if "args" not in fields or "expect" not in fields:
            raise ValueError(f"{path}: case {name!r} needs '--- args' and '--- expect' sections")
        cases.append(Case(path, name.strip(), source.rstrip("\n"), fields["args"],
                          fields["expect"], versions))
    return cases


def write(path, cases):
    out = []
    for c in cases:
        out.append(f"=== {c.name}\n{c.source}\n--- args\n{c.args}\n--- expect\n{c.expect}\n")
        for v in sorted(c.versions):
            out.append(f"--- expect {v}\n{c.versions[v]}\n")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out))


def all_cases():
    files = sorted(f for f in os.listdir(CAPTURE_DIR) if f.endswith(".txt"))
    return [c for f in files for c in parse(os.path.join(CAPTURE_DIR, f))]


def T(*shape, dtype=np.float32):
    n = math.prod(shape)
    return pijit.Tensor((np.arange(n, dtype=np.float64).reshape(shape) * 0.25 - 1.0).astype(dtype))


def I(*shape):
    return pijit.Tensor(np.arange(math.prod(shape), dtype=np.int64).reshape(shape))


def namespace():
    return {"np": np, "pijit": pijit, "ops": ops, "nn": nn, "T": T, "I": I, "math": math}


def build(case):
    """The case's function and arguments, from a fresh namespace: each run gets its own globals."""
    ns = namespace()
    filename = f"<capture {case.id}>"
    code = compile(textwrap.dedent(case.source) + "\n", filename, "exec")
    exec(code, ns)
    fns = [v for v in ns.values() if callable(v) and getattr(v, "__code__", None) is not None
           and v.__code__.co_filename == filename]
    if not fns:
        raise ValueError(f"{case.id}: the source defines no function")
    fn = max(fns, key=lambda f: f.__code__.co_firstlineno)
    args = eval(f"({case.args},)", ns)
    return fn, args


def normalise(text):
    text = re.sub(r"0x[0-9a-f]+", "0x...", text)
    return text.rstrip()


def values_equal(a, b):
    if isinstance(a, pijit.Tensor):
        return isinstance(b, pijit.Tensor) and a.dtype == b.dtype and np.array_equal(
            a.asnumpy(), b.asnumpy(), equal_nan=True)
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(values_equal, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(values_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


CASES = all_cases()


def test_enough_cases_per_family():
    families = {}
    for c in CASES:
        families.setdefault(os.path.basename(c.path), []).append(c.name)
    assert len(CASES) >= 60, f"only {len(CASES)} golden capture cases"
    for fam, names in families.items():
        assert len(names) == len(set(names)), f"{fam}: duplicate case names"


def version_before(v):
    major, minor = version_key(v)
    return f"{major}.{minor - 1}"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_capture_golden(case):
    fn, args = build(case)
    actual = normalise(str(pijit.explain(fn, *args)))
    if UPDATE:
        if VERSION == "3.11" or actual == case.expected(version_before(VERSION)):
            case.expect = actual if VERSION == "3.11" else case.expect
            case.versions.pop(VERSION, None)
        else:
            case.versions[VERSION] = actual
        siblings = parse(case.path)
        write(case.path, [case if c.name == case.name else c for c in siblings])
    else:
        assert actual == case.expected(), (
            f"{case.id}: capture differs from the golden text (PIJIT_UPDATE_GOLDEN=1 rewrites it)\n"
            f"--- expected\n{case.expected()}\n--- actual\n{actual}")
    # The jitted calls give what the eager ones give, each side with its own globals and
    # arguments: the first call captures, the second runs the cache entry.
    eager_fn, eager_args = build(case)
    jit_fn, jit_args = build(case)
    jitted = pijit.jit(jit_fn, capture_mode="bytecode")  # breaks allowed: they are part of the golden text
    for call in range(2):
        expected = eager_fn(*eager_args)
        got = jitted(*jit_args)
        assert values_equal(got, expected), f"{case.id} call {call}: jitted {got!r} != eager {expected!r}"
        assert values_equal(list(jit_args), list(eager_args)), f"{case.id}: arguments differ after call {call}"
