"""Training steps per second of LeNet-5 (batch 32, 1x32x32, sparse softmax cross-entropy,
Momentum(0.1, 0.9)): pijit eager (TrainOneStepCell), the same step under
pijit.jit(mode="PIJit"), and torch eager / torch.compile on the same network when torch is
installed (skipped otherwise). Prints the median steps/s of each and the ratios to pijit eager.

Jitted, the whole step (forward, loss, backward and the optimizer's in-place update) is one
compiled graph; eagerly every op is dispatched from Python and recorded on the gradient tape.
"""
import os
import statistics
import sys
import time

import numpy as np

import pijit as ms
import pijit.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from train_lenet import LeNet5  # noqa: E402

BATCH, STEPS, REPEAT = 32, 20, 7


def median_steps_per_s(step, warmup=3):
    for _ in range(warmup):
        step()
    runs = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        for _ in range(STEPS):
            step()
        runs.append(STEPS / (time.perf_counter() - start))
    return statistics.median(runs)


def data():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((BATCH, 1, 32, 32)).astype(np.float32),
            rng.integers(0, 10, BATCH).astype(np.int32))


def pijit_step(jitted):
    ms.set_seed(0)
    net = LeNet5()
    train_net = nn.TrainOneStepCell(
        nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")),
        nn.Momentum(net.trainable_params(), 0.1, 0.9))
    x, y = (ms.Tensor(a) for a in data())
    if jitted:
        step = ms.jit(lambda a, b: train_net(a, b), mode="PIJit")
        return lambda: step(x, y).asnumpy()
    return lambda: train_net(x, y).asnumpy()


def torch_steps():
    try:
        import torch
    except ImportError:
        return {}
    torch.manual_seed(0)

    class TorchLeNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = torch.nn.Conv2d(1, 6, 5, bias=False)
            self.conv2 = torch.nn.Conv2d(6, 16, 5, bias=False)
            self.fc1, self.fc2, self.fc3 = (torch.nn.Linear(400, 120), torch.nn.Linear(120, 84),
                                            torch.nn.Linear(84, 10))

        def forward(self, x):
            f = torch.nn.functional
            x = f.max_pool2d(f.relu(self.conv1(x)), 2)
            x = f.max_pool2d(f.relu(self.conv2(x)), 2).flatten(1)
            return self.fc3(f.relu(self.fc2(f.relu(self.fc1(x)))))

    x, y = (torch.from_numpy(a) for a in data())
    y = y.long()
    results = {}
    for name in ("torch eager", "torch.compile"):
        model = TorchLeNet()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        loss_fn = torch.nn.CrossEntropyLoss()
        # As torch users get the best from it: the model compiled, the optimizer outside, and
        # the loss kept a tensor (no .item() sync in the step).
        net = model
        if name == "torch.compile":
            try:
                net = torch.compile(model)
                net(x)
            except Exception as e:  # noqa: BLE001 - no compiler toolchain: report and go on
                print(f"torch.compile unavailable: {type(e).__name__}: {e}".splitlines()[0])
                continue

        def step(net=net, opt=opt):
            opt.zero_grad()
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            return loss.detach()

        results[name] = median_steps_per_s(step)
    return results


def main():
    results = {"pijit eager": median_steps_per_s(pijit_step(False)),
               "pijit.jit (PIJit)": median_steps_per_s(pijit_step(True))}
    extra = torch_steps()
    if not extra:
        print("torch is not installed: torch rows skipped")
    results.update(extra)
    base = results["pijit eager"]
    print(f"LeNet-5 training step, batch {BATCH} (median of {REPEAT} runs of {STEPS} steps)")
    print(f"{'variant':<20}{'steps/s':>10}{'ms/step':>10}{'vs pijit eager':>16}")
    for name, sps in results.items():
        print(f"{name:<20}{sps:>10.1f}{1000 / sps:>10.2f}{sps / base:>15.2f}x")


if __name__ == "__main__":
    main()
