"""Automatic differentiation: pijit.grad / value_and_grad / ops.GradOperation over the tape.

Every VJP rule is reached through the Python surface (functions, methods, operators with
Python scalars, primitives) and checked against central finite differences in float64."""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pijit as ms
from pijit import _C, nn, ops

from test_seeds import EXAMPLES as SEED_EXAMPLES

RNG = np.random.default_rng(0)


def rand(*shape, lo=-1.5, hi=1.5):
    return RNG.uniform(lo, hi, size=shape)


def numeric_grad(f, arrays, k, h=1e-6):
    """d f(*arrays) / d arrays[k] by central differences (f returns a float)."""
    base = [a.copy() for a in arrays]
    g = np.zeros_like(base[k])
    for i in np.ndindex(*base[k].shape):
        plus = [a.copy() for a in base]
        minus = [a.copy() for a in base]
        plus[k][i] += h
        minus[k][i] -= h
        g[i] = (f(*plus) - f(*minus)) / (2 * h)
    return g


def check(fn, *arrays, lo=None):
    """pijit.grad of sum(fn(*xs) * w) (w random) against finite differences, all inputs."""
    arrays = [np.asarray(a, np.float64) for a in arrays]
    out_shape = fn(*[ms.Tensor(a) for a in arrays]).shape
    w = ms.Tensor(rand(*out_shape))

    def objective(*xs):
        return ops.sum(fn(*xs) * w)

    def value(*arrs):
        return float(objective(*[ms.Tensor(a) for a in arrs]).asnumpy())

    grads = ms.grad(objective, tuple(range(len(arrays))))(*[ms.Tensor(a) for a in arrays])
    assert len(grads) == len(arrays)
    for k, g in enumerate(grads):
        assert g.shape == arrays[k].shape and g.dtype == ms.float64
        np.testing.assert_allclose(g.asnumpy(), numeric_grad(value, arrays, k), rtol=1e-6, atol=1e-6,
                                   err_msg=f"input {k}")


POS = dict(lo=0.5, hi=2.0)

UNARY = {
    "neg": (ops.neg, {}), "exp": (ops.exp, {}), "log": (ops.log, POS), "relu": (ops.relu, {}),
    "abs": (ops.abs, {}), "square": (ops.square, {}), "sqrt": (ops.sqrt, POS),
    "rsqrt": (ops.rsqrt, POS), "sin": (ops.sin, {}), "cos": (ops.cos, {}), "tanh": (ops.tanh, {}),
    "sigmoid": (ops.sigmoid, {}), "gelu": (ops.gelu, {}), "softplus": (ops.softplus, {}),
    "erf": (ops.erf, {}), "neg_operator": (lambda x: -x, {}), "abs_builtin": (abs, {}),
    "pos_operator": (lambda x: +x * x, {}), "ReLU_primitive": (ops.ReLU(), {}),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradients_match_finite_differences(name):
    fn, rng = UNARY[name]
    check(fn, rand(2, 3, **rng))


BROADCAST = [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 3)), ((4, 1, 3), (2, 1))]
BINARY = {"add": ops.add, "sub": ops.sub, "mul": ops.mul, "maximum": ops.maximum,
          "minimum": ops.minimum, "plus": lambda a, b: a + b, "minus": lambda a, b: a - b,
          "times": lambda a, b: a * b, "Mul_primitive": ops.Mul()}


