"""pijit.communication on Open MPI: the single-process world (always), and 2- and 3-rank jobs
under mpirun (tests/python/mpi_worker.py), whose results are compared with NumPy: every
collective and dtype, groups, point to point, mismatched arguments, data-parallel training
equal to single-process training on the whole batch, checkpoints from rank 0 only, and
failures that end the job within a bounded time instead of hanging."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import pijit as ms
from pijit import _C, nn, ops
from pijit.communication import comm_func as F

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "mpi_worker.py")
MPIRUN = shutil.which("mpirun")
needs_mpi = pytest.mark.skipif(
    MPIRUN is None or not _C.comm.built_with_mpi()
    or "libasan" in os.environ.get("LD_PRELOAD", ""),
    reason="needs Open MPI's mpirun and a pijit built with MPI (scripts/setup_deps.sh installs "
           "openmpi-bin and libopenmpi-dev); not under the AddressSanitizer run, whose preload "
           "mpirun's own processes would inherit (the regular runs start the jobs)")


def run_job(n, scenario, *args, env=None, timeout=120, launcher=None):
    """Runs the worker's scenario on n ranks; (the finished process, {rank: its result})."""
    results_dir = tempfile.mkdtemp(prefix="pijit_mpi_")
    try:
        cmd = (launcher or [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-n", str(n),
                            sys.executable]) + [WORKER, scenario, *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "PIJIT_MPI_RESULTS": results_dir, **(env or {})})
        results = {}
        for name in os.listdir(results_dir):
            if name.endswith(".json"):
                with open(os.path.join(results_dir, name)) as f:
                    r = json.load(f)
                results[r["rank"]] = r
        return proc, results
    finally:
        shutil.rmtree(results_dir, ignore_errors=True)


def run_job_on_every_rank(n, scenario, *args, **kwargs):
    """run_job, checked to have succeeded with a result from each of the n ranks; the
    results."""
    proc, results = run_job(n, scenario, *args, **kwargs)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(results) == list(range(n))
    return results


# ---- a world of one process -----------------------------------------------------------------

def test_a_process_not_started_by_mpirun_is_a_world_of_one():
    from pijit import communication as comm
    comm.init()
    assert comm.get_rank() == 0 and comm.get_group_size() == 1 and comm.get_local_rank() == 0
    assert comm.get_process_group_ranks() == [0]
    x = ms.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    # MindSpore 2.x's results: (tensor, None) from all_reduce, all_gather_into_tensor and
    # reduce_scatter_tensor (a CommHandle with async_op=True), the tensor from the others.
    for got, handle in (F.all_reduce(x), F.all_reduce(x, F.ReduceOp.MAX),
                        F.all_gather_into_tensor(x), F.reduce_scatter_tensor(x)):
        assert handle is None
        np.testing.assert_array_equal(got.asnumpy(), x.asnumpy())
    for got in (F.broadcast(x, 0), ops.AllReduce()(x)):
        np.testing.assert_array_equal(got.asnumpy(), x.asnumpy())
    for fn in (F.all_reduce, F.all_gather_into_tensor, F.reduce_scatter_tensor):
        got, handle = fn(x, async_op=True)
        handle.wait()
        assert handle.is_completed()
        np.testing.assert_array_equal(got.asnumpy(), x.asnumpy())
    F.barrier()
    comm.create_group("solo", [0])
    assert comm.get_group_size("solo") == 1 and comm.get_rank("solo") == 0
    comm.destroy_group("solo")


def test_bad_arguments_are_clear_errors():
    from pijit import communication as comm
    comm.init()
    x = ms.Tensor(np.ones(3, np.float32))
    with pytest.raises(TypeError, match="op must be one of"):
        F.all_reduce(x, "mean")
    with pytest.raises(ValueError, match="no communication group named 'nope'"):
        F.all_reduce(x, group="nope")
    with pytest.raises(TypeError, match="tensor must be a Tensor"):
        F.all_reduce(np.ones(3))
    with pytest.raises(ValueError, match="create_group: rank 3 is out of range"):
        comm.create_group("bad", [0, 3])
    with pytest.raises(ValueError, match="broadcast: src 1 is not a rank of group"):
        F.broadcast(x, 1)
    with pytest.raises(ValueError, match="not another rank"):
        F.send(x, dst=0)
    with pytest.raises(TypeError, match="async_op must be a bool"):
        F.all_reduce(x, async_op="yes")
    with pytest.raises(RuntimeError, match="backend_name"):
        comm.init("gloo")
    with pytest.raises(ValueError, match="splits the model"):
        ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.SEMI_AUTO_PARALLEL)
    with pytest.raises(ValueError, match="unknown key"):
        ms.set_auto_parallel_context(pipeline_stages=2)


