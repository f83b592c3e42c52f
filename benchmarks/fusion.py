"""Fused elementwise chains: a*b + c*d - a*0.5 on 10M float32 elements; then softmax,
layer norm and an MLP forward as whole jitted functions.

Prints the median time per call (ms) of the pijit-jitted function (one fused kernel
generated with asmjit), the same function run eagerly on pijit tensors (one kernel per op),
NumPy, and numexpr / numba when they are installed, with each one's ratio to NumPy. The
jitted result is checked to be bit-identical to NumPy's first. pijit and numba run on one
thread; numexpr uses its default thread pool, and is also shown on one thread; numba also
with parallel=True. The last row is the bandwidth bound: the chain's 5 x 40 MB at the best
copy bandwidth measured here (bandwidth_bound_ms).

The second table times softmax over (4096, 1024), layer norm over (8192, 1024), an MLP
forward (784-1024-1024-10, relu, batch 256; jitted, each layer is one fused_matmul node: the
bias and relu run with oneDNN's matmul, checked below) and a comparison/select chain (relu's
gradient plus a clip, where(a > 0, g, 0) * 0.9 + minimum(maximum(a, -1), 1), (4096, 1024)) and
a relu layer's bias gradient (where(a > 0, g, 0).sum(axis=0): jitted, one fused_reduce over the
leading axis), float32: pijit jitted, pijit eager, NumPy, torch
eager and torch.compile, each when installed (torch.compile needs a C++ toolchain at run time;
when it fails the reason is printed and its column shows "-").

The third table times a reduction of an elementwise chain, the mean squared error
((a - b) * (a - b)).mean() on two 10M-element float32 arrays: jitted, one fused_reduce loop
reads a and b once and never stores the squared differences (the result is checked to be
bit-identical to pijit's eager result, and close to NumPy's, whose float32 pairwise sum rounds
differently); against pijit eager, NumPy, numexpr (sum(...) / n, on its default threads and on
one; it accumulates float32 sequentially, 1-2% off here), torch eager and torch.compile when installed, and the bandwidth bound of reading 2 x 40
MB.

Arguments select sections: chain, chain_exp, models, mse (default: all four). chain_exp is
the chain with exp(a) in the last term, a*b + c*d - exp(a)*0.5: the generated exp makes the
jitted result equal pijit's eager one bit for bit and NumPy's within exp's documented bound;
torch eager and torch.compile join both chain tables when installed.
"""
import statistics
import sys
import time
import timeit

import numpy as np

import pijit
from pijit import ops

N = 10_000_000


def chain(a, b, c, d):
    return a * b + c * d - a * 0.5


def chain_exp(a, b, c, d):
    return a * b + c * d - ops.exp(a) * 0.5


def numexpr_rows(ne, run):
    """numexpr timed on its default threads and on one."""
    rows = [(f"numexpr ({ne.get_num_threads()} threads)", median_ms(run))]
    old = ne.set_num_threads(1)
    rows.append(("numexpr (1 thread)", median_ms(run)))
    ne.set_num_threads(old)
    return rows


def median_ms(fn, repeat=15):
    fn()  # warm up (compile, page in)
    runs = timeit.repeat(fn, number=1, repeat=repeat)
    return statistics.median(runs) * 1e3


