"""The first names real MindSpore models stop on: activations (LeakyReLU, ReLU6, HSwish,
HSigmoid), shape operations (split, tile, unstack, strided slices, pad, Tensor.view), the
primitives that wrap them (Split, Tile, Cast, Shape, Gather, BatchMatMul, Unstack,
StridedSlice, Pad, Depend), nn.Identity and nn.Pad, TruncatedNormal, and `mstype` as a
namespace of dtypes. Each is compared with a NumPy reference, eagerly and jitted, and each
differentiable one with central finite differences in float64."""
import numpy as np
import pytest

import pijit as ms
from pijit import dtype as mstype
from pijit import nn, ops
from pijit.common.initializer import TruncatedNormal, initializer

from gradcheck_util import check_weighted_gradient


def T(a, dtype=np.float64):
    return ms.Tensor(np.asarray(a, dtype=dtype))


def rng_array(shape, seed=0):
    return np.random.default_rng(seed).uniform(-4, 4, shape)


def check_eager_and_jit(fn, want, *args):
    got = fn(*args)
    jf = ms.jit(fn, capture_mode="bytecode")
    ms.reset(jf)
    for _ in range(2):
        jitted = jf(*args)
        for g, j, w in zip(_flat(got), _flat(jitted), _flat(want)):
            np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-6, atol=1e-12)
            np.testing.assert_array_equal(j.asnumpy(), g.asnumpy())
    s = ms.get_code_extra(jf)  # captured whole, not run eagerly
    assert s["total_break_count"] == 0 and s["eager_count"] == 0, s["all_reasons"]
    return jf


def _flat(v):
    return v if isinstance(v, (tuple, list)) else (v,)


def check_gradient(fn, x):
    """d(sum(fn(x) * w))/dx by pijit.grad against central differences (float64)."""
    w = rng_array(np.shape(fn(T(x)).asnumpy()), seed=9)
    check_weighted_gradient(fn, x, w, rtol=1e-6, atol=1e-6, to_tensor=T)


ACTIVATIONS = {
    "leaky_relu": (lambda t: ops.leaky_relu(t, 0.1), lambda a: np.where(a > 0, a, 0.1 * a)),
    "relu6": (ops.relu6, lambda a: np.minimum(np.maximum(a, 0), 6)),
    "hardsigmoid": (ops.hardsigmoid, lambda a: np.clip(a + 3, 0, 6) / 6),
    "hardswish": (ops.hardswish, lambda a: a * np.clip(a + 3, 0, 6) / 6),
    "LeakyReLU cell": (nn.LeakyReLU(0.3), lambda a: np.where(a > 0, a, 0.3 * a)),
    "ReLU6 cell": (nn.ReLU6(), lambda a: np.clip(a, 0, 6)),
    "HSwish cell": (nn.HSwish(), lambda a: a * np.clip(a + 3, 0, 6) / 6),
    "HSigmoid cell": (nn.HSigmoid(), lambda a: np.clip(a + 3, 0, 6) / 6),
    "ReLU6 primitive": (ops.ReLU6(), lambda a: np.clip(a, 0, 6)),
    "HSwish primitive": (ops.HSwish(), lambda a: a * np.clip(a + 3, 0, 6) / 6),
    "LeakyReLU primitive": (ops.LeakyReLU(0.2), lambda a: np.where(a > 0, a, 0.2 * a)),
    "Identity": (nn.Identity(), lambda a: a),
}


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activations_match_numpy_and_finite_differences(name):
    fn, ref = ACTIVATIONS[name]
    # Away from the kinks (0, -3, 3, 6), where the derivative jumps.
    a = rng_array((3, 5)) * 2.0
    a[np.abs(a[..., None] - np.array([0.0, -3.0, 3.0, 6.0])).min(-1) < 0.05] += 0.2
    check_eager_and_jit(lambda t: fn(t), ref(a), T(a))
    check_gradient(lambda t: fn(t), a)


def test_activation_names_resolve():
    for name, cls in [("leakyrelu", nn.LeakyReLU), ("relu6", nn.ReLU6), ("hswish", nn.HSwish),
                      ("hsigmoid", nn.HSigmoid)]:
        assert isinstance(nn.get_activation(name), cls)
    assert nn.Dense(3, 2, activation="relu6").activation_flag


@pytest.mark.parametrize("sections,axis", [(2, 0), (3, 1), ([1, 4], 1), ((2, 0, 3), -1), (5, 1)])
def test_split_matches_numpy(sections, axis):
    a = rng_array((4, 5))
    n = a.shape[axis]
    bounds = (list(range(sections, n, sections)) if isinstance(sections, int)
              else list(np.cumsum(sections)[:-1]))
    want = np.split(a, bounds, axis=axis)
    jf = check_eager_and_jit(lambda t: ops.split(t, sections, axis), want, T(a))
    assert len(jf(T(a))) == len(want)
    check_gradient(lambda t: ops.split(t, sections, axis)[-1] * 2.0, a)


