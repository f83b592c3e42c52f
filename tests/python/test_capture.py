"""Capture of real Python code: constructs, inlining, guards, cache policy, dynamic shapes,
capture regions and observability. Every test compares jitted against eager results and
counts compilations through pijit.get_code_extra."""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops
from pijit_testutil import assert_close_result, assert_same_result

T = ms.Tensor


def jit(fn):
    ms.reset(fn)
    return ms.jit(fn, mode="PIJit")


def stats(fn):
    return ms.get_code_extra(fn)


def check(fn, *args, compiles=1):
    """Jitted equals eager (twice: the second call is a cache hit); one graph, no reasons."""
    jf = jit(fn)
    for _ in range(2):
        assert_same_result(jf(*args), fn(*args))
    s = stats(jf)
    assert s["compile_count"] == compiles, s["reasons"]
    assert s["reasons"] == [], s["reasons"]
    return jf


def x23():
    return T(np.arange(6, dtype=np.float32).reshape(2, 3))


# ---- Python values ---------------------------------------------------------------------------

def branch_on_constant(x, mode):
    if mode == "double":
        return x * 2.0
    elif mode is None:
        return x
    return x + 1.0


def test_if_on_a_constant_follows_one_branch_and_guards_the_constant():
    x = x23()
    jf = check(branch_on_constant, x, "double")
    assert_same_result(jf(x, None), branch_on_constant(x, None))
    assert_same_result(jf(x, "other"), branch_on_constant(x, "other"))
    assert stats(jf)["compile_count"] == 3
    assert_same_result(jf(x, "double"), branch_on_constant(x, "double"))
    assert stats(jf)["compile_count"] == 3


def while_on_constant(x, n):
    i = 0
    while i < n:
        x = x + i
        i += 1
    return x


def test_while_on_constants_unrolls():
    check(while_on_constant, x23(), 4)


def loops(x, ys, d):
    total = x
    for i in range(3):
        total = total + i
    for y in ys:
        total = total * y
    for k, v in d.items():
        total = total - v
    for i, (a, b) in enumerate(zip((1.0, 2.0), (3.0, 4.0))):
        total = total + a * b + i
    return total


def test_for_over_range_tuple_dict_items_zip_enumerate():
    check(loops, x23(), (2.0, 0.5), {"a": 1.0, "b": 2.0})


def containers(x):
    pairs = [(i, x * i) for i in range(3)]
    d = {str(i): t for i, t in pairs}
    names = f"{len(d)} items: {sorted(d)!r}"
    a, (b, c) = 1, (2, 3)
    lst = [a, b]
    lst.append(c)
    return d["2"] + sum(lst), names, tuple(lst), "1" in d, {"k": x, "n": lst}


def test_lists_dicts_unpacking_comprehensions_and_fstrings():
    check(containers, x23())


class Config:
    scale = 3.0

    def __init__(self):
        self.offset = 1.5
        self.inner = Config.Inner()

    class Inner:
        def __init__(self):
            self.power = 2.0


CFG = Config()


def attribute_chains(x):
    return x * CFG.scale + CFG.offset * CFG.inner.power + ms.ops.exp(x).ndim


def test_attribute_chains_on_modules_classes_and_objects():
    check(attribute_chains, x23())


def builtins_at_capture(x, seq):
    n = len(seq) + len(x) + min(seq) + max(1, 2) + abs(-3)
    flag = isinstance(x, ms.Tensor) and not isinstance(seq, dict) and hasattr(CFG, "offset")
    return x * n + getattr(CFG, "scale") if flag else x


def test_builtins_known_at_capture_fold():
    check(builtins_at_capture, x23(), (4, 5))


def none_checks(x, y=None):
    if y is None:
        return x * 2
    return x + y


def test_is_none_checks():
    x = x23()
    jf = check(none_checks, x)
    assert_same_result(jf(x, x), none_checks(x, x))


# ---- inlining --------------------------------------------------------------------------------

def helper(a, b=2.0, *rest, scale=1.0, **kw):
    out = a * b * scale
    for r in rest:
        out = out + r
    for v in kw.values():
        out = out - v
    return out


def make_closure(k):
    def inner(t):
        return t * k
    return inner


TIMES_FOUR = make_closure(4.0)


class Model:
    def __init__(self):
        self.w = 0.5

    def forward(self, x):
        return self.scale(x) + self.w

    def scale(self, x):
        return x * 10.0


MODEL = Model()


def uses_inlining(x):
    a = helper(x)
    b = helper(x, 3.0, 1.0, 2.0, scale=0.5, extra=1.0)
    c = TIMES_FOUR(x)
    d = MODEL.forward(x)
    e = (lambda t: t - 1)(x)
    return a + b + c + d + e


