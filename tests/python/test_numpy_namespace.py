"""pijit.numpy (mindspore.numpy): creation, element-wise math and reductions against NumPy
(values and dtypes, with MindSpore's dtypes where they differ), eager against jitted,
gradients against central differences, and clear errors for bad arguments. Shapes,
indexing, logic, products and statistics are in test_numpy_namespace_arrays.py."""
from pathlib import Path

import numpy as np
import pytest

import pijit as ms
import pijit.numpy as mnp

import mint_testutil
from jit_testutil import _quiet_numpy  # noqa: F401 (autouse fixture)
from mint_testutil import T, jitted_matches, same

NAMES = Path(__file__).resolve().parents[2] / "docs" / "api_names" / "numpy.txt"
# mindspore.numpy names left out (none: unique and bincount, whose output shape depends on the
# data, read it on the host).
LEFT_OUT = set()


def grad_matches(fn, a):
    """ms.grad of sum(fn(x)) at the float64 `a` against central finite differences."""
    mint_testutil.grad_matches(fn, a, weighted=False)


# NumPy's references warn about NaN slices and zero divisors that the tests mean to reach.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


# ---- coverage ------------------------------------------------------------------------------------

def test_share_of_mindspore_numpy_names():
    names = [n.strip() for n in NAMES.read_text().splitlines()
             if n.strip() and not n.startswith("#")]
    provided = [n for n in names if hasattr(mnp, n)]
    assert set(names) - set(provided) == LEFT_OUT
    assert len(provided) / len(names) >= 0.99  # 227 of 229


def test_all_lists_exported_names():
    assert len(set(mnp.__all__)) == len(mnp.__all__)
    for name in mnp.__all__:
        assert hasattr(mnp, name), name
    assert mnp.float32 is ms.float32 and mnp.int_ is ms.int32 and mnp.float_ is ms.float32


# ---- creation ------------------------------------------------------------------------------------

@pytest.mark.parametrize("data, dtype", [
    ([1, 2, 3], np.int32), ([1.5, 2.0], np.float32), ([[True, False]], np.bool_),
    (3, np.int32), (2.5, np.float32), ([1, 2.5], np.float32), (((1, 2), (3, 4)), np.int32),
])
def test_array_from_python_data_uses_mindspore_dtypes(data, dtype):
    # MindSpore makes Python ints Int32 and floats Float32 (NumPy: Int64, Float64).
    same(mnp.array(data), np.array(data).astype(dtype))
    same(mnp.asarray(data), np.array(data).astype(dtype))


def test_array_options():
    a = np.arange(6.0).reshape(2, 3)
    t = T(a)
    same(mnp.array(t, ndmin=4), a.reshape(1, 1, 2, 3))
    same(mnp.array([1, 2], dtype="float64"), np.array([1.0, 2.0]))
    same(mnp.array(a), a)  # an ndarray keeps its dtype
    copied = mnp.array(t)
    assert not np.shares_memory(copied.asnumpy(), t.asnumpy())
    assert mnp.asarray(t) is t
    same(mnp.asarray([t[0], t[1]]), a)  # a list of tensors is stacked
    same(mnp.asfarray([1, 2]), np.array([1.0, 2.0], np.float32))
    same(mnp.asfarray([1, 2], mnp.int32), np.array([1.0, 2.0], np.float32))
    same(mnp.copy(t), a)
    same(mnp.array(np.float64(2.0)), np.array(2.0, np.float32))


def test_filled_tensors():
    same(mnp.zeros((2, 3)), np.zeros((2, 3), np.float32))
    same(mnp.ones(3, mnp.int32), np.ones(3, np.int32))
    same(mnp.empty((2,), "float64"), np.zeros(2))
    same(mnp.full((2, 2), 7), np.full((2, 2), 7, np.int32))
    same(mnp.full((2, 2), 1.5), np.full((2, 2), 1.5, np.float32))
    same(mnp.full((2, 3), [1, 2, 3]), np.full((2, 3), [1, 2, 3]).astype(np.int32))
    same(mnp.full((2,), True), np.full(2, True))
    like = T(np.arange(6).reshape(2, 3).astype(np.int16))
    same(mnp.zeros_like(like), np.zeros((2, 3), np.int16))
    same(mnp.ones_like(like, dtype=mnp.float64), np.ones((2, 3)))
    same(mnp.empty_like(like, shape=(4,)), np.zeros(4, np.int16))
    same(mnp.full_like(like, 9), np.full((2, 3), 9, np.int16))
    same(mnp.zeros((0, 3)), np.zeros((0, 3), np.float32))


@pytest.mark.parametrize("args, kwargs", [
    ((5,), {}), ((2, 9, 3), {}), ((0, 1, 0.25), {}), ((5, 1, -1), {}), ((3,), {"dtype": "float64"}),
    ((1.5,), {}), ((0, 5), {"step": 2}),
])
def test_arange(args, kwargs):
    got = mnp.arange(*args, **kwargs)
    expected = np.arange(*args, **kwargs)
    if "dtype" not in kwargs:
        expected = expected.astype(np.int32 if expected.dtype.kind == "i" else np.float32)
    same(got, expected)


