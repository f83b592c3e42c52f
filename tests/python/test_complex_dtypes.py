"""complex64 and complex128: dtype objects, creation, NumPy and DLPack interop, arithmetic with
broadcasting and strided inputs, abs, exp, log and sqrt, real, imag, conj, angle, Complex,
ComplexAbs, Polar and view_as_real, sum, mean and prod, casts and promotion with the real dtypes,
copies and views, clear TypeErrors for the ops that do not take complex tensors, and jitted
functions equal to eager ones (complex steps run eagerly: the graph breaks there). References are
NumPy's results in the same dtype."""
import sys

import numpy as np
import pytest

import pijit as ms
from pijit import ops

T = ms.Tensor
COMPLEX = [np.dtype(np.complex64), np.dtype(np.complex128)]
MS_OF = {np.dtype(np.complex64): ms.complex64, np.dtype(np.complex128): ms.complex128}
RTOL = {np.dtype(np.complex64): 2e-6, np.dtype(np.complex128): 1e-13,
        np.dtype(np.float32): 2e-6, np.dtype(np.float64): 1e-13}


@pytest.fixture
def rng():
    return np.random.default_rng(20261127)


def crandom(rng, shape, dtype):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def assert_matches(t, expected):
    """`t` has NumPy's dtype, shape and (within the dtype's rounding) values."""
    expected = np.asarray(expected)
    assert isinstance(t, ms.Tensor), type(t)
    got = t.asnumpy()
    assert got.dtype == expected.dtype, f"{t.dtype} != numpy {expected.dtype}"
    assert got.shape == expected.shape
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=RTOL[expected.dtype], atol=1e-6)
    else:
        np.testing.assert_array_equal(got, expected)


# ---- dtype objects, creation and interop ------------------------------------------------------

@pytest.mark.parametrize("name, printed, size", [("complex64", "Complex64", 8),
                                                 ("complex128", "Complex128", 16)])
def test_dtype_objects_print_like_mindspore(name, printed, size):
    dt = getattr(ms, name)
    assert str(dt) == printed and dt.itemsize == size
    assert getattr(ms.dtype, name) is dt and name in ms.__all__ and name in ms.dtype.__all__
    assert ms.dtype_to_nptype(dt) is getattr(np, name)
    assert ms.pytype_to_dtype(getattr(np, name)) is dt
    assert ms.dtype_to_pytype(dt) is complex
    assert ms.pytype_to_dtype(complex) is ms.complex128


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_numpy_arrays_round_trip_and_python_scalars_come_back(rng, dtype):
    a = crandom(rng, (3, 4), dtype)
    t = T(a)
    assert t.dtype == MS_OF[dtype]
    assert_matches(t, a)
    np.testing.assert_array_equal(np.asarray(t), a)
    assert t[1, 2].item() == complex(a[1, 2])
    assert t.tolist() == a.tolist()
    assert "j" in repr(t) and str(MS_OF[dtype]) in repr(t)


def test_python_complex_values_make_complex128_and_a_dtype_is_honoured():
    assert T(1 + 2j).dtype == ms.complex128 and T(1 + 2j).item() == 1 + 2j
    assert T([1, 2j]).dtype == ms.complex128
    t = T([1.5, 2 - 1j], ms.complex64)
    assert_matches(t, np.array([1.5, 2 - 1j], np.complex64))
    assert_matches(T(np.array([1, 2]), ms.complex64), np.array([1, 2], np.complex64))


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_zeros_ones_full_and_likes_make_complex_tensors(dtype):
    md = MS_OF[dtype]
    assert_matches(ops.zeros((2, 3), md), np.zeros((2, 3), dtype))
    assert_matches(ops.ones((2, 3), md), np.ones((2, 3), dtype))
    assert_matches(ops.full((2, 2), 1 - 2j, md), np.full((2, 2), 1 - 2j, dtype))
    x = T(np.ones(3, dtype))
    assert_matches(ops.zeros_like(x), np.zeros(3, dtype))
    assert_matches(ops.ones_like(x), np.ones(3, dtype))


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_dlpack_round_trips_through_torch(rng, dtype):
    torch = pytest.importorskip("torch")
    a = crandom(rng, (2, 3), dtype)
    tt = torch.from_dlpack(T(a))
    np.testing.assert_array_equal(tt.numpy(), a)
    back = ms.from_dlpack(torch.from_numpy(a.copy()))
    assert_matches(back, a)


