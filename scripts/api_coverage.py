#!/usr/bin/env python3
"""Writes docs/api_coverage.md: MindSpore's public API names, each marked supported, partly or
not yet by what pijit provides.

    python3 scripts/api_coverage.py           # regenerate docs/api_coverage.md
    python3 scripts/api_coverage.py --check   # exit 1 if docs/api_coverage.md is out of date

The names come from checked-in lists, docs/api_names/<namespace>.txt (taken from MindSpore's
API documentation index), so the table does not need MindSpore installed. Whether pijit
provides a name is read from pijit itself, by looking the name up where MindSpore has it
(mindspore.nn.Dense -> pijit.nn.Dense). "Partly" comes from docs/api_names/partly.txt, which
says what part of a provided name's behaviour is missing.
"""
import argparse
import dataclasses
import importlib
import sys
import textwrap
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMES_DIR = ROOT / "docs" / "api_names"
PARTLY_PATH = NAMES_DIR / "partly.txt"
DOC_PATH = ROOT / "docs" / "api_coverage.md"

SUPPORTED, PARTLY, NOT_YET = "supported", "partly", "not yet"
STATUSES = (SUPPORTED, PARTLY, NOT_YET)
LINE_WIDTH = 100


@dataclasses.dataclass(frozen=True)
class Namespace:
    key: str          # names file docs/api_names/<key>.txt and the key in partly.txt
    title: str        # what MindSpore calls it
    module: str       # the pijit module that holds the counterparts
    attr: str = ""    # an attribute of that module that holds them instead (pijit.Tensor)

    @property
    def counterpart(self):
        return f"{self.module}.{self.attr}" if self.attr else self.module


NAMESPACES = (
    Namespace("mindspore", "mindspore", "pijit"),
    Namespace("ops", "mindspore.ops (functional)", "pijit.ops"),
    Namespace("ops_primitive", "mindspore.ops (primitives)", "pijit.ops"),
    Namespace("nn", "mindspore.nn", "pijit.nn"),
    Namespace("mint", "mindspore.mint", "pijit.mint"),
    Namespace("numpy", "mindspore.numpy", "pijit.numpy"),
    Namespace("tensor_methods", "mindspore.Tensor methods", "pijit", "Tensor"),
    Namespace("initializer", "mindspore.common.initializer", "pijit.common.initializer"),
)
NAMESPACE_KEYS = tuple(ns.key for ns in NAMESPACES)

_MISSING = object()


