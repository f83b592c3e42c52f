"""XavierNormal, VarianceScaling, Orthogonal, Identity, Dirac and Sparse: their structure
(orthogonality, the identity, pass-through convolutions, the count of zeros) exactly, their
spread against the documented variance by sample statistics, reproducibility under
pijit.set_seed, the names initializer() knows, and clear errors."""
import math

import numpy as np
import pytest

import pijit as ms
from pijit.common import initializer as init


def _draw(initializer, shape):
    return initializer(shape, ms.float64).asnumpy()


def test_xavier_normal_variance():
    values = _draw(init.XavierNormal(gain=2.0), (300, 200))
    assert abs(values.mean()) < 0.01
    np.testing.assert_allclose(values.std(), 2.0 * math.sqrt(2.0 / 500), rtol=0.02)
    assert init.initializer("xavier_normal", (2, 3)).shape == (2, 3)


@pytest.mark.parametrize("mode, fan", [("fan_in", 200), ("fan_out", 300), ("fan_avg", 250)])
@pytest.mark.parametrize("distribution", ["truncated_normal", "untruncated_normal", "uniform"])
def test_variance_scaling(mode, fan, distribution):
    values = _draw(init.VarianceScaling(3.0, mode, distribution), (300, 200))
    std = math.sqrt(3.0 / fan)
    np.testing.assert_allclose(values.std(), std, rtol=0.03)
    if distribution == "truncated_normal":
        assert np.abs(values).max() <= 2.0 * std / 0.87962566103423978 + 1e-12
    if distribution == "uniform":
        assert np.abs(values).max() <= math.sqrt(3.0) * std


@pytest.mark.parametrize("shape", [(4, 4), (3, 7), (8, 2, 3), (6, 2)])
def test_orthogonal(shape):
    values = _draw(init.Orthogonal(gain=1.5), shape).reshape(shape[0], -1)
    gram = values @ values.T if values.shape[0] <= values.shape[1] else values.T @ values
    np.testing.assert_allclose(gram, 2.25 * np.eye(gram.shape[0]), atol=1e-10)
    ms.set_seed(3)
    first = _draw(init.Orthogonal(), shape)
    ms.set_seed(3)
    np.testing.assert_array_equal(_draw(init.Orthogonal(), shape), first)


def test_identity_and_dirac():
    np.testing.assert_array_equal(_draw(init.Identity(), (3, 5)), np.eye(3, 5))
    weight = _draw(init.Dirac(groups=2), (4, 3, 3, 3))
    # A convolution with these weights copies input channel d to output channel d of each
    # group: only the kernel centre of those pairs is 1.
    want = np.zeros((4, 3, 3, 3))
    for out_channel in range(4):
        want[out_channel, out_channel % 2, 1, 1] = 1.0
    np.testing.assert_array_equal(weight, want)
    x = np.random.default_rng(0).normal(size=(1, 3, 5, 5))
    conv = ms.ops.conv2d(ms.Tensor(x), ms.Tensor(_draw(init.Dirac(), (3, 3, 3, 3))), padding=1)
    np.testing.assert_allclose(conv.asnumpy(), x, atol=1e-12)


def test_sparse():
    values = _draw(init.Sparse(0.4, sigma=0.5), (10, 50))
    assert np.all((values == 0).sum(0) == 4)  # ceil(0.4 * 10) zeros in every column
    np.testing.assert_allclose(values[values != 0].std(), 0.5, rtol=0.1)


def test_errors():
    with pytest.raises(ValueError, match="mode"):
        init.VarianceScaling(mode="fan")
    with pytest.raises(ValueError, match="distribution"):
        init.VarianceScaling(distribution="normal")
    with pytest.raises(ValueError, match="2 dimensions"):
        init.Orthogonal()((5,))
    with pytest.raises(ValueError, match="2-D"):
        init.Identity()((2, 2, 2))
    with pytest.raises(ValueError, match="groups"):
        init.Dirac(groups=3)((4, 2, 3))
    with pytest.raises(ValueError, match="sparsity"):
        init.Sparse(1.5)