def test_split_errors_name_the_problem():
    x = T(rng_array((4, 5)))
    with pytest.raises(ValueError, match=r"add up to 4, but axis 1 has 5"):
        ops.split(x, [1, 3], 1)
    with pytest.raises(ValueError, match="must be positive"):
        ops.split(x, 0)
    with pytest.raises(ValueError, match="axis must be an int"):
        ops.split(x, 2, 2)
    with pytest.raises(ValueError, match="equal pieces"):
        ops.Split(1, 2)(x)


def test_split_primitive_gives_equal_pieces():
    a = rng_array((4, 6))
    want = np.split(a, 3, axis=1)
    split3 = ops.Split(axis=1, output_num=3)
    check_eager_and_jit(lambda t: split3(t), want, T(a))


@pytest.mark.parametrize("reps", [(2, 3), (1, 1), (2,), (2, 1, 3), 3, (0, 2)])
def test_tile_matches_numpy(reps):
    a = rng_array((2, 3))
    check_eager_and_jit(lambda t: ops.tile(t, reps), np.tile(a, reps), T(a))
    tile_op = ops.Tile()
    check_eager_and_jit(lambda t: tile_op(t, reps), np.tile(a, reps), T(a))
    if np.prod(reps) > 0:
        check_gradient(lambda t: ops.tile(t, reps), a)


def test_unstack_strided_slice_view_and_friends():
    a = rng_array((3, 4, 5))
    check_eager_and_jit(lambda t: ops.unstack(t, 1), [a[:, i] for i in range(4)], T(a))
    unstack_op = ops.Unstack(axis=-1)
    check_eager_and_jit(lambda t: unstack_op(t), [a[..., i] for i in range(5)], T(a))
    check_gradient(lambda t: ops.unstack(t, 2)[3], a)
    check_eager_and_jit(lambda t: ops.strided_slice(t, (0, 1, 0), (3, 4, 5), (2, 1, 2)),
                        a[0:3:2, 1:4, 0:5:2], T(a))
    sliced = ops.StridedSlice(begin_mask=1, shrink_axis_mask=2)
    check_eager_and_jit(lambda t: sliced(t, (2, 1, 1), (3, 2, 4), (1, 1, 1)), a[:3, 1, 1:4], T(a))
    check_gradient(lambda t: ops.strided_slice(t, (0, 1, 0), (3, 4, 5), (2, 1, 2)), a)
    check_eager_and_jit(lambda t: t.view(4, 15), a.reshape(4, 15), T(a))
    check_eager_and_jit(lambda t: t.view((5, -1)), a.reshape(5, -1), T(a))
    check_eager_and_jit(lambda t: ops.depend(t * 2.0, t.sum()), a * 2.0, T(a))
    cast_op, gather_op = ops.Cast(), ops.Gather()
    check_eager_and_jit(lambda t: cast_op(t, mstype.float32), a.astype(np.float32), T(a))
    assert ops.Shape()(T(a)) == (3, 4, 5) and ops.shape(T(a)) == (3, 4, 5)
    idx = ms.Tensor(np.array([2, 0], np.int64))
    check_eager_and_jit(lambda t: gather_op(t, idx, 1), a[:, [2, 0]], T(a))
    with pytest.raises(NotImplementedError, match="ellipsis_mask"):
        ops.StridedSlice(ellipsis_mask=1)(T(a), (0,), (1,), (1,))


def test_batch_matmul_with_transposes():
    a, b = rng_array((2, 4, 3)), rng_array((2, 5, 4), seed=1)
    want = np.swapaxes(a, -1, -2) @ np.swapaxes(b, -1, -2)
    bmm = ops.BatchMatMul(transpose_a=True, transpose_b=True)
    check_eager_and_jit(lambda x, y: bmm(x, y), want, T(a), T(b))


@pytest.mark.parametrize("mode", ["CONSTANT", "REFLECT", "SYMMETRIC"])
def test_pad_matches_numpy(mode):
    a = rng_array((3, 4))
    paddings = ((1, 2), (2, 0))
    np_mode = {"CONSTANT": "constant", "REFLECT": "reflect", "SYMMETRIC": "symmetric"}[mode]
    want = np.pad(a, paddings, mode=np_mode)
    check_eager_and_jit(lambda t: ops.pad(t, paddings, mode), want, T(a))
    pad_cell = nn.Pad(paddings, mode)
    check_eager_and_jit(lambda t: pad_cell(t), want, T(a))
    check_gradient(lambda t: ops.pad(t, paddings, mode), a)
    if mode == "CONSTANT":
        pad_op = ops.Pad(paddings)
        check_eager_and_jit(lambda t: pad_op(t), want, T(a))
    with pytest.raises(ValueError, match="at most"):
        ops.pad(T(a), ((3, 0), (0, 0)), "REFLECT")


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
def test_pad_mirrors_whole_axis(mode):
    # The widest mirror each mode allows reaches the first and the last element.
    a = rng_array((3, 4))
    widest = 2 if mode == "REFLECT" else 3
    paddings = ((widest, widest), (widest, 1))
    want = np.pad(a, paddings, mode=mode.lower())
    check_eager_and_jit(lambda t: ops.pad(t, paddings, mode), want, T(a))
    check_gradient(lambda t: ops.pad(t, paddings, mode), a)


