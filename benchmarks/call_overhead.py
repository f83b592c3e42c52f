"""Per-call overhead of a jitted function on tiny inputs.

For f(x, y) = x + y on 4-element float32 tensors, prints the median time per call of the
jitted call, the eager call (the same function, not jitted) and np.add on the same data,
and the ratios. Target: jitted <= 2x np.add.
"""
import statistics
import timeit

import numpy as np

import pijit


def f(x, y):
    return x + y


def median_ns(fn, number=20000, repeat=15):
    runs = timeit.repeat(fn, number=number, repeat=repeat)
    return statistics.median(runs) / number * 1e9


def main():
    a = np.arange(4, dtype=np.float32)
    b = np.ones(4, dtype=np.float32)
    x, y = pijit.Tensor(a), pijit.Tensor(b)
    jf = pijit.jit(f, mode="PIJit")
    np.testing.assert_array_equal(jf(x, y).asnumpy(), f(x, y).asnumpy())
    assert pijit.get_code_extra(jf)["compile_count"] == 1

    t_jit = median_ns(lambda: jf(x, y))
    t_eager = median_ns(lambda: f(x, y))
    t_np = median_ns(lambda: np.add(a, b))
    print("call overhead, f(x, y) = x + y on 4 float32 elements (median ns per call)")
    print(f"{'variant':<12}{'ns/call':>10}{'vs np.add':>12}")
    for name, t in (("pijit.jit", t_jit), ("eager", t_eager), ("np.add", t_np)):
        print(f"{name:<12}{t:>10.0f}{t / t_np:>11.2f}x")


if __name__ == "__main__":
    main()
