"""MindSpore's composite utilities (HyperMap, Map, Partial, MultitypeFuncGraph), the gradient
hooks (InsertGradientOf, HookBackward), the checks (Assert, CheckNumerics), Eps, FillV2 and
the transforms jvp, get_grad and lazy_inline: results against NumPy or finite differences,
jitted against eager, and an optimizer written the MindSpore way captured into one graph."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops

RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def fresh():
    ms.reset()
    yield
    ms.reset()
    ms.set_context(mode=ms.PYNATIVE_MODE)


def T(values, dtype=np.float32):
    return ms.Tensor(np.asarray(values, dtype=dtype))


def jit(fn):
    return ms.jit(fn, capture_mode="bytecode")


def numeric_grad(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        plus, minus = x.copy(), x.copy()
        plus[i] += h
        minus[i] -= h
        g[i] = (f(plus) - f(minus)) / (2 * h)
    return g


# ---- MultitypeFuncGraph --------------------------------------------------------------------------

def make_add():
    add = ops.MultitypeFuncGraph("add")

    @add.register("Number", "Number")
    def _numbers(x, y):
        return ("numbers", x + y)

    @add.register("Int", "Int")
    def _ints(x, y):
        return ("ints", x + y)

    @add.register("Tensor", "Tensor")
    def _tensors(x, y):
        return ("tensors", x + y)

    @add.register("Tuple", "None")
    def _tuple_none(x, y):
        return ("tuple", len(x))

    @add.register("String", "Function")
    def _string_function(x, y):
        return ("string", y(x))

    return add


def test_multitype_func_graph_dispatches_on_type_names():
    add = make_add()
    assert add(1.5, 2) == ("numbers", 3.5)
    assert add(1, 2) == ("ints", 3)  # Int is more specific than Number
    assert add(True, 1.0) == ("numbers", 2.0)  # Bool is a Number
    kind, value = add(T([1, 2]), ms.Parameter(T([3, 4]), name="p"))  # Parameter is a Tensor
    assert kind == "tensors"
    np.testing.assert_array_equal(value.asnumpy(), [4, 6])
    assert add((1, 2, 3), None) == ("tuple", 3)
    assert add("ab", str.upper) == ("string", "AB")


def test_multitype_func_graph_errors():
    add = make_add()
    with pytest.raises(ValueError, match="MultitypeFuncGraph 'add'.*no overload.*Tensor.*Int"):
        add(T([1]), 2)
    with pytest.raises(ValueError, match="unknown type name 'Tensr'"):
        add.register("Tensr")
    with pytest.raises(TypeError, match="type names must be strings"):
        add.register(3)
    with pytest.raises(TypeError, match="name must be a str"):
        ops.MultitypeFuncGraph(3)


# ---- Partial, HyperMap, Map ----------------------------------------------------------------------

def test_partial_binds_leading_arguments():
    bound = ops.Partial()(lambda a, b, c: a * 100 + b * 10 + c, 1, 2)
    assert bound(3) == 123
    with pytest.raises(TypeError, match="Partial: fn must be callable"):
        ops.Partial()(3, 1)


def test_hyper_map_over_nested_sequences():
    square = ops.MultitypeFuncGraph("square")

    @square.register("Tensor")
    def _square(x):
        return ops.square(x)

    nested = ((T(1.0), T(2.0)), (T(3.0), [T(4.0), T(5.0)]))
    for out in (ops.HyperMap()(square, nested), ops.HyperMap(square)(nested)):
        assert isinstance(out, tuple) and isinstance(out[1][1], list)
        assert [float(out[0][0].asnumpy()), float(out[0][1].asnumpy()),
                float(out[1][0].asnumpy())] == [1.0, 4.0, 9.0]
        assert [float(t.asnumpy()) for t in out[1][1]] == [16.0, 25.0]
    assert float(ops.HyperMap(square)(T(3.0)).asnumpy()) == 9.0  # a leaf: applied directly


def test_hyper_map_several_inputs_and_reverse_order():
    calls = []

    def record(a, b):
        calls.append(a)
        return a * 10 + b

    out = ops.HyperMap(record, reverse=True)((1, (2, 3)), (4, (5, 6)))
    assert out == (14, (25, 36))
    assert calls == [3, 2, 1]  # computed last item first, results in order


def test_hyper_map_errors():
    hyper_map = ops.HyperMap()
    with pytest.raises(ValueError, match="HyperMap: the sequences must have one length"):
        hyper_map(lambda a, b: a, (1, 2), (1,))
    with pytest.raises(TypeError, match="HyperMap: the inputs must be all tuples or all lists"):
        hyper_map(lambda a, b: a, (1, 2), [1, 2])
    with pytest.raises(TypeError, match="HyperMap: the inputs must be all tuples"):
        hyper_map(lambda a, b: a, (1, 2), 3)
    with pytest.raises(TypeError, match="HyperMap: ops must be"):
        ops.HyperMap(3)
    with pytest.raises(TypeError, match="reverse must be a bool"):
        ops.HyperMap(None, 1)


def test_map_applies_over_one_level():
    out = ops.Map()(lambda a, b: (a, b), (1, (2, 3)), (4, (5, 6)))
    assert out == ((1, 4), ((2, 3), (5, 6)))
    assert ops.Map(len)([(1, 2), (3,)]) == [2, 1]
    with pytest.raises(TypeError, match="Map: the inputs must be tuples or lists"):
        ops.Map(len)(3)


# ---- an optimizer written with HyperMap, MultitypeFuncGraph and Partial --------------------------

_momentum_update = ops.MultitypeFuncGraph("momentum_update")


@_momentum_update.register("Number", "Number", "Tensor", "Tensor", "Tensor")
def _momentum_tensor(lr, momentum, gradient, weight, moment):
    new_moment = moment * momentum + gradient
    ops.assign(moment, new_moment)
    ops.assign(weight, weight - lr * new_moment)
    return weight


class MomentumLike(nn.Cell):
    def __init__(self, params, lr=0.1, momentum=0.9):
        super().__init__()
        self.params = params
        self.moments = ms.ParameterTuple([ms.Parameter(ops.zeros_like(p), name="m_" + p.name)
                                          for p in params])
        self.lr = lr
        self.momentum = momentum
        self.hyper_map = ops.HyperMap()
        self.partial = ops.Partial()

    def construct(self, gradients):
        update = self.partial(_momentum_update, self.lr, self.momentum)
        return self.hyper_map(update, gradients, self.params, self.moments)


def momentum_reference(weights, gradient_steps, lr=0.1, momentum=0.9):
    weights = [w.copy() for w in weights]
    moments = [np.zeros_like(w) for w in weights]
    for grads in gradient_steps:
        for k, g in enumerate(grads):
            moments[k] = moments[k] * momentum + g
            weights[k] = weights[k] - lr * moments[k]
    return weights


@pytest.mark.parametrize("mode", ["graph", "bytecode"])
def test_optimizer_cell_is_one_graph_and_matches_numpy(mode):
    start = [RNG.standard_normal(3).astype(np.float32),
             RNG.standard_normal((2, 2)).astype(np.float32)]
    params = ms.ParameterTuple([ms.Parameter(T(w), name=f"w{k}") for k, w in enumerate(start)])
    opt = MomentumLike(params)
    steps = [[RNG.standard_normal(w.shape).astype(np.float32) for w in start] for _ in range(3)]
    if mode == "graph":
        ms.set_context(mode=ms.GRAPH_MODE)
        run = opt
    else:
        run = jit(opt.construct)
    for grads in steps:
        run(tuple(T(g) for g in grads))
    for got, want in zip(params, momentum_reference(start, steps)):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)
    stats = ms.get_code_extra(MomentumLike.construct)
    assert stats["graph_count"] == 1 and stats["break_count"] == 0, stats["reasons"]


# ---- gradient hooks ------------------------------------------------------------------------------

def clip_gradient(dout):
    return ops.clip(dout, -1.0, 1.0)


CLIP = ops.InsertGradientOf(clip_gradient)


def clipped_loss(x):
    return (CLIP(x * 3.0) ** 2).sum()


def test_insert_gradient_of_transforms_the_gradient():
    x_np = np.array([-0.5, 0.1, 0.05, 2.0])
    x = T(x_np, np.float64)
    np.testing.assert_allclose(CLIP(x).asnumpy(), x_np)  # the forward is the identity
    # the gradient at y = 3x is 2y = 6x, clipped to [-1, 1], then times 3
    want = 3.0 * np.clip(6.0 * x_np, -1.0, 1.0)
    np.testing.assert_allclose(ms.grad(clipped_loss)(x).asnumpy(), want)
    np.testing.assert_allclose(jit(lambda t: ms.grad(clipped_loss)(t))(x).asnumpy(), want)
    with pytest.raises(TypeError, match="InsertGradientOf: f must be callable"):
        ops.InsertGradientOf(3)
    with pytest.raises(TypeError, match="InsertGradientOf: x must be a Tensor"):
        CLIP(3.0)


def test_hook_backward_sees_and_replaces_gradients():
    seen = []

    def hook(grad):
        seen.append(grad.asnumpy().copy())
        return grad * 2

    hook_backward = ops.HookBackward(hook)

    def loss(x):
        return (hook_backward(x * 3.0) ** 2).sum()

    x_np = np.array([1.0, -2.0])
    x = T(x_np, np.float64)
    np.testing.assert_allclose(hook_backward(x).asnumpy(), x_np)
    eager = ms.grad(loss)(x).asnumpy()
    np.testing.assert_allclose(seen[0], 6.0 * x_np)  # d(y^2)/dy = 2y at y = 3x
    np.testing.assert_allclose(eager, 3.0 * 2 * 6.0 * x_np)  # doubled by the hook
    seen.clear()
    jitted = jit(lambda t: ms.grad(loss)(t))(x).asnumpy()
    np.testing.assert_allclose(jitted, eager)
    assert len(seen) == 1  # the jitted function ran eagerly, hook included

    with pytest.raises(TypeError, match="HookBackward: hook_fn must be callable"):
        ops.HookBackward(None)
    with pytest.raises(TypeError, match="must return a Tensor or None"):
        ms.grad(lambda t: ops.HookBackward(lambda g: 3)(t).sum())(x)


# ---- checks, Eps, FillV2 -------------------------------------------------------------------------

def checked_double(condition, x):
    ops.Assert(2)(condition, (x,))
    return x * 2


@pytest.mark.parametrize("run", [checked_double, jit(checked_double)], ids=["eager", "jit"])
def test_assert_raises_with_the_data(run):
    x = T([7.0, 8.0, 9.0])
    np.testing.assert_allclose(run(T(True, np.bool_), x).asnumpy(), [14, 16, 18])
    with pytest.raises(RuntimeError, match=r"Assert: the condition is false.*7.*8.* \.\.\."):
        run(T(False, np.bool_), x)


def test_assert_argument_errors():
    with pytest.raises(TypeError, match="Assert: condition must be"):
        ops.Assert()(T([1.0]), [T([1.0])])
    with pytest.raises(TypeError, match="Assert: input_data must be a tuple"):
        ops.Assert()(True, T([1.0]))
    with pytest.raises(TypeError, match="summarize"):
        ops.Assert(-1)
    ops.Assert()(True, [T([1.0])])


def check_then_add(x):
    return ops.CheckNumerics()(x) + 1


@pytest.mark.parametrize("run", [check_then_add, jit(check_then_add)], ids=["eager", "jit"])
def test_check_numerics(run):
    np.testing.assert_allclose(run(T([1.0, 2.0])).asnumpy(), [2.0, 3.0])
    with pytest.raises(RuntimeError, match="CheckNumerics: x holds NaN"):
        run(T([1.0, np.nan]))
    with pytest.raises(RuntimeError, match="CheckNumerics: x holds Inf"):
        run(T([np.inf, 1.0]))
    with pytest.raises(TypeError, match="CheckNumerics: x must be a float Tensor"):
        run(T([1, 2], np.int32))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_eps_is_the_smallest_normal(dtype):
    x = T(np.zeros((2, 3)), dtype)
    for run in (ops.Eps(), jit(lambda t: ops.Eps()(t))):
        out = run(x)
        assert out.dtype == x.dtype and out.shape == (2, 3)
        np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), np.finfo(dtype).tiny, dtype))
    with pytest.raises(TypeError, match="Eps: x must be a float Tensor"):
        ops.Eps()(T([1], np.int32))


def test_fill_v2():
    for run in (ops.FillV2(), jit(lambda s, v: ops.FillV2()(s, v))):
        out = run((2, 3), T(2.5))
        np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), 2.5, np.float32))
    out = ops.FillV2()(T([3, 1], np.int64), T(7, np.int32))
    assert out.dtype == ms.int32
    np.testing.assert_array_equal(out.asnumpy(), np.full((3, 1), 7, np.int32))
    with pytest.raises(ValueError, match="FillV2: value must have one element"):
        ops.FillV2()((2,), T([1.0, 2.0]))
    with pytest.raises(TypeError, match="FillV2: shape must be"):
        ops.FillV2()((2, -1), T(1.0))


# ---- jvp, get_grad, lazy_inline ------------------------------------------------------------------

def cubic_mix(x, y):
    return x ** 3 * y + ops.sin(y)


def test_jvp_matches_finite_differences():
    x_np, y_np = RNG.standard_normal(4), RNG.standard_normal(4)
    vx, vy = RNG.standard_normal(4), RNG.standard_normal(4)
    out, product = ms.jvp(cubic_mix, (T(x_np, np.float64), T(y_np, np.float64)),
                          (T(vx, np.float64), T(vy, np.float64)))
    np.testing.assert_allclose(out.asnumpy(), x_np ** 3 * y_np + np.sin(y_np))
    h = 1e-6
    numeric = ((x_np + h * vx) ** 3 * (y_np + h * vy) + np.sin(y_np + h * vy)
               - (x_np - h * vx) ** 3 * (y_np - h * vy) - np.sin(y_np - h * vy)) / (2 * h)
    np.testing.assert_allclose(product.asnumpy(), numeric, rtol=1e-6, atol=1e-8)


def test_jvp_single_input_tuple_output_and_aux():
    x_np, v_np = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, -1.0])

    def two(x):
        return x * x, ops.exp(x)

    out, product = ms.jvp(two, T(x_np, np.float64), T(v_np, np.float64))
    np.testing.assert_allclose(product[0].asnumpy(), 2 * x_np * v_np)
    np.testing.assert_allclose(product[1].asnumpy(), np.exp(x_np) * v_np)

    def with_aux(x):
        return ops.tanh(x), x + 100

    out, product, aux = ms.jvp(with_aux, T(x_np, np.float64), T(v_np, np.float64), has_aux=True)
    np.testing.assert_allclose(out.asnumpy(), np.tanh(x_np))
    np.testing.assert_allclose(product.asnumpy(), (1 - np.tanh(x_np) ** 2) * v_np)
    np.testing.assert_allclose(aux.asnumpy(), x_np + 100)


def test_jvp_errors():
    x = T([1.0, 2.0])
    with pytest.raises(ValueError, match="jvp: v\\[0\\] has shape"):
        ms.jvp(ops.sin, x, T([1.0]))
    with pytest.raises(ValueError, match="jvp: v has 2 tensors for 1 inputs"):
        ms.jvp(ops.sin, x, (x, x))
    with pytest.raises(TypeError, match="jvp: inputs must be a Tensor"):
        ms.jvp(ops.sin, 1.0, x)
    with pytest.raises(TypeError, match="jvp: fn must be callable"):
        ms.jvp(3, x, x)


class Product(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = ms.Parameter(T([2.0, -1.0]), name="w")

    def construct(self, x, y, z):
        return (x * y * z * self.w).sum()


def test_get_grad_by_position_and_parameter():
    net = Product()
    x, y, z = T([1.0, 2.0]), T([-2.0, 3.0]), T([0.5, 3.0])
    grads = ms.grad(net, grad_position=(1, 2), weights=net.trainable_params(),
                    return_ids=True)(x, y, z)
    w = np.array([2.0, -1.0])
    np.testing.assert_allclose(ms.get_grad(grads, 1).asnumpy(), [0.5, 6.0] * w)
    np.testing.assert_allclose(ms.get_grad(grads, 2).asnumpy(), [-2.0, 6.0] * w)
    np.testing.assert_allclose(ms.get_grad(grads, net.w).asnumpy(), [-1.0, 18.0])
    single = ms.grad(net, grad_position=0, return_ids=True)(x, y, z)
    np.testing.assert_allclose(ms.get_grad(single, 0).asnumpy(), [-1.0, 9.0] * w)
    with pytest.raises(RuntimeError, match="get_grad: no gradient for position 0"):
        ms.get_grad(grads, 0)
    with pytest.raises(TypeError, match="get_grad: identifier must be"):
        ms.get_grad(grads, "w")
    with pytest.raises(TypeError, match="get_grad: gradients must be"):
        ms.get_grad([1], 0)


class Block(nn.Cell):
    @ms.lazy_inline(attrs=["scale"])
    def __init__(self, size, scale=2.0):
        super().__init__()
        self.dense = nn.Dense(size, size)

    def construct(self, x):
        return self.dense(x) * self.scale


class Stack(nn.Cell):
    def __init__(self):
        super().__init__()
        self.blocks = nn.CellList([Block(3), Block(3, scale=0.5)])

    def construct(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def test_lazy_inline_keeps_behaviour_and_records_arguments():
    net = Stack()
    assert net.blocks[1].scale == 0.5
    assert net.blocks[0].cell_init_args == "lazy_inline_Block{'size': 3, 'scale': 2.0}"
    x_np = RNG.standard_normal((2, 3)).astype(np.float32)
    want = x_np
    for block in net.blocks:
        want = (want @ block.dense.weight.asnumpy().T + block.dense.bias.asnumpy()) * block.scale
    np.testing.assert_allclose(net(T(x_np)).asnumpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jit(net.construct)(T(x_np)).asnumpy(), want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="lazy_inline: policy"):
        ms.lazy_inline(policy="back")
    with pytest.raises(TypeError, match="lazy_inline: attrs"):
        ms.lazy_inline(attrs=[1])


def test_jvp_jitted_is_one_graph_equal_to_eager():
    def directional(x, v):
        return ms.jvp(lambda t: ops.sin(t) * t, x, v)

    x_np, v_np = np.array([0.5, 1.0, -2.0]), np.array([1.0, 2.0, 0.5])
    jitted = jit(directional)
    out, product = jitted(T(x_np, np.float64), T(v_np, np.float64))
    np.testing.assert_allclose(out.asnumpy(), np.sin(x_np) * x_np)
    np.testing.assert_allclose(product.asnumpy(), (np.cos(x_np) * x_np + np.sin(x_np)) * v_np)
    stats = ms.get_code_extra(directional)
    assert stats["graph_count"] == 1 and stats["break_count"] == 0, stats["reasons"]
