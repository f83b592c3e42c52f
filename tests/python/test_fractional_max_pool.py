"""fractional_max_pool2d/3d and their primitives against torch (values, indices, gradients) and
against a NumPy reference of the window sequence when torch is absent."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops


def numpy_reference_2d(x, kernel, out, samples):
    """Direct loops: window starts from the pseudo-random sequence, max and flat argmax."""
    def starts(u, size, k, o):
        alpha = (size - k) / (o - 1) if o > 1 else 0
        seq = [int((i + u) * alpha) - int(u * alpha) for i in range(o - 1)]
        return seq + [size - k]

    n, c, h, w = x.shape
    values = np.zeros((n, c) + out, x.dtype)
    index = np.zeros((n, c) + out, np.int64)
    for b in range(n):
        for ch in range(c):
            rows = starts(samples[b, ch, 1], h, kernel[0], out[0])
            cols = starts(samples[b, ch, 0], w, kernel[1], out[1])
            for i, r in enumerate(rows):
                for j, q in enumerate(cols):
                    window = x[b, ch, r:r + kernel[0], q:q + kernel[1]]
                    a = int(np.argmax(window))
                    values[b, ch, i, j] = window.reshape(-1)[a]
                    index[b, ch, i, j] = (r + a // kernel[1]) * w + q + a % kernel[1]
    return values, index


@pytest.mark.parametrize("kernel, out", [((3, 3), (5, 4)), ((2, 4), (9, 5)), ((1, 1), (3, 2))])
def test_2d_against_loops(kernel, out):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 11, 9)).astype(np.float32)
    samples = rng.random((2, 3, 2))
    got, idx = ops.fractional_max_pool2d(ms.Tensor(x), kernel, out, return_indices=True,
                                         _random_samples=ms.Tensor(samples))
    want, want_idx = numpy_reference_2d(x, kernel, out, samples)
    np.testing.assert_array_equal(got.asnumpy(), want)
    np.testing.assert_array_equal(idx.asnumpy(), want_idx)
    assert idx.dtype == ms.int64


@pytest.mark.parametrize("rank", [2, 3])
def test_against_torch_with_gradients(rank):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(rank)
    shape = (2, 3, 13, 10) if rank == 2 else (2, 2, 7, 8, 9)
    kernel = (3, 2) if rank == 2 else (2, 3, 2)
    out = (6, 5) if rank == 2 else (4, 3, 5)
    x = rng.normal(size=shape)
    samples = rng.random(shape[:2] + (rank,))
    fn = torch.nn.functional.fractional_max_pool2d if rank == 2 else \
        torch.nn.functional.fractional_max_pool3d
    tx = torch.tensor(x, requires_grad=True)
    tv, ti = fn(tx, kernel, output_size=out, return_indices=True,
                _random_samples=torch.tensor(samples))
    weights = rng.normal(size=tv.shape)
    (tv * torch.tensor(weights)).sum().backward()
    ours = ops.fractional_max_pool2d if rank == 2 else ops.fractional_max_pool3d
    pv, pi = ours(ms.Tensor(x), kernel, out, return_indices=True,
                  _random_samples=ms.Tensor(samples))
    np.testing.assert_array_equal(pv.asnumpy(), tv.detach().numpy())
    np.testing.assert_array_equal(pi.asnumpy(), ti.numpy())
    grad = ms.grad(lambda v: (ours(v, kernel, out, _random_samples=ms.Tensor(samples))
                              * ms.Tensor(weights)).sum())(ms.Tensor(x))
    np.testing.assert_allclose(grad.asnumpy(), tx.grad.numpy(), rtol=1e-12)


def test_output_ratio_primitives_and_jit():
    rng = np.random.default_rng(4)
    x = ms.Tensor(rng.normal(size=(1, 2, 10, 12)).astype(np.float32))
    samples = ms.Tensor(rng.random((1, 2, 2)).astype(np.float32))
    by_ratio = ops.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5), _random_samples=samples)
    assert by_ratio.shape == (1, 2, 5, 6)
    y, argmax = ops.FractionalMaxPoolWithFixedKsize(2, (5, 6))(x, samples)
    np.testing.assert_array_equal(y.asnumpy(), by_ratio.asnumpy())
    flat = x.asnumpy().reshape(1, 2, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, argmax.asnumpy().reshape(1, 2, -1), -1),
                                  y.asnumpy().reshape(1, 2, -1))
    # The window starts are computed on the host: a captured graph breaks there and resumes.
    jitted = ms.jit(lambda t, s: ops.fractional_max_pool2d(t * 1, 2, (5, 6), _random_samples=s),
                    mode="PIJit")
    np.testing.assert_array_equal(jitted(x, samples).asnumpy(), y.asnumpy())
    x3 = ms.Tensor(rng.normal(size=(1, 1, 6, 6, 6)).astype(np.float32))
    y3, i3 = ops.FractionalMaxPool3DWithFixedKsize(2, 3)(x3, ms.Tensor(rng.random((1, 1, 3))))
    assert y3.shape == i3.shape == (1, 1, 3, 3, 3)
    drawn = ops.fractional_max_pool3d(x3, 2, 3)
    assert drawn.shape == (1, 1, 3, 3, 3)
    assert (drawn.asnumpy() <= x3.asnumpy().max()).all()


@pytest.mark.parametrize("call, error", [
    (lambda x: ops.fractional_max_pool2d(x, 3), ValueError),
    (lambda x: ops.fractional_max_pool2d(x, 3, 4, 0.5), ValueError),
    (lambda x: ops.fractional_max_pool2d(x, 3, 7), ValueError),
    (lambda x: ops.fractional_max_pool2d(x, 3, output_ratio=1.5), ValueError),
    (lambda x: ops.fractional_max_pool2d(x, (3, 3, 3), 4), ValueError),
    (lambda x: ops.fractional_max_pool3d(x, 2, 3), ValueError),
    (lambda x: ops.fractional_max_pool2d(x, 2, 3, _random_samples=ms.Tensor(np.ones((1, 1, 2)))),
     ValueError),
    (lambda x: ops.fractional_max_pool2d(x, 2, 3, _random_samples=ms.Tensor(
        np.zeros((1, 1, 2), np.int32))), TypeError),
    (lambda x: ops.FractionalMaxPoolWithFixedKsize(2, 3, "NHWC"), ValueError),
])
def test_bad_arguments(call, error):
    x = ms.Tensor(np.zeros((1, 1, 8, 8), np.float32))
    with pytest.raises(error):
        call(x)
