"""pijit.Tensor: construction, NumPy interop, attributes, printing and reference counts."""
import gc
import re
import sys

import numpy as np
import pytest

import pijit as ms
from pijit_testutil import MS_DTYPES, MS_OF_NP, NP_DTYPES, np_dtype, random_array


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


# ---- construction from NumPy arrays ------------------------------------------------------------

@pytest.mark.parametrize("dtype", NP_DTYPES, ids=str)
def test_from_numpy_keeps_dtype_shape_and_values(rng, dtype):
    arr = random_array(rng, (3, 4), dtype)
    t = ms.Tensor(arr)
    assert t.dtype == MS_OF_NP[dtype]
    assert np_dtype(t) == dtype
    assert t.shape == (3, 4)
    np.testing.assert_array_equal(t.asnumpy(), arr)
    assert t.asnumpy().dtype == dtype


def test_from_numpy_is_zero_copy_mutation_visible_through_tensor():
    arr = np.zeros((2, 3), np.float32)
    t = ms.Tensor(arr)
    arr[1, 2] = 42.0
    assert t.asnumpy()[1, 2] == 42.0
    assert np.shares_memory(t.asnumpy(), arr)


def test_asarray_shares_memory_with_asnumpy():
    t = ms.Tensor(np.arange(6, dtype=np.float64).reshape(2, 3))
    a = np.asarray(t)
    b = t.asnumpy()
    assert np.shares_memory(a, b)
    np.testing.assert_array_equal(a, b)


def test_writing_through_asnumpy_is_visible_in_tensor_and_source():
    arr = np.zeros(4, np.int64)
    t = ms.Tensor(arr)
    view = t.asnumpy()
    view[0] = 7
    assert arr[0] == 7
    assert t.asnumpy()[0] == 7


def test_tensor_keeps_numpy_buffer_alive_after_array_is_dropped():
    arr = np.arange(5, dtype=np.float32)
    expected = arr.copy()
    t = ms.Tensor(arr)
    del arr
    gc.collect()
    np.testing.assert_array_equal(t.asnumpy(), expected)


def test_asnumpy_keeps_tensor_data_alive_after_tensor_is_dropped():
    t = ms.Tensor(np.arange(5, dtype=np.float32)) * 2.0
    out = t.asnumpy()
    del t
    gc.collect()
    np.testing.assert_array_equal(out, np.arange(5, dtype=np.float32) * 2.0)


# ---- construction from lists and scalars -------------------------------------------------------

def test_list_of_floats_defaults_to_float32():
    t = ms.Tensor([1.5, 2.5, -3.0])
    assert t.dtype == ms.float32
    assert t.shape == (3,)
    np.testing.assert_array_equal(t.asnumpy(), np.array([1.5, 2.5, -3.0], np.float32))


def test_list_of_ints_defaults_to_int64():
    t = ms.Tensor([[1, 2], [3, 4]])
    assert t.dtype == ms.int64
    assert t.shape == (2, 2)
    np.testing.assert_array_equal(t.asnumpy(), np.array([[1, 2], [3, 4]], np.int64))


def test_list_mixing_ints_and_floats_is_float32():
    t = ms.Tensor([1, 2.5])
    assert t.dtype == ms.float32
    np.testing.assert_array_equal(t.asnumpy(), np.array([1.0, 2.5], np.float32))


def test_list_of_bools_is_bool():
    t = ms.Tensor([True, False])
    assert t.dtype == ms.bool_
    np.testing.assert_array_equal(t.asnumpy(), np.array([True, False]))


def test_tuple_input_is_accepted_like_a_list():
    t = ms.Tensor(((1, 2, 3), (4, 5, 6)))
    assert t.dtype == ms.int64
    np.testing.assert_array_equal(t.asnumpy(), np.arange(1, 7).reshape(2, 3))


def test_list_with_explicit_dtype_uses_that_dtype():
    t = ms.Tensor([1, 2, 3], ms.float64)
    assert t.dtype == ms.float64
    np.testing.assert_array_equal(t.asnumpy(), np.array([1, 2, 3], np.float64))


def test_python_float_scalar_defaults_to_float32_0d():
    t = ms.Tensor(1.5)
    assert t.dtype == ms.float32
    assert t.shape == ()
    assert t.ndim == 0
    assert t.asnumpy() == np.float32(1.5)


def test_python_int_scalar_defaults_to_int64_0d():
    t = ms.Tensor(7)
    assert t.dtype == ms.int64
    assert t.shape == ()
    assert t.item() == 7


