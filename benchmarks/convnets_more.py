"""ImageNet-style convolutional networks on the CPU, pijit against torch in the same run:

- ResNet-50 (bottleneck blocks [3, 4, 6, 3], 224x224 inputs, 1000 classes): a training step
  at batch 8 (SGD with momentum; pijit.jit: the whole step one graph; torch: the model as
  written and torch.compile(model), the optimizer outside) and inference at batch 1 and 8;
- a MobileNetV2 inverted-residual block (1x1 expand to 6x, 3x3 depthwise, 1x1 project, batch
  norms, ReLU6, the residual; 32 channels at 56x56, batch 32): training step and inference;
- GFLOP/s of each convolution kind these networks use (3x3, 1x1, depthwise 3x3 at strides
  1 and 2, depthwise 5x5), forward and the gradients together and one at a time, against
  the cores' FMA peak and torch eager's.

Rows: pijit eager (PyNative), pijit.jit, torch eager, torch.compile. Prints medians in ms and
ratios to torch.compile.

    python benchmarks/convnets_more.py [steps] [train,infer,block,conv]
"""
import os
import sys

import numpy as np

import pijit as ms
import pijit.nn as nn
from pijit import ops

from convnets import median_ms  # the same timing as the ResNet-18 rows

try:
    import torch
    import torch.nn as tnn
    import torch.nn.functional as F
except ImportError:  # the torch rows are left out
    torch = None


# ---- pijit models ------------------------------------------------------------------------------

class Bottleneck(nn.Cell):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * 4
        self.c1, self.b1 = nn.Conv2d(cin, width, 1, has_bias=False), nn.BatchNorm2d(width)
        self.c2 = nn.Conv2d(width, width, 3, stride, pad_mode="pad", padding=1, has_bias=False)
        self.b2 = nn.BatchNorm2d(width)
        self.c3, self.b3 = nn.Conv2d(width, cout, 1, has_bias=False), nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.SequentialCell([nn.Conv2d(cin, cout, 1, stride, has_bias=False),
                                           nn.BatchNorm2d(cout)])
        self.relu = nn.ReLU()

    def construct(self, x):
        y = self.relu(self.b1(self.c1(x)))
        y = self.relu(self.b2(self.c2(y)))
        y = self.b3(self.c3(y))
        return self.relu(y + (self.down(x) if self.down is not None else x))


class ResNet50(nn.Cell):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.SequentialCell([
            nn.Conv2d(3, 64, 7, 2, pad_mode="pad", padding=3, has_bias=False), nn.BatchNorm2d(64),
            nn.ReLU(), nn.MaxPool2d(3, 2, pad_mode="same")])
        blocks, cin = [], 64
        for stage, count in enumerate((3, 4, 6, 3)):
            width = 64 << stage
            for b in range(count):
                blocks.append(Bottleneck(cin, width, 2 if stage > 0 and b == 0 else 1))
                cin = width * 4
        self.blocks = nn.SequentialCell(blocks)
        self.fc = nn.Dense(2048, classes)

    def construct(self, x):
        return self.fc(ops.mean(self.blocks(self.stem(x)), (2, 3)))


class InvertedResidual(nn.Cell):
    def __init__(self, channels=32, expand=6):
        super().__init__()
        hidden = channels * expand
        self.expand = nn.Conv2d(channels, hidden, 1, has_bias=False)
        self.b1 = nn.BatchNorm2d(hidden)
        self.depthwise = nn.Conv2d(hidden, hidden, 3, 1, pad_mode="pad", padding=1, group=hidden,
                                   has_bias=False)
        self.b2 = nn.BatchNorm2d(hidden)
        self.project = nn.Conv2d(hidden, channels, 1, has_bias=False)
        self.b3 = nn.BatchNorm2d(channels)
        self.relu6 = nn.ReLU6()
        self.head = nn.Dense(channels, 10)

    def construct(self, x):
        y = self.relu6(self.b1(self.expand(x)))
        y = self.relu6(self.b2(self.depthwise(y)))
        y = x + self.b3(self.project(y))
        return self.head(ops.mean(y, (2, 3)))


