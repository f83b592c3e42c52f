"""Memory planning of compiled graphs, on against off: the whole-function cases of fusion.py
(softmax, layer norm, MLP, relu grad+clip), the jitted LeNet-5 step of train_step.py and a
small 3-op graph on 2x2 tensors (per-call overhead).

Each case is compiled twice in one process, once with PIJIT_MEMORY_PLAN=0 (the variable is
read when a graph compiles) and once without it, as separate code objects, then timed in
alternating blocks. Prints the median time per call of each, wall clock and this thread's
CPU time, the median of the paired block ratios (planned / unplanned; below 1 is faster with
the plan) and the tensor storages each call allocates on this thread (pijit._C counter).
"""
import os
import statistics
import sys
import time
import types

import numpy as np

import pijit
from pijit import _C, ops

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fusion  # noqa: E402
import train_step  # noqa: E402


def renamed(f, suffix):
    """`f` with a code object of its own, so that it gets its own cache entries."""
    code = f.__code__.replace(co_name=f.__code__.co_name + suffix)
    return types.FunctionType(code, f.__globals__, f.__name__ + suffix, f.__defaults__,
                              f.__closure__)


def compiled_pair(make):
    """(unplanned, planned) zero-argument calls, each compiled by its first call."""
    old = os.environ.get("PIJIT_MEMORY_PLAN")
    os.environ["PIJIT_MEMORY_PLAN"] = "0"
    off = make("_off")
    off()
    os.environ.pop("PIJIT_MEMORY_PLAN")
    on = make("_on")
    on()
    if old is not None:
        os.environ["PIJIT_MEMORY_PLAN"] = old
    return off, on


def allocations_per_call(fn, calls=10):
    fn()
    before = _C._storage_allocations()
    for _ in range(calls):
        fn()
    return (_C._storage_allocations() - before) / calls


def block(fn, number, clock):
    start = clock()
    for _ in range(number):
        fn()
    return (clock() - start) / number


def compare(name, off, on, number, blocks=31):
    cells = []
    for clock in (time.perf_counter, time.thread_time):
        a, b = [], []
        for _ in range(blocks):
            a.append(block(off, number, clock))
            b.append(block(on, number, clock))
        ratio = statistics.median(y / x for x, y in zip(a, b))
        cells.append(f"{statistics.median(a) * 1e3:9.3f}{statistics.median(b) * 1e3:9.3f}"
                     f"{ratio:7.2f}x")
    print(f"{name:<28}{cells[0]}  {cells[1]}  {allocations_per_call(off):6.1f} ->"
          f"{allocations_per_call(on):5.1f}", flush=True)


def small(x, y):
    h = ops.matmul(x, y)
    return ops.matmul(ops.exp(h), y)


def main():
    print("memory plan on against off (ms per call; ratio = planned / unplanned)")
    print(f"{'case':<28}{'wall off':>9}{'on':>9}{'ratio':>8}  {'cpu off':>9}{'on':>9}{'ratio':>8}"
          f"  allocations/call off -> on")
    rng = np.random.default_rng(1)
    for name, pjf, _, _, args in fusion.model_cases(rng):
        targs = [pijit.Tensor(a) for a in args]

        def make(suffix, pjf=pjf, targs=targs):
            jf = pijit.jit(renamed(pjf, suffix), mode="PIJit")
            return lambda: jf(*targs)

        compare(name, *compiled_pair(make), number=5)
    # Two networks: the step's guards tell their parameters apart, so each gets its entry.
    compare("LeNet-5 train step", *compiled_pair(lambda _: train_step.pijit_step(True)),
            number=20)
    x = pijit.Tensor(np.ones((2, 2), np.float32))

    def make_small(suffix):
        jf = pijit.jit(renamed(small, suffix), mode="PIJit")
        return lambda: jf(x, x)

    compare("small 3-op graph, 2x2", *compiled_pair(make_small), number=2000, blocks=21)


if __name__ == "__main__":
    main()