@pytest.mark.parametrize("shapes", BROADCAST, ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_gradients_sum_over_broadcast_axes(name, shapes):
    check(BINARY[name], rand(*shapes[0]), rand(*shapes[1]))


@pytest.mark.parametrize("shapes", BROADCAST, ids=str)
@pytest.mark.parametrize("fn", [ops.div, lambda a, b: a / b, ops.pow, lambda a, b: a ** b],
                         ids=["div", "truediv", "pow", "pow_operator"])
def test_div_and_pow_gradients(fn, shapes):
    check(fn, rand(*shapes[0], **POS), rand(*shapes[1], **POS))


@pytest.mark.parametrize("fn", [
    lambda x: x * 2.0, lambda x: 3 - x, lambda x: x / 4, lambda x: 2.0 / x, lambda x: x ** 3,
    lambda x: 2 ** x, lambda x: ops.pow(x, 0.5), lambda x: ops.maximum(x, 0.25),
    lambda x: ops.remainder(x, 10.0), lambda x: ops.floor_divide(x, 10.0) + x,
], ids=["mul", "rsub", "div", "rdiv", "cube", "rpow", "sqrt_pow", "maximum", "mod", "floordiv"])
def test_python_scalar_operands(fn):
    check(fn, rand(2, 3, **POS))


def test_where_routes_the_gradient_by_the_condition():
    cond = ms.Tensor(rand(2, 3) > 0)
    check(lambda x, y: ops.where(cond, x, y), rand(2, 3), rand(3))
    check(lambda x: ops.where(x > 0, x, 0.0) * x, rand(2, 3))


def test_clip_with_scalar_and_tensor_bounds():
    check(lambda x: ops.clip(x, -0.5, 0.5), rand(3, 4))
    check(lambda x: x.clamp(min=0.2), rand(3, 4))
    check(lambda x, lo, hi: ops.clip(x, lo, hi + 1.0), rand(3, 4), rand(4), rand(3, 1))


@pytest.mark.parametrize("op", [ops.sum, ops.mean, ops.amax, ops.amin], ids=lambda f: f.__name__)
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_reductions(op, axis, keepdims):
    check(lambda x: op(x, axis, keepdims), rand(2, 3, 4))


def test_reduction_methods_primitives_and_var_std():
    check(lambda x: x.sum(axis=0) * x.mean(), rand(3, 4))
    check(lambda x: ops.ReduceSum(keep_dims=True)(x, 1), rand(3, 4))
    check(lambda x: ops.ReduceMax()(x, (0,)), rand(3, 4))
    check(lambda x: ops.var(x, 1, ddof=1), rand(3, 4))
    check(lambda x: ops.std(x, (0, 1)), rand(3, 4))


def test_max_reduction_shares_the_gradient_between_ties():
    g = ms.grad(lambda x: ops.amax(x))(ms.Tensor(np.array([1.0, 3.0, 3.0, 2.0])))
    np.testing.assert_array_equal(g.asnumpy(), [0, 0.5, 0.5, 0])


@pytest.mark.parametrize("axis", [0, -1])
def test_softmax_and_log_softmax(axis):
    check(lambda x: ops.softmax(x, axis), rand(3, 4))
    check(lambda x: ops.log_softmax(x, axis=axis), rand(3, 4))
    check(lambda x: ops.LogSoftmax(axis)(x), rand(3, 4))


@pytest.mark.parametrize("a,b", [((2, 3), (3, 4)), ((2, 2, 3), (3, 4)), ((3, 4), (2, 4, 5)),
                                 ((2, 1, 2, 3), (3, 3, 2)), ((3,), (3, 4)), ((2, 3), (3,)),
                                 ((3,), (3,)), ((3,), (2, 3, 4))], ids=str)
def test_matmul_plain_batched_and_one_dimensional(a, b):
    check(ops.matmul, rand(*a), rand(*b))


def test_matmul_operator_and_transposing_primitive():
    check(lambda a, b: a @ b, rand(2, 3), rand(3, 2))
    check(lambda a, b: ops.MatMul(transpose_a=True, transpose_b=True)(a, b), rand(3, 2), rand(4, 3))


def test_shape_ops():
    check(lambda x: ops.reshape(x, (3, -1, 2)), rand(2, 6))
    check(lambda x: x.reshape(12), rand(2, 6))
    check(lambda x: ops.transpose(x, (2, 0, 1)), rand(2, 3, 4))
    check(lambda x: x.T * 1.0, rand(2, 3))
    check(lambda x: ops.broadcast_to(x, (2, 3, 4)), rand(3, 1))
    check(lambda x: ops.squeeze(x), rand(1, 3, 1))
    check(lambda x: ops.expand_dims(x, 1), rand(2, 3))
    check(lambda x: x.unsqueeze(0), rand(2, 3))
    check(lambda x: ops.flatten(x, start_dim=1), rand(2, 3, 4))
    check(lambda x: ops.Flatten()(x), rand(2, 3, 4))


def test_concat_and_stack():
    check(lambda a, b, c: ops.concat([a, b, c], axis=1), rand(2, 3), rand(2, 1), rand(2, 4))
    check(lambda a, b: ops.cat((a, b)), rand(1, 3), rand(4, 3))
    check(lambda a, b: ops.stack([a, b * 2.0, a], -1), rand(2, 3), rand(2, 3))


@pytest.mark.parametrize("index", [1, (slice(1, None, 2), -1), (Ellipsis, slice(None, None, -1)),
                                   (None, slice(0, 2), None, 2)], ids=str)
def test_indexing_scatters_the_gradient(index):
    check(lambda x: (x * x)[index], rand(3, 4, 5))


def test_iterating_a_tensor_differentiates_each_row():
    check(lambda x: ops.stack([row * i for i, row in enumerate(x)]), rand(3, 2))


def test_astype_passes_the_gradient_back_in_the_input_dtype():
    x = ms.Tensor(rand(3))
    g = ms.grad(lambda x: ops.sum(x.astype(ms.float32) * 2.0))(x)
    assert g.dtype == ms.float64
    np.testing.assert_array_equal(g.asnumpy(), [2, 2, 2])


def test_float32_gradients_stay_float32():
    x = ms.Tensor(rand(2, 3).astype(np.float32))
    g = ms.grad(lambda x: ops.sum(ops.tanh(x) * x))(x)
    assert g.dtype == ms.float32
    t = np.tanh(x.asnumpy())
    np.testing.assert_allclose(g.asnumpy(), t + x.asnumpy() * (1 - t * t), rtol=1e-5)


# ---- API: positions, weights, has_aux, sens ---------------------------------------------------

class Linear(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = ms.Parameter(ms.Tensor(rand(3, 2)), name="w")
        self.b = ms.Parameter(ms.Tensor(rand(2)), name="b")

    def construct(self, x, scale):
        return ops.sum(ops.tanh(ops.matmul(x, self.w) + self.b) * scale)


def linear_grads(net, x, scale):
    """Analytic gradients of Linear: (dx, dscale, dw, db)."""
    w, b = net.w.asnumpy(), net.b.asnumpy()
    h = np.tanh(x @ w + b)
    dz = scale * (1 - h * h)
    return dz @ w.T, h, x.T @ dz, dz.sum(0)


def test_grad_with_respect_to_inputs_and_weights():
    net = Linear()
    x, scale = rand(4, 3), rand(4, 2)
    dx, dscale, dw, db = linear_grads(net, x, scale)
    (gx, gs), (gw, gb) = ms.grad(net, (0, 1), weights=net.trainable_params())(ms.Tensor(x), ms.Tensor(scale))
    for got, want in ((gx, dx), (gs, dscale), (gw, dw), (gb, db)):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-12)
    gw_only = ms.grad(net, None, weights=ms.ParameterTuple(net.trainable_params()))(ms.Tensor(x), ms.Tensor(scale))
    assert isinstance(gw_only, tuple) and len(gw_only) == 2
    np.testing.assert_allclose(gw_only[1].asnumpy(), db, rtol=1e-12)
    g1 = ms.grad(net, 1)(ms.Tensor(x), ms.Tensor(scale))
    np.testing.assert_allclose(g1.asnumpy(), dscale, rtol=1e-12)
    single = ms.grad(net, weights=net.b)(ms.Tensor(x), ms.Tensor(scale))
    # One Parameter (not a tuple of them): its gradient alone, as MindSpore returns it.
    np.testing.assert_allclose(single[1].asnumpy(), db, rtol=1e-12)
    only_b = ms.grad(net, None, weights=net.b)(ms.Tensor(x), ms.Tensor(scale))
    assert isinstance(only_b, ms.Tensor)
    np.testing.assert_allclose(only_b.asnumpy(), db, rtol=1e-12)


def test_grad_return_ids_pairs_gradients_with_positions_and_names():
    net = Linear()
    x, scale = rand(4, 3), rand(4, 2)
    dx, dscale, dw, db = linear_grads(net, x, scale)
    (ix, iscale), ((nw, gw), (nb, gb)) = ms.grad(net, (0, 1), weights=net.trainable_params(),
                                                 return_ids=True)(ms.Tensor(x), ms.Tensor(scale))
    assert (ix[0], iscale[0], nw, nb) == (0, 1, net.w.name, net.b.name)
    np.testing.assert_allclose(iscale[1].asnumpy(), dscale, rtol=1e-12)
    np.testing.assert_allclose(gb.asnumpy(), db, rtol=1e-12)
    pos, g = ms.grad(net, 0, return_ids=True)(ms.Tensor(x), ms.Tensor(scale))
    assert pos == 0
    np.testing.assert_allclose(g.asnumpy(), dx, rtol=1e-12)


def test_grad_operation_get_all_get_by_list_and_sens():
    net = Linear()
    x, scale = rand(4, 3), rand(4, 2)
    dx, dscale, dw, db = linear_grads(net, x, scale)
    weights = ms.ParameterTuple(net.trainable_params())
    X, S = ms.Tensor(x), ms.Tensor(scale)
    np.testing.assert_allclose(ops.GradOperation()(net)(X, S).asnumpy(), dx, rtol=1e-12)
    gx, gs = ops.GradOperation(get_all=True)(net)(X, S)
    np.testing.assert_allclose(gs.asnumpy(), dscale, rtol=1e-12)
    gw, gb = ops.GradOperation(get_by_list=True)(net, weights)(X, S)
    np.testing.assert_allclose(gw.asnumpy(), dw, rtol=1e-12)
    (gx, gs), (gw, gb) = ops.GradOperation(get_all=True, get_by_list=True)(net, weights)(X, S)
    np.testing.assert_allclose(gb.asnumpy(), db, rtol=1e-12)
    # sens_param: the last argument scales the output's gradient.
    g2 = ops.GradOperation(sens_param=True)(net)(X, S, ms.Tensor(np.float64(2.0)))
    np.testing.assert_allclose(g2.asnumpy(), 2 * dx, rtol=1e-12)


def test_grad_operation_of_a_non_scalar_output_uses_ones_or_the_given_sens():
    x = rand(2, 3)
    g = ops.GradOperation()(lambda x: x * x)(ms.Tensor(x))
    np.testing.assert_allclose(g.asnumpy(), 2 * x)
    sens = rand(2, 3)
    g = ops.GradOperation(sens_param=True)(lambda x: x * x)(ms.Tensor(x), ms.Tensor(sens))
    np.testing.assert_allclose(g.asnumpy(), 2 * x * sens)
    # A tuple output takes a tuple of sensitivities.
    g = ops.GradOperation(sens_param=True)(lambda x: (x * 2.0, ops.sum(x)))(
        ms.Tensor(x), (ms.Tensor(sens), ms.Tensor(np.float64(3.0))))
    np.testing.assert_allclose(g.asnumpy(), 2 * sens + 3)


def test_has_aux_returns_the_other_outputs_undifferentiated():
    x = rand(3)

    def fn(x):
        return ops.sum(x * x), x * 10.0, "label"

    g, aux = ms.grad(fn, has_aux=True)(ms.Tensor(x))
    np.testing.assert_allclose(g.asnumpy(), 2 * x)
    assert isinstance(aux, tuple) and len(aux) == 2 and aux[1] == "label"
    np.testing.assert_allclose(aux[0].asnumpy(), 10 * x)
    (value, aux0, _), g = ms.value_and_grad(fn, has_aux=True)(ms.Tensor(x))
    np.testing.assert_allclose(value.asnumpy(), np.sum(x * x))
    np.testing.assert_allclose(g.asnumpy(), 2 * x)


def test_value_and_grad_returns_the_output_and_the_gradients():
    x, y = rand(3), rand(3)
    value, (gx, gy) = ms.value_and_grad(lambda x, y: ops.sum(x * y), (0, 1))(ms.Tensor(x), ms.Tensor(y))
    np.testing.assert_allclose(value.asnumpy(), np.sum(x * y))
    np.testing.assert_allclose(gx.asnumpy(), y)
    np.testing.assert_allclose(gy.asnumpy(), x)


def test_tuple_of_scalar_outputs_adds_their_gradients():
    x = rand(3)
    g = ms.grad(lambda x: (ops.sum(x), ops.sum(x * x)))(ms.Tensor(x))
    np.testing.assert_allclose(g.asnumpy(), 1 + 2 * x)


def test_the_same_tensor_at_two_positions_is_two_variables():
    x = ms.Tensor(rand(3))
    gx, gy = ms.grad(lambda a, b: ops.sum(a * b * b), (0, 1))(x, x)
    np.testing.assert_allclose(gx.asnumpy(), x.asnumpy() ** 2)
    np.testing.assert_allclose(gy.asnumpy(), 2 * x.asnumpy() ** 2)


def test_unused_inputs_get_zeros_and_integer_inputs_truncated_gradients():
    x, n = ms.Tensor(rand(3)), ms.Tensor(np.array([1, 2, 3]))
    gx, gn, gu = ms.grad(lambda x, n, u: ops.sum(x * n), (0, 1, 2))(x, n, ms.Tensor(rand(2, 2)))
    np.testing.assert_array_equal(gx.asnumpy(), [1, 2, 3])
    # As MindSpore: the integer input's gradient (x) cast to its dtype, truncating.
    assert gn.dtype == ms.int64
    np.testing.assert_array_equal(gn.asnumpy(), np.trunc(x.asnumpy()).astype(np.int64))
    np.testing.assert_array_equal(gu.asnumpy(), np.zeros((2, 2)))
    # An output that does not depend on the input at all.
    g = ms.grad(lambda x: ops.sum(ms.Tensor(np.ones(3))))(x)
    np.testing.assert_array_equal(g.asnumpy(), [0, 0, 0])


def test_recorded_values_are_reused_not_recomputed():
    # A random draw inside the function: the gradient uses the value the forward run drew.
    def fn(x):
        r = ops.rand(3, dtype=ms.float64)
        return ops.sum(x * r), r

    g, (r,) = ms.grad(fn, has_aux=True)(ms.Tensor(rand(3)))
    np.testing.assert_array_equal(g.asnumpy(), r.asnumpy())


def test_python_control_flow_is_differentiated_as_it_ran():
    def fn(x, n):
        y = x
        for _ in range(n):
            y = y * x
        if float(ops.sum(y)) > 0:
            return ops.sum(y)
        return ops.sum(-y)

    x = np.array([0.5, 1.5])
    np.testing.assert_allclose(ms.grad(fn)(ms.Tensor(x), 2).asnumpy(), 3 * x ** 2)
    np.testing.assert_allclose(ms.grad(fn)(ms.Tensor(-x), 2).asnumpy(), -3 * x ** 2)  # other branch


# ---- errors ---------------------------------------------------------------------------------------

def test_non_scalar_output_is_seeded_with_ones_as_mindspore():
    a = rand(2, 3)
    g = ms.grad(lambda x: x * x)(ms.Tensor(a))  # the gradient of (x * x).sum()
    np.testing.assert_allclose(g.asnumpy(), 2 * a, rtol=1e-12)
    v, g = ms.value_and_grad(lambda x: x * 3.0)(ms.Tensor(a))
    np.testing.assert_allclose(v.asnumpy(), 3 * a, rtol=1e-12)
    np.testing.assert_allclose(g.asnumpy(), np.full_like(a, 3.0), rtol=1e-12)


def test_op_without_a_gradient_rule_is_an_error_naming_it():
    # assign writes a variable's state: it has no gradient rule on purpose.
    v = ms.Tensor(rand(3))
    with pytest.raises(NotImplementedError, match="gradient of assign is not implemented"):
        ms.grad(lambda x: ops.sum(ops.assign(v, x * 2.0)))(ms.Tensor(rand(3)))


def test_argument_errors():
    with pytest.raises(ValueError, match="cannot both be None"):
        ms.grad(lambda x: x, None, None)
    with pytest.raises(TypeError, match="must be a Tensor"):
        ms.grad(lambda x: x)(3.0)
    with pytest.raises(IndexError, match="out of range"):
        ms.grad(lambda x: ops.sum(x), 2)(ms.Tensor(rand(3)))
    with pytest.raises(ValueError, match="sensitivity of output 0 has shape \\(3,\\)"):
        ops.GradOperation(sens_param=True)(lambda x: x * 2.0)(ms.Tensor(rand(2, 3)), ms.Tensor(rand(3)))
    with pytest.raises(ValueError, match="at least two outputs"):
        ms.grad(lambda x: ops.sum(x), has_aux=True)(ms.Tensor(rand(3)))
    with pytest.raises(ValueError, match="needs the weights"):
        ops.GradOperation(get_by_list=True)(lambda x: x)


def test_an_exception_in_the_function_stops_recording():
    def fn(x):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        ms.grad(fn)(ms.Tensor(rand(3)))
    assert not _C._tape_recording()


def test_independent_nesting_of_gradients():
    x = ms.Tensor(rand(3))
    c = ms.Tensor(rand(3))
    g = ms.grad(lambda x: ops.sum(x * ms.grad(lambda y: ops.sum(y * y))(c)))(x)
    np.testing.assert_allclose(g.asnumpy(), 2 * c.asnumpy())


# ---- jit, capture, custom bprop ------------------------------------------------------------------

def test_grad_of_a_jitted_function_equals_grad_of_the_plain_function():
    def f(x, y):
        return ops.sum(ops.exp(x) * y) + ops.sum(ops.matmul(x, ops.transpose(y)))

    x, y = ms.Tensor(rand(2, 3)), ms.Tensor(rand(2, 3))
    want = ms.grad(f, (0, 1))(x, y)
    for mode in ("PIJit", "PSJit"):
        jf = ms.jit(f, mode=mode)
        jf(x, y)  # compiled and cached before the gradient is taken
        calls = ms.get_code_extra(jf)["call_count"]
        got = ms.grad(jf, (0, 1))(x, y)
        # Under the tape the jitted function ran eagerly (its graph would hide the ops).
        assert ms.get_code_extra(jf)["call_count"] == calls
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-12)
        np.testing.assert_allclose(jf(x, y).asnumpy(), f(x, y).asnumpy(), rtol=1e-12)
    with ms.capture():
        got = ms.grad(f, (0, 1))(x, y)
    np.testing.assert_allclose(got[0].asnumpy(), want[0].asnumpy(), rtol=1e-12)