def test_functions_methods_closures_defaults_varargs_kwargs_are_inlined_into_one_graph():
    jf = check(uses_inlining, x23())
    assert len(stats(jf)["graphs"][0]) > 0


class Block(nn.Cell):
    def __init__(self):
        super().__init__()
        self.mul = ops.Mul()

    def construct(self, x):
        return self.mul(x, x)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.b1 = Block()
        self.b2 = Block()

    def construct(self, x):
        return self.b2(self.b1(x)) + 1.0


def test_cell_calls_inline_construct():
    net = Net()
    jf = jit(Net.construct)
    x = x23()
    assert_same_result(jf(net, x), net(x))
    assert stats(jf)["reasons"] == []


def recursive(x, n):
    return x if n == 0 else recursive(x + 1.0, n - 1)


def test_deep_recursion_stops_at_the_inline_depth_with_a_reason():
    x = x23()
    jf = jit(recursive)
    assert_same_result(jf(x, 40), recursive(x, 40))
    assert any(r["category"] == "inline_depth" for r in stats(jf)["all_reasons"] + stats(jf)["reasons"])


# ---- guards ----------------------------------------------------------------------------------

SCALE = 2.0


def uses_global(x):
    return x * SCALE


def test_rebinding_a_global_recompiles_and_gives_the_new_result():
    global SCALE
    x = x23()
    jf = check(uses_global, x)
    SCALE = 5.0
    try:
        assert_same_result(jf(x), uses_global(x))
        assert stats(jf)["compile_count"] == 2
    finally:
        SCALE = 2.0


def test_changed_closure_cell_recompiles():
    k = 2.0

    def f(x):
        return x * k

    x = x23()
    jf = jit(f)
    assert_same_result(jf(x), f(x))
    k = 3.0
    assert_same_result(jf(x), f(x))
    assert stats(jf)["compile_count"] == 2


def test_mutated_attribute_list_item_and_dict_item_recompile():
    class Holder:
        pass

    h = Holder()
    h.v = 1.0
    lst = [2.0]
    d = {"k": 3.0}

    def f(x, h, lst, d):
        return x * h.v + lst[0] + d["k"]

    x = x23()
    jf = jit(f)
    assert_same_result(jf(x, h, lst, d), f(x, h, lst, d))
    for mutate in (lambda: setattr(h, "v", 5.0), lambda: lst.__setitem__(0, 7.0),
                   lambda: d.__setitem__("k", 9.0)):
        mutate()
        assert_same_result(jf(x, h, lst, d), f(x, h, lst, d))
    assert stats(jf)["compile_count"] == 4


# ---- cache policy ----------------------------------------------------------------------------

def simple(x, y):
    return x * y + 1.0


def test_repeated_call_hits_and_changed_dtype_or_constant_recompiles_once():
    x = x23()
    jf = jit(simple)
    for _ in range(3):
        assert_same_result(jf(x, 2.0), simple(x, 2.0))
    assert stats(jf)["compile_count"] == 1 and stats(jf)["cache_hits"] == 2
    x64 = T(np.arange(6, dtype=np.float64).reshape(2, 3))
    for _ in range(2):
        assert_same_result(jf(x64, 2.0), simple(x64, 2.0))
        assert_same_result(jf(x, 3.0), simple(x, 3.0))
    assert stats(jf)["compile_count"] == 3


def test_varying_batch_sizes_compile_at_most_twice():
    w = T(np.ones((3, 4), np.float32))

    def f(x, w):
        return ops.relu(ops.matmul(x, w)) - x.sum(axis=1, keepdims=True)

    jf = jit(f)
    for b in (1, 2, 3, 5, 8, 13, 2, 21):
        x = T(np.random.default_rng(b).standard_normal((b, 3)).astype(np.float32))
        assert_same_result(jf(x, w), f(x, w))
    assert stats(jf)["compile_count"] <= 2
    assert "*" in stats(jf)["guards"][0]


def test_reading_sizes_specialises_instead_of_going_symbolic():
    def f(x):
        return x.reshape(x.shape[0] * 3)

    jf = jit(f)
    for b in (2, 4, 6):
        x = T(np.ones((b, 3), np.float32))
        assert_same_result(jf(x), f(x))
    assert stats(jf)["compile_count"] == 3


def test_symbolic_sizes_that_stop_broadcasting_raise_the_eager_error():
    def f(x, y):
        return x + y

    jf = jit(f)
    jf(T(np.ones((2, 3))), T(np.ones((2, 3))))
    jf(T(np.ones((4, 3))), T(np.ones((4, 3))))
    with pytest.raises(ValueError) as jitted:
        jf(T(np.ones((4, 3))), T(np.ones((5, 3))))
    with pytest.raises(ValueError) as eager:
        f(T(np.ones((4, 3))), T(np.ones((5, 3))))
    assert str(jitted.value) == str(eager.value)


