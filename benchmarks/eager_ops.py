"""Eager (PyNative) op speed against NumPy (and torch when installed), median times.

Rows: small-op dispatch (4 elements), add, exp and tanh on 10M float32, elementwise ops
(log among them) and reductions on 16K elements (in cache, where the instruction set matters
more than memory bandwidth), reductions over 10M elements (sum float32/float64, max, argmax, var) and over each axis of (4096, 1024), softmax
and log_softmax over (4096, 1024), layer norm over (8192, 1024), matmul 1024x1024 float32 and
float64, conv2d (32, 64, 56, 56) with a 3x3 kernel (when pijit.ops.conv2d exists). torch
columns show "-" when torch is not installed.
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


def np_layer_norm(a, g, b, eps=1e-5):
    m = a.mean(axis=-1, keepdims=True)
    v = a.var(axis=-1, keepdims=True)
    return (a - m) / np.sqrt(v + eps) * g + b


def rows():
    """(name, calls per timing, pijit, numpy, torch) with None where a baseline is missing."""
    rng = np.random.default_rng(0)
    small = rng.standard_normal(4).astype(np.float32)
    k16, k16b = (rng.standard_normal(16384).astype(np.float32) for _ in range(2))
    k16d = k16.astype(np.float64)
    k16p = np.abs(k16)
    big = rng.standard_normal(10_000_000).astype(np.float32)
    big64 = big.astype(np.float64)
    sm = rng.standard_normal((4096, 1024)).astype(np.float32)
    ln = rng.standard_normal((8192, 1024)).astype(np.float32)
    g, b = (rng.standard_normal(1024).astype(np.float32) for _ in range(2))
    m32 = rng.standard_normal((1024, 1024)).astype(np.float32)
    m64 = m32.astype(np.float64)
    ts, tb, tb64, tsm, tln, tg, tbb, t32, t64 = (
        ms.Tensor(a) for a in (small, big, big64, sm, ln, g, b, m32, m64))
    tk, tkb, tkd, tkp = (ms.Tensor(a) for a in (k16, k16b, k16d, k16p))
    th = {}
    if torch is not None:
        th = {k: torch.from_numpy(v) for k, v in dict(
            small=small, big=big, big64=big64, sm=sm, ln=ln, g=g, b=b, m32=m32, m64=m64,
            k16=k16, k16b=k16b, k16d=k16d, k16p=k16p).items()}

    def tch(f):
        return f if torch is not None else None

    out = [
        ("add, 4 elements (dispatch)", 20000, lambda: ts + ts, lambda: small + small,
         tch(lambda: th["small"] + th["small"])),
        ("add, 10M float32", 5, lambda: tb + tb, lambda: big + big,
         tch(lambda: th["big"] + th["big"])),
        ("exp, 10M float32", 5, lambda: ops.exp(tb), lambda: np.exp(big),
         tch(lambda: torch.exp(th["big"]))),
        ("tanh, 10M float32", 5, lambda: ops.tanh(tb), lambda: np.tanh(big),
         tch(lambda: torch.tanh(th["big"]))),
        ("log of |x|, 16K float32", 2000, lambda: ops.log(tkp), lambda: np.log(k16p),
         tch(lambda: torch.log(th["k16p"]))),
        ("add, 16K float32", 2000, lambda: tk + tkb, lambda: k16 + k16b,
         tch(lambda: th["k16"] + th["k16b"])),
        ("add, 16K float64", 2000, lambda: tkd + tkd, lambda: k16d + k16d,
         tch(lambda: th["k16d"] + th["k16d"])),
        ("mul by scalar, 16K float32", 2000, lambda: tk * 2.0, lambda: k16 * np.float32(2.0),
         tch(lambda: th["k16"] * 2.0)),
        ("maximum, 16K float32", 2000, lambda: ops.maximum(tk, tkb),
         lambda: np.maximum(k16, k16b), tch(lambda: torch.maximum(th["k16"], th["k16b"]))),
        ("less, 16K float32", 2000, lambda: tk < tkb, lambda: k16 < k16b,
         tch(lambda: th["k16"] < th["k16b"])),
        ("relu, 16K float32", 2000, lambda: ops.relu(tk), lambda: np.maximum(k16, np.float32(0)),
         tch(lambda: torch.relu(th["k16"]))),
        ("sqrt, 16K float32", 2000, lambda: ops.sqrt(tkp), lambda: np.sqrt(k16p),
         tch(lambda: torch.sqrt(th["k16p"]))),
        ("sum, 16K float32", 2000, lambda: tk.sum(), lambda: k16.sum(),
         tch(lambda: th["k16"].sum())),
        ("max, 16K float32", 2000, lambda: ops.amax(tk), lambda: k16.max(),
         tch(lambda: th["k16"].max())),
        ("var, 16K float32", 2000, lambda: ops.var(tk), lambda: k16.var(),
         tch(lambda: th["k16"].var(unbiased=False))),
        ("sum, 10M float32", 5, lambda: tb.sum(), lambda: big.sum(), tch(lambda: th["big"].sum())),
        ("sum, 10M float64", 5, lambda: tb64.sum(), lambda: big64.sum(),
         tch(lambda: th["big64"].sum())),
        ("max, 10M float32", 5, lambda: ops.amax(tb), lambda: big.max(),
         tch(lambda: th["big"].max())),
        ("argmax, 10M float32", 5, lambda: ops.argmax(tb), lambda: big.argmax(),
         tch(lambda: th["big"].argmax())),
        ("var, 10M float32", 5, lambda: ops.var(tb), lambda: big.var(),
         tch(lambda: th["big"].var(unbiased=False))),
        ("sum axis 0 (4096, 1024)", 10, lambda: ops.sum(tsm, 0), lambda: sm.sum(axis=0),
         tch(lambda: th["sm"].sum(0))),
        ("sum axis 1 (4096, 1024)", 10, lambda: ops.sum(tsm, 1), lambda: sm.sum(axis=1),
         tch(lambda: th["sm"].sum(1))),
        ("softmax (4096, 1024)", 5, lambda: ops.softmax(tsm, -1), lambda: np_softmax(sm),
         tch(lambda: torch.softmax(th["sm"], -1))),
        ("log_softmax (4096, 1024)", 5, lambda: ops.log_softmax(tsm, -1),
         lambda: np.log(np_softmax(sm)), tch(lambda: torch.log_softmax(th["sm"], -1))),
        ("layer_norm (8192, 1024)", 5, lambda: ops.layer_norm(tln, (1024,), tg, tbb),
         lambda: np_layer_norm(ln, g, b),
         tch(lambda: torch.nn.functional.layer_norm(th["ln"], (1024,), th["g"], th["b"]))),
        ("matmul 1024 float32", 5, lambda: ops.matmul(t32, t32), lambda: m32 @ m32,
         tch(lambda: th["m32"] @ th["m32"])),
        ("matmul 1024 float64", 3, lambda: ops.matmul(t64, t64), lambda: m64 @ m64,
         tch(lambda: th["m64"] @ th["m64"])),
    ]
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
    if torch is None:
        print("torch: not installed, its columns are skipped")
    else:
        print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"{'op':<28}{'pijit':>12}{'numpy':>12}{'torch':>12}{'pijit/numpy':>13}{'pijit/torch':>13}")
    for name, number, pj, npf, tf in rows():
        t_pj = median_s(pj, number)
        t_np = median_s(npf, number) if npf else float("nan")
        t_t = median_s(tf, number) if tf else float("nan")

        def fmt(t):
            return "-" if t != t else (f"{t * 1e6:.2f} us" if t < 1e-3 else f"{t * 1e3:.2f} ms")
        def ratio(t):
            return "-" if t != t else f"{t_pj / t:.2f}x"
        print(f"{name:<28}{fmt(t_pj):>12}{fmt(t_np):>12}{fmt(t_t):>12}"
              f"{ratio(t_np):>13}{ratio(t_t):>13}")


if __name__ == "__main__":
    main()