@pytest.mark.parametrize("value,dtype", [(3, ms.float32), (2.5, ms.float64), (4, ms.int32),
                                         (True, ms.bool_), (-9, ms.int64)],
                         ids=["int->f32", "float->f64", "int->i32", "bool", "int->i64"])
def test_scalar_with_dtype_is_0d_of_that_dtype(value, dtype):
    t = ms.Tensor(value, dtype)
    assert t.dtype == dtype
    assert t.shape == ()
    expected = np.array(value, dtype=dtype.to_numpy())
    np.testing.assert_array_equal(t.asnumpy(), expected)
    assert t.asnumpy().dtype == expected.dtype


def test_dtype_keyword_argument():
    t = ms.Tensor(input_data=[1, 2], dtype=ms.float32)
    assert t.dtype == ms.float32


@pytest.mark.parametrize("scalar", [np.int32(3), np.int64(3), np.float32(2.5), np.bool_(True)],
                         ids=lambda s: type(s).__name__)
def test_numpy_scalar_keeps_its_dtype(scalar):
    t = ms.Tensor(scalar)
    assert np_dtype(t) == scalar.dtype
    assert t.shape == ()


def test_numpy_float64_scalar_keeps_float64():
    t = ms.Tensor(np.float64(1.1))
    assert t.dtype == ms.float64
    assert t.item() == 1.1


# ---- casting -------------------------------------------------------------------------------------

def test_tensor_from_float64_array_with_float32_dtype_casts():
    arr = np.array([[0.1, 1.0 / 3.0], [1e10, -2.5]], np.float64)
    t = ms.Tensor(arr, ms.float32)
    assert t.dtype == ms.float32
    np.testing.assert_array_equal(t.asnumpy(), arr.astype(np.float32))


def test_cast_copies_so_later_source_mutation_is_not_visible():
    arr = np.ones(3, np.float64)
    t = ms.Tensor(arr, ms.float32)
    arr[0] = 5.0
    assert t.asnumpy()[0] == 1.0


def test_same_dtype_argument_is_still_zero_copy():
    arr = np.ones(3, np.float32)
    t = ms.Tensor(arr, ms.float32)
    arr[0] = 5.0
    assert t.asnumpy()[0] == 5.0


@pytest.mark.parametrize("src", NP_DTYPES, ids=str)
@pytest.mark.parametrize("dst", NP_DTYPES, ids=str)
def test_cast_between_all_dtypes_matches_numpy_astype(rng, src, dst):
    arr = random_array(rng, (5,), src, low=-3, high=4)
    t = ms.Tensor(arr, MS_OF_NP[dst])
    assert np_dtype(t) == dst
    np.testing.assert_array_equal(t.asnumpy(), arr.astype(dst))


def test_float_to_int_cast_truncates_toward_zero_like_numpy():
    arr = np.array([1.7, -1.7, 2.5, -0.5])
    t = ms.Tensor(arr, ms.int32)
    np.testing.assert_array_equal(t.asnumpy(), arr.astype(np.int32))


def test_dtype_argument_accepts_numpy_dtypes_and_names():
    arr = np.arange(3, dtype=np.int32)
    assert ms.Tensor(arr, np.float64).dtype == ms.float64
    assert ms.Tensor(arr, "float32").dtype == ms.float32


def test_tensor_from_tensor_with_dtype_casts():
    t = ms.Tensor(np.array([1.9, -2.2], np.float64))
    c = ms.Tensor(t, ms.int64)
    assert c.dtype == ms.int64
    np.testing.assert_array_equal(c.asnumpy(), np.array([1, -2], np.int64))
    assert t.dtype == ms.float64  # the source is unchanged


def test_astype_matches_numpy():
    arr = np.array([0.0, 1.5, -2.0], np.float32)
    t = ms.Tensor(arr).astype(ms.bool_)
    assert t.dtype == ms.bool_
    np.testing.assert_array_equal(t.asnumpy(), arr.astype(bool))


def test_python_int_out_of_int32_range_in_constructor_raises_overflow():
    with pytest.raises(OverflowError):
        ms.Tensor(2 ** 40, ms.int32)


# ---- non-contiguous NumPy inputs ----------------------------------------------------------------

NONCONTIGUOUS = {
    "transposed": lambda a: a.T,
    "step_slice": lambda a: a[::2, 1::3],
    "negative_strides": lambda a: a[::-1, ::-2],
    "column": lambda a: a[:, 3],
    "broadcast_view": lambda a: np.broadcast_to(a[0], (3,) + a[0].shape),
}


