"""pijit.jit in context: `pijit.capture()` regions (plain functions compiled, the cache reused,
the code after a graph break captured, the region left on exceptions), and nn.Cell under
GRAPH_MODE and PYNATIVE_MODE (construct compiled or not, per-instance parameters, short-lived
cells, set_context)."""
import gc
import warnings

import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops
from jit_testutil import _quiet_numpy, pynative_after, rng  # noqa: F401 (fixtures)
from jit_testutil import T
from pijit_testutil import assert_same_tensor, random_array


# ---- capture regions --------------------------------------------------------------------------------

def captured_plain(a, b):
    return ops.mul(a, b) + a


def test_capture_context_compiles_plain_function_and_gives_eager_result():
    ms.reset(captured_plain)
    x = T(np.arange(4, dtype=np.float32))
    y = T(np.full(4, 3.0, np.float32))
    expected = captured_plain(x, y)
    with ms.capture():
        out = captured_plain(x, y)
    assert_same_tensor(out, expected)
    s = ms.get_code_extra(captured_plain)
    assert s["compile_count"] >= 1
    assert s["reasons"] == []


def test_capture_context_reuses_the_cache_on_repeated_calls():
    ms.reset(captured_plain)
    x = T(np.ones(3))
    with ms.capture():
        for _ in range(3):
            captured_plain(x, x)
    s = ms.get_code_extra(captured_plain)
    assert s["compile_count"] == 1 and s["cache_hits"] == 2


def test_calls_after_capture_context_are_not_captured():
    ms.reset(captured_plain)
    x = T(np.ones(3))
    with ms.capture():
        captured_plain(x, x)
    before = ms.get_code_extra(captured_plain)["call_count"]
    assert_same_tensor(captured_plain(x, x), ops.mul(x, x) + x)
    assert ms.get_code_extra(captured_plain)["call_count"] == before


def captured_outer(a):
    if float(ops.sum(a)) > 0:  # data-dependent: breaks the graph; the rest is captured on resume
        return captured_inner(a)
    return a


def captured_inner(a):
    return a * 2.0 - 1.0


def test_capture_context_captures_the_code_after_a_graph_break():
    ms.reset(captured_outer)
    ms.reset(captured_inner)
    x = T(np.arange(1, 4, dtype=np.float64))
    with ms.capture():
        out = captured_outer(x)
    assert_same_tensor(out, captured_inner(x))
    stats_outer = ms.get_code_extra(captured_outer)
    assert stats_outer["reasons"] and stats_outer["total_break_count"] >= 1
    # captured_inner is inlined into the graph of the resume function after the break.
    assert any("mul" in g and "sub" in g for g in stats_outer["all_graphs"])


def test_capture_context_exits_on_exception():
    with pytest.raises(ZeroDivisionError):
        with ms.capture():
            1 / 0
    ms.reset(captured_plain)
    captured_plain(T(np.ones(1)), T(np.ones(1)))
    assert ms.get_code_extra(captured_plain)["call_count"] == 0


# ---- nn.Cell and context modes ----------------------------------------------------------------------

class AddNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.add = ops.Add()

    def construct(self, x, y):
        return self.add(x, y)


class MulAddNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.add = ops.Add()
        self.mul = ops.Mul()
        self.w = ms.Parameter(ms.Tensor(np.array([0.5, 2.0, -1.0], np.float32)), name="w")

    def construct(self, x, y):
        return self.mul(self.add(x, y), self.w) + self.mul(x, y)


class PrintNet(nn.Cell):
    def construct(self, x):
        y = x * 2.0
        print("y:", y, x.shape)
        return y + x


class NumpyNet(nn.Cell):
    def construct(self, x):
        return ms.Tensor(x.asnumpy() + 1)  # BREAK


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["GRAPH", "PYNATIVE"])
@pytest.mark.parametrize("net_cls", [AddNet, MulAddNet], ids=lambda c: c.__name__)
def test_cell_gives_eager_result_in_both_modes(pynative_after, mode, net_cls, rng):
    net = net_cls()
    x = T(random_array(rng, (3,), np.float32))
    y = T(random_array(rng, (3,), np.float32))
    expected = net.construct(x, y)
    ms.set_context(mode=mode)
    assert_same_tensor(net(x, y), expected)
    assert_same_tensor(net(x, y), expected)


def test_cell_in_graph_mode_compiles_construct(pynative_after):
    ms.reset(MulAddNet.construct)
    net = MulAddNet()
    x, y = T(np.ones(3, np.float32)), T(np.full(3, 2.0, np.float32))
    ms.set_context(mode=ms.GRAPH_MODE)
    net(x, y)
    net(x, y)
    s = ms.get_code_extra(MulAddNet.construct)
    assert s["compile_count"] == 1 and s["cache_hits"] == 1 and s["reasons"] == []
    assert "mul" in s["graphs"][0] and "add" in s["graphs"][0]


def test_cell_in_pynative_mode_is_not_compiled(pynative_after):
    ms.reset(AddNet.construct)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    AddNet()(T(np.ones(2)), T(np.ones(2)))
    assert ms.get_code_extra(AddNet.construct)["compile_count"] == 0


def test_two_cell_instances_with_different_parameters_give_their_own_results(pynative_after):
    ms.set_context(mode=ms.GRAPH_MODE)
    a, b = MulAddNet(), MulAddNet()
    b.w = ms.Parameter(ms.Tensor(np.array([3.0, 3.0, 3.0], np.float32)), name="w")
    x, y = T(np.ones(3, np.float32)), T(np.full(3, 2.0, np.float32))
    assert_same_tensor(a(x, y), a.construct(x, y))
    assert_same_tensor(b(x, y), b.construct(x, y))
    assert_same_tensor(a(x, y), a.construct(x, y))


def test_short_lived_cells_do_not_exhaust_the_cache(pynative_after):
    ms.reset(AddNet.construct)
    ms.set_context(mode=ms.GRAPH_MODE)
    x = T(np.arange(3, dtype=np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for _ in range(12):
            net = AddNet()
            assert_same_tensor(net(x, x), x + x)
            del net
            gc.collect()
    assert ms.get_code_extra(AddNet.construct)["eager_count"] == 0


def test_uncapturable_cell_in_graph_mode_raises_graph_break_error(pynative_after, capsys):
    ms.set_context(mode=ms.GRAPH_MODE)
    with pytest.raises(ms.GraphBreakError, match=r"x.asnumpy\(\) \+ 1"):
        NumpyNet()(T(np.ones(2)))
    assert capsys.readouterr().out == ""


def test_print_in_graph_mode_prints_each_call_as_eagerly(pynative_after, capsys):
    x = T(np.array([1.5, -2.0]))
    PrintNet().construct(x)
    want = capsys.readouterr().out
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.reset(PrintNet.construct)
    for _ in range(2):
        assert_same_tensor(PrintNet()(x), x * 3.0)
        assert capsys.readouterr().out == want
    assert ms.get_code_extra(PrintNet.construct)["graph_count"] == 1


def test_set_context_restores_pynative(pynative_after):
    ms.set_context(mode=ms.GRAPH_MODE)
    assert ms.get_context("mode") == ms.GRAPH_MODE
    ms.set_context(mode=ms.PYNATIVE_MODE)
    assert ms.get_context("mode") == ms.PYNATIVE_MODE


def test_set_context_rejects_unknown_mode():
    with pytest.raises(ValueError):
        ms.set_context(mode=5)