# ---- torch models (the same architectures) -------------------------------------------------------

if torch is not None:
    class TBottleneck(tnn.Module):
        def __init__(self, cin, width, stride):
            super().__init__()
            cout = width * 4
            self.c1, self.b1 = tnn.Conv2d(cin, width, 1, bias=False), tnn.BatchNorm2d(width)
            self.c2 = tnn.Conv2d(width, width, 3, stride, 1, bias=False)
            self.b2 = tnn.BatchNorm2d(width)
            self.c3, self.b3 = tnn.Conv2d(width, cout, 1, bias=False), tnn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = tnn.Sequential(tnn.Conv2d(cin, cout, 1, stride, bias=False),
                                           tnn.BatchNorm2d(cout))

        def forward(self, x):
            y = F.relu(self.b1(self.c1(x)))
            y = F.relu(self.b2(self.c2(y)))
            y = self.b3(self.c3(y))
            return F.relu(y + (self.down(x) if self.down is not None else x))

    class TResNet50(tnn.Module):
        def __init__(self, classes=1000):
            super().__init__()
            self.stem = tnn.Sequential(tnn.Conv2d(3, 64, 7, 2, 3, bias=False), tnn.BatchNorm2d(64),
                                       tnn.ReLU(), tnn.MaxPool2d(3, 2, 1))
            blocks, cin = [], 64
            for stage, count in enumerate((3, 4, 6, 3)):
                width = 64 << stage
                for b in range(count):
                    blocks.append(TBottleneck(cin, width, 2 if stage > 0 and b == 0 else 1))
                    cin = width * 4
            self.blocks = tnn.Sequential(*blocks)
            self.fc = tnn.Linear(2048, classes)

        def forward(self, x):
            return self.fc(self.blocks(self.stem(x)).mean((2, 3)))

    class TInvertedResidual(tnn.Module):
        def __init__(self, channels=32, expand=6):
            super().__init__()
            hidden = channels * expand
            self.expand, self.b1 = tnn.Conv2d(channels, hidden, 1, bias=False), tnn.BatchNorm2d(hidden)
            self.depthwise = tnn.Conv2d(hidden, hidden, 3, 1, 1, groups=hidden, bias=False)
            self.b2 = tnn.BatchNorm2d(hidden)
            self.project, self.b3 = tnn.Conv2d(hidden, channels, 1, bias=False), tnn.BatchNorm2d(channels)
            self.head = tnn.Linear(channels, 10)

        def forward(self, x):
            y = F.relu6(self.b1(self.expand(x)))
            y = F.relu6(self.b2(self.depthwise(y)))
            y = x + self.b3(self.project(y))
            return self.head(y.mean((2, 3)))


# ---- timing ----------------------------------------------------------------------------------------

def pijit_rows(make_net, x, y, steps, train):
    rows = {}
    for jitted in (False, True):
        net = make_net()
        if train:
            net.set_train()  # batch statistics, as torch's model in training mode
            loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
            opt = nn.Momentum(net.trainable_params(), 0.01, 0.9)
            grad_fn = ms.value_and_grad(lambda a, b: loss_fn(net(a), b), None, opt.parameters)

            def step(a, b):
                loss, grads = grad_fn(a, b)
                opt(grads)
                return loss
            call = ms.jit(step, mode="PIJit") if jitted else step
            rows["pijit.jit" if jitted else "pijit eager"] = median_ms(
                lambda: call(x, y).asnumpy(), steps)
        else:
            net.set_train(False)
            forward = ms.jit(lambda a: net(a), mode="PIJit") if jitted else net
            rows["pijit.jit" if jitted else "pijit eager"] = median_ms(
                lambda: forward(x).asnumpy(), steps)
    return rows


