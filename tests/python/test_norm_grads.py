"""Gradients of layer_norm, batch_norm (given statistics), batch_norm_train (batch statistics)
and prod against central finite differences in float64, float32 against float64, and
BatchNorm2d/LayerNorm networks trained eagerly against the same step as one compiled graph."""
import numpy as np
import pytest

import pijit as ms
import pijit.nn as nn
from pijit import ops

from gradcheck_util import central_differences


def T(a):
    return ms.Tensor(np.asarray(a))


def check_against_finite_differences(f, args, rtol=1e-5, atol=1e-6):
    """f takes numpy float64 arrays (as Tensors) and returns a scalar Tensor."""
    positions = tuple(range(len(args)))
    grads = ms.grad(f, grad_position=positions)(*(T(a) for a in args))
    for k, (got, a) in enumerate(zip(grads, args)):
        def fk(v, k=k):
            vals = [T(x) for x in args]
            vals[k] = T(v)
            return float(f(*vals).asnumpy())
        want = central_differences(fk, a)
        assert got.dtype == ms.float64 and tuple(got.shape) == a.shape
        np.testing.assert_allclose(got.asnumpy(), want, rtol=rtol, atol=atol, err_msg=f"input {k}")
    return grads


def check_float32_agrees(f, args, grads64):
    grads32 = ms.grad(f, grad_position=tuple(range(len(args))))(*(T(a.astype(np.float32)) for a in args))
    for got, want in zip(grads32, grads64):
        assert got.dtype == ms.float32
        w = want.asnumpy()
        np.testing.assert_allclose(got.asnumpy(), w, rtol=1e-3, atol=1e-4 * max(1.0, np.abs(w).max()))


# ---- layer_norm ----

LN_CASES = [((4, 5), (5,)), ((2, 3, 4), (3, 4)), ((3, 2, 2, 3), (2, 2, 3)), ((2, 6), (2, 6)), ((3, 4, 1), (1,))]


@pytest.mark.parametrize("shape,ns", LN_CASES)
@pytest.mark.parametrize("affine", ["both", "gamma", "beta", "none"])
def test_layer_norm_gradients_match_finite_differences(shape, ns, affine):
    rng = np.random.default_rng(len(shape) * 7 + len(ns))
    x = rng.standard_normal(shape)
    w = rng.standard_normal(shape)  # a weighted sum: sum(y) alone has no gradient wrt x
    gamma, beta = rng.standard_normal(ns) + 1.0, rng.standard_normal(ns)
    has_g, has_b = affine in ("both", "gamma"), affine in ("both", "beta")
    Tw = T(w)

    def f(x, *params):
        it = iter(params)
        g = next(it) if has_g else None
        b = next(it) if has_b else None
        return ops.sum(ops.layer_norm(x, ns, g, b, 1e-5) * Tw)

    args = [x] + ([gamma] if has_g else []) + ([beta] if has_b else [])
    grads = check_against_finite_differences(f, args)
    check_float32_agrees(f, args, grads)


def test_layer_norm_gradient_is_not_the_gradient_without_the_statistics_terms():
    # Guards against a rule that treats mean and variance as constants: dx must sum to zero
    # over the normalised axis (the output is invariant to shifting x).
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((3, 6)), rng.standard_normal((3, 6))
    gx = ms.grad(lambda x: ops.sum(ops.layer_norm(x, (6,), None, None, 1e-5) * T(w)))(T(x)).asnumpy()
    np.testing.assert_allclose(gx.sum(axis=-1), 0, atol=1e-10)
    assert np.abs(gx).max() > 0.1


# ---- batch_norm with given statistics ----

BN_SHAPES = [(4, 3, 2, 2), (5, 2), (3, 2, 4)]


