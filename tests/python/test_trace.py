"""The structured trace (pijit.trace, PIJIT_TRACE): records against docs/trace.md's schema for
programs with graph breaks, recompiles, symbolic sizes and the recompile limit; tracing
changes no result; the size cap, a failing sink and the environment variable."""
import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import pijit
from pijit import _C

# docs/trace.md, schema 1: the fields of each event and their types (None: null allowed).
COMMON = {"seq": int, "t": float, "event": str}
WHERE = {"function": str, "file": str, "line": int}
REASON = {"category": str, "file": str, "line": int, "explanation": str, "hint": str}
STATS = {**WHERE, "calls": int, "cache_hits": int, "compiles": int, "breaks": int,
         "eager_calls": int, "cache_entries": int, "compile_ms": float, "run_ms": float}
SCHEMA = {
    "trace_start": {"schema": int, "pid": int, "python": str, "argv": list, "unix_time": float},
    "capture": {**WHERE, "outcome": str, "compile_index": int, "cache_entries": int,
                "dynamic": bool, "graph": (str, None), "num_ops": int, "guards": str, "inlined": list,
                "reason": (dict, None), "phases_ms": dict},
    "recompile": {**WHERE, "cache_entries": int, "failed_guard": str, "value_now": str},
    "recompile_limit": {**WHERE, "limit": int, "compile_count": int},
    "eager_fallback": {**WHERE, "reason": dict},
    "function_stats": {"functions": list},
    "node_profile": {"note": str, "nodes": list},
    "trace_truncated": {"max_bytes": int, "note": str},
    "trace_end": {},
}


def is_a(value, kinds):
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    for k in kinds:
        if k is None and value is None:
            return True
        if k is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if k is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if k not in (None, float, int) and isinstance(value, k):
            return True
    return False


def check_schema(records):
    assert records[0]["event"] == "trace_start" and records[0]["schema"] == 1
    assert records[-1]["event"] == "trace_end"
    for i, r in enumerate(records):
        assert r["event"] in SCHEMA, r
        want = {**COMMON, **SCHEMA[r["event"]]}
        assert r["seq"] == i, (i, r)
        assert set(r) == set(want), (r["event"], sorted(set(r) ^ set(want)))
        for key, kinds in want.items():
            assert is_a(r[key], kinds), (r["event"], key, r[key])
        if r["event"] == "capture":
            assert r["outcome"] in ("graph", "break", "eager")
            assert set(r["phases_ms"]) == {"capture_ms", "compile_ms", "settle_ms"}
            assert all(v >= 0 for v in r["phases_ms"].values())
            assert (r["reason"] is None) == (r["outcome"] == "graph")
            assert (r["graph"] is None) == (r["num_ops"] == 0 and r["graph"] is None)
        if r.get("reason") is not None:
            assert set(r["reason"]) == set(REASON)
            for key, kinds in REASON.items():
                assert is_a(r["reason"][key], kinds)
        if r["event"] == "function_stats":
            for d in r["functions"]:
                assert set(d) == set(STATS), sorted(set(d) ^ set(STATS))
                for key, kinds in STATS.items():
                    assert is_a(d[key], kinds), (key, d[key])
    ts = [r["t"] for r in records]
    assert ts == sorted(ts)


def T(*shape):
    return pijit.Tensor(np.arange(np.prod(shape), dtype=np.float32).reshape(shape) * 0.5 - 1.0)


def helper(v):
    return v * 2.0


def with_break(x, n):
    y = helper(x) + n
    pijit.graph_break()
    if y.sum() > 0:  # a tensor branch too: a bridge and two resume functions
        y = y - 1.0
    return y * 3.0


def run_traced(tmp_path, fn, calls, **kw):
    jf = pijit.jit(fn, capture_mode="bytecode")
    pijit.reset(jf)
    with pijit.trace(tmp_path, **kw) as path:
        results = [jf(*args) for args in calls]
    return results, pijit.read_trace(path), path


