"""One self-contained HTML page from structured traces (docs/trace.md): a summary table per
function, each function's source with its break lines marked and their reasons beside them,
each graph drawn as inline SVG, the recompile history as a timeline and where the time went.
No network: the CSS, the script (a search box) and the pictures are in the page.

    python -m pijit report TRACE_DIR_OR_FILE -o report.html
"""
import html
import linecache
import os
import re

from pijit import _report_graph
from pijit._trace import read_trace

_RESUME = re.compile(r"\.<resume@(\d+)>$")
_OUTCOME_COLOUR = {"graph": "#2f9e44", "break": "#f08c00", "eager": "#c92a2a"}

CSS = """
body{font-family:Helvetica,Arial,sans-serif;margin:24px;color:#212529;max-width:1400px}
h1{font-size:22px} h2{font-size:18px;margin-top:28px} h3{font-size:15px}
table{border-collapse:collapse;font-size:13px} td,th{border:1px solid #dee2e6;padding:4px 8px}
th{background:#f1f3f5;text-align:left} td.n{text-align:right;font-variant-numeric:tabular-nums}
pre.src{background:#f8f9fa;border:1px solid #dee2e6;padding:6px 0;font-size:12px;overflow-x:auto}
pre.src span.ln{display:block;padding:0 8px;white-space:pre}
pre.src span.brk{background:#fff3bf;border-left:4px solid #f08c00}
pre.src span.why{display:block;padding:0 8px 0 48px;color:#c92a2a;white-space:pre-wrap}
details{margin:8px 0} summary{cursor:pointer;font-weight:bold}
.key{display:inline-block;padding:2px 8px;margin:2px;border-radius:4px;font-size:12px}
.muted{color:#868e96;font-size:12px}
.graph{overflow:auto;max-height:900px;border:1px solid #e9ecef;margin:6px 0}
.graph svg{max-width:100%;height:auto}
#search{font-size:14px;padding:4px 8px;width:320px}
.guards{font-size:11px;color:#495057}
"""

SCRIPT = """
function filterFunctions(q){q=q.toLowerCase();
 document.querySelectorAll('section.fn').forEach(function(s){
  s.style.display=s.dataset.name.toLowerCase().indexOf(q)>=0?'':'none';});}
"""


def load_records(path):
    """The records of a trace file, or of every pijit-trace-*.jsonl in a folder, in order."""
    if os.path.isdir(path):
        files = sorted(os.path.join(path, f) for f in os.listdir(path)
                       if f.startswith("pijit-trace-") and f.endswith(".jsonl"))
        if not files:
            raise FileNotFoundError(f"no pijit-trace-*.jsonl file in {path}")
    elif os.path.isfile(path):
        files = [path]
    else:
        raise FileNotFoundError(f"no trace at {path}")
    records = []
    for f in files:
        records.extend(read_trace(f))
    return records


def _root_key(r):
    return (_RESUME.sub("", r["function"]), r["file"], r["line"])


class _Function:
    def __init__(self, key):
        self.name, self.file, self.line = key
        self.captures, self.recompiles, self.fallbacks, self.limits = [], [], [], []
        self.stats = []

    def total(self, field):
        return sum(s[field] for s in self.stats)


def _group(records):
    functions = {}
    for r in records:
        if "function" not in r:
            continue
        key = _root_key(r)
        fn = functions.setdefault(key, _Function(key))
        {"capture": fn.captures, "recompile": fn.recompiles, "eager_fallback": fn.fallbacks,
         "recompile_limit": fn.limits}.get(r["event"], []).append(r)
    for r in records:
        if r["event"] != "function_stats":
            continue
        for d in r["functions"]:
            fn = functions.get(_root_key(d))
            # The function's own counters: its resume functions' calls are parts of its calls
            # (and its run time includes theirs).
            if fn is not None and d["function"] == fn.name:
                fn.stats.append(d)
    return sorted(functions.values(), key=lambda f: (f.file, f.line, f.name))


def _source_lines(file, first, last_hint):
    """The function's source: its decorators and `def` line, then its body until the
    indentation falls back to the `def`'s (past the last line the trace names)."""
    lines = []
    first_line = linecache.getline(file, first)
    if not first_line:
        return []
    indent = len(first_line) - len(first_line.lstrip())
    seen_def = False
    for n in range(first, first + 400):
        text = linecache.getline(file, n)
        if not text:
            break
        stripped = text.strip()
        if not seen_def:
            seen_def = stripped.startswith(("def ", "async def ", "lambda")) or "lambda" in stripped
        elif stripped and len(text) - len(text.lstrip()) <= indent and n > last_hint:
            break
        lines.append((n, text.rstrip("\n")))
    while lines and not lines[-1][1].strip():
        lines.pop()
    return lines