@pytest.mark.parametrize("shape", BN_SHAPES)
def test_batch_norm_gradients_flow_to_every_operand(shape):
    rng = np.random.default_rng(shape[0])
    c = shape[1]
    x, w = rng.standard_normal(shape), rng.standard_normal(shape)
    mean, var = rng.standard_normal(c), rng.uniform(0.5, 2.0, c)
    gamma, beta = rng.standard_normal(c), rng.standard_normal(c)
    Tw = T(w)

    def f(x, mean, var, gamma, beta):
        return ops.sum(ops.batch_norm(x, mean, var, gamma, beta, eps=1e-3) * Tw)

    args = [x, mean, var, gamma, beta]
    grads = check_against_finite_differences(f, args)
    check_float32_agrees(f, args, grads)


# ---- batch_norm_train ----

@pytest.mark.parametrize("shape", BN_SHAPES)
def test_batch_norm_train_gradients_include_the_batch_statistics(shape):
    rng = np.random.default_rng(10 + shape[0])
    c = shape[1]
    x, w = rng.standard_normal(shape), rng.standard_normal(shape)
    gamma, beta = rng.standard_normal(c), rng.standard_normal(c)
    Tw = T(w)

    def f(x, gamma, beta):
        dt = x.asnumpy().dtype  # fresh running statistics per evaluation, of x's dtype
        rm, rv = T(np.zeros(c, dt)), T(np.ones(c, dt))
        return ops.sum(ops.batch_norm(x, rm, rv, gamma, beta, training=True, momentum=0.1, eps=1e-3) * Tw)

    args = [x, gamma, beta]
    grads = check_against_finite_differences(f, args)
    check_float32_agrees(f, args, grads)
    # The output does not change when x shifts per channel: dx sums to zero per channel.
    axes = tuple(i for i in range(len(shape)) if i != 1)
    np.testing.assert_allclose(grads[0].asnumpy().sum(axis=axes), 0, atol=1e-9)


def test_batch_norm_train_running_statistics_get_no_gradient_and_update_once():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 2, 3, 3))
    rm, rv = T(np.zeros(2)), T(np.ones(2))

    def f(x, rm, rv):
        return ops.sum(ops.batch_norm(x, rm, rv, T(np.ones(2)), T(np.zeros(2)), training=True,
                                      momentum=0.25) ** 3)

    gx, grm, grv = ms.grad(f, grad_position=(0, 1, 2))(T(x), rm, rv)
    assert np.abs(gx.asnumpy()).max() > 0
    np.testing.assert_array_equal(grm.asnumpy(), 0)
    np.testing.assert_array_equal(grv.asnumpy(), 0)
    n = x.size // 2
    axes = (0, 2, 3)
    np.testing.assert_allclose(rm.asnumpy(), 0.25 * x.mean(axis=axes), rtol=1e-12)
    np.testing.assert_allclose(rv.asnumpy(), 0.75 + 0.25 * x.var(axis=axes) * n / (n - 1), rtol=1e-12)


# ---- prod ----

def prod_inputs():
    rng = np.random.default_rng(4)
    base = rng.uniform(0.5, 1.5, (3, 4)) * rng.choice([-1, 1], (3, 4))
    one_zero = base.copy()
    one_zero[1, 2] = 0
    zeros = base.copy()
    zeros[0, 0] = zeros[0, 3] = 0  # two zeros in row 0, one each in columns 0 and 3
    zeros[2, 1] = 0
    return {"no_zero": base, "one_zero": one_zero, "several_zeros": zeros}


