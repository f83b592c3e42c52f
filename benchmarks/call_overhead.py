"""Per-call overhead of pijit on tiny inputs (median ns per call, one run).

1. A jitted function: f(x, y) = x + y on 4-element float32 tensors, jitted and eager, against
   np.add on the same data. Target: jitted <= 2x np.add.
2. Every Python surface of one op, eager: the operator, the pijit.ops function, a primitive
   instance, a Tensor method, against the operator form and NumPy.
3. A call of a jitted function whose graph breaks once (a call pijit does not capture): the
   prefix graph, the breaking call run in Python, and the resume function's graph.
"""
import os
import statistics
import timeit

import numpy as np

import pijit
from pijit import ops


def f(x, y):
    return x + y


def breaks_once(x):
    y = x + 1
    os.getpid()  # not captured: the graph breaks here
    return y * 2


def median_ns(fn, number=20000, repeat=15):
    runs = timeit.repeat(fn, number=number, repeat=repeat)
    return statistics.median(runs) / number * 1e9


def table(title, rows, base_name):
    base = dict(rows)[base_name]
    print(title)
    print(f"{'variant':<22}{'ns/call':>10}{'vs ' + base_name:>22}")
    for name, t in rows:
        print(f"{name:<22}{t:>10.0f}{t / base:>21.2f}x")
    print()


def main():
    a = np.arange(4, dtype=np.float32)
    b = np.ones(4, dtype=np.float32)
    x, y = pijit.Tensor(a), pijit.Tensor(b)
    jf = pijit.jit(f, mode="PIJit")
    np.testing.assert_array_equal(jf(x, y).asnumpy(), f(x, y).asnumpy())
    assert pijit.get_code_extra(jf)["compile_count"] == 1
    table("call overhead, f(x, y) = x + y on 4 float32 elements (median ns per call)",
          [("pijit.jit", median_ns(lambda: jf(x, y))), ("eager", median_ns(lambda: f(x, y))),
           ("np.add", median_ns(lambda: np.add(a, b)))], "np.add")

    add = ops.Add()
    m2, n2 = np.arange(4, dtype=np.float32).reshape(2, 2), np.ones((2, 2), np.float32)
    mx, my = pijit.Tensor(m2), pijit.Tensor(n2)
    for got in (ops.add(x, y), add(x, y)):
        np.testing.assert_array_equal(got.asnumpy(), a + b)
    np.testing.assert_array_equal(ops.matmul(mx, my).asnumpy(), m2 @ n2)
    table("one op through each Python surface, eager, 4 float32 elements (2x2 for matmul)",
          [("x + y", median_ns(lambda: x + y)),
           ("ops.add(x, y)", median_ns(lambda: ops.add(x, y))),
           ("ops.Add()(x, y)", median_ns(lambda: add(x, y))),
           ("np.add", median_ns(lambda: np.add(a, b))),
           ("ops.exp(x)", median_ns(lambda: ops.exp(x))),
           ("x.exp()", median_ns(lambda: x.exp())),
           ("np.exp", median_ns(lambda: np.exp(a))),
           ("ops.matmul 2x2", median_ns(lambda: ops.matmul(mx, my))),
           ("x @ y 2x2", median_ns(lambda: mx @ my)),
           ("np.matmul 2x2", median_ns(lambda: np.matmul(m2, n2)))], "x + y")

    jb = pijit.jit(breaks_once, capture_mode="bytecode")
    np.testing.assert_array_equal(jb(x).asnumpy(), breaks_once(x).asnumpy())
    jb(x)
    stats = pijit.get_code_extra(jb)
    assert stats["break_count"] >= 1 and stats["compile_count"] == 1, stats
    table("a jitted call that breaks its graph once (x + 1; os.getpid(); y * 2)",
          [("pijit.jit", median_ns(lambda: jb(x), number=5000)),
           ("eager", median_ns(lambda: breaks_once(x), number=5000))], "eager")


if __name__ == "__main__":
    main()