def test_graph_mode_cell_is_differentiated():
    net = Linear()
    x, scale = rand(4, 3), rand(4, 2)
    dx = linear_grads(net, x, scale)[0]
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        g = ms.grad(net)(ms.Tensor(x), ms.Tensor(scale))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(g.asnumpy(), dx, rtol=1e-12)


class TimesThree(nn.Cell):
    """Computes x * y but declares the gradient (3 dout, y dout) instead."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def construct(self, x, y):
        return x * y

    def bprop(self, x, y, out, dout):
        self.calls.append((out, dout))
        return dout * 3.0, dout * y


def test_custom_bprop_replaces_the_gradient_of_a_cell():
    cell = TimesThree()
    x, y = rand(3), rand(3)
    gx, gy = ms.grad(lambda x, y: ops.sum(ops.exp(cell(ops.sin(x), y))), (0, 1))(ms.Tensor(x), ms.Tensor(y))
    out = np.sin(x) * y
    dout = np.exp(out)
    np.testing.assert_allclose(gx.asnumpy(), 3 * dout * np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(gy.asnumpy(), dout * y, rtol=1e-12)
    (seen_out, seen_dout), = cell.calls
    np.testing.assert_allclose(seen_out.asnumpy(), out, rtol=1e-12)
    np.testing.assert_allclose(seen_dout.asnumpy(), dout, rtol=1e-12)
    # Outside a gradient the Cell runs its construct.
    np.testing.assert_allclose(cell(ms.Tensor(x), ms.Tensor(y)).asnumpy(), x * y)


def test_custom_bprop_cells_in_sequence_and_through_grad_operation():
    cell = TimesThree()
    x, y = rand(3), rand(3)
    g = ops.GradOperation()(lambda x, y: cell(cell(x, y), y))(ms.Tensor(x), ms.Tensor(y))
    np.testing.assert_allclose(g.asnumpy(), np.full(3, 9.0))


def test_bprop_cell_on_constants_keeps_its_result_off_the_gradient_path():
    # A bprop Cell whose inputs carry no gradient gives a constant: the ops reading it (one_hot
    # has no gradient rule) are not differentiated.
    cell = TimesThree()
    positions = ms.Tensor(np.array([0, 2], np.int32))

    def f(x):
        picked = cell(positions, ms.Tensor(np.array([1, 1], np.int32)))
        return (ops.one_hot(picked, 3, 1.0, 0.0).sum(0) * x).sum()

    x = rand(3)
    np.testing.assert_allclose(ms.grad(f)(ms.Tensor(x)).asnumpy(), [1.0, 0.0, 1.0])
    assert cell.calls == []  # its bprop never ran


class Failing(TimesThree):
    def bprop(self, x, y, out, dout):
        raise ArithmeticError("bprop failed")


class OneGradient(TimesThree):
    def bprop(self, x, y, out, dout):
        return (dout,)


def test_errors_of_a_custom_bprop_reach_the_caller():
    x = ms.Tensor(rand(3))
    with pytest.raises(ArithmeticError, match="bprop failed"):
        ms.grad(lambda x: ops.sum(Failing()(x, x)))(x)
    with pytest.raises(ValueError, match="1 gradients for 2 inputs"):
        ms.grad(lambda x: ops.sum(OneGradient()(x, x)))(x)
    assert not _C._tape_recording()


def test_identity_and_watched_outputs():
    x = ms.Tensor(rand(2, 2))
    np.testing.assert_array_equal(ops.GradOperation()(lambda x: x)(x).asnumpy(), np.ones((2, 2)))
    np.testing.assert_array_equal(ms.grad(lambda x: x[0, 0])(x).asnumpy(), [[1, 0], [0, 0]])


def test_backward_graph_is_logged(tmp_path):
    code = "import numpy as np, pijit as ms\n" \
           "print(ms.grad(lambda x: ms.ops.sum(ms.ops.exp(x)))(ms.Tensor(np.zeros(2))))\n"
    env = dict(os.environ, PIJIT_LOG="grad",
               PYTHONPATH=os.path.dirname(os.path.dirname(ms.__file__)))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "backward graph" in proc.stderr and "= exp(" in proc.stderr
    assert "[1. 1.]" in proc.stdout


# ---- the seed documents' examples ------------------------------------------------------------------

NET_SRC = """
import numpy as np
import pijit as ms
from pijit import nn, ops
ms.set_context(mode=ms.PYNATIVE_MODE)

