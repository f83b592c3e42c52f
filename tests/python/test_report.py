"""The HTML report of structured traces (python -m pijit report, pijit.explain(html=)): the page
of a real program shows its functions, their break lines with reasons, drawn graphs, the
recompiles and where the time went; in headless Chromium (Debian's `chromium`, installed by
scripts/setup_deps.sh) the rendered DOM has them too."""
import html.parser
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import pijit
from pijit import _report, _report_graph

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Page(html.parser.HTMLParser):
    """The parts of a report page the tests look at."""

    def __init__(self, text):
        super().__init__()
        self.sections, self.break_lines, self.svgs, self.tables = [], [], 0, 0
        self.in_graph = 0
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "section" and "fn" in classes:
            self.sections.append(a["data-name"])
        if tag == "span" and "brk" in classes:
            self.break_lines.append(int(a["data-line"]))
        if tag == "div" and "graph" in classes:
            self.in_graph += 1
        if tag == "svg" and self.in_graph:
            self.svgs += 1
        if tag == "table":
            self.tables += 1

    def handle_endtag(self, tag):
        if tag == "div" and self.in_graph:
            self.in_graph -= 1


def several_breaks(x, items):
    y = x * 2.0
    pijit.graph_break()
    z = y + float(len(items))
    if z.sum() > 0:
        z = z - 1.0
    pijit.graph_break()
    return z.mean()


def traced_program(tmp_path):
    jf = pijit.jit(several_breaks, capture_mode="bytecode")
    pijit.reset(jf)
    with pijit.trace(tmp_path):
        for n, shape in ((1, (3,)), (1, (3,)), (2, (3,)), (1, (5,)), (1, (6,))):
            x = pijit.Tensor(np.linspace(-1, 2, int(np.prod(shape)), dtype=np.float32))
            got = jf(x, [0] * n)
            np.testing.assert_allclose(got.asnumpy(), several_breaks(x, [0] * n).asnumpy(),
                                       rtol=1e-6)
    return tmp_path