# ---- arithmetic, promotion and functions --------------------------------------------------------

BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "equal": np.equal, "not_equal": np.not_equal}


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops_broadcast_and_take_strided_inputs(rng, dtype, name):
    a = crandom(rng, (4, 6), dtype)
    b = crandom(rng, (6,), dtype)
    b[::2] = a[0, ::2]  # some equal elements for equal/not_equal
    fn = getattr(ops, name)
    assert_matches(fn(T(a), T(b)), BINARY[name](a, b))
    c = crandom(rng, (6, 1), dtype)
    assert_matches(fn(T(a).transpose(1, 0), T(c)), BINARY[name](a.T, c))
    assert_matches(fn(T(a)[:, ::2], T(b)[::2]), BINARY[name](a[:, ::2], b[::2]))


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_operators_and_python_scalars(rng, dtype):
    a, b = crandom(rng, (3, 2), dtype), crandom(rng, (3, 2), dtype)
    x, y = T(a), T(b)
    assert_matches(x + y, a + b)
    assert_matches(x - y, a - b)
    assert_matches(x * y, a * b)
    assert_matches(x / y, a / b)
    assert_matches(-x, -a)
    assert_matches(x * 2.5, a * dtype.type(2.5))
    assert_matches(x + (1 - 1j), a + dtype.type(1 - 1j))
    assert_matches((x == y), a == b)
    assert_matches((x != x), a != a)


@pytest.mark.parametrize("real, cplx, result", [
    (np.float32, np.complex64, np.complex64), (np.float64, np.complex64, np.complex128),
    (np.float16, np.complex64, np.complex64), (np.int32, np.complex64, np.complex64),
    (np.int64, np.complex128, np.complex128), (np.uint64, np.complex64, np.complex64),
    (np.bool_, np.complex64, np.complex64), (np.float32, np.complex128, np.complex128)])
def test_promotion_with_real_tensors_follows_mindspore(real, cplx, result):
    r = np.array([1, 0, 1]).astype(real)
    c = np.array([1 + 1j, 2, -1j], cplx)
    for got in (T(r) + T(c), T(c) * T(r), ops.sub(T(r), T(c))):
        assert got.dtype == MS_OF[np.dtype(result)]
    np.testing.assert_allclose((T(r) + T(c)).asnumpy(), r.astype(result) + c.astype(result))


def test_python_complex_scalars_make_real_tensors_complex():
    x = T(np.array([1.0, 2.0], np.float32))
    assert (x * 1j).dtype == ms.complex64
    assert_matches(x * 1j, np.array([1j, 2j], np.complex64))
    assert (T(np.array([1.0], np.float64)) + 1j).dtype == ms.complex128
    assert (T(np.array([3], np.int32)) - 2j).dtype == ms.complex64


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "square", "neg"])
def test_unary_functions_match_numpy(rng, dtype, name):
    a = crandom(rng, (5, 3), dtype)
    ref = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "square": np.square,
           "neg": np.negative}[name]
    assert_matches(getattr(ops, name)(T(a)), ref(a))
    assert_matches(getattr(ops, name)(T(a)[::2].transpose(1, 0)), ref(a[::2].T))


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_abs_and_complex_abs_are_real(rng, dtype):
    a = crandom(rng, (4, 3), dtype)
    a[0, 0] = 1e30 + 1e30j  # hypot: no overflow in float32
    for got in (ops.abs(T(a)), abs(T(a)), ops.ComplexAbs()(T(a)), T(a).abs()):
        assert_matches(got, np.abs(a))


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_parts_conj_angle_and_view_as_real(rng, dtype):
    a = crandom(rng, (3, 4), dtype)
    x = T(a)
    assert_matches(ops.real(x), a.real)
    assert_matches(ops.imag(x), a.imag)
    assert_matches(ops.Real()(x), a.real)
    assert_matches(ops.Imag()(x), a.imag)
    assert_matches(ops.conj(x), np.conj(a))
    assert_matches(ops.Conj()(x), np.conj(a))
    assert_matches(x.conj(), np.conj(a))
    assert_matches(ops.angle(x), np.angle(a))
    assert_matches(ops.view_as_real(x), np.stack([a.real, a.imag], axis=-1))
    # strided inputs: every part reads the right elements
    assert_matches(ops.real(x[:, 1::2]), a[:, 1::2].real)
    assert_matches(ops.imag(x.transpose(1, 0)), a.T.imag)
    assert_matches(ops.view_as_real(x[1:, ::3]), np.stack([a[1:, ::3].real, a[1:, ::3].imag], -1))
    assert ops.is_complex(x) and not ops.is_complex(T(a.real))


