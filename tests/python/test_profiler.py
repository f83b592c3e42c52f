"""pijit.Profiler: op times recorded between start and stop, for compiled graphs and eager
ops, written as MindSpore's CPU profiler tables."""
import csv
import json
import os

import numpy as np
import pytest

import pijit as ms
from pijit import ops


def step(x, w):
    return ops.relu(ops.matmul(x, w)) * 2 + 1


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_records_graph_nodes_and_eager_ops(tmp_path):
    x = ms.Tensor(np.ones((8, 16), np.float32))
    w = ms.Tensor(np.ones((16, 4), np.float32))
    jitted = ms.jit(step)
    jitted(x, w)  # compiled before profiling: only runs are timed
    prof = ms.Profiler(output_path=str(tmp_path))
    for _ in range(3):
        jitted(x, w)
    ops.exp(x)
    ops.exp(x)
    prof.analyse()
    detail = read_csv(tmp_path / "profiler" / "cpu_op_detail_info_0.csv")
    # The graph's nodes (the product, fused with what follows it where the passes fuse it)
    # each ran once per call.
    graph_rows = [r for r in detail if r["op_side"] == "graph"]
    assert graph_rows and all(int(r["op_occurrences"]) == 3 for r in graph_rows)
    assert all("f32(8, 4)" in r["op_name"] for r in graph_rows)
    product = next(r["op_type"] for r in graph_rows if "matmul" in r["op_type"])
    eager_exp = [r for r in detail if r["op_side"] == "eager" and r["op_type"] == "exp"]
    assert eager_exp and int(eager_exp[0]["op_occurrences"]) == 2
    total = sum(float(r["op_total_time(us)"]) for r in detail)
    assert total > 0
    assert abs(sum(float(r["total_percentage"]) for r in detail) - 100) < 0.5
    by_type = {r["op_type"]: r for r in read_csv(tmp_path / "profiler" / "cpu_op_type_info_0.csv")}
    assert int(by_type["exp"]["type_occurrences"]) >= 2
    info = json.loads(prof.op_analyse(product))
    assert info[product]["op_info"][0]["count"] == 3
    assert json.loads(prof.op_analyse(["nothing"]))["nothing"]["op_info"] == []


def test_nothing_recorded_outside_start_and_stop(tmp_path):
    x = ms.Tensor(np.ones((4,), np.float32))
    prof = ms.Profiler(output_path=str(tmp_path), start_profile=False)
    ops.exp(x)
    with pytest.raises(RuntimeError, match="never"):
        prof.analyse()
    prof.start()
    ops.sin(x)
    prof.stop()
    ops.cos(x)  # after stop: not recorded
    kinds = [o["op_kind"] for o in json.loads(prof.op_analyse(["sin", "cos", "exp"]))["sin"]
             ["op_info"]]
    assert len(kinds) == 1
    assert json.loads(prof.op_analyse("cos"))["cos"]["op_info"] == []
    assert not ms._C._op_profiling()


def test_one_profiler_at_a_time_and_bad_arguments(tmp_path):
    with ms.Profiler(output_path=str(tmp_path)) as first:
        with pytest.raises(RuntimeError, match="another"):
            ms.Profiler(output_path=str(tmp_path))
        assert first._running
    assert not first._running
    with pytest.raises(RuntimeError, match="not recording"):
        first.stop()
    with pytest.raises(TypeError):
        ms.Profiler(output_path="")
    with pytest.raises(TypeError):
        ms.Profiler(output_path=str(tmp_path), start_profile="yes")
    with pytest.warns(UserWarning, match="profile_memory"):
        p = ms.Profiler(output_path=str(tmp_path), profile_memory=True)
    p.add_metadata("run", 7)
    p.analyse(pretty=True)
    with open(os.path.join(tmp_path, "profiler", "profiler_info.json")) as f:
        assert json.load(f)["metadata"] == {"run": "7"}
    with pytest.raises(NotImplementedError):
        ms.Profiler.offline_analyse(str(tmp_path))
