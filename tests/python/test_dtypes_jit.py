"""Captured graphs over the small dtypes: jitted results equal eager ones exactly (graphs of
dtypes other than float32/float64 are never fused, so the same eager kernels run), the graph
prints the IR short names, and a changed dtype recompiles."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops
from fusion_testutil import fresh_jit
from pijit_testutil import assert_same_result

NEW = [ms.float16, ms.bfloat16, ms.int8, ms.int16, ms.uint8]
SHORT = {ms.float16: "f16", ms.bfloat16: "bf16", ms.int8: "i8", ms.int16: "i16", ms.uint8: "u8"}


def elementwise_chain(a, b):
    return (a * b + a) - b * 2


def mixed(a, b):
    c = ops.maximum(a, b) * 3
    return c.sum(0), (c > 1), ops.where(a > b, a, b), c.reshape(-1)[::2]


def float_math(a, b):
    return ops.exp(a * 0.25) + ops.relu(b) / (ops.abs(a) + 1), ops.softmax(a, -1), a @ b.transpose(1, 0)


def int_math(a, b):
    return a // (b | 1), a % 7, -a, ops.clip(a * b, -50, 50), a.astype(ms.float32).mean(1)


def inputs(md, seed=0):
    rng = np.random.default_rng(seed)
    vals = rng.integers(0 if md == ms.uint8 else -9, 10, size=(2, 3, 4))
    return [ms.Tensor(v.astype(np.float32)).astype(md) for v in vals]


def assert_jit_equals_eager(fn, args):
    jf = fresh_jit(fn)
    for _ in range(2):  # the capturing call, then a cache hit
        assert_same(jf(*args), fn(*args))
    return jf


def assert_same(a, b):
    """Exactly equal tensors (bfloat16 compared through float32, which holds it exactly)."""
    if isinstance(a, tuple):
        for x, y in zip(a, b):
            assert_same(x, y)
        return
    assert a.dtype == b.dtype and a.shape == b.shape
    wide = ms.float32 if a.dtype == ms.bfloat16 else a.dtype
    np.testing.assert_array_equal(a.astype(wide).asnumpy(), b.astype(wide).asnumpy())


@pytest.mark.parametrize("md", NEW, ids=str)
@pytest.mark.parametrize("fn", [elementwise_chain, mixed], ids=lambda f: f.__name__)
def test_jitted_matches_eager_for_every_new_dtype(md, fn):
    jf = assert_jit_equals_eager(fn, inputs(md))
    graph = ms.get_code_extra(jf)["graphs"][0]
    assert SHORT[md] + "[" in graph
    assert "fused(" not in graph  # fused kernels are float32/float64 only


@pytest.mark.parametrize("md", [ms.float16, ms.bfloat16], ids=str)
def test_jitted_float_math_of_half_floats_matches_eager(md):
    assert_jit_equals_eager(float_math, inputs(md))


@pytest.mark.parametrize("md", [ms.int8, ms.int16, ms.uint8], ids=str)
def test_jitted_integer_math_wraps_like_eager(md):
    assert_jit_equals_eager(int_math, inputs(md))


def test_float32_chain_still_fuses():
    jf = fresh_jit(elementwise_chain)
    a, b = inputs(ms.float32)
    assert_same_result(jf(a, b), elementwise_chain(a, b))
    assert "fused(" in ms.get_code_extra(jf)["graphs"][0]


def test_a_changed_dtype_recompiles_and_each_dtype_keeps_its_graph():
    jf = fresh_jit(elementwise_chain)
    for i, md in enumerate([ms.float32, ms.float16, ms.bfloat16, ms.int8, ms.uint8]):
        args = inputs(md)
        assert_same(jf(*args), elementwise_chain(*args))
        assert ms.get_code_extra(jf)["compile_count"] == i + 1
    before = ms.get_code_extra(jf)["compile_count"]
    for md in [ms.int8, ms.float16, ms.bfloat16]:
        assert_same(jf(*inputs(md, seed=1)), elementwise_chain(*inputs(md, seed=1)))
    assert ms.get_code_extra(jf)["compile_count"] == before


def test_out_of_range_python_int_raises_the_same_error_under_jit():
    def f(a):
        return a + 300

    a = ms.Tensor(np.ones(3, np.int8))
    with pytest.raises(OverflowError, match="out of bounds for Int8"):
        f(a)
    with pytest.raises(OverflowError, match="out of bounds for Int8"):
        fresh_jit(f)(a)