def test_parts_are_copies_not_views():
    x = T(np.array([1 + 2j, 3 + 4j], np.complex64))
    r = ops.real(x)
    r[0] = 10.0
    pairs = ops.view_as_real(x)
    pairs[0, 1] = 7.0
    assert x.asnumpy()[0] == 1 + 2j


def test_real_tensors_have_zero_imaginary_parts_and_are_their_own_conjugates():
    a = np.array([1.5, -2.0], np.float32)
    assert_matches(ops.real(T(a)), a)
    assert_matches(ops.imag(T(a)), np.zeros(2, np.float32))
    assert_matches(ops.conj(T(a)), a)
    assert_matches(ops.angle(T(a)), np.angle(a).astype(np.float32))


@pytest.mark.parametrize("real", [np.float32, np.float64])
def test_complex_and_polar_build_from_parts_with_broadcasting(rng, real):
    re = rng.standard_normal((3, 1)).astype(real)
    im = rng.standard_normal((4,)).astype(real)
    want = (re + 1j * im).astype(np.complex64 if real == np.float32 else np.complex128)
    assert_matches(ops.Complex()(T(re), T(im)), want)
    r, theta = np.abs(re), im
    assert_matches(ops.Polar()(T(r), T(theta)), (r * np.exp(1j * theta)).astype(want.dtype))
    assert_matches(ops.polar(T(r), T(theta)), (r * np.exp(1j * theta)).astype(want.dtype))


def test_complex_and_polar_refuse_mixed_or_integer_parts():
    f32, f64 = T(np.ones(2, np.float32)), T(np.ones(2, np.float64))
    with pytest.raises(TypeError, match="Complex: real and imag must both be Float32 or both"):
        ops.Complex()(f32, f64)
    with pytest.raises(TypeError, match="Complex: .*Int64"):
        ops.Complex()(T(np.ones(2, np.int64)), T(np.ones(2, np.int64)))
    with pytest.raises(TypeError, match="polar: abs and angle must both be"):
        ops.polar(f32, f64)
    with pytest.raises(TypeError, match="view_as_real: expected a Complex64 or Complex128"):
        ops.view_as_real(f32)
    with pytest.raises(TypeError, match="ComplexAbs: expected a Complex64 or Complex128"):
        ops.ComplexAbs()(f32)


# ---- reductions, casts, copies ----------------------------------------------------------------

@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
@pytest.mark.parametrize("name", ["sum", "mean", "prod"])
def test_reductions_over_axes_and_strided_inputs(rng, dtype, name):
    a = crandom(rng, (3, 4, 5), dtype) * dtype.type(0.7)
    ref = getattr(np, name)
    fn = getattr(ops, name) if name != "sum" else ops.sum
    assert_matches(fn(T(a)), ref(a))
    for axis in (0, 1, 2, (0, 2)):
        assert_matches(fn(T(a), axis), ref(a, axis=axis))
    assert_matches(fn(T(a), 1, keep_dims=True), ref(a, axis=1, keepdims=True))
    assert_matches(fn(T(a).transpose(2, 0, 1)[::2], 1), ref(a.transpose(2, 0, 1)[::2], axis=1))
    assert_matches(getattr(T(a), name)(), ref(a))


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_casts_to_real_keep_the_real_part_and_back_add_a_zero_imaginary_part(rng, dtype):
    a = crandom(rng, (2, 3), dtype)
    for real in (np.float32, np.float64, np.int32, np.float16):
        got = T(a).astype(MS_OF_REAL[np.dtype(real)])
        np.testing.assert_array_equal(got.asnumpy(), a.real.astype(real))
    assert_matches(T(a).astype(ms.bool_), a != 0)
    other = np.complex128 if dtype == np.complex64 else np.complex64
    assert_matches(T(a).astype(MS_OF[np.dtype(other)]), a.astype(other))
    assert_matches(ops.cast(T(a.real), MS_OF[dtype]), a.real.astype(dtype))
    assert_matches(T(a.real.astype(np.float16)).astype(MS_OF[dtype]),
                   a.real.astype(np.float16).astype(dtype))


