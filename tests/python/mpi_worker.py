"""Run by test_communication.py under `mpirun -n N`: each rank runs one scenario and writes
what it saw as JSON to $PIJIT_MPI_RESULTS/rank_<r>.json (a file per rank: mpirun may interleave
the ranks' printed lines); the test compares them with values computed in NumPy (every rank's
input is a known function of its rank)."""
import json
import os
import sys

import numpy as np

import pijit as ms
from pijit import nn, ops
from pijit.communication import comm_func as F
from pijit.communication import create_group, get_group_size, get_local_rank, get_rank, init


def collectives():
    r, n = get_rank(), get_group_size()
    out = {"rank": r, "size": n, "local_rank": get_local_rank()}
    for dtype in ("float32", "float64", "int32", "int64", "float16"):
        t = ms.Tensor((np.arange(6).reshape(2, 3) + 10 * r).astype(dtype))
        out[f"sum_{dtype}"] = F.all_reduce(t)[0].asnumpy().tolist()
        out[f"sum_dtype_{dtype}"] = str(F.all_reduce(t)[0].asnumpy().dtype)
    t = ms.Tensor((np.arange(4) * (r + 1)).astype(np.float32))
    out["max"] = F.all_reduce(t, F.ReduceOp.MAX)[0].asnumpy().tolist()
    out["min"] = F.all_reduce(t, F.ReduceOp.MIN)[0].asnumpy().tolist()
    out["prod"] = F.all_reduce(t + 1, F.ReduceOp.PROD)[0].asnumpy().tolist()
    out["gather"] = F.all_gather_into_tensor(t)[0].asnumpy().tolist()
    pending, handle = F.all_reduce(t, async_op=True)  # runs on the communication thread
    handle.wait()
    out["async_sum"] = pending.asnumpy().tolist()
    out["scatter"] = F.reduce_scatter_tensor(ms.Tensor(np.arange(2 * n, dtype=np.float32) * (r + 1)))[0].asnumpy().tolist()
    out["broadcast"] = F.broadcast(t, n - 1).asnumpy().tolist()
    out["primitive_all_reduce"] = ops.AllReduce()(t).asnumpy().tolist()
    out["primitive_broadcast"] = [x.asnumpy().tolist() for x in ops.Broadcast(0)((t, t * 2))]
    if r == 0:
        F.send(t * 7, dst=1)
    elif r == 1:
        out["received"] = F.recv(ms.Tensor(np.zeros(4, np.float32)), src=0).asnumpy().tolist()
    F.barrier()
    if r == 0:
        out["primitive_send"] = ops.Send(3, 1)(t * 5).asnumpy().tolist()
    elif r == 1:
        out["primitive_received"] = ops.Receive(3, 0, (4,), ms.float32)().asnumpy().tolist()
    ops.Barrier()()
    # A shuffled, sharded dataset without a seed: the ranks' shards split one shuffled order.
    data = ms.dataset.NumpySlicesDataset(np.arange(12 * n), column_names=["i"], shuffle=True,
                                         num_shards=n, shard_id=r)
    out["epochs"] = [[int(row[0]) for row in data.create_tuple_iterator(output_numpy=True)]
                     for _ in range(2)]
    create_group("evens", list(range(0, n, 2)))
    if r % 2 == 0:
        out["evens_size"] = get_group_size("evens")
        out["evens_rank"] = get_rank("evens")
        out["evens_sum"] = F.all_reduce(ms.Tensor(np.array([float(r)])), group="evens")[0].asnumpy().tolist()
    try:
        F.all_reduce(ms.Tensor(np.zeros(2 + r, np.float32)))[0]
    except ValueError as e:
        out["mismatch"] = str(e)
    return out


def make_data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 5)).astype(np.float32)
    y = (x @ rng.standard_normal((5, 2)) + 0.1).astype(np.float32)
    return x, y


