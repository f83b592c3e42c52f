"""The optimizers of pijit/nn/optim_more.py against their update rules written out here in
NumPy, over three steps (weight decay and centered variants included), their state
Parameters' names, and a jitted training step equal to the eager one as one graph."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn
from mint_testutil import T, same
from optim_testutil import jitted_step_equals_eager

R = np.random.default_rng(131)
# The optimizers hold the learning rate as a Float32 Parameter, as MindSpore does.
LR = float(np.float32(0.01))


def _adam_weight_decay(p, g, s, lr=LR, b1=0.9, b2=0.999, eps=1e-6, wd=0.1):
    s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
    return p - lr * (s["m"] / (np.sqrt(s["v"]) + eps) + wd * p)


def _adagrad(p, g, s, lr=LR, wd=0.1):
    g = g + wd * p
    s["a"] = s.get("a", 0.1) + g * g
    return p - lr * g / np.sqrt(s["a"])


def _rmsprop(p, g, s, lr=LR, decay=0.9, momentum=0.5, eps=1e-10, centered=False):
    s["ms"] = decay * s.get("ms", 1.0) + (1 - decay) * g * g
    denominator = s["ms"]
    if centered:
        s["mg"] = decay * s.get("mg", 0.0) + (1 - decay) * g
        denominator = s["ms"] - s["mg"] ** 2
    s["mom"] = momentum * s.get("mom", 0.0) + lr * g / np.sqrt(denominator + eps)
    return p - s["mom"]


def _adamax(p, g, s, lr=LR, b1=0.9, b2=0.999, eps=1e-8):
    s["t"] = s.get("t", 0) + 1
    s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    s["v"] = np.maximum(b2 * s.get("v", 0), np.abs(g))
    return p - lr / (1 - b1 ** s["t"]) * s["m"] / (s["v"] + eps)


def _adadelta(p, g, s, lr=1.0, rho=0.9, eps=1e-6):
    s["a"] = rho * s.get("a", 0) + (1 - rho) * g * g
    update = np.sqrt(s.get("u", 0) + eps) / np.sqrt(s["a"] + eps) * g
    s["u"] = rho * s.get("u", 0) + (1 - rho) * update * update
    return p - lr * update


def _proximal_adagrad(p, g, s, lr=LR, l1=0.01, l2=0.1):
    s["a"] = s.get("a", 0.1) + g * g
    v = p - lr * g / np.sqrt(s["a"])
    return np.sign(v) * np.maximum(np.abs(v) - lr * l1, 0) / (1 + lr * l2)


def _ftrl(p, g, s, lr=LR, power=-0.5, l1=0.01, l2=0.02):
    accum = s.get("a", 0.1)
    new_accum = accum + g * g
    s["lin"] = s.get("lin", 0) + g - (new_accum ** -power - accum ** -power) / lr * p
    s["a"] = new_accum
    quadratic = new_accum ** -power / lr + 2 * l2
    return np.where(np.abs(s["lin"]) > l1, (np.sign(s["lin"]) * l1 - s["lin"]) / quadratic, 0.0)


def _adam(p, g, s, lr=LR, b1=0.9, b2=0.999, eps=1e-8):
    s["t"] = s.get("t", 0) + 1
    s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
    return p - lr * np.sqrt(1 - b2 ** s["t"]) / (1 - b1 ** s["t"]) * s["m"] / (
        np.sqrt(s["v"]) + eps)


CASES = {
    "FTRL": (lambda ps: nn.FTRL(ps, learning_rate=0.01, l1=0.01, l2=0.02), _ftrl,
             ["moments", "linear"]),
    "LazyAdam": (lambda ps: nn.LazyAdam(ps, 0.01), _adam, ["moment1", "moment2"]),
    "AdamWeightDecay": (lambda ps: nn.AdamWeightDecay(ps, 0.01, weight_decay=0.1),
                        _adam_weight_decay, ["adam_m", "adam_v"]),
    "Adagrad": (lambda ps: nn.Adagrad(ps, learning_rate=0.01, weight_decay=0.1), _adagrad,
                ["accum"]),
    "RMSProp": (lambda ps: nn.RMSProp(ps, 0.01, momentum=0.5), _rmsprop,
                ["mean_square", "moment"]),
    "RMSProp_centered": (lambda ps: nn.RMSProp(ps, 0.01, momentum=0.5, centered=True),
                         lambda p, g, s: _rmsprop(p, g, s, centered=True),
                         ["mean_grad", "mean_square", "moment"]),
    "AdaMax": (lambda ps: nn.AdaMax(ps, 0.01), _adamax, ["moment1", "moment2"]),
    "Adadelta": (lambda ps: nn.Adadelta(ps), _adadelta, ["accum", "accum_update"]),
    "ProximalAdagrad": (lambda ps: nn.ProximalAdagrad(ps, learning_rate=0.01, l1=0.01, l2=0.1),
                        _proximal_adagrad, ["accum"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_updates_match_the_rule(name):
    make, rule, states = CASES[name]
    start = R.normal(size=(2, 3))
    p = ms.Parameter(start.copy(), name="w")
    opt = make([p])
    names = {q.name for q in opt.get_parameters()}
    assert {f"{s}.w" for s in states} <= names, names
    want, memory = start.copy(), {}
    for _ in range(3):
        g = R.normal(size=(2, 3))
        assert opt((T(g),))
        want = rule(want, g, memory)
        # The scalar state (learning rate, beta powers) is Float32, as in MindSpore.
        same(p, want, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", sorted(CASES))
def test_jitted_training_step_equals_eager(name):
    x, y = T(R.normal(size=(8, 3))), T(R.normal(size=(8, 1)))
    jitted_step_equals_eager(CASES[name][0], x, y, steps=3)


def test_argument_checks():
    p = ms.Parameter(np.ones(2), name="p")
    with pytest.raises(ValueError, match="beta1"):
        nn.AdamWeightDecay([p], beta1=1.0)
    with pytest.raises(TypeError, match="centered"):
        nn.RMSProp([p], centered=1)
    with pytest.raises(ValueError, match="accum"):
        nn.Adagrad([p], accum=-1.0)