@pytest.mark.parametrize("make", NONCONTIGUOUS.values(), ids=NONCONTIGUOUS.keys())
@pytest.mark.parametrize("dtype", NP_DTYPES, ids=str)
def test_noncontiguous_numpy_input_values(rng, make, dtype):
    view = make(random_array(rng, (6, 8), dtype))
    t = ms.Tensor(view)
    assert t.shape == view.shape
    assert np_dtype(t) == view.dtype
    np.testing.assert_array_equal(t.asnumpy(), view)


def test_transposed_input_is_a_zero_copy_view():
    base = np.zeros((3, 4), np.float32)
    t = ms.Tensor(base.T)
    base[2, 1] = 9.0
    assert t.asnumpy()[1, 2] == 9.0


def test_negative_stride_input_is_read_in_view_order():
    base = np.arange(10, dtype=np.int64)
    t = ms.Tensor(base[::-1])
    assert t.tolist() == list(range(9, -1, -1))


def test_unaligned_numpy_input_values():
    raw = np.zeros(4 * 3 + 1, np.uint8)
    unaligned = np.ndarray((3,), np.float32, buffer=raw, offset=1)
    assert not unaligned.flags.aligned
    unaligned[:] = [1.5, -2.0, 3.25]
    t = ms.Tensor(unaligned)
    np.testing.assert_array_equal(t.asnumpy(), np.array([1.5, -2.0, 3.25], np.float32))


@pytest.mark.parametrize("dtype", [">f4", ">i8"])
def test_big_endian_numpy_input_values(dtype):
    arr = np.arange(3, dtype=dtype)
    t = ms.Tensor(arr)
    np.testing.assert_array_equal(t.asnumpy(), arr)


# ---- attributes ----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3), (2, 0, 4), (1, 2, 3, 4)], ids=str)
def test_shape_ndim_size_match_numpy(shape):
    arr = np.zeros(shape, np.float32)
    t = ms.Tensor(arr)
    assert t.shape == arr.shape
    assert isinstance(t.shape, tuple)
    assert t.ndim == arr.ndim
    assert t.size == arr.size


@pytest.mark.parametrize("dtype", NP_DTYPES, ids=str)
def test_dtype_attribute_round_trips_through_numpy(dtype):
    t = ms.Tensor(np.zeros(2, dtype))
    assert t.dtype == MS_OF_NP[dtype]
    assert np.dtype(t.dtype.to_numpy()) == dtype
    assert t.dtype.itemsize == dtype.itemsize


def test_dtypes_are_distinct():
    assert len({str(d) for d in MS_DTYPES}) == len(MS_DTYPES)


# ---- printing ------------------------------------------------------------------------------------

PRINT_CASES = {
    "f32_2d": np.arange(6, dtype=np.float32).reshape(2, 3) / 3,
    "f64_1d": np.array([1.0, -2.5, 1e-8]),
    "i32": np.array([[1, -2], [3, 4]], np.int32),
    "i64_0d": np.array(12345678901, np.int64),
    "bool": np.array([True, False, True]),
    "empty": np.zeros((0, 3), np.float32),
    "large_summarised": np.arange(5000, dtype=np.float64).reshape(50, 100),
    "f32_0d": np.array(2.5, np.float32),
}


@pytest.mark.parametrize("arr", PRINT_CASES.values(), ids=PRINT_CASES.keys())
def test_str_equals_str_of_numpy_array(arr):
    assert str(ms.Tensor(arr)) == str(arr)


@pytest.mark.parametrize("arr", PRINT_CASES.values(), ids=PRINT_CASES.keys())
def test_repr_contains_shape_and_dtype(arr):
    t = ms.Tensor(arr)
    r = repr(t)
    assert "shape=[" + ", ".join(str(d) for d in arr.shape) + "]" in r
    assert f"dtype={t.dtype}" in r
    assert r.startswith("Tensor(")


def test_print_writes_the_numpy_string(capsys):
    arr = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    print(ms.Tensor(arr))
    assert capsys.readouterr().out == str(arr) + "\n"


# ---- unsupported input ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.longdouble, np.str_, np.object_],
                         ids=lambda d: np.dtype(d).name)
def test_unsupported_numpy_dtype_raises_type_error_naming_dtype(dtype):
    data = np.zeros(3, dtype)
    with pytest.raises(TypeError, match=re.escape(str(data.dtype))):
        ms.Tensor(data)


