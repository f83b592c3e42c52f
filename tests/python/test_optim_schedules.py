"""Dynamic learning rates (per-step lists, LearningRateSchedule Cells) and parameter groups
of the optimizers, against NumPy references, eagerly and inside a compiled training step."""
import math

import numpy as np
import pytest

import pijit as ms
import pijit.nn as nn
from pijit import ops

SHAPES = [(3,), (2, 2)]


def params(seed=0):
    rng = np.random.default_rng(seed)
    values = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    return values, [ms.Parameter(ms.Tensor(v), name=f"p{i}") for i, v in enumerate(values)]


def grads(step):
    rng = np.random.default_rng(100 + step)
    return [rng.standard_normal(s).astype(np.float32) for s in SHAPES]


def schedule_reference(name, step):
    p = step / 4
    return {
        "exp": 0.1 * 0.5 ** p,
        "exp_stair": 0.1 * 0.5 ** math.floor(p),
        "natural": 0.1 * math.exp(-0.5 * p),
        "inverse": 0.1 / (1 + 0.5 * p),
        "cosine": 0.01 + (0.1 - 0.01) * (1 + math.cos(math.pi * min(step, 4) / 4)) / 2,
        "poly": (0.1 - 0.01) * (1 - min(step, 4) / 4) ** 2.0 + 0.01,
        "warmup": 0.1 * min(step, 4) / 4,
    }[name]


def make_schedule(name):
    return {
        "exp": lambda: nn.ExponentialDecayLR(0.1, 0.5, 4),
        "exp_stair": lambda: nn.ExponentialDecayLR(0.1, 0.5, 4, is_stair=True),
        "natural": lambda: nn.NaturalExpDecayLR(0.1, 0.5, 4),
        "inverse": lambda: nn.InverseDecayLR(0.1, 0.5, 4),
        "cosine": lambda: nn.CosineDecayLR(0.01, 0.1, 4),
        "poly": lambda: nn.PolynomialDecayLR(0.1, 0.01, 4, 2.0),
        "warmup": lambda: nn.WarmUpLR(0.1, 4),
    }[name]()


NAMES = ["exp", "exp_stair", "natural", "inverse", "cosine", "poly", "warmup"]


@pytest.mark.parametrize("name", NAMES)
def test_schedules_match_their_formulas(name):
    sched = make_schedule(name)
    for step in range(8):
        got = sched(ms.Tensor(np.array(step, np.float32)))
        assert got.dtype == ms.float32
        np.testing.assert_allclose(float(got.asnumpy()), schedule_reference(name, step), rtol=1e-5,
                                   atol=1e-8)


def sgd_run(opt_params, lr_of_step, wd_of=(0.0, 0.0), order=(0, 1), steps=5, make=None):
    values, ps = params()
    opt = make(ps)
    ref = [v.astype(np.float64) for v in values]
    for step in range(steps):
        gs = grads(step)
        opt(tuple(ms.Tensor(gs[i]) for i in order))
        for i in range(len(ref)):
            g = gs[i] + wd_of[i] * ref[i]
            ref[i] = ref[i] - lr_of_step(i, step) * g
        for p, r in zip(ps, ref):
            np.testing.assert_allclose(p.asnumpy(), r, rtol=1e-5, atol=1e-6)
    assert int(opt.global_step.asnumpy()) == steps
    return opt


def test_per_step_learning_rate_list_holds_its_last_value():
    table = [0.1, 0.05, 0.02]
    sgd_run(None, lambda i, s: table[min(s, 2)], make=lambda ps: nn.SGD(ps, table))


def test_learning_rate_tensor_of_rates():
    table = np.array([0.3, 0.2, 0.1], np.float32)
    sgd_run(None, lambda i, s: table[min(s, 2)], make=lambda ps: nn.SGD(ps, ms.Tensor(table)))


