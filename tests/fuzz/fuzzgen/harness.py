"""Running a generated program eagerly, jitted with mode="PIJit" (compiling, from the cache,
on other inputs) and under pijit.capture(), each on fresh inputs and state, and comparing what
each run did: results, printed output, side-effect logs and exceptions."""
import contextlib
import io

from .flow_prelude import FLOW_PRELUDE
from .made import MADE_PRELUDE
from .prelude import EFFECTS_PRELUDE, PRELUDE
from .program import FEATURES

FILENAME = "<string>"  # pijit captures <string> code (other <...> files are skipped)


def make_inputs(seed, dtype):
    import numpy as np
    import pijit as ms
    rng = np.random.default_rng(seed)
    x = (rng.random((2, 3)) * 4 - 2).astype(dtype)
    y = (rng.random((2, 3)) * 4 - 2).astype(dtype)
    return ms.Tensor(x), ms.Tensor(y)


def namespace(source):
    ns = {"__name__": "pijit_fuzz_prog"}
    # The "flow" feature's programs get the effects prelude too (the base statements'
    # Tools, TOOLS, Pair and Acc live there).
    effects = "effects" in FEATURES or "flow" in FEATURES
    prelude = PRELUDE + (EFFECTS_PRELUDE if effects else "") + \
        (MADE_PRELUDE if "made" in FEATURES else "") + \
        (FLOW_PRELUDE if "flow" in FEATURES else "")
    exec(compile(prelude + source, FILENAME, "exec"), ns)
    return ns


def execute(fn, ns, prog, wrap=None, input_seed=None, k=None):
    """Runs fn on fresh inputs and state; returns the observable record."""
    k = prog.k if k is None else k
    ns["LOG"].clear()
    ns["STATE"].clear()
    ns["G"] = 0
    for reset in ("reset_cells", "reset_bump", "reset_flow"):
        if reset in ns:
            ns[reset]()
    o = ns["Obj"]()
    if "effects" in FEATURES:
        # Something to delete and to read before any store: an attribute, dict items in a
        # known order, log entries.
        o.a = 1
        ns["STATE"].update(n=2, a=3)
        ns["LOG"].extend(["first", 0])
    x, y = make_inputs(prog.seed if input_seed is None else input_seed, prog.dtype)
    if "random" in FEATURES:
        ns["ms"].set_seed(1234)
    kw = {"z": 0.5 + k, "w": y * 0.5} if "kwargs" in FEATURES else {}
    # The "lists" feature passes a list of tensors, which the program may mutate: its
    # contents after the call are compared too.
    args = (x, y, o, k) + (([x * 0.5, y + 1.0],) if "lists" in FEATURES else ())
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            if wrap is not None:
                with wrap():
                    out = ("ok", fn(*args, **kw))
            else:
                out = ("ok", fn(*args, **kw))
        except Exception as e:  # noqa: BLE001 - comparing whatever is raised
            out = ("raise", type(e).__name__, str(e), exc_view(e))
    # NumPy arrays in what is recorded are copied now: a row of a module-level array (a view)
    # logged by this run would otherwise show the stores of later runs in this namespace.
    rec = {"result": _frozen(out), "stdout": buf.getvalue(), "log": _frozen(list(ns["LOG"])),
           "G": ns.get("G", "<deleted>"), "state": _frozen(dict(ns["STATE"])),
           "attrs": _frozen(dict(sorted(vars(o).items())))}
    if "lists" in FEATURES:
        rec["ls"] = list(args[4])
    if "read_cells" in ns:
        rec["cells"] = ns["read_cells"]()
    if "read_bump" in ns:
        rec["bump"] = ns["read_bump"]()
    if "read_flow" in ns:
        rec["flow"] = ns["read_flow"]()  # module-level managers, arrays and KNOB, EXITS
    if "random" in FEATURES:
        rec["stream"] = ns["ops"].rand(3)  # where the seeded random stream is after the call
    return rec


def _frozen(v):
    """v with the NumPy arrays inside its lists, tuples and dicts (exactly those types)
    copied."""
    import numpy as np
    if isinstance(v, np.ndarray):
        return v.copy()
    if type(v) in (list, tuple):
        return type(v)(_frozen(w) for w in v)
    if type(v) is dict:
        return {k: _frozen(w) for k, w in v.items()}
    return v


def _plain(v):
    """v as far as it compares by value (tensors, numbers, strings, tuples and lists of them);
    anything else by its type's name."""
    import pijit as ms
    if isinstance(v, (ms.Tensor, str, int, float, bool, type(None))):
        return v
    if isinstance(v, (tuple, list)):
        return tuple(_plain(w) for w in v)
    return f"<{type(v).__name__}>"


def exc_args(e):
    return _plain(tuple(e.args))


