"""Graphs of the IR text as inline SVG for the HTML report: laid out by Graphviz's `dot` when
it is installed, else by a simple layered layout of our own."""
import html
import re
import shutil
import subprocess

MAX_DRAWN_NODES = 400

# Node colours by what the node does (fill, legend label).
KINDS = {
    "loop": ("#cfe8ff", "fused or elementwise loop"),
    "matmul": ("#ffd8a8", "matmul / convolution"),
    "reduce": ("#d3f9d8", "reduction"),
    "copy": ("#e9ecef", "copy / layout"),
    "input": ("#fff3bf", "input"),
    "const": ("#f8f0fc", "constant"),
    "other": ("#ffe3e3", "other"),
}
_MATMUL = ("matmul", "conv", "dense", "linear", "bmm", "batch_mat", "einsum")
_REDUCE = ("sum", "mean", "max", "min", "prod", "reduce", "argm", "softmax", "norm", "var", "std",
           "all", "any", "cumsum", "logsumexp")
_COPY = ("reshape", "transpose", "broadcast", "copy", "cast", "concat", "stack", "slice", "view",
         "expand", "squeeze", "permute", "gather", "pad", "split", "index", "assign", "flip", "tile")
_LINE = re.compile(r"^\s*%(\d+):\s*([^=]+?)\s*=\s*([A-Za-z_][\w.]*)\((.*)\)\s*$")
_HEADER = re.compile(r"%(\d+):\s*([^\s,\[()]+\[[^\]]*\]|[^\s,()]+)")


def node_kind(op):
    if op in ("constant", "full", "zeros", "ones", "iota", "arange"):
        return "const"
    low = op.lower()
    if any(k in low for k in _MATMUL):  # fused_matmul, conv2d_grad_input, ...
        return "matmul"
    if op.startswith("fused_reduce"):
        return "reduce"
    if op.startswith("fused"):
        return "loop"
    if any(low.startswith(k) or low.endswith(k) for k in _REDUCE):
        return "reduce"
    if any(k in low for k in _COPY):
        return "copy"
    return "loop"  # elementwise arithmetic and functions: one loop each


def parse_graph(text):
    """(nodes, edges, outputs): nodes {id: (op, type, kind)}, edges [(src, dst)], the output ids.
    A control-flow node (while_loop, cond: docs/control_flow.md) is one node; the graphs it holds,
    printed in braces after it, are not drawn."""
    nodes, edges, outputs = {}, [], []
    lines = text.strip().splitlines()
    if not lines:
        return nodes, edges, outputs
    header = lines[0]
    if header.startswith("graph("):
        params = header[len("graph("):header.rfind(")")]
        for m in _HEADER.finditer(params):
            nodes[int(m.group(1))] = ("input", m.group(2).strip(), "input")
    depth = 1  # inside the graph's braces; deeper: inside a control-flow node's graphs
    for line in lines[1:]:
        stripped = line.strip()
        opens = stripped.endswith("{")
        if depth == 1:
            m = _LINE.match(stripped[:-1].rstrip() if opens else stripped)
            if m:
                nid = int(m.group(1))
                op = m.group(3)
                args = re.sub(r'"(?:[^"\\]|\\.)*"', '""', m.group(4))  # attribute strings
                nodes[nid] = (op, m.group(2).strip(), node_kind(op))
                for src in re.findall(r"%(\d+)", args):
                    edges.append((int(src), nid))
            elif stripped.startswith("return"):
                outputs = [int(x) for x in re.findall(r"%(\d+)", line)]
        if opens:
            depth += 1
        elif stripped == "}":
            depth -= 1
    edges = [(a, b) for a, b in edges if a in nodes]
    return nodes, edges, outputs


def _label(nid, op, typ):
    return f"%{nid} {op}\n{typ}"


