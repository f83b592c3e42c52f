"""The eager op library against NumPy: elementwise (binary, unary, where, clip), reductions,
softmax, shape ops, indexing, creation and random generation, Tensor conveniences and
errors. Every dtype, broadcasting, empty, 0-d and non-contiguous inputs. Result dtypes follow
MindSpore's rules (ms_dtypes); the NumPy references compute in those dtypes."""
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import pijit as ms
from pijit import ops
from ms_dtypes import (computed_in, float_function_dtype, reduction_dtype, result_dtype,
                       true_division_dtype, with_python_scalar)
from pijit_testutil import (FLOAT_NP_DTYPES, MS_OF_NP, NP_DTYPES, NUMERIC_NP_DTYPES,
                            assert_matches_numpy, random_array, rtol_for)

SUPPORTED = set(NP_DTYPES)


@pytest.fixture
def rng():
    return np.random.default_rng(20240611)


def numpy_or_error(fn, *args):
    """NumPy's result, or the exception type pijit must raise instead (TypeError for a result
    dtype pijit does not have, such as int8 or float16)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            out = np.asarray(fn(*args))
        except TypeError:
            return TypeError
        except ValueError:
            return ValueError
    if out.dtype not in SUPPORTED:
        return TypeError
    return out


def check(fn_ms, fn_np, *arrays, rtol=None, atol=0.0, tensors=None):
    arrays = [np.asarray(a) if isinstance(a, (np.ndarray, np.generic)) else a for a in arrays]
    expected = numpy_or_error(fn_np, *arrays)
    args = tensors if tensors is not None else [ms.Tensor(a) if isinstance(a, np.ndarray) else a
                                                for a in arrays]
    if isinstance(expected, type):
        with pytest.raises(expected):
            fn_ms(*args)
        return
    assert_matches_numpy(fn_ms(*args), expected, rtol=rtol, atol=atol)


def noncontig(arr):
    """The same values as `arr`, as a transposed, strided pijit view."""
    big = np.repeat(np.ascontiguousarray(arr.T)[..., None], 2, axis=-1)
    t = ms.Tensor(big)[..., 0]
    t = t.transpose()
    assert not t.is_contiguous() or arr.size <= 1
    return t


# ---- binary elementwise ------------------------------------------------------------------------

BINARY = {
    "pow": np.power, "maximum": np.maximum, "minimum": np.minimum,
    "floor_divide": np.floor_divide, "remainder": np.remainder,
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "add": np.add, "mul": np.multiply, "div": np.true_divide,
}
SHAPE_PAIRS = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((), (2, 3)), ((0, 3), (1, 3)),
               ((2, 3, 4), (4,))]


def binary_reference(name, da, db):
    """NumPy's `name` computed in MindSpore's dtype for operands of dtypes da and db: the
    promoted dtype (which comparisons and logical ops compute in too, then give bool), or
    float32 for the true division of integers."""
    rt = true_division_dtype(da, db) if name == "div" else result_dtype(da, db)
    return computed_in(rt, BINARY[name])


def binary_operands(rng, name, sa, sb, da, db):
    a = random_array(rng, sa, da)
    b = random_array(rng, sb, db)
    if name == "pow" and np.dtype(db).kind in "iu":
        b = np.abs(b) % 4  # integer powers: non-negative exponents (negative ones raise)
    return a, b


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("da", NP_DTYPES, ids=str)
@pytest.mark.parametrize("db", NP_DTYPES, ids=str)
def test_binary_follows_mindspore_promotion_for_every_dtype_pair(rng, name, da, db):
    a, b = binary_operands(rng, name, (3, 4), (4,), da, db)
    check(getattr(ops, name), binary_reference(name, da, db), a, b,
          rtol=rtol_for(np.float32, True))


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
def test_binary_broadcasts_like_numpy(rng, name, shapes):
    dt = np.int64 if name.startswith("bitwise") else np.float64
    a, b = binary_operands(rng, name, shapes[0], shapes[1], dt, dt)
    check(getattr(ops, name), BINARY[name], a, b)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_reads_non_contiguous_views(rng, name):
    dt = np.int32 if name.startswith("bitwise") else np.float32
    a, b = binary_operands(rng, name, (4, 3), (4, 3), dt, dt)
    check(getattr(ops, name), BINARY[name], a, b, tensors=[noncontig(a), noncontig(b)],
          rtol=1e-5)


@pytest.mark.parametrize("name", ["pow", "maximum", "minimum", "floor_divide", "remainder",
                                  "equal", "less", "greater_equal", "logical_and"])
@pytest.mark.parametrize("dt", NUMERIC_NP_DTYPES, ids=str)
@pytest.mark.parametrize("scalar", [2, 2.5, True])
def test_binary_with_python_scalar_follows_weak_promotion(rng, name, dt, scalar):
    a = random_array(rng, (5,), dt)
    fn, np_fn = getattr(ops, name), computed_in(with_python_scalar(dt, scalar), BINARY[name])
    check(lambda t: fn(t, scalar), lambda x: np_fn(x, scalar), a, rtol=1e-5)
    check(lambda t: fn(scalar, t), lambda x: np_fn(scalar, x), a, rtol=1e-5)


@given(data=st.data(), name=st.sampled_from(sorted(BINARY)),
       dtype=st.sampled_from(["int32", "int64", "float32", "float64", "bool"]))
@settings(max_examples=150, deadline=None)
def test_binary_hypothesis(data, name, dtype):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4))
    elems = None
    if dtype.startswith("int"):
        elems = st.integers(0 if name == "pow" else -50, 6 if name == "pow" else 50)
    elif dtype.startswith("float"):
        elems = st.floats(-100, 100, width=32)
    a = data.draw(hnp.arrays(dtype, shapes.input_shapes[0], elements=elems))
    b = data.draw(hnp.arrays(dtype, shapes.input_shapes[1], elements=elems))
    check(getattr(ops, name), binary_reference(name, dtype, dtype), a, b, rtol=1e-5, atol=1e-30)


def test_integer_pow_with_negative_exponent_raises_value_error():
    with pytest.raises(ValueError, match="pow: integers to negative integer powers"):
        ops.pow(ms.Tensor(np.array([2, 3])), ms.Tensor(np.array([1, -1])))


def test_integer_floor_divide_and_mod_by_zero_give_zero_like_numpy():
    a = ms.Tensor(np.array([7, -7, 0], np.int32))
    z = ms.Tensor(np.zeros(3, np.int32))
    np.testing.assert_array_equal(ops.floor_divide(a, z).asnumpy(), [0, 0, 0])
    np.testing.assert_array_equal(ops.remainder(a, z).asnumpy(), [0, 0, 0])
    big = ms.Tensor(np.array([np.iinfo(np.int64).min]))
    assert ops.floor_divide(big, -1).item() == np.iinfo(np.int64).min  # wraps, as NumPy


def test_maximum_and_minimum_propagate_nan():
    a = ms.Tensor(np.array([np.nan, 1.0, 2.0]))
    b = ms.Tensor(np.array([0.0, np.nan, 1.0]))
    np.testing.assert_array_equal(ops.maximum(a, b).asnumpy(), [np.nan, np.nan, 2.0])
    np.testing.assert_array_equal(ops.minimum(a, b).asnumpy(), [np.nan, np.nan, 1.0])


def test_bitwise_on_floats_raises_type_error_naming_dtypes():
    with pytest.raises(TypeError, match="bitwise_and: unsupported dtypes Float32 and Float32"):
        ops.bitwise_and(ms.Tensor(np.ones(2, np.float32)), ms.Tensor(np.ones(2, np.float32)))


def test_binary_shape_mismatch_names_op_and_shapes():
    with pytest.raises(ValueError, match=r"maximum: .* shapes \(2, 3\) and \(4,\)"):
        ops.maximum(ms.Tensor(np.ones((2, 3))), ms.Tensor(np.ones(4)))


OPERATORS = [
    ("==", lambda a, b: a == b), ("!=", lambda a, b: a != b), ("<", lambda a, b: a < b),
    ("<=", lambda a, b: a <= b), (">", lambda a, b: a > b), (">=", lambda a, b: a >= b),
    ("**", lambda a, b: a ** b), ("//", lambda a, b: a // b), ("%", lambda a, b: a % b),
    ("&", lambda a, b: a & b), ("|", lambda a, b: a | b), ("^", lambda a, b: a ^ b),
]


@pytest.mark.parametrize("sym,fn", OPERATORS, ids=[o[0] for o in OPERATORS])
def test_tensor_operators_match_numpy(rng, sym, fn):
    a = random_array(rng, (3, 4), np.int64, 1, 6)
    b = random_array(rng, (4,), np.int64, 1, 4)
    check(fn, fn, a, b)
    check(lambda t: fn(t, 3), lambda x: fn(x, 3), a)  # tensor op scalar
    check(lambda t: fn(3, t), lambda x: fn(3, x), b)  # reflected


def test_comparison_with_non_number_is_not_elementwise():
    t = ms.Tensor(np.ones(3))
    assert (t == None) is False  # noqa: E711 - falls back to identity
    assert (t != "a") is True
    assert t in {t: 1}  # tensors hash by identity


def test_unary_operators():
    t = ms.Tensor(np.array([-1.5, 0.0, 2.0]))
    np.testing.assert_array_equal(abs(t).asnumpy(), [1.5, 0.0, 2.0])
    assert not np.signbit(abs(ms.Tensor(np.array([-0.0])))).any()
    np.testing.assert_array_equal((~ms.Tensor(np.array([True, False]))).asnumpy(), [False, True])
    np.testing.assert_array_equal((~ms.Tensor(np.array([1, -2], np.int32))).asnumpy(), [-2, 1])
    with pytest.raises(TypeError, match="bitwise_not: unsupported dtype Float64"):
        ~t
    np.testing.assert_array_equal((+t).asnumpy(), t.asnumpy())


# ---- unary elementwise -------------------------------------------------------------------------

def _gelu(x):
    from math import erf
    return np.vectorize(lambda v: 0.5 * v * (1.0 + erf(v / np.sqrt(2.0))), otypes=[x.dtype])(x)


def _erf(x):
    from math import erf
    return np.vectorize(erf, otypes=[x.dtype])(x)


def float_fn(f):
    """MindSpore's rule for float functions: integers compute in float32 whatever their width
    (float_function_dtype); bool is unsupported here."""
    def run(x):
        if x.dtype == np.bool_:
            raise TypeError("bool")
        return f(x.astype(float_function_dtype(x.dtype)))
    return run


def no_bool(f):
    def run(x):
        if x.dtype == np.bool_:
            raise TypeError("bool")
        return f(x)
    return run


UNARY = {
    "abs": np.abs, "sign": no_bool(np.sign), "square": no_bool(np.square),
    "sqrt": float_fn(np.sqrt), "rsqrt": float_fn(lambda x: 1 / np.sqrt(x)),
    "sin": float_fn(np.sin), "cos": float_fn(np.cos), "tanh": float_fn(np.tanh),
    "sigmoid": float_fn(lambda x: 1 / (1 + np.exp(-x))), "gelu": float_fn(_gelu),
    "softplus": float_fn(lambda x: np.logaddexp(0, x).astype(x.dtype)), "erf": float_fn(_erf),
    "logical_not": np.logical_not, "bitwise_not": np.invert, "neg": no_bool(np.negative),
    "exp": float_fn(np.exp), "log": float_fn(np.log), "relu": no_bool(lambda x: np.maximum(x, 0)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", NP_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(3, 4), (), (0, 2)], ids=str)
def test_unary_matches_numpy(rng, name, dtype, shape):
    a = random_array(rng, shape, dtype)
    half = dtype == np.float16
    check(getattr(ops, name), UNARY[name], a,
          rtol=rtol_for(np.float16 if half else np.float32, True) * (1 if half else 4))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_reads_non_contiguous_views(rng, name):
    dt = np.int32 if name == "bitwise_not" else np.float64
    a = random_array(rng, (4, 3), dt)
    check(getattr(ops, name), UNARY[name], a, tensors=[noncontig(a)])


def test_sigmoid_softplus_and_gelu_are_stable_at_extremes():
    x = ms.Tensor(np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0]))
    assert np.isfinite(ops.sigmoid(x).asnumpy()).all()
    np.testing.assert_allclose(ops.softplus(x).asnumpy(), np.logaddexp(0, x.asnumpy()))
    np.testing.assert_allclose(ops.gelu(x).asnumpy()[[0, 4]], [0.0, 1000.0])


def test_sign_keeps_nan():
    assert np.isnan(ops.sign(ms.Tensor(np.array([np.nan]))).asnumpy()).all()


def special_floats(rng, n, dtype):
    """n values of dtype: normal ones mixed with NaN, zeros of both signs, infinities,
    subnormals and ones (equal across operands often enough to test ==)."""
    info = np.finfo(dtype)
    pool = np.array([np.nan, 0.0, -0.0, np.inf, -np.inf, info.smallest_subnormal * 7, 1.0],
                    dtype=dtype)
    a = rng.standard_normal(n).astype(dtype)
    pick = rng.integers(0, 2 * len(pool), n)
    a[pick < len(pool)] = pool[pick[pick < len(pool)]]
    return a


def same_bits(got, want):
    """Equal bit patterns, or both NaN (NumPy and pijit may propagate either NaN operand)."""
    if got.dtype == np.bool_:
        return np.array_equal(got, want)
    u = {4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
    nan = np.isnan(got) & np.isnan(want)
    return bool(np.all((got.view(u) == want.view(u)) | nan))


# The float32/float64 loops compiled for AVX-512 and AVX2 (kernels/cpu/isa_loops.h) on the
# lengths around their vector widths, contiguous and against a single value.
BIT_EXACT_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
                    "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
                    "less_equal": np.less_equal, "greater": np.greater,
                    "greater_equal": np.greater_equal, "maximum": np.maximum,
                    "minimum": np.minimum}
BIT_EXACT_UNARY = {"neg": np.negative, "abs": np.abs, "sqrt": np.sqrt, "square": np.square,
                   "relu": lambda x: np.maximum(x, x.dtype.type(0))}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_vector_loops_give_numpys_bits_at_every_length(rng, dtype):
    lengths = list(range(1, 70)) + [127, 128, 129, 255, 256, 257, 1000]
    for n in lengths:
        a, b = special_floats(rng, n, dtype), special_floats(rng, n, dtype)
        one = special_floats(rng, 1, dtype)
        ta, tb = ms.Tensor(a), ms.Tensor(b)
        with np.errstate(all="ignore"):
            for name, fn in BIT_EXACT_BINARY.items():
                for got, want in ((getattr(ops, name)(ta, tb), fn(a, b)),
                                  (getattr(ops, name)(ta, ms.Tensor(one[0])), fn(a, one[0]))):
                    assert same_bits(got.asnumpy(), want), (name, n)
            for name, fn in BIT_EXACT_UNARY.items():
                assert same_bits(getattr(ops, name)(ta).asnumpy(), fn(a)), (name, n)
            assert same_bits(ops.sign(ta).asnumpy(), np.sign(a)), ("sign", n)  # sign(-0.0) is +0


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_maximum_minimum_of_opposite_zeros_give_the_second_as_numpy(dtype):
    # Eager, and jitted as one fused loop: of two equal operands the second, NaN from either.
    z, nan = dtype(0.0), dtype("nan")
    a = np.array([z, -z, z, -z, nan, 1, nan] * 7, dtype)
    b = np.array([-z, z, z, -z, 1, nan, -z] * 7, dtype)

    def f(x, y):
        return -ops.maximum(x, y), -ops.minimum(x, y)

    jf = ms.jit(f, mode="PIJit")
    ta, tb = ms.Tensor(a), ms.Tensor(b)
    for got in (f(ta, tb), jf(ta, tb), jf(ta, tb)):
        assert same_bits(got[0].asnumpy(), -np.maximum(a, b))
        assert same_bits(got[1].asnumpy(), -np.minimum(a, b))
    assert "fused(" in ms.get_code_extra(jf)["graphs"][0]


def test_neg_of_bool_names_alternatives():
    with pytest.raises(TypeError, match="neg: unsupported dtype Bool.*logical_not"):
        -ms.Tensor(np.array([True]))


# ---- where and clip ------------------------------------------------------------------------------

@pytest.mark.parametrize("dx", NP_DTYPES, ids=str)
@pytest.mark.parametrize("dy", NP_DTYPES, ids=str)
def test_where_promotes_and_broadcasts(rng, dx, dy):
    c = random_array(rng, (3, 1), np.bool_)
    x = random_array(rng, (4,), dx)
    y = random_array(rng, (3, 4), dy)
    rt = result_dtype(dx, dy)
    check(ops.where, lambda cc, xx, yy: np.where(cc, xx.astype(rt), yy.astype(rt)), c, x, y)


def test_where_with_non_bool_condition_and_scalars(rng):
    c = random_array(rng, (5,), np.int32, -1, 2)
    y = random_array(rng, (5,), np.float32)
    check(ops.where, np.where, c, 1.5, y)
    check(lambda cc, yy: ops.where(cc, yy, 0), lambda cc, yy: np.where(cc, yy, np.float32(0)), c, y)
    check(ops.where, np.where, c, noncontig(np.ones(1)) if False else y, y)
    with pytest.raises(TypeError, match="where: expected at least one of x and y to be a Tensor"):
        ops.where(ms.Tensor(c), 1, 2)
    with pytest.raises(ValueError, match=r"where: .* shapes \(5,\) \(2,\) \(5,\)"):
        ops.where(ms.Tensor(c), ms.Tensor(np.ones(2)), ms.Tensor(y))


@pytest.mark.parametrize("dtype", NUMERIC_NP_DTYPES, ids=str)
@pytest.mark.parametrize("bounds", [(-1, 2), (None, 1), (0, None), (2.5, 3.5)], ids=str)
def test_clip_matches_numpy(rng, dtype, bounds):
    a = random_array(rng, (3, 4), dtype)
    lo, hi = bounds
    rt = dtype  # each bound is a weak Python scalar: float bounds make integers float32
    for bound in (lo, hi):
        if bound is not None:
            rt = with_python_scalar(rt, bound)
    reference = computed_in(rt, lambda x: np.clip(x, lo, hi))
    check(lambda t: ops.clip(t, lo, hi), reference, a)
    check(lambda t: t.clamp(min=lo, max=hi), reference, a)


def test_clip_with_tensor_bounds_broadcasts_and_propagates_nan(rng):
    a = np.array([[np.nan, 1.0, 5.0], [-3.0, 2.0, 9.0]])
    lo = np.array([0.0, 0.0, 6.0])
    hi = np.array([[4.0], [1.0]])
    check(ops.clip, np.clip, a, lo, hi)
    with pytest.raises(ValueError, match="clip: at least one of min and max must be given"):
        ops.clip(ms.Tensor(a))


# ---- reductions ----------------------------------------------------------------------------------

def np_reduce(name, ddof=0):
    fns = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min,
           "all": np.all, "any": np.any}
    def run(x, axis, keepdims):
        if name in ("sum", "prod", "mean", "var", "std"):
            # MindSpore's result dtype, computed in: int64 sums, float32 means of integers.
            x = x.astype(reduction_dtype(name, x.dtype))
        if name in ("var", "std"):
            return getattr(np, name)(x, axis=axis, ddof=ddof, keepdims=keepdims)
        if name in ("argmax", "argmin"):
            return getattr(np, name)(x, axis=axis, keepdims=keepdims)
        return fns[name](x, axis=axis, keepdims=keepdims)
    return run


REDUCTIONS = ["sum", "mean", "prod", "max", "min", "all", "any", "var", "std"]


def reduction(name):
    """The reducing op of `name`: ops.max and ops.min return (values, indices) as
    MindSpore's do, so the value reductions are ops.amax and ops.amin."""
    return {"max": ops.amax, "min": ops.amin}.get(name) or getattr(ops, name)