class Net(nn.Cell):
    def __init__(self):
        super(Net, self).__init__()
        self.matmul = ops.MatMul()
        self.z = ms.Parameter(ms.Tensor(np.array([Z], np.float32)), name='z')

    def construct(self, x, y):
        x = x * self.z
        x = self.matmul(x, y)
        return x

class GradNetWrtX(nn.Cell):
    def __init__(self, net):
        super(GradNetWrtX, self).__init__()
        self.net = net
        self.grad_op = ops.GradOperation()

    def construct(self, x, y):
        gradient_function = self.grad_op(self.net)
        return gradient_function(x, y)

x = ms.Tensor([[0.8, 0.6, 0.2], [1.8, 1.3, 1.1]], dtype=ms.float32)
y = ms.Tensor([[0.11, 3.3, 1.1], [1.1, 0.2, 1.4], [1.1, 2.2, 0.3]], dtype=ms.float32)
output = GradNetWrtX(Net())(x, y)
print(output)
"""

# The seed's for-loop network, then its gradients with respect to x and z.
LOOP_SRC = SEED_EXAMPLES["003_pynative_control_flow_net"][0] + """
    weights = ms.ParameterTuple(net.trainable_params())
    grads = ops.GradOperation(get_all=True, get_by_list=True)(net, weights)(x)
    print(grads[0][0], grads[1][0])