@pytest.mark.parametrize("kwargs", [
    {}, {"endpoint": False}, {"num": 1}, {"num": 0}, {"dtype": mnp.float64},
    {"dtype": mnp.int32},
])
def test_linspace_logspace_geomspace(kwargs):
    np_kwargs = {k: (np.dtype(v.to_numpy()) if k == "dtype" else v) for k, v in kwargs.items()}
    want = np_kwargs.get("dtype", np.float32)
    same(mnp.linspace(1, 7, **{"num": 7, **kwargs}), np.linspace(1, 7, **{"num": 7, **np_kwargs}),
         want)
    same(mnp.logspace(0, 3, **{"num": 4, **kwargs}), np.logspace(0, 3, **{"num": 4, **np_kwargs}),
         want)
    same(mnp.geomspace(1, 1000, **{"num": 4, **kwargs}),
         np.geomspace(1, 1000, **{"num": 4, **np_kwargs}), want, rtol=1e-6)


def test_linspace_of_arrays_and_retstep():
    start, stop = np.array([0.0, 1.0]), np.array([[2.0], [5.0]])
    for axis in (0, 1, -1):  # Float64 bounds give Float64, Float32 ones Float32
        same(mnp.linspace(T(start), T(stop), 5, axis=axis),
             np.linspace(start, stop, 5, axis=axis))
        same(mnp.linspace(T(start, np.float32), 2, 5, axis=axis),
             np.linspace(start, 2, 5, axis=axis).astype(np.float32))
    out, step = mnp.linspace(0, 1, 5, retstep=True)
    assert step == 0.25
    same(out, np.linspace(0, 1, 5).astype(np.float32))
    same(mnp.logspace(T([0.0, 1.0], np.float32), 2.0, 3, base=2.0),
         np.logspace([0.0, 1.0], 2.0, 3, base=2.0).astype(np.float32))
    same(mnp.geomspace(T([1.0, -1.0]), T([8.0, -8.0]), 4),
         np.geomspace([1.0, -1.0], [8.0, -8.0], 4), rtol=1e-12)


def test_matrices():
    same(mnp.eye(3), np.eye(3, dtype=np.float32))
    same(mnp.eye(3, 4, 1, mnp.int32), np.eye(3, 4, 1, dtype=np.int32))
    same(mnp.identity(2, mnp.float64), np.identity(2))
    same(mnp.tri(3, 4, -1), np.tri(3, 4, -1, dtype=np.float32))
    a = np.arange(24.0).reshape(2, 3, 4)
    for k in (-1, 0, 2):
        same(mnp.tril(T(a), k), np.tril(a, k))
        same(mnp.triu(T(a), k), np.triu(a, k))
    same(mnp.tril(T(np.arange(3))), np.tril(np.arange(3)))
    v = np.array([1.0, 2.0, 3.0])
    for k in (-2, 0, 1):
        same(mnp.diag(T(v), k), np.diag(v, k))
        same(mnp.diag(T(a[0]), k), np.diag(a[0], k))
    same(mnp.diagflat(T([[1, 2], [3, 4]])), np.diagflat([[1, 2], [3, 4]]))
    same(mnp.diagonal(T(a), 1, 1, 2), np.diagonal(a, 1, 1, 2))
    same(mnp.diagonal(T(a), -1, 2, 0), np.diagonal(a, -1, 2, 0))
    same(mnp.trace(T(a), axis1=1, axis2=2), np.trace(a, axis1=1, axis2=2))
    same(mnp.trace(T(np.eye(3, dtype=np.int32))), np.array(3, np.int32))
    x = np.array([1, 2, 3])
    same(mnp.vander(T(x)), np.vander(x))
    same(mnp.vander(T(x), 4, increasing=True), np.vander(x, 4, increasing=True))


def test_grids_and_index_sets():
    x, y = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0])
    for indexing in ("xy", "ij"):
        for sparse in (False, True):
            same(mnp.meshgrid(T(x), T(y), T(x), indexing=indexing, sparse=sparse),
                 np.meshgrid(x, y, x, indexing=indexing, sparse=sparse))
    same(mnp.mgrid[0:3, 1:5:2], np.mgrid[0:3, 1:5:2].astype(np.int32))
    same(mnp.mgrid[0:1:5j], np.mgrid[0:1:5j].astype(np.float32))
    same(mnp.ogrid[0:2, 0:3], [g.astype(np.int32) for g in np.ogrid[0:2, 0:3]])
    same(mnp.indices((2, 3)), np.indices((2, 3)).astype(np.int32))
    same(mnp.indices((2, 3), sparse=True), [g.astype(np.int32) for g in
                                             np.indices((2, 3), sparse=True)])
    same(mnp.ix_(T([0, 1]), T([2, 4, 5])), np.ix_([0, 1], [2, 4, 5]))
    same(mnp.diag_indices(3), [a.astype(np.int32) for a in np.diag_indices(3)])
    same(mnp.tril_indices(3, -1, 4), [a.astype(np.int32) for a in np.tril_indices(3, -1, 4)])
    same(mnp.triu_indices(4, 1), [a.astype(np.int32) for a in np.triu_indices(4, 1)])
    same(mnp.tril_indices_from(T(np.ones((2, 3)))), [a.astype(np.int32) for a in
                                                     np.tril_indices_from(np.ones((2, 3)))])
    same(mnp.triu_indices_from(T(np.ones((3, 3))), 1),
         [a.astype(np.int32) for a in np.triu_indices_from(np.ones((3, 3)), 1)])