def test_ops_communication_imports_and_rejects_bad_arguments():
    import pijit.ops.communication as dist
    from pijit.ops import communication
    assert dist is communication is ops.communication
    dist.init_process_group()
    assert dist.is_available() and dist.get_world_size() == 1 and dist.get_rank() == 0
    x = ms.Tensor(np.ones(3, np.float32))
    with pytest.raises(TypeError, match="op value must be one of sum, prod, min, max, avg"):
        dist.all_reduce(x, op="mean")
    with pytest.raises(TypeError, match="'async_op' must be a bool"):
        dist.all_reduce(x, async_op=1)
    with pytest.raises(TypeError, match="'group' must be type of string"):
        dist.all_reduce(x, group=3)
    with pytest.raises(TypeError, match="tensor_list must be a list of 1 tensors"):
        dist.all_gather([], x)
    with pytest.raises(ValueError, match="init_process_group: world_size 4"):
        dist.init_process_group(world_size=4)
    with pytest.raises(ValueError, match="must be correct, but got all_reduse"):
        dist.set_comm_ops_inplace(False, ["all_reduse"])
    with pytest.raises(TypeError, match="'is_enable' must be type of bool"):
        dist.set_comm_ops_inplace("no")
    with pytest.raises(ValueError, match="output tensor has shape"):
        dist.all_gather_into_tensor(ms.Tensor(np.zeros(2, np.float32)), x)


def test_collectives_need_init_first():
    code = ("import numpy as np, pijit\n"
            "from pijit.communication import comm_func as F\n"
            "try:\n    F.all_reduce(pijit.Tensor(np.ones(2)))\n"
            "except RuntimeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "call pijit.communication.init() first" in out.stdout


def test_single_process_data_parallel_training_is_plain_training():
    from pijit import communication as comm
    comm.init()
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
    try:
        net = nn.Dense(3, 1)
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), 0.1))
        assert not step.reducer_flag  # a world of one: nothing to reduce
    finally:
        ms.reset_auto_parallel_context()


@pytest.mark.parametrize("context, want", [
    ({}, [[4], [5], [3, 2, 1, 0]]),  # 4 MB buckets from the last gradient back
    ({"comm_fusion": {"allreduce": {"mode": "size", "config": 1}}}, [[4], [3, 2], [1, 0], [5]]),
    ({"all_reduce_fusion_config": [2, 4]}, [[5], [4], [3, 2], [1, 0]]),
    ({"comm_fusion": {"allreduce": {"mode": "index", "config": [3]}}}, [[5], [4, 3], [2, 1, 0]]),
    ({"comm_fusion": {"openstate": False}}, [[5], [4], [3], [2], [1], [0]]),
])
def test_gradient_buckets_follow_the_context_eagerly_and_when_captured(context, want):
    from pijit.nn.distributed import _bucket_plan
    sizes = (300000, 10, 600000, 10, 2000000, 3)
    # The last gradient is float64: a bucket holds one dtype. Full buckets are issued when
    # they fill, the rest of each range's at its end.
    grads = [ms.Tensor(np.ones(k, np.float64 if i == 5 else np.float32)) for i, k in enumerate(sizes)]
    ms.set_auto_parallel_context(**context)
    try:
        assert _bucket_plan(grads) == want
        jf = ms.jit(lambda *g: _bucket_plan(g), capture_mode="bytecode")
        assert jf(*grads) == want
        assert ms.get_code_extra(jf)["total_break_count"] == 0
    finally:
        ms.reset_auto_parallel_context()


def test_bad_fusion_settings_are_clear_errors():
    with pytest.raises(ValueError, match="all_reduce_fusion_config must be increasing positive"):
        ms.set_auto_parallel_context(all_reduce_fusion_config=[4, 2])
    with pytest.raises(ValueError, match="in 'size' mode needs 'config', a bucket size in MB"):
        ms.set_auto_parallel_context(comm_fusion={"allreduce": {"mode": "size"}})
    with pytest.raises(ValueError, match="comm_fusion has no key 'allgahter'"):
        ms.set_auto_parallel_context(comm_fusion={"allgahter": {"mode": "auto"}})
    with pytest.raises(TypeError, match="comm_fusion must be a dict"):
        ms.set_auto_parallel_context(comm_fusion=4)


