"""A CIFAR-style ResNet-18 (BasicBlocks [2, 2, 2, 2], 64-512 channels, 32x32 inputs, batch 32,
SGD with momentum 0.9) on the CPU: one training step of pijit.jit (the whole step one graph:
forward, loss, backward, the optimizer's update) against torch eager and torch.compile(model)
with the optimizer outside, as torch users write it, in the same run; then inference (the
network in eval mode, batch 1 and 32: pijit.jit of the forward, torch under no_grad, eager
and compiled). Prints the median ms per step or call and the ratios to torch.compile.

    python benchmarks/convnets.py [steps]
"""
import statistics
import sys
import time

import numpy as np

import pijit as ms
import pijit.nn as nn
from pijit import ops

BATCH = 32


class Block(nn.Cell):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, pad_mode="pad", padding=1, has_bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, pad_mode="pad", padding=1, has_bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.SequentialCell([nn.Conv2d(cin, cout, 1, stride, has_bias=False),
                                           nn.BatchNorm2d(cout)])
        self.relu = nn.ReLU()

    def construct(self, x):
        y = self.b2(self.c2(self.relu(self.b1(self.c1(x)))))
        return self.relu(y + (self.down(x) if self.down is not None else x))


class ResNet18(nn.Cell):
    def __init__(self):
        super().__init__()
        self.stem = nn.SequentialCell([nn.Conv2d(3, 64, 3, 1, pad_mode="pad", padding=1, has_bias=False),
                                       nn.BatchNorm2d(64), nn.ReLU()])
        blocks, cin = [], 64
        for stage in range(4):
            cout = 64 << stage
            for b in range(2):
                blocks.append(Block(cin, cout, 2 if stage > 0 and b == 0 else 1))
                cin = cout
        self.blocks = nn.SequentialCell(blocks)
        self.fc = nn.Dense(512, 10)

    def construct(self, x):
        return self.fc(ops.mean(self.blocks(self.stem(x)), (2, 3)))


def median_ms(step, steps, warmup=2):
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def pijit_step_ms(x, y, steps):
    net = ResNet18()
    net.set_train()  # batch statistics, as torch's model in training mode
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), 0.05, 0.9)
    grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x), y), None, opt.parameters)

    @ms.jit(mode="PIJit")
    def step(x, y):
        loss, grads = grad_fn(x, y)
        opt(grads)
        return loss

    return median_ms(lambda: step(x, y), steps)


def pijit_inference_ms(x, steps):
    net = ResNet18()
    net.set_train(False)
    forward = ms.jit(lambda x: net(x), mode="PIJit")
    return median_ms(lambda: forward(x).asnumpy(), steps)


def torch_ms(steps, make_call):
    """Median ms of torch eager and of torch.compile(model): make_call(torch, model, run)
    gives the call to time, `run` being the model itself or its compiled form. {} without
    torch."""
    try:
        import torch
        from torch_resnet import ResNet18 as TResNet18
    except ImportError:
        return {}
    out = {}
    for compiled in (False, True):
        model = TResNet18()
        run = torch.compile(model) if compiled else model
        out["torch.compile" if compiled else "torch eager"] = median_ms(make_call(torch, model, run), steps)
    return out


def torch_step(x, y):
    """A training step as torch users write it: the model (compiled or not), SGD outside."""
    def make(torch, model, run):
        import torch.nn.functional as F
        tx, ty = torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

        def step():
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(run(tx), ty).backward()
            opt.step()
        return step
    return make


def torch_inference(x):
    def make(torch, model, run):
        model.eval()
        tx = torch.from_numpy(x)

        def call():
            with torch.no_grad():
                return run(tx).numpy()
        return call
    return make


def print_table(title, unit, rows, digits):
    base = rows.get("torch.compile")
    print(title)
    print(f"| variant | ms per {unit} | vs torch.compile |")
    print("|---|---|---|")
    for name, value in rows.items():
        ratio = f"{value / base:.2f}x" if base else ""
        print(f"| {name} | {value:.{digits}f} | {ratio} |")


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    rng = np.random.default_rng(0)
    x = rng.random((BATCH, 3, 32, 32), dtype=np.float32)
    y = (np.arange(BATCH) % 10).astype(np.int32)
    rows = {"pijit.jit": pijit_step_ms(ms.Tensor(x), ms.Tensor(y), steps), **torch_ms(steps, torch_step(x, y))}
    print_table(f"ResNet-18 (CIFAR) training step, batch {BATCH}, CPU, median of {steps} steps", "step", rows, 0)
    for batch in (1, BATCH):
        xb = x[:batch]
        rows = {"pijit.jit": pijit_inference_ms(ms.Tensor(xb), steps * 2),
                **torch_ms(steps * 2, torch_inference(xb))}
        print_table(f"\nResNet-18 (CIFAR) inference, batch {batch}, CPU, median of {steps * 2} calls", "call",
                    rows, 2)


if __name__ == "__main__":
    main()
