"""Depthwise and grouped conv2d on the CPU, float32, batch 8: GFLOP/s of the forward, the
input gradient and the weight gradient (pijit.jit graphs returning one result each; a
gradient graph includes the output gradient of the sum it starts from) per CPU-second of the
process (steadier than wall time on a loaded machine) and per wall-clock second, and torch
eager's (F.conv2d, aten.convolution_backward one gradient at a time) in the same process.
Lower quartile of `steps` calls.

    python benchmarks/conv_depthwise.py [steps] [depthwise,grouped]
"""
import sys
import time

import numpy as np

import pijit as ms
from pijit import ops

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the torch columns are left out
    torch = None

# (label, channels, size, kernel, stride, groups); groups None: depthwise.
DEPTHWISE = [("depthwise 3x3, 192 ch, 56x56", 192, 56, 3, 1, None),
             ("depthwise 3x3 stride 2, 192 ch, 56x56", 192, 56, 3, 2, None),
             ("depthwise 5x5, 144 ch, 56x56", 144, 56, 5, 1, None),
             ("depthwise 5x5 stride 2, 192 ch, 28x28", 192, 28, 5, 2, None)]
GROUPED = [("3x3, 256 ch, 32 groups of 8, 28x28", 256, 28, 3, 1, 32),
           ("3x3 stride 2, 128 ch, 16 groups of 8, 28x28", 128, 28, 3, 2, 16),
           ("3x3, 128 ch, 32 groups of 4, 28x28", 128, 28, 3, 1, 32)]


def lower_quartile(call, steps):
    """(CPU seconds, wall seconds) of one call, each the lower quartile of `steps` calls."""
    call()
    call()
    cpu, wall = [], []
    for _ in range(steps):
        c0, w0 = time.process_time(), time.perf_counter()
        call()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return sorted(cpu)[steps // 4], sorted(wall)[steps // 4]


def measure(channels, size, k, stride, groups, steps):
    groups = groups or channels
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, channels, size, size)).astype(np.float32)
    w = (rng.standard_normal((channels, channels // groups, k, k)) * 0.1).astype(np.float32)
    pad = k // 2
    out = (size + 2 * pad - k) // stride + 1
    flops = 2.0 * 8 * channels * out * out * (channels // groups) * k * k
    X, W = ms.Tensor(x), ms.Tensor(w)

    def forward(a, b):
        return ops.conv2d(a, b, stride=stride, pad_mode="pad", padding=pad, groups=groups)

    def loss(a, b):
        return forward(a, b).sum()

    graphs = [ms.jit(forward, mode="PIJit"), ms.jit(ms.grad(loss, grad_position=0), mode="PIJit"),
              ms.jit(ms.grad(loss, grad_position=1), mode="PIJit")]
    pijit = [lower_quartile(lambda g=g: g(X, W).asnumpy(), steps) for g in graphs]
    row = [flops / c * 1e-9 for c, _ in pijit] + [flops / w_ * 1e-9 for _, w_ in pijit]
    if torch is not None:
        tx, tw = torch.from_numpy(x), torch.from_numpy(w)
        ones = torch.ones(8, channels, out, out)

        def backward(mask):
            return torch.ops.aten.convolution_backward(
                ones, tx, tw, None, [stride] * 2, [pad] * 2, [1, 1], False, [0, 0], groups, mask)
        with torch.no_grad():
            calls = [lambda: F.conv2d(tx, tw, None, stride, pad, 1, groups),
                     lambda: backward([True, False, False]), lambda: backward([False, True, False])]
            row += [flops / lower_quartile(c, steps)[0] * 1e-9 for c in calls]
    return row


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    parts = sys.argv[2].split(",") if len(sys.argv) > 2 else ["depthwise", "grouped"]
    print("| convolution, batch 8 | forward | input gradient | weight gradient | (per wall "
          "second) | torch forward | torch input gradient | torch weight gradient |\n"
          "|---|---|---|---|---|---|---|---|")
    for label, *problem in (DEPTHWISE if "depthwise" in parts else []) + (
            GROUPED if "grouped" in parts else []):
        r = measure(*problem, steps)
        torch_cells = " | ".join(f"{v:.1f}" for v in r[6:]) if len(r) > 6 else " |  | "
        print(f"| {label} | {r[0]:.1f} | {r[1]:.1f} | {r[2]:.1f} | {r[3]:.1f}, {r[4]:.1f}, "
              f"{r[5]:.1f} | {torch_cells} |", flush=True)


if __name__ == "__main__":
    main()
