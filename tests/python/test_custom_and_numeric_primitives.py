"""ops.Custom (pyfunc), the kernel-registration helpers, primitives defined in Python, and the
numeric primitives (AccumulateNV2, FloatStatus, Eig, MatrixLogarithm, Betainc,
ParameterizedTruncatedNormal, Conv3DTranspose) against NumPy, SciPy, torch and finite
differences."""
import numpy as np
import pytest
import scipy.linalg
import scipy.special

import pijit as ms
from pijit import ops

RNG = np.random.default_rng(0)


def test_pyfunc_custom_forward_backward_and_checks():
    def fn(x, y):
        return np.sin(x) * y

    def bprop(x, y, out, dout):
        return ops.cos(x) * y * dout, ops.sin(x) * dout

    op = ops.Custom(fn, lambda a, b: a, lambda a, b: a, func_type="pyfunc", bprop=bprop)
    x = RNG.normal(size=(3, 4)).astype(np.float32)
    y = RNG.normal(size=(3, 4)).astype(np.float32)
    np.testing.assert_allclose(op(ms.Tensor(x), ms.Tensor(y)).asnumpy(), np.sin(x) * y,
                               rtol=1e-6)
    gx, gy = ms.grad(lambda a, b: (op(a, b) * 2).sum(), grad_position=(0, 1))(
        ms.Tensor(x), ms.Tensor(y))
    np.testing.assert_allclose(gx.asnumpy(), 2 * np.cos(x) * y, rtol=1e-5)
    np.testing.assert_allclose(gy.asnumpy(), 2 * np.sin(x), rtol=1e-5)
    two = ops.Custom(lambda a: (a + 1, a * 2), ((2,), (2,)), (ms.float64, ms.int32), "pyfunc")
    p, q = two(ms.Tensor(np.array([1.5, 2.5])))
    assert p.dtype == ms.float64 and q.dtype == ms.int32
    np.testing.assert_array_equal(q.asnumpy(), [3, 5])
    wrong = ops.Custom(lambda a: a[:1], (2,), ms.float32, "pyfunc")
    with pytest.raises(ValueError, match="out_shape"):
        wrong(ms.Tensor(np.ones(2, np.float32)))
    with pytest.raises(NotImplementedError, match="pyfunc"):
        ops.Custom(fn, (3,), ms.float32, "akg")
    with pytest.raises(TypeError):
        ops.Custom(42, (3,), ms.float32, "pyfunc")


def test_registration_helpers_record_and_return_the_function():
    info = (ops.CustomRegOp("my_add").input(0, "a").input(1, "b").output(0, "y")
            .dtype_format(ops.DataType.F32_Default, ops.DataType.F32_Default,
                          ops.DataType.F32_Default).target("CPU").get_op_info())
    assert info["op_name"] == "my_add" and len(info["inputs"]) == 2
    assert info["dtype_format"][0][0] == ("float32", "DefaultFormat") and info["target"] == "CPU"

    @ops.custom_info_register(ops.CustomRegOp("f").output(0, "y"))
    def f(x):
        return x + 1

    assert f(1) == 2 and f.reg_info["op_name"] == "f"
    assert ops.kernel(f) is f
    add = ops.Add()
    assert ops.get_vm_impl_fn(add) is add


class Scale(ops.PrimitiveWithInfer):
    @ops.prim_attr_register
    def __init__(self, factor=2.0):
        self.init_prim_io_names(inputs=["x"], outputs=["y"])

    def infer_shape(self, shape):
        return shape

    def infer_dtype(self, dtype):
        if dtype not in (ms.float32, ms.float64):
            raise TypeError("Scale: float inputs only")
        return dtype

    def infer_value(self, x):
        return x * self.factor


class NoKernel(ops.PrimitiveWithCheck):
    @ops.prim_attr_register
    def __init__(self):
        pass

    def check_shape(self, shape):
        if len(shape) != 1:
            raise ValueError("NoKernel: 1-D only")


def test_primitives_defined_in_python():
    x = ms.Tensor(np.array([1.0, 2.0], np.float32))
    assert Scale().factor == 2.0 and Scale(3.0).input_names == ("x",)
    np.testing.assert_array_equal(Scale(3.0)(x).asnumpy(), [3.0, 6.0])
    with pytest.raises(TypeError, match="float"):
        Scale()(ms.Tensor(np.array([1, 2], np.int32)))
    with pytest.raises(ValueError, match="1-D"):
        NoKernel()(ms.Tensor(np.ones((2, 2), np.float32)))
    with pytest.raises(NotImplementedError, match="infer_value"):
        NoKernel()(x)


def test_accumulate_and_float_status():
    parts = [RNG.normal(size=(2, 3)).astype(np.float32) for _ in range(4)]
    np.testing.assert_allclose(ops.AccumulateNV2()([ms.Tensor(p) for p in parts]).asnumpy(),
                               sum(parts), rtol=1e-6)
    with pytest.raises(ValueError):
        ops.AccumulateNV2()([ms.Tensor(parts[0]), ms.Tensor(parts[0][:1])])
    status = ops.FloatStatus()
    assert status(ms.Tensor(parts[0])).asnumpy().tolist() == [0.0]
    for bad in (np.nan, np.inf, -np.inf):
        assert status(ms.Tensor(np.array([1.0, bad], np.float32))).asnumpy().tolist() == [1.0]