def _source_html(fn):
    reasons = {}
    for c in fn.captures + fn.fallbacks:
        r = c.get("reason")
        if r and r["file"] == fn.file:
            reasons.setdefault(r["line"], set()).add(f"{r['category']}: {r['explanation']}")
    last = max(reasons, default=fn.line)
    lines = _source_lines(fn.file, fn.line, last)
    if not lines:
        return '<p class="muted">(source not available)</p>'
    out = ['<pre class="src">']
    for n, text in lines:
        cls = "ln brk" if n in reasons else "ln"
        out.append(f'<span class="{cls}" data-line="{n}">{n:5d}  {html.escape(text)}</span>')
        for why in sorted(reasons.get(n, ())):
            out.append(f'<span class="why">&#8627; {html.escape(why)}</span>')
    out.append("</pre>")
    return "".join(out)


def _summary_html(functions):
    rows = ["<table><tr><th>function</th><th>calls</th><th>cache hits</th><th>compiles</th>"
            "<th>breaks</th><th>eager calls</th><th>recompiles</th><th>compile ms</th>"
            "<th>run ms</th></tr>"]
    for i, fn in enumerate(functions):
        compile_ms = sum(sum(c["phases_ms"].values()) for c in fn.captures)
        stats = fn.stats
        cell = (lambda f: f"{fn.total(f)}") if stats else (lambda f: "&ndash;")
        run = f"{fn.total('run_ms'):.2f}" if stats else "&ndash;"
        breaks = sum(c["outcome"] == "break" for c in fn.captures)
        rows.append(
            f'<tr><td><a href="#fn{i}">{html.escape(fn.name)}</a> '
            f'<span class="muted">{html.escape(os.path.basename(fn.file))}:{fn.line}</span></td>'
            f'<td class="n">{cell("calls")}</td><td class="n">{cell("cache_hits")}</td>'
            f'<td class="n">{len(fn.captures)}</td><td class="n">{breaks}</td>'
            f'<td class="n">{cell("eager_calls")}</td><td class="n">{len(fn.recompiles)}</td>'
            f'<td class="n">{compile_ms:.2f}</td><td class="n">{run}</td></tr>')
    rows.append("</table>")
    return "".join(rows)


def _timeline_svg(functions, t_end):
    """One row per function: captures as dots (coloured by outcome), recompiles as red bars."""
    if t_end <= 0 or not functions:
        return ""
    width, left, row = 900, 220, 22
    height = row * len(functions) + 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="Helvetica" font-size="11" class="timeline">']
    x_of = lambda t: left + (width - left - 20) * t / t_end  # noqa: E731
    for i, fn in enumerate(functions):
        y = 20 + i * row
        parts.append(f'<text x="4" y="{y + 4}">{html.escape(fn.name[:30])}</text>'
                     f'<line x1="{left}" y1="{y}" x2="{width - 20}" y2="{y}" stroke="#e9ecef"/>')
        for r in fn.recompiles:
            tip = html.escape(f"recompile at {r['t']:.4f}s: {r['failed_guard']} / now {r['value_now']}")
            parts.append(f'<rect x="{x_of(r["t"]) - 1:.1f}" y="{y - 8}" width="3" height="16" '
                         f'fill="#e03131"><title>{tip}</title></rect>')
        for c in fn.captures:
            tip = html.escape(f"{c['function']}: {c['outcome']} at {c['t']:.4f}s")
            parts.append(f'<circle cx="{x_of(c["t"]):.1f}" cy="{y}" r="4" '
                         f'fill="{_OUTCOME_COLOUR[c["outcome"]]}"><title>{tip}</title></circle>')
    parts.append(f'<text x="{left}" y="{height - 4}" fill="#868e96">0 s</text>'
                 f'<text x="{width - 70}" y="{height - 4}" fill="#868e96">{t_end:.3f} s</text></svg>')
    return "".join(parts)


def _time_bar_svg(items, unit="ms"):
    """A flame-style bar: one segment per (label, value), widths in proportion."""
    items = [(k, v) for k, v in items if v > 0]
    total = sum(v for _, v in items)
    if total <= 0:
        return ""
    palette = ["#4dabf7", "#ffa94d", "#69db7c", "#da77f2", "#ffd43b", "#ff8787", "#38d9a9",
               "#a9e34b", "#748ffc", "#f783ac"]
    width, x = 900, 0.0
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="46" '
             f'font-family="Helvetica" font-size="10" class="timebar">']
    for i, (label, v) in enumerate(items):
        w = width * v / total
        tip = html.escape(f"{label}: {v:.3f} {unit} ({100 * v / total:.1f}%)")
        parts.append(f'<rect x="{x:.1f}" y="4" width="{w:.1f}" height="24" '
                     f'fill="{palette[i % len(palette)]}" stroke="#fff"><title>{tip}</title></rect>')
        if w > 60:
            parts.append(f'<text x="{x + 4:.1f}" y="20">{html.escape(label[:int(w / 6)])}</text>')
        x += w
    parts.append(f'<text x="0" y="42" fill="#868e96">{total:.3f} {unit} in all</text></svg>')
    return "".join(parts)


