"""Runs one of CPython's own Lib/test modules with every frame captured by pijit.

Usage: python tests/cpython/run_module.py test_grammar
Prints one JSON line: {"module", "run", "failures", "errors", "skipped", "problems"}.
Only pijit's own files are excluded from capture, so the test module's code is captured.
"""
import importlib
import json
import os
import sys
import unittest

import pijit


def main(name):
    mod = importlib.import_module("test." + name)
    suite = unittest.defaultTestLoader.loadTestsFromModule(mod)
    pijit._C._set_skip_prefixes([os.path.dirname(os.path.abspath(pijit.__file__)) + os.sep])
    pijit.enable()
    try:
        with open(os.devnull, "w") as sink:
            result = unittest.TextTestRunner(verbosity=0, stream=sink).run(suite)
    finally:
        pijit.disable()
    print(json.dumps({
        "module": name, "run": result.testsRun, "failures": len(result.failures),
        "errors": len(result.errors), "skipped": len(result.skipped),
        "problems": [f"{t}: {tb.strip().splitlines()[-1]}" for t, tb in result.failures + result.errors],
    }))


if __name__ == "__main__":
    main(sys.argv[1])
