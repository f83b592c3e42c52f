"""uint16, uint32 and uint64: dtype objects, NumPy, buffer and DLPack interop, Python scalars
(uint64's whole range), arithmetic with NumPy's wraparound, MindSpore's rule that they mix with
no other integer type (floats and bool do mix), reductions, casts, creation, indexing, and
jitted graphs equal to eager ones. References are NumPy's results computed in the same dtype."""
import operator

import numpy as np
import pytest

import pijit as ms
from pijit import ops
from jit_testutil import _quiet_numpy  # noqa: F401 (autouse fixture: wraparound, x // 0)
from pijit_testutil import NP_DTYPES, MS_OF_NP

T = ms.Tensor
WIDE = [np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64)]
MS_WIDE = {np.dtype(np.uint16): ms.uint16, np.dtype(np.uint32): ms.uint32,
           np.dtype(np.uint64): ms.uint64}
ALL_MS = {**MS_OF_NP, **MS_WIDE}


@pytest.fixture
def rng():
    return np.random.default_rng(20261127)


def edge_array(rng, dtype, n=40):
    """Random values of `dtype` over its whole range, with 0, 1, 2 and the maximum among them."""
    info = np.iinfo(dtype)
    a = rng.integers(0, info.max, n, dtype=dtype, endpoint=True)
    a[:4] = [0, 1, 2, info.max]
    return a


def assert_exactly(t, expected):
    """`t` has the dtype, shape and values of NumPy's `expected` (no dtype adjustments)."""
    expected = np.asarray(expected)
    assert isinstance(t, ms.Tensor), type(t)
    got = t.asnumpy()
    assert got.dtype == expected.dtype, f"{t.dtype} != numpy {expected.dtype}"
    assert got.shape == expected.shape
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=1e-6, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


# ---- dtype objects and interop ----------------------------------------------------------------

@pytest.mark.parametrize("name, printed, size, alias", [
    ("uint16", "UInt16", 2, "ushort"), ("uint32", "UInt32", 4, "uintc"),
    ("uint64", "UInt64", 8, "uintp")])
def test_dtype_objects_print_like_mindspore_and_have_their_aliases(name, printed, size, alias):
    dt = getattr(ms, name)
    assert str(dt) == printed and dt.itemsize == size
    assert getattr(ms, alias) is dt and getattr(ms.dtype, name) is dt
    assert name in ms.__all__ and alias in ms.__all__ and name in ms.dtype.__all__
    assert ms.dtype_to_nptype(dt) is getattr(np, name)
    assert ms.pytype_to_dtype(getattr(np, name)) is dt
    assert ms.dtype_to_pytype(dt) is int
    assert f"dtype={printed}" in repr(T(np.array([1, 2], getattr(np, name))))


@pytest.mark.parametrize("dtype", WIDE, ids=str)
def test_numpy_arrays_lists_and_dtype_arguments_make_tensors(rng, dtype):
    a = edge_array(rng, dtype)
    t = T(a)
    assert t.dtype is MS_WIDE[dtype]
    assert_exactly(t, a)
    assert_exactly(T(a.tolist(), MS_WIDE[dtype]), a)
    assert_exactly(T(a, dtype=ms.float64), a.astype(np.float64))
    assert_exactly(T(np.array([1, 2], np.int64)).astype(MS_WIDE[dtype]), np.array([1, 2], dtype))
    assert_exactly(T(a[3]), np.array(a[3]))  # a NumPy scalar of the dtype


@pytest.mark.parametrize("dtype", WIDE, ids=str)
def test_item_tolist_buffer_and_dlpack_keep_the_whole_range(rng, dtype):
    a = edge_array(rng, dtype)
    t = T(a)
    top = int(np.iinfo(dtype).max)
    assert t[3].item() == top and type(t[3].item()) is int
    assert t.tolist() == [int(v) for v in a]
    np.testing.assert_array_equal(np.asarray(memoryview(t)), a)
    shared = np.from_dlpack(t)
    assert shared.dtype == dtype
    np.testing.assert_array_equal(shared, a)
    back = ms.from_dlpack(np.ascontiguousarray(a[::2]))
    assert back.dtype is MS_WIDE[dtype]
    assert_exactly(back, a[::2])