@pytest.mark.parametrize("case", ["no_zero", "one_zero", "several_zeros"])
@pytest.mark.parametrize("axis,keepdims", [((), False), (0, False), (1, True), ((0, 1), False)])
def test_prod_gradient_is_exact_with_zeros(case, axis, keepdims):
    x = prod_inputs()[case]
    rng = np.random.default_rng(5)
    w = rng.standard_normal(np.prod(x, axis=axis if axis != () else None, keepdims=keepdims).shape)
    Tw = T(w)

    def f(x):
        return ops.sum(ops.prod(x, axis, keepdims) * Tw)

    gx = ms.grad(f)(T(x)).asnumpy()
    # prod is linear in each element, so central differences are exact up to rounding.
    want = central_differences(lambda v: float(f(T(v)).asnumpy()), x)
    np.testing.assert_allclose(gx, want, rtol=1e-7, atol=1e-9)
    # The product of the other elements, computed directly.
    if axis == ():
        for i in np.ndindex(x.shape):
            others = np.delete(x.ravel(), np.ravel_multi_index(i, x.shape))
            np.testing.assert_allclose(gx[i], w * np.prod(others), rtol=1e-12, atol=1e-15)


def test_prod_gradient_at_a_single_zero_is_the_product_of_the_others():
    x = np.array([2.0, 0.0, 3.0, -1.5])
    gx = ms.grad(lambda x: ops.prod(x, (), False))(T(x)).asnumpy()
    np.testing.assert_array_equal(gx, [0.0, 2.0 * 3.0 * -1.5, 0.0, 0.0])


# ---- training steps: eager against one compiled graph ----

class BnNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.bn0 = nn.BatchNorm2d(2)
        self.conv = nn.Conv2d(2, 3, 3, pad_mode="pad", padding=1, has_bias=False)
        self.bn = nn.BatchNorm2d(3)
        self.flat = nn.Flatten()
        self.ln = nn.LayerNorm((3 * 4 * 4,))
        self.fc = nn.Dense(3 * 4 * 4, 4)

    def construct(self, x):
        return self.fc(self.ln(self.flat(ops.relu(self.bn(self.conv(self.bn0(x)))))))


def make_bn_step():
    ms.set_seed(7)
    net = BnNet()
    net.set_train()
    opt = nn.Momentum(net.trainable_params(), 0.05, 0.9)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    return net, nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)


def test_batch_norm_network_trains_identically_eagerly_and_as_one_graph():
    rng = np.random.default_rng(8)
    x = ms.Tensor(rng.standard_normal((6, 2, 4, 4)).astype(np.float32) * 2 + 1)
    y = ms.Tensor(rng.integers(0, 4, 6).astype(np.int32))
    net_e, step_e = make_bn_step()
    net_j, step_j = make_bn_step()
    jstep = ms.jit(lambda a, b: step_j(a, b), mode="PIJit")
    xn = x.asnumpy().astype(np.float64)
    n = xn.size // 2
    mean_x, var_x = xn.mean(axis=(0, 2, 3)), xn.var(axis=(0, 2, 3)) * n / (n - 1)
    gamma0 = net_e.bn.gamma.asnumpy().copy()
    losses = []
    for k in range(1, 5):
        le, lj = step_e(x, y), jstep(x, y)
        losses.append(float(le.asnumpy()))
        np.testing.assert_allclose(lj.asnumpy(), le.asnumpy(), rtol=1e-5, atol=1e-6)
        # bn0 sees x itself: its moving statistics advanced exactly k times in both.
        want_mean = mean_x * (1 - 0.9 ** k)
        want_var = 0.9 ** k + var_x * (1 - 0.9 ** k)
        for net in (net_e, net_j):
            np.testing.assert_allclose(net.bn0.moving_mean.asnumpy(), want_mean, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(net.bn0.moving_variance.asnumpy(), want_var, rtol=1e-5)
    for pe, pj in zip(net_e.get_parameters(), net_j.get_parameters()):
        np.testing.assert_allclose(pj.asnumpy(), pe.asnumpy(), rtol=1e-4, atol=1e-5, err_msg=pe.name)
    assert losses[-1] < losses[0]
    assert np.abs(net_e.bn.gamma.asnumpy() - gamma0).max() > 0  # the norm layers trained
    s = ms.get_code_extra(jstep)
    assert s["graph_count"] == 1 and s["break_count"] == 0 and s["eager_count"] == 0, s