@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
def test_windows(name):
    for m in (0, 1, 6):
        same(getattr(mnp, name)(m), getattr(np, name)(m).astype(np.float32), atol=1e-7)


def test_random_draws():
    ms.set_seed(3)
    u = mnp.rand(2, 3)
    assert u.shape == (2, 3) and u.dtype == ms.float32
    assert 0 <= u.asnumpy().min() and u.asnumpy().max() < 1
    assert mnp.randn((4, 5), dtype=mnp.float64).shape == (4, 5)
    r = mnp.randint(2, 7, (1000,))
    assert r.dtype == ms.int32 and r.asnumpy().min() >= 2 and r.asnumpy().max() <= 6
    assert set(np.unique(r.asnumpy())) == set(range(2, 7))
    assert mnp.randint(3).shape == (1,)


# ---- element-wise math ---------------------------------------------------------------------------

rng = np.random.default_rng(0)
POSITIVE = rng.uniform(0.2, 3.0, (3, 4))
UNIT = rng.uniform(-0.9, 0.9, (3, 4))
ANY = rng.uniform(-3.0, 3.0, (3, 4))
DOMAINS = {"log": POSITIVE, "log2": POSITIVE, "log10": POSITIVE, "log1p": POSITIVE,
           "sqrt": POSITIVE, "arcsin": UNIT, "arccos": UNIT, "arctanh": UNIT,
           "arccosh": POSITIVE + 1.0}
FLOAT_FUNCTIONS = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt",
                   "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
                   "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg", "radians", "rint"]


@pytest.mark.parametrize("name", FLOAT_FUNCTIONS)
def test_float_functions(name):
    a = DOMAINS.get(name, ANY)
    ref = getattr(np, name)
    same(getattr(mnp, name)(T(a)), ref(a), rtol=1e-12)
    same(getattr(mnp, name)(T(a, np.float32)), ref(a.astype(np.float32)), rtol=2e-6, atol=1e-6)
    # Integers compute in Float32 (MindSpore), where NumPy gives Float64.
    ints = np.array([1, 2, 3], np.int32) if name != "arccosh" else np.array([1, 2, 3])
    if name not in ("arcsin", "arccos", "arctanh"):
        same(getattr(mnp, name)(T(ints, np.int32)), ref(ints).astype(np.float32), rtol=1e-6)
    same(getattr(mnp, name)(T(a), dtype=mnp.float32), ref(a).astype(np.float32), rtol=1e-6)


BINARY = ["add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder",
          "mod", "fmod", "power", "maximum", "minimum", "fmax", "fmin", "hypot", "arctan2",
          "copysign", "heaviside", "logaddexp", "logaddexp2", "float_power"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_functions_on_floats(name):
    x = np.array([[-2.5, 0.0, 1.5, 3.0], [4.0, -1.0, 0.5, -0.0]])
    y = np.array([1.5, -2.0, 0.5, 2.0])
    if name in ("power", "float_power"):
        x = np.abs(x) + 0.5
    ref = getattr(np, name)
    same(getattr(mnp, name)(T(x), T(y)), ref(x, y), rtol=1e-12)
    same(getattr(mnp, name)(T(y), T(x)), ref(y, x), rtol=1e-12)
    # A Python number keeps the tensor's float dtype (float_power too: MindSpore computes in
    # Float32 unless an input is Float64, where NumPy always uses Float64).
    same(getattr(mnp, name)(T(x, np.float32), 1.5), ref(x.astype(np.float32), np.float32(1.5)),
         np.float32, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "floor_divide", "remainder",
                                  "fmod", "power", "maximum", "minimum"])
def test_binary_functions_on_integers(name):
    x = np.array([7, -7, 5, 0, 9], np.int32)
    y = np.array([2, 3, -2, 4, 1], np.int32)
    if name == "power":
        y = np.abs(y)
    ref = getattr(np, name)
    same(getattr(mnp, name)(T(x), T(y)), ref(x, y))
    same(getattr(mnp, name)(T(x), 3), ref(x, np.int32(3)))


