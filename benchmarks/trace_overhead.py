"""What the structured trace (pijit.trace, docs/trace.md) costs, in one process, alternating:

1. A cache hit of jitted `x + y` on 4-element float32 tensors, with no trace and inside a
   trace block, against np.add (the steady state: a hit writes nothing; with a trace on, the
   run is timed for the report's run column).
2. The first call (capture + compile) of a 100-op function, with and without a trace: each
   traced compile builds and writes one `capture` record (graph text, guards).

Prints medians (ns and ms) and the ratios measured in the same run.
"""
import statistics
import tempfile
import timeit

import numpy as np

import pijit
from compile_time import make_chain


def hit_ns(jf, x, y, number=20000, repeat=15):
    jf(x, y)
    return statistics.median(timeit.repeat(lambda: jf(x, y), number=number, repeat=repeat)) / number * 1e9


def first_call_ms(n_ops, traced_dir, repeat=7):
    x = pijit.Tensor(np.ones(4, np.float32))
    times = []
    for _ in range(repeat):
        f = pijit.jit(make_chain(n_ops), mode="PIJit")
        if traced_dir is None:
            t = timeit.timeit(lambda: f(x, x, x), number=1)
        else:
            with pijit.trace(traced_dir):
                t = timeit.timeit(lambda: f(x, x, x), number=1)
        times.append(t * 1e3)
    return statistics.median(times)


def main():
    x = pijit.Tensor(np.ones(4, np.float32))
    y = pijit.Tensor(np.ones(4, np.float32))
    xn, yn = x.asnumpy(), y.asnumpy()
    jf = pijit.jit(lambda a, b: a + b, mode="PIJit")
    off, on, npadd = [], [], []
    with tempfile.TemporaryDirectory() as d:
        for _ in range(3):  # alternate, so drift on a shared machine hits both sides
            off.append(hit_ns(jf, x, y))
            with pijit.trace(d):
                on.append(hit_ns(jf, x, y))
            npadd.append(statistics.median(timeit.repeat(lambda: np.add(xn, yn), number=20000,
                                                         repeat=15)) / 20000 * 1e9)
        print("cache hit of jitted x + y (ns per call, median of 3 alternating runs)")
        print(f"  no trace     {statistics.median(off):7.0f}   ({statistics.median(off) / statistics.median(npadd):.2f}x np.add)")
        print(f"  trace on     {statistics.median(on):7.0f}   ({statistics.median(on) / statistics.median(off):.3f}x no trace)")
        print(f"  np.add       {statistics.median(npadd):7.0f}")
        print("first call of a 100-op function (ms, median of 7)")
        plain = [first_call_ms(100, None) for _ in range(3)]
        traced = [first_call_ms(100, d) for _ in range(3)]
        p, t = statistics.median(plain), statistics.median(traced)
        print(f"  no trace     {p:7.3f}")
        print(f"  trace on     {t:7.3f}   ({t / p:.2f}x, +{t - p:.3f} ms per traced compile)")


if __name__ == "__main__":
    main()