@pytest.mark.parametrize("name", ["exp", "cosine", "warmup"])
def test_sgd_with_a_schedule(name):
    sgd_run(None, lambda i, s: schedule_reference(name, s),
            make=lambda ps: nn.SGD(ps, make_schedule(name)))


def test_parameter_groups_with_their_own_rates_and_weight_decay():
    def make(ps):
        return nn.SGD([{"params": [ps[0]], "lr": 0.5, "weight_decay": 0.1},
                       {"params": [ps[1]]}], learning_rate=0.05, weight_decay=0.01)
    opt = sgd_run(None, lambda i, s: (0.5, 0.05)[i], wd_of=(0.1, 0.01), make=make)
    assert [p.name for p in opt.parameters] == ["p0", "p1"]


def test_parameter_groups_with_a_schedule_and_order_params():
    def make(ps):
        return nn.SGD([{"params": [ps[0]], "lr": nn.WarmUpLR(0.1, 4)},
                       {"params": [ps[1]], "lr": [0.2, 0.1]},
                       {"order_params": [ps[1], ps[0]]}], learning_rate=0.05)
    opt = sgd_run(None, lambda i, s: (schedule_reference("warmup", s), (0.2, 0.1)[min(s, 1)])[i],
                  order=(1, 0), make=make)
    assert [p.name for p in opt.parameters] == ["p1", "p0"]


def test_bad_learning_rates_and_groups_raise():
    _, ps = params()
    with pytest.raises(ValueError, match="non-negative"):
        nn.SGD(ps, [0.1, -1.0])
    with pytest.raises(ValueError, match="unknown keys"):
        nn.SGD([{"params": ps, "momentum": 0.9}])
    with pytest.raises(ValueError, match="order_params"):
        nn.SGD([{"params": ps}, {"order_params": [ps[0]]}])
    with pytest.raises(ValueError, match="decay_steps"):
        nn.ExponentialDecayLR(0.1, 0.9, 0)
    with pytest.raises(ValueError, match="min_lr"):
        nn.CosineDecayLR(0.2, 0.1, 10)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(4, 8)
        self.fc2 = nn.Dense(8, 3)

    def construct(self, x):
        return self.fc2(ops.relu(self.fc1(x)))


def make_train(opt_kind):
    ms.set_seed(7)
    net = Net()
    ps = net.trainable_params()
    if opt_kind == "schedule":
        opt = nn.Momentum(ps, nn.CosineDecayLR(0.01, 0.2, 3), 0.9)
    elif opt_kind == "list":
        opt = nn.Adam(ps, [0.05, 0.02, 0.01])
    else:
        opt = nn.Momentum([{"params": ps[:2], "lr": 0.3, "weight_decay": 0.01},
                           {"params": ps[2:]}], 0.1, 0.9)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    return net, opt, nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)


@pytest.mark.parametrize("opt_kind", ["schedule", "list", "groups"])
def test_compiled_training_step_with_dynamic_rates_matches_eager(opt_kind):
    rng = np.random.default_rng(3)
    x = ms.Tensor(rng.standard_normal((5, 4)).astype(np.float32))
    y = ms.Tensor(rng.integers(0, 3, 5).astype(np.int32))
    net_e, opt_e, step_e = make_train(opt_kind)
    net_j, opt_j, step_j = make_train(opt_kind)
    jstep = ms.jit(lambda a, b: step_j(a, b), mode="PIJit")
    before = ms.get_code_extra(jstep)["compile_count"]
    for _ in range(5):
        np.testing.assert_allclose(jstep(x, y).asnumpy(), step_e(x, y).asnumpy(), rtol=1e-5)
    for pe, pj in zip(net_e.get_parameters(), net_j.get_parameters()):
        np.testing.assert_allclose(pj.asnumpy(), pe.asnumpy(), rtol=1e-5, atol=1e-6)
    assert int(opt_j.global_step.asnumpy()) == int(opt_e.global_step.asnumpy()) == 5
    s = ms.get_code_extra(jstep)
    assert s["compile_count"] == before + 1 and s["break_count"] == 0, s