def test_truncated_normal_bounds_are_absolute_and_seeded():
    init = TruncatedNormal(sigma=1.0, mean=0.5, a=-0.5, b=1.0)
    ms.set_seed(3)
    w = initializer(init, (200, 50), ms.float32).asnumpy()
    assert w.dtype == np.float32 and w.min() >= -0.5 and w.max() <= 1.0
    ms.set_seed(3)
    np.testing.assert_array_equal(init((200, 50), ms.float32).asnumpy(), w)
    # A normal of sigma 1 around 0.5 cut to [-0.5, 1]: its mean is known in closed form.
    from math import erf, exp, pi, sqrt
    pdf = lambda z: exp(-z * z / 2) / sqrt(2 * pi)  # noqa: E731
    cdf = lambda z: 0.5 * (1 + erf(z / sqrt(2)))  # noqa: E731
    lo, hi = -1.0, 0.5
    mean = 0.5 + (pdf(lo) - pdf(hi)) / (cdf(hi) - cdf(lo))
    assert abs(w.mean() - mean) < 0.02
    default = initializer(TruncatedNormal(), (100,), ms.float32).asnumpy()
    assert np.abs(default).max() <= 2.0 and default.std() < 0.02
    assert isinstance(initializer("truncatednormal", (2, 2)), ms.Tensor)
    with pytest.raises(ValueError, match="must be below"):
        TruncatedNormal(a=1.0, b=0.0)


def test_mstype_is_a_namespace_of_dtypes():
    assert mstype.float32 == ms.float32 and mstype.int64 == ms.int64 and mstype.bool_ == ms.bool_
    x = ms.Tensor(np.ones(3), mstype.float16)
    assert x.dtype == mstype.float16
    assert mstype.dtype_to_nptype(mstype.int32) is np.int32
    assert ms.dtype_to_nptype(mstype.float64) is np.float64
    assert mstype.pytype_to_dtype(float) == mstype.float32
    assert mstype.pytype_to_dtype(np.uint8) == mstype.uint8
    assert ms.dtype_to_pytype(mstype.int8) is int and ms.dtype_to_pytype(mstype.bool_) is bool
    with pytest.raises(TypeError, match="expected a pijit dtype"):
        mstype.dtype_to_nptype(np.float32)


def test_astype_inside_captured_code_is_a_cast_with_its_gradient():
    def f(x):
        return (x.astype(mstype.float32) * 2.0).astype(ms.float64).sum()

    a = rng_array((2, 3))
    jf = ms.jit(f, capture_mode="bytecode")
    ms.reset(jf)
    np.testing.assert_array_equal(jf(T(a)).asnumpy(), f(T(a)).asnumpy())
    s = ms.get_code_extra(jf)
    assert s["total_break_count"] == 0 and "cast" in s["graphs"][0]
    g_eager = ms.grad(f)(T(a)).asnumpy()
    g_jit = ms.jit(ms.grad(f), capture_mode="bytecode")(T(a)).asnumpy()
    np.testing.assert_array_equal(g_jit, g_eager)
    np.testing.assert_array_equal(g_eager, np.full((2, 3), 2.0))


class Attention(nn.Cell):
    """q @ k^T through primitives with attributes, as BERT-style code writes it."""

    def __init__(self):
        super().__init__()
        self.matmul_t = ops.MatMul(transpose_b=True)
        self.batch_matmul = ops.BatchMatMul(transpose_b=True)
        self.act = nn.HSwish()

    def construct(self, q, k):
        return self.act(self.matmul_t(q, k)) + self.batch_matmul(q[None], k[None])[0]


def test_primitives_with_attributes_capture_in_one_graph():
    q, k = T(rng_array((3, 4))), T(rng_array((5, 4), seed=2))
    net = Attention()
    want = net(q, k)
    qn, kn = q.asnumpy(), k.asnumpy()
    ref = qn @ kn.T
    np.testing.assert_allclose(want.asnumpy(), ref * np.clip(ref + 3, 0, 6) / 6 + ref, rtol=1e-12)
    jf = ms.jit(net.construct, capture_mode="bytecode")
    np.testing.assert_array_equal(jf(q, k).asnumpy(), want.asnumpy())
    s = ms.get_code_extra(jf)
    assert s["graph_count"] == 1 and s["total_break_count"] == 0, s["all_reasons"]