def train(parallel, jitted):
    """Linear regression trained with SGD for 6 steps; data-parallel ranks each take their
    shard of every batch (the dataset's num_shards/shard_id) and average the gradients."""
    ms.set_seed(1)
    net = nn.SequentialCell(nn.Dense(5, 8, weight_init="normal"), nn.ReLU(),
                            nn.Dense(8, 2, weight_init="normal"))
    loss = nn.MSELoss()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), nn.SGD(net.trainable_params(), 0.1))
    if jitted:
        cell = step
        step = ms.jit(lambda xb, yb: cell(xb, yb), capture_mode="bytecode")
    x, y = make_data()
    shards = dict(num_shards=get_group_size(), shard_id=get_rank()) if parallel else {}
    data = ms.dataset.NumpySlicesDataset((x, y), column_names=["x", "y"], shuffle=False, **shards)
    data = data.batch(8 // (get_group_size() if parallel else 1))
    for _ in range(3):
        for xb, yb in data.create_tuple_iterator():
            step(xb, yb)
    breaks = ms.get_code_extra(step)["total_break_count"] if jitted else 0
    graphs = ms.get_code_extra(step)["all_graphs"] if jitted else []
    lines = graphs[0].splitlines() if graphs else []
    first_all_reduce = next((i for i, l in enumerate(lines) if "all_reduce(" in l), -1)
    last_matmul = max((i for i, l in enumerate(lines) if "matmul(" in l), default=-1)
    return ([p.asnumpy().tolist() for p in net.trainable_params()], breaks,
            sum(g.count("all_reduce(") for g in graphs[:1]), first_all_reduce < last_matmul)


def data_parallel():
    init()
    # Two gradient buckets: the second layer's parameters (all-reduced while the first layer's
    # gradients are computed), then the first layer's.
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True,
                                 all_reduce_fusion_config=[2])
    out = {"rank": get_rank()}
    out["eager"] = train(True, False)
    out["jitted"] = train(True, True)
    # parameter_broadcast: replicas initialised differently start from rank 0's parameters.
    ms.set_auto_parallel_context(parameter_broadcast=True)
    ms.set_seed(100 + get_rank())
    net = nn.Dense(3, 2)
    out["own_weights"] = net.weight.asnumpy().tolist()
    nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), 0.1))
    out["broadcast_weights"] = net.weight.asnumpy().tolist()
    ms.reset_auto_parallel_context()
    out["single"] = train(False, False)
    directory = os.path.join(sys.argv[2], f"rank_{get_rank()}")
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
    net = nn.Dense(2, 1)
    model = ms.train.Model(net, nn.MSELoss(), nn.SGD(net.trainable_params(), 0.01))
    config = ms.train.CheckpointConfig(save_checkpoint_steps=1)
    cb = ms.train.ModelCheckpoint(prefix="dp", directory=directory, config=config)
    data = ms.dataset.NumpySlicesDataset((np.ones((4, 2), np.float32), np.ones((4, 1), np.float32)),
                                         column_names=["x", "y"], shuffle=False,
                                         num_shards=get_group_size(), shard_id=get_rank())
    model.train(1, data.batch(2), callbacks=[cb])
    return out


def graph_collectives():
    """Each collective inside a jitted function (one graph, no break), its value and its
    gradient (MindSpore's rules), eager and jitted; rank r's input is (arange(2n) + 1) * (r + 1)."""
    init()
    r, n = get_rank(), get_group_size()
    x = ms.Tensor((np.arange(2 * n, dtype=np.float32) + 1) * (r + 1))
    w = ms.Tensor(np.arange(2 * n * n, dtype=np.float32))
    v = float(r + 1)
    fns = {
        "gather": lambda t: (F.all_gather_into_tensor(t)[0] * w).sum(),
        "scatter": lambda t: (F.reduce_scatter_tensor(t)[0] * v).sum(),
        "broadcast": lambda t: (F.broadcast(t, 0) * 3.0).sum(),
        "max": lambda t: F.all_reduce(t, F.ReduceOp.MAX)[0].sum(),
        "min": lambda t: F.all_reduce(t, F.ReduceOp.MIN)[0].sum(),
    }
    out = {"rank": r}
    for name, f in fns.items():
        jf = ms.jit(f, capture_mode="bytecode")
        out[name] = float(f(x).asnumpy())
        out[name + "_jit"] = float(jf(x).asnumpy())
        out[name + "_breaks"] = ms.get_code_extra(jf)["total_break_count"]
        out[name + "_grad"] = ms.grad(f)(x).asnumpy().tolist()
        out[name + "_grad_jit"] = ms.jit(ms.grad(f), capture_mode="bytecode")(x).asnumpy().tolist()
    try:
        ms.grad(lambda t: F.all_reduce(t, F.ReduceOp.PROD)[0].sum())(x)
    except NotImplementedError as e:
        out["prod_grad_error"] = str(e)
    return out