def main(with_exp=False):
    rng = np.random.default_rng(0)
    a, b, c, d = (rng.standard_normal(N, dtype=np.float32) for _ in range(4))
    ta, tb, tc, td = (pijit.Tensor(x) for x in (a, b, c, d))
    half32 = np.float32(0.5)
    if with_exp:
        title, expr = "a*b + c*d - exp(a)*0.5", "a*b + c*d - exp(a)*half"
        pj_fn = chain_exp
        np_fn = lambda a, b, c, d: a * b + c * d - np.exp(a) * half32  # noqa: E731
    else:
        title, expr = "a*b + c*d - a*0.5", "a*b + c*d - a*half"
        pj_fn, np_fn = chain, chain
    jf = pijit.jit(pj_fn, mode="PIJit")
    want = np_fn(a, b, c, d)
    got = jf(ta, tb, tc, td).asnumpy()
    if with_exp:
        # The generated exp (also eager pijit's) is within 4e-7 of the exact one.
        np.testing.assert_array_equal(got, pj_fn(ta, tb, tc, td).asnumpy())
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)
    graph = pijit.get_code_extra(jf)["graphs"][0]
    assert graph.count("= fused(") == 1, graph

    rows = [("pijit.jit (fused)", median_ms(lambda: jf(ta, tb, tc, td))),
            ("pijit eager", median_ms(lambda: pj_fn(ta, tb, tc, td))),
            ("numpy", median_ms(lambda: np_fn(a, b, c, d)))]
    try:
        import numexpr as ne
        env = {"a": a, "b": b, "c": c, "d": d, "half": half32}

        def run_ne():
            return ne.evaluate(expr, local_dict=env)

        np.testing.assert_allclose(run_ne(), want, rtol=1e-5, atol=1e-5)
        rows += numexpr_rows(ne, run_ne)
    except ImportError:
        print("numexpr: not installed", file=sys.stderr)
    try:
        import numba

        def chain32(a, b, c, d):  # numba would promote a*0.5 to float64
            return a * b + c * d - a * half32

        def chain32_exp(a, b, c, d):
            return a * b + c * d - np.exp(a) * half32

        body = chain32_exp if with_exp else chain32
        nf = numba.njit(body)
        np.testing.assert_allclose(nf(a, b, c, d), want, rtol=1e-5, atol=1e-5)
        rows.append(("numba.njit", median_ms(lambda: nf(a, b, c, d))))
        pf = numba.njit(parallel=True)(body)
        np.testing.assert_allclose(pf(a, b, c, d), want, rtol=1e-5, atol=1e-5)
        rows.append((f"numba parallel ({numba.get_num_threads()} thr)",
                     median_ms(lambda: pf(a, b, c, d))))
    except ImportError:
        print("numba: not installed", file=sys.stderr)
    try:
        import torch
        tt = [torch.from_numpy(x) for x in (a, b, c, d)]
        t_fn = (lambda a, b, c, d: a * b + c * d - torch.exp(a) * 0.5) if with_exp else chain
        settle()
        rows.append(("torch eager", median_ms(lambda: t_fn(*tt))))
        try:
            tc_fn = torch.compile(t_fn)
            np.testing.assert_allclose(tc_fn(*tt).numpy(), want, rtol=1e-5, atol=1e-5)
            settle()
            rows.append(("torch.compile", median_ms(lambda: tc_fn(*tt))))
        except Exception as e:  # noqa: BLE001 (no toolchain: the reason is printed)
            print(f"torch.compile: {type(e).__name__}: {e}", file=sys.stderr)
    except ImportError:
        print("torch: not installed", file=sys.stderr)

    bound, gbs = bandwidth_bound_ms(a)
    rows.append((f"bandwidth bound ({gbs:.1f} GB/s)", bound))
    t_np = dict(rows)["numpy"]
    print(f"{title} on {N:,} float32 (median ms per call)")
    print(f"{'variant':<28}{'ms':>10}{'vs numpy':>12}")
    for name, t in rows:
        print(f"{name:<28}{t:>10.2f}{t / t_np:>11.2f}x")
    print(f"pijit.jit / bandwidth bound: {dict(rows)['pijit.jit (fused)'] / bound:.2f}x")


def bandwidth_bound_ms(src):
    """The chain reads four arrays and writes one: 5 * 40 MB. The machine's bandwidth is the
    best of copying 40 MB into a preallocated array on one thread and on one thread per core
    (NumPy copies without the GIL), counting the bytes read and written."""
    import os
    from concurrent.futures import ThreadPoolExecutor
    dst = np.empty_like(src)
    threads = os.cpu_count() or 1
    parts = np.array_split(np.arange(src.size), threads)
    spans = [(p[0], p[-1] + 1) for p in parts if p.size]
    with ThreadPoolExecutor(threads) as pool:
        def copy_parallel():
            list(pool.map(lambda s: np.copyto(dst[s[0]:s[1]], src[s[0]:s[1]]), spans))
        best = min(median_ms(lambda: np.copyto(dst, src)), median_ms(copy_parallel))
    gbs = 2 * src.nbytes / (best * 1e-3) / 1e9
    return 5 * src.nbytes / (gbs * 1e9) * 1e3, gbs


# ---- whole functions: softmax, layer norm, MLP ------------------------------------------------