def test_more_mindspore_names():
    a = rng_array((2, 3, 4))
    x = T(a)
    fill_ref = np.full((2, 2), 1.5, np.float32)
    np.testing.assert_array_equal(ops.fill(mstype.float32, (2, 2), 1.5).asnumpy(), fill_ref)
    add_n = ops.AddN()
    check_eager_and_jit(lambda t: ops.addn([t, t * 2.0, t]), a * 4.0, x)
    check_eager_and_jit(lambda t: add_n((t, t)), a * 2.0, x)
    check_gradient(lambda t: ops.addn([t, t * t]), a)
    with pytest.raises(ValueError, match="every input must have shape"):
        ops.addn([x, x[0]])
    slicer = ops.Slice()
    check_eager_and_jit(lambda t: ops.slice(t, (0, 1, 1), (-1, 2, 3)), a[:, 1:3, 1:4], x)
    check_eager_and_jit(lambda t: slicer(t, (1, 0, 0), (1, -1, 2)), a[1:2, :, 0:2], x)
    check_gradient(lambda t: ops.slice(t, (0, 1, 1), (2, 2, 2)), a)
    check_eager_and_jit(lambda t: t.amin(axis=1), a.min(axis=1), x)
    check_eager_and_jit(lambda t: t.amax(axis=(0, 2), keepdims=True),
                        a.max(axis=(0, 2), keepdims=True), x)
    tensor_add = ops.TensorAdd()
    check_eager_and_jit(lambda t: tensor_add(t, t), a * 2.0, x)
    # Python-level Tensor methods: eager, and jitted as Python between graphs.
    np.testing.assert_array_equal(x.swapaxes(0, 2).asnumpy(), np.swapaxes(a, 0, 2))
    np.testing.assert_array_equal(x.permute(2, 0, 1).asnumpy(), np.transpose(a, (2, 0, 1)))
    np.testing.assert_array_equal(x.permute((1, 0, 2)).asnumpy(), np.transpose(a, (1, 0, 2)))
    swapped = x.swapaxes(0, 1)
    assert not swapped.is_contiguous() and swapped.contiguous().is_contiguous()
    np.testing.assert_array_equal(swapped.contiguous().asnumpy(), np.swapaxes(a, 0, 1))
    assert x.contiguous() is x
    assert x.to(mstype.float32).dtype == mstype.float32
    assert ms.tensor([1, 2]).dtype == ms.int64 and ops.TensorAdd is ops.Add


def test_dense_dtype_assign_and_print_primitives(capsys):
    a, w, b = rng_array((2, 3)), rng_array((4, 3), seed=3), rng_array((4,), seed=4)
    check_eager_and_jit(lambda x, wt, bs: ops.dense(x, wt, bs), a @ w.T + b, T(a), T(w), T(b))
    check_eager_and_jit(lambda x, wt: ops.dense(x, wt), a @ w.T, T(a), T(w))
    check_gradient(lambda x: ops.dense(x, T(w), T(b)), a)
    assert ops.DType()(T(a)) == ms.float64
    p = ms.Parameter(T(np.zeros(3)), name="p")
    ops.AssignAdd()(p, T(np.ones(3)))
    ops.AssignAdd()(p, T(np.ones(3)))
    ops.AssignSub()(p, T(np.full(3, 0.5)))
    np.testing.assert_array_equal(p.asnumpy(), [1.5, 1.5, 1.5])
    t = T(np.zeros(2))
    assert t.assign_value(T([1.0, 2.0])) is t
    np.testing.assert_array_equal(t.asnumpy(), [1.0, 2.0])
    ops.Print()("value", 3)
    assert capsys.readouterr().out == "value 3\n"


def test_cell_dict_registers_cells_in_order():
    ms.set_seed(1)
    d = nn.CellDict({"act": nn.ReLU(), "fc": nn.Dense(3, 2)})
    d["out"] = nn.Dense(2, 1)
    assert list(d.keys()) == ["act", "fc", "out"] and len(d) == 3 and "fc" in d
    names = [p.name for p in d.get_parameters()]
    assert names == ["fc.weight", "fc.bias", "out.weight", "out.bias"]
    x = T(rng_array((4, 3))).astype(ms.float32)
    y = x
    for _, cell in d.items():
        y = cell(y)
    assert y.shape == (4, 1)
    assert d.pop("act").__class__ is nn.ReLU and list(d) == ["fc", "out"]
    with pytest.raises(TypeError, match="values must be Cells"):
        d["bad"] = 3
    with pytest.raises(TypeError, match="keys must be str"):
        d[1] = nn.ReLU()
    with pytest.raises(NotImplementedError, match="container"):
        d(x)
