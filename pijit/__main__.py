"""python -m pijit script.py [args]: runs an unchanged script with every frame captured.
python -m pijit report TRACE [-o report.html]: the HTML report of a structured trace (a
PIJIT_TRACE folder or one of its files; docs/trace.md)."""
import argparse
import os
import runpy
import sys

import pijit

USAGE = ("usage: python -m pijit script.py [args...]\n"
         "       python -m pijit report TRACE_DIR_OR_FILE [-o report.html]")


def report(argv):
    from pijit import _report
    ap = argparse.ArgumentParser(prog="python -m pijit report",
                                 description="The HTML report of a structured trace.")
    ap.add_argument("trace", help="a PIJIT_TRACE folder or one pijit-trace-*.jsonl file")
    ap.add_argument("-o", "--output", default="pijit-report.html", help="the page to write")
    ap.add_argument("--title", default=None)
    args = ap.parse_args(argv)
    try:
        out = _report.write_report(args.trace, args.output, args.title)
    except FileNotFoundError as e:
        print(f"pijit report: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0


def main():
    if len(sys.argv) < 2:
        print(USAGE, file=sys.stderr)
        return 2
    if sys.argv[1] == "report" and not os.path.isfile("report"):
        return report(sys.argv[2:])
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    pijit.enable()
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        pijit.disable()
    return 0


if __name__ == "__main__":
    sys.exit(main())