def test_mixed_dtypes_follow_mindspore():
    i32, f32 = T([1, 2, 3], np.int32), T([0.5, 1.5, 2.5], np.float32)
    assert mnp.add(i32, f32).dtype == ms.float32  # NumPy: Float64
    assert mnp.add(i32, 1.5).dtype == ms.float32  # NumPy: Float64
    assert mnp.add(T([True]), 1).dtype == ms.int32
    assert mnp.add(i32, T([1], np.int64)).dtype == ms.int64
    assert mnp.multiply(T([1], np.float16), T([1], np.int64)).dtype == ms.float16
    same(mnp.divide(i32, 2), np.array([0.5, 1.0, 1.5], np.float32))
    same(mnp.true_divide([1, 2], [4, 4]), np.array([0.25, 0.5], np.float32))
    assert mnp.add(2, 3).dtype == ms.int32 and mnp.add(2, 3.5).dtype == ms.float32
    same(mnp.add(i32, f32, dtype=mnp.float64), np.array([1.5, 3.5, 5.5]))
    same(mnp.float_power(i32, 2), np.array([1.0, 4.0, 9.0], np.float32))
    same(mnp.float_power(T([2.0]), 2), np.array([4.0]))
    assert mnp.promote_types(mnp.int32, "float16") == mnp.float16
    assert mnp.promote_types(mnp.uint8, mnp.int8) == mnp.int16
    assert mnp.result_type(i32, 1.0, mnp.int64) == mnp.float32
    assert mnp.result_type(T([1], np.float64), 1) == mnp.float64


def test_unary_arithmetic_and_rounding():
    a = np.array([-2.5, -1.5, -0.4, 0.0, 0.5, 1.5, 2.7])
    for name in ("floor", "ceil", "trunc", "fix", "rint", "sign", "absolute", "abs", "fabs",
                 "negative", "positive", "square", "reciprocal"):
        with np.errstate(divide="ignore"):
            same(getattr(mnp, name)(T(a)), getattr(np, name)(a))
    ints = np.array([-3, -1, 0, 1, 4], np.int32)
    for name in ("floor", "ceil", "trunc", "sign", "absolute", "negative", "square"):
        same(getattr(mnp, name)(T(ints)), getattr(np, name)(ints))
    same(mnp.reciprocal(T([-2, -1, 1, 3], np.int32)), np.array([0, -1, 1, 0], np.int32))
    for decimals in (-1, 0, 1, 2):
        same(mnp.around(T(a * 10.0), decimals), np.around(a * 10.0, decimals))
        same(mnp.round(T(ints * 7), decimals), np.round(ints * 7, decimals))
    same(mnp.clip(T(a), -1, 1), np.clip(a, -1, 1))
    same(mnp.clip(T(a), None, T([0.0] * 7)), np.clip(a, None, 0.0))
    same(mnp.clip(T(ints), 0, 2.5), np.clip(ints, 0, 2.5).astype(np.float32))


def test_special_values():
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1.0])
    y = np.array([[np.inf], [-np.inf], [0.0], [-0.0], [2.0]])
    for name in ("arctan2", "copysign", "hypot", "logaddexp", "logaddexp2", "fmax", "fmin",
                 "maximum", "minimum", "heaviside"):
        same(getattr(mnp, name)(T(x), T(y)), getattr(np, name)(x, y), rtol=1e-12)
    same(mnp.signbit(T(x)), np.signbit(x))
    same(mnp.signbit(T([-1, 0, 2], np.int32)), np.signbit(np.array([-1, 0, 2])))


def test_bits_and_integer_functions():
    x = np.array([12, -18, 0, 7, 0, 35], np.int32)
    y = np.array([18, 12, 5, 0, 0, -14], np.int32)
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "gcd", "lcm"):
        same(getattr(mnp, name)(T(x), T(y)), getattr(np, name)(x, y))
    same(mnp.gcd(T(x, np.int64), 6), np.gcd(x.astype(np.int64), 6))
    same(mnp.invert(T(x)), np.invert(x))
    same(mnp.bitwise_not(T([True, False])), np.array([False, True]))
    q, r = mnp.divmod(T(x), 5)
    same(q, x // 5)
    same(r, x % 5)


# ---- reductions ----------------------------------------------------------------------------------

A = rng.standard_normal((3, 4, 5))
INTS = rng.integers(-5, 6, (3, 4)).astype(np.int32)


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), ()])
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_mean_extrema_var_std(axis, keepdims):
    for name in ("sum", "mean", "amax", "amin", "max", "min", "ptp", "var", "std"):
        ref = getattr(np, name)
        same(getattr(mnp, name)(T(A), axis=axis, keepdims=keepdims),
             ref(A, axis=axis, keepdims=keepdims), rtol=1e-12)
    same(mnp.var(T(A), axis, ddof=1, keepdims=keepdims),
         np.var(A, axis, ddof=1, keepdims=keepdims), rtol=1e-12)


def test_reduction_dtypes_follow_mindspore():
    same(mnp.sum(T(INTS)), np.array(INTS.sum(), np.int32))  # NumPy: Int64
    same(mnp.sum(T([True, True, False])), np.array(2, np.int32))
    same(mnp.sum(T(INTS), dtype=mnp.float64), np.array(INTS.sum(), np.float64))
    same(mnp.sum(T(INTS), axis=1, initial=10), INTS.sum(1).astype(np.int32) + 10)
    same(mnp.mean(T(INTS), 0), INTS.mean(0).astype(np.float32))  # NumPy: Float64
    same(mnp.std(T(INTS)), np.array(INTS.std(), np.float32))
    same(mnp.amax(T(INTS), 1), INTS.max(1))
    same(mnp.count_nonzero(T(INTS), 1), np.count_nonzero(INTS, 1).astype(np.int32))
    same(mnp.count_nonzero(T(INTS)), np.array(np.count_nonzero(INTS), np.int32))