def test_msrun_builds_mpiruns_command_line_and_rejects_what_does_not_fit():
    from pijit import msrun
    parse = msrun._parser().parse_args
    cmd = msrun.command(parse(["--worker_num=2", "--local_worker_num=2", "--master_port=8118",
                               "--cluster_time_out=30", "train.py", "--lr", "0.1"]), "mpirun")
    assert cmd[0] == "mpirun" and cmd[-4:] == [sys.executable, "train.py", "--lr", "0.1"]
    assert cmd[cmd.index("-n") + 1] == "2" and "PIJIT_COMM_TIMEOUT=30" in cmd
    cmd = msrun.command(parse(["--worker_num=4", "--local_worker_num=2", "--hosts=a,b", "t.py"]))
    assert cmd[cmd.index("-H") + 1] == "a:2,b:2" and cmd[cmd.index("-n") + 1] == "4"
    with pytest.raises(ValueError, match="name the machines with --hosts"):
        msrun.command(parse(["--worker_num=4", "--local_worker_num=2", "t.py"]))
    with pytest.raises(ValueError, match="3 hosts of 2 workers make 6, not --worker_num 4"):
        msrun.command(parse(["--worker_num=4", "--local_worker_num=2", "--hosts=a,b,c", "t.py"]))


# ---- jobs under mpirun ----------------------------------------------------------------------

@needs_mpi
def test_msrun_launches_a_job():
    launcher = [sys.executable, "-m", "pijit.msrun", "--worker_num=2", "--local_worker_num=2"]
    results = run_job_on_every_rank(2, "graph_collectives", launcher=launcher)
    assert results[0]["broadcast"] == results[1]["broadcast"] == float(3 * (np.arange(4) + 1).sum())

@needs_mpi
@pytest.mark.parametrize("n", [2, 3, 4])
def test_collectives_match_numpy(n):
    results = run_job_on_every_rank(n, "collectives")
    base = np.arange(6).reshape(2, 3)
    t = [np.arange(4, dtype=np.float32) * (r + 1) for r in range(n)]
    for r, got in results.items():
        assert got["size"] == n and got["local_rank"] == r
        for dtype in ("float32", "float64", "int32", "int64", "float16"):
            want = sum((base + 10 * k).astype(dtype) for k in range(n))
            np.testing.assert_array_equal(got[f"sum_{dtype}"], want)
            assert got[f"sum_dtype_{dtype}"] == dtype
        np.testing.assert_array_equal(got["max"], np.max(t, axis=0))
        np.testing.assert_array_equal(got["min"], np.min(t, axis=0))
        np.testing.assert_array_equal(got["prod"], np.prod([x + 1 for x in t], axis=0))
        np.testing.assert_array_equal(got["gather"], np.concatenate(t))
        full = sum(np.arange(2 * n, dtype=np.float32) * (k + 1) for k in range(n))
        np.testing.assert_array_equal(got["scatter"], full[2 * r:2 * r + 2])
        np.testing.assert_array_equal(got["broadcast"], t[n - 1])
        np.testing.assert_array_equal(got["primitive_all_reduce"], np.sum(t, axis=0))
        np.testing.assert_array_equal(got["primitive_broadcast"][1], 2 * t[0])
        assert "all_reduce: the ranks disagree" in got["mismatch"]
        assert "rank 0 passes Float32 (2,)" in got["mismatch"]
        if r % 2 == 0:
            evens = list(range(0, n, 2))
            assert got["evens_size"] == len(evens) and got["evens_rank"] == evens.index(r)
            assert got["evens_sum"] == [float(sum(evens))]
    np.testing.assert_array_equal(results[1]["received"], t[0] * 7)
    np.testing.assert_array_equal(results[0]["async_sum"], np.sum(t, axis=0))
    np.testing.assert_array_equal(results[0]["primitive_send"], t[0] * 5)
    np.testing.assert_array_equal(results[1]["primitive_received"], t[0] * 5)
    # Unseeded shuffles agree across the ranks (init shares rank 0's entropy): each epoch's
    # shards are disjoint and cover the dataset, and the epochs' orders differ.
    for epoch in range(2):
        rows = [results[r]["epochs"][epoch] for r in range(n)]
        assert sorted(sum(rows, [])) == list(range(12 * n))
    assert results[0]["epochs"][0] != results[0]["epochs"][1]


