"""Shape ops (squeeze, unsqueeze, broadcast_to, flatten, concat, stack), basic indexing views,
creation functions, the seeded generator and Tensor conveniences, against NumPy."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops
from ms_dtypes import result_dtype
from pijit_testutil import MS_OF_NP, NP_DTYPES, assert_matches_numpy, random_array


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def shares_storage(view, base):
    return np.shares_memory(view.asnumpy(), base.asnumpy())


# ---- squeeze / unsqueeze / broadcast_to / flatten ----------------------------------------------

@pytest.mark.parametrize("shape,axis", [((1, 3, 1), None), ((1, 3, 1), 0), ((1, 3, 1), -1),
                                        ((1, 3, 1), (0, 2)), ((), None), ((2, 3), None)], ids=str)
def test_squeeze_matches_numpy_and_is_a_view(rng, shape, axis):
    a = np.asarray(random_array(rng, shape, np.float32))
    t = ms.Tensor(a)
    out = ops.squeeze(t, axis)
    assert_matches_numpy(out, np.squeeze(a, axis))
    assert t.squeeze(axis).shape == np.squeeze(a, axis).shape
    if a.size:
        assert shares_storage(out, t)


def test_squeeze_of_non_unit_axis_names_shape():
    with pytest.raises(ValueError, match=r"squeeze: cannot remove axis 1 of size 3 from a tensor of shape \(1, 3\)"):
        ops.squeeze(ms.Tensor(np.ones((1, 3))), 1)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("dtype", NP_DTYPES, ids=str)
def test_unsqueeze_and_expand_dims(rng, axis, dtype):
    a = random_array(rng, (2, 3), dtype)
    assert_matches_numpy(ops.unsqueeze(ms.Tensor(a), axis), np.expand_dims(a, axis))
    assert_matches_numpy(ms.Tensor(a).expand_dims(axis), np.expand_dims(a, axis))
    assert_matches_numpy(ops.expand_dims(ms.Tensor(np.array(1.5)), 0), np.array([1.5]))
    with pytest.raises(ValueError, match="unsqueeze: axis 3 is out of bounds for a tensor of dimension 3"):
        ops.unsqueeze(ms.Tensor(a), 3)


@pytest.mark.parametrize("src,dst", [((3,), (2, 3)), ((2, 1), (2, 4)), ((), (0, 2)),
                                     ((1, 3), (2, -1)), ((2, 3), (2, 3))], ids=str)
def test_broadcast_to_is_a_stride_zero_view(rng, src, dst):
    a = random_array(rng, src, np.int32)
    t = ops.broadcast_to(ms.Tensor(a), dst)
    np_dst = tuple(s if s != -1 else a.shape[i - (len(dst) - len(src))] for i, s in enumerate(dst))
    assert_matches_numpy(t, np.broadcast_to(a, np_dst))
    assert_matches_numpy(ms.Tensor(a).broadcast_to(*dst) if len(dst) > 1 else t, np.broadcast_to(a, np_dst))
    with pytest.raises(ValueError, match=r"broadcast_to: cannot broadcast a tensor of shape \(3,\) to shape \(4,\)"):
        ops.broadcast_to(ms.Tensor(np.ones(3)), (4,))


@pytest.mark.parametrize("shape,start,end", [((2, 3, 4), 0, -1), ((2, 3, 4), 1, 2),
                                             ((2, 3, 4), 0, 0), ((), 0, -1), ((0, 3), 0, 1)], ids=str)
def test_flatten(rng, shape, start, end):
    a = np.asarray(random_array(rng, shape, np.float64))
    t = ms.Tensor(a)
    s = len(shape) and (start % len(shape))
    e = len(shape) and (end % len(shape))
    expected = a.reshape(a.shape[:s] + (-1,) + a.shape[e + 1:]) if shape else a.reshape(1)
    assert_matches_numpy(ops.flatten(t, start, end), expected)
    assert_matches_numpy(t.flatten(start_dim=start, end_dim=end), expected)
    assert_matches_numpy(ms.Tensor(a.T).flatten() if a.ndim else t.flatten(), a.T.flatten())


def test_flatten_primitive_keeps_batch_axis():
    t = ms.Tensor(np.ones((2, 3, 4)))
    assert ops.Flatten()(t).shape == (2, 12)


# ---- concat / stack ------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_promotes_like_mindspore_and_matches_numpy(rng, axis):
    a = random_array(rng, (2, 3), np.int32)
    b = random_array(rng, (2, 3), np.float32)
    c = random_array(rng, (2, 3), np.bool_)
    got = ops.concat([ms.Tensor(a), ms.Tensor(b), ms.Tensor(c)], axis)
    rt = result_dtype(result_dtype(a.dtype, b.dtype), c.dtype)  # float32 (NumPy: float64)
    assert_matches_numpy(got, np.concatenate([a.astype(rt), b.astype(rt), c.astype(rt)], axis))
    assert_matches_numpy(ops.cat((ms.Tensor(a), ms.Tensor(a.T.copy().T)), axis=axis),
                         np.concatenate([a, a], axis))


def test_concat_of_different_sizes_along_axis_and_non_contiguous(rng):
    a = random_array(rng, (2, 3), np.float64)
    b = random_array(rng, (4, 2), np.float64)
    got = ops.concat((ms.Tensor(a), ms.Tensor(b).transpose()), 1)
    assert_matches_numpy(got, np.concatenate([a, b.T], 1))
    e = np.zeros((2, 0))
    assert_matches_numpy(ops.concat([ms.Tensor(e), ms.Tensor(a)], 1), np.concatenate([e, a], 1))


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", NP_DTYPES, ids=str)
def test_stack_matches_numpy(rng, axis, dtype):
    arrs = [random_array(rng, (2, 3), dtype) for _ in range(3)]
    assert_matches_numpy(ops.stack([ms.Tensor(x) for x in arrs], axis), np.stack(arrs, axis))
    scalars = [np.array(1.0), np.array(2.0)]
    assert_matches_numpy(ops.stack([ms.Tensor(x) for x in scalars]), np.stack(scalars))


def test_concat_and_stack_errors_name_op_and_shapes():
    a, b = ms.Tensor(np.ones((2, 3))), ms.Tensor(np.ones((3, 3)))
    with pytest.raises(ValueError, match=r"concat: input 0 has shape \(2, 3\) and input 1 has shape \(3, 3\)"):
        ops.concat([a, b], 1)
    with pytest.raises(ValueError, match=r"stack: all inputs must have the same shape"):
        ops.stack([a, b])
    with pytest.raises(ValueError, match="concat: need at least one tensor"):
        ops.concat([])
    with pytest.raises(TypeError, match="concat: expected a sequence of Tensors, item 1 is int"):
        ops.concat([a, 1])
    with pytest.raises(TypeError, match="stack: expected a list or tuple of Tensors, got a Tensor"):
        ops.stack(a)
    with pytest.raises(ValueError, match="concat: zero-dimensional tensors cannot be concatenated"):
        ops.concat([ms.Tensor(np.array(1.0))])
    with pytest.raises(ValueError, match="concat: axis 2 is out of bounds"):
        ops.concat([a, a], 2)


# ---- indexing --------------------------------------------------------------------------------------

INDICES = [0, -1, (1, 2), (slice(1, None), slice(None, None, 2)), (Ellipsis, None),
           (None, 0), slice(None, None, -1), (slice(-2, None), Ellipsis, -1),
           (slice(5, 1, -2),), (slice(10, 20),), (), (Ellipsis,), (1, None, slice(None), None),
           (slice(None), slice(None, None, -3), 1)]


@pytest.mark.parametrize("index", INDICES, ids=str)
@pytest.mark.parametrize("dtype", NP_DTYPES, ids=str)
def test_basic_indexing_matches_numpy_and_is_a_view(rng, index, dtype):
    a = random_array(rng, (4, 5, 3), dtype)
    t = ms.Tensor(a)
    got = t[index]
    assert_matches_numpy(got, a[index])
    if a[index].size:
        assert shares_storage(got, t)


def test_indexing_a_non_contiguous_view_and_chaining(rng):
    a = random_array(rng, (6, 4), np.float32)
    t = ms.Tensor(a).transpose()
    assert_matches_numpy(t[1:, ::2], a.T[1:, ::2])
    assert_matches_numpy(t[::-1][1][2:], a.T[::-1][1][2:])
    assert_matches_numpy(t[1:, ::2] + 1, a.T[1:, ::2] + 1)  # views feed kernels
    assert_matches_numpy(ops.sum(t[::-1, 1:], 0), a.T[::-1, 1:].sum(0, dtype=np.float32), rtol=1e-5)


def test_indexing_errors_are_index_errors_with_shape():
    t = ms.Tensor(np.ones((3, 4)))
    with pytest.raises(IndexError, match=r"index 3 is out of bounds for axis 0 with size 3 \(tensor of shape \(3, 4\)\)"):
        t[3]
    with pytest.raises(IndexError, match="index -5 is out of bounds for axis 1 with size 4"):
        t[0, -5]
    with pytest.raises(IndexError, match="too many indices for a tensor of dimension 2"):
        t[0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        t[..., ...]
    with pytest.raises(IndexError):
        ms.Tensor(np.array(1.0))[0]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        t[::0]
    with pytest.raises(IndexError, match="only integers, slices"):
        t[1.5]
    with pytest.raises(IndexError, match="only integers, slices"):
        t["a"]


# ---- Tensor conveniences ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NP_DTYPES, ids=str)
def test_item_bool_float_int_of_one_element(dtype):
    a = np.array([[3]], dtype)
    t = ms.Tensor(a)
    assert t.item() == a.item() and type(t.item()) is type(a.item())
    assert bool(t) == bool(a.item())
    assert float(t) == float(a.item())
    assert int(t) == int(a.item())
    assert t[0, 0].item() == a.item()  # a view with an offset


def test_item_and_bool_of_many_elements_raise_value_error():
    t = ms.Tensor(np.ones(3))
    with pytest.raises(ValueError, match=r"item: only a Tensor with one element .* shape \(3,\)"):
        t.item()
    with pytest.raises(ValueError, match=r"bool: the truth value of a Tensor with 3 elements"):
        bool(t)
    with pytest.raises(ValueError, match="0 elements"):
        bool(ms.Tensor(np.ones(0)))


def test_tolist_len_iteration_and_index():
    a = np.arange(6, dtype=np.int32).reshape(3, 2)
    t = ms.Tensor(a)
    assert t.tolist() == a.tolist()
    assert t.transpose().tolist() == a.T.tolist()
    assert len(t) == 3
    rows = list(t)
    assert len(rows) == 3 and all(isinstance(r, ms.Tensor) for r in rows)
    assert [r.tolist() for r in rows] == a.tolist()
    assert [x.item() for x in t[:, 1]] == [1, 3, 5]
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(ms.Tensor(np.array(1)))
    with pytest.raises(TypeError, match="len"):
        len(ms.Tensor(np.array(1)))
    assert [10, 20, 30][ms.Tensor(np.array(2))] == 30  # __index__
    with pytest.raises(TypeError, match="only 0-d integer tensors"):
        [1][ms.Tensor(np.array(0.0))]


# ---- creation --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NP_DTYPES, ids=str)
def test_zeros_ones_full_and_likes(rng, dtype):
    ms_dt = MS_OF_NP[dtype]
    assert_matches_numpy(ops.zeros((2, 3), ms_dt), np.zeros((2, 3), dtype))
    assert_matches_numpy(ops.ones(4, dtype=ms_dt), np.ones(4, dtype))
    assert_matches_numpy(ops.full((2, 2), 3, dtype=ms_dt), np.full((2, 2), 3, dtype))
    a = random_array(rng, (2, 3), dtype)
    t = ms.Tensor(a).transpose()
    assert_matches_numpy(ops.zeros_like(t), np.zeros_like(a.T))
    assert_matches_numpy(ops.ones_like(t), np.ones_like(a.T))
    assert_matches_numpy(ops.full_like(t, 1.7), np.full_like(a.T, 1.7))
    assert_matches_numpy(ops.ones_like(t, dtype=ms.float64), np.ones_like(a.T, np.float64))


def test_creation_default_dtypes_follow_mindspore():
    assert ops.zeros((2,)).dtype == ms.float32
    assert ops.full((2,), 1).dtype == ms.int64
    assert ops.full((2,), 1.0).dtype == ms.float32
    assert ops.full((2,), True).dtype == ms.bool_
    assert ops.arange(3).dtype == ms.int64
    assert ops.arange(0.0, 3).dtype == ms.float32
    assert ops.linspace(0, 1, 3).dtype == ms.float32
    assert ops.eye(2).dtype == ms.float32
    assert ops.zeros(()).shape == ()
    assert ops.zeros((0, 3)).shape == (0, 3)


@pytest.mark.parametrize("args", [(5,), (2, 9), (2, 9, 3), (9, 2, -3), (0, 1, 0.1), (1.5, -2, -0.5),
                                  (5, 5), (5, 1)], ids=str)
def test_arange_matches_numpy(args):
    expected = np.arange(*args)
    got = ops.arange(*args, dtype=ms.float64 if expected.dtype.kind == "f" else ms.int64)
    assert_matches_numpy(got, expected)
    assert_matches_numpy(ops.arange(*args, dtype=ms.int32) if expected.dtype.kind == "i" else got,
                         expected.astype(np.int32) if expected.dtype.kind == "i" else expected)


@pytest.mark.parametrize("args", [(0, 1, 5), (2, -3, 7), (1, 1, 1), (0, 10, 0), (-1.5, 2.25, 4)], ids=str)
def test_linspace_matches_numpy(args):
    assert_matches_numpy(ops.linspace(*args, dtype=ms.float64), np.linspace(*args))
    assert_matches_numpy(ops.linspace(*args), np.linspace(*args).astype(np.float32), rtol=1e-6)


@pytest.mark.parametrize("n,m,k", [(3, None, 0), (2, 4, 1), (4, 2, -1), (3, 3, 5), (0, 2, 0)])
def test_eye_matches_numpy(n, m, k):
    assert_matches_numpy(ops.eye(n, m, ms.int32, k), np.eye(n, m, k, dtype=np.int32))


def test_creation_errors_name_the_op():
    with pytest.raises(ValueError, match=r"zeros: negative dimension -1 in shape \(2, -1\)"):
        ops.zeros((2, -1))
    with pytest.raises(ValueError, match="arange: step must not be zero"):
        ops.arange(0, 3, 0)
    with pytest.raises(ValueError, match="linspace: steps must be non-negative"):
        ops.linspace(0, 1, -1)
    with pytest.raises(ValueError, match="eye: negative dimensions"):
        ops.eye(-1)
    with pytest.raises(TypeError, match="full: expected a Python bool, int, float or complex, got str"):
        ops.full((2,), "x")
    with pytest.raises(TypeError, match="zeros: unsupported dtype"):
        ops.zeros((2,), "float128")
    with pytest.raises(ValueError, match=r"zeros: a tensor of shape \(2147483648, 2147483648, 4\) is too big"):
        ops.zeros((2 ** 31, 2 ** 31, 4))
    with pytest.raises(OverflowError, match="full: Python integer is out of bounds"):
        ops.full((2,), 2 ** 70)


# ---- random ----------------------------------------------------------------------------------------

def test_set_seed_makes_draws_reproducible():
    ms.set_seed(123)
    a = [ops.rand(3, 4), ops.randn(5), ops.uniform((2,), -1.0, 1.0), ops.normal((3,), 2.0, 0.5)]
    ms.set_seed(123)
    b = [ops.rand(3, 4), ops.randn(5), ops.uniform((2,), -1.0, 1.0), ops.normal((3,), 2.0, 0.5)]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())
    assert ms.get_seed() == 123
    assert not np.array_equal(ops.rand(3, 4).asnumpy(), a[0].asnumpy())  # the state advanced


def test_explicit_seed_gives_the_same_values_each_call():
    ms.set_seed(1)
    x = ops.rand((2, 3), seed=42)
    ms.set_seed(2)
    y = ops.rand(2, 3, seed=42)
    np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())


def test_random_distributions_have_expected_moments():
    ms.set_seed(0)
    u = ops.uniform((200000,), 2.0, 5.0, dtype=ms.float64).asnumpy()
    assert u.min() >= 2.0 and u.max() < 5.0
    assert abs(u.mean() - 3.5) < 0.01
    n = ops.normal((200000,), 1.0, 2.0).asnumpy()
    assert n.dtype == np.float32
    assert abs(n.mean() - 1.0) < 0.02 and abs(n.std() - 2.0) < 0.02
    r = ops.randn(100000, dtype=ms.float64).asnumpy()
    assert abs(r.mean()) < 0.02 and abs(r.std() - 1.0) < 0.02


def test_random_errors():
    with pytest.raises(TypeError, match="rand: unsupported dtype Int32"):
        ops.rand(2, dtype=ms.int32)
    with pytest.raises(ValueError, match="normal: stddev must be non-negative"):
        ops.normal((2,), 0.0, -1.0)
    with pytest.raises(ValueError, match="randn: seed must be non-negative"):
        ops.randn(2, seed=-3)
    with pytest.raises(ValueError, match="set_seed: seed must be non-negative"):
        ms.set_seed(-1)
