"""The CUDA backend against torch on the same GPU, in one run.

Runs pijit's GPU kernel timings (the `pijit_cuda_bench` binary: benchmarks/cuda_kernels.cc)
and times the same work with torch (eager, and torch.compile for the elementwise chain), then
prints each pair and its ratio (pijit's time / torch's: below 1 is faster). Also prints the
fused chain against the copy bound measured on the device.

    python benchmarks/gpu.py path/to/pijit_cuda_bench

Needs a GPU and torch with CUDA; scripts/gpu_check.sh runs it.
"""
import statistics
import subprocess
import sys

import torch

N = 100_000_000
M = 4096


def median_ms(fn, runs=9):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def chain(x, y):
    return torch.relu(x * y + x) - y


def torch_timings():
    x = torch.full((N,), 1.5, device="cuda")
    y = torch.full((N,), -0.25, device="cuda")
    eager = median_ms(lambda: chain(x, y))
    compiled_chain = torch.compile(chain)
    compiled = median_ms(lambda: compiled_chain(x, y))
    # Full float32, as pijit's cuBLAS call (no TF32).
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.full((M, M), 0.5, device="cuda")
    b = torch.full((M, M), 0.25, device="cuda")
    mm = median_ms(lambda: a @ b, runs=7)
    s = torch.ones(4, device="cuda")
    t = torch.full((4,), 2.0, device="cuda")
    import time

    calls = []
    for _ in range(2000):
        t0 = time.perf_counter()
        (s + t) * s
        torch.cuda.synchronize()
        calls.append((time.perf_counter() - t0) * 1e6)
    lenet_eager, lenet_compiled = lenet_steps()
    resnet_eager, resnet_compiled = resnet_steps()
    return {"resnet_ms": resnet_eager, "resnet_compiled_ms": resnet_compiled,"fused_chain_ms": eager, "fused_chain_compiled_ms": compiled, "matmul_ms": mm,
            "call_us": statistics.median(calls), "lenet_ms": lenet_eager,
            "lenet_compiled_ms": lenet_compiled}


def training_step_ms(model_class, x, y, runs):
    """Median ms of a training step, eager and with torch.compile(model), SGD outside."""
    import torch.nn.functional as F
    times = []
    for compiled in (False, True):
        model = model_class().cuda()
        run = torch.compile(model) if compiled else model
        opt = torch.optim.SGD(model.parameters(), lr=0.05)

        def step():
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(run(x), y).backward()
            opt.step()

        for _ in range(3):
            step()
        times.append(median_ms(step, runs=runs))
    return times


def resnet_steps(batch=128):
    """CIFAR ResNet-18 training steps, full float32 (no TF32), as pijit's cuDNN calls run."""
    from torch_resnet import ResNet18
    torch.backends.cudnn.allow_tf32 = False
    x = torch.rand(batch, 3, 32, 32, device="cuda")
    y = torch.arange(batch, device="cuda") % 10
    return training_step_ms(ResNet18, x, y, runs=10)


def lenet_steps(batch=128):
    """LeNet-5 training steps as torch users write them: the model compiled, SGD outside."""
    from torch import nn
    import torch.nn.functional as F

    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(1, 6, 5), nn.Conv2d(6, 16, 5)
            self.fc1, self.fc2 = nn.Linear(256, 120), nn.Linear(120, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            return self.fc2(F.relu(self.fc1(x.flatten(1))))

    x = torch.rand(batch, 1, 28, 28, device="cuda")
    y = torch.arange(batch, device="cuda") % 10
    return training_step_ms(LeNet, x, y, runs=30)


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "build/pijit_cuda_bench"
    out = subprocess.run([binary], capture_output=True, text=True, check=True).stdout
    pj = {}
    for line in out.splitlines():
        name, _, value = line.partition(" ")
        try:
            pj[name] = float(value)
        except ValueError:  # the device, an error, what ran the convolutions, replay details
            pj[name] = value
    if "error" in pj:
        sys.exit(f"pijit: {pj['error']}")
    th = torch_timings()
    print(f"device: {pj['device']} (torch {torch.__version__}: {torch.cuda.get_device_name()})")
    gbytes = 3 * N * 4 / 1e9
    print(f"fused chain, 100M float32: pijit {pj['fused_chain_ms']:.3f} ms "
          f"({gbytes / pj['fused_chain_ms'] * 1e3:.0f} GB/s); copy bound {pj['copy_bound_ms']:.3f} ms "
          f"-> {pj['fused_chain_ms'] / pj['copy_bound_ms']:.2f}x the bound")
    print(f"  torch eager {th['fused_chain_ms']:.3f} ms -> ratio {pj['fused_chain_ms'] / th['fused_chain_ms']:.2f}")
    print(f"  torch.compile {th['fused_chain_compiled_ms']:.3f} ms -> ratio "
          f"{pj['fused_chain_ms'] / th['fused_chain_compiled_ms']:.2f}")
    flops = 2 * M ** 3
    print(f"matmul {M}^3 float32: pijit {pj['matmul_ms']:.3f} ms ({flops / pj['matmul_ms'] / 1e9:.1f} TFLOP/s), "
          f"torch {th['matmul_ms']:.3f} ms -> ratio {pj['matmul_ms'] / th['matmul_ms']:.2f}")
    print(f"two-op call on 4 elements, launch to completion: pijit {pj['call_us']:.1f} us, "
          f"torch eager {th['call_us']:.1f} us -> ratio {pj['call_us'] / th['call_us']:.2f} "
          f"(CUDA graph replay; kernel by kernel {pj['call_launches_us']:.1f} us; {pj.get('call_graph_replays', '')})")
    if "lenet_step_ms" in pj:
        print(f"LeNet-5 training step, batch 128: pijit {pj['lenet_step_ms']:.3f} ms, torch eager "
              f"{th['lenet_ms']:.3f} ms -> ratio {pj['lenet_step_ms'] / th['lenet_ms']:.2f}; "
              f"torch.compile(model) {th['lenet_compiled_ms']:.3f} ms -> ratio "
              f"{pj['lenet_step_ms'] / th['lenet_compiled_ms']:.2f} "
              f"(kernel by kernel {pj['lenet_step_launches_ms']:.3f} ms)")
    if "resnet18_step_ms" in pj:
        print(f"ResNet-18 training step, batch 128, float32 (convolutions: {pj['resnet18_convolutions']}): "
              f"pijit {pj['resnet18_step_ms']:.2f} ms, torch eager {th['resnet_ms']:.2f} ms -> ratio "
              f"{pj['resnet18_step_ms'] / th['resnet_ms']:.2f}; torch.compile(model) "
              f"{th['resnet_compiled_ms']:.2f} ms -> ratio {pj['resnet18_step_ms'] / th['resnet_compiled_ms']:.2f} "
              f"(kernel by kernel {pj['resnet18_step_launches_ms']:.2f} ms)")
    print("pijit_cuda_bench printed:")
    for line in out.splitlines():
        print("  " + line)


if __name__ == "__main__":
    main()
