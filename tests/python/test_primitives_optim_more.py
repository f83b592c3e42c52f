"""The optimizer primitives of pijit/_primitives_optim_more.py against their update rules
written out here in NumPy (from MindSpore's documented formulas), over three steps, with
repeated and out-of-range indices for the sparse updates; one jitted step equal to the eager
one as one graph; and the argument errors."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops
from mint_testutil import T, same

R = np.random.default_rng(211)
SHAPE = (5, 3)
# Row 1 twice (its gradient rows add up), row 4 untouched, 7 and -1 outside var (skipped).
INDICES = np.array([1, 3, 1, 0, 7, -1], np.int32)


def _dense(grad_rows, indices=INDICES, rows=SHAPE[0]):
    """The gradient rows summed onto var's rows, and the mask of touched rows."""
    dense = np.zeros((rows,) + grad_rows.shape[1:])
    touched = np.zeros(rows, bool)
    for row, i in zip(grad_rows, indices):
        if 0 <= i < rows:
            dense[i] += row
            touched[i] = True
    return dense, touched[:, None]


def _ftrl(var, accum, linear, g, lr, l1, l2, lr_power, shrinkage=0.0):
    new_accum = accum + g * g
    linear = linear + g + 2 * shrinkage * var - (new_accum ** -lr_power - accum ** -lr_power) \
        / lr * var
    quadratic = new_accum ** -lr_power / lr + 2 * l2
    var = np.where(np.abs(linear) > l1, (np.sign(linear) * l1 - linear) / quadratic, 0.0)
    return var, new_accum, linear


def _adagrad_v2(var, accum, g):
    accum = accum + g * g
    return var - 0.1 * g / (np.sqrt(accum) + 1e-3), accum


def _proximal_adagrad(var, accum, g):
    accum = accum + g * g
    v = var - 0.1 * g / np.sqrt(accum)
    return np.sign(v) * np.maximum(np.abs(v) - 0.1 * 0.02, 0) / (1 + 0.1 * 0.3), accum


# name: (primitive, number of state slots, the NumPy rule on dense rows, how the call orders
# (var, slots, grad, indices))
SPARSE = {
    "SparseApplyAdagradV2": (ops.SparseApplyAdagradV2(0.1, 1e-3), 1, _adagrad_v2,
                             lambda p, s, g, i: (p, s[0], g, i)),
    "SparseApplyFtrl": (ops.SparseApplyFtrl(lr=0.1, l1=0.05, l2=0.01, lr_power=-0.5), 2,
                        lambda v, a, lin, g: _ftrl(v, a, lin, g, 0.1, 0.05, 0.01, -0.5),
                        lambda p, s, g, i: (p, s[0], s[1], g, i)),
    "SparseApplyFtrlV2": (ops.SparseApplyFtrlV2(0.1, 0.05, 0.01, 0.2, -0.5), 2,
                          lambda v, a, lin, g: _ftrl(v, a, lin, g, 0.1, 0.05, 0.01, -0.5, 0.2),
                          lambda p, s, g, i: (p, s[0], s[1], g, i)),
    "SparseApplyProximalAdagrad": (ops.SparseApplyProximalAdagrad(), 1, _proximal_adagrad,
                                   lambda p, s, g, i: (p, s[0], 0.1, 0.02, 0.3, g, i)),
}


@pytest.mark.parametrize("name", sorted(SPARSE))
def test_sparse_update_touches_only_the_indexed_rows(name):
    prim, slots, rule, order = SPARSE[name]
    var = R.normal(size=SHAPE)
    state = [R.uniform(0.1, 1.0, size=SHAPE) for _ in range(slots)]
    p = ms.Parameter(var.copy(), name="var")
    params = [ms.Parameter(s.copy(), name=f"s{i}") for i, s in enumerate(state)]
    for _ in range(3):
        g = R.normal(size=(len(INDICES), SHAPE[1]))
        result = prim(*order(p, params, T(g), T(INDICES)))
        dense, touched = _dense(g)
        new = rule(var, *state, dense)
        var, *state = [np.where(touched, n, o) for n, o in zip(new, [var, *state])]
        assert result[0] is p and len(result) == 1 + slots
        same(p, var, rtol=1e-10, atol=1e-12)
        for param, want in zip(params, state):
            same(param, want, rtol=1e-10, atol=1e-12)
    assert np.all(np.isfinite(p.asnumpy()))


