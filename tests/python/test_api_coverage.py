"""docs/api_coverage.md: it is current, its statuses agree with what pijit exports, and the
checked-in name lists it is made from are well formed."""
import importlib.util
import re
import sys
from pathlib import Path

import pytest

import pijit
import pijit.common.initializer
import pijit.nn
import pijit.ops

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "api_coverage.py"
NAMES_DIR = ROOT / "docs" / "api_names"


def _load_script():
    # scripts/ is not a package; load the script as a module to call its functions directly.
    spec = importlib.util.spec_from_file_location("api_coverage", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


ac = _load_script()

# Where each namespace's names live in pijit, written out here rather than taken from the
# script, so a wrong mapping in the script is caught. None: pijit has no such module (yet).
ROOTS = {
    "mindspore": pijit,
    "ops": pijit.ops,
    "ops_primitive": pijit.ops,
    "nn": pijit.nn,
    "tensor_methods": pijit.Tensor,
    "initializer": pijit.common.initializer,
    "mint": importlib.import_module("pijit.mint") if importlib.util.find_spec("pijit.mint") else None,
    "numpy": importlib.import_module("pijit.numpy") if importlib.util.find_spec("pijit.numpy") else None,
}
SOURCES = {
    "mindspore": "mindspore.rst", "ops": "mindspore.ops.rst",
    "ops_primitive": "mindspore.ops.primitive.rst", "nn": "mindspore.nn.rst",
    "mint": "mindspore.mint.rst", "numpy": "mindspore.numpy.rst",
    "tensor_methods": "Tensor_list.rst", "initializer": "mindspore.common.initializer.rst",
}


@pytest.fixture(scope="module")
def reports():
    return {report.namespace.key: report for report in ac.build_reports()}


def names_in(key):
    return ac.read_names(NAMES_DIR / f"{key}.txt")


def test_doc_is_current():
    problem = ac.check()
    assert problem is None, problem


def test_check_notices_a_stale_doc(tmp_path):
    doc = tmp_path / "api_coverage.md"
    assert ac.check(doc) is not None  # missing
    doc.write_text(ac.render(ac.build_reports()))
    assert ac.check(doc) is None
    doc.write_text(doc.read_text().replace("| mindspore |", "| mindspore (old) |"))
    assert "out of date" in ac.check(doc)


def test_every_namespace_is_covered(reports):
    assert set(reports) == set(ROOTS) == set(SOURCES)


@pytest.mark.parametrize("key", sorted(ROOTS))
def test_status_agrees_with_hasattr(reports, key):
    # The script's "provided" (supported or partly) must be exactly hasattr on pijit's
    # counterpart, computed here independently, for every undotted name in the list.
    report, root = reports[key], ROOTS[key]
    assert list(report.status) == names_in(key)
    for name, status in report.status.items():
        if "." in name:
            continue
        provided = root is not None and hasattr(root, name)
        assert (status != ac.NOT_YET) == provided, (key, name, status)


@pytest.mark.parametrize("key, name, root", [
    ("nn", "Dense", pijit.nn), ("nn", "SequentialCell", pijit.nn),
    ("ops", "matmul", pijit.ops), ("ops_primitive", "MatMul", pijit.ops),
    ("tensor_methods", "asnumpy", pijit.Tensor), ("mindspore", "Tensor", pijit),
    ("initializer", "Normal", pijit.common.initializer), ("nn", "thor", pijit.nn),
])
def test_known_names_are_supported(reports, key, name, root):
    assert name in names_in(key)
    assert hasattr(root, name)
    assert reports[key].status[name] == ac.SUPPORTED


def test_partly_names(reports):
    # nn.Conv2d rejects data_format='NHWC', which partly.txt records.
    assert hasattr(pijit.nn, "Conv2d")
    assert reports["nn"].status["Conv2d"] == ac.PARTLY
    assert "NCHW" in reports["nn"].reasons["Conv2d"]


@pytest.mark.parametrize("key, name, root", [
    ("ops_primitive", "NeighborExchangeV2", pijit.ops),
    ("mindspore", "load_distributed_checkpoint", pijit),
])
def test_missing_names_are_not_yet(reports, key, name, root):
    assert name in names_in(key)
    assert not hasattr(root, name)
    assert reports[key].status[name] == ac.NOT_YET


def test_dotted_mint_names(reports):
    dotted = [name for name in names_in("mint") if "." in name]
    assert "nn.functional.relu" in dotted
    if ROOTS["mint"] is None:
        assert all(reports["mint"].status[name] == ac.NOT_YET for name in dotted)
    else:
        for name in dotted:
            provided = ac.resolve(ROOTS["mint"], name) is not ac._MISSING
            assert (reports["mint"].status[name] != ac.NOT_YET) == provided, name


def test_import_pijit_module_stays_inside_pijit():
    assert ac.import_pijit_module("pijit.nn") is pijit.nn
    assert ac.import_pijit_module("pijit.no_such_module") is None
    assert ac.import_pijit_module("json") is None  # not pijit's: never imported
    assert ac.resolve(pijit, "nn.Dense") is pijit.nn.Dense
    assert ac.resolve(pijit, "nn.NoSuchLayer") is ac._MISSING


def test_partly_entries_are_known_provided_names(reports):
    partly = ac.read_partly()
    assert partly, "partly.txt is empty"
    for (key, name), reason in partly.items():
        assert name in names_in(key), (key, name)
        # An entry for a name pijit does not provide is stale: the name would show as not yet.
        assert reports[key].status[name] == ac.PARTLY, (key, name)
        assert reports[key].reasons[name] == reason


@pytest.mark.parametrize("key", sorted(SOURCES))
def test_names_file_is_sorted_unique_and_nonempty(key):
    path = NAMES_DIR / f"{key}.txt"
    lines = path.read_text().splitlines()
    assert lines[0] == (f"# MindSpore {key} public names, from its API documentation index "
                        f"(docs/api/api_python_en/{SOURCES[key]})")
    names = names_in(key)
    assert names, f"{path} lists no names"
    assert names == sorted(names), f"{path} is not sorted"
    assert len(names) == len(set(names)), f"{path} has duplicates"
    assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", n)
               for n in names), f"{path} has a line that is not a dotted name"
    assert all(line.startswith("#") or line == line.strip() and line for line in lines)