def test_breaks_and_recompiles_follow_the_schema_and_change_no_result(tmp_path):
    calls = [(T(3), 1.0), (T(3), 2.0), (-T(3) - 5.0, 1.0), (T(4), 1.0), (T(2, 2), 1.0)]
    got, records, path = run_traced(tmp_path, with_break, calls)
    for (args, g) in zip(calls, got):
        np.testing.assert_array_equal(g.asnumpy(), with_break(*args).asnumpy())
    check_schema(records)
    assert os.path.basename(path) == f"pijit-trace-{os.getpid()}.jsonl"
    captures = [r for r in records if r["event"] == "capture"]
    roots = [r for r in captures if r["function"] == "with_break"]
    resumes = [r for r in captures if "<resume@" in r["function"]]
    assert roots[0]["outcome"] == "break" and roots[0]["compile_index"] == 1
    assert roots[0]["reason"]["category"] == "unsupported_call"
    assert roots[0]["reason"]["line"] == with_break.__code__.co_firstlineno + 2
    assert "TENSOR_MATCH(args[0])" in roots[0]["guards"] and roots[0]["num_ops"] >= 1
    assert roots[0]["inlined"] == [f"helper ({__file__}:{helper.__code__.co_firstlineno})"]
    assert resumes, "the resume functions' captures are traced too"
    assert any(r["reason"] and r["reason"]["category"] == "data_dependent" for r in resumes)
    # A new size recompiles: the event names the tensor guard and the size the call has now.
    recompiles = [r for r in records if r["event"] == "recompile" and r["function"] == "with_break"]
    assert recompiles, records
    assert any("TENSOR_MATCH(args[0])" in r["failed_guard"] and "(4,)" in r["value_now"]
               for r in recompiles)
    # The second size makes the sizes symbolic.
    assert any(r["dynamic"] for r in roots[1:])


def test_a_changed_python_value_names_its_guard(tmp_path):
    def scale(x, mode):
        return x * 2.0 if mode == "double" else x * 3.0

    calls = [(T(3), "double"), (T(3), "triple")]
    got, records, _ = run_traced(tmp_path, scale, calls)
    check_schema(records)
    rec = [r for r in records if r["event"] == "recompile"]
    assert len(rec) == 1
    assert "args[1]" in rec[0]["failed_guard"] and "'triple'" in rec[0]["value_now"]
    for (args, g) in zip(calls, got):
        np.testing.assert_array_equal(g.asnumpy(), scale(*args).asnumpy())


def test_the_recompile_limit_is_traced_once(tmp_path):
    def pick(x, mode):
        return x * float(len(mode))

    limit = _C._cache_limit()
    _C._set_cache_limit(2)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            calls = [(T(2), "m" * (k + 1)) for k in range(5)]  # each string is guarded
            got, records, _ = run_traced(tmp_path, pick, calls)
    finally:
        _C._set_cache_limit(limit)
    check_schema(records)
    limits = [r for r in records if r["event"] == "recompile_limit"]
    assert len(limits) == 1 and limits[0]["limit"] == 2
    assert limits[0]["function"].endswith("<locals>.pick")
    assert limits[0]["compile_count"] == 2
    for (args, g) in zip(calls, got):
        np.testing.assert_array_equal(g.asnumpy(), pick(*args).asnumpy())


def test_eager_verdicts_carry_their_reason(tmp_path):
    def with_cells(x):
        k = 2.0
        g = lambda v: v * k  # noqa: E731 - `k` is a cell: no resume function can be made
        pijit.graph_break()
        return g(x)

    got, records, _ = run_traced(tmp_path, with_cells, [(T(2),)] * 2)
    check_schema(records)
    caps = [r for r in records if r["event"] == "capture"]
    assert [r["outcome"] for r in caps] == ["eager"], caps  # the second call hits the cache
    assert caps[0]["graph"] is None and caps[0]["reason"]["category"] == "unsupported_call"
    np.testing.assert_array_equal(got[1].asnumpy(), with_cells(T(2)).asnumpy())