def torch_rows(make_model, x, y, steps, train):
    if torch is None:
        return {}
    rows = {}
    tx = torch.from_numpy(x)
    ty = torch.from_numpy(y.astype(np.int64)) if y is not None else None
    for compiled in (False, True):
        model = make_model()
        run = torch.compile(model) if compiled else model
        if train:
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

            def call():
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(run(tx), ty).backward()
                opt.step()
        else:
            model.eval()

            def call():
                with torch.no_grad():
                    return run(tx).numpy()
        rows["torch.compile" if compiled else "torch eager"] = median_ms(call, steps)
    return rows


def print_table(title, rows):
    base = rows.get("torch.compile")
    print(f"\n{title}\n| variant | ms | vs torch.compile |\n|---|---|---|")
    for name, value in rows.items():
        print(f"| {name} | {value:.1f} | {f'{value / base:.2f}x' if base else ''} |")


def fma_peak_gflops():
    """Cores x clock x 2 FMA units x lanes x 2 flops: the float32 peak of the cores in use at
    the clock /proc/cpuinfo reports (cores that boost above it can exceed this "peak")."""
    cores = len(os.sched_getaffinity(0))
    with open("/proc/cpuinfo") as f:
        info = f.read()
    mhz = max(float(line.split(":")[1]) for line in info.splitlines()
              if line.startswith("cpu MHz"))
    lanes = 16 if "avx512f" in info else 8
    return cores * mhz * 1e-3 * 2 * lanes * 2, cores, mhz, lanes