MS_OF_REAL = {np.dtype(np.float32): ms.float32, np.dtype(np.float64): ms.float64,
              np.dtype(np.int32): ms.int32, np.dtype(np.float16): ms.float16}


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_shape_ops_and_indexing_copy_whole_elements(rng, dtype):
    a = crandom(rng, (2, 3, 4), dtype)
    x = T(a)
    assert_matches(x.reshape(6, 4), a.reshape(6, 4))
    assert_matches(x.transpose(2, 0, 1), a.transpose(2, 0, 1))
    assert_matches(x.transpose(2, 0, 1).reshape(-1), a.transpose(2, 0, 1).reshape(-1))
    assert_matches(x[1, ::2, 1:3], a[1, ::2, 1:3])
    assert_matches(x[..., -1], a[..., -1])
    assert_matches(ops.concat((x, x[:1]), 0), np.concatenate((a, a[:1]), 0))
    assert_matches(ops.stack((x[0], x[1]), 2), np.stack((a[0], a[1]), 2))
    assert_matches(ops.expand_dims(x, 1), a[:, None])
    assert_matches(ops.squeeze(x[:1]), a[0])
    assert_matches(ops.broadcast_to(x[:, :1], (2, 3, 4)), np.broadcast_to(a[:, :1], (2, 3, 4)))
    assert_matches(ops.flatten(x), a.reshape(ops.flatten(T(a.real)).shape))


# ---- what complex tensors do not do -------------------------------------------------------------

def _unsupported():
    x = T(np.array([1 + 1j, 2], np.complex64))
    return x, [
        ("less", lambda: x < x), ("greater_equal", lambda: ops.greater_equal(x, x)),
        ("maximum", lambda: ops.maximum(x, x)), ("max", lambda: ops.max(x)),
        ("min", lambda: x.min()), ("matmul", lambda: ops.matmul(x.reshape(1, 2), x.reshape(2, 1))),
        ("sin", lambda: ops.sin(x)), ("floor_divide", lambda: x // x), ("pow", lambda: x ** 2),
        ("argmax", lambda: ops.argmax(x)), ("argsort", lambda: ops.argsort(x)),
        ("topk", lambda: ops.topk(x, 1)),
        ("sign", lambda: ops.sign(x)), ("relu", lambda: ops.relu(x)), ("where", lambda: ops.where(
            T(np.array([True, False])), x, x)), ("softmax", lambda: ops.softmax(x)),
        ("var", lambda: x.var()), ("bitwise_and", lambda: ops.bitwise_and(x, x)),
        ("arange", lambda: ops.arange(3, dtype=ms.complex64)),
    ]


@pytest.mark.parametrize("index", range(len(_unsupported()[1])), ids=[n for n, _ in _unsupported()[1]])
def test_unsupported_ops_are_type_errors_naming_the_dtype(index):
    _, cases = _unsupported()
    name, call = cases[index]
    with pytest.raises(TypeError, match="Complex64"):
        call()


def test_setitem_on_a_complex_tensor_is_a_type_error():
    x = T(np.array([1 + 1j, 2], np.complex64))
    with pytest.raises(TypeError, match="__setitem__: Complex64 tensors are not supported"):
        x[0] = 3.0
    assert x.asnumpy()[0] == 1 + 1j


def test_gradients_through_complex_tensors_are_refused_cleanly():
    c = T(np.array([1 + 1j, 2], np.complex64))

    def through_cast(x):
        return ops.real((x.astype(ms.complex64) * c).sum())

    def through_complex(x):
        return ops.abs(ops.Complex()(x, x)).sum()
    x = T(np.array([1.0, 2.0], np.float32))
    with pytest.raises(NotImplementedError, match="gradients through Complex64 tensors"):
        ms.grad(through_cast)(x)
    with pytest.raises(TypeError, match="Complex: gradients through complex tensors"):
        ms.grad(through_complex)(x)


def test_refcounts_do_not_leak_through_complex_ops():
    x = T(np.array([1 + 1j, 2], np.complex64))
    before = sys.getrefcount(x)
    for _ in range(100):
        ops.real(x), ops.view_as_real(x), x * x, ops.abs(x), x.sum()
        with pytest.raises(TypeError):
            x < x
    assert sys.getrefcount(x) == before


# ---- jitted functions --------------------------------------------------------------------------

def complex_program(a, b, w):
    z = ops.Complex()(a, b) * w + 1j
    s = (z * ops.conj(z)).sum(axis=0)
    return ops.real(s) + ops.abs(z).mean(), ops.view_as_real(ops.exp(z))


def real_around_complex(a, b):
    h = ops.relu(a) * 2.0  # a graph before the complex step
    z = ops.Complex()(h, b)
    return ops.abs(z * z) + h


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_jitted_complex_programs_equal_eager(rng, dtype):
    a, b = rng.standard_normal((4, 3)).astype(dtype), rng.standard_normal((4, 3)).astype(dtype)
    w = T(crandom(rng, (3,), np.complex64 if dtype == np.float32 else np.complex128))
    for fn in (complex_program, real_around_complex):
        args = (T(a), T(b), w) if fn is complex_program else (T(a), T(b))
        eager = fn(*args)
        jf = ms.jit(fn, mode="PIJit")
        ms.reset(jf)
        for _ in range(3):
            got = jf(*args)
            for g, e in zip(got if isinstance(got, tuple) else (got,),
                            eager if isinstance(eager, tuple) else (eager,)):
                assert g.dtype == e.dtype
                np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-6)