AXES = [None, 0, -1, (0, 2), ()]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dtype", NP_DTYPES, ids=str)
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_match_numpy(rng, name, dtype, axis, keepdims):
    a = random_array(rng, (3, 4, 5), dtype, -3, 4)
    np_axis = None if axis == () else axis
    # float16: pijit accumulates in double and rounds once, NumPy in float32 or float16 (var):
    # a few float16 ulps apart, and near-zero sums need an absolute bound.
    half = dtype == np.float16
    check(lambda t: reduction(name)(t, axis, keepdims=keepdims),
          lambda x: np_reduce(name)(x, np_axis, keepdims), a, rtol=4e-3 if half else 1e-5,
          atol=4e-2 if half else 0.0)


@pytest.mark.parametrize("name", REDUCTIONS + ["argmax", "argmin"])
def test_reductions_of_non_contiguous_and_0d_inputs(rng, name):
    a = random_array(rng, (4, 5), np.float64)
    for axis in (None, 0, 1):
        if name.startswith("arg") and axis is None:
            continue
        check(lambda t: reduction(name)(t, axis), lambda x: np_reduce(name)(x, axis, False),
              a, tensors=[noncontig(a)])
    s = np.array(2.5)
    check(lambda t: reduction(name)(t), lambda x: np_reduce(name)(x, None, False), s)


