"""ops.uniform and ops.normal in MindSpore's form: Tensor bounds, means and deviations that
broadcast with the shape, integer draws, seeds; the Python-number form keeps working."""
import numpy as np
import pytest

import pijit as ms
from pijit import Tensor, ops


def test_uniform_with_tensor_bounds_as_mindspore_documents():
    ms.set_seed(1)
    x = ops.uniform((2, 2), Tensor(1.0, ms.float32), Tensor(2.0, ms.float32), seed=5)
    assert x.shape == (2, 2) and x.dtype == ms.float32
    assert ((x.asnumpy() >= 1.0) & (x.asnumpy() < 2.0)).all()


def test_uniform_bounds_broadcast_per_element():
    lo = Tensor(np.array([0.0, 10.0, -5.0], np.float32))
    hi = Tensor(np.array([1.0, 20.0, -4.0], np.float32))
    x = ops.uniform((4000, 3), lo, hi).asnumpy()
    assert x.shape == (4000, 3)
    assert (x >= lo.asnumpy()).all() and (x < hi.asnumpy()).all()
    assert abs(x[:, 0].mean() - 0.5) < 0.05 and abs(x[:, 1].mean() - 15.0) < 0.5
    assert abs(x[:, 2].mean() + 4.5) < 0.05


def test_uniform_integers_cover_the_half_open_range():
    x = ops.uniform((5000,), Tensor(1, ms.int32), Tensor(5, ms.int32), dtype=ms.int32).asnumpy()
    assert x.dtype == np.int32 and set(np.unique(x)) == {1, 2, 3, 4}


def test_seeds_repeat_the_draws():
    ms.set_seed(3)
    a = ops.uniform((5,), Tensor(0.0), Tensor(1.0), seed=7).asnumpy()
    ms.set_seed(3)
    b = ops.uniform((5,), Tensor(0.0), Tensor(1.0), seed=7).asnumpy()
    np.testing.assert_array_equal(a, b)


def test_normal_with_tensor_mean_and_stddev():
    mean = Tensor(np.array([0.0, 100.0], np.float32))
    x = ops.normal((20000, 1), mean, Tensor(2.0, ms.float32), seed=5).asnumpy()
    assert x.shape == (20000, 2)
    np.testing.assert_allclose(x.mean(0), [0.0, 100.0], atol=0.1)
    np.testing.assert_allclose(x.std(0), [2.0, 2.0], rtol=0.05)
    assert ops.normal((3, 4), Tensor(1.0), Tensor(2.0), seed=5).shape == (3, 4)


def test_number_forms_and_jitted_shapes():
    assert ops.uniform((2, 3), 0.0, 1.0).dtype == ms.float32
    assert ops.normal((2, 3), 0.0, 1.0).shape == (2, 3)
    f = ms.jit(lambda lo: ops.uniform((3, 2), lo, lo + 1.0) - lo, capture_mode="bytecode")
    out = f(Tensor(np.float32(4.0))).asnumpy()
    assert out.shape == (3, 2) and ((out >= 0) & (out < 1)).all()


def test_shapes_that_do_not_broadcast_are_rejected():
    with pytest.raises(ValueError, match="do not broadcast"):
        ops.uniform((2, 3), Tensor(np.zeros(4, np.float32)), Tensor(1.0))
    with pytest.raises(TypeError, match="shape must be"):
        ops.normal("2x3", Tensor(0.0), Tensor(1.0))
