"""Convolution backward passes on the CPU: the input and weight gradients of ResNet-18's 3x3
layers (CIFAR-style, batch 32), float32, pijit's kernels against torch's on the same data in
the same run, with GFLOP/s (2 * N * O * C * KH * KW * OH * OW per pass).

Each pijit pass is the eager op through a one-node jitted graph (the kernel a training
step's graph runs); torch's is torch.ops.aten.convolution_backward with one output mask, as
autograd calls it. Results are checked against torch's before timing. Prints the median ms.
"""
import statistics
import timeit

import numpy as np

import pijit
from pijit import ops

try:
    import torch
except ImportError:  # pijit's figures alone
    torch = None

LAYERS = [(64, 64, 32), (128, 128, 16), (256, 256, 8), (512, 512, 4)]  # C = O, H = W


def median_ms(fn, repeat=7):
    fn()
    return statistics.median(timeit.repeat(fn, number=1, repeat=repeat)) * 1e3


def main():
    rng = np.random.default_rng(0)
    n = 32
    print("| layer | pass | pijit ms | GFLOP/s | torch ms | pijit / torch |")
    print("|---|---|---|---|---|---|")
    for c, o, hw in LAYERS:
        x = rng.standard_normal((n, c, hw, hw), dtype=np.float32)
        w = (rng.standard_normal((o, c, 3, 3)) * 0.05).astype(np.float32)
        dy = rng.standard_normal((n, o, hw, hw), dtype=np.float32)
        flops = 2 * n * o * c * 9 * hw * hw
        px, pw, pdy = pijit.Tensor(x), pijit.Tensor(w), pijit.Tensor(dy)

        grad_input = pijit.jit(lambda dy, w: ops.conv2d_transpose(dy, w, pad_mode="pad", padding=1),
                               mode="PIJit") if hasattr(ops, "conv2d_transpose") else None
        loss_w = pijit.grad(lambda w, x, dy: (ops.conv2d(x, w, pad_mode="same") * dy).sum())
        loss_x = pijit.grad(lambda x, w, dy: (ops.conv2d(x, w, pad_mode="same") * dy).sum())
        jw = pijit.jit(lambda w, x, dy: loss_w(w, x, dy), mode="PIJit")
        jx = pijit.jit(lambda x, w, dy: loss_x(x, w, dy), mode="PIJit")
        rows = [("grad_input", lambda: jx(px, pw, pdy)), ("grad_weight", lambda: jw(pw, px, pdy))]
        for name, fn in rows:
            ms = median_ms(fn)
            line = f"| {c}x{hw}x{hw} | {name} | {ms:.2f} | {flops / ms / 1e6:.0f} |"
            if torch is not None:
                tx, tw, tdy = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(dy)
                mask = [name == "grad_input", name == "grad_weight", False]

                def tfn():
                    return torch.ops.aten.convolution_backward(
                        tdy, tx, tw, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, mask)

                want = tfn()[0 if name == "grad_input" else 1].numpy()
                np.testing.assert_allclose(fn().asnumpy(), want, rtol=2e-3, atol=2e-3)
                tms = median_ms(tfn)
                line += f" {tms:.2f} | {ms / tms:.2f} |"
            else:
                line += " | |"
            print(line, flush=True)


if __name__ == "__main__":
    torch is not None and torch.set_num_threads(__import__("os").cpu_count())
    main()
