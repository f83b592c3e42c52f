"""pijit.cuda and device_target="GPU": jitted graphs on the GPU equal eager results on the
CPU; graphs with ops the GPU backend lacks run on the CPU; without a GPU, a clear reason."""
import warnings

import numpy as np
import pytest

import pijit
from pijit import nn, ops

GPU = pijit.cuda.is_available()
needs_gpu = pytest.mark.skipif(not GPU, reason=f"no usable GPU: {pijit.cuda.unavailable_reason()}")


@pytest.fixture
def on_gpu():
    pijit.set_context(device_target="GPU")
    pijit.reset()
    yield
    pijit.set_context(device_target="CPU")
    pijit.reset()


@pytest.mark.skipif(GPU, reason="this machine has a GPU")
def test_without_a_gpu_the_reason_is_given_and_graphs_stay_on_the_cpu():
    assert not pijit.cuda.is_available()
    assert pijit.cuda.device_count() == 0
    assert pijit.cuda.unavailable_reason().startswith("CUDA is not available: ")
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        pijit.cuda.get_device_name()
    with pytest.warns(RuntimeWarning, match="graphs run on the CPU"):
        pijit.set_context(device_target="GPU")
    try:
        assert pijit.get_context("device_target") == "CPU"

        @pijit.jit
        def f(x):
            return ops.exp(x) * 2

        x = pijit.Tensor(np.arange(6, dtype=np.float32))
        np.testing.assert_allclose(f(x).asnumpy(), np.exp(np.arange(6, dtype=np.float32)) * 2,
                                   rtol=1e-6)
    finally:
        pijit.set_context(device_target="CPU")


def test_the_build_reports_itself():
    assert isinstance(pijit.cuda.is_built(), bool)
    with pytest.raises(ValueError, match="does not exist"):
        pijit.cuda.get_device_name(3)


def mlp_head(x, w, b):
    h = ops.relu(ops.matmul(x, w) + b)
    return ops.softmax(h, axis=-1), ops.reduce_sum(h * h, axis=1)


@needs_gpu
def test_jitted_graphs_run_on_the_gpu_and_equal_eager(on_gpu):
    rng = np.random.default_rng(0)
    x, w, b = (pijit.Tensor(rng.standard_normal(s).astype(np.float32)) for s in [(64, 32), (32, 16), (16,)])
    eager = mlp_head(x, w, b)
    jitted = pijit.jit(mlp_head)
    for _ in range(3):  # compile, then cached calls
        got = jitted(x, w, b)
        for g, e in zip(got, eager):
            np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-5, atol=1e-6)
    stats = pijit.cuda.memory_stats()
    assert stats["kernels_compiled"] + stats["kernels_from_disk"] > 0
    assert pijit.cuda.get_device_capability()[0] >= 7


@needs_gpu
def test_graphs_with_ops_the_gpu_lacks_run_on_the_cpu(on_gpu):
    conv = nn.Conv2d(3, 4, 3, has_bias=True)
    x = pijit.Tensor(np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype(np.float32))

    def f(x):
        return ops.relu(conv(x)) * 2

    np.testing.assert_allclose(pijit.jit(f)(x).asnumpy(), f(x).asnumpy(), rtol=1e-5, atol=1e-6)


@needs_gpu
def test_a_training_step_on_the_gpu_device_target_lowers_the_loss(on_gpu):
    net = nn.Dense(8, 3)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.SGD(net.trainable_params(), learning_rate=0.5)
    grad_fn = pijit.value_and_grad(lambda x, y: loss_fn(net(x), y), None, opt.parameters)

    @pijit.jit
    def step(x, y):
        loss, grads = grad_fn(x, y)
        opt(grads)
        return loss

    rng = np.random.default_rng(2)
    x = pijit.Tensor(rng.standard_normal((32, 8)).astype(np.float32))
    y = pijit.Tensor(rng.integers(0, 3, 32).astype(np.int32))
    losses = [float(step(x, y).asnumpy()) for _ in range(20)]
    assert losses[-1] < losses[0]