def test_python_integers_beyond_uint64_or_below_zero_are_overflow_errors():
    t = T(np.array([5], np.uint64))
    with pytest.raises(OverflowError, match="UInt64"):
        t + 2**64
    with pytest.raises(OverflowError, match="UInt32"):
        T(np.array([5], np.uint32)) + (-1)
    with pytest.raises(OverflowError, match="UInt16"):
        T(np.array([5], np.uint16)) * 70000


# ---- arithmetic ---------------------------------------------------------------------------------

BINARY = {
    "add": (operator.add, np.add), "sub": (operator.sub, np.subtract),
    "mul": (operator.mul, np.multiply), "floordiv": (operator.floordiv, np.floor_divide),
    "mod": (operator.mod, np.mod), "and": (operator.and_, np.bitwise_and),
    "or": (operator.or_, np.bitwise_or), "xor": (operator.xor, np.bitwise_xor),
    "maximum": (ops.maximum, np.maximum), "minimum": (ops.minimum, np.minimum),
    "lt": (operator.lt, np.less), "le": (operator.le, np.less_equal),
    "eq": (operator.eq, np.equal), "ne": (operator.ne, np.not_equal),
    "ge": (operator.ge, np.greater_equal), "gt": (operator.gt, np.greater),
}


@pytest.mark.parametrize("name", BINARY, ids=str)
@pytest.mark.parametrize("dtype", WIDE, ids=str)
def test_binary_ops_wrap_and_divide_as_numpy(rng, name, dtype):
    a, b = edge_array(rng, dtype), edge_array(rng, dtype)
    b[5], b[6] = 0, np.iinfo(dtype).max  # division by zero gives 0, as NumPy's; by all ones
    ours, numpys = BINARY[name]
    assert_exactly(ours(T(a), T(b)), numpys(a, b))


@pytest.mark.parametrize("dtype", WIDE, ids=str)
def test_true_division_and_power(rng, dtype):
    a, b = edge_array(rng, dtype), edge_array(rng, dtype)
    expected = a.astype(np.float32) / b.astype(np.float32)  # integers divide in float32
    assert_exactly(T(a) / T(b), expected)
    e = (b % 7).astype(dtype)
    assert_exactly(T(a) ** T(e), a ** e)


@pytest.mark.parametrize("dtype", WIDE, ids=str)
def test_unary_ops(rng, dtype):
    a = edge_array(rng, dtype)
    assert_exactly(-T(a), -a)  # wraps, as NumPy's
    assert_exactly(abs(T(a)), a)
    assert_exactly(~T(a), ~a)
    assert_exactly(ops.square(T(a)), np.square(a))
    assert_exactly(ops.sign(T(a)), np.sign(a))
    small = (a % 50).astype(dtype)
    assert_exactly(ops.exp(T(small)), np.exp(small.astype(np.float32)))
    assert_exactly(ops.sqrt(T(a)), np.sqrt(a.astype(np.float32)))


@pytest.mark.parametrize("dtype", WIDE, ids=str)
def test_python_scalars_are_weak(rng, dtype):
    a = edge_array(rng, dtype)
    assert_exactly(T(a) + 3, a + dtype.type(3))
    assert_exactly(T(a) * 2, a * dtype.type(2))
    assert_exactly(7 - T(a), dtype.type(7) - a)
    assert_exactly(T(a) * 0.5, a.astype(np.float32) * np.float32(0.5))
    assert_exactly(T(a) + True, a + dtype.type(1))
    # Comparisons with integers outside the range give what comparing the values does.
    assert_exactly(T(a) > -1, np.ones(a.shape, bool))
    assert_exactly(T(a) == -1, np.zeros(a.shape, bool))
    assert_exactly(T(a) / 2, a.astype(np.float32) / np.float32(2))


# ---- MindSpore's mixing rule --------------------------------------------------------------------

def mixes(a, b):
    """MindSpore's rule as pijit applies it: a wide unsigned dtype meets itself and bool;
    pijit also lets a float win (so that Python floats work); any other integer is refused."""
    wide = set(WIDE)
    if a == b or a == np.bool_ or b == np.bool_:
        return True
    return (a.kind == "f" or b.kind == "f") if (a in wide or b in wide) else True


