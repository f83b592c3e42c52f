"""Data-parallel training on MPI (pijit.communication): the jitted LeNet-5 training step
(examples/train_mnist_like.py) on one global batch, run by 1 rank and by 2 ranks under mpirun
(each rank takes its shard of the batch; the gradients are all-reduced inside the step's
graph), and the cost of the all-reduce itself. Prints steps/s (median of the repeats, each
the mean over --steps steps) for each world size, the ratio 2 ranks / 1 rank, and the median
time of one all-reduce of the network's gradients (one float32 bucket).

On one machine the ranks share its cores: on 2 cores, 2 ranks of 1 thread each against 1 rank
of 2 threads measures what data parallelism costs (the all-reduce, the smaller per-rank
batches), not a speed-up that needs more machines.

    PYTHONPATH=. python benchmarks/data_parallel.py [--batch 64] [--steps 20] [--repeat 5]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def worker(batch, steps, repeat):
    sys.path.insert(0, os.path.join(HERE, "..", "examples"))
    import pijit as ms
    from pijit import nn
    from pijit.communication import comm_func as F
    from pijit.communication import get_group_size, get_rank, init
    from train_mnist_like import LeNet5

    init()
    n, r = get_group_size(), get_rank()
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
    ms.set_seed(0)
    net = LeNet5()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(
        sparse=True, reduction="mean")), nn.Momentum(net.trainable_params(), 0.01, 0.9))
    run = ms.jit(lambda a, b: step(a, b), capture_mode="bytecode")
    rng = np.random.default_rng(r)
    x = ms.Tensor(rng.standard_normal((batch // n, 1, 28, 28)).astype(np.float32))
    y = ms.Tensor(rng.integers(0, 10, batch // n).astype(np.int32))
    for _ in range(3):
        run(x, y)
    F.barrier()
    rates = []
    for _ in range(repeat):
        F.barrier()
        start = time.perf_counter()
        for _ in range(steps):
            run(x, y)
        rates.append(steps / (time.perf_counter() - start))
    flat = ms.Tensor(np.ones(sum(p.size for p in net.trainable_params()), np.float32))
    times = []
    for _ in range(50):
        start = time.perf_counter()
        F.all_reduce(flat)
        times.append(time.perf_counter() - start)
    breaks = ms.get_code_extra(run)["total_break_count"]
    if r == 0:
        print("RESULT " + json.dumps({"ranks": n, "steps_per_s": statistics.median(rates),
                                      "all_reduce_ms": 1e3 * statistics.median(times),
                                      "gradient_floats": int(flat.size), "breaks": breaks}),
              flush=True)


def launch(n, args):
    env = {**os.environ, "OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 2) // n))}
    cmd = [shutil.which("mpirun"), "--allow-run-as-root", "--oversubscribe", "-n", str(n),
           sys.executable, os.path.abspath(__file__), "--worker", "--batch", str(args.batch),
           "--steps", str(args.steps), "--repeat", str(args.repeat)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(out.stderr[-2000:])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--worker", action="store_true")
    args = p.parse_args()
    if args.worker:
        worker(args.batch, args.steps, args.repeat)
        return
    if shutil.which("mpirun") is None:
        sys.exit("data_parallel.py needs Open MPI's mpirun (scripts/setup_deps.sh installs it)")
    one, two = launch(1, args), launch(2, args)
    print(f"LeNet-5 training step, global batch {args.batch}, jitted (breaks: 1 rank "
          f"{one['breaks']}, 2 ranks {two['breaks']})")
    print(f"  1 rank : {one['steps_per_s']:8.1f} steps/s")
    print(f"  2 ranks: {two['steps_per_s']:8.1f} steps/s   ({two['steps_per_s'] / one['steps_per_s']:.2f}x 1 rank)")
    print(f"  all-reduce of the {two['gradient_floats']} gradient floats across 2 ranks: "
          f"{two['all_reduce_ms']:.3f} ms (median of 50)")


if __name__ == "__main__":
    main()
