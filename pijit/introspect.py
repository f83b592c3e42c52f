"""Introspection of compiled functions: their counters, graphs, guards and the reasons
capture stopped (pijit.explain, pijit.get_code_extra, pijit.reset)."""
import inspect
from dataclasses import dataclass, field

from pijit import _C


def reset(fn=None):
    """Drops the cached graphs of `fn`, or of every function when `fn` is None."""
    if fn is None:
        _C._reset_all()
    else:
        _C._reset_code(fn)


def _function_of(fn):
    if isinstance(fn, _C.JitFunction):
        return fn.__wrapped__
    if inspect.ismethod(fn):
        return _function_of(fn.__func__)
    if inspect.isfunction(fn):
        return fn
    raise TypeError(f"expected a Python function or a jitted function, got {type(fn).__name__}")


def _whole_graph(fn):
    if inspect.ismethod(fn):
        fn = fn.__func__
    return isinstance(fn, _C.JitFunction) and fn.fullgraph


def get_code_extra(fn):
    """Per-code counters: call_count, compile_count, cache_hits, eager_count, break_count,
    cache_entries, and the recorded reasons, graphs, guards and memory-plan arena sizes."""
    return _C._code_stats(fn)


@dataclass
class ExplainOutput:
    """What capture makes of one call: graphs (text IR), guards and reasons it stopped."""
    graphs: list = field(default_factory=list)
    guards: str = ""
    break_reasons: list = field(default_factory=list)
    ops_count: int = 0
    breaks_graph: bool = False  # the first reason is a graph break, not an eager fallback
    instructions: int = 0
    reordered_prints: list = field(default_factory=list)  # "file:line" of prints run after the graph
    rebuilt_objects: list = field(default_factory=list)   # classes the result is rebuilt with

    @property
    def graph_count(self):
        return len(self.graphs)

    @property
    def graph_break_count(self):
        return len(self.break_reasons)

    def __str__(self):
        lines = [f"Graph count: {self.graph_count}", f"Graph break count: {self.graph_break_count}",
                 f"Op count: {self.ops_count}"]
        for i, g in enumerate(self.graphs):
            lines += [f"Graph {i}:", g.rstrip()]
        if self.break_reasons:
            lines.append("Graph breaks (the rest continues in a resume function)" if self.breaks_graph
                         else "Reasons it runs eagerly:")
            lines += [f"  {r['text']}" for r in self.break_reasons]
        if self.reordered_prints:
            lines.append("Prints run after the graph, in order: " + ", ".join(self.reordered_prints))
        if self.rebuilt_objects:
            lines.append("Objects rebuilt from the graph's values: " + ", ".join(self.rebuilt_objects))
        lines += ["Guards:", self.guards.rstrip() or "  (none)"]
        return "\n".join(lines)


def explain(fn, *args, html=None, **kwargs):
    """Captures `fn(*args, **kwargs)` without running or caching it and reports the result:
    the graph (of the part before the first graph break, if there is one), the guards, and
    the reason capture stopped. With `html=path`, also writes that as the HTML report's page
    for this one function (`explain` keeps the keyword `html` for itself)."""
    out = _explain(fn, *args, **kwargs)
    if html is not None:
        _write_explain_html(fn, out, html)
    return out


def _write_explain_html(fn, out, path):
    from pijit import _report
    code = _function_of(fn).__code__
    where = {"function": code.co_qualname, "file": code.co_filename, "line": code.co_firstlineno}
    reason = out.break_reasons[0] if out.break_reasons else None
    if reason is not None:
        reason = {k: reason[k] for k in ("category", "file", "line", "explanation", "hint")}
    outcome = "graph" if reason is None else "break" if out.breaks_graph else "eager"
    capture = {"seq": 1, "t": 0.0, "event": "capture", **where, "outcome": outcome,
               "compile_index": 1, "cache_entries": 1, "dynamic": False,
               "graph": out.graphs[0] if out.graphs else None, "num_ops": out.ops_count,
               "guards": out.guards, "reason": reason,
               "phases_ms": {"capture_ms": 0.0, "compile_ms": 0.0, "settle_ms": 0.0}}
    page = _report.build_report([capture], title=f"pijit.explain: {code.co_qualname}")
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)


def _explain(fn, *args, **kwargs):
    func = _function_of(fn)
    if inspect.ismethod(fn):
        args = (fn.__self__,) + args
    bound = inspect.signature(func).bind(*args, **kwargs)
    bound.apply_defaults()
    code = func.__code__
    # The frame's parameter slots: positional and keyword-only, then the *args tuple and the
    # **kwargs dict (as the interpreter fills them).
    nparams = code.co_argcount + code.co_kwonlyargcount
    names = list(code.co_varnames[:nparams])
    if code.co_flags & inspect.CO_VARARGS:
        names.append(code.co_varnames[nparams])
    if code.co_flags & inspect.CO_VARKEYWORDS:
        names.append(code.co_varnames[nparams + bool(code.co_flags & inspect.CO_VARARGS)])
    values = [bound.arguments[n] for n in names]
    # A jitted function in whole-graph mode is captured as its calls are: without breaks.
    whole_graph = _whole_graph(fn)
    info = _C._capture(func, values, not whole_graph)
    out = ExplainOutput(guards=info["guards"], ops_count=info["num_ops"],
                        instructions=info["instructions"],
                        breaks_graph=info["graph_break"],
                        reordered_prints=list(info["reordered_prints"]),
                        rebuilt_objects=list(info["rebuilt_objects"]))
    if info["graph"]:
        out.graphs.append(info["graph"])
    if info["reason"] is not None:
        out.break_reasons.append(info["reason"])
    return out
