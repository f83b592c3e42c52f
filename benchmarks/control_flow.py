"""Control flow on tensor values compiled into the graph (capture_mode="ast": cond and
while_loop nodes, graph/control_flow.h), against running the same Python eagerly.

Workloads (float32, the machine's default threads):
1. while: a (4096,) vector scaled by 1.01 until its sum passes a limit (about 70 trips),
   one call; pijit eager, pijit.jit, NumPy's loop, and JAX's `lax.while_loop` under `jit`
   when JAX is installed.
2. for over range(tensor): 50 trips of x = tanh(x @ w) + x on (64, 64); the same peers with
   `lax.fori_loop`.
3. cond: `if x.sum() > 0: ... else: ...` on (256, 256) (one way a few ops): pijit eager,
   pijit.jit, NumPy, `lax.cond` under `jit`.
4. The gradient of workload 2's loss through the loop: pijit.grad eager and jitted, and
   `jax.grad` under `jit`.

Prints medians (ms, or us for small calls) and each one's ratio to pijit.jit, measured in
the same run.
"""
import statistics
import timeit

import numpy as np

import pijit as ms
from pijit import ops

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # the JAX rows are left out
    jax = None


def median_ms(fn, number, repeat=9):
    fn()
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


def scale_until(x, limit):
    while x.sum() < limit:
        x = x * 1.01
    return x


def scale_until_np(x, limit):
    while x.sum() < limit:
        x = x * np.float32(1.01)
    return x


def residual_steps(x, w, n):
    for _ in range(n):
        x = ops.tanh(ops.matmul(x, w)) + x
    return x


def residual_steps_np(x, w, n):
    for _ in range(n):
        x = np.tanh(x @ w) + x
    return x


def choose(x):
    if x.sum() > 0:
        y = ops.exp(x * 0.01) * 2 + x
    else:
        y = x - 1
    return y


def choose_np(x):
    return np.exp(x * np.float32(0.01)) * 2 + x if x.sum() > 0 else x - 1


def report(title, unit, rows):
    jit_time = dict(rows)["pijit.jit"]
    print(f"{title} ({unit}, median)")
    for name, value in rows:
        print(f"  {name:<22} {value:10.3f}   {value / jit_time:6.2f}x pijit.jit")


def main():
    rng = np.random.default_rng(0)
    x_np = np.full(4096, 1.0, np.float32)
    limit = 8192.0
    x, lim = ms.Tensor(x_np), ms.Tensor(np.float32(limit))
    jitted = ms.jit(scale_until, capture_mode="ast")
    rows = [("pijit.jit", median_ms(lambda: jitted(x, lim), 20)),
            ("pijit eager", median_ms(lambda: scale_until(x, lim), 5)),
            ("numpy", median_ms(lambda: scale_until_np(x_np, limit), 20))]
    if jax:
        f = jax.jit(lambda x, l: jax.lax.while_loop(lambda v: v.sum() < l, lambda v: v * 1.01, x))
        xj = jnp.asarray(x_np)
        rows.append(("jax lax.while_loop", median_ms(lambda: f(xj, limit).block_until_ready(), 20)))
    report("1. while on a tensor, ~70 trips over (4096,)", "ms", rows)

    xs = (rng.standard_normal((64, 64)) * 0.1).astype(np.float32)
    ws = (rng.standard_normal((64, 64)) * 0.1).astype(np.float32)
    x, w, n = ms.Tensor(xs), ms.Tensor(ws), ms.Tensor(50, ms.int32)
    jitted = ms.jit(residual_steps, capture_mode="ast")
    rows = [("pijit.jit", median_ms(lambda: jitted(x, w, n), 20)),
            ("pijit eager", median_ms(lambda: residual_steps(x, w, n), 5)),
            ("numpy", median_ms(lambda: residual_steps_np(xs, ws, 50), 20))]
    if jax:
        f = jax.jit(lambda x, w, n: jax.lax.fori_loop(0, n, lambda i, v: jnp.tanh(v @ w) + v, x))
        xj, wj = jnp.asarray(xs), jnp.asarray(ws)
        rows.append(("jax lax.fori_loop", median_ms(lambda: f(xj, wj, 50).block_until_ready(), 20)))
    report("2. for i in range(tensor), 50 trips of tanh(x @ w) + x on (64, 64)", "ms", rows)

    cs = rng.standard_normal((256, 256)).astype(np.float32)
    c = ms.Tensor(cs)
    jitted = ms.jit(choose, capture_mode="ast")
    rows = [("pijit.jit", median_ms(lambda: jitted(c), 500) * 1e3),
            ("pijit eager", median_ms(lambda: choose(c), 200) * 1e3),
            ("numpy", median_ms(lambda: choose_np(cs), 500) * 1e3)]
    if jax:
        f = jax.jit(lambda x: jax.lax.cond(x.sum() > 0, lambda v: jnp.exp(v * 0.01) * 2 + v, lambda v: v - 1, x))
        cj = jnp.asarray(cs)
        rows.append(("jax lax.cond", median_ms(lambda: f(cj).block_until_ready(), 500) * 1e3))
    report("3. if on a tensor, (256, 256)", "us", rows)

    def loss(x, w, n):
        return (residual_steps(x, w, n) ** 2).sum()

    grad = ms.grad(loss, grad_position=(0, 1))
    jitted = ms.jit(lambda x, w, n: grad(x, w, n), capture_mode="ast")
    x, w = ms.Tensor(xs), ms.Tensor(ws)
    rows = [("pijit.jit", median_ms(lambda: jitted(x, w, n), 10)),
            ("pijit eager", median_ms(lambda: grad(x, w, n), 3))]
    if jax:
        def jloss(x, w):
            return (jax.lax.fori_loop(0, 50, lambda i, v: jnp.tanh(v @ w) + v, x) ** 2).sum()
        f = jax.jit(jax.grad(jloss, argnums=(0, 1)))
        xj, wj = jnp.asarray(xs), jnp.asarray(ws)
        rows.append(("jax grad fori_loop", median_ms(lambda: [a.block_until_ready() for a in f(xj, wj)], 10)))
    report("4. gradient through workload 2's loop", "ms", rows)


if __name__ == "__main__":
    main()
