"""explain() names what runs outside the graph in its stead: print calls replayed after the
graph (with their lines) and the classes of objects made in the function that the result is
rebuilt with; PIJIT_LOG=graph_breaks names the reordered prints."""
import collections
import dataclasses
import os
import subprocess
import sys
import textwrap

import numpy as np

import pijit

Pair = collections.namedtuple("Pair", "a b")


@dataclasses.dataclass
class Box:
    value: object


def T(*shape):
    return pijit.Tensor(np.arange(np.prod(shape), dtype=np.float32).reshape(shape))


def prints_and_objects(x):
    print("start")
    y = x * 2.0
    print("scaled", 2.0)
    return Pair(y, Box(x + 1.0))


def plain(x):
    return x * 2.0


def test_explain_lists_reordered_prints_and_rebuilt_objects():
    out = pijit.explain(prints_and_objects, T(3))
    first = prints_and_objects.__code__.co_firstlineno
    assert out.reordered_prints == [f"{__file__}:{first + 1}", f"{__file__}:{first + 3}"]
    assert out.rebuilt_objects == ["Pair", "Box"]
    text = str(out)
    assert "Prints run after the graph, in order:" in text
    assert "Objects rebuilt from the graph's values: Pair, Box" in text
    # The jitted call prints the same, in the same order, and returns equal objects.
    jf = pijit.jit(prints_and_objects, capture_mode="bytecode")
    got = jf(T(3))
    assert isinstance(got, Pair) and isinstance(got.b, Box)
    np.testing.assert_array_equal(got.b.value.asnumpy(), (T(3) + 1.0).asnumpy())


def test_nothing_is_listed_for_a_plain_graph():
    out = pijit.explain(plain, T(3))
    assert out.reordered_prints == [] and out.rebuilt_objects == []
    assert "Prints run" not in str(out) and "Objects rebuilt" not in str(out)


def test_the_log_names_reordered_prints():
    script = textwrap.dedent("""
        import numpy as np, pijit
        def f(x):
            print("hello")
            return x + 1.0
        pijit.jit(f, capture_mode="bytecode")(pijit.Tensor(np.ones(2, np.float32)))
    """)
    env = dict(os.environ, PIJIT_LOG="graph_breaks")
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "hello"
    assert "print calls run after the graph, in order: <string>:4" in r.stderr