@needs_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_data_parallel_training_equals_training_on_the_whole_batch(tmp_path, n):
    results = run_job_on_every_rank(n, "data_parallel", str(tmp_path))
    for r in range(n):
        single = results[r]["single"][0]
        for mode in ("eager", "jitted"):
            assert len(results[r][mode][0]) == len(single) == 4
            for got, want in zip(results[r][mode][0], single):
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        assert results[r]["eager"] == results[0]["eager"]  # every rank holds the same weights
        # The jitted step is one graph: forward, backward, the gradients' all-reduce in two
        # buckets (all_reduce_fusion_config=[2]) and the update; the second layer's bucket
        # starts before the first layer's weight gradient is computed.
        assert results[r]["jitted"][1] == 0
        assert results[r]["jitted"][2] == 2
        assert results[r]["jitted"][3] is True
    for r in range(1, n):
        assert results[r]["own_weights"] != results[0]["own_weights"]
        assert results[r]["broadcast_weights"] == results[0]["own_weights"]
    # Checkpoints: rank 0 writes them, rank 1 does not.
    assert os.listdir(tmp_path / "rank_0")
    assert not (tmp_path / "rank_1").exists() or not os.listdir(tmp_path / "rank_1")


@needs_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_data_parallel_lenet5_equals_the_single_process_step_on_the_whole_batch(n):
    results = run_job_on_every_rank(n, "lenet")
    for r in range(n):
        params, losses, breaks, all_reduces = results[r]["parallel"]
        single_params, single_losses = results[r]["single"][:2]
        assert breaks == 0 and all_reduces >= 2  # one graph; the gradients in several buckets
        assert len(params) == len(single_params) == 8  # convolutions without bias
        for got, want in zip(params, single_params):
            np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-6)
        assert params == results[0]["parallel"][0]  # every rank holds the same weights
        # Each rank's loss is the mean over its own rows; their mean is the whole batch's.
        np.testing.assert_allclose(np.mean([results[k]["parallel"][1] for k in range(n)], axis=0),
                                   single_losses, rtol=1e-5)


@needs_mpi
@pytest.mark.parametrize("n", [2, 3])
def test_ops_communication_in_place_collectives_match_numpy(n):
    results = run_job_on_every_rank(n, "process_group")
    base = [(np.arange(4) + 1).astype(np.float32) * (k + 1) for k in range(n)]
    for r, got in results.items():
        assert got["initialized"] is True and got["backend"] == "mpi"
        assert got["all_reduce_returns"] == "None"
        np.testing.assert_array_equal(got["sum"], np.sum(base, axis=0))
        np.testing.assert_allclose(got["avg"], np.mean(base, axis=0), rtol=1e-6)
        np.testing.assert_array_equal(got["max"], np.max(base, axis=0))
        np.testing.assert_array_equal(got["gather"], np.concatenate(base))
        np.testing.assert_array_equal(got["gather_list"], base)
        full = sum(np.arange(2 * n, dtype=np.float32) * (k + 1) for k in range(n))
        np.testing.assert_array_equal(got["scatter"], full[2 * r:2 * r + 2])
        np.testing.assert_array_equal(got["scatter_list"], np.full(3, sum(10.0 * r + k for k in range(n))))
        # reduce: the sum on rank dst only; the others keep their input.
        np.testing.assert_array_equal(got["reduce"], np.sum(base, axis=0) if r == n - 1 else base[r])
        np.testing.assert_array_equal(got["broadcast"], base[n - 1])
        assert got["objects"] == [{"rank": k, "name": "x" * (k + 1)} for k in range(n)]
        assert got["shared"] == [0, "from rank"]
        assert got["reversed_rank"] == n - 1 - r and got["global_of_0"] == n - 1
        result, untouched, no_handle = got["not_in_place"]
        np.testing.assert_array_equal(result, np.sum(base, axis=0))
        np.testing.assert_array_equal(untouched, base[r])
        assert no_handle
    assert results[1]["recv_returns"] == 0 and results[1]["recv"] == [9.0, 9.0]


@needs_mpi
def test_a_rank_that_never_joins_times_the_others_out():
    proc, results = run_job(2, "timeout", env={"PIJIT_COMM_TIMEOUT": "2"}, timeout=60)
    assert "did not join within 2 s" in results[0]["timeout"]


@needs_mpi
def test_an_uncaught_error_on_one_rank_ends_the_job():
    proc, results = run_job(2, "uncaught", timeout=60)
    assert proc.returncode != 0
    assert "rank 1 of 2 failed with RuntimeError" in proc.stderr
    assert 0 not in results  # rank 0's all-reduce never completed