def test_recompile_limit_falls_back_to_eager_with_a_warning():
    def f(x, k):
        return x * k if k >= 0 else x  # the comparison makes each entry depend on k's value

    jf = jit(f)
    x = x23()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(12):
            assert_same_result(jf(x, k), f(x, k))
    assert stats(jf)["compile_count"] == 8
    assert stats(jf)["eager_count"] >= 4
    assert any("recompile limit" in str(w.message) for w in caught)


# ---- capture regions -------------------------------------------------------------------------

def plain_tensor_fn(x):
    return ops.exp(x) * 2.0


def plain_python_fn(n):
    return n + 1


def gen(x):
    yield x * 2
    yield x * 3


def test_capture_region_compiles_frames_and_skips_python_only_and_generators():
    ms.reset(plain_tensor_fn)
    ms.reset(plain_python_fn)
    x = x23()
    with ms.capture():
        out = plain_tensor_fn(x)
        n = plain_python_fn(1)
        g = list(gen(x))
    assert_close_result(out, plain_tensor_fn(x))  # exp is fused
    assert n == 2 and len(g) == 2
    assert stats(plain_tensor_fn)["compile_count"] == 1
    assert stats(gen)["compile_count"] == 0


def test_enable_and_disable_toggle_process_wide_capture():
    ms.reset(plain_tensor_fn)
    x = x23()
    ms.enable()
    try:
        plain_tensor_fn(x)
    finally:
        ms.disable()
    before = stats(plain_tensor_fn)["call_count"]
    plain_tensor_fn(x)
    assert stats(plain_tensor_fn)["compile_count"] == 1
    assert stats(plain_tensor_fn)["call_count"] == before


def test_python_m_pijit_runs_an_unchanged_script(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent("""
        import sys
        import numpy as np
        import pijit
        from pijit import ops
        def f(x):
            return ops.relu(x) * 2.0
        x = pijit.Tensor(np.array([-1.0, 2.0], np.float32))
        for _ in range(3):
            y = f(x)
        print(y, sys.argv[1:], pijit.get_code_extra(f)["compile_count"])
    """))
    out = subprocess.run([sys.executable, "-m", "pijit", str(script), "a", "b"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[0. 4.] ['a', 'b'] 1"


def test_pijit_log_prints_graph_breaks_guards_graph_and_bytecode(tmp_path):
    script = tmp_path / "log.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        import pijit
        def f(x):
            y = x + 1.0
            pijit.graph_break()
            return y * 2.0
        pijit.jit(f, mode="PIJit")(pijit.Tensor(np.ones(2, np.float32)))
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PIJIT_LOG": "graph_breaks,guards,graph,bytecode"})
    assert out.returncode == 0, out.stderr
    err = out.stderr
    assert "graph break in f" in err and "graph_break()" in err
    assert "TENSOR_MATCH(args[0])" in err
    assert "= add(" in err
    assert "bytecode of f" in err and "RETURN_VALUE" in err


def test_explain_reports_graphs_guards_and_reasons_with_lines():
    def f(x):
        y = x * 2.0
        ms.graph_break()  # the reason's line
        return y

    e = ms.explain(f, x23())
    assert e.graph_break_count == 1
    r = e.break_reasons[0]
    assert r["line"] == f.__code__.co_firstlineno + 2 and r["file"] == __file__
    assert "TENSOR_MATCH" in e.guards
    assert "Graph break count: 1" in str(e)


def test_reset_clears_every_cache():
    x = x23()
    jf = jit(simple)
    jf(x, 2.0)
    ms.reset()
    assert stats(jf)["compile_count"] == 0
    assert_same_result(jf(x, 2.0), simple(x, 2.0))
    assert stats(jf)["compile_count"] == 1


LOG = []


def appends_to_a_list(x):
    y = x * 2.0
    LOG.append(1)  # replayed after the graph (the list's identity is guarded)
    return y + 1.0


def test_bound_method_calls_at_a_break_do_not_recompile_on_every_call():
    jf = jit(appends_to_a_list)
    x = x23()
    for _ in range(50):
        assert_same_result(jf(x), appends_to_a_list(x))
    s = stats(jf)
    assert s["compile_count"] == 1
    assert s["total_break_count"] <= 3  # the original and its resume functions, once each
    assert len(LOG) == 100
    LOG.clear()


def test_compilations_are_capped_when_guarded_objects_keep_dying():
    class Thing:
        def __init__(self, k):
            self.k = k

    def f(x, t):
        return x * t.k

    jf = jit(f)
    x = x23()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(200):
            assert_same_result(jf(x, Thing(2.0)), f(x, Thing(2.0)))
    assert stats(jf)["compile_count"] <= 8 * 8
