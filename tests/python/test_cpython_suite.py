"""CPython's own tests pass under pijit.enable() exactly as they do without it."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CPY = os.path.join(HERE, "..", "cpython")


def _modules():
    with open(os.path.join(CPY, "modules.txt")) as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def _run(module, *extra):
    out = subprocess.run([sys.executable, os.path.join(CPY, "run_module.py"), module, *extra],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", _modules())
def test_cpython_module_passes_under_enable(module):
    result = _run(module)
    assert result["run"] > 0
    assert result["failures"] == 0 and result["errors"] == 0, result["problems"]