def model_cases(rng):
    """(name, pijit fn, pijit args, numpy fn, numpy args, torch fn, torch args)."""
    from pijit import ops
    x = rng.standard_normal((4096, 1024), dtype=np.float32)
    ln = rng.standard_normal((8192, 1024), dtype=np.float32)
    g, b = (rng.standard_normal(1024, dtype=np.float32) for _ in range(2))
    sizes = [784, 1024, 1024, 10]
    ws = [(rng.standard_normal((i, o), dtype=np.float32) / np.sqrt(i)).astype(np.float32)
          for i, o in zip(sizes, sizes[1:])]
    bs = [rng.standard_normal(o, dtype=np.float32) * 0.1 for o in sizes[1:]]
    xin = rng.standard_normal((256, 784), dtype=np.float32)

    def pj_softmax(a):
        return ops.softmax(a, -1)

    def np_softmax(a):
        e = np.exp(a - a.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def pj_ln(a, g, b):
        return ops.layer_norm(a, (1024,), g, b)

    def np_ln(a, g, b):
        m = a.mean(axis=-1, keepdims=True)
        return (a - m) / np.sqrt(a.var(axis=-1, keepdims=True) + 1e-5) * g + b

    def pj_mlp(a, w0, b0, w1, b1, w2, b2):
        h = ops.relu(ops.matmul(a, w0) + b0)
        h = ops.relu(ops.matmul(h, w1) + b1)
        return ops.matmul(h, w2) + b2

    def np_mlp(a, w0, b0, w1, b1, w2, b2):
        h = np.maximum(a @ w0 + b0, 0)
        h = np.maximum(h @ w1 + b1, 0)
        return h @ w2 + b2

    mlp_args = [xin, ws[0], bs[0], ws[1], bs[1], ws[2], bs[2]]
    mx, mg = (rng.standard_normal((4096, 1024), dtype=np.float32) for _ in range(2))

    def pj_mask(a, g):  # relu's gradient plus a clip: comparisons and selects in one kernel
        return ops.where(a > 0, g, 0.0) * 0.9 + ops.minimum(ops.maximum(a, -1.0), 1.0)

    def np_mask(a, g):
        f = np.float32
        return np.where(a > 0, g, f(0)) * f(0.9) + np.minimum(np.maximum(a, f(-1)), f(1))
    def pj_bias_grad(a, g):  # a relu layer's bias gradient: a masked sum over the batch axis
        return ops.where(a > 0, g, 0.0).sum(axis=0)

    def np_bias_grad(a, g):
        return np.where(a > 0, g, np.float32(0)).sum(axis=0)
    cases = [("softmax (4096, 1024)", pj_softmax, np_softmax, None, [x]),
             ("layer_norm (8192, 1024)", pj_ln, np_ln, None, [ln, g, b]),
             ("MLP 784-1024-1024-10 b256", pj_mlp, np_mlp, None, mlp_args),
             ("relu grad+clip (4096,1024)", pj_mask, np_mask, None, [mx, mg]),
             ("relu bias grad (4096,1024)", pj_bias_grad, np_bias_grad, None, [mx, mg])]
    try:
        import torch
        import torch.nn.functional as F
        fns = {"softmax (4096, 1024)": lambda a: torch.softmax(a, -1),
               "layer_norm (8192, 1024)": lambda a, g, b: F.layer_norm(a, (1024,), g, b),
               "MLP 784-1024-1024-10 b256": lambda a, w0, b0, w1, b1, w2, b2: (
                   F.relu(F.relu(a @ w0 + b0) @ w1 + b1) @ w2 + b2),
               "relu grad+clip (4096,1024)": lambda a, g: (
                   torch.where(a > 0, g, 0.0) * 0.9 + torch.clamp(a, -1.0, 1.0)),
               "relu bias grad (4096,1024)": lambda a, g: torch.where(a > 0, g, 0.0).sum(0)}
        cases = [(n, p, q, fns[n], args) for n, p, q, _, args in cases]
    except ImportError:
        print("torch: not installed, its columns are skipped", file=sys.stderr)
    return cases


def settle():
    """Lets a library's worker threads go idle before another library is timed: NumPy's
    OpenBLAS threads spin for a while after a product, and torch's OpenMP threads after its
    kernels; on two cores they take one from whatever runs next."""
    time.sleep(0.3)


def model_main():
    rng = np.random.default_rng(1)
    fmt = lambda t: "-" if t is None else f"{t:.2f}"
    print()
    print("whole functions, float32 (median ms per call; ratios against numpy)")
    print(f"{'case':<28}{'pj.jit':>9}{'pj eager':>10}{'numpy':>9}{'torch':>9}{'t.compile':>11}"
          f"{'jit/np':>9}{'jit/torch':>11}{'jit/t.comp':>12}")
    cases = model_cases(rng)
    times = {name: {} for name, *_ in cases}
    # Grouped by library (pijit, NumPy, torch, torch.compile), each group after a pause:
    # interleaving them per case let one library's still-busy threads slow the next one
    # (the jitted MLP measured 5-6 ms right after torch.compile's kernels, 3.5 ms alone).
    wants = {}
    for name, pjf, npf, tf, args in cases:
        targs = [pijit.Tensor(a) for a in args]
        jf = pijit.jit(pjf, mode="PIJit")
        wants[name] = want = npf(*args)
        np.testing.assert_allclose(jf(*targs).asnumpy(), want, rtol=1e-3, atol=1e-3)
        if name.startswith("MLP"):
            graph = pijit.get_code_extra(jf)["graphs"][0]
            assert graph.count("fused_matmul(") == 3, graph
        settle()
        times[name]["jit"] = median_ms(lambda: jf(*targs), repeat=9)
        times[name]["eager"] = median_ms(lambda: pjf(*targs), repeat=9)
    settle()
    for name, pjf, npf, tf, args in cases:
        times[name]["np"] = median_ms(lambda: npf(*args), repeat=9)
    for compiled in (False, True):
        for name, pjf, npf, tf, args in cases:
            if tf is None:
                continue
            import torch
            xs = [torch.from_numpy(a) for a in args]
            with torch.no_grad():
                try:
                    fn = torch.compile(tf) if compiled else tf
                    np.testing.assert_allclose(fn(*xs).numpy(), wants[name], rtol=1e-3,
                                               atol=1e-3)
                    settle()
                    times[name]["comp" if compiled else "torch"] = median_ms(
                        lambda: fn(*xs), repeat=9)
                except Exception as e:  # no compiler toolchain, unsupported platform, ...
                    first = (str(e).strip().splitlines() or [""])[0][:160]
                    print(f"torch{'.compile' if compiled else ''} failed for {name}: "
                          f"{type(e).__name__}: {first}", file=sys.stderr)
    for name, *_ in cases:
        t = times[name]
        t_jit = t["jit"]
        r = lambda v: "-" if v is None else f"{t_jit / v:.2f}x"
        print(f"{name:<28}{fmt(t_jit):>9}{fmt(t['eager']):>10}{fmt(t['np']):>9}"
              f"{fmt(t.get('torch')):>9}{fmt(t.get('comp')):>11}{r(t['np']):>9}"
              f"{r(t.get('torch')):>11}{r(t.get('comp')):>12}")


# ---- a reduction of an elementwise chain: mean squared error ---------------------------------

def mse(a, b):
    return ((a - b) * (a - b)).mean()


def mse_main():
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(N, dtype=np.float32) for _ in range(2))
    ta, tb = pijit.Tensor(a), pijit.Tensor(b)
    jf = pijit.jit(mse, mode="PIJit")
    got = jf(ta, tb).asnumpy()
    np.testing.assert_array_equal(got, mse(ta, tb).asnumpy())
    want = mse(a, b)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    graph = pijit.get_code_extra(jf)["graphs"][0]
    kind = "fused_reduce" if "fused_reduce(" in graph else "fused + mean"
    settle()
    rows = [(f"pijit.jit ({kind})", median_ms(lambda: jf(ta, tb))),
            ("pijit eager", median_ms(lambda: mse(ta, tb))),
            ("numpy", median_ms(lambda: mse(a, b)))]
    try:
        import numexpr as ne
        env = {"a": a, "b": b}

        def run_ne():
            return ne.evaluate("sum((a - b) * (a - b))", local_dict=env) / N

        # numexpr sums float32 sequentially in float32: 1-2% off at 10M elements.
        np.testing.assert_allclose(run_ne(), want, rtol=0.05)
        rows += numexpr_rows(ne, run_ne)
    except ImportError:
        print("numexpr: not installed", file=sys.stderr)
    try:
        import torch
        xs = [torch.from_numpy(a), torch.from_numpy(b)]
        for compiled in (False, True):
            name = "torch.compile" if compiled else "torch eager"
            try:
                fn = torch.compile(mse) if compiled else mse
                with torch.no_grad():
                    np.testing.assert_allclose(fn(*xs).numpy(), want, rtol=1e-4)
                    settle()
                    rows.append((name, median_ms(lambda: fn(*xs))))
            except Exception as e:  # no compiler toolchain, unsupported platform, ...
                first = (str(e).strip().splitlines() or [""])[0][:160]
                print(f"{name} failed: {type(e).__name__}: {first}", file=sys.stderr)
    except ImportError:
        print("torch: not installed, its rows are skipped", file=sys.stderr)
    bound, gbs = bandwidth_bound_ms(a)
    bound = bound * 2 / 5  # reads a and b, writes nothing
    rows.append((f"bandwidth bound ({gbs:.1f} GB/s)", bound))
    t_np = dict(rows)["numpy"]
    print()
    print(f"((a - b) * (a - b)).mean() on {N:,} float32 (median ms per call)")
    print(f"{'variant':<30}{'ms':>10}{'vs numpy':>12}")
    for name, t in rows:
        print(f"{name:<30}{t:>10.2f}{t / t_np:>11.2f}x")
    print(f"pijit.jit / bandwidth bound: {rows[0][1] / bound:.2f}x")


if __name__ == "__main__":
    sections = sys.argv[1:] or ["chain", "chain_exp", "models", "mse"]
    if "chain" in sections:
        main()
    if "chain_exp" in sections:
        print()
        main(with_exp=True)
    if "models" in sections:
        model_main()
    if "mse" in sections:
        mse_main()
