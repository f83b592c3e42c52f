"""A time-bounded differential fuzzing campaign for pijit's graph breaks.

Runs the programs of tests/fuzz/gen.py (eager vs jit(mode="PIJit") vs pijit.capture()) in
worker subprocesses, batch after batch, until the time is up, then prints how many programs
ran, how many mismatched, crashed (the worker died: segfault, abort) or hung, and the seeds of
the failing ones (reproduce one with `python tests/fuzz/gen.py --check SEED -v`, shrink it with
`--minimize SEED`).

    python benchmarks/fuzz_long.py                   # 300 s from seed 0
    python benchmarks/fuzz_long.py --seconds 3600 --start 100000 --jobs 2
    python benchmarks/fuzz_long.py --features random,wide   # opt-in generator features
"""
import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "fuzz"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=300.0, help="time budget (default 300)")
    ap.add_argument("--start", type=int, default=0, help="first seed")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes at a time")
    ap.add_argument("--batch", type=int, default=20, help="programs per worker process")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON only")
    ap.add_argument("--features", default=os.environ.get("PIJIT_FUZZ_FEATURES", ""),
                    help="generator features: random (seeded random ops), wide (many locals)")
    args = ap.parse_args(argv)
    # The generator (and its worker processes) read the features from the environment.
    os.environ["PIJIT_FUZZ_FEATURES"] = args.features
    import gen

    t0 = time.time()
    seed = args.start
    records = []
    while time.time() - t0 < args.seconds:
        n = args.batch * args.jobs
        records += gen.run_parallel(range(seed, seed + n), jobs=args.jobs, batch=args.batch)
        seed += n
    elapsed = time.time() - t0
    summary = gen.summarize(records)
    failing = {}
    for r in records:
        if r["status"] != "ok":
            failing.setdefault(r["status"], []).append(r["seed"])
    summary["seconds"] = round(elapsed, 1)
    summary["seeds"] = f"{args.start}:{seed}"
    summary["features"] = args.features
    summary["failing"] = failing
    if args.json:
        print(json.dumps(summary))
        return 0
    print(f"programs   {summary['programs']}  (seeds {summary['seeds']}, {elapsed:.0f} s, "
          f"{summary['programs'] / max(elapsed, 1e-9):.1f}/s, features "
          f"{args.features or 'default'})")
    print(f"ok         {summary.get('ok', 0)}")
    print(f"mismatches {summary.get('mismatch', 0)}")
    print(f"crashes    {summary.get('crash', 0)}")
    print(f"timeouts   {summary.get('timeout', 0)}")
    print(f"errors     {summary.get('error', 0)}  (harness or generator errors)")
    print(f"graphs {summary['total_graphs']}, graph breaks {summary['total_breaks']}, resume "
          f"functions {summary['total_resumes']}; programs with a break: "
          f"{summary['with_breaks']}")
    for status, seeds in sorted(failing.items()):
        print(f"{status}: {' '.join(map(str, seeds[:200]))}")
    for r in records:
        if r["status"] != "ok":
            print(json.dumps(r)[:1000])
    return 0 if not failing else 1


if __name__ == "__main__":
    sys.exit(main())
