"""DLPack interop: zero-copy both ways, views, lifetimes, errors."""
import gc
import sys

import numpy as np
import pytest

import pijit as ms


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_from_dlpack_of_numpy_shares_memory(dtype):
    a = np.arange(12, dtype=dtype).reshape(3, 4)
    t = ms.from_dlpack(a)
    assert t.shape == (3, 4) and np.dtype(t.dtype.to_numpy()) == np.dtype(dtype)
    a[1, 2] = 99
    assert t.asnumpy()[1, 2] == 99


def test_numpy_from_dlpack_of_a_tensor_shares_memory_and_keeps_strides():
    base = ms.Tensor(np.arange(24, dtype=np.float64).reshape(4, 6))
    view = base[1:, ::2]
    arr = np.from_dlpack(view)
    np.testing.assert_array_equal(arr, view.asnumpy())
    assert np.shares_memory(arr, base.asnumpy())
    assert arr.strides == view.asnumpy().strides


def test_exported_tensor_outlives_the_tensor_object():
    t = ms.Tensor(np.arange(5, dtype=np.float32))
    arr = np.from_dlpack(t)
    del t
    gc.collect()
    np.testing.assert_array_equal(arr, np.arange(5, dtype=np.float32))


def test_round_trip_through_a_capsule_and_no_reference_leak():
    t = ms.Tensor(np.arange(6, dtype=np.int64))
    before = sys.getrefcount(t)
    for _ in range(200):
        back = ms.from_dlpack(t.__dlpack__())
        np.testing.assert_array_equal(back.asnumpy(), t.asnumpy())
    del back
    gc.collect()
    assert sys.getrefcount(t) == before
    assert t.__dlpack_device__() == (1, 0)


def test_a_consumed_capsule_cannot_be_used_twice():
    cap = ms.Tensor(np.ones(2, np.float32)).__dlpack__()
    ms.from_dlpack(cap)
    with pytest.raises(ValueError, match="unconsumed"):
        ms.from_dlpack(cap)


def test_unsupported_dtype_and_non_dlpack_objects_raise_clear_errors():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="unsupported dtype"):  # float8: no pijit dtype
        ms.from_dlpack(torch.ones(2, dtype=torch.float8_e4m3fn))
    with pytest.raises(TypeError, match="no __dlpack__"):
        ms.from_dlpack([1, 2, 3])


def test_jitted_function_on_a_dlpack_tensor_equals_eager():
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    t = ms.from_dlpack(a)

    def f(x):
        return x * 2.0 + 1.0

    jf = ms.jit(f, mode="PIJit")
    np.testing.assert_array_equal(jf(t).asnumpy(), f(t).asnumpy())