def read_names(path):
    """The names in a names file: one a line; blank lines and '#' comments are skipped."""
    lines = (line.strip() for line in Path(path).read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def read_partly(path=PARTLY_PATH):
    """{(namespace, name): reason} from partly.txt's '<namespace> <name> <reason>' lines."""
    partly = {}
    for line in read_names(path):
        fields = line.split(None, 2)
        if len(fields) < 3 or fields[0] not in NAMESPACE_KEYS:
            raise ValueError(f"{path}: expected '<namespace> <name> <reason>' with a namespace "
                             f"in {NAMESPACE_KEYS}, got {line!r}")
        partly[(fields[0], fields[1])] = fields[2]
    return partly


def import_pijit_module(name):
    """pijit's module `name`, or None when pijit has no such module. Only pijit's own modules
    are imported: the table describes pijit, and must not pull in anything else."""
    if name != "pijit" and not name.startswith("pijit."):
        return None
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        # Absent only when the missing module is the one asked for (or a parent of it); a pijit
        # module that exists but fails to import is a bug to report, not a name to mark missing.
        # pijit itself missing is a broken install, which would mark every name "not yet".
        if name != "pijit" and err.name and (name == err.name or name.startswith(err.name + ".")):
            return None
        raise


def resolve(obj, dotted):
    """What `dotted` (e.g. 'nn.functional.relu') names under obj, segment by segment with
    getattr, or _MISSING. A segment that is not an attribute of a module may still be one of
    its submodules that the package's __init__ does not import, so that is tried too."""
    for segment in dotted.split("."):
        try:
            obj = getattr(obj, segment)
            continue
        except AttributeError:
            pass
        if not isinstance(obj, types.ModuleType):
            return _MISSING
        obj = import_pijit_module(f"{obj.__name__}.{segment}")
        if obj is None:
            return _MISSING
    return obj


def counterpart_root(ns):
    """The object a namespace's names are looked up in, or None when pijit lacks it."""
    module = import_pijit_module(ns.module)
    if module is None or not ns.attr:
        return module
    root = resolve(module, ns.attr)
    return None if root is _MISSING else root


@dataclasses.dataclass
class Report:
    namespace: Namespace
    names_file: Path
    root_found: bool
    status: dict    # name -> one of STATUSES, in the names file's order
    reasons: dict   # name -> why it is only partly supported

    def names_with(self, status):
        return [name for name, s in self.status.items() if s == status]

    def count(self, status):
        return len(self.names_with(status))


def classify(ns, partly, names_dir=NAMES_DIR):
    """The Report for one namespace: each name's status in pijit."""
    names_file = Path(names_dir) / f"{ns.key}.txt"
    root = counterpart_root(ns)
    status, reasons = {}, {}
    for name in read_names(names_file):
        if root is None or resolve(root, name) is _MISSING:
            # partly.txt describes how a provided name falls short; a name pijit does not
            # provide at all is not yet supported whatever partly.txt says.
            status[name] = NOT_YET
        elif (ns.key, name) in partly:
            status[name] = PARTLY
            reasons[name] = partly[(ns.key, name)]
        else:
            status[name] = SUPPORTED
    return Report(ns, names_file, root is not None, status, reasons)


def build_reports(names_dir=NAMES_DIR, partly_path=PARTLY_PATH):
    partly = read_partly(partly_path)
    return [classify(ns, partly, names_dir) for ns in NAMESPACES]


def covered_percent(supported, partly, total):
    return f"{100.0 * (supported + partly) / total:.1f}%" if total else "n/a"


def name_paragraph(names):
    """Names as compact comma-separated lines, so a long list stays readable."""
    if not names:
        return "None."
    text = ", ".join(f"`{name}`" for name in names)
    return textwrap.fill(text, width=LINE_WIDTH, break_long_words=False, break_on_hyphens=False)


def render_summary(reports):
    lines = ["| Namespace | Names | Supported | Partly | Not yet | Covered |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    totals = [0, 0, 0, 0]
    for report in reports:
        counts = [len(report.status)] + [report.count(s) for s in STATUSES]
        totals = [t + c for t, c in zip(totals, counts)]
        lines.append(f"| {report.namespace.title} | "
                     + " | ".join(str(c) for c in counts)
                     + f" | {covered_percent(counts[1], counts[2], counts[0])} |")
    lines.append("| **Total** | " + " | ".join(str(t) for t in totals)
                 + f" | {covered_percent(totals[1], totals[2], totals[0])} |")
    return lines


def render_namespace(report):
    ns = report.namespace
    rel_names = report.names_file.relative_to(ROOT) if report.names_file.is_relative_to(ROOT) \
        else report.names_file
    where = f"`{ns.counterpart}`"
    if not report.root_found:
        where += " (pijit has no such module yet, so every name is not yet supported)"
    lines = [f"## {ns.title}", "",
             textwrap.fill(f"Names from `{rel_names.as_posix()}`, looked up in {where}.",
                           width=LINE_WIDTH), ""]
    lines += [f"### Supported ({report.count(SUPPORTED)})", "",
              name_paragraph(report.names_with(SUPPORTED)), ""]
    lines += [f"### Partly ({report.count(PARTLY)})", ""]
    partly_names = report.names_with(PARTLY)
    if partly_names:
        lines += ["| Name | What is missing |", "| --- | --- |"]
        lines += [f"| `{name}` | {report.reasons[name]} |" for name in partly_names]
    else:
        lines.append("None.")
    lines += ["", f"### Not yet ({report.count(NOT_YET)})", "",
              name_paragraph(report.names_with(NOT_YET)), ""]
    return lines


def render(reports):
    """The whole of docs/api_coverage.md. It depends only on the names files, partly.txt and
    pijit, so regenerating it with nothing changed gives the same bytes (what --check needs)."""
    # Written as two short lines rather than wrapped, so no command is split across lines.
    lines = ["# MindSpore API coverage", "",
             "Generated by `python3 scripts/api_coverage.py`; do not edit by hand.",
             "`python3 scripts/api_coverage.py --check` exits 1 when this file is out of date.", ""]
    intro = (
        "MindSpore's public names are listed in `docs/api_names/<namespace>.txt`, taken from "
        "MindSpore's API documentation index. A name is *supported* when pijit provides it "
        "where MindSpore has it (`mindspore.nn.Dense` as `pijit.nn.Dense`), *partly* when it "
        "is provided but `docs/api_names/partly.txt` names behaviour of MindSpore's that it "
        "lacks, and *not yet* otherwise. Covered counts supported and partly names. Only the "
        "presence of a name is checked here; the tests check behaviour.")
    lines += [textwrap.fill(intro, width=LINE_WIDTH, break_on_hyphens=False), ""]
    lines += ["## Summary", ""]
    lines += render_summary(reports)
    lines.append("")
    for report in reports:
        lines += render_namespace(report)
    return "\n".join(lines).rstrip("\n") + "\n"


def check(doc_path=DOC_PATH):
    """None when doc_path holds what this script would write, else a message saying why not."""
    expected = render(build_reports())
    doc_path = Path(doc_path)
    if not doc_path.exists():
        return f"{doc_path} is missing; run python3 scripts/api_coverage.py to write it"
    if doc_path.read_text() != expected:
        return (f"{doc_path} is out of date (pijit's exports or the name lists changed); "
                f"run python3 scripts/api_coverage.py to regenerate it")
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if docs/api_coverage.md differs from what would be written")
    args = parser.parse_args(argv)
    if args.check:
        problem = check()
        if problem:
            print(problem, file=sys.stderr)
            return 1
        print(f"{DOC_PATH.relative_to(ROOT)} is current")
        return 0
    reports = build_reports()
    DOC_PATH.write_text(render(reports))
    for line in render_summary(reports):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
