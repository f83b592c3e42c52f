"""Every new op captured by @pijit.jit(mode="PIJit"): one compile, no reasons, the eager
result (random ops: the same draws from the same seed)."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops
from pijit_testutil import assert_same_result

X = np.linspace(-2.0, 3.0, 12, dtype=np.float32).reshape(3, 4)
Y = np.linspace(1.0, 4.0, 4, dtype=np.float32)
B = X > 0

# name -> the expression a captured function returns (of tensors x and y)
CASES = {
    "pow": 'ops.pow(x, y)',
    "maximum": 'ops.maximum(x, y)',
    "minimum": 'ops.minimum(x, 0.5)',
    "floor_divide": 'ops.floor_divide(x, y)',
    "remainder": 'ops.remainder(x, 1.5)',
    "equal": 'ops.equal(x, y)',
    "not_equal": 'ops.not_equal(x, 1.0)',
    "less": 'ops.less(x, y)',
    "less_equal": 'ops.less_equal(x, y)',
    "greater": 'ops.greater(x, 0)',
    "greater_equal": 'ops.greater_equal(x, y)',
    "logical_and": 'ops.logical_and(x, y)',
    "logical_or": 'ops.logical_or(x, False)',
    "logical_xor": 'ops.logical_xor(x, y)',
    "logical_not": 'ops.logical_not(x)',
    "bitwise_and": 'ops.bitwise_and(ops.greater(x, 0), ops.less(x, y))',
    "where": 'ops.where(ops.greater(x, y), x, 0.0)',
    "clip": 'ops.clip(x, -1.0, y)',
    "clamp_method": 'x.clamp(min=0.0)',
    "abs": 'ops.abs(x)',
    "sign": 'x.sign()',
    "sqrt": 'ops.sqrt(y)',
    "rsqrt": 'ops.rsqrt(y)',
    "sin": 'ops.sin(x)',
    "cos": 'x.cos()',
    "tanh": 'ops.tanh(x)',
    "sigmoid": 'ops.sigmoid(x)',
    "gelu": 'ops.gelu(x)',
    "softplus": 'ops.softplus(x)',
    "erf": 'ops.erf(x)',
    "square": 'ops.square(x)',
    "max": 'ops.amax(x, 1)',
    "max_with_indices": 'ops.max(x, 1, keepdims=True)',
    "min": 'x.min(axis=0, keepdims=True)',
    "prod": 'ops.prod(x, -1)',
    "all": 'ops.all(ops.greater(x, -5))',
    "any": 'ops.any(ops.greater(x, y), 0)',
    "argmax": 'ops.argmax(x, 1)',
    "argmin": 'x.argmin()',
    "var": 'ops.var(x, 0, ddof=1)',
    "std": 'x.std(axis=1, keepdims=True)',
    "softmax": 'ops.softmax(x, 0)',
    "log_softmax": 'ops.log_softmax(x)',
    "squeeze": 'ops.squeeze(ops.unsqueeze(x, 0))',
    "expand_dims": 'ops.expand_dims(y, -1)',
    "broadcast_to": 'ops.broadcast_to(y, (2, 3, 4))',
    "flatten": 'ops.flatten(x)',
    "getitem_method": "(x.__getitem__(1), x.__getitem__((..., -1, None)))",
    "zeros": 'ops.zeros((2, 3))',
    "ones": 'ops.ones((2,), ms.int32)',
    "full": 'ops.full((2, 2), 1.5)',
    "zeros_like": 'ops.zeros_like(x)',
    "ones_like": 'ops.ones_like(y, dtype=ms.float64)',
    "full_like": 'ops.full_like(x, 7)',
    "arange": 'ops.arange(1, 7, 2)',
    "linspace": 'ops.linspace(0.0, 1.0, 5)',
    "eye": 'ops.eye(3, 4)',
}


def _function(expr, params="x, y"):
    """A plain function returning `expr`: its own code object, with ops inline (calls of
    Python helpers are not inlined by capture yet)."""
    namespace = {}
    exec(f"def f({params}):\n    return {expr}\n", {"ops": ops, "ms": ms}, namespace)
    return namespace["f"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_new_op_is_captured_once_and_matches_eager(name):
    x = ms.Tensor(B) if name.startswith("logical") else ms.Tensor(X)
    y = ms.Tensor(Y > 2) if name in ("logical_and", "logical_xor") else ms.Tensor(Y)
    f = _function(CASES[name])
    eager = f(x, y)
    jitted = ms.jit(f, mode="PIJit")
    first, second = jitted(x, y), jitted(x, y)
    assert_same_result(first, eager)
    assert_same_result(second, eager)
    stats = ms.get_code_extra(jitted)
    assert stats["compile_count"] == 1, stats
    assert stats["reasons"] == [], stats["reasons"]
    assert stats["cache_hits"] == 1


@pytest.mark.parametrize("draw", [
    "ops.rand(2, 3)", "ops.randn((4,), dtype=ms.float64)", "ops.uniform((3,), -2.0, 2.0)",
    "ops.normal((3,), 1.0, 0.1)", "ops.rand(3, seed=9)",
])
def test_random_ops_capture_and_draw_like_eager(draw):
    f = _function(f"(x + 0, {draw})", "x")
    x = ms.Tensor(np.zeros(1))
    ms.set_seed(77)
    eager = [f(x)[1] for _ in range(3)]
    jitted = ms.jit(f, mode="PIJit")
    ms.set_seed(77)
    captured = [jitted(x)[1] for _ in range(3)]
    for a, b in zip(eager, captured):
        assert_same_result(a, b)
    stats = ms.get_code_extra(jitted)
    assert stats["compile_count"] == 1 and stats["reasons"] == []


def test_captured_op_errors_match_eager_errors():
    def f(x):
        return ops.squeeze(x, 0)
    x = ms.Tensor(np.ones((2, 3)))
    with pytest.raises(ValueError) as eager:
        f(x)
    with pytest.raises(ValueError) as jitted:
        ms.jit(f, mode="PIJit")(x)
    assert str(eager.value) == str(jitted.value)