@pytest.mark.parametrize("name", REDUCTIONS + ["argmax", "argmin"])
@pytest.mark.parametrize("shape,axis", [((0, 3), 0), ((0, 3), 1), ((0,), None), ((2, 0), 1)],
                         ids=str)
def test_reductions_of_empty_tensors(name, shape, axis):
    a = np.zeros(shape)
    check(lambda t: reduction(name)(t, axis), lambda x: np_reduce(name)(x, axis, False), a)


@pytest.mark.parametrize("ddof", [0, 1, 2])
@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std_ddof(rng, name, ddof):
    a = random_array(rng, (4, 6), np.float32)
    check(lambda t: reduction(name)(t, 1, ddof), lambda x: np_reduce(name, ddof)(x, 1, False),
          a, rtol=1e-5)
    check(lambda t: getattr(t, name)(axis=0, ddof=ddof, keepdims=True),
          lambda x: np_reduce(name, ddof)(x, 0, True), a, rtol=1e-5)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", NP_DTYPES, ids=str)
@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_argmax_argmin_match_numpy(rng, name, dtype, axis, keepdims):
    a = random_array(rng, (4, 5), dtype, -2, 3)  # ties: the first index wins
    check(lambda t: reduction(name)(t, axis, keepdims), lambda x: np_reduce(name)(x, axis, keepdims), a)