def lenet_step(parallel):
    """Three jitted LeNet-5 training steps (Momentum, mean cross-entropy) on a global batch of
    8: data-parallel ranks each take their rows of it and average the gradients (buckets of
    0.1 MB, several per step), the single process takes all 8."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "examples"))
    from train_mnist_like import LeNet5
    if parallel:
        ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True,
                                     comm_fusion={"allreduce": {"mode": "size", "config": 0.1}})
    ms.set_seed(3)
    net = LeNet5()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(
        sparse=True, reduction="mean")), nn.Momentum(net.trainable_params(), 0.05, 0.9))
    run = ms.jit(lambda a, b: step(a, b), capture_mode="bytecode")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 8).astype(np.int32)
    n, r = (get_group_size(), get_rank()) if parallel else (1, 0)
    rows = slice(r * 8 // n, (r + 1) * 8 // n)
    losses = [float(run(ms.Tensor(x[rows]), ms.Tensor(y[rows])).asnumpy()) for _ in range(3)]
    graphs = ms.get_code_extra(run)["all_graphs"]
    ms.reset_auto_parallel_context()
    return ([p.asnumpy().tolist() for p in net.trainable_params()], losses,
            ms.get_code_extra(run)["total_break_count"], sum(g.count("all_reduce(") for g in graphs[:1]))


def lenet():
    init()
    return {"rank": get_rank(), "parallel": lenet_step(True), "single": lenet_step(False)}


def process_group():
    """mindspore.ops.communication's torch-style API: in place by default, then returning."""
    from pijit.ops import communication as dist
    dist.init_process_group()
    r, n = dist.get_rank(), dist.get_world_size()
    base = lambda: ms.Tensor((np.arange(4) + 1).astype(np.float32) * (r + 1))  # noqa: E731
    out = {"rank": r, "initialized": dist.is_initialized(), "backend": dist.get_backend()}
    t = base()
    out["all_reduce_returns"] = repr(dist.all_reduce(t))
    out["sum"] = t.asnumpy().tolist()
    t = base()
    dist.all_reduce(t, op="avg", async_op=True).wait()
    out["avg"] = t.asnumpy().tolist()
    t = base()
    dist.all_reduce(t, op="max", async_op=True).wait()
    out["max"] = t.asnumpy().tolist()
    gathered = ms.Tensor(np.zeros(4 * n, np.float32))
    dist.all_gather_into_tensor(gathered, base())
    out["gather"] = gathered.asnumpy().tolist()
    pieces = [ms.Tensor(np.zeros(4, np.float32)) for _ in range(n)]
    dist.all_gather(pieces, base())
    out["gather_list"] = [p.asnumpy().tolist() for p in pieces]
    block = ms.Tensor(np.zeros(2, np.float32))
    dist.reduce_scatter_tensor(block, ms.Tensor(np.arange(2 * n, dtype=np.float32) * (r + 1)))
    out["scatter"] = block.asnumpy().tolist()
    mine = ms.Tensor(np.zeros(3, np.float32))
    dist.reduce_scatter(mine, [ms.Tensor(np.full(3, 10.0 * k + r, np.float32)) for k in range(n)])
    out["scatter_list"] = mine.asnumpy().tolist()
    t = base()
    dist.reduce(t, dst=n - 1)
    out["reduce"] = t.asnumpy().tolist()
    t = base()
    dist.broadcast(t, src=n - 1)
    out["broadcast"] = t.asnumpy().tolist()
    if r == 0:
        dist.isend(ms.Tensor(np.full(2, 9.0, np.float32)), dst=1, tag=4).wait()
    elif r == 1:
        got = ms.Tensor(np.zeros(2, np.float32))
        out["recv_returns"] = dist.recv(got, src=0, tag=4)
        out["recv"] = got.asnumpy().tolist()
    objects = [None] * n
    dist.all_gather_object(objects, {"rank": r, "name": "x" * (r + 1)})
    out["objects"] = objects
    shared = [r, "from rank"] if r == 0 else [None, None]
    dist.broadcast_object_list(shared, src=0)
    out["shared"] = shared
    group = dist.new_group(list(range(n - 1, -1, -1)))
    out["reversed_rank"] = dist.get_rank(group)
    out["global_of_0"] = dist.get_global_rank(group, 0)
    dist.set_comm_ops_inplace(False)
    t = base()
    result, handle = dist.all_reduce(t)
    out["not_in_place"] = [result.asnumpy().tolist(), t.asnumpy().tolist(), handle is None]
    dist.set_comm_ops_inplace(True)
    dist.barrier()
    return out


def all_to_all():
    """AlltoAll eagerly, compiled and its gradient (the gradient of the sum of every rank's
    loss, rank j weighting what it received by j + 1)."""
    init()
    r, n = get_rank(), get_group_size()
    x = ms.Tensor((np.arange(n * 2 * 3, dtype=np.float32).reshape(n * 2, 3) + 100 * r))
    op = ops.AlltoAll(n, 0, 1)
    out = {"rank": r, "eager": op(x).asnumpy().tolist(),
           "jitted": ms.jit(lambda t: op(t) * 1)(x).asnumpy().tolist()}
    weight = float(r + 1)
    out["grad"] = ms.grad(lambda t: (op(t) * weight).sum())(x).asnumpy().tolist()
    return out


def timeout():
    init()
    if get_rank() == 1:
        import time
        time.sleep(6)  # never joins the collective in time
        return {"rank": 1}
    try:
        F.all_reduce(ms.Tensor(np.ones(2, np.float32)))[0]
    except TimeoutError as e:
        return {"rank": 0, "timeout": str(e)}
    return {"rank": 0}


def uncaught():
    init()
    if get_rank() == 1:
        raise RuntimeError("rank one fails")
    F.all_reduce(ms.Tensor(np.ones(2, np.float32)))[0]  # never completes: the job is aborted
    return {"rank": 0, "completed": True}


if __name__ == "__main__":
    scenario = sys.argv[1]
    if scenario == "collectives":
        init()
    result = {"collectives": collectives, "data_parallel": data_parallel, "timeout": timeout,
              "uncaught": uncaught, "graph_collectives": graph_collectives,
              "lenet": lenet, "process_group": process_group,
              "all_to_all": all_to_all}[scenario]()
    path = os.path.join(os.environ["PIJIT_MPI_RESULTS"], f"rank_{result['rank']}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(path + ".tmp", path)
