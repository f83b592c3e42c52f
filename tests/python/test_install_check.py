"""pijit.__version__ and run_check (MindSpore's installation check): the version of the
installed distribution; the check multiplies tensors eagerly and compiled and says whether
both equal NumPy's product, naming the device, or prints the failure instead of raising."""
from importlib.metadata import version

import pytest

import pijit as ms
from pijit import ops


def test_version_is_the_distributions():
    assert ms.__version__ == version("pijit")


def test_run_check_reports_success_on_the_context_device(capsys):
    ms.run_check()
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"pijit version: {ms.__version__}",
                     "The result of multiplication calculation is correct, pijit has been "
                     "installed on platform [CPU] successfully!"]


def test_run_check_reports_a_wrong_product_without_raising(capsys, monkeypatch):
    monkeypatch.setattr(ops, "mul", lambda p, q: ops.add(p, q))
    ms.run_check()
    out = capsys.readouterr().out
    assert "pijit running check failed." in out
    assert "differs from NumPy's" in out
    assert "successfully" not in out