def exc_view(e):
    """What an exception object shows: its type, args, attributes, notes, whether it has a
    traceback, the types of its __cause__ and __context__."""
    attrs = {k: _plain(v) for k, v in sorted(vars(e).items())}
    return (type(e).__name__, exc_args(e), attrs, _plain(getattr(e, "__notes__", None)),
            e.__traceback__ is None, type(e.__cause__).__name__,
            type(e.__context__).__name__, e.__suppress_context__)


def jitted(fn):
    """jit(mode="PIJit") of a function or of a bound method's function."""
    import types
    import pijit as ms
    if isinstance(fn, types.MethodType):
        return types.MethodType(ms.jit(fn.__func__, mode="PIJit"), fn.__self__)
    return ms.jit(fn, mode="PIJit")


RTOL = {"float32": 2e-5, "float64": 1e-12}


def diff(a, b, path="", dtype="float32"):
    """Differences between two observed values (None when equal): tensors within a
    tolerance, everything else exactly."""
    import numpy as np
    import pijit as ms
    # Each run execs the program in a namespace of its own: the prelude's classes (Pair,
    # Acc) are other class objects of the same name there.
    same_class = type(a) is type(b) or (
        type(a).__qualname__ == type(b).__qualname__ and
        type(a).__module__ == type(b).__module__ == "pijit_fuzz_prog")
    if not same_class:
        return f"{path}: type {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, ms.Tensor):
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"{path}: tensor {a.dtype}{a.shape} != {b.dtype}{b.shape}"
        x, y = a.asnumpy(), b.asnumpy()
        if x.dtype.kind != "f":
            return None if np.array_equal(x, y) else f"{path}: {x} != {y}"
        rtol = RTOL[str(x.dtype)]
        finite = np.abs(np.where(np.isfinite(x), x, 0))
        scale = max(1.0, float(finite.max())) if x.size else 1.0
        ok = np.allclose(x, y, rtol=rtol, atol=rtol * scale, equal_nan=True)
        return None if ok else f"{path}: {x.tolist()} != {y.tolist()}"
    if isinstance(a, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"{path}: ndarray {a.dtype}{a.shape} != {b.dtype}{b.shape}"
        return None if np.array_equal(a, b, equal_nan=a.dtype.kind == "f") else \
            f"{path}: {a.tolist()} != {b.tolist()}"
    if isinstance(a, BaseException):
        # Exception objects (logged): type, args, attributes, notes, traceback, cause, context.
        return diff(exc_view(a), exc_view(b), f"{path}<{type(a).__name__}>", dtype)
    if isinstance(a, (tuple, list)):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = diff(x, y, f"{path}[{i}]", dtype)
            if d:
                return d
        return None
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{path}: keys {list(a)} != {list(b)}"
        for k in a:
            d = diff(a[k], b[k], f"{path}.{k}", dtype)
            if d:
                return d
        return None
    if isinstance(a, float):
        if a == b or (a != a and b != b):
            return None
        return None if abs(a - b) <= 1e-5 * max(1.0, abs(a)) else f"{path}: {a!r} != {b!r}"
    return None if a == b else f"{path}: {a!r} != {b!r}"


MODES = ("jit", "jit_again", "jit_other", "jit_more", "capture")


def check_program(prog, modes=MODES):
    """Runs `prog` eagerly and in `modes`; returns a list of (mode, difference).

    jit: the first (compiling) call; jit_again: the same inputs again (from the cache);
    jit_other: other input data and k (other branches, recompiles: a changed k can make
    numbers graph inputs); jit_more: a third k and input data, served by those entries;
    capture: `pijit.capture()`."""
    import pijit as ms
    ns = namespace(prog.source)
    expected = execute(ns["prog"], ns, prog)
    problems = []
    jns = None
    for mode in modes:
        want = expected
        if mode in ("jit", "jit_again", "jit_other", "jit_more"):
            if jns is None:
                jns = namespace(prog.source)
                jns["jitted"] = jitted(jns["prog"])
            if mode in ("jit_other", "jit_more"):
                step = 1 if mode == "jit_other" else 3
                other, k = prog.seed + 100003 * step, (prog.k + step) % 5
                want = execute(ns["prog"], ns, prog, input_seed=other, k=k)
                got = execute(jns["jitted"], jns, prog, input_seed=other, k=k)
            else:
                got = execute(jns["jitted"], jns, prog)
        elif mode == "capture":
            cns = namespace(prog.source)
            got = execute(cns["prog"], cns, prog, wrap=ms.capture)
        else:
            raise ValueError(mode)
        d = diff(want, got, "", prog.dtype)
        if d:
            problems.append((mode, d))
    return problems


def stats_of(prog):
    """Graph-break counters of the jitted program (for the campaign's statistics)."""
    import pijit as ms
    ns = namespace(prog.source)
    jf = jitted(ns["prog"])
    execute(jf, ns, prog)
    s = ms.get_code_extra(getattr(jf, "__func__", jf))
    return {"graphs": s["graph_count"], "breaks": s["total_break_count"],
            "resumes": s["resume_functions"]}

