"""pijit.vjp, jacrev, jacfwd and vmap against finite differences and NumPy loops, and the
top-level names MindSpore gives to existing things (dtype aliases, ms_class, constexpr)."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops
from mint_testutil import T, same

R = np.random.default_rng(71)


def _f(x, y):
    return ops.sin(x) * y + x * x


def _f_np(x, y):
    return np.sin(x) * y + x * x


def _numeric_jacobian(fn, args, position, eps=1e-6):
    """d fn(*args) / d args[position], out.shape + in.shape, by central differences."""
    base = fn(*args)
    jac = np.zeros(base.shape + args[position].shape)
    for i in np.ndindex(*args[position].shape):
        up = [a.copy() for a in args]
        down = [a.copy() for a in args]
        up[position][i] += eps
        down[position][i] -= eps
        jac[(Ellipsis,) + i] = (fn(*up) - fn(*down)) / (2 * eps)
    return jac


def test_vjp_values_and_products():
    x, y = R.normal(size=(2, 3)), R.normal(size=(2, 3))
    v = R.normal(size=(2, 3))
    out, vjp_fn = ms.vjp(_f, T(x), T(y))
    same(out, _f_np(x, y), rtol=1e-12)
    gx, gy = vjp_fn(T(v))
    for got, position in ((gx, 0), (gy, 1)):
        jac = _numeric_jacobian(_f_np, [x, y], position)
        np.testing.assert_allclose(got.asnumpy(), np.tensordot(v, jac, axes=2), rtol=1e-6,
                                   atol=1e-8)
    single_out, single_fn = ms.vjp(ops.exp, T(x))
    same(single_fn(T(v)), v * np.exp(x), rtol=1e-12)


def test_vjp_with_aux_and_weights():
    w = ms.Parameter(np.array([2.0, 3.0]), name="w")
    x = R.normal(size=(2,))

    def fn(t):
        return t * w, t.sum()

    out, vjp_fn, aux = ms.vjp(fn, T(x), weights=[w], has_aux=True)
    same(out, x * np.array([2.0, 3.0]))
    same(aux, x.sum())
    grads, weight_grads = vjp_fn(T(np.ones(2)))
    same(grads, np.array([2.0, 3.0]))
    same(weight_grads[0], x)


@pytest.mark.parametrize("transform", [ms.jacrev, ms.jacfwd])
def test_jacobians_match_finite_differences(transform):
    x, y = R.normal(size=(2, 3)), R.normal(size=(3,))
    jx = transform(_f)(T(x), T(y))
    np.testing.assert_allclose(jx.asnumpy(), _numeric_jacobian(_f_np, [x, y], 0), rtol=1e-6,
                               atol=1e-8)
    jx, jy = transform(_f, grad_position=(0, 1))(T(x), T(y))
    assert jy.shape == (2, 3, 3)
    np.testing.assert_allclose(jy.asnumpy(), _numeric_jacobian(_f_np, [x, y], 1), rtol=1e-6,
                               atol=1e-8)
    jac, aux = transform(lambda a: (ops.tanh(a), a.sum()), has_aux=True)(T(y))
    same(jac, np.diag(1 - np.tanh(y) ** 2), rtol=1e-10, atol=1e-12)
    same(aux, y.sum())
    with pytest.raises(TypeError, match="grad_position"):
        transform(_f, grad_position=-1)


def test_vmap_maps_axes_and_stacks_results():
    a, b = R.normal(size=(4, 3)), R.normal(size=(3,))
    same(ms.vmap(lambda p, q: (p * q).sum(), in_axes=(0, None))(T(a), T(b)), a @ b, rtol=1e-12)
    first, second = ms.vmap(lambda p: (p.sum(), p * 2), in_axes=1, out_axes=(0, 1))(T(a))
    same(first, a.sum(0), rtol=1e-12)
    same(second, a * 2)
    with pytest.raises(ValueError, match="one size"):
        ms.vmap(lambda p, q: p + q)(T(a), T(b))
    with pytest.raises(ValueError, match="in_axes"):
        ms.vmap(lambda p, q: p + q, in_axes=(0,))(T(a), T(b))


def test_top_level_aliases():
    pairs = [(ms.byte, ms.int8), (ms.ubyte, ms.uint8), (ms.short, ms.int16),
             (ms.intc, ms.int32), (ms.intp, ms.int64), (ms.half, ms.float16),
             (ms.single, ms.float32), (ms.double, ms.float64)]
    for alias, dtype in pairs:
        assert alias == dtype
    assert ms.ms_class is ms.jit_class and ms.constexpr is ops.constexpr
    assert ms.mint.sum is not None and "mint" in ms.__all__