def test_argmax_and_max_treat_nan_as_extreme():
    a = np.array([1.0, np.nan, 3.0, np.nan])
    check(ops.argmax, np.argmax, a)
    check(ops.argmin, np.argmin, a)
    assert np.isnan(ops.amax(ms.Tensor(a)).item())


@given(data=st.data(), name=st.sampled_from(REDUCTIONS + ["argmax", "argmin"]),
       dtype=st.sampled_from(["int32", "int64", "float32", "float64", "bool"]),
       keepdims=st.booleans())
@settings(max_examples=150, deadline=None)
def test_reductions_hypothesis(data, name, dtype, keepdims):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=4))
    elems = st.floats(-100, 100, width=32) if dtype.startswith("float") else None
    if dtype.startswith("int"):
        elems = st.integers(-20, 20)
    a = data.draw(hnp.arrays(dtype, shape, elements=elems))
    if name.startswith("arg"):
        axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    else:
        axis = data.draw(st.none() | hnp.valid_tuple_axes(len(shape), min_size=1))
    if name == "prod" and dtype.startswith("float") and a.size:
        # A product whose partial products can overflow depends on the order of its factors
        # (16^32 * 0 is NaN, 16^31 * 0 * 16 is 0): no order overflows where the product of
        # the factors' magnitudes, taken as 1 below 1, stays finite.
        bound = np.prod(np.maximum(np.abs(a.astype(np.float64)), 1.0), axis=axis)
        assume(np.all(bound < np.finfo(dtype).max))
    # The spread of equal values is 0 up to the rounding of their mean, which NumPy computes
    # in float32 (pijit accumulates in float64): up to a few ulps of the largest magnitude.
    atol = 1e-9
    if name in ("var", "std") and dtype == "float32" and a.size:
        atol = max(atol, 4 * float(np.finfo(np.float32).eps) * float(np.abs(a).max()))
    check(lambda t: reduction(name)(t, axis, keepdims=keepdims),
          lambda x: np_reduce(name)(x, axis, keepdims), a, rtol=1e-4, atol=atol)