def lenet_trace(tmp_path):
    env = dict(os.environ, PIJIT_TRACE=str(tmp_path), PIJIT_PROFILE="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "train_lenet.py")],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return tmp_path


def test_a_program_with_breaks_and_recompiles(tmp_path):
    page_text = _report.build_report(_report.load_records(traced_program(tmp_path)))
    page = Page(page_text)
    assert page.sections == ["several_breaks"]  # resume functions are shown with their function
    first = several_breaks.__code__.co_firstlineno
    assert {first + 2, first + 4, first + 6} <= set(page.break_lines), page.break_lines
    assert "data_dependent" in page_text and "pijit.graph_break() breaks the graph here" in page_text
    assert page.svgs >= 1 and page.tables == 1
    assert "Recompiles" in page_text and "TENSOR_MATCH(args[0])" in page_text
    # The summary counts the function's own calls (5), not its resume functions' as well.
    cells = re.findall(r'<td class="n">([^<]*)</td>', page_text)
    assert cells[0] == "5", cells[:9]
    assert "EQUALS_MATCH" in page_text or "TYPE_MATCH(args[1])" in page_text  # the list's length


def test_the_lenet_example_through_the_command_line(tmp_path):
    trace_dir = lenet_trace(tmp_path / "trace")
    out = tmp_path / "report.html"
    r = subprocess.run([sys.executable, "-m", "pijit", "report", str(trace_dir), "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    text = out.read_text(encoding="utf-8")
    page = Page(text)
    assert page.sections and page.svgs >= 1
    assert "Running graphs (PIJIT_PROFILE)" in text and "conv2d" in text
    assert "<script src" not in text and "http://" not in text.replace("http://www.w3.org", "")


def test_missing_traces_are_clear_errors(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pijit", "report", str(tmp_path / "nothing")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "no trace at" in r.stderr
    with pytest.raises(FileNotFoundError, match="no pijit-trace"):
        _report.load_records(str(tmp_path))


def test_explain_writes_one_function_page(tmp_path):
    x = pijit.Tensor(np.ones(3, np.float32))
    path = tmp_path / "explain.html"
    out = pijit.explain(several_breaks, x, [1], html=str(path))
    assert out.graph_break_count == 1  # explain's own result is unchanged
    page = Page(path.read_text(encoding="utf-8"))
    assert page.sections == ["several_breaks"] and page.svgs == 1
    assert page.break_lines == [several_breaks.__code__.co_firstlineno + 2]


def test_graph_text_is_parsed_and_drawn_without_graphviz():
    text = ("graph(%0: f32[4,3], %1: f32[3,5]) {\n  %2: f32[4,5] = matmul(%0, %1)\n"
            '  %3: f32[4,5] = fused(%2, program="max($0, 0)")\n'
            "  %4: f32[4] = sum(%3, axes=[1], keepdims=false)\n  %5: f32[20] = reshape(%3, shape=[-1])\n"
            "  return (%4, %5)\n}\n")
    nodes, edges, outputs = _report_graph.parse_graph(text)
    assert nodes[0] == ("input", "f32[4,3]", "input")
    assert [nodes[i][2] for i in (2, 3, 4, 5)] == ["matmul", "loop", "reduce", "copy"]
    assert sorted(edges) == [(0, 2), (1, 2), (2, 3), (3, 4), (3, 5)] and outputs == [4, 5]
    svg, note = _report_graph.graph_svg(text, use_dot=False)
    assert svg.startswith("<svg") and svg.count("<rect") == 6 and svg.count("<line") == 5
    assert note == ""


def test_control_flow_nodes_are_drawn_as_one_node_each():
    text = ("graph(%0: f32[3], %1: f32[]) {\n  %2: f32[] = sum(%0, axes=[], keepdims=false)\n"
            "  %3: bool[] = less(%2, %1)\n  %4: bool[] = while_loop(%3, %0, %1, carried=1) {\n"
            "    graph(%0: f32[3], %1: f32[]) {\n      %2: f32[3] = exp(%0)\n"
            "      %3: f32[] = sum(%2, axes=[], keepdims=false)\n      %4: bool[] = less(%3, %1)\n"
            "      return (%2, %4)\n    }\n  }\n  %5: f32[3] = result(%4, index=0)\n  return (%5)\n}\n")
    nodes, edges, outputs = _report_graph.parse_graph(text)
    assert sorted(nodes) == [0, 1, 2, 3, 4, 5] and nodes[4][0] == "while_loop" and nodes[2][0] == "sum"
    assert sorted(edges) == [(0, 2), (0, 4), (1, 3), (1, 4), (2, 3), (3, 4), (4, 5)] and outputs == [5]


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.mark.skipif(chromium() is None,
                    reason="no headless Chromium (scripts/setup_deps.sh installs Debian's chromium)")
@pytest.mark.parametrize("program", ["several_breaks", "lenet"])
def test_the_report_renders_in_headless_chromium(tmp_path, program):
    make = traced_program if program == "several_breaks" else lenet_trace
    trace_dir = make(tmp_path / "trace")
    page_path = tmp_path / "report.html"
    _report.write_report(str(trace_dir), str(page_path))
    common = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
              "--window-size=1300,1800"]
    # The browser is not ours: no sanitizer runtime preloaded into it (scripts/test_asan.sh
    # preloads one into the interpreter running these tests).
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
    dom = subprocess.run(common + ["--dump-dom", page_path.as_uri()], capture_output=True,
                         text=True, timeout=120, env=env)
    assert dom.returncode == 0, dom.stderr[-2000:]
    rendered = Page(dom.stdout)
    assert rendered.sections and rendered.svgs >= 1 and rendered.tables == 1
    if program == "several_breaks":  # its break lines are marked; LeNet's step has no break
        assert rendered.sections == ["several_breaks"] and rendered.break_lines
    else:
        assert any("train_step" in name for name in rendered.sections)
    shot = tmp_path / "report.png"
    r = subprocess.run(common + [f"--screenshot={shot}", page_path.as_uri()],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20000  # a page, not a blank frame
