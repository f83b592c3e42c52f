"""Data-parallel training on MPI (pijit.communication): a jitted training step on one global
batch, run by 1 rank and by 2 ranks under mpirun (each rank takes its shard of the batch; the
gradients are all-reduced in buckets inside the step's graph), for LeNet-5
(examples/train_mnist_like.py, 61,706 parameters) and an MLP (784-2048-2048-10, 5.8 million
parameters: several 4 MB gradient buckets).

Prints, per network: steps/s (median of the repeats, each the mean over --steps steps) for 1
rank, for 2 ranks, and for 2 ranks with the overlap turned off (PIJIT_COMM_OVERLAP=0: every
all-reduce starts after the whole backward pass); the all-reduce time per step and the
fraction of it hidden behind the backward pass (1 - time the step waited for the
collectives / time they took from start to completion, kernels/comm/comm_thread.h Stats).

On one machine the ranks share its cores: on 2 cores, 2 ranks of 1 thread each against 1 rank
of 2 threads measures what data parallelism costs (the all-reduce, the smaller per-rank
batches), not a speed-up that needs more machines; and the communication thread shares its
rank's core, so what overlap hides here is mostly the wait for the other rank.

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


def build(model):
    sys.path.insert(0, os.path.join(HERE, "..", "examples"))
    from pijit import nn
    if model == "lenet":
        from train_mnist_like import LeNet5
        return LeNet5(), (1, 28, 28)
    return nn.SequentialCell(nn.Flatten(), nn.Dense(784, 2048), nn.ReLU(), nn.Dense(2048, 2048),
                             nn.ReLU(), nn.Dense(2048, 10)), (1, 28, 28)


def worker(model, batch, steps, repeat):
    import pijit as ms
    from pijit import _C, nn
    from pijit.communication import comm_func as F
    from pijit.communication import get_group_size, get_rank, init

    init()
    n, r = get_group_size(), get_rank()
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
    ms.set_seed(0)
    net, sample = build(model)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(
        sparse=True, reduction="mean")), nn.Momentum(net.trainable_params(), 0.01, 0.9))
    run = ms.jit(lambda a, b: step(a, b), capture_mode="bytecode")
    rng = np.random.default_rng(r)
    x = ms.Tensor(rng.standard_normal((batch // n, *sample)).astype(np.float32))
    y = ms.Tensor(rng.integers(0, 10, batch // n).astype(np.int32))
    for _ in range(3):
        run(x, y)
    rates, busy, waited = [], 0.0, 0.0
    for _ in range(repeat):
        F.barrier()
        _C.comm.reset_stats()
        start = time.perf_counter()
        for _ in range(steps):
            run(x, y)
        rates.append(steps / (time.perf_counter() - start))
        stats = _C.comm.stats()
        busy += stats["busy_seconds"]
        waited += stats["waited_seconds"]
    graphs = ms.get_code_extra(run)["all_graphs"]
    if r == 0:
        print("RESULT " + json.dumps({
            "ranks": n, "steps_per_s": statistics.median(rates),
            "comm_ms_per_step": 1e3 * busy / (steps * repeat),
            "hidden": 1 - waited / busy if busy > 0 else 0.0,
            "parameters": int(sum(p.size for p in net.trainable_params())),
            "all_reduces": sum(g.count("all_reduce(") for g in graphs[:1]),
            "breaks": ms.get_code_extra(run)["total_break_count"]}), flush=True)


def launch(n, model, args, overlap=True):
    env = {**os.environ, "OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 2) // n)),
           "PIJIT_COMM_OVERLAP": "1" if overlap else "0"}
    cmd = [shutil.which("mpirun"), "--allow-run-as-root", "--oversubscribe", "-n", str(n),
           sys.executable, os.path.abspath(__file__), "--worker", model, "--batch", str(args.batch),
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
    p.add_argument("--models", default="lenet,mlp")
    p.add_argument("--worker", choices=["lenet", "mlp"])
    args = p.parse_args()
    if args.worker:
        worker(args.worker, args.batch, args.steps, args.repeat)
        return
    if shutil.which("mpirun") is None:
        sys.exit("data_parallel.py needs Open MPI's mpirun (scripts/setup_deps.sh installs it)")
    for model in args.models.split(","):
        one, two = launch(1, model, args), launch(2, model, args)
        plain = launch(2, model, args, overlap=False)
        print(f"{model}: {one['parameters']} parameters, jitted training step, global batch "
              f"{args.batch} (graph breaks {one['breaks']}/{two['breaks']}; "
              f"{two['all_reduces']} all-reduce buckets)")
        print(f"  1 rank                 : {one['steps_per_s']:8.1f} steps/s")
        print(f"  2 ranks, overlapped    : {two['steps_per_s']:8.1f} steps/s  "
              f"({two['steps_per_s'] / one['steps_per_s']:.2f}x 1 rank); all-reduce "
              f"{two['comm_ms_per_step']:.2f} ms/step, {100 * two['hidden']:.0f}% hidden")
        print(f"  2 ranks, not overlapped: {plain['steps_per_s']:8.1f} steps/s  "
              f"({plain['steps_per_s'] / one['steps_per_s']:.2f}x 1 rank); all-reduce "
              f"{plain['comm_ms_per_step']:.2f} ms/step, {100 * plain['hidden']:.0f}% hidden")


if __name__ == "__main__":
    main()