def test_a_failed_construction_leaves_no_half_made_tensor_behind():
    # A traceback printer (pytest's long reports) or a debugger shows the `self` of the
    # failed __init__; reading it crashed the interpreter when the native part was missing.
    with pytest.raises(TypeError, match="unsupported dtype <U1") as info:
        ms.Tensor(np.zeros(3, np.str_))
    tb = info.value.__traceback__
    selves = []
    while tb is not None:
        if isinstance(tb.tb_frame.f_locals.get("self"), ms.Tensor):
            selves.append(tb.tb_frame.f_locals["self"])
        tb = tb.tb_next
    assert selves
    for t in selves:
        assert t.shape == (0,) and "shape=[0]" in repr(t)


def test_unsupported_dtype_argument_raises_type_error_naming_dtype():
    with pytest.raises(TypeError, match=str(np.dtype(np.longdouble))):
        ms.Tensor(np.zeros(3, np.float32), np.longdouble)


def test_complex_python_list_makes_a_complex128_tensor():
    t = ms.Tensor([1 + 2j, 3])
    assert t.dtype == ms.complex128
    np.testing.assert_array_equal(t.asnumpy(), np.array([1 + 2j, 3]))


def test_string_input_raises_type_error():
    with pytest.raises(TypeError):
        ms.Tensor(["a", "b"])


def test_missing_input_raises_type_error():
    with pytest.raises(TypeError):
        ms.Tensor()


# ---- scalar conversions --------------------------------------------------------------------------

def test_item_float_int_bool_of_single_element():
    t = ms.Tensor(np.array([[2.5]], np.float64))
    assert t.item() == 2.5
    assert float(t) == 2.5
    assert int(t) == 2
    assert bool(t) is True


def test_bool_of_multi_element_tensor_is_ambiguous():
    with pytest.raises(ValueError, match="ambiguous"):
        bool(ms.Tensor(np.ones(2)))


def test_tolist_matches_numpy():
    arr = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert ms.Tensor(arr).tolist() == arr.tolist()


# ---- reference counts ----------------------------------------------------------------------------

def test_dropping_tensors_restores_numpy_array_refcount():
    arr = np.arange(12, dtype=np.float32).reshape(3, 4)
    start = sys.getrefcount(arr)
    tensors = [ms.Tensor(arr) for _ in range(200)]
    assert sys.getrefcount(arr) > start  # the tensors hold the array
    del tensors
    gc.collect()
    assert sys.getrefcount(arr) == start


def test_creating_and_dropping_many_tensors_and_views_leaves_refcount_unchanged():
    arr = np.arange(12, dtype=np.float64).reshape(3, 4)
    start = sys.getrefcount(arr)
    for _ in range(1000):
        t = ms.Tensor(arr)
        a = t.asnumpy()
        b = np.asarray(t)
        same = ms.Tensor(arr, ms.float64)
        cast = ms.Tensor(arr, ms.float32)
        tt = ms.Tensor(arr.T)
        del t, a, b, same, cast, tt
    gc.collect()
    assert sys.getrefcount(arr) == start


def test_tensor_refcount_unchanged_by_asnumpy_and_ops():
    t = ms.Tensor(np.ones((2, 3), np.float32))
    start = sys.getrefcount(t)
    for _ in range(1000):
        a = t.asnumpy()
        b = t + 1.0
        c = ms.Tensor(t)
        del a, b, c
    gc.collect()
    assert sys.getrefcount(t) == start


@pytest.mark.parametrize("shape,perm", [((1024, 1000), (1, 0)), ((8, 64, 33, 17), (0, 1, 3, 2)),
                                        ((5, 7, 3), (2, 0, 1)), ((3, 1, 4), (0, 2, 1)),
                                        ((40, 70, 2), (0, 2, 1)), ((2, 3, 40, 50), (3, 2, 1, 0))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.uint8])
def test_copies_of_transposed_views_match_numpy(shape, perm, dtype):
    # Copies of views whose last axes are transposed go through a tiled path.
    a = (np.arange(np.prod(shape)) % 251).astype(dtype).reshape(shape)
    t = ms.ops.transpose(ms.Tensor(a), perm)
    want = np.ascontiguousarray(a.transpose(perm))
    np.testing.assert_array_equal(ms.ops.reshape(t, (-1,)).asnumpy(), want.reshape(-1))
    np.testing.assert_array_equal(t.astype(ms.float64).asnumpy(), want.astype(np.float64))