def test_cache_hits_write_nothing_and_no_trace_means_no_sink(tmp_path):
    assert not _C._trace_on()
    jf = pijit.jit(lambda x: x * 2.0 + 1.0, capture_mode="bytecode")
    pijit.reset(jf)
    with pijit.trace(tmp_path) as path:
        assert _C._trace_on()
        for _ in range(50):
            jf(T(3))
    assert not _C._trace_on()
    events = [r["event"] for r in pijit.read_trace(path)]
    assert events == ["trace_start", "capture", "function_stats", "trace_end"]
    stats = pijit.read_trace(path)[2]["functions"]
    assert len(stats) == 1 and stats[0]["calls"] == 50 and stats[0]["cache_hits"] == 49
    assert stats[0]["compiles"] == 1 and stats[0]["run_ms"] > 0


def test_nested_blocks_and_the_size_cap(tmp_path):
    outer, inner = tmp_path / "outer", tmp_path / "inner"
    fns = [pijit.jit(eval(f"lambda x: x * {k}.0 + 1.0"), capture_mode="bytecode") for k in range(40)]
    with pijit.trace(outer) as outer_path:
        fns[0](T(2))
        with pijit.trace(inner, max_bytes=3000) as inner_path:
            for f in fns[1:]:
                f(T(2))
        fns[0](T(3))  # back to the outer block's file
    inner_records = pijit.read_trace(inner_path)
    check_schema(inner_records)
    assert [r["event"] for r in inner_records].count("trace_truncated") == 1
    assert os.path.getsize(inner_path) < 3000 + 2000  # the cap, the note and trace_end
    outer_events = [r["event"] for r in pijit.read_trace(outer_path)]
    assert outer_events.count("capture") == 2  # fns[0] twice (a new size), nothing of the inner block
    assert outer_events.count("recompile") == 1
    assert "trace_truncated" not in outer_events


def test_bad_arguments_are_clear_errors(tmp_path):
    with pytest.raises(TypeError, match="directory must be a path"):
        with pijit.trace(3):
            pass
    with pytest.raises(ValueError, match="max_bytes must be a positive int"):
        with pijit.trace(tmp_path, max_bytes=0):
            pass
    assert not _C._trace_on()


def test_a_failing_sink_stops_tracing_and_keeps_the_result(monkeypatch):
    seen, unraisable = [], []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)

    def sink(record):
        seen.append(record["event"])
        raise RuntimeError("sink failed")

    jf = pijit.jit(with_break, capture_mode="bytecode")
    pijit.reset(jf)
    _C._set_trace_sink(sink)
    try:
        got = jf(T(3), 1.0)
        assert not _C._trace_on()
    finally:
        _C._set_trace_sink(None)
    assert seen == ["capture"]
    assert len(unraisable) == 1 and isinstance(unraisable[0].exc_value, RuntimeError)
    np.testing.assert_array_equal(got.asnumpy(), with_break(T(3), 1.0).asnumpy())


def test_the_environment_variable_traces_a_whole_process(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, pijit
        f = pijit.jit(lambda x: x.sum() * 2.0, capture_mode="bytecode")
        print(float(f(pijit.Tensor(np.ones(4, np.float32)))))
    """)
    env = dict(os.environ, PIJIT_TRACE=str(tmp_path), PIJIT_PROFILE="1")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "8.0"
    files = list(tmp_path.glob("pijit-trace-*.jsonl"))
    assert len(files) == 1
    records = [json.loads(line) for line in files[0].read_text().splitlines()]
    check_schema(records)
    events = [r["event"] for r in records]
    assert events[1] == "capture" and "node_profile" in events
    nodes = next(r for r in records if r["event"] == "node_profile")["nodes"]
    assert nodes and all(set(n) == {"node", "ms", "runs"} for n in nodes)