def test_reduction_errors_name_op_and_shape():
    t = ms.Tensor(np.zeros((0, 2)))
    with pytest.raises(ValueError, match=r"max: zero-size reduction over a tensor of shape \(0, 2\)"):
        ops.amax(t, 0)
    with pytest.raises(ValueError, match=r"argmin: attempt to get argmin of an empty sequence"):
        ops.argmin(t)
    with pytest.raises(ValueError, match="prod: axis 2 is out of bounds for a tensor of dimension 2"):
        ops.prod(t, 2)
    with pytest.raises(TypeError, match="argmax: axis must be an int"):
        ops.argmax(t, (0, 1))


# ---- softmax -------------------------------------------------------------------------------------

def np_softmax(x, axis, log=False):
    x = x.astype(float_function_dtype(x.dtype))  # integers compute in float32
    shifted = x - x.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    s = e.sum(axis=axis, keepdims=True)
    return (shifted - np.log(s)) if log else e / s


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", NUMERIC_NP_DTYPES, ids=str)
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_matches_numpy(rng, log, dtype, axis):
    a = random_array(rng, (3, 4, 5), dtype, -20, 20)
    fn = ops.log_softmax if log else ops.softmax
    # float16 is computed in float32 and rounded once: within a float16 ulp of the reference.
    tol = dict(rtol=2e-3, atol=2e-3) if dtype == np.float16 else dict(rtol=1e-5, atol=1e-6)
    check(lambda t: fn(t, axis), lambda x: np_softmax(x, axis, log), a, **tol)
    check(lambda t: fn(t, axis), lambda x: np_softmax(x, axis, log), a,
          tensors=[noncontig(a)], **tol)


def test_softmax_is_stable_for_large_inputs():
    a = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -1000.0]], np.float32)
    out = ops.softmax(ms.Tensor(a)).asnumpy()
    np.testing.assert_allclose(out, np_softmax(a.astype(np.float64), -1), rtol=1e-6)
    assert np.isfinite(ops.log_softmax(ms.Tensor(a)).asnumpy()).all()


def test_softmax_errors():
    with pytest.raises(TypeError, match="softmax: unsupported dtype Bool"):
        ops.softmax(ms.Tensor(np.array([True])))
    with pytest.raises(ValueError, match="log_softmax: axis 3 is out of bounds"):
        ops.log_softmax(ms.Tensor(np.ones((2, 2))), 3)
    assert ops.softmax(ms.Tensor(np.zeros((0, 3)))).shape == (0, 3)
