"""Central finite differences, the reference that the gradient tests compare pijit.grad with."""
import numpy as np

import pijit as ms


def central_differences(f, x, eps=1e-6):
    """The gradient at the array `x` of `f`, a function of one array giving a scalar: one
    pair of evaluations per element, each element moved by +-eps."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


def tensor_central_differences(loss, x, eps=1e-6, to_tensor=ms.Tensor):
    """central_differences of `loss`, a function of one Tensor giving a scalar Tensor; the
    array `x` and its moved copies reach it through `to_tensor`."""
    return central_differences(lambda a: float(loss(to_tensor(a)).asnumpy()), x, eps)


def check_weighted_gradient(fn, x, w, rtol, atol, to_tensor=ms.Tensor):
    """pijit.grad of sum(fn(x) * w) at the array `x` against central differences; the fixed
    weights `w` make every output element count differently."""
    def loss(t):
        return (fn(t) * to_tensor(w)).sum()

    got = ms.grad(loss)(to_tensor(x)).asnumpy()
    want = tensor_central_differences(loss, x, to_tensor=to_tensor)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def check_input_gradient(loss, x, rtol=1e-6, atol=1e-7):
    """pijit.grad of `loss` (a function of one Tensor giving a scalar Tensor) at the array `x`
    against central differences, and the jitted gradient equal to the eager one."""
    got = ms.grad(loss)(ms.Tensor(x)).asnumpy()
    np.testing.assert_allclose(got, tensor_central_differences(loss, x), rtol=rtol, atol=atol)
    jitted = ms.jit(ms.grad(loss))(ms.Tensor(x)).asnumpy()
    np.testing.assert_allclose(jitted, got, rtol=1e-10, atol=1e-12)