def test_extrema_initial_and_where():
    mask = np.array([True, False, True, False, True])
    same(mnp.amax(T(A), axis=2, initial=0.5), np.amax(A, axis=2, initial=0.5))
    same(mnp.amin(T(A), axis=2, where=T(mask), initial=9.0),
         np.amin(A, axis=2, where=mask, initial=9.0))
    same(mnp.amax(T(np.zeros((2, 0))), axis=1, initial=-1.0), np.full(2, -1.0))


def test_arg_reductions():
    for axis in (None, 0, 1, -1):
        same(mnp.argmax(T(A), axis), np.argmax(A, axis))
        same(mnp.argmin(T(INTS), axis if axis != -1 else 1), np.argmin(INTS, axis if axis != -1
                                                                       else 1))


def test_average():
    w = rng.uniform(0.5, 2.0, A.shape)
    w1 = np.array([1.0, 2.0, 3.0, 4.0])
    same(mnp.average(T(A)), np.average(A))
    same(mnp.average(T(A), axis=(0, 2)), np.average(A, axis=(0, 2)))
    same(mnp.average(T(A), 1, T(w)), np.average(A, 1, w), rtol=1e-12)
    same(mnp.average(T(A), 1, T(w1)), np.average(A, 1, w1), rtol=1e-12)
    same(mnp.average(T(A), 1, T(w1), returned=True), np.average(A, 1, w1, returned=True),
         rtol=1e-12)
    same(mnp.average(T(A), 0, returned=True), np.average(A, 0, returned=True), rtol=1e-12)
    assert mnp.average(T(INTS)).dtype == ms.float32