def _function_html(i, fn, use_dot):
    out = [f'<section class="fn" id="fn{i}" data-name="{html.escape(fn.name)}">',
           f"<h2>{html.escape(fn.name)} "
           f'<span class="muted">{html.escape(fn.file)}:{fn.line}</span></h2>',
           _source_html(fn)]
    first_drawn = next((c for c in fn.captures if c.get("graph")), None)
    for c in fn.captures:
        title = (f"{c['function']}: {c['outcome']}, compile {c['compile_index']}, "
                 f"{c['num_ops']} ops, {sum(c['phases_ms'].values()):.2f} ms")
        opened = " open" if c is first_drawn else ""  # the first graph is shown, the rest folded
        out.append(f"<details{opened}><summary>{html.escape(title)}</summary>")
        if c.get("reason"):
            r = c["reason"]
            out.append(f'<p>stopped at line {r["line"]}: <b>{html.escape(r["category"])}</b> '
                       f'{html.escape(r["explanation"])} <span class="muted">'
                       f'{html.escape(r["hint"])}</span></p>')
        if c.get("inlined"):
            out.append(f'<p class="muted">inlined: {html.escape(", ".join(c["inlined"]))}</p>')
        if c.get("graph"):
            svg, note = _report_graph.graph_svg(c["graph"], use_dot=use_dot)
            out.append(f'<div class="graph">{svg}</div>')
            if note:
                out.append(f'<p class="muted">{html.escape(note)}</p>')
            out.append(f"<details><summary>graph text</summary><pre>{html.escape(c['graph'])}"
                       "</pre></details>")
        out.append(f'<details><summary>guards</summary><pre class="guards">'
                   f"{html.escape(c['guards'])}</pre></details></details>")
    if fn.recompiles:
        out.append("<h3>Recompiles</h3><ul>")
        for r in fn.recompiles:
            out.append(f"<li>{r['t']:.4f} s, {html.escape(r['function'])}: "
                       f"<code>{html.escape(r['failed_guard'])}</code> "
                       f"now <code>{html.escape(r['value_now'])}</code></li>")
        out.append("</ul>")
    for r in fn.limits:
        out.append(f"<p><b>recompile limit</b> ({r['limit']} entries) reached after "
                   f"{r['compile_count']} compiles: calls that match no entry run eagerly.</p>")
    for r in fn.fallbacks:
        out.append(f"<p><b>eager fallback</b>: {html.escape(r['reason']['explanation'])}</p>")
    out.append("</section>")
    return "".join(out)


def build_report(records, title="pijit report", use_dot=True):
    """The HTML page (a string) for the trace `records`."""
    functions = _group(records)
    t_end = max((r.get("t", 0) for r in records), default=0)
    starts = [r for r in records if r["event"] == "trace_start"]
    profile = next((r for r in reversed(records) if r["event"] == "node_profile"), None)
    phases = {"capture": 0.0, "compile": 0.0, "graph break code": 0.0}
    for fn in functions:
        for c in fn.captures:
            phases["capture"] += c["phases_ms"]["capture_ms"]
            phases["compile"] += c["phases_ms"]["compile_ms"]
            phases["graph break code"] += c["phases_ms"]["settle_ms"]
    body = [f"<h1>{html.escape(title)}</h1>"]
    if starts:
        s = starts[0]
        body.append(f'<p class="muted">Python {html.escape(s["python"])}, pid {s["pid"]}, '
                    f'{html.escape(" ".join(s["argv"]))}; {len(records)} records</p>')
    body += ['<input id="search" placeholder="filter functions" '
             'oninput="filterFunctions(this.value)">',
             "<h2>Functions</h2>", _summary_html(functions),
             "<h2>Compiles and recompiles over time</h2>",
             '<p class="muted">dots: captures (green: one graph, orange: a graph break, red: '
             'eager); red bars: recompiles (hover for the guard)</p>',
             _timeline_svg(functions, t_end),
             "<h2>Where the time goes</h2>", "<h3>Compiling</h3>",
             _time_bar_svg(list(phases.items()))]
    if profile:
        body += ["<h3>Running graphs (PIJIT_PROFILE)</h3>",
                 _time_bar_svg([(n["node"], n["ms"]) for n in profile["nodes"]])]
    body.append(f'<h2>Graphs</h2><p>{_report_graph.legend_html()}</p>')
    body += [_function_html(i, fn, use_dot) for i, fn in enumerate(functions)]
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{CSS}</style>"
            f"<script>{SCRIPT}</script></head><body>{''.join(body)}</body></html>")


def write_report(trace_path, out_path, title=None):
    records = load_records(trace_path)
    page = build_report(records, title or f"pijit report: {trace_path}")
    with open(out_path, "w", encoding="utf-8") as f:
        f.write(page)
    return out_path
