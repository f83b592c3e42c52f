"""pijit quickstart: the same function run eagerly and jitted, with timings and explain()."""
import statistics
import timeit

import numpy as np

import pijit as ms
from pijit import ops


def mlp_layer(x, w, b):
    """One dense layer with a ReLU and a scaled residual."""
    h = ops.relu(ops.matmul(x, w) + b)
    return h * 0.5 + x.sum(axis=1, keepdims=True) / 64.0


jitted = ms.jit(mlp_layer, mode="PIJit")

rng = np.random.default_rng(0)
x = ms.Tensor(rng.standard_normal((64, 64)), ms.float32)
w = ms.Tensor(rng.standard_normal((64, 64)), ms.float32)
b = ms.Tensor(rng.standard_normal((64,)), ms.float32)

eager_out = mlp_layer(x, w, b)
jit_out = jitted(x, w, b)
np.testing.assert_allclose(jit_out.asnumpy(), eager_out.asnumpy(), rtol=1e-6, atol=1e-6)
print("jitted result equals eager result:", jit_out.shape, jit_out.dtype)


def median_us(fn):
    return statistics.median(timeit.repeat(fn, number=2000, repeat=7)) / 2000 * 1e6


print(f"eager : {median_us(lambda: mlp_layer(x, w, b)):8.2f} us per call")
print(f"jitted: {median_us(lambda: jitted(x, w, b)):8.2f} us per call")
stats = ms.get_code_extra(jitted)
print(f"compiles: {stats['compile_count']}, cache hits: {stats['cache_hits']}")
print()
print("pijit.explain(mlp_layer, x, w, b):")
print(ms.explain(jitted, x, w, b))
print()


def with_break(x):
    y = x * 2.0
    print("  (a print is replayed after the graph, in order)")
    y = ms.Tensor(y.asnumpy())  # NumPy in the middle: the graph breaks here, and explain says why
    return y + 1.0


print(ms.explain(with_break, x))