def test_nan_reductions():
    a = A[0].copy()
    a[0, 1] = a[2, 3] = a[1, :] = np.nan
    for name in ("nansum", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin"):
        for axis in (None, 0, 1):
            same(getattr(mnp, name)(T(a), axis=axis), getattr(np, name)(a, axis=axis),
                 rtol=1e-12)
    same(mnp.nanvar(T(a), 0, ddof=1, keepdims=True), np.nanvar(a, 0, ddof=1, keepdims=True),
         rtol=1e-12)
    same(mnp.nancumsum(T(a), 1), np.nancumsum(a, 1), rtol=1e-12)
    same(mnp.nansum(T(INTS)), np.array(INTS.sum(), np.int32))


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_running_sums_and_differences(axis):
    same(mnp.cumsum(T(A), axis), np.cumsum(A, axis), rtol=1e-12)
    same(mnp.cumprod(T(A[:, :3, :2]), axis), np.cumprod(A[:, :3, :2], axis), rtol=1e-12)
    # Integers keep their dtype (NumPy widens Int32 to Int64).
    same(mnp.cumsum(T(INTS), axis if axis != -1 else 1),
         np.cumsum(INTS, axis if axis != -1 else 1).astype(np.int32))
    if axis is not None:
        for n in (0, 1, 2):
            same(mnp.diff(T(A), n, axis), np.diff(A, n, axis), rtol=1e-12)
    same(mnp.cumsum(T([True, False, True])), np.array([1, 1, 2], np.int32))


def test_diff_ediff1d_trapz_gradient():
    x = np.array([1.0, 4.0, 9.0, 16.0, 25.0])
    same(mnp.diff(T(x), prepend=0, append=T([30.0])), np.diff(x, prepend=0, append=[30.0]))
    same(mnp.diff(T([True, False, False])), np.diff([True, False, False]))
    same(mnp.ediff1d(T(x), to_end=T([100.0]), to_begin=-1.0),
         np.ediff1d(x, to_end=[100.0], to_begin=-1.0))
    same(mnp.trapz(T(A)), np.trapezoid(A), rtol=1e-12)
    same(mnp.trapz(T(A), dx=0.5, axis=1), np.trapezoid(A, dx=0.5, axis=1), rtol=1e-12)
    same(mnp.trapz(T(A), T(x), axis=2), np.trapezoid(A, x, axis=2), rtol=1e-12)
    coords = np.array([0.0, 1.0, 1.5, 3.5, 4.0])
    for edge_order in (1, 2):
        same(mnp.gradient(T(x), edge_order=edge_order), np.gradient(x, edge_order=edge_order),
             rtol=1e-12)
        same(mnp.gradient(T(x), T(coords), edge_order=edge_order),
             np.gradient(x, coords, edge_order=edge_order), rtol=1e-12)
        same(mnp.gradient(T(A), 2.0, edge_order=edge_order),
             np.gradient(A, 2.0, edge_order=edge_order), rtol=1e-12)
        same(mnp.gradient(T(A), 0.5, 1.0, axis=(0, 2), edge_order=edge_order),
             np.gradient(A, 0.5, 1.0, axis=(0, 2), edge_order=edge_order), rtol=1e-12)


# ---- eager against jitted ------------------------------------------------------------------------

# Each function of these modules, captured as one graph and equal to its eager result.
JIT_CASES = {
    "array": lambda t: t + mnp.array([1.0, 2.0, 3.0, 4.0, 5.0]) + mnp.asarray(2.0)
    + mnp.array([[1, 2, 3, 4, 5]], ndmin=3)[0] + mnp.asfarray(t) + mnp.copy(t),
    "filled": lambda t: (mnp.zeros((4, 5)) + mnp.ones(5) + mnp.empty(5) + mnp.full((4, 5), 1.5)
                         + mnp.zeros_like(t) + mnp.ones_like(t) + mnp.empty_like(t)
                         + mnp.full_like(t, 2.0)),
    "ranges": lambda t: (t * mnp.linspace(0.0, 1.0, 5) + mnp.logspace(0, 1, 5)
                         + mnp.geomspace(1, 8, 5) + mnp.arange(5) + mnp.arange(0.0, 2.5, 0.5)),
    "tensor_ranges": lambda t: (mnp.linspace(t[0], t[1], 3, axis=-1)
                                + mnp.logspace(t[0], t[1], 3, axis=1)
                                + mnp.geomspace(mnp.abs(t[0]) + 1, 5.0, 3, axis=1)),
    "matrices": lambda t: (mnp.tril(t) + mnp.triu(t, 1) + mnp.eye(4, 5) * mnp.arange(5)
                           + mnp.tri(4, 5) + mnp.identity(5)[:4]),
    "diagonals": lambda t: (mnp.diag(mnp.diagonal(t, 1)) + mnp.trace(t) + mnp.diag(t)[0]
                            + mnp.diagflat(t[0, :4])),
    "vander": lambda t: mnp.vander(t[0], 4),
    "grids": lambda t: (mnp.meshgrid(t[0], t[1, :4])[0] + mnp.mgrid[0:4, 0:5][0]
                        + mnp.ogrid[0:4, 0:5][1] + mnp.indices((4, 5))[0]),
    "index_sets": lambda t: (t[mnp.tril_indices(4)[0], mnp.tril_indices(4)[1]][:3]
                             + t[mnp.diag_indices(3)[0], mnp.diag_indices(3)[1]]
                             + mnp.triu_indices_from(t[:, :4])[0][:3]
                             + mnp.ix_(mnp.array([0, 1]), mnp.array([1, 2]))[1][0, :1]),
    "windows": lambda t: t + mnp.hamming(5) + mnp.hanning(5) + mnp.bartlett(5) + mnp.blackman(5),
    "random": lambda t: (t + mnp.rand(4, 5) * 0 + mnp.randn(4, 5) * 0
                         + mnp.randint(0, 5, (4, 5)) * 0),
    "float_math": lambda t: (mnp.exp(mnp.sin(t)) + mnp.log1p(mnp.abs(t)) + mnp.exp2(t)
                             + mnp.expm1(t) + mnp.log2(mnp.abs(t) + 1) + mnp.cbrt(t)
                             + mnp.log10(mnp.abs(t) + 1) + mnp.sqrt(mnp.abs(t))),
    "trig": lambda t: (mnp.arcsin(t / 3) + mnp.arccos(t / 3) + mnp.arctan(t) + mnp.sinh(t)
                       + mnp.cosh(t) + mnp.tanh(t) + mnp.arcsinh(t) + mnp.tan(t)
                       + mnp.arccosh(mnp.abs(t) + 1) + mnp.arctanh(t / 3) + mnp.arctan2(t, 1.5)
                       + mnp.deg2rad(t) + mnp.rad2deg(t) + mnp.radians(t)),
    "arithmetic": lambda t: (mnp.power(mnp.abs(t), 1.5) - mnp.floor_divide(t, 0.7)
                             + mnp.fmod(t, 1.1) + mnp.add(t, 1) + mnp.subtract(t, 1)
                             + mnp.multiply(t, 2) + mnp.divide(t, 3) + mnp.true_divide(t, 2)
                             + mnp.remainder(t, 2) + mnp.mod(t, 2) + mnp.divmod(t, 2)[0]
                             + mnp.float_power(mnp.abs(t), 0.5)),
    "signs": lambda t: (mnp.negative(t) + mnp.positive(t) + mnp.absolute(t) + mnp.fabs(t)
                        + mnp.sign(t) + mnp.square(t) + mnp.reciprocal(t) + mnp.abs(t)),
    "extremes": lambda t: (mnp.maximum(t, 0) + mnp.minimum(t, 0) + mnp.fmax(t, 0.5)
                           + mnp.fmin(t, 0.5) + mnp.clip(t, -0.5, 0.5)),
    "special": lambda t: (mnp.logaddexp(t, -t) + mnp.hypot(t, 2.0) + mnp.copysign(1.0, t)
                          + mnp.heaviside(t, 0.5) + mnp.logaddexp2(t, 1.0) + mnp.signbit(t)),
    "rounding": lambda t: (mnp.around(t, 1) + mnp.floor(t) + mnp.ceil(t) + mnp.trunc(t)
                           + mnp.fix(t) + mnp.rint(t) + mnp.round(t, 2)),
    "integers": lambda t: (mnp.gcd(mnp.array([12, 18, 7]), mnp.array([8, 27, 0]))
                           + mnp.lcm(mnp.array([4, 6, 5]), 3) + mnp.sum(t > 0)
                           + mnp.bitwise_and(mnp.array([5, 6, 7]), 3)
                           + mnp.bitwise_or(mnp.array([5, 6, 7]), 3)
                           + mnp.bitwise_xor(mnp.array([5, 6, 7]), 3)
                           + mnp.invert(mnp.array([5, 6, 7])) + mnp.bitwise_not(mnp.array([1]))),
    "dtypes": lambda t: (t.astype(mnp.promote_types(mnp.int32, mnp.float64))
                         + t.astype(mnp.result_type(t, 1)) * mnp.isscalar(3.0)),
    "reductions": lambda t: mnp.sum(t, 1) + mnp.mean(t, 1) + mnp.std(t, 1) + mnp.ptp(t, 1),
    "all_axes": lambda t: (mnp.sum(t, (0, 1)) + mnp.amax(t) + mnp.amin(t) + mnp.max(t)
                           + mnp.min(t) + mnp.argmin(t) + mnp.var(t)),
    "extrema": lambda t: (mnp.amax(t, 0, initial=0.0) + mnp.argmax(t, 0)
                          + mnp.count_nonzero(t, 0) + mnp.amax(t, 0, where=t > 0, initial=-1.0)),
    "nan": lambda t: (mnp.nanmean(t, 0) + mnp.nanmax(t, 0) + mnp.nansum(t, 0) + mnp.nanvar(t, 0)
                      + mnp.nanstd(t, 0) + mnp.nanmin(t, 0) + mnp.nancumsum(t, 0)[0]),
    "running": lambda t: mnp.cumsum(t, 1)[:, :4] + mnp.cumprod(t, 0)[:, :4] + mnp.diff(t, 1, 1),
    "differences": lambda t: (mnp.diff(t, 1, 0, prepend=0.0, append=t[:1])[:3]
                              + mnp.ediff1d(t, to_begin=0.0, to_end=[1.0, 2.0])[:5]),
    "average": lambda t: (mnp.average(t, 1, mnp.arange(5.0)) + mnp.var(t, 1, ddof=1)
                          + mnp.average(t, 1, returned=True)[1]),
    "gradient": lambda t: (mnp.gradient(t, 0.5, axis=1) + mnp.trapz(t, axis=1)[:, None]
                           + mnp.gradient(t, mnp.arange(5.0) ** 2, axis=1, edge_order=2)
                           + mnp.gradient(t)[0] + mnp.trapz(t, mnp.arange(5.0))[:, None]),
}


@pytest.mark.parametrize("name", sorted(JIT_CASES))
def test_jitted_equals_eager(name):
    fn = JIT_CASES[name]
    jitted_matches(lambda t: fn(t), T(rng.standard_normal((4, 5))))


def test_functions_jit_directly():
    # exp, sin, ... are made by one factory and share a code object; each compiles on its own.
    x = np.array([0.5, 1.0, 2.0])
    for fn, ref in ((mnp.exp, np.exp), (mnp.sin, np.sin), (mnp.sqrt, np.sqrt)):
        jf = ms.jit(fn)
        ms.reset(jf)
        same(jf(T(x)), ref(x), rtol=1e-12)
        assert ms.get_code_extra(jf)["total_break_count"] == 0
    jf = ms.jit(mnp.linspace)
    ms.reset(jf)
    same(jf(0.0, 1.0, 5), np.linspace(0.0, 1.0, 5).astype(np.float32))


def test_bytecode_mode_keeps_one_graph():
    def fn(t):
        return mnp.sum(mnp.tril(mnp.exp(t)), axis=0) + mnp.cumsum(t, 1)[:, -1]

    jf = ms.jit(fn, mode="PIJit")
    ms.reset(jf)
    a = rng.standard_normal((3, 3))
    same(jf(T(a)), np.tril(np.exp(a)).sum(0) + np.cumsum(a, 1)[:, -1], rtol=1e-12)
    stats = ms.get_code_extra(jf)
    assert stats["total_break_count"] == 0, stats["all_reasons"]


# ---- gradients -----------------------------------------------------------------------------------

GRAD_CASES = {
    "exp_log": lambda t: mnp.log(mnp.exp(t) + 1.0),
    "trig": lambda t: mnp.sin(t) * mnp.arctan(t) + mnp.tanh(t),
    "arctan2": lambda t: mnp.arctan2(t, mnp.flip(t, 0) + 3.0),
    "hypot": lambda t: mnp.hypot(t, 2.0),
    "logaddexp": lambda t: mnp.logaddexp(t, 0.5 * t),
    "cbrt": lambda t: mnp.cbrt(t + 5.0),
    "clip": lambda t: mnp.clip(t, -0.5, 0.5) * t,
    "divide": lambda t: mnp.divide(t, t * t + 1.0),
    "mean_std": lambda t: mnp.std(t, 0)[:3] + mnp.mean(t, 1) + mnp.var(t, 1, ddof=1),
    "amax": lambda t: mnp.amax(t, 1) * mnp.ptp(t, 0)[:1],
    "average": lambda t: mnp.average(t, 1, mnp.arange(1.0, 5.0)),
    "nanmean": lambda t: mnp.nanmean(t, 0),
    "cumsum": lambda t: mnp.cumsum(t, 1) * mnp.cumprod(t, 0),
    "diff": lambda t: mnp.diff(t, 2, 1) ** 2,
    "gradient": lambda t: mnp.gradient(t, 0.5, axis=1, edge_order=2) ** 2,
    "trapz": lambda t: mnp.trapz(t * t, axis=0),
    "tril_diag": lambda t: mnp.tril(t, -1)[:, :3] ** 2 + mnp.diag(mnp.diagonal(t)),
    "linspace": lambda t: mnp.linspace(t[0], t[1], 4, axis=1) ** 2,
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_match_finite_differences(name):
    a = np.random.default_rng(1).uniform(-1.5, 1.5, (3, 4))
    grad_matches(GRAD_CASES[name], a)


# ---- bad arguments -------------------------------------------------------------------------------

@pytest.mark.parametrize("call, exc, message", [
    (lambda: mnp.zeros((2, -1)), ValueError, r"zeros: negative dimensions"),
    (lambda: mnp.ones("3"), TypeError, r"ones: shape must be an int or a tuple"),
    (lambda: mnp.zeros(3, "complex64"), TypeError, r"zeros: dtype must be"),
    (lambda: mnp.array([[1, 2], [3]]), ValueError, r"array: .*ragged"),
    (lambda: mnp.asarray("abc"), TypeError, r"asarray: expected a Tensor"),
    (lambda: mnp.arange(0, 5, 0), ValueError, r"arange: step must not be zero"),
    (lambda: mnp.arange("a"), TypeError, r"arange: start, stop and step must be ints"),
    (lambda: mnp.linspace(0, 1, -2), ValueError, r"linspace: num must be non-negative"),
    (lambda: mnp.linspace(0, 1, 2.5), TypeError, r"linspace: num must be an int"),
    (lambda: mnp.eye(-1), ValueError, r"eye: negative dimensions"),
    (lambda: mnp.diag(T(np.ones((2, 2, 2)))), ValueError, r"diag: expected a 1-D or 2-D"),
    (lambda: mnp.diagonal(T(np.ones((2, 2))), 0, 1, 1), ValueError, r"diagonal: axis1 and axis2"),
    (lambda: mnp.rand(2, dtype=mnp.int32), ValueError, r"rand: dtype must be a float dtype"),
    (lambda: mnp.randint(5, 2), ValueError, r"randint: minval \(5\) must be less than maxval"),
    (lambda: mnp.sum(T(A), axis=3), ValueError, r"sum: axis 3 is out of bounds .* dimension 3"),
    (lambda: mnp.mean(T(A), axis=(0, 0)), ValueError, r"mean: repeated axis"),
    (lambda: mnp.amax(T(A), axis=1.5), TypeError, r"amax: axis must be an int"),
    (lambda: mnp.amax(T(A), where=T([True] * 5)), ValueError, r"amax: .*needs an initial"),
    (lambda: mnp.amin(T(np.zeros((0, 2))), 0), ValueError, r"amin: zero-size reduction"),
    (lambda: mnp.average(T(A), 1, T([1.0, 2.0])), ValueError, r"average: 2 weights for axis 1"),
    (lambda: mnp.diff(T(A), -1), ValueError, r"diff: order n must be non-negative"),
    (lambda: mnp.gradient(T(A), edge_order=3), ValueError, r"gradient: edge_order must be 1 or 2"),
    (lambda: mnp.gradient(T([1.0, 2.0]), edge_order=2), ValueError, r"gradient: axis 0 has 2"),
    (lambda: mnp.add(T([1.0, 2.0]), T([1.0, 2.0, 3.0])), ValueError, r"add"),
    (lambda: mnp.gcd(T([1.5]), T([2.0])), TypeError, r"gcd: expected integer or bool inputs"),
    (lambda: mnp.invert(T([1.5])), TypeError, r"invert: expected an integer or bool input"),
    (lambda: mnp.clip(T([1.0]), None, None), ValueError, r"clip: one of xmin and xmax"),
    (lambda: mnp.power(T([2], np.int32), T([-1], np.int32)), ValueError, r"pow: integers to "
                                                                          r"negative"),
    (lambda: mnp.around(T([1.5]), 1.5), TypeError, r"around: decimals must be an int"),
])
def test_bad_arguments_raise_clear_errors(call, exc, message):
    with pytest.raises(exc, match=message):
        call()


def test_errors_are_raised_inside_jit_too():
    def bad(t):
        return mnp.sum(t, axis=5)

    with pytest.raises(ValueError, match=r"sum: axis 5 is out of bounds"):
        ms.jit(bad)(T(A))

    def bad_dtype(t):
        return t + mnp.zeros(3, "complex64")

    with pytest.raises(TypeError, match=r"zeros: dtype must be"):
        ms.jit(bad_dtype)(T(np.ones(3)))