def test_all_reduce_is_a_node_of_the_captured_graph_with_a_gradient():
    from pijit import communication as comm
    comm.init()

    def f(x):
        return F.all_reduce(x * 3.0)[0].sum() + 1.0

    x = ms.Tensor(np.arange(4, dtype=np.float32))
    report = str(ms.explain(f, x))
    assert "all_reduce(%2, op=sum, group=0)" in report and "Graph break count: 0" in report
    jf = ms.jit(f, capture_mode="bytecode")
    np.testing.assert_array_equal(jf(x).asnumpy(), f(x).asnumpy())
    # d/dx sum(all_reduce(3x)) over a world of one: 3 everywhere, eager and inside a graph.
    grad = ms.grad(f)
    np.testing.assert_array_equal(grad(x).asnumpy(), np.full(4, 3.0, np.float32))
    np.testing.assert_array_equal(ms.jit(grad, capture_mode="bytecode")(x).asnumpy(),
                                  np.full(4, 3.0, np.float32))
    with pytest.raises(NotImplementedError, match="with op=prod is not supported"):
        ms.grad(lambda t: F.all_reduce(t, F.ReduceOp.PROD)[0].sum())(x)


@needs_mpi
@pytest.mark.parametrize("n", [2, 3])
def test_collectives_in_graphs_and_their_gradients_match_numpy(n):
    proc, results = run_job(n, "graph_collectives")
    assert proc.returncode == 0, proc.stderr[-3000:]
    xs = [(np.arange(2 * n, dtype=np.float32) + 1) * (k + 1) for k in range(n)]
    w = np.arange(2 * n * n, dtype=np.float32)
    total = np.sum(xs, axis=0)
    for r, got in results.items():
        want = {
            "gather": (np.concatenate(xs) * w).sum(),
            "scatter": total[2 * r:2 * r + 2].sum() * (r + 1),
            "broadcast": xs[0].sum() * 3,
            "max": np.max(xs, axis=0).sum(),
            "min": np.min(xs, axis=0).sum(),
        }
        grads = {
            # all-gather's gradient: the reduce-scatter (sum) of every rank's w
            "gather": n * w[2 * n * r:2 * n * (r + 1)],
            # reduce-scatter's: the all-gather of every rank's (k + 1) * ones(2)
            "scatter": np.repeat(np.arange(1, n + 1, dtype=np.float32), 2),
            "broadcast": np.full(2 * n, 3.0, np.float32),
            # max/min: the summed gradient (n) where this rank's input was the result
            "max": n * (xs[r] == np.max(xs, axis=0)).astype(np.float32),
            "min": n * (xs[r] == np.min(xs, axis=0)).astype(np.float32),
        }
        for name in want:
            np.testing.assert_allclose(got[name], want[name], rtol=1e-6)
            np.testing.assert_allclose(got[name + "_jit"], want[name], rtol=1e-6)
            assert got[name + "_breaks"] == 0, name
            np.testing.assert_array_equal(got[name + "_grad"], grads[name])
            np.testing.assert_array_equal(got[name + "_grad_jit"], grads[name])
        assert "all_reduce with op=prod is not supported" in got["prod_grad_error"]


@needs_mpi
@pytest.mark.parametrize("n", [2, 3])
def test_all_to_all_exchanges_blocks_and_differentiates(n):
    results = run_job_on_every_rank(n, "all_to_all")
    xs = [np.arange(n * 2 * 3, dtype=np.float32).reshape(n * 2, 3) + 100 * k for k in range(n)]
    for r, got in results.items():
        want = np.concatenate([xs[k][2 * r:2 * r + 2] for k in range(n)], axis=1)
        np.testing.assert_array_equal(got["eager"], want)
        np.testing.assert_array_equal(got["jitted"], want)
        # Block j of every rank's x went to rank j, whose loss weights it by j + 1.
        np.testing.assert_array_equal(got["grad"], np.repeat(np.arange(1, n + 1), 2)[:, None]
                                      * np.ones((1, 3)))


def test_all_to_all_in_one_process_and_its_checks():
    from pijit import ops
    from pijit.communication import init
    init()
    x = ms.Tensor(np.arange(12.0).reshape(3, 4))
    np.testing.assert_array_equal(ops.AlltoAll(1, 1, 0)(x).asnumpy(), x.asnumpy())
    with pytest.raises(ValueError, match="split_count"):
        ops.AlltoAll(2, 0, 0)(x)
    with pytest.raises(TypeError):
        ops.AlltoAll(1.0, 0, 0)(x)
