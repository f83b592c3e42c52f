"""First-call (capture + compile) time for functions of 10, 100 and 1000 tensor ops, and
guard-check time per call for 1, 8 and 64 cache entries (the most recently used entry
matching, and the entries called in turn).

Targets: under 20 ms for 100 ops, growing linearly; guard checks under 200 ns per call for a
3-tensor-argument function whatever the number of entries.
"""
import statistics
import timeit

import numpy as np

import pijit


def make_chain(n_ops):
    """A function of three tensors with n_ops elementwise ops, built as source text."""
    lines = ["def f(x, y, z):", "    a = x"]
    ops = ["a = a + y", "a = a * z", "a = a - x", "a = a * 0.5"]
    for i in range(n_ops):
        lines.append("    " + ops[i % len(ops)])
    lines.append("    return a")
    ns = {}
    exec(compile("\n".join(lines), f"<chain{n_ops}>", "exec"), ns)
    return ns["f"]


def first_call_ms(n_ops, repeat=5):
    x = pijit.Tensor(np.ones(4, np.float32))
    times = []
    for _ in range(repeat):
        f = pijit.jit(make_chain(n_ops), mode="PIJit")
        t = timeit.timeit(lambda: f(x, x, x), number=1)
        assert pijit.get_code_extra(f)["compile_count"] == 1
        times.append(t * 1e3)
    return statistics.median(times)


def guard_ns(n_entries):
    """Per-call cost of finding the entry whose guards pass, the matching entry being the
    least recently used one; the graph itself (x returned as is) costs nothing."""
    def f(x, y, z):
        return x
    jf = pijit.jit(f, mode="PIJit")
    # Entries differ in dtype and rank (sizes alone would share one symbolic-size entry).
    kinds = [(dt, rank) for rank in range(1, 14) for dt in (np.float32, np.float64, np.int32,
                                                           np.int64, np.bool_)]
    inputs = [tuple(pijit.Tensor(np.ones((1,) * rank, dt)) for _ in range(3))
              for dt, rank in kinds[:n_entries]]
    pijit._C._set_cache_limit(max(n_entries, 8))
    try:
        for args in inputs:
            jf(*args)
        assert pijit.get_code_extra(jf)["cache_entries"] == n_entries
        first = inputs[0]
        jf(*first)  # moves to the front (most recently used)
        per_call = statistics.median(timeit.repeat(lambda: jf(*first), number=20000, repeat=7)) / 20000
        baseline = statistics.median(timeit.repeat(lambda: f(*first), number=20000, repeat=7)) / 20000
    finally:
        pijit._C._set_cache_limit(8)
    return (per_call - baseline) * 1e9


def guard_round_robin_ns(n_entries):
    """Per-call cost when the entries (x and y the same, z differing in dtype and rank) are
    called in turn, so that every call matches the least recently used entry: the worst case,
    which the guards the entries share (x's and y's) keep flat."""
    def f(x, y, z):
        return x
    jf = pijit.jit(f, mode="PIJit")
    kinds = [(dt, rank) for rank in range(1, 14) for dt in (np.float32, np.float64, np.int32,
                                                           np.int64, np.bool_)]
    x, y = pijit.Tensor(np.ones(3, np.float32)), pijit.Tensor(np.ones(3, np.float32))
    inputs = [(x, y, pijit.Tensor(np.ones((1,) * rank, dt))) for dt, rank in kinds[:n_entries]]
    pijit._C._set_cache_limit(max(n_entries, 8))
    number = 64 * 300

    def run(fn):
        def loop():
            for args in inputs * (number // n_entries):
                fn(*args)
        return statistics.median(timeit.repeat(loop, number=1, repeat=7)) / number
    try:
        for args in inputs:
            jf(*args)
        assert pijit.get_code_extra(jf)["cache_entries"] == n_entries
        per_call, baseline = run(jf), run(f)
    finally:
        pijit._C._set_cache_limit(8)
    return (per_call - baseline) * 1e9


def main():
    print("first call (capture + compile), median ms")
    for n in (10, 100, 1000):
        print(f"  {n:>5} ops: {first_call_ms(n):8.2f} ms")
    print("guard check + dispatch per call above a plain Python call, median ns")
    for n in (1, 8, 64):
        print(f"  {n:>3} entries: {guard_ns(n):8.0f} ns")
    print("the same, entries called in turn (each call matches the least recently used one)")
    for n in (1, 8, 64):
        print(f"  {n:>3} entries: {guard_round_robin_ns(n):8.0f} ns")


if __name__ == "__main__":
    main()