@pytest.mark.parametrize("other", NP_DTYPES + WIDE, ids=str)
@pytest.mark.parametrize("dtype", WIDE, ids=str)
def test_mixing_with_every_other_dtype(rng, dtype, other):
    a = edge_array(rng, dtype, 6)
    b = (np.arange(6) % 2).astype(other)
    if not mixes(dtype, other):
        for op in (operator.add, operator.lt, lambda x, y: ops.where(x > 1, x, y),
                   lambda x, y: ops.concat([x, y]), ops.maximum):
            with pytest.raises(TypeError, match=f"{ALL_MS[dtype]} and {ALL_MS[other]} cannot be mixed"):
                op(T(a), T(b))
        return
    if other == np.bool_:
        expected = a + b.astype(dtype)
    elif other.kind == "f":
        expected = a.astype(other) + b
    else:
        expected = a + b
    assert_exactly(T(a) + T(b), expected)
    assert_exactly(T(b) + T(a), expected)
    assert_exactly(ops.concat([T(a), T(b)]), np.concatenate([a, b]).astype(expected.dtype))


# ---- reductions, casts, creation and indexing ---------------------------------------------------

@pytest.mark.parametrize("dtype", WIDE, ids=str)
def test_reductions(rng, dtype):
    a = edge_array(rng, dtype).reshape(5, 8)
    assert_exactly(T(a).sum(), a.sum(dtype=np.uint64))  # sums and products in uint64, as NumPy's
    assert_exactly(T(a).sum(axis=0), a.sum(axis=0, dtype=np.uint64))
    assert_exactly(T(a).prod(axis=1), a.prod(axis=1, dtype=np.uint64))
    assert_exactly(T(a).max(), a.max())
    assert_exactly(T(a).min(axis=1), a.min(axis=1))
    assert_exactly(T(a).argmax(axis=1), a.argmax(axis=1).astype(np.int64))
    assert_exactly(T(a).argmin(), np.array(a.argmin(), np.int64))
    assert_exactly(T(a).mean(axis=0), a.astype(np.float32).mean(axis=0))
    assert_exactly(T(a).cumsum(1), np.cumsum(a, 1, dtype=dtype))


@pytest.mark.parametrize("target", NP_DTYPES + WIDE, ids=str)
@pytest.mark.parametrize("dtype", WIDE, ids=str)
def test_casts_to_and_from_every_dtype(rng, dtype, target):
    a = edge_array(rng, dtype)
    assert_exactly(T(a).astype(ALL_MS[target]), a.astype(target))
    # From the other dtype: values the target holds exactly (casts out of range differ
    # between C's and NumPy's rules for floats, and are not compared).
    src = (np.arange(40) % 100).astype(target)
    assert_exactly(T(src).astype(MS_WIDE[dtype]), src.astype(dtype))


@pytest.mark.parametrize("dtype", WIDE, ids=str)
def test_creation_with_the_dtype(dtype):
    md = MS_WIDE[dtype]
    assert_exactly(ops.zeros((2, 3), md), np.zeros((2, 3), dtype))
    assert_exactly(ops.ones((4,), md), np.ones(4, dtype))
    assert_exactly(ops.full((2,), 7, dtype=md), np.full(2, 7, dtype))
    assert_exactly(ops.arange(0, 5, dtype=md), np.arange(5, dtype=dtype))
    assert_exactly(ops.zeros_like(T(np.ones(3, dtype))), np.zeros(3, dtype))
    assert_exactly(ops.fill(md, (2, 2), 9), np.full((2, 2), 9, dtype))


@pytest.mark.parametrize("dtype", WIDE, ids=str)
def test_indexing_layout_and_selection(rng, dtype):
    a = edge_array(rng, dtype).reshape(5, 8)
    t = T(a)
    assert_exactly(t[1:4, ::3], a[1:4, ::3])
    assert_exactly(t.T, a.T)
    assert_exactly(t.reshape(8, 5), a.reshape(8, 5))
    assert_exactly(ops.gather(t, T(np.array([3, 0, 3])), 1), a[:, [3, 0, 3]])
    assert_exactly(ops.stack([t, t]), np.stack([a, a]))
    assert_exactly(ops.broadcast_to(t[0], (3, 8)), np.broadcast_to(a[0], (3, 8)))
    assert_exactly(ops.where(t > 100, t, t * 0), np.where(a > 100, a, a * 0))
    values, _ = ops.topk(t, 3)
    assert_exactly(values, np.sort(a, axis=1)[:, ::-1][:, :3])
    assert_exactly(ops.Sort()(t)[0], np.sort(a, axis=-1))
    u = a.copy()
    u[0, 0] = np.iinfo(dtype).max - 1
    t2 = T(u)
    t2[1] = 5
    u[1] = 5
    assert_exactly(t2, u)


