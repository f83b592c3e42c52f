"""Differential fuzzer for pijit's graph breaks.

Generates random Python functions (source text) that mix tensor ops (pijit.ops add, sub, mul,
exp, relu, matmul, sum, mean, reshape, transpose, maximum, where, softmax, clip, operators,
indexing with constant slices), Python scalars, tuples, lists and dicts, branches on constants
and on tensor values (`float(t.sum()) > c`, tensor truth, and/or/not), `for` loops over
range(k) and over lists, calls pijit cannot capture (helpers that print or append to a log,
keyword calls, nested calls, calls with values on the stack, generators, comprehensions,
.asnumpy()), try/except and `with`, `del`, side effects (a global log list, a global counter,
a global dict, attributes of an object, lists mutated through aliases), objects whose
operators run Python code; as plain functions, closures and methods using super(). Each
returns a tuple.

Each program runs eagerly, then jitted with mode="PIJit" (a compiling call, the same inputs
again from the cache, other inputs and `k`) and under `pijit.capture()`, every run on fresh
inputs and state; results (float tensors within a tolerance that covers the fused exp),
printed output, side-effect logs and exceptions (type and message) must agree.

    python tests/fuzz/gen.py --seeds 0:300            # run programs 0..299, print a summary
    python tests/fuzz/gen.py --show 17                # print program 17
    python tests/fuzz/gen.py --check 17 -v            # run program 17 in process, show diffs
    python tests/fuzz/gen.py --minimize 17            # shrink a failing program

Programs run in worker subprocesses (batches), so a crash (segfault, abort) of the
interpreter is recorded for the program that caused it and the campaign goes on; a batch that
hangs is killed and its current program recorded as a timeout. $PIJIT_FUZZ_FEATURES turns on
opt-in generator features (see FEATURES in fuzzgen/program.py). benchmarks/fuzz_long.py runs
time-bounded campaigns.

This module holds the worker processes, campaigns and the command line; the generator, the
harness that runs and compares programs and the minimizer are in the fuzzgen package.
"""
import argparse
import json
import os
import subprocess
import sys
import time

# The generator, the harness and the minimizer live in the fuzzgen package next to this file.
# This module is the fuzzer's interface (for tests/python/test_fuzz.py and
# benchmarks/fuzz_long.py): it re-exports them, and its workers call check_program through
# this module's namespace, so that replacing gen.check_program reaches them.
from fuzzgen.generator import Gen, generate
from fuzzgen.harness import (FILENAME, MODES, RTOL, check_program, diff, execute, jitted,
                             make_inputs, namespace, stats_of)
from fuzzgen.minimize import minimize
from fuzzgen.prelude import PRELUDE
from fuzzgen.program import FEATURES, INDENT, Program

__all__ = ["FEATURES", "FILENAME", "Gen", "INDENT", "MODES", "PRELUDE", "Program", "RTOL",
           "check_program", "diff", "execute", "generate", "import_pijit", "jitted", "main",
           "make_inputs", "minimize", "namespace", "parse_seeds", "run_batch", "run_parallel",
           "stats_of", "summarize", "worker"]


# ---- workers and campaigns ---------------------------------------------------------------------

def import_pijit(attempts=30, wait=10.0):
    """Imports pijit, waiting while a concurrent rebuild leaves it briefly unimportable."""
    for i in range(attempts):
        try:
            import pijit  # noqa: F401
            return
        except Exception:  # noqa: BLE001
            if i == attempts - 1:
                raise
            for name in [m for m in sys.modules if m == "pijit" or m.startswith("pijit.")]:
                del sys.modules[name]
            time.sleep(wait)