"""

SEEDS = {
    "003_grad_net_wrt_x": (NET_SRC.replace("[Z]", "[1.0]"), [[4.5099998, 2.7, 3.6000001]] * 2),
    "004_grad_net_wrt_x_z2": (NET_SRC.replace("[Z]", "[2.0]"), [[9.02, 5.4, 7.2000003]] * 2),
    # The document prints [4. 5. 6.]; the gradients are 1 per element of x and 3 * 3 for z.
    "003_for_loop": (LOOP_SRC, [4.0, 5.0, 6.0, 1.0, 1.0, 1.0, 9.0]),
}


@pytest.mark.parametrize("runner", [[], ["-m", "pijit"]], ids=["python", "python_-m_pijit"])
@pytest.mark.parametrize("name", sorted(SEEDS))
def test_seed_examples_print_the_documented_values(tmp_path, name, runner):
    code, expected = SEEDS[name]
    script = tmp_path / "example.py"
    script.write_text(textwrap.dedent(code))
    env = dict(os.environ)
    env.pop("PIJIT_LOG", None)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(ms.__file__)),
                                         env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, *runner, str(script)], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    printed = [float(v) for v in re.findall(r"-?\d+\.\d*(?:e[-+]?\d+)?", proc.stdout)]
    np.testing.assert_allclose(printed, np.ravel(expected), rtol=0, atol=1e-6)
