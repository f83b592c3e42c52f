"""The optimizers of pijit/nn/optim_extra.py against their update rules written out here in
NumPy over several steps (weight decay and learning-rate lists included), their state
Parameters' names, a jitted training step equal to the eager one as one graph; and the
wrappers of pijit/nn/wrap_more.py (micro-batches, single-process gradient reduction)."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops
from mint_testutil import T, same
from optim_testutil import jitted_step_equals_eager

R = np.random.default_rng(307)
# Learning rates and scalar states are Float32 Parameters, as in MindSpore.
F32 = np.float32
LR = float(F32(0.01))
LRS = [float(F32(v)) for v in (0.05, 0.02, 0.01)]


def _asgd(p, g, s, lr, lambd=1e-4, alpha=0.75, t0=2.0, wd=0.0):
    s["t"] = t = s.get("t", 0) + 1
    g = g + wd * p
    eta = lr if t == 1 else s["eta"]
    p = p * (1 - lambd * eta) - eta * g
    mu = s.get("mu", 1.0)
    s["ax"] = p if mu == 1 else s["ax"] + (p - s["ax"]) * mu
    s["eta"] = float(F32(lr / (1 + lambd * lr * t) ** alpha))
    s["mu"] = float(F32(1 / max(1.0, t - t0)))
    return p


def _rprop(p, g, s, lr, etas=(0.5, 1.2), sizes=(1e-3, 0.05), wd=0.0):
    g = g + wd * p
    prev = s.get("prev", np.zeros_like(p))
    size = s.get("size", np.full_like(p, lr))
    sign = np.sign(g * prev)
    size = np.clip(size * np.where(sign > 0, etas[1], np.where(sign < 0, etas[0], 1.0)),
                   *sizes)
    g = np.where(sign < 0, 0.0, g)
    s["prev"], s["size"] = g, size
    return p - np.sign(g) * size


def _lamb(p, g, s, lr, b1=0.9, b2=0.999, eps=1e-6, wd=0.0):
    s["t"] = t = s.get("t", 0) + 1
    s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
    update = (s["m"] / (1 - b1 ** t)) / (np.sqrt(s["v"] / (1 - b2 ** t)) + eps) + wd * p
    w_norm, u_norm = np.linalg.norm(p), np.linalg.norm(update)
    ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
    return p - lr * ratio * update


def _lars_momentum(p, g, s, lr, wd=0.0, eps=1e-5, coefficient=0.02, momentum=0.9, clip=False):
    """LARS around Momentum: the trust-ratio-scaled, decayed gradient, then the momentum
    step."""
    w_norm, g_norm = np.linalg.norm(p), np.linalg.norm(g)
    ratio = coefficient * w_norm / (g_norm + wd * w_norm + eps)
    g = (g + wd * p) * (min(ratio / lr, 1.0) if clip else ratio)
    s["m"] = momentum * s.get("m", 0) + g
    return p - lr * s["m"]


def _adam(p, g, s, lr, b1=0.9, b2=0.999, eps=1e-8, wd=0.0):
    g = g + wd * p
    s["t"] = t = s.get("t", 0) + 1
    s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
    return p - lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t) * s["m"] / (np.sqrt(s["v"]) + eps)


# name: (make(params, learning_rate), rule(p, g, state, lr), state Parameter names)
CASES = {
    "ASGD": (lambda ps, lr: nn.ASGD(ps, lr, t0=2.0), _asgd, ["eta_w", "mu_w", "ax_.w"]),
    "ASGD_decay": (lambda ps, lr: nn.ASGD(ps, lr, lambd=0.05, t0=2.0, weight_decay=0.1),
                   lambda p, g, s, lr: _asgd(p, g, s, lr, lambd=0.05, wd=0.1), ["ax_.w"]),
    "Rprop": (lambda ps, lr: nn.Rprop(ps, lr, step_sizes=(1e-3, 0.05)), _rprop,
              ["prev.w", "step_size.w"]),
    "Rprop_decay": (lambda ps, lr: nn.Rprop(ps, lr, etas=(0.3, 1.5), step_sizes=(1e-3, 0.05),
                                            weight_decay=0.2),
                    lambda p, g, s, lr: _rprop(p, g, s, lr, etas=(0.3, 1.5), wd=0.2),
                    ["prev.w"]),
    "Lamb": (lambda ps, lr: nn.Lamb(ps, lr), _lamb, ["lamb_m.w", "lamb_v.w"]),
    "Lamb_decay": (lambda ps, lr: nn.Lamb(ps, lr, beta1=0.8, weight_decay=0.1),
                   lambda p, g, s, lr: _lamb(p, g, s, lr, b1=0.8, wd=0.1), ["lamb_m.w"]),
    "LARS": (lambda ps, lr: nn.LARS(nn.Momentum(ps, lr, 0.9, weight_decay=0.1),
                                    coefficient=0.02),
             lambda p, g, s, lr: _lars_momentum(p, g, s, lr, wd=0.1), ["moments.w"]),
    "LARS_clip": (lambda ps, lr: nn.LARS(nn.Momentum(ps, lr, 0.9), coefficient=0.5,
                                         use_clip=True),
                  lambda p, g, s, lr: _lars_momentum(p, g, s, lr, coefficient=0.5, clip=True),
                  ["moments.w", "global_step"]),
    "AdamOffload": (lambda ps, lr: nn.AdamOffload(ps, lr, weight_decay=0.1),
                    lambda p, g, s, lr: _adam(p, g, s, lr, wd=0.1),
                    ["moment1.w", "moment2.w", "beta1_power", "beta2_power"]),
}


@pytest.mark.parametrize("schedule", ["fixed", "list"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_updates_match_the_rule(name, schedule):
    make, rule, states = CASES[name]
    start = R.normal(size=(3, 4))
    p = ms.Parameter(start.copy(), name="w")
    opt = make([p], LR if schedule == "fixed" else LRS)
    names = {q.name for q in opt.get_parameters()}
    assert set(states) <= names, names
    want, memory = start.copy(), {}
    for step in range(4):
        g = R.normal(size=(3, 4))
        assert opt((T(g),))
        lr = LR if schedule == "fixed" else LRS[min(step, len(LRS) - 1)]
        want = rule(want, g, memory, lr)
        same(p, want, rtol=2e-6, atol=1e-9)
    if name.startswith("ASGD"):
        same(opt.ax[0], memory["ax"], rtol=2e-6, atol=1e-9)


def test_asgd_averages_after_t0():
    """With t0 = 2, mu drops below 1 after step 4: from there ax is the running mean of the
    weights since step 4."""
    p = ms.Parameter(np.ones(2), name="w")
    opt = nn.ASGD([p], 0.1, lambd=0.0, t0=2.0)
    weights = []
    for _ in range(6):
        opt((T(np.array([1.0, -1.0])),))
        weights.append(p.asnumpy().copy())
    np.testing.assert_allclose(opt.ax[0].asnumpy(), np.mean(weights[3:], axis=0), rtol=1e-6)


def test_lars_skips_filtered_parameters_and_clips():
    w = ms.Parameter(R.normal(size=(3,)), name="dense.weight")
    b = ms.Parameter(R.normal(size=(3,)), name="dense.bias")
    w0, b0 = w.asnumpy().copy(), b.asnumpy().copy()
    opt = nn.LARS(nn.SGD([w, b], learning_rate=0.1, weight_decay=0.05), coefficient=0.5,
                  use_clip=True)
    gw, gb = R.normal(size=3), R.normal(size=3)
    opt((T(gw), T(gb)))
    ratio = 0.5 * np.linalg.norm(w0) / (np.linalg.norm(gw) + 0.05 * np.linalg.norm(w0) + 1e-5)
    ratio = min(ratio / float(F32(0.1)), 1.0)
    same(w, w0 - float(F32(0.1)) * (gw + 0.05 * w0) * ratio, rtol=1e-6)
    # The bias is filtered out: no trust ratio and no weight decay (LARS took it over).
    same(b, b0 - float(F32(0.1)) * gb, rtol=1e-6)
    assert opt.get_lr() is not None and float(opt.global_step.asnumpy()) == 1.0


@pytest.mark.parametrize("name", sorted(CASES))
def test_jitted_training_step_equals_eager(name):
    make = CASES[name][0]
    x, y = T(R.normal(size=(8, 3))), T(R.normal(size=(8, 1)))
    jitted_step_equals_eager(lambda params: make(params, LRS), x, y, steps=4,
                             capture_mode="bytecode")


def test_optimizer_argument_errors():
    p = ms.Parameter(np.ones(2), name="p")
    with pytest.raises(TypeError, match="ASGD: lambd must be a float"):
        nn.ASGD([p], lambd="0.1")
    with pytest.raises(TypeError, match="Rprop: etas must be a tuple"):
        nn.Rprop([p], etas=[0.5, 1.2])
    with pytest.raises(ValueError, match="Rprop: etas must be a tuple of 2"):
        nn.Rprop([p], etas=(0.5, 1.2, 2.0))
    with pytest.raises(ValueError, match="Rprop: etaminus must be < 1.0"):
        nn.Rprop([p], etas=(1.5, 1.2))
    with pytest.raises(ValueError, match="Rprop: etaplus must be > 1.0"):
        nn.Rprop([p], etas=(0.5, 1.0))
    with pytest.raises(ValueError, match="Rprop: the maximal step size"):
        nn.Rprop([p], step_sizes=(1.0, 0.1))
    with pytest.raises(ValueError, match="Lamb: beta2 must be < 1.0"):
        nn.Lamb([p], 0.1, beta2=1.0)
    with pytest.raises(ValueError, match="Lamb: eps must be > 0.0"):
        nn.Lamb([p], 0.1, eps=0.0)
    with pytest.raises(TypeError, match="LARS: optimizer must be an Optimizer"):
        nn.LARS(nn.Dense(2, 2))
    with pytest.raises(TypeError, match="LARS: use_clip must be a bool"):
        nn.LARS(nn.SGD([p]), use_clip=1)
    with pytest.raises(ValueError, match="AdamOffload: beta1"):
        nn.AdamOffload([p], beta1=1.5)
    with pytest.raises(ValueError, match="Lamb: 2 gradients for 1 parameters"):
        nn.Lamb([p], 0.1)((T(np.ones(2)), T(np.ones(2))))


class _Affine(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = ms.Parameter(np.array([[0.5], [-0.25], [1.0]]), name="w")

    def construct(self, x, y):
        return ops.sum((ops.matmul(x, self.w) - y) ** 2)


@pytest.mark.parametrize("wrapper", [lambda net: nn.MicroBatchInterleaved(net, 2),
                                     lambda net: nn.PipelineCell(net, 3)])
def test_micro_batches_add_up_to_the_whole_batch(wrapper):
    x, y = R.normal(size=(7, 3)), R.normal(size=(7, 1))
    net = _Affine()
    wrapped = wrapper(net)
    parts = getattr(wrapped, "interleave_num", None) or wrapped.micro_size
    bounds = [i * 7 // parts for i in range(parts + 1)]
    want = sum(float(net(T(x[a:b]), T(y[a:b])).asnumpy()) for a, b in zip(bounds, bounds[1:]))
    np.testing.assert_allclose(float(wrapped(T(x), T(y)).asnumpy()), want, rtol=1e-12)
    # A sum of squared errors over the micro-batches is the whole batch's.
    np.testing.assert_allclose(want, float(net(T(x), T(y)).asnumpy()), rtol=1e-12)


def test_micro_batch_training_step_jitted_equals_eager():
    x, y = T(R.normal(size=(8, 3))), T(R.normal(size=(8, 1)))
    results = []
    for jit in (False, True):
        net = _Affine()
        train = nn.TrainOneStepCell(nn.MicroBatchInterleaved(net, 2),
                                    nn.Lamb(net.trainable_params(), 0.05))

        def step():
            return train(x, y)

        run = ms.jit(step, capture_mode="bytecode") if jit else step
        if jit:
            ms.reset(run)
        losses = [float(run().asnumpy()) for _ in range(3)]
        results.append((losses, net.w.asnumpy().copy()))
        if jit:
            assert ms.get_code_extra(run)["total_break_count"] == 0
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-10)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-10)
    assert results[0][0][2] < results[0][0][0]


def test_single_process_reducer_and_adasum_leave_the_step_unchanged():
    ws = [ms.Parameter(np.ones(3), name=f"w{i}") for i in range(2)]
    grads = (T(np.array([1.0, 2.0, 3.0])), T(np.array([-1.0, 0.0, 1.0])))
    reducer = nn.DistributedGradReducer(ws, mean=True, degree=1)
    out = reducer(grads)
    assert len(out) == 2
    for got, g in zip(out, grads):
        same(got, g.asnumpy())
    for wrap in (nn.AdaSumByGradWrapCell, nn.AdaSumByDeltaWeightWrapCell):
        params = [ms.Parameter(np.ones(3), name=f"p{i}") for i in range(2)]
        plain = [ms.Parameter(np.ones(3), name=f"q{i}") for i in range(2)]
        assert wrap(nn.Momentum(params, 0.1, 0.9))(grads)
        nn.Momentum(plain, 0.1, 0.9)(grads)
        for a, b in zip(params, plain):
            same(a, b.asnumpy())


def test_reducer_in_a_jitted_step():
    w = ms.Parameter(np.ones(3), name="w")
    reducer = nn.DistributedGradReducer([w])
    opt = nn.SGD([w], 0.1)

    @ms.jit(capture_mode="bytecode")
    def step(g):
        opt(reducer((g,)))
        return w * 1.0

    same(step(T(np.array([1.0, 2.0, 3.0]))), np.array([0.9, 0.8, 0.7]), rtol=1e-7)
    assert ms.get_code_extra(step)["total_break_count"] == 0


def test_wrapper_errors():
    w = ms.Parameter(np.ones(3), name="w")
    with pytest.raises(ValueError, match="DistributedGradReducer: degree 8 needs 8 processes"):
        nn.DistributedGradReducer([w], degree=8)
    with pytest.raises(TypeError, match="DistributedGradReducer: degree must be an int"):
        nn.DistributedGradReducer([w], degree=2.0)
    # Before init() the group cannot exist either: a RuntimeError says to call init().
    with pytest.raises((ValueError, RuntimeError),
                       match="DistributedGradReducer: (no communication group named 'pairs'"
                             "|communication is not initialized)"):
        nn.DistributedGradReducer([w], group="pairs")
    with pytest.raises(ValueError, match="DistributedGradReducer: 2 gradients for 1"):
        nn.DistributedGradReducer([w])((T(np.ones(3)), T(np.ones(3))))
    with pytest.raises(TypeError, match="MicroBatchInterleaved: network must be a Cell"):
        nn.MicroBatchInterleaved(lambda x: x)
    with pytest.raises(ValueError, match="MicroBatchInterleaved: interleave_num must be"):
        nn.MicroBatchInterleaved(_Affine(), 0)
    with pytest.raises(ValueError, match="MicroBatchInterleaved: a batch of 1 rows"):
        nn.MicroBatchInterleaved(_Affine(), 2)(T(np.ones((1, 3))), T(np.ones((1, 1))))
    with pytest.raises(ValueError, match="PipelineCell: stage_config"):
        nn.PipelineCell(_Affine(), 2, stage_config={"w": 1})
    with pytest.raises(TypeError, match="AdaSumByGradWrapCell: optimizer must be"):
        nn.AdaSumByGradWrapCell(_Affine())