def test_sparse_adagrad_v2_without_slot_update_keeps_accum():
    p = ms.Parameter(np.ones((3, 2)), name="var")
    a = ms.Parameter(np.full((3, 2), 4.0), name="accum")
    ops.SparseApplyAdagradV2(0.5, 0.0, update_slots=False)(p, a, T(np.ones((1, 2))),
                                                           T(np.array([2], np.int32)))
    same(a, np.full((3, 2), 4.0))
    same(p, np.array([[1.0, 1.0], [1.0, 1.0], [0.75, 0.75]]))


def _sgd_rule(p, g, accum, stat, lr=0.1, momentum=0.9, dampening=0.0, weight_decay=0.0,
              nesterov=False):
    g = g + weight_decay * p
    if momentum > 0:
        accum = np.where(stat > 0, g, accum * momentum + (1 - dampening) * g)
        stat = np.zeros_like(stat)
        g = g + accum * momentum if nesterov else accum
    return p - lr * g, accum, stat


@pytest.mark.parametrize("attrs", [dict(), dict(dampening=0.3, weight_decay=0.05),
                                   dict(nesterov=True, weight_decay=0.1)])
def test_sgd_primitive_over_three_steps(attrs):
    prim = ops.SGD(**attrs)
    var = R.normal(size=SHAPE)
    accum, stat = np.zeros(SHAPE), np.ones(SHAPE)
    p = ms.Parameter(var.copy(), name="p")
    pa, ps = ms.Parameter(accum.copy(), name="accum"), ms.Parameter(stat.copy(), name="stat")
    for _ in range(3):
        g = R.normal(size=SHAPE)
        assert prim(p, T(g), T(np.array(0.1)), pa, T(np.array(0.9)), ps) is p
        var, accum, stat = _sgd_rule(var, g, accum, stat, **attrs)
        same(p, var, rtol=1e-10)
        same(pa, accum, rtol=1e-10)
        same(ps, stat)


def test_sgd_primitive_without_momentum_is_plain_descent():
    p = ms.Parameter(np.ones(3), name="p")
    pa, ps = ms.Parameter(np.zeros(3), name="a"), ms.Parameter(np.ones(3), name="s")
    ops.SGD()(p, T(np.array([1.0, 2.0, 3.0])), 0.5, pa, 0.0, ps)
    same(p, np.array([0.5, 0.0, -0.5]))
    same(ps, np.ones(3))


def _lars(w, g, wd, lr, eps=1e-5, coefficient=0.001, clip=False):
    w_norm, g_norm = np.linalg.norm(w), np.linalg.norm(g)
    ratio = coefficient * w_norm / (g_norm + wd * w_norm + eps)
    if clip:
        ratio = min(ratio / lr, 1.0)
    if not (w_norm > 0 and g_norm > 0):
        ratio = 1.0
    return (g + wd * w) * ratio


@pytest.mark.parametrize("clip", [False, True])
def test_lars_update_scales_the_gradient_by_the_trust_ratio(clip):
    w, g = R.normal(size=SHAPE), R.normal(size=SHAPE)
    lars = ops.LARSUpdate(1e-5, 0.02, clip)
    got = lars(T(w), T(g), T(np.sum(w * w)), T(np.sum(g * g)), 0.01, 0.1)
    same(got, _lars(w, g, 0.01, 0.1, coefficient=0.02, clip=clip), rtol=1e-10)
    zero = lars(T(np.zeros(SHAPE)), T(g), T(np.array(0.0)), T(np.sum(g * g)), 0.01, 0.1)
    same(zero, g, rtol=1e-12)


