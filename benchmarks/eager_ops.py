"""Eager (PyNative) op speed against NumPy (and torch when installed), median times.

Rows: small-op dispatch (4 elements), add and exp on 10M float32, sum over 10M float32,
softmax over (4096, 1024), matmul 1024x1024 float32 and float64, conv2d (32, 64, 56, 56)
with a 3x3 kernel (when pijit.ops.conv2d exists).
"""
import statistics
import timeit

import numpy as np

import pijit as ms
from pijit import ops

try:
    import torch
except ImportError:  # torch is optional
    torch = None


def median_s(fn, number, repeat=7):
    fn()
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number


def np_softmax(a):
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def rows():
    rng = np.random.default_rng(0)
    small = rng.standard_normal(4).astype(np.float32)
    big = rng.standard_normal(10_000_000).astype(np.float32)
    sm = rng.standard_normal((4096, 1024)).astype(np.float32)
    m32 = rng.standard_normal((1024, 1024)).astype(np.float32)
    m64 = m32.astype(np.float64)
    ts, tb, tsm, t32, t64 = (ms.Tensor(a) for a in (small, big, sm, m32, m64))
    out = [
        ("add, 4 elements (dispatch)", 20000, lambda: ts + ts, lambda: small + small,
         (lambda: torch.from_numpy(small) + torch.from_numpy(small)) if torch else None),
        ("add, 10M float32", 5, lambda: tb + tb, lambda: big + big, None),
        ("exp, 10M float32", 5, lambda: ops.exp(tb), lambda: np.exp(big), None),
        ("sum, 10M float32", 5, lambda: tb.sum(), lambda: big.sum(), None),
        ("softmax (4096, 1024)", 5, lambda: ops.softmax(tsm, -1), lambda: np_softmax(sm), None),
        ("matmul 1024 float32", 5, lambda: ops.matmul(t32, t32), lambda: m32 @ m32, None),
        ("matmul 1024 float64", 3, lambda: ops.matmul(t64, t64), lambda: m64 @ m64, None),
    ]
    if torch is not None:
        tt = {k: torch.from_numpy(v) for k, v in dict(big=big, sm=sm, m32=m32, m64=m64).items()}
        extra = {1: lambda: tt["big"] + tt["big"], 2: lambda: torch.exp(tt["big"]),
                 3: lambda: tt["big"].sum(), 4: lambda: torch.softmax(tt["sm"], -1),
                 5: lambda: tt["m32"] @ tt["m32"], 6: lambda: tt["m64"] @ tt["m64"]}
        out = [(n, k, a, b, extra.get(i, c)) for i, (n, k, a, b, c) in enumerate(out)]
    if hasattr(ops, "conv2d"):
        x = rng.standard_normal((32, 64, 56, 56)).astype(np.float32)
        w = rng.standard_normal((64, 64, 3, 3)).astype(np.float32)
        tx, tw = ms.Tensor(x), ms.Tensor(w)
        tconv = None
        if torch is not None:
            xx, ww = torch.from_numpy(x), torch.from_numpy(w)
            tconv = lambda: torch.nn.functional.conv2d(xx, ww, padding=1)
        out.append(("conv2d (32,64,56,56) 3x3", 2,
                    lambda: ops.conv2d(tx, tw, pad_mode="pad", padding=1), None, tconv))
    return out


def main():
    print("eager ops, median per call")
    print(f"{'op':<28}{'pijit':>12}{'numpy':>12}{'torch':>12}{'pijit/numpy':>13}{'pijit/torch':>13}")
    for name, number, pj, npf, tf in rows():
        t_pj = median_s(pj, number)
        t_np = median_s(npf, number) if npf else float("nan")
        t_t = median_s(tf, number) if tf else float("nan")

        def fmt(t):
            return "-" if t != t else (f"{t * 1e6:.2f} us" if t < 1e-3 else f"{t * 1e3:.2f} ms")
        print(f"{name:<28}{fmt(t_pj):>12}{fmt(t_np):>12}{fmt(t_t):>12}"
              f"{t_pj / t_np:>12.2f}x{t_pj / t_t:>12.2f}x")


if __name__ == "__main__":
    main()