def conv_gflops(steps):
    """GFLOP/s of forward, input-gradient and weight-gradient convolutions (jitted graphs
    returning one result each), and of torch's (eager; aten.convolution_backward for one
    gradient at a time)."""
    kinds = [("3x3, 64 ch, 56x56, batch 8", 8, 64, 64, 56, 3, 1),
             ("1x1, 256->64 ch, 56x56, batch 8", 8, 256, 64, 56, 1, 1),
             ("depthwise 3x3, 192 ch, 56x56, batch 8", 8, 192, 192, 56, 3, 192),
             ("depthwise 3x3 stride 2, 192 ch, 56x56, batch 8", 8, 192, 192, 56, 3, 192, 2),
             ("depthwise 5x5, 144 ch, 56x56, batch 8", 8, 144, 144, 56, 5, 144)]
    rows = []
    rng = np.random.default_rng(1)
    for name, n, cin, cout, hw, k, groups, *rest in kinds:
        stride = rest[0] if rest else 1
        x = ms.Tensor(rng.standard_normal((n, cin, hw, hw)).astype(np.float32))
        w = ms.Tensor(rng.standard_normal((cout, cin // groups, k, k)).astype(np.float32) * 0.1)
        pad = k // 2
        out = (hw + 2 * pad - k) // stride + 1
        flops = 2.0 * n * cout * out * out * (cin // groups) * k * k

        def forward(a, b):
            return ops.conv2d(a, b, stride=stride, pad_mode="pad", padding=pad, groups=groups)

        def loss(a, b):
            return forward(a, b).sum()

        fwd = ms.jit(forward, mode="PIJit")
        grads = ms.jit(ms.grad(loss, grad_position=(0, 1)), mode="PIJit")
        dx = ms.jit(ms.grad(loss, grad_position=0), mode="PIJit")
        dw = ms.jit(ms.grad(loss, grad_position=1), mode="PIJit")
        t_fwd = median_ms(lambda: fwd(x, w).asnumpy(), steps)
        t_all = median_ms(lambda: [g.asnumpy() for g in grads(x, w)], steps)
        t_dx = median_ms(lambda: dx(x, w).asnumpy(), steps)
        t_dw = median_ms(lambda: dw(x, w).asnumpy(), steps)
        # The gradient graph of a sum does not run the forward convolution (its output's
        # values are not needed): its time is the gradients' alone (and the ones they start
        # from).
        row = [name, flops / t_fwd * 1e-6, 2 * flops / t_all * 1e-6, flops / t_dx * 1e-6,
               flops / t_dw * 1e-6]
        if torch is not None:
            tx, tw = torch.from_numpy(x.asnumpy()), torch.from_numpy(w.asnumpy())
            ones = torch.ones(n, cout, out, out)

            def backward(mask):
                return torch.ops.aten.convolution_backward(
                    ones, tx, tw, None, [stride] * 2, [pad] * 2, [1, 1], False, [0, 0], groups,
                    mask)
            with torch.no_grad():
                row += [flops / median_ms(lambda: F.conv2d(tx, tw, None, stride, pad, 1, groups),
                                          steps) * 1e-6,
                        flops / median_ms(lambda: backward([True, False, False]), steps) * 1e-6,
                        flops / median_ms(lambda: backward([False, True, False]), steps) * 1e-6]
        rows.append(row)
    return rows


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    parts = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else {"train", "infer", "block", "conv"}
    rng = np.random.default_rng(0)
    peak, cores, mhz, lanes = fma_peak_gflops()
    print(f"{cores} cores at {mhz:.0f} MHz, {lanes} float lanes: FMA peak {peak:.0f} GFLOP/s")

    x = rng.standard_normal((8, 3, 224, 224)).astype(np.float32)
    y = (np.arange(8) % 1000).astype(np.int32)
    ms.set_seed(0)
    if "train" in parts:
        rows = {**pijit_rows(ResNet50, ms.Tensor(x), ms.Tensor(y), steps, True),
                **torch_rows(lambda: TResNet50(), x, y, steps, True)}
        print_table(f"ResNet-50 training step, batch 8, 224x224 (median of {steps})", rows)
    for batch in ((1, 8) if "infer" in parts else ()):
        xb = x[:batch]
        rows = {**pijit_rows(ResNet50, ms.Tensor(xb), None, steps * 2, False),
                **torch_rows(lambda: TResNet50(), xb, None, steps * 2, False)}
        print_table(f"ResNet-50 inference, batch {batch} (median of {steps * 2})", rows)

    xm = rng.standard_normal((32, 32, 56, 56)).astype(np.float32)
    ym = (np.arange(32) % 10).astype(np.int32)
    if "block" in parts:
        block_rows(xm, ym, steps)
    if "conv" in parts:
        conv_table(steps, peak)


def block_rows(xm, ym, steps):
    rows = {**pijit_rows(InvertedResidual, ms.Tensor(xm), ms.Tensor(ym), steps * 2, True),
            **torch_rows(lambda: TInvertedResidual(), xm, ym, steps * 2, True)}
    print_table(f"MobileNetV2 inverted residual block, training step, batch 32 (median of "
                f"{steps * 2})", rows)
    rows = {**pijit_rows(InvertedResidual, ms.Tensor(xm), None, steps * 2, False),
            **torch_rows(lambda: TInvertedResidual(), xm, None, steps * 2, False)}
    print_table(f"MobileNetV2 inverted residual block, inference, batch 32 (median of "
                f"{steps * 2})", rows)


def conv_table(steps, peak):
    print("\n| convolution (pijit.jit) | forward GFLOP/s | both gradients | input gradient | "
          "weight gradient | forward / peak | both / peak | torch forward | torch input "
          "gradient | torch weight gradient |\n|---|---|---|---|---|---|---|---|---|---|")
    for name, fwd, bwd, dx, dw, *t in conv_gflops(steps * 2):
        torch_cells = " | ".join(f"{v:.0f}" for v in t) if t else " |  | "
        print(f"| {name} | {fwd:.0f} | {bwd:.0f} | {dx:.0f} | {dw:.0f} | {fwd / peak:.0%} | "
              f"{bwd / peak:.0%} | {torch_cells} |")


if __name__ == "__main__":
    main()
