"""Tensors on the GPU from Python: Tensor(..., device="GPU"), move_to, to, eager ops and
gradients where the tensors are, jitted graphs that take and return device tensors (replayed
as CUDA graphs), DLPack with a device, and the errors for mixing devices. The device checks
run only where a GPU is usable (scripts/gpu_check.sh runs them on one); the CPU side runs
everywhere."""
import numpy as np
import pytest

import pijit
from pijit import ops

GPU = pijit.cuda.is_available()
needs_gpu = pytest.mark.skipif(not GPU, reason=f"no usable GPU: {pijit.cuda.unavailable_reason()}")


def test_host_tensors_say_where_they_are_and_stay():
    t = pijit.Tensor(np.arange(4, dtype=np.float32), device="CPU")
    assert t.device == "CPU"
    assert t.move_to("CPU") is t
    assert t.to("CPU") is t
    assert t.to(pijit.float64).dtype == pijit.float64  # MindSpore's t.to(dtype) still casts
    assert t.to("CPU", pijit.int32).dtype == pijit.int32
    assert t.__dlpack_device__() == (1, 0)
    with pytest.raises(ValueError, match="unknown device 'Ascend'"):
        t.move_to("Ascend")
    with pytest.raises(TypeError, match="device must be a string"):
        pijit.Tensor([1.0], device=0)


@pytest.mark.skipif(GPU, reason="this machine has a GPU")
def test_without_a_gpu_moving_there_says_why():
    with pytest.raises(RuntimeError, match="CUDA is not available|built without CUDA"):
        pijit.Tensor([1.0, 2.0], device="GPU")
    with pytest.raises(RuntimeError, match="CUDA is not available|built without CUDA"):
        pijit.Tensor([1.0]).move_to("GPU")


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@needs_gpu
def test_values_go_to_the_gpu_and_come_back():
    x = rand(3, 5)
    t = pijit.Tensor(x, device="GPU")
    assert t.device == "GPU"
    np.testing.assert_array_equal(t.asnumpy(), x)
    np.testing.assert_array_equal(np.asarray(t), x)
    back = t.move_to("CPU")
    assert back.device == "CPU"
    np.testing.assert_array_equal(back.asnumpy(), x)
    assert t[1, 2].item() == pytest.approx(float(x[1, 2]))  # a view on the device, then its value
    assert "Tensor(shape=[3, 5]" in repr(t)
    with pytest.raises(BufferError):  # no host memory to share
        memoryview(t)
    with pytest.raises(TypeError, match="item assignment into a tensor on the GPU"):
        t[0, 0] = 1.0


@needs_gpu
def test_eager_ops_run_on_the_gpu_and_equal_the_cpu():
    a, b = rand(8, 16, seed=1), rand(16, 4, seed=2)
    ga, gb = pijit.Tensor(a, device="GPU"), pijit.Tensor(b, device="GPU")
    ca, cb = pijit.Tensor(a), pijit.Tensor(b)
    cases = [
        (lambda x, y: x * 2.0 + 1, (ga,), (ca,)),
        (lambda x, y: ops.exp(x) - x, (ga,), (ca,)),
        (lambda x, y: ops.matmul(x, y), (ga, gb), (ca, cb)),
        (lambda x, y: ops.reduce_sum(x, 1), (ga,), (ca,)),
        (lambda x, y: ops.softmax(x, axis=-1), (ga,), (ca,)),
        (lambda x, y: x.astype(pijit.float64), (ga,), (ca,)),
        (lambda x, y: ops.relu(x).T, (ga,), (ca,)),
    ]
    for i, (fn, on_gpu, on_cpu) in enumerate(cases):
        got = fn(*on_gpu, *([None] * (2 - len(on_gpu))))
        want = fn(*on_cpu, *([None] * (2 - len(on_cpu))))
        assert got.device == "GPU", i
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=2e-5, atol=1e-5, err_msg=str(i))


@needs_gpu
def test_mixing_devices_is_an_error_naming_both():
    g = pijit.Tensor(rand(4), device="GPU")
    with pytest.raises(ValueError, match="different devices.*GPU.*CPU"):
        g + pijit.Tensor(rand(4))
    # A 0-d host tensor (a scalar) goes with the device tensors, as a Python number does.
    np.testing.assert_allclose((g * pijit.Tensor(np.float32(3))).asnumpy(), rand(4) * 3, rtol=1e-6)


@needs_gpu
def test_gradients_of_device_tensors_run_on_the_device():
    x, w = rand(16, 8, seed=3), rand(8, 4, seed=4)

    def loss(x, w):
        h = ops.tanh(ops.matmul(x, w))
        return ops.reduce_sum(h * h)

    grad = pijit.grad(loss, grad_position=(0, 1))
    want = grad(pijit.Tensor(x), pijit.Tensor(w))
    got = grad(pijit.Tensor(x, device="GPU"), pijit.Tensor(w, device="GPU"))
    for g, e in zip(got, want):
        assert g.device == "GPU"
        np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-4, atol=1e-5)


