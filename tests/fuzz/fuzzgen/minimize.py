"""Shrinking a failing program: drop statements (or the headers of compound statements) while
the same modes still mismatch."""
from .harness import check_program, execute, namespace
from .program import Program


def _blocks(lines):
    """Indices of statements (a line and its more-indented continuation)."""
    out = []
    for i, line in enumerate(lines):
        text = line.strip()
        # The function's own header and the closure's scaffolding stay; functions defined in
        # the function's body (generators, helpers) may go.
        if (i == 0 or not text or text == "global G" or
                text.startswith(("def prog(", "def make(", "def reset_cells(", "class ")) or
                text in ("return prog",) or text.startswith("prog =")):
            continue
        if line.strip().startswith(("else:", "except")):
            continue
        ind = len(line) - len(line.lstrip())
        j = i + 1
        while j < len(lines) and (len(lines[j]) - len(lines[j].lstrip()) > ind or
                                  lines[j].strip().startswith(("else:", "except"))
                                  and len(lines[j]) - len(lines[j].lstrip()) == ind and
                                  line.strip().startswith(("if ", "try:"))):
            j += 1
        out.append((i, j))
    return out


def _still_fails(prog, source, want_modes):
    cand = Program(prog.seed, source, prog.dtype, prog.k)
    try:
        compile(source, "<min>", "exec")
        ns = namespace(source)
        base = execute(ns["prog"], ns, cand)
        if base["result"][0] == "raise" and base["result"][1] in ("NameError", "SyntaxError"):
            return False
        problems = check_program(cand)
    except Exception:  # noqa: BLE001
        return False
    return bool({m for m, _ in problems} & want_modes)


def minimize(prog):
    problems = check_program(prog)
    if not problems:
        return prog.source
    want = {m for m, _ in problems}
    lines = prog.source.splitlines()
    changed = True
    while changed:
        changed = False
        for i, j in sorted(_blocks(lines), key=lambda b: b[0] - b[1]):
            if lines[i].lstrip().startswith("return"):
                continue
            cand = lines[:i] + lines[j:]
            # A block left empty needs a body.
            src = "\n".join(cand) + "\n"
            if _still_fails(prog, src, want):
                lines = cand
                changed = True
                break
            # Or keep a compound statement's body but drop its header (dedent).
            if lines[i].rstrip().endswith(":") and lines[i].lstrip().startswith(("if ", "for ")):
                ind = len(lines[i]) - len(lines[i].lstrip())
                body = [ln for ln in lines[i + 1:j] if not ln.strip().startswith("else:")]
                body = [ln[4:] if len(ln) - len(ln.lstrip()) > ind else ln for ln in body]
                cand = lines[:i] + body + lines[j:]
                src = "\n".join(cand) + "\n"
                if _still_fails(prog, src, want):
                    lines = cand
                    changed = True
                    break
    return "\n".join(lines) + "\n"