def _adagrad_da(var, acc, sq, g, lr, l1, l2, step):
    acc = acc + g
    sq = sq + g * g
    num = np.sign(acc) * np.maximum(np.abs(acc) - l1 * step, 0) if l1 > 0 else acc
    return -lr * num / (l2 * step * lr + np.sqrt(sq)), acc, sq


@pytest.mark.parametrize("l1", [0.0, 0.05])
def test_apply_adagrad_da_over_three_steps(l1):
    var, acc, sq = R.normal(size=SHAPE), np.zeros(SHAPE), np.full(SHAPE, 0.1)
    params = [ms.Parameter(a.copy(), name=n) for a, n in ((var, "v"), (acc, "a"), (sq, "s"))]
    prim = ops.ApplyAdagradDA()
    for step in range(1, 4):
        g = R.normal(size=SHAPE)
        out = prim(*params, T(g), 0.1, l1, 0.02, T(np.array(step, np.int32)))
        assert tuple(out) == tuple(params)
        var, acc, sq = _adagrad_da(var, acc, sq, g, 0.1, l1, 0.02, step)
        for param, want in zip(params, (var, acc, sq)):
            same(param, want, rtol=1e-10, atol=1e-12)


def test_sparse_step_captures_as_one_graph():
    results = []
    for jit in (False, True):
        p = ms.Parameter(np.linspace(-1, 1, 15).reshape(SHAPE), name="var")
        a = ms.Parameter(np.full(SHAPE, 0.1), name="accum")
        lin = ms.Parameter(np.zeros(SHAPE), name="linear")
        ftrl = ops.SparseApplyFtrlV2(0.1, 0.01, 0.01, 0.1, -0.5)

        def step(g, i):
            ftrl(p, a, lin, g, i)
            return p * 1.0

        run = ms.jit(step, capture_mode="bytecode") if jit else step
        if jit:
            ms.reset(run)
        outs = [run(T(np.full((2, 3), k + 1.0)), T(np.array([k % 5, 4], np.int32))).asnumpy()
                for k in range(3)]
        results.append((outs, a.asnumpy().copy()))
        if jit:
            assert ms.get_code_extra(run)["total_break_count"] == 0
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-12)


def _one_step_calls():
    """name: (the state Parameters, a step calling the primitive on them and a gradient)."""
    def params(*names):
        return [ms.Parameter(np.linspace(0.2, 1.0, 15).reshape(SHAPE) * (k + 1), name=n)
                for k, n in enumerate(names)]

    rows = T(np.array([0, 2, 2], np.int32))
    sgd, lars, da = ops.SGD(weight_decay=0.1), ops.LARSUpdate(use_clip=True), ops.ApplyAdagradDA()
    adagrad, ftrl = ops.SparseApplyAdagradV2(0.1, 1e-6), ops.SparseApplyFtrl(0.1, 0.01, 0.0, -0.5)
    prox = ops.SparseApplyProximalAdagrad()
    return {
        "SGD": (params("p", "accum", "stat"),
                lambda s, g: sgd(s[0], g, 0.1, s[1], 0.9, s[2]), SHAPE),
        "LARSUpdate": (params("w"),
                       lambda s, g: ops.assign(s[0], s[0] - lars(s[0], g, ops.sum(s[0] * s[0]),
                                                                  ops.sum(g * g), 0.01, 0.1)),
                       SHAPE),
        "ApplyAdagradDA": (params("v", "a", "s"),
                           lambda s, g: da(*s, g, 0.1, 0.01, 0.02, T(np.array(2, np.int32))),
                           SHAPE),
        "SparseApplyAdagradV2": (params("v", "a"), lambda s, g: adagrad(*s, g, rows), (3, 3)),
        "SparseApplyFtrl": (params("v", "a", "l"), lambda s, g: ftrl(*s, g, rows), (3, 3)),
        "SparseApplyProximalAdagrad": (params("v", "a"),
                                       lambda s, g: prox(*s, 0.1, 0.01, 0.1, g, rows), (3, 3)),
    }