@needs_gpu
def test_jitted_graphs_take_and_return_device_tensors_across_replays():
    def f(x, w, b):
        return ops.softmax(ops.relu(ops.matmul(x, w) + b), axis=-1)

    jitted = pijit.jit(f)
    w, b = pijit.Tensor(rand(32, 8, seed=5), device="GPU"), pijit.Tensor(rand(8, seed=6), device="GPU")
    for call in range(5):  # compile, run kernel by kernel, record, replay, replay
        x = rand(16, 32, seed=10 + call)
        got = jitted(pijit.Tensor(x, device="GPU"), w, b)
        assert got.device == "GPU"
        want = f(pijit.Tensor(x), w.move_to("CPU"), b.move_to("CPU"))
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6, err_msg=str(call))


@needs_gpu
def test_a_jitted_training_step_updates_device_parameters_in_place():
    rng = np.random.default_rng(7)
    x_np = rng.standard_normal((64, 8)).astype(np.float32)
    y_np = x_np @ rng.standard_normal((8, 1)).astype(np.float32)  # a target the model can reach
    x, y = pijit.Tensor(x_np, device="GPU"), pijit.Tensor(y_np, device="GPU")
    w_gpu = pijit.Tensor(np.zeros((8, 1), np.float32), device="GPU")

    def loss(w):
        d = ops.matmul(x, w) - y
        return ops.reduce_mean(d * d)

    grad = pijit.value_and_grad(loss)

    @pijit.jit
    def step(w):
        value, g = grad(w)
        ops.assign(w, w - 0.1 * g)
        return value

    losses = [float(step(w_gpu).asnumpy()) for _ in range(12)]
    assert w_gpu.device == "GPU"
    assert losses[-1] < 0.5 * losses[0]
    # The same steps on the CPU give the same losses.
    x_cpu, y_cpu, w_cpu = x.move_to("CPU"), y.move_to("CPU"), pijit.Tensor(np.zeros((8, 1), np.float32))
    expect = []
    for _ in range(12):
        d = ops.matmul(x_cpu, w_cpu) - y_cpu
        value = ops.reduce_mean(d * d)
        g = ops.matmul(x_cpu.T, d) * (2.0 / 64)
        w_cpu = w_cpu - 0.1 * g
        expect.append(float(value.asnumpy()))
    np.testing.assert_allclose(losses, expect, rtol=1e-4)


@needs_gpu
def test_dlpack_shares_gpu_memory_with_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    src = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    t = pijit.from_dlpack(src)
    assert t.device == "GPU"
    np.testing.assert_array_equal(t.asnumpy(), src.cpu().numpy())
    doubled = t * 2.0
    back = torch.from_dlpack(doubled)
    assert back.is_cuda
    torch.testing.assert_close(back, src * 2)
    src.add_(1)  # zero-copy: pijit's view sees the write
    np.testing.assert_array_equal(t.asnumpy(), src.cpu().numpy())


@needs_gpu
def test_division_modulo_statistics_and_logic_run_on_the_gpu():
    a = rand(6, 40, seed=8) * 4
    b = rand(40, seed=9) * 3
    ga, gb, ca, cb = pijit.Tensor(a, device="GPU"), pijit.Tensor(b, device="GPU"), pijit.Tensor(a), pijit.Tensor(b)
    pairs = [
        (lambda x, y: x // y, 0), (lambda x, y: x % y, 0), (lambda x, y: ops.abs(x) ** y, 2e-6),
        (lambda x, y: ops.var(x, axis=1, ddof=1), 1e-6), (lambda x, y: ops.std(x, axis=0), 1e-6),
        (lambda x, y: ops.all(x > -5, axis=1), 0), (lambda x, y: ops.any(x > 3, axis=0), 0),
    ]
    for i, (fn, rtol) in enumerate(pairs):
        got, want = fn(ga, gb), fn(ca, cb)
        assert got.device == "GPU", i
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=rtol, atol=rtol, err_msg=str(i))
    ints = pijit.Tensor(np.arange(-20, 20, dtype=np.int32), device="GPU")
    np.testing.assert_array_equal((ints // 3).asnumpy(), np.arange(-20, 20) // 3)
    np.testing.assert_array_equal((ints % -3).asnumpy(), np.arange(-20, 20) % -3)
    np.testing.assert_array_equal((ints & 5).asnumpy(), np.arange(-20, 20) & 5)


@needs_gpu
def test_jitted_random_draws_are_new_on_every_call_on_the_gpu():
    @pijit.jit
    def noisy(x):
        return x + ops.rand(64)

    x = pijit.Tensor(np.zeros(64, np.float32), device="GPU")
    draws = [noisy(x).asnumpy() for _ in range(4)]  # a recording would repeat one draw
    for i in range(4):
        assert 0 <= draws[i].min() and draws[i].max() < 1
        for j in range(i):
            assert not np.array_equal(draws[i], draws[j]), (i, j)
    # The generator is the CPU's: the same seed gives the same numbers on either device.
    pijit.set_seed(11)
    on_gpu = noisy(x).asnumpy()
    pijit.set_seed(11)
    on_cpu = (pijit.Tensor(np.zeros(64, np.float32)) + ops.rand(64)).asnumpy()
    np.testing.assert_array_equal(on_gpu, on_cpu)