def test_eig_and_matrix_logarithm():
    a = RNG.normal(size=(3, 4, 4))
    values, vectors = ops.Eig(True)(ms.Tensor(a))
    assert values.dtype == ms.complex128 and vectors.shape == (3, 4, 4)
    v, w = vectors.asnumpy(), values.asnumpy()
    np.testing.assert_allclose(a @ v, v * w[:, None, :], atol=1e-10)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1, rtol=1e-10)
    only, empty = ops.Eig()(ms.Tensor(a.astype(np.float32)))
    assert only.dtype == ms.complex64 and empty.shape == (0,)
    np.testing.assert_allclose(np.sort_complex(ops.eigvals(ms.Tensor(a)).asnumpy()[0]),
                               np.sort_complex(np.linalg.eigvals(a[0])), rtol=1e-10)
    spd = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)
    logs = ops.MatrixLogarithm()(ms.Tensor(spd.astype(np.complex128))).asnumpy()
    for m, log in zip(spd, logs):
        np.testing.assert_allclose(scipy.linalg.expm(log), m, rtol=1e-8, atol=1e-8)
    with pytest.raises(TypeError):
        ops.MatrixLogarithm()(ms.Tensor(spd))
    with pytest.raises(ValueError):
        ops.Eig()(ms.Tensor(a[:, :3]))


def test_betainc_and_its_gradient():
    a = RNG.uniform(0.5, 4, size=6)
    b = RNG.uniform(0.5, 4, size=6)
    x = RNG.uniform(0.05, 0.95, size=6)
    got = ops.Betainc()(ms.Tensor(a), ms.Tensor(b), ms.Tensor(x))
    np.testing.assert_allclose(got.asnumpy(), scipy.special.betainc(a, b, x), rtol=1e-12)
    grad = ms.grad(lambda t: ops.Betainc()(ms.Tensor(a), ms.Tensor(b), t).sum())(ms.Tensor(x))
    eps = 1e-6
    numeric = (scipy.special.betainc(a, b, x + eps) - scipy.special.betainc(a, b, x - eps)) / \
        (2 * eps)
    np.testing.assert_allclose(grad.asnumpy(), numeric, rtol=1e-6)
    with pytest.raises(TypeError):
        ops.Betainc()(ms.Tensor(a), ms.Tensor(b), ms.Tensor(x.astype(np.float32)))


def test_parameterized_truncated_normal_bounds_and_moments():
    op = ops.ParameterizedTruncatedNormal(seed=3, seed2=4)
    mean = ms.Tensor(np.array([0.0, 5.0], np.float32))
    std = ms.Tensor(np.array([1.0, 2.0], np.float32))
    low = ms.Tensor(np.array([-0.5, 4.0], np.float32))
    high = ms.Tensor(np.array([2.0, 100.0], np.float32))
    draws = op((2, 20000), mean, std, low, high).asnumpy()
    assert draws.shape == (2, 20000)
    assert draws[0].min() >= -0.5 and draws[0].max() <= 2.0 and draws[1].min() >= 4.0
    for row, (m, s, lo, hi) in enumerate([(0, 1, -0.5, 2), (5, 2, 4, 100)]):
        alpha, beta = (lo - m) / s, (hi - m) / s
        z = scipy.special.ndtr(beta) - scipy.special.ndtr(alpha)
        pdf = lambda t: np.exp(-t * t / 2) / np.sqrt(2 * np.pi)  # noqa: E731
        expected = m + s * (pdf(alpha) - pdf(beta)) / z
        assert abs(draws[row].mean() - expected) < 0.03 * s
    np.testing.assert_array_equal(op((2, 5), mean, std, low, high).asnumpy(),
                                  op((2, 5), mean, std, low, high).asnumpy())


def test_conv3d_transpose_primitive_against_torch():
    torch = pytest.importorskip("torch")
    x = RNG.normal(size=(2, 4, 3, 4, 5)).astype(np.float32)
    w = RNG.normal(size=(4, 3, 2, 3, 2)).astype(np.float32)
    op = ops.Conv3DTranspose(4, 3, (2, 3, 2), stride=(2, 1, 2), pad_mode="pad",
                             pad=(1, 1, 0, 0, 1, 1), output_padding=(1, 0, 1))
    got = op(ms.Tensor(x), ms.Tensor(w)).asnumpy()
    want = torch.nn.functional.conv_transpose3d(torch.tensor(x), torch.tensor(w), stride=(2, 1, 2),
                                                padding=(1, 0, 1), output_padding=(1, 0, 1))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):
        op(ms.Tensor(x[:, :3]), ms.Tensor(w))


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sampler_3d_against_torch(mode, padding_mode, align_corners):
    torch = pytest.importorskip("torch")
    x = RNG.normal(size=(2, 3, 4, 5, 6))
    grid = RNG.uniform(-1.2, 1.2, size=(2, 3, 4, 2, 3))
    op = ops.GridSampler3D(mode, padding_mode, align_corners)
    got = op(ms.Tensor(x), ms.Tensor(grid))
    tx = torch.tensor(x, requires_grad=True)
    tg = torch.tensor(grid, requires_grad=True)
    want = torch.nn.functional.grid_sample(tx, tg, mode, padding_mode, align_corners)
    np.testing.assert_allclose(got.asnumpy(), want.detach().numpy(), rtol=1e-12, atol=1e-12)
    if mode == "bilinear":
        probe = RNG.normal(size=want.shape)
        (want * torch.tensor(probe)).sum().backward()
        gx, gg = ms.grad(lambda a, b: (op(a, b) * ms.Tensor(probe)).sum(), grad_position=(0, 1))(
            ms.Tensor(x), ms.Tensor(grid))
        np.testing.assert_allclose(gx.asnumpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(gg.asnumpy(), tg.grad.numpy(), rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError):
        op(ms.Tensor(x[0]), ms.Tensor(grid))
