"""Shared by the whole-graph control-flow tests (test_whole_graph_if.py, test_whole_graph_while.py):
a function compiled in whole-graph mode with fresh counters, and a generated program's source
turned into its function."""
import pijit as ms
from pijit import ops


def whole_graph(fn):
    jitted = ms.jit(fn, capture_mode="ast")
    ms.reset(jitted)
    return jitted


def generated_function(lines, filename):
    """The function `prog` that the source `lines` define (they may use `ops`), and the source."""
    source = "\n".join(lines)
    ns = {"ops": ops}
    exec(compile(source + "\n", filename, "exec"), ns)
    return ns["prog"], source