def worker(seeds, out=sys.stdout):
    """Runs programs in this process, one JSON line per program (and a START line before)."""
    import numpy as np
    np.seterr(all="ignore")
    import_pijit()
    for seed in seeds:
        out.write(json.dumps({"start": seed}) + "\n")
        out.flush()
        rec = {"seed": seed}
        try:
            prog = generate(seed)
            problems = check_program(prog)
            rec["status"] = "mismatch" if problems else "ok"
            if problems:
                rec["detail"] = [f"{m}: {d}"[:2000] for m, d in problems]
            try:
                rec.update(stats_of(prog))
            except Exception:  # noqa: BLE001 - statistics are best effort
                pass
        except Exception as e:  # noqa: BLE001 - a harness error is a finding too
            rec["status"] = "error"
            rec["detail"] = [f"{type(e).__name__}: {e}"[:2000]]
        out.write(json.dumps(rec) + "\n")
        out.flush()


def run_batch(seeds, timeout=120.0):
    """Runs `seeds` in worker subprocesses; a worker that dies marks its current seed as a
    crash and a new worker continues after it. Returns one record per seed."""
    todo = list(seeds)
    records = {}
    retries = 0
    while todo:
        env = dict(os.environ)
        env.pop("PIJIT_LOG", None)
        cmd = [sys.executable, os.path.abspath(__file__), "--worker",
               ",".join(str(s) for s in todo)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
        current = None
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            timed_out = True
        for line in out.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if "start" in rec:
                current = rec["start"]
            else:
                records[rec["seed"]] = rec
                current = None
        done = [s for s in todo if s in records]
        if current is not None and current not in records:
            records[current] = {"seed": current, "status": "timeout" if timed_out else "crash",
                                "detail": [f"exit {proc.returncode}: {err[-1500:]}"]}
        elif len(done) < len(todo) and current is None:
            # Died between programs or before the first (killed from outside, or the import
            # failed): try again, then blame the next program.
            retries += 1
            if retries > 2:
                nxt = next(s for s in todo if s not in records)
                records[nxt] = {"seed": nxt, "status": "crash",
                                "detail": [f"exit {proc.returncode}: {err[-1500:]}"]}
                retries = 0
        todo = [s for s in todo if s not in records]
    return [records[s] for s in seeds]


def run_parallel(seeds, jobs=2, batch=25, timeout=120.0):
    """Runs batches of seeds with `jobs` workers at a time."""
    from concurrent.futures import ThreadPoolExecutor
    seeds = list(seeds)
    chunks = [seeds[i:i + batch] for i in range(0, len(seeds), batch)]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(lambda c: run_batch(c, timeout), chunks))
    return [r for chunk in results for r in chunk]


def summarize(records):
    counts = {"programs": len(records)}
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    for key in ("graphs", "breaks", "resumes"):
        counts["total_" + key] = sum(r.get(key, 0) for r in records)
    counts["with_breaks"] = sum(1 for r in records if r.get("breaks", 0) > 0)
    return counts


# ---- command line ------------------------------------------------------------------------------

def parse_seeds(text):
    out = []
    for part in text.split(","):
        if ":" in part:
            a, b = part.split(":")
            out.extend(range(int(a), int(b)))
        elif part:
            out.append(int(part))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0:100")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--show", type=int)
    ap.add_argument("--check", type=int)
    ap.add_argument("--minimize", type=int)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.worker is not None:
        worker(parse_seeds(args.worker))
        return 0
    if args.show is not None:
        p = generate(args.show)
        print(f"# seed {p.seed}: dtype {p.dtype}, k = {p.k}")
        print(p.source)
        return 0
    if args.check is not None:
        p = generate(args.check)
        if args.verbose:
            print(p.source)
        problems = check_program(p)
        for m, d in problems:
            print(f"{m}: {d}")
        print("ok" if not problems else f"{len(problems)} mismatching modes")
        return 1 if problems else 0
    if args.minimize is not None:
        p = generate(args.minimize)
        print(f"# seed {p.seed}: dtype {p.dtype}, k = {p.k}")
        print(minimize(p))
        return 0
    t0 = time.time()
    records = run_parallel(parse_seeds(args.seeds), jobs=args.jobs)
    for r in records:
        if r["status"] != "ok":
            print(json.dumps(r))
    print(json.dumps(summarize(records)), f"in {time.time() - t0:.1f}s")
    return 0 if all(r["status"] == "ok" for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
