"""Slowdown of pure-Python work (no tensors) with pijit.enable() active versus off.

Workloads: a recursive function, a loop over dicts and lists, and a class-heavy workload.
Prints the median time of each with the hook off and on, and the ratio. Target: < 1.10x.
"""
import statistics
import time

import pijit


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def dicts_and_lists(n):
    d = {}
    for i in range(n):
        d[i % 97] = d.get(i % 97, 0) + i
    out = []
    for k, v in sorted(d.items()):
        out.append((k, v * 2))
    return sum(v for _, v in out)


class Vec:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def add(self, o):
        return Vec(self.x + o.x, self.y + o.y)

    def norm2(self):
        return self.x * self.x + self.y * self.y


def classes(n):
    acc = Vec(0, 0)
    for i in range(n):
        acc = acc.add(Vec(i, -i))
    return acc.norm2()


WORKLOADS = [("recursive fib(20)", lambda: fib(20)),
             ("dicts and lists", lambda: dicts_and_lists(20000)),
             ("class-heavy", lambda: classes(20000))]


def median_s(fn, repeat=9):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    print("pure-Python slowdown with pijit.enable() (median of 9 runs)")
    print(f"{'workload':<20}{'off ms':>10}{'on ms':>10}{'ratio':>8}")
    for name, fn in WORKLOADS:
        fn()
        off = median_s(fn)
        pijit.enable()
        try:
            fn()  # first calls analyse each code object once
            on = median_s(fn)
        finally:
            pijit.disable()
        print(f"{name:<20}{off * 1e3:>10.2f}{on * 1e3:>10.2f}{on / off:>7.2f}x")


if __name__ == "__main__":
    main()
