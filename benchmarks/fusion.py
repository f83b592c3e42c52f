"""Fused elementwise chains: a*b + c*d - a*0.5 on 10M float32 elements.

Prints the median time per call (ms) of the pijit-jitted function (one fused kernel
generated with asmjit), the same function run eagerly on pijit tensors (one kernel per op),
NumPy, and numexpr / numba when they are installed, with each one's ratio to NumPy. The
jitted result is checked to be bit-identical to NumPy's first. pijit and numba run on one
thread; numexpr uses its default thread pool, and is also shown on one thread.
"""
import statistics
import sys
import timeit

import numpy as np

import pijit

N = 10_000_000


def chain(a, b, c, d):
    return a * b + c * d - a * 0.5


def median_ms(fn, repeat=15):
    fn()  # warm up (compile, page in)
    runs = timeit.repeat(fn, number=1, repeat=repeat)
    return statistics.median(runs) * 1e3


def main():
    rng = np.random.default_rng(0)
    a, b, c, d = (rng.standard_normal(N, dtype=np.float32) for _ in range(4))
    ta, tb, tc, td = (pijit.Tensor(x) for x in (a, b, c, d))
    jf = pijit.jit(chain, mode="PIJit")
    want = chain(a, b, c, d)
    np.testing.assert_array_equal(jf(ta, tb, tc, td).asnumpy(), want)
    graph = pijit.get_code_extra(jf)["graphs"][0]
    assert "fused(" in graph, graph

    rows = [("pijit.jit (fused)", median_ms(lambda: jf(ta, tb, tc, td))),
            ("pijit eager", median_ms(lambda: chain(ta, tb, tc, td))),
            ("numpy", median_ms(lambda: chain(a, b, c, d)))]
    try:
        import numexpr as ne
        env = {"a": a, "b": b, "c": c, "d": d, "half": np.float32(0.5)}
        expr = "a*b + c*d - a*half"

        def run_ne():
            return ne.evaluate(expr, local_dict=env)

        np.testing.assert_allclose(run_ne(), want, rtol=1e-6)
        rows.append((f"numexpr ({ne.get_num_threads()} threads)", median_ms(run_ne)))
        old = ne.set_num_threads(1)
        rows.append(("numexpr (1 thread)", median_ms(run_ne)))
        ne.set_num_threads(old)
    except ImportError:
        print("numexpr: not installed", file=sys.stderr)
    try:
        import numba
        half32 = np.float32(0.5)

        def chain32(a, b, c, d):  # numba would promote a*0.5 to float64
            return a * b + c * d - a * half32

        nf = numba.njit(chain32)
        np.testing.assert_allclose(nf(a, b, c, d), want, rtol=1e-6)
        rows.append(("numba.njit", median_ms(lambda: nf(a, b, c, d))))
    except ImportError:
        print("numba: not installed", file=sys.stderr)

    t_np = dict(rows)["numpy"]
    print(f"a*b + c*d - a*0.5 on {N:,} float32 (median ms per call)")
    print(f"{'variant':<24}{'ms':>10}{'vs numpy':>12}")
    for name, t in rows:
        print(f"{name:<24}{t:>10.2f}{t / t_np:>11.2f}x")


if __name__ == "__main__":
    main()
