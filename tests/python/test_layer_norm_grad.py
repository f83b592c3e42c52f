"""layer_norm's gradient kernel (layer_norm_grad): gradients of layer_norm against NumPy's
closed form (shapes, normalised-axis counts, with and without gamma and beta, float32 and
float64), jitted against eager, against finite differences in float64; second-order
gradients (grad of grad) of layer_norm, GroupNorm and InstanceNorm2d against finite
differences of the first-order gradient, eager and jitted; GroupNorm against torch."""
import numpy as np
import pytest

import pijit as ms
import pijit.nn as nn
from pijit import ops

from gradcheck_util import central_differences

EPS = 1e-5


@pytest.fixture(autouse=True)
def fresh_caches():
    """Each case compiles its own graphs: the parametrised cases share code objects, whose
    recompile limit would otherwise send later cases to eager execution."""
    ms.reset()
    yield


def T(a):
    return ms.Tensor(np.asarray(a))


def numpy_layer_norm_grads(x, w, ns, gamma, eps=EPS):
    """dx, dgamma, dbeta of sum(layer_norm(x, ns, gamma, beta) * w), in float64."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    axes = tuple(range(x.ndim - len(ns), x.ndim))
    lead = tuple(range(x.ndim - len(ns)))
    mu = x.mean(axis=axes, keepdims=True)
    r = 1 / np.sqrt(((x - mu) ** 2).mean(axis=axes, keepdims=True) + eps)
    xhat = (x - mu) * r
    dxhat = w * gamma if gamma is not None else w
    dx = r * (dxhat - dxhat.mean(axis=axes, keepdims=True)
              - xhat * (dxhat * xhat).mean(axis=axes, keepdims=True))
    return dx, (w * xhat).sum(axis=lead), w.sum(axis=lead)


SHAPES = [((4, 5), (5,)), ((2, 3, 4), (3, 4)), ((3, 2, 2, 3), (2, 2, 3)), ((2, 6), (2, 6)),
          ((3, 37), (37,)), ((2, 3, 600), (600,)), ((5, 1), (1,)), ((6, 33), (33,))]


def layer_norm_loss(ns, w, has_gamma, has_beta):
    def loss(x, *params):
        it = iter(params)
        g = next(it) if has_gamma else None
        b = next(it) if has_beta else None
        return ops.sum(ops.layer_norm(x, ns, g, b, EPS) * w)
    return loss


@pytest.mark.parametrize("shape,ns", SHAPES)
@pytest.mark.parametrize("affine", ["both", "gamma", "beta", "none"])
@pytest.mark.parametrize("dtype,rtol,atol", [(np.float64, 1e-10, 1e-11), (np.float32, 2e-4, 2e-5)])
def test_layer_norm_gradients_match_numpy(shape, ns, affine, dtype, rtol, atol):
    rng = np.random.default_rng(len(shape) * 13 + sum(ns))
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    w = rng.standard_normal(shape).astype(dtype)
    gamma = (rng.standard_normal(ns) + 1).astype(dtype)
    beta = rng.standard_normal(ns).astype(dtype)
    has_g, has_b = affine in ("both", "gamma"), affine in ("both", "beta")
    params = [p for p, has in ((gamma, has_g), (beta, has_b)) if has]
    loss = layer_norm_loss(ns, T(w), has_g, has_b)
    positions = tuple(range(1 + len(params)))
    dx, dgamma, dbeta = numpy_layer_norm_grads(x, w, ns, gamma if has_g else None)
    want = [dx] + ([dgamma] if has_g else []) + ([dbeta] if has_b else [])
    eager = ms.grad(loss, grad_position=positions)(T(x), *map(T, params))
    jitted = ms.jit(ms.grad(loss, grad_position=positions))(T(x), *map(T, params))
    for got_e, got_j, ref in zip(eager, jitted, want):
        assert got_e.dtype == got_j.dtype == ms.Tensor(x).dtype
        scale = max(1.0, np.abs(ref).max())
        np.testing.assert_allclose(got_e.asnumpy(), ref, rtol=rtol, atol=atol * scale)
        np.testing.assert_allclose(got_j.asnumpy(), ref, rtol=rtol, atol=atol * scale)
        np.testing.assert_allclose(got_j.asnumpy(), got_e.asnumpy(), rtol=rtol, atol=atol * scale)


def test_layer_norm_gradient_matches_finite_differences_for_a_long_row():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 1100))
    w = T(rng.standard_normal((2, 1100)))
    gamma = T(rng.standard_normal(1100) + 1)

    def loss(x):
        return ops.sum(ops.layer_norm(x, (1100,), gamma, None, EPS) * w)

    got = ms.grad(loss)(T(x)).asnumpy()
    for i in [(0, 0), (0, 517), (1, 1099)]:  # a few elements: each costs two evaluations
        up, down = x.copy(), x.copy()
        up[i] += 1e-6
        down[i] -= 1e-6
        fd = (float(loss(T(up)).asnumpy()) - float(loss(T(down)).asnumpy())) / 2e-6
        np.testing.assert_allclose(got[i], fd, rtol=1e-6, atol=1e-8)


def test_float16_layer_norm_gradient_agrees_with_float32():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 64)).astype(np.float32)
    w = rng.standard_normal((4, 64)).astype(np.float32)
    gamma = (rng.standard_normal(64) + 1).astype(np.float32)
    want, _, _ = numpy_layer_norm_grads(x, w, (64,), gamma)
    loss = layer_norm_loss((64,), T(w.astype(np.float16)), True, False)
    got = ms.grad(loss)(T(x.astype(np.float16)), T(gamma.astype(np.float16)))
    assert got.dtype == ms.float16
    np.testing.assert_allclose(got.asnumpy().astype(np.float32), want, rtol=2e-2,
                               atol=2e-2 * np.abs(want).max())


# ---- second order ----

def check_second_order(first_grad, x, v, jit, rtol=1e-6, atol=1e-8):
    """grad of sum(first_grad(x) * v) against central differences of that sum, eager or jitted."""
    vt = T(v)

    def inner(t):
        return ops.sum(first_grad(t) * vt)

    second = ms.grad(inner)
    if jit:
        second = ms.jit(second)
    got = second(T(x)).asnumpy()
    want = central_differences(lambda a: float(inner(T(a)).asnumpy()), x)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("shape,ns,has_gamma", [((3, 5), (5,), True), ((2, 2, 3), (2, 3), False)])
def test_layer_norm_second_order_gradient_matches_finite_differences(jit, shape, ns, has_gamma):
    rng = np.random.default_rng(5)
    x, w, v = (rng.standard_normal(shape) for _ in range(3))
    gamma = T(rng.standard_normal(ns) + 1)
    beta = T(rng.standard_normal(ns))
    wt = T(w)

    def loss(t):
        return ops.sum(ops.layer_norm(t, ns, gamma if has_gamma else None, beta, EPS) ** 3 * wt)

    check_second_order(ms.grad(loss), x, v, jit)


def test_layer_norm_second_order_gradient_reaches_gamma():
    rng = np.random.default_rng(6)
    x, w, v = (rng.standard_normal((3, 4)) for _ in range(3))
    gamma = rng.standard_normal(4) + 1

    def dx(xt, gt):
        return ms.grad(lambda a: ops.sum(ops.layer_norm(a, (4,), gt, None, EPS) ** 2 * T(w)))(xt)

    got = ms.grad(lambda g: ops.sum(dx(T(x), g) * T(v)))(T(gamma)).asnumpy()
    want = central_differences(lambda g: float(ops.sum(dx(T(x), T(g)) * T(v)).asnumpy()), gamma)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def float64_cell(cell):
    rng = np.random.default_rng(7)
    c = cell.gamma.shape[0]
    cell.gamma.set_data(T(rng.uniform(0.5, 1.5, c)))
    cell.beta.set_data(T(rng.uniform(-0.5, 0.5, c)))
    return cell


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("make,shape", [
    (lambda: nn.GroupNorm(2, 4, dtype=ms.float64), (2, 4, 3, 2)),
    (lambda: nn.InstanceNorm2d(3, dtype=ms.float64), (2, 3, 2, 3)),
])
def test_group_and_instance_norm_second_order_gradients_match_finite_differences(jit, make, shape):
    net = float64_cell(make())
    rng = np.random.default_rng(8)
    x, w, v = (rng.standard_normal(shape) for _ in range(3))
    wt = T(w)
    check_second_order(ms.grad(lambda t: ops.sum(net(t) ** 2 * wt)), x, v, jit)


# ---- GroupNorm ----

@pytest.mark.parametrize("make,shape", [
    (lambda: nn.GroupNorm(4, 8, dtype=ms.float64), (3, 8, 5, 4)),
    (lambda: nn.GroupNorm(1, 6, dtype=ms.float64), (2, 6, 7)),
    (lambda: nn.InstanceNorm2d(5, dtype=ms.float64), (2, 5, 3, 3)),
])
def test_group_norm_gradients_match_finite_differences_jitted_and_eager(make, shape):
    net = float64_cell(make())
    rng = np.random.default_rng(9)
    x = rng.standard_normal(shape)
    w = T(rng.standard_normal(shape))

    def loss(t):
        return ops.sum(net(t) * w)

    grads = ms.value_and_grad(loss, 0, net.trainable_params())
    _, (gx, gp) = grads(T(x))
    _, (jx, jp) = ms.jit(grads)(T(x))
    np.testing.assert_allclose(jx.asnumpy(), gx.asnumpy(), rtol=1e-12, atol=1e-12)
    for a, b in zip(jp, gp):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-12, atol=1e-12)
    want = central_differences(lambda a: float(loss(T(a)).asnumpy()), x)
    np.testing.assert_allclose(gx.asnumpy(), want, rtol=1e-6, atol=1e-8)
    for p, got in zip(net.trainable_params(), gp):
        base = p.asnumpy().copy()

        def at(value, p=p):
            p.set_data(T(value))
            return float(loss(T(x)).asnumpy())
        want_p = central_differences(at, base)
        p.set_data(T(base))
        np.testing.assert_allclose(got.asnumpy(), want_p, rtol=1e-6, atol=1e-8)


def test_group_norm_float32_gradients_match_torch():
    torch = pytest.importorskip("torch")
    net = nn.GroupNorm(4, 16)
    rng = np.random.default_rng(10)
    net.gamma.set_data(T(rng.uniform(0.5, 1.5, 16).astype(np.float32)))
    net.beta.set_data(T(rng.uniform(-0.5, 0.5, 16).astype(np.float32)))
    x = rng.standard_normal((4, 16, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 16, 6, 6)).astype(np.float32)
    wt = T(w)
    grads = ms.jit(ms.value_and_grad(lambda t: ops.sum(net(t) * wt), 0, net.trainable_params()))
    _, (gx, (gg, gb)) = grads(T(x))
    ref = torch.nn.GroupNorm(4, 16)
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(net.gamma.asnumpy()))
        ref.bias.copy_(torch.from_numpy(net.beta.asnumpy()))
    xt = torch.from_numpy(x).requires_grad_(True)
    (ref(xt) * torch.from_numpy(w)).sum().backward()
    for got, want in [(gx, xt.grad), (gg, ref.weight.grad), (gb, ref.bias.grad)]:
        want = want.numpy()
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


# ---- the group_norm op ----

def numpy_group_norm(x, groups, gamma, beta, eps=EPS):
    n, c = x.shape[:2]
    g = x.astype(np.float64).reshape(n, groups, -1)
    y = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)
    view = (1, c) + (1,) * (x.ndim - 2)
    return y.reshape(x.shape) * gamma.reshape(view) + beta.reshape(view)


@pytest.mark.parametrize("shape,groups", [((2, 6, 5, 4), 3), ((3, 4, 7), 4), ((2, 8), 2),
                                          ((1, 6, 2, 3, 2), 1), ((4, 32, 3, 3), 32)])
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 2e-6)])
def test_group_norm_op_matches_numpy_eager_and_jitted(shape, groups, dtype, tol):
    rng = np.random.default_rng(sum(shape) + groups)
    x = (rng.standard_normal(shape) * 2 + 3).astype(dtype)
    gamma = rng.uniform(0.5, 1.5, shape[1]).astype(dtype)
    beta = rng.uniform(-1, 1, shape[1]).astype(dtype)
    want = numpy_group_norm(x, groups, gamma, beta)
    eager = ops.group_norm(T(x), groups, T(gamma), T(beta), EPS)
    jitted = ms.jit(lambda a, g, b: ops.group_norm(a, groups, g, b, EPS))(T(x), T(gamma), T(beta))
    assert eager.dtype == jitted.dtype == T(x).dtype
    np.testing.assert_allclose(eager.asnumpy(), want, rtol=tol, atol=tol * 10)
    np.testing.assert_allclose(jitted.asnumpy(), eager.asnumpy(), rtol=tol, atol=tol * 10)


def test_group_norm_op_in_float16_is_computed_in_float32():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 4, 3, 3)).astype(np.float16)
    gamma, beta = np.ones(4, np.float16), np.zeros(4, np.float16)
    got = ops.group_norm(T(x), 2, T(gamma), T(beta), EPS)
    assert got.dtype == ms.float16
    np.testing.assert_allclose(got.asnumpy().astype(np.float64),
                               numpy_group_norm(x.astype(np.float32), 2, gamma, beta), atol=5e-3)


@pytest.mark.parametrize("args,message", [
    (((2, 6, 3), 4, 6, 6), "divide into 4 groups"),
    (((2, 6, 3), 3, 5, 6), "weight"),
    (((2, 6, 3), 3, 6, 4), "bias"),
    (((6,), 3, 6, 6), "at least 2 dimensions"),
])
def test_group_norm_op_rejects_bad_operands_clearly(args, message):
    shape, groups, cg, cb = args
    with pytest.raises((ValueError, TypeError, RuntimeError), match=message):
        ops.group_norm(T(np.ones(shape, np.float32)), groups, T(np.ones(cg, np.float32)),
                       T(np.zeros(cb, np.float32)), EPS)
    with pytest.raises(ValueError, match="num_groups must be positive"):
        ops.group_norm(T(np.ones((2, 6, 3), np.float32)), 0, T(np.ones(6, np.float32)),
                       T(np.zeros(6, np.float32)))


def test_group_norm_with_parameters_of_another_dtype_promotes():
    net = nn.GroupNorm(2, 4)  # float32 parameters
    x = np.random.default_rng(12).standard_normal((2, 4, 3))
    got = net(T(x))  # float64 input
    assert got.dtype == ms.float64
    np.testing.assert_allclose(got.asnumpy(), numpy_group_norm(x, 2, np.ones(4), np.zeros(4)),
                               rtol=1e-6, atol=1e-6)