def test_jitted_complex_arithmetic_breaks_the_graph_and_runs_eagerly():
    def f(x, y):
        return (x * y + x).sum()
    a = T(np.array([1 + 2j, 3 - 1j], np.complex64))
    b = T(np.array([0.5j, 2], np.complex64))
    jf = ms.jit(f, mode="PIJit")
    ms.reset(jf)
    for _ in range(2):
        assert_matches(jf(a, b), f(a, b).asnumpy())


def test_jitted_unsupported_complex_op_is_the_eager_type_error():
    def f(x):
        return ops.maximum(x, x)
    jf = ms.jit(f, mode="PIJit")
    with pytest.raises(TypeError, match="maximum: Complex64"):
        jf(T(np.array([1j], np.complex64)))


def test_whole_graph_jit_of_complex_steps_names_them_as_unsupported():
    def f(x):
        return (x * x).sum()
    jf = ms.jit(f)
    with pytest.raises(ms.GraphBreakError, match="(?s)unsupported_op.*mul: Complex64 tensors are not "
                                                  "supported in compiled graphs"):
        jf(T(np.array([1j], np.complex64)))
    pf = ms.jit(f, mode="PIJit")
    ms.reset(pf)
    assert_matches(pf(T(np.array([1j], np.complex64))), np.complex64(-1))
    assert ms.get_code_extra(pf)["reasons"][0]["category"] == "unsupported_op"


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_norms_of_complex_tensors_are_norms_of_the_magnitudes(rng, dtype):
    a = crandom(rng, (3, 4), dtype)
    real = np.float32 if dtype == np.complex64 else np.float64
    assert_matches(ops.norm(T(a)), np.linalg.norm(a).astype(real))
    assert_matches(ops.norm(T(a), 1, 1), np.linalg.norm(a, 1, axis=1).astype(real))
    assert_matches(ops.norm(T(a), np.inf, 0), np.linalg.norm(a, np.inf, axis=0).astype(real))
    assert_matches(ops.norm(T(a), "fro", (0, 1)), np.linalg.norm(a, "fro").astype(real))


@pytest.mark.parametrize("name, call", [
    ("sinc", lambda x: ops.sinc(x)), ("erfinv", lambda x: ops.erfinv(x)),
    ("i0", lambda x: ops.i0(x)), ("bessel_i0", lambda x: ops.bessel_i0(x)),
    ("multinomial", lambda x: ops.multinomial(x, 1))])
def test_real_functions_composed_in_python_refuse_complex_input(name, call):
    with pytest.raises(TypeError, match=f"{name}: Complex64 tensors are not supported"):
        call(T(np.array([0.5 + 1j, 1], np.complex64)))
