"""MindSpore 2.x's jit signature: capture_mode ("ast", "bytecode", "trace") beside the seeds'
mode="PSJit"/"PIJit", jit_level, dynamic, fullgraph and backend, with clear errors for
anything else; what jit accepts (functions, bound methods, staticmethod and classmethod,
Cell instances and Cell classes, jit_class for plain classes); and nested jit, which inlines
a jitted function called from captured code into the caller's graph."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops


def T(a):
    return ms.Tensor(np.asarray(a, dtype=np.float32))


def X(rows=2):
    return T(np.arange(rows * 3).reshape(rows, 3) - 2.5)


def stats(fn):
    return ms.get_code_extra(fn)


def same(got, want):
    np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())


def with_print(x):
    y = x * 2.0 + 1.0
    print("value", y.shape)  # captured: replayed after the graph
    ms.graph_break()
    return y - x


def pure(x, y):
    return (x * y + x) * 0.5 - y


# ---- capture modes and keywords -----------------------------------------------------------


@pytest.mark.parametrize("kw", [dict(capture_mode="bytecode"), dict(mode="PIJit"),
                                dict(capture_mode="trace")], ids=["bytecode", "PIJit", "trace"])
def test_bytecode_modes_break_the_graph_and_match_eager(kw, capsys):
    want = with_print(X())
    jf = ms.jit(with_print, **kw)
    ms.reset(jf)
    for _ in range(2):
        same(jf(X()), want)
    s = stats(jf)
    assert s["total_break_count"] >= 1 and s["graph_count"] >= 1
    assert capsys.readouterr().out.count("value") == 3


@pytest.mark.parametrize("make", [lambda f: ms.jit(f), lambda f: ms.jit()(f),
                                  lambda f: ms.jit(f, capture_mode="ast"),
                                  lambda f: ms.jit(f, mode="PSJit"),
                                  lambda f: ms.jit(f, capture_mode="bytecode", fullgraph=True)],
                         ids=["bare", "called", "ast", "PSJit", "bytecode-fullgraph"])
def test_whole_graph_modes_refuse_a_break_naming_its_line(make):
    def asnumpy_inside(x):
        return ms.Tensor((x * 2.0).asnumpy()) + 1.0

    jf = make(asnumpy_inside)
    ms.reset(jf)
    with pytest.raises(ms.GraphBreakError, match="asnumpy"):
        jf(X())
    # A function that is one graph runs in every whole-graph mode.
    jp = make(pure)
    ms.reset(jp)
    same(jp(X(), X() + 1.0), pure(X(), X() + 1.0))
    assert stats(jp)["graph_count"] == 1


def test_bad_keywords_and_values_are_named():
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['jit_syntax'\]"):
        ms.jit(pure, jit_syntax="STRICT")
    with pytest.raises(ValueError, match="capture_mode must be one of"):
        ms.jit(pure, capture_mode="graph")
    with pytest.raises(ValueError, match="mode must be one of"):
        ms.jit(pure, mode="Graph")
    with pytest.raises(ValueError, match="contradicts"):
        ms.jit(pure, mode="PIJit", capture_mode="ast")
    with pytest.raises(ValueError, match="jit_level must be one of"):
        ms.jit(pure, jit_level="O3")
    with pytest.raises(ValueError, match="dynamic must be 0 or 1"):
        ms.jit(pure, dynamic=2)
    with pytest.raises(ValueError, match="backend must be one of"):
        ms.jit(pure, backend="GE")
    with pytest.raises(TypeError, match="fullgraph must be a bool"):
        ms.jit(pure, fullgraph="yes")
    with pytest.raises(TypeError, match="expected a function"):
        ms.jit(42)
    with pytest.raises(TypeError, match="use jit_class"):
        ms.jit(type("Plain", (), {}))


def test_jit_level_o0_runs_the_graph_unfused_with_eager_results():
    def chain(x, y):
        return ops.relu(x * y + x) - y * 0.5

    x, y = X(), X() + 2.0
    want = chain(x, y)
    fused = ms.jit(chain, capture_mode="bytecode")
    ms.reset(fused)
    same(fused(x, y), want)
    assert "fused" in stats(fused)["graphs"][0]
    plain = ms.jit(chain, capture_mode="bytecode", jit_level="O0")
    ms.reset(plain)
    same(plain(x, y), want)
    assert "fused" not in stats(plain)["graphs"][0]
    assert "relu" in stats(plain)["graphs"][0]
    for level in ("O1", "O2"):
        jf = ms.jit(chain, jit_level=level)
        ms.reset(jf)
        same(jf(x, y), want)


def test_jit_config_level_is_read():
    jf = ms.jit(pure, capture_mode="bytecode", jit_config={"jit_level": "O0"})
    ms.reset(jf)
    same(jf(X(), X()), pure(X(), X()))


def test_dynamic_one_compiles_once_for_every_batch_size():
    def f(x):
        return (x * 2.0 + 1.0).sum(axis=0)

    jf = ms.jit(f, capture_mode="bytecode", dynamic=1)
    ms.reset(jf)
    for rows in (2, 5, 3, 7):
        same(jf(X(rows)), f(X(rows)))
    assert stats(jf)["compile_count"] == 1
    # Without it, the second size makes the sizes symbolic: two compiles.
    js = ms.jit(f, capture_mode="bytecode")
    ms.reset(js)
    for rows in (2, 5, 3, 7):
        same(js(X(rows)), f(X(rows)))
    assert stats(js)["compile_count"] == 2


def with_numpy(x):
    return ms.Tensor((x * 2.0).asnumpy()) + 1.0


def test_jit_of_a_jitted_function_with_new_settings_recompiles_it():
    jf = ms.jit(with_numpy, capture_mode="bytecode")
    assert ms.jit(jf) is jf
    strict = ms.jit(jf, capture_mode="ast")
    assert strict is not jf and strict.__wrapped__ is with_numpy
    ms.reset(strict)
    with pytest.raises(ms.GraphBreakError):
        strict(X())


# ---- what jit accepts ---------------------------------------------------------------------


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        ms.set_seed(4)
        self.dense = nn.Dense(3, 2)

    def construct(self, x):
        return ops.relu(self.dense(x)) * 2.0


def test_bound_method_of_a_cell():
    net = Net()
    want = net(X())
    jf = ms.jit(net.construct, capture_mode="bytecode")
    same(jf(X()), want)
    same(jf(X()), want)
    assert stats(jf)["compile_count"] == 1 and stats(jf)["cache_hits"] >= 1


def test_cell_instance_runs_its_construct_compiled():
    net = Net()
    want = net(X())
    assert ms.jit(net) is net
    ms.reset(Net.construct)
    same(net(X()), want)
    same(net(X()), want)
    assert stats(Net.construct)["graph_count"] == 1
    other = Net()  # other instances are untouched
    assert "construct" not in vars(other)


def test_cell_class_decorated_with_jit():
    @ms.jit(capture_mode="bytecode")
    class Scaled(nn.Cell):
        def __init__(self, k):
            super().__init__()
            self.k = k

        def construct(self, x):
            print("tracing", self.k)
            return x * self.k + 1.0

    cell = Scaled(3.0)
    ms.reset(Scaled.construct)
    for _ in range(2):
        same(cell(X()), X() * 3.0 + 1.0)
    assert stats(Scaled.construct)["graph_count"] >= 1
    with pytest.raises(TypeError, match="defines no construct"):
        ms.jit(type("Empty", (nn.Cell,), {}))


def test_staticmethod_and_classmethod_either_order():
    class Ops:
        scale = 2.0

        @ms.jit(capture_mode="bytecode")
        @staticmethod
        def double_then_add(x, y):
            return x * 2.0 + y

        @staticmethod
        @ms.jit(capture_mode="bytecode")
        def add_then_double(x, y):
            return (x + y) * 2.0

        @ms.jit(capture_mode="bytecode")
        @classmethod
        def scaled(cls, x):
            return x * cls.scale

        @classmethod
        @ms.jit(capture_mode="bytecode")
        def scaled_twice(cls, x):
            return x * cls.scale * cls.scale

    x, y = X(), X() + 1.0
    for obj in (Ops, Ops()):
        same(obj.double_then_add(x, y), x * 2.0 + y)
        same(obj.add_then_double(x, y), (x + y) * 2.0)
        same(obj.scaled(x), x * 2.0)
        same(obj.scaled_twice(x), x * 4.0)


def test_jit_class_instances_inside_compiled_functions():
    @ms.jit_class
    class Affine:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def apply(self, x):
            return x * self.a + self.b

    aff = Affine(3.0, T([1.0, 2.0, 3.0]))

    @ms.jit
    def f(x):
        return aff.apply(x) - 1.0

    ms.reset(f)
    same(f(X()), X() * 3.0 + aff.b - 1.0)
    assert stats(f)["graph_count"] == 1
    assert Affine.__ms_class__ is True
    with pytest.raises(TypeError, match="is a Cell"):
        ms.jit_class(Net)
    with pytest.raises(TypeError, match="expected a class"):
        ms.jit_class(pure)


# ---- nested jit ---------------------------------------------------------------------------

MODES = ["ast", "bytecode"]


@pytest.mark.parametrize("outer_mode", MODES)
@pytest.mark.parametrize("inner_mode", MODES)
def test_nested_jit_is_one_graph(outer_mode, inner_mode):
    inner = ms.jit(pure, capture_mode=inner_mode)

    def outer_fn(x, y):
        return inner(x, y) * 3.0 + inner(y, x)

    outer = ms.jit(outer_fn, capture_mode=outer_mode)
    ms.reset(outer)
    want = outer_fn(X(), X() + 1.0)
    for _ in range(2):
        same(outer(X(), X() + 1.0), want)
    s = stats(outer)
    assert s["graph_count"] == 1 and s["total_break_count"] == 0
    assert s["compile_count"] == 1


HELPER = ms.jit(lambda x: x * 2.0, capture_mode="bytecode")


def outer_reading_a_global_jitted(x):
    return HELPER(x) + 1.0


def test_nested_jit_is_guarded_by_the_callable():
    global HELPER
    saved = HELPER
    jf = ms.jit(outer_reading_a_global_jitted)
    ms.reset(jf)
    try:
        same(jf(X()), X() * 2.0 + 1.0)
        HELPER = ms.jit(lambda x: x * 5.0, capture_mode="bytecode")
        same(jf(X()), X() * 5.0 + 1.0)
        assert stats(jf)["compile_count"] == 2
    finally:
        HELPER = saved


def test_jitted_method_called_from_a_jitted_function():
    class Scaler:
        def __init__(self, k):
            self.k = k

        @ms.jit(capture_mode="bytecode")
        def apply(self, x):
            return x * self.k

    s = Scaler(4.0)

    @ms.jit
    def f(x):
        return s.apply(x) + 1.0

    ms.reset(f)
    same(f(X()), X() * 4.0 + 1.0)
    assert stats(f)["graph_count"] == 1 and stats(f)["total_break_count"] == 0
    same(s.apply(X()), X() * 4.0)  # called directly, as a method


# ---- mutable ------------------------------------------------------------------------------


def scaled(x, lr, step):
    return x * lr - step


def test_mutable_numbers_are_graph_inputs_from_the_first_compile():
    jf = ms.jit(scaled, capture_mode="bytecode")
    ms.reset(jf)
    for i, lr in enumerate([0.1, 0.25, 0.5, 1.5]):
        same(jf(X(), ms.mutable(lr), ms.mutable(i)), scaled(X(), lr, i))
    assert stats(jf)["compile_count"] == 1
    # Plain numbers compile once more before they become inputs (dynamic numbers).
    jp = ms.jit(scaled, capture_mode="bytecode")
    ms.reset(jp)
    for i, lr in enumerate([0.1, 0.25, 0.5, 1.5]):
        same(jp(X(), lr, i), scaled(X(), lr, i))
    assert stats(jp)["compile_count"] == 2


def sum_of(xs, k):
    return xs[0] * k + xs[1]


def test_mutable_tuples_of_tensors_and_cells():
    jf = ms.jit(sum_of)
    ms.reset(jf)
    for k in (2.0, 3.0):
        pair = ms.mutable((X(), X() + 1.0))
        assert isinstance(pair, tuple) and pair[0].shape == (2, 3)
        same(jf(pair, ms.mutable(k)), sum_of((X(), X() + 1.0), k))
    assert stats(jf)["compile_count"] == 1

    class Scale(nn.Cell):
        def construct(self, x, k):
            return x * k

    net = ms.jit(Scale())
    ms.reset(Scale.construct)
    for k in (0.5, 2.0, 4.0):
        same(net(X(), ms.mutable(k)), X() * k)
    assert stats(Scale.construct)["compile_count"] == 1


def test_mutable_values_behave_as_what_they_hold():
    assert ms.mutable(3) + 1 == 4 and ms.mutable(2.5) * 2 == 5.0
    assert list(ms.mutable([1, 2])) == [1, 2] and ms.mutable((1, 2)) == (1, 2)
    t = X()
    assert ms.mutable(t) is t
    d = {"a": 1}
    assert ms.mutable(d) is d
    assert ms.mutable((1, 2), dynamic_len=True) == (1, 2)
    with pytest.raises(TypeError, match="bool"):
        ms.mutable(True)
    with pytest.raises(TypeError, match="must be an int, a float"):
        ms.mutable("text")
    with pytest.raises(ValueError, match="dynamic_len=True needs a tuple or a list"):
        ms.mutable(3, dynamic_len=True)


# ---- placeholders and set_inputs ----------------------------------------------------------


class RowSum(nn.Cell):
    def __init__(self):
        super().__init__()
        ms.set_seed(2)
        self.dense = nn.Dense(3, 2)

    def construct(self, x):
        return ops.relu(self.dense(x)).sum(axis=1) * 2.0


@pytest.fixture
def graph_mode():
    ms.set_context(mode=ms.GRAPH_MODE)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def test_placeholder_tensors():
    p = ms.Tensor(shape=[None, 3], dtype=ms.float32)
    assert isinstance(p, ms.Tensor) and p.dtype == ms.float32 and p._placeholder_shape == (None, 3)
    assert ms.Tensor(shape=None, dtype=ms.int32)._placeholder_shape is None
    from pijit.common.initializer import One
    same(ms.Tensor(shape=(2, 3), dtype=ms.float32, init=One()), T(np.ones((2, 3))))
    with pytest.raises(ValueError, match="needs input_data or init"):
        ms.Tensor(shape=(2, 3), dtype=ms.float32)
    with pytest.raises(TypeError, match="dtype must be given"):
        ms.Tensor(shape=[None, 3])
    with pytest.raises(ValueError, match="takes no init"):
        ms.Tensor(shape=[None, 3], dtype=ms.float32, init=One())


def test_set_inputs_compiles_once_for_every_matching_size(graph_mode):
    net = RowSum()
    net.set_inputs(ms.Tensor(shape=[None, 3], dtype=ms.float32))
    assert net.get_inputs()[0]._placeholder_shape == (None, 3)
    ms.reset(RowSum.construct)
    for rows in (2, 5, 1, 7):
        x = X(rows) if rows > 1 else T([[0.5, -1.0, 2.0]])
        same(net(x), net.construct(x))
    assert stats(RowSum.construct)["compile_count"] == 1


def test_set_inputs_with_any_rank(graph_mode):
    class Double(nn.Cell):
        def construct(self, x):
            return x * 2.0 + 1.0

    net = Double()
    net.set_inputs(ms.Tensor(shape=None, dtype=ms.float32))
    ms.reset(Double.construct)
    for shape in [(3,), (2, 3), (4, 3)]:
        x = T(np.arange(np.prod(shape)).reshape(shape))
        same(net(x), x * 2.0 + 1.0)
    assert stats(Double.construct)["compile_count"] == 2  # one per rank


def test_set_inputs_mismatches_are_errors_naming_the_input(graph_mode):
    net = RowSum()
    net.set_inputs(ms.Tensor(shape=[None, 3], dtype=ms.float32))
    with pytest.raises(ValueError, match=r"input 0 has shape \(2, 4\).*\(None, 3\)"):
        net(T(np.ones((2, 4))))
    with pytest.raises(ValueError, match="input 0 is Float64, set_inputs declared Float32"):
        net(ms.Tensor(np.ones((2, 3))))
    with pytest.raises(ValueError, match="declared 1 inputs, the call gives 2"):
        net(X(), X())
