"""Prints the include graph between the source folders and fails on an include against the
layering (which is how a cycle between folders would start).

Layers, lowest first; a folder may include its own headers and those of the folders below it:

    kernels        tensor runtime and kernels (no Python)
    graph          IR, passes, autodiff, executor (no Python)
    interop        Python values <-> tensors, op-argument parsing
    guards         guard programs
    bytecode       decoder, abstract interpreter, capture
    frame_eval     the PEP 523 hook (C; includes nothing of ours)
    runtime        call path, cache, continuations, eager ops, gradient tape
    pijit/csrc     the bindings

Run: python3 scripts/check_layers.py  (exit status 1 on a violation)
"""
import collections
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALLOWED = {
    "kernels": set(),
    "graph": {"kernels"},
    "interop": {"kernels", "graph"},
    "guards": {"kernels", "graph", "interop"},
    "bytecode": {"kernels", "graph", "interop", "guards"},
    "frame_eval": set(),
    "runtime": {"kernels", "graph", "interop", "guards", "bytecode", "frame_eval"},
    "pijit/csrc": {"kernels", "graph", "interop", "guards", "bytecode", "frame_eval", "runtime"},
}
NO_PYTHON = {"kernels", "graph"}
SOURCE = re.compile(r"\.(cc|h|c|def)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]')


def folder_of(path):
    for folder in sorted(ALLOWED, key=len, reverse=True):
        if path == folder or path.startswith(folder + "/"):
            return folder
    return None


def main():
    edges = collections.defaultdict(collections.Counter)
    violations = []
    for folder in ALLOWED:
        for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in sorted(files):
                if not SOURCE.search(name):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, ROOT)
                with open(path, encoding="utf-8") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        kind, header = m.groups()
                        if folder in NO_PYTHON and (header == "Python.h" or
                                                    header.startswith("pybind11/")):
                            violations.append(f"{rel}:{lineno}: {folder} must not use Python ({header})")
                        if kind != '"':
                            continue
                        target = folder_of(header)
                        if target is None or target == folder:
                            continue
                        edges[folder][target] += 1
                        if target not in ALLOWED[folder]:
                            violations.append(f"{rel}:{lineno}: {folder} includes {header} "
                                              f"({target} is not below {folder})")
    print("include graph between folders (includes per edge):")
    for src in ALLOWED:
        for dst, n in sorted(edges[src].items()):
            print(f"  {src:>10} -> {dst:<10} {n}")
    if violations:
        print(f"\n{len(violations)} include(s) against the layering:")
        for v in violations:
            print("  " + v)
        return 1
    print("no include against the layering")
    return 0


if __name__ == "__main__":
    sys.exit(main())
