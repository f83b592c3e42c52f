"""Shared helpers of the pijit Python tests: dtype mapping and NumPy comparisons."""
import numpy as np

import pijit as ms

# Every dtype pijit supports that NumPy has, as NumPy dtypes and as pijit dtypes (bfloat16,
# which NumPy lacks, has its own tests against float32 references: test_dtypes_bfloat16.py).
NP_DTYPES = [np.dtype(np.bool_), np.dtype(np.uint8), np.dtype(np.int8), np.dtype(np.int16),
             np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float16),
             np.dtype(np.float32), np.dtype(np.float64)]
MS_DTYPES = [ms.bool_, ms.uint8, ms.int8, ms.int16, ms.int32, ms.int64, ms.float16, ms.float32,
             ms.float64]
MS_OF_NP = dict(zip(NP_DTYPES, MS_DTYPES))
NUMERIC_NP_DTYPES = [d for d in NP_DTYPES if d != np.bool_]
INT_NP_DTYPES = [d for d in NP_DTYPES if d.kind in "iu"]
FLOAT_NP_DTYPES = [d for d in NP_DTYPES if d.kind == "f"]


def np_dtype(t):
    """The NumPy dtype of a pijit Tensor (through pijit's dtype, not through asnumpy)."""
    return np.dtype(t.dtype.to_numpy())


def rtol_for(dtype, transcendental=False):
    """float16 computes in float32 and rounds once, as NumPy's: arithmetic agrees exactly but
    for the order of sums; functions (std:: against NumPy's own float32 loops) may round to
    the neighbouring float16 (one ulp is at most 2**-10 relative), and NumPy's reference
    formulas round intermediates to float16 too."""
    dtype = np.dtype(dtype)
    if dtype == np.float16:
        return 3e-3 if transcendental else 1e-3
    if dtype == np.float32:
        return 1e-5 if transcendental else 1e-6
    if dtype == np.float64:
        return 1e-12
    return 0


def assert_matches_numpy(t, expected, rtol=None, atol=0.0):
    """`t` (a pijit Tensor) has the dtype, shape and values of the NumPy result `expected`."""
    assert isinstance(t, ms.Tensor), f"expected a Tensor, got {type(t).__name__}"
    expected = np.asarray(expected)
    if expected.dtype == np.uint64:
        # NumPy sums and multiplies uint8 into uint64; pijit into Int64 (the same values below
        # 2**63), documented in kernels/cpu/reduce.cc. The wide unsigned dtypes, whose sums
        # are UInt64, have their own checks (test_dtypes_wide_unsigned.py).
        expected = expected.astype(np.int64)
    assert np_dtype(t) == expected.dtype, f"dtype {t.dtype} != numpy {expected.dtype}"
    assert t.shape == expected.shape, f"shape {t.shape} != numpy {expected.shape}"
    got = t.asnumpy()
    assert got.dtype == expected.dtype
    if rtol is None:
        rtol = rtol_for(expected.dtype)
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


def assert_same_tensor(a, b):
    """Exactly equal: same type, dtype, shape and bit-for-bit values (NaN equals NaN)."""
    assert isinstance(a, ms.Tensor) and isinstance(b, ms.Tensor)
    assert a.dtype == b.dtype, f"dtype {a.dtype} != {b.dtype}"
    assert a.shape == b.shape, f"shape {a.shape} != {b.shape}"
    x, y = a.asnumpy(), b.asnumpy()
    if x.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(x), np.signbit(y))
        np.testing.assert_array_equal(x, y)  # NaNs compare equal here
    else:
        np.testing.assert_array_equal(x, y)


def _assert_same_structure(a, b, assert_tensors):
    """a and b are alike in structure (tuples, lists, tensors, Python values): equal Python
    values, and `assert_tensors` passes for each pair of tensors."""
    assert type(a) is type(b), f"{type(a).__name__} != {type(b).__name__}"
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same_structure(x, y, assert_tensors)
    elif isinstance(a, ms.Tensor):
        assert_tensors(a, b)
    else:
        assert a == b


def assert_same_result(a, b):
    """Same structure of outputs (tuples, lists, tensors, Python values), tensors exactly equal."""
    _assert_same_structure(a, b, assert_same_tensor)


# Fused kernels compute exp with a vectorised approximation (documented in kernels/fused.h:
# at most 4e-7 relative error in float32, 1e-15 in float64); results of functions whose
# graphs fuse exp are compared within these bounds (with room for propagation), not bit for bit.
FUSED_RTOL = {np.dtype(np.float32): 4e-6, np.dtype(np.float64): 1e-14}
# float16 and bfloat16 graphs are never fused; eager and jitted results agree exactly.


def _assert_close_tensor(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    x, y = a.asnumpy(), b.asnumpy()
    if x.dtype.kind == "f":
        np.testing.assert_allclose(x, y, rtol=FUSED_RTOL[x.dtype], atol=1e-30, equal_nan=True)
    else:
        np.testing.assert_array_equal(x, y)


def assert_close_result(a, b):
    """Like assert_same_result, but float tensors within FUSED_RTOL."""
    _assert_same_structure(a, b, _assert_close_tensor)


def random_array(rng, shape, dtype, low=-5, high=5):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(max(low, 0) if dtype.kind == "u" else low, high, size=shape,
                            dtype=dtype)
    return (rng.random(shape) * (high - low) + low).astype(dtype)


def elements_for(dtype, bound):
    """A hypothesis strategy of values of `dtype` within [-bound, bound] (and its range)."""
    from hypothesis import strategies as st
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return st.booleans()
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return st.integers(max(int(info.min), -bound), min(int(info.max), bound))
    return st.floats(-bound, bound, width=dtype.itemsize * 8)
