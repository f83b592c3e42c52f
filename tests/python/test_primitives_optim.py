"""The optimizer primitives of pijit/_primitives_optim.py: each update rule written out here
in NumPy from MindSpore's documented formulas, checked over three steps for the values
returned and written into the Parameters, and one step captured as one graph."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops
from mint_testutil import T, same

R = np.random.default_rng(127)
SHAPE = (2, 3)


def _ftrl(var, accum, linear, g, lr, l1, l2, lr_power):
    new_accum = accum + g * g
    linear = linear + g - (new_accum ** -lr_power - accum ** -lr_power) / lr * var
    quadratic = new_accum ** -lr_power / lr + 2 * l2
    var = np.where(np.abs(linear) > l1, (np.sign(linear) * l1 - linear) / quadratic, 0.0)
    return var, new_accum, linear


def _prox(v, step_l1, scale):
    return np.sign(v) * np.maximum(np.abs(v) - step_l1, 0) * scale


# (name, primitive, number of state slots after var, the call's scalar arguments, the NumPy
# rule: (var, *state, grad) -> (var, *state), how the call orders its arguments)
RULES = {
    "ApplyGradientDescent": (ops.ApplyGradientDescent(), 0,
                             lambda v, g: (v - 0.1 * g,),
                             lambda p, s, g: (p, 0.1, g)),
    "ApplyMomentum": (ops.ApplyMomentum(), 1,
                      lambda v, a, g: (v - 0.1 * (a * 0.9 + g), a * 0.9 + g),
                      lambda p, s, g: (p, s[0], 0.1, g, 0.9)),
    "ApplyMomentum_nesterov": (ops.ApplyMomentum(use_nesterov=True), 1,
                               lambda v, a, g: (v - 0.1 * g - 0.1 * 0.9 * (a * 0.9 + g),
                                                a * 0.9 + g),
                               lambda p, s, g: (p, s[0], 0.1, g, 0.9)),
    "ApplyAdagrad": (ops.ApplyAdagrad(), 1,
                     lambda v, a, g: (v - 0.1 * g / np.sqrt(a + g * g), a + g * g),
                     lambda p, s, g: (p, s[0], 0.1, g)),
    "ApplyAdagradV2": (ops.ApplyAdagradV2(epsilon=1e-3), 1,
                       lambda v, a, g: (v - 0.1 * g / (np.sqrt(a + g * g) + 1e-3), a + g * g),
                       lambda p, s, g: (p, s[0], 0.1, g)),
    "ApplyRMSProp": (ops.ApplyRMSProp(), 2,
                     lambda v, ms_, mom, g: (
                         v - (0.5 * mom + 0.1 * g / np.sqrt(0.9 * ms_ + 0.1 * g * g + 1e-6)),
                         0.9 * ms_ + 0.1 * g * g,
                         0.5 * mom + 0.1 * g / np.sqrt(0.9 * ms_ + 0.1 * g * g + 1e-6)),
                     lambda p, s, g: (p, s[0], s[1], 0.1, g, 0.9, 0.5, 1e-6)),
    "ApplyCenteredRMSProp": (
        ops.ApplyCenteredRMSProp(), 3,
        lambda v, mg, ms_, mom, g: (
            lambda mg2, ms2: (lambda mom2: (v - mom2, mg2, ms2, mom2))(
                0.5 * mom + 0.1 * g / np.sqrt(ms2 - mg2 * mg2 + 1e-6)))(
            0.9 * mg + 0.1 * g, 0.9 * ms_ + 0.1 * g * g),
        lambda p, s, g: (p, s[0], s[1], s[2], g, 0.1, 0.9, 0.5, 1e-6)),
    "ApplyAdaMax": (ops.ApplyAdaMax(), 2,
                    lambda v, m, u, g: (
                        v - 0.1 / (1 - 0.9) * (0.9 * m + 0.1 * g)
                        / (np.maximum(0.99 * u, np.abs(g)) + 1e-8),
                        0.9 * m + 0.1 * g, np.maximum(0.99 * u, np.abs(g))),
                    lambda p, s, g: (p, s[0], s[1], 0.9, 0.1, 0.9, 0.99, 1e-8, g)),
    "ApplyAdadelta": (ops.ApplyAdadelta(), 2,
                      lambda v, a, au, g: (
                          lambda a2: (lambda upd: (v - 0.5 * upd, a2,
                                                   0.9 * au + 0.1 * upd * upd))(
                              np.sqrt(au + 1e-6) / np.sqrt(a2 + 1e-6) * g))(
                          0.9 * a + 0.1 * g * g),
                      lambda p, s, g: (p, s[0], s[1], 0.5, 0.9, 1e-6, g)),
    "ApplyAddSign": (ops.ApplyAddSign(), 1,
                     lambda v, m, g: (
                         v - 0.1 * (1.0 + 0.5 * np.sign(g) * np.sign(0.9 * m + 0.1 * g)) * g,
                         0.9 * m + 0.1 * g),
                     lambda p, s, g: (p, s[0], 0.1, 1.0, 0.5, 0.9, g)),
    "ApplyPowerSign": (ops.ApplyPowerSign(), 1,
                       lambda v, m, g: (
                           v - 0.1 * np.exp(np.e * 0.5 * np.sign(g) * np.sign(0.9 * m + 0.1 * g))
                           * g, 0.9 * m + 0.1 * g),
                       lambda p, s, g: (p, s[0], 0.1, np.e, 0.5, 0.9, g)),
    "ApplyProximalGradientDescent": (
        ops.ApplyProximalGradientDescent(), 0,
        lambda v, g: (_prox(v - 0.1 * g, 0.1 * 0.2, 1 / (1 + 0.1 * 0.3)),),
        lambda p, s, g: (p, 0.1, 0.2, 0.3, g)),
    "ApplyProximalAdagrad": (
        ops.ApplyProximalAdagrad(), 1,
        lambda v, a, g: (_prox(v - 0.1 * g / np.sqrt(a + g * g), 0.1 * 0.2, 1 / (1 + 0.1 * 0.3)),
                         a + g * g),
        lambda p, s, g: (p, s[0], 0.1, 0.2, 0.3, g)),
    "ApplyFtrl": (ops.ApplyFtrl(), 2,
                  lambda v, a, lin, g: _ftrl(v, a, lin, g, 0.1, 0.05, 0.01, -0.5),
                  lambda p, s, g: (p, s[0], s[1], g, 0.1, 0.05, 0.01, -0.5)),
    "AdamWeightDecay": (ops.AdamWeightDecay(), 2,
                        lambda v, m, u, g: (
                            v - 0.1 * ((0.9 * m + 0.1 * g) / (np.sqrt(0.99 * u + 0.01 * g * g)
                                                              + 1e-8) + 0.01 * v),
                            0.9 * m + 0.1 * g, 0.99 * u + 0.01 * g * g),
                        lambda p, s, g: (p, s[0], s[1], 0.1, 0.9, 0.99, 1e-8, 0.01, g)),
}


@pytest.mark.parametrize("name", sorted(RULES))
def test_update_rule_over_three_steps(name):
    prim, slots, rule, order = RULES[name]
    var = R.normal(size=SHAPE)
    state = [R.uniform(0.1, 1.0, size=SHAPE) for _ in range(slots)]
    if name == "ApplyCenteredRMSProp":  # a mean gradient small enough for a real variance
        state[0] = state[0] * 0.1
    p = ms.Parameter(var.copy(), name="var")
    params = [ms.Parameter(s.copy(), name=f"s{i}") for i, s in enumerate(state)]
    for _ in range(3):
        g = R.normal(size=SHAPE)
        result = prim(*order(p, params, T(g)))
        var, *state = rule(var, *state, g)
        assert np.all(np.isfinite(var))
        returned = result if isinstance(result, tuple) else (result,)
        assert returned[0] is p
        same(p, var, rtol=1e-10, atol=1e-12)
        for param, want in zip(params, state):
            same(param, want, rtol=1e-10, atol=1e-12)


def test_adam_primitive_with_bias_correction_and_one_graph():
    var, m, v = R.normal(size=SHAPE), np.zeros(SHAPE), np.zeros(SHAPE)
    p, pm, pv = (ms.Parameter(a.copy(), name=n) for a, n in ((var, "w"), (m, "m"), (v, "v")))
    adam = ops.Adam()

    @ms.jit
    def step(g, b1p, b2p):
        adam(p, pm, pv, b1p, b2p, 0.01, 0.9, 0.999, 1e-8, g)
        return p * 1.0

    for t in range(1, 4):
        g = R.normal(size=SHAPE)
        b1p, b2p = 0.9 ** t, 0.999 ** t
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        var = var - 0.01 * np.sqrt(1 - b2p) / (1 - b1p) * m / (np.sqrt(v) + 1e-8)
        same(step(T(g), T(np.array(b1p)), T(np.array(b2p))), var, rtol=1e-10)
    same(pm, m, rtol=1e-10)
    assert ms.get_code_extra(step)["total_break_count"] == 0


def test_attributes_are_checked():
    with pytest.raises(TypeError, match="ApplyMomentum takes"):
        ops.ApplyMomentum(rate=1.0)
    assert ops.ApplyAdagradV2(1e-4).epsilon == 1e-4