@pytest.mark.parametrize("name", ["SGD", "LARSUpdate", "ApplyAdagradDA", "SparseApplyAdagradV2",
                                  "SparseApplyFtrl", "SparseApplyProximalAdagrad"])
def test_jitted_step_equals_eager(name):
    results = []
    for jit in (False, True):
        state, call, grad_shape = _one_step_calls()[name]

        def step(g):
            call(state, g)
            return state[0] * 1.0

        run = ms.jit(step, capture_mode="bytecode") if jit else step
        if jit:
            ms.reset(run)
        outs = [run(T(np.full(grad_shape, 0.5 - k))).asnumpy() for k in range(3)]
        results.append((outs, [s.asnumpy().copy() for s in state]))
        if jit:
            extra = ms.get_code_extra(run)
            assert extra["total_break_count"] == 0, extra.get("all_reasons")
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12)
    for jitted, eager in zip(results[1][1], results[0][1]):
        np.testing.assert_allclose(jitted, eager, rtol=1e-12)


def test_attribute_and_input_errors():
    with pytest.raises(TypeError, match="SparseApplyFtrl: missing the attributes"):
        ops.SparseApplyFtrl(0.1, 0.0)
    with pytest.raises(ValueError, match="SparseApplyFtrlV2: lr_power must be <= 0"):
        ops.SparseApplyFtrlV2(0.1, 0.0, 0.0, 0.0, 0.5)
    with pytest.raises(TypeError, match="SparseApplyAdagradV2: update_slots must be a bool"):
        ops.SparseApplyAdagradV2(0.1, 1e-6, update_slots=1)
    with pytest.raises(TypeError, match="LARSUpdate: epsilon must be a float"):
        ops.LARSUpdate("1e-5")
    with pytest.raises(ValueError, match="SGD: nesterov needs dampening = 0"):
        ops.SGD(dampening=0.1, nesterov=True)
    p = ms.Parameter(np.ones((3, 2)), name="var")
    a = ms.Parameter(np.ones((3, 2)), name="accum")
    prim = ops.SparseApplyAdagradV2(0.1, 1e-6)
    with pytest.raises(TypeError, match="SparseApplyAdagradV2: indices must be an integer"):
        prim(p, a, T(np.ones((1, 2))), T(np.array([0.0])))
    with pytest.raises(ValueError, match=r"SparseApplyAdagradV2: grad must have shape \(1, 2\)"):
        prim(p, a, T(np.ones((1, 3))), T(np.array([0], np.int32)))
    with pytest.raises(TypeError, match="SparseApplyAdagradV2: accum must be a Parameter"):
        prim(p, T(np.ones((3, 2))), T(np.ones((1, 2))), T(np.array([0], np.int32)))
    with pytest.raises(ValueError, match="SparseApplyProximalAdagrad: accum must have var's"):
        ops.SparseApplyProximalAdagrad()(p, ms.Parameter(np.ones(2), name="b"), 0.1, 0.0, 0.0,
                                         T(np.ones((1, 2))), T(np.array([0], np.int32)))
    with pytest.raises(ValueError, match="ApplyAdagradDA: grad must have var's shape"):
        ops.ApplyAdagradDA()(p, a, ms.Parameter(np.ones((3, 2)), name="s"), T(np.ones(2)),
                             0.1, 0.0, 0.0, 1)
    with pytest.raises(TypeError, match="LARSUpdate: norm_weight must be a Tensor"):
        ops.LARSUpdate()(T(np.ones(2)), T(np.ones(2)), 2.0, T(np.array(2.0)), 0.0, 0.1)