@pytest.mark.parametrize("dtype", WIDE, ids=str)
def test_index_arrays_of_the_dtype(rng, dtype):
    a = rng.standard_normal(7).astype(np.float32)
    idx = np.array([6, 0, 3], dtype)
    assert_exactly(T(a)[T(idx)], a[idx])
    assert_exactly(ops.gather(T(a), T(idx), 0), a[idx])
    with pytest.raises(IndexError, match="out of bounds"):
        T(a)[T(np.array([7], dtype))]


def test_uint64_indices_beyond_int64_are_out_of_bounds_not_counted_from_the_end():
    a = T(np.arange(5.0))
    for big in (2**64 - 1, 2**63):
        with pytest.raises(IndexError, match=f"index {big} is out of bounds"):
            a[T(np.array([big], np.uint64))]


# ---- jitted graphs ------------------------------------------------------------------------------

def mixed_program(a, b):
    c = (a * b + a) // (b | 1)
    d = ops.maximum(c, b) % 1000
    return d.sum(axis=0), (d > 7).astype(ms.float32) * 0.5 + d.astype(ms.float32)


@pytest.mark.parametrize("dtype", WIDE, ids=str)
def test_jitted_graphs_equal_eager_in_one_graph(rng, dtype):
    a, b = edge_array(rng, dtype).reshape(5, 8), edge_array(rng, dtype).reshape(5, 8)
    jf = ms.jit(mixed_program, mode="PIJit")
    ms.reset(jf)
    eager = mixed_program(T(a), T(b))
    for _ in range(2):
        got = jf(T(a), T(b))
        for g, e in zip(got, eager):
            assert g.dtype == e.dtype
            np.testing.assert_array_equal(g.asnumpy(), e.asnumpy())
    stats = ms.get_code_extra(jf)
    assert stats["break_count"] == 0 and stats["graph_count"] == 1
    assert f"%0: u{8 * dtype.itemsize}[5,8]" in stats["graphs"][0]


def test_jitted_mix_of_uint32_and_int32_is_the_eager_type_error():
    def f(a, b):
        return a + b
    jf = ms.jit(f, mode="PIJit")
    with pytest.raises(TypeError, match="UInt32 and Int32 cannot be mixed"):
        jf(T(np.array([1], np.uint32)), T(np.array([1], np.int32)))


def test_a_float_gradient_through_a_cast_uint32_tensor():
    u = T(np.array([3, 0, 7], np.uint32))

    def loss(x):
        return (x * u.astype(ms.float32)).sum()
    x = T(np.array([1.0, 2.0, 3.0], np.float32))
    np.testing.assert_array_equal(ms.grad(loss)(x).asnumpy(), np.array([3, 0, 7], np.float32))
    np.testing.assert_array_equal(ms.jit(ms.grad(loss))(x).asnumpy(),
                                  np.array([3, 0, 7], np.float32))


# ---- mindspore.numpy and checkpoints ------------------------------------------------------------

@pytest.mark.parametrize("dtype", WIDE, ids=str)
def test_mindspore_numpy_keeps_and_refuses_like_the_tensor_ops(rng, dtype):
    import pijit.numpy as mnp
    a, b = edge_array(rng, dtype, 8), edge_array(rng, dtype, 8)
    md = MS_WIDE[dtype]
    assert getattr(mnp, dtype.name) is md
    assert mnp.array(a).dtype is md  # unsigned data keeps its dtype
    assert mnp.array([1, 2], dtype=md).dtype is md
    assert_exactly(mnp.add(mnp.array(a), mnp.array(b)), a + b)
    assert_exactly(mnp.gcd(mnp.array(a), mnp.array(b)), np.gcd(a, b))
    assert mnp.promote_types(md, ms.float32) is ms.float32
    assert mnp.promote_types(md, ms.bool_) is md
    with pytest.raises(TypeError, match="cannot be mixed"):
        mnp.promote_types(md, ms.int64)


@pytest.mark.parametrize("dtype", WIDE, ids=str)
def test_checkpoints_store_the_whole_range(tmp_path, rng, dtype):
    a = edge_array(rng, dtype)
    path = str(tmp_path / "wide.ckpt")
    ms.save_checkpoint({"count": ms.Parameter(T(a), name="count")}, path)
    loaded = ms.load_checkpoint(path)["count"]
    assert loaded.dtype is MS_WIDE[dtype]
    assert_exactly(loaded, a)