def _dot_svg(nodes, edges, outputs):
    dot = shutil.which("dot")
    if dot is None:
        return None
    out = ["digraph g {", 'rankdir=TB; bgcolor="transparent";',
           'node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
           'edge [fontname="Helvetica", fontsize=8, color="#868e96"];']
    for nid, (op, typ, kind) in nodes.items():
        label = _label(nid, op, typ).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        extra = ', penwidth=2.5, color="#1c7ed6"' if nid in outputs else ""
        out.append(f'n{nid} [label="{label}", fillcolor="{KINDS[kind][0]}", '
                   f'class="node-{kind}"{extra}];')
    for a, b in edges:
        typ = nodes[a][1].replace('"', '\\"')
        out.append(f'n{a} -> n{b} [label="{typ}"];')
    out.append("}")
    try:
        r = subprocess.run([dot, "-Tsvg"], input="\n".join(out), capture_output=True, text=True,
                           timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0 or "<svg" not in r.stdout:
        return None
    return r.stdout[r.stdout.index("<svg"):]


def _layered_svg(nodes, edges, outputs):
    """A layer per longest path from the inputs; nodes side by side in their layer."""
    depth = {}
    preds = {}
    for a, b in edges:
        preds.setdefault(b, []).append(a)
    for nid in sorted(nodes):
        depth[nid] = 1 + max((depth.get(p, 0) for p in preds.get(nid, [])), default=-1)
    layers = {}
    for nid in sorted(nodes):
        layers.setdefault(depth[nid], []).append(nid)
    box_w, box_h, gap_x, gap_y = 150, 36, 20, 42
    width = max(len(v) for v in layers.values()) * (box_w + gap_x) + gap_x
    height = len(layers) * (box_h + gap_y) + gap_y
    pos = {}
    for d, ids in layers.items():
        row_w = len(ids) * (box_w + gap_x) - gap_x
        x0 = (width - row_w) / 2
        for i, nid in enumerate(ids):
            pos[nid] = (x0 + i * (box_w + gap_x), gap_y + d * (box_h + gap_y))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
             f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="Helvetica" font-size="10">']
    for a, b in edges:
        (xa, ya), (xb, yb) = pos[a], pos[b]
        x1, y1, x2, y2 = xa + box_w / 2, ya + box_h, xb + box_w / 2, yb
        parts.append(f'<line x1="{x1:.0f}" y1="{y1:.0f}" x2="{x2:.0f}" y2="{y2:.0f}" '
                     f'stroke="#868e96"/>')
        parts.append(f'<text x="{(x1 + x2) / 2 + 3:.0f}" y="{(y1 + y2) / 2:.0f}" fill="#868e96" '
                     f'font-size="8">{html.escape(nodes[a][1])}</text>')
    for nid, (op, typ, kind) in nodes.items():
        x, y = pos[nid]
        stroke = "#1c7ed6" if nid in outputs else "#495057"
        parts.append(f'<g class="node node-{kind}"><rect x="{x:.0f}" y="{y:.0f}" width="{box_w}" '
                     f'height="{box_h}" rx="6" fill="{KINDS[kind][0]}" stroke="{stroke}"/>'
                     f'<text x="{x + 6:.0f}" y="{y + 14:.0f}">%{nid} {html.escape(op[:22])}</text>'
                     f'<text x="{x + 6:.0f}" y="{y + 28:.0f}" fill="#495057">'
                     f'{html.escape(typ[:26])}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def graph_svg(text, use_dot=True):
    """The graph of IR `text` as an SVG element (a string), and a note when it was cut."""
    nodes, edges, outputs = parse_graph(text)
    note = ""
    if len(nodes) > MAX_DRAWN_NODES:
        keep = set(sorted(nodes)[:MAX_DRAWN_NODES])
        nodes = {k: v for k, v in nodes.items() if k in keep}
        edges = [(a, b) for a, b in edges if a in keep and b in keep]
        note = f"the first {MAX_DRAWN_NODES} nodes are drawn"
    if not nodes:
        return "", "an empty graph"
    svg = _dot_svg(nodes, edges, outputs) if use_dot else None
    return svg or _layered_svg(nodes, edges, outputs), note


def legend_html():
    return "".join(f'<span class="key" style="background:{fill}">{html.escape(label)}</span>'
                   for fill, label in KINDS.values())
