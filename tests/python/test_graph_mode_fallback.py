"""JIT Fallback in whole-graph mode (GRAPH_MODE, bare @jit, capture_mode="ast", PSJit,
fullgraph=True), as MindSpore's graph mode has it: calls into NumPy, math and other Python
whose arguments are all known at compile time run once then and their results are constants
of the graph (guarded like any constant); Tensor(ndarray) builds a constant tensor; print
prints at run time, in program order, with the values of each call. Whatever cannot fall back
(a call on a tensor of the call) is still a GraphBreakError naming its line. Bytecode mode
keeps breaking the graph at such calls."""
import itertools
import math
import random

import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops

LOG = []
SCALE = (2.0,)
SCALE_LIST = [2.0]
COUNTER = itertools.count()


def T(a):
    return ms.Tensor(np.asarray(a, dtype=np.float32))


def X():
    return T(np.arange(6).reshape(2, 3) - 2.5)


def same(got, want):
    np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())


def compiled(fn, **kw):
    jf = ms.jit(fn, **kw)
    ms.reset(jf)
    return jf


def one_graph(jf):
    s = ms.get_code_extra(jf)
    assert s["graph_count"] == 1 and s["total_break_count"] == 0, s["all_reasons"]
    return s


def numpy_constants(x):
    table = np.arange(6, dtype=np.float32).reshape(2, 3)  # a method of a compile-time value
    scale = np.sqrt(4.0) * math.log(math.e)
    offset = ms.Tensor(table * np.float32(0.5) + np.ones(3, np.float32))
    return x * scale + offset


def test_numpy_and_math_on_constants_become_graph_constants():
    jf = compiled(numpy_constants)
    for _ in range(2):
        same(jf(X()), numpy_constants(X()))
    s = one_graph(jf)
    assert s["compile_count"] == 1 and "constant" in s["graphs"][0]


def scaled_by_global(x):
    return x * ms.Tensor(np.array(SCALE, np.float32))


def test_fallback_results_are_guarded_by_their_arguments():
    global SCALE
    jf = compiled(scaled_by_global)
    same(jf(X()), X() * 2.0)
    SCALE = (3.0,)
    try:
        same(jf(X()), X() * 3.0)
    finally:
        SCALE = (2.0,)
    assert ms.get_code_extra(jf)["compile_count"] == 2


def from_a_mutable_list(x):
    return x * ms.Tensor(np.array(SCALE_LIST, np.float32))  # BREAK


def from_an_iterator(x):
    return x + float(next(COUNTER))


def test_values_that_may_change_under_their_guard_do_not_fall_back():
    # A list or an iterator is guarded by identity: a call on it would give a stale constant.
    with pytest.raises(ms.GraphBreakError, match="SCALE_LIST"):
        compiled(from_a_mutable_list)(X())
    with pytest.raises(ms.GraphBreakError, match="next"):
        compiled(from_an_iterator)(X())


class Counted:
    def __init__(self, k):
        self.k = k


def made_of_a_user_class(x):
    return x * Counted(3.0).k


def random_at_compile_time(x):
    return x + random.random()


def test_a_fallback_call_runs_once_at_compile_time():
    jf = compiled(random_at_compile_time)
    random.seed(5)
    drawn = random.random()
    random.seed(5)
    for _ in range(3):  # the value of the compile, as MindSpore's graph mode gives
        np.testing.assert_allclose(jf(X()).asnumpy(), (X() + drawn).asnumpy(), rtol=1e-6)
    one_graph(jf)


def test_instances_of_user_classes_are_made_in_the_graph_not_at_compile_time():
    # Not a compile-time constant (it would be shared by every call): an object of the trace.
    jf = compiled(made_of_a_user_class)
    for _ in range(2):
        same(jf(X()), X() * 3.0)
    one_graph(jf)


def fresh_array(x):
    a = np.zeros(3) + np.array([1.0, 0.0, 0.0])
    return x, a


def test_arrays_made_at_compile_time_are_fresh_on_every_call():
    jf = compiled(fresh_array)
    _, a = jf(X())
    a[1] = 5.0
    _, b = jf(X())
    np.testing.assert_array_equal(b, [1.0, 0.0, 0.0])
    assert a is not b


def constant_tensor():
    return ms.Tensor(np.array([1.0, 2.0, 3.0], np.float32))


def test_constant_tensors_returned_are_fresh_on_every_call():
    jf = compiled(constant_tensor)
    a = jf()
    a[0] = 100.0
    np.testing.assert_array_equal(jf().asnumpy(), [1.0, 2.0, 3.0])


class FromNumpy(nn.Cell):
    def construct(self, x):
        bias = ms.Tensor(np.linspace(0.0, 1.0, 3).astype(np.float32))
        return ops.relu(x) + bias


def test_cell_constructs_tensors_from_numpy_in_graph_mode():
    net = FromNumpy()
    want = net.construct(X())
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        ms.reset(FromNumpy.construct)
        for _ in range(2):
            same(net(X()), want)
        one_graph(FromNumpy.construct)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def printing(x, tag):
    y = x * 2.0
    print("start", tag)
    LOG.append(tag)
    print("y =", y, y.shape, sep=" | ", end=";\n")
    z = y.sum()
    print(z)
    return z


@pytest.mark.parametrize("kw", [{}, {"capture_mode": "ast"}, {"mode": "PSJit"},
                                {"capture_mode": "bytecode", "fullgraph": True}],
                         ids=["bare", "ast", "PSJit", "fullgraph"])
def test_print_prints_each_calls_values_in_program_order(kw, capsys):
    jf = compiled(printing, **kw)
    for i, x in enumerate([X(), X() * 3.0, X()]):
        LOG.clear()
        want = printing(x, "t")
        want_out, want_log = capsys.readouterr().out, list(LOG)
        LOG.clear()
        same(jf(x, "t"), want)
        assert capsys.readouterr().out == want_out, i
        assert LOG == want_log
    one_graph(jf)


def test_bytecode_mode_captures_print_too(capsys):
    # As MindSpore's bytecode JIT: the print is replayed after the graph, no break.
    want = printing(X(), "b")
    printed = capsys.readouterr().out
    jf = compiled(printing, capture_mode="bytecode")
    for _ in range(2):
        same(jf(X(), "b"), want)
        assert capsys.readouterr().out == printed
    assert ms.get_code_extra(jf)["total_break_count"] == 0


def test_bytecode_mode_breaks_at_a_print_to_a_file(capsys):
    jf = compiled(print_to_a_file, capture_mode="bytecode")
    same(jf(X()), print_to_a_file(X()))
    assert ms.get_code_extra(jf)["total_break_count"] >= 1


def print_to_a_file(x):
    import sys
    print(x, file=sys.stderr)
    return x + 1.0


def numpy_of_an_input(x):
    return x + ms.Tensor(np.asarray(x) * 2)  # BREAK


def test_what_cannot_fall_back_is_an_error_naming_the_line():
    with pytest.raises(ms.GraphBreakError, match=r"np.asarray\(x\)"):
        compiled(numpy_of_an_input)(X())
    with pytest.raises(ms.GraphBreakError, match="file"):
        compiled(print_to_a_file)(X())


def reshaped_wrongly(x):
    return x + ms.Tensor(np.arange(4.0).reshape(3, 3))


def test_a_fallback_call_that_raises_raises_as_eagerly():
    with pytest.raises(ValueError) as eager:
        reshaped_wrongly(X())
    with pytest.raises(ValueError) as jitted:
        compiled(reshaped_wrongly)(X())
    assert str(jitted.value) == str(eager.value)
