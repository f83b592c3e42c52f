"""Weight decay skips the parameters MindSpore's Optimizer skips: without parameter groups,
those whose names contain 'beta' or 'gamma' (BatchNorm's and LayerNorm's shift and scale);
a group's weight_decay applies to every parameter of the group. Checked against the update
written in NumPy, eagerly and in a jitted step."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn


def _params():
    return [ms.Parameter(np.full((3,), 2.0, np.float32), name=n)
            for n in ("dense.weight", "bn.gamma", "bn.beta", "norm.beta_bias")]


@pytest.mark.parametrize("make", [
    lambda ps: nn.SGD(ps, learning_rate=0.1, weight_decay=0.5),
    lambda ps: nn.Momentum(ps, learning_rate=0.1, momentum=0.0, weight_decay=0.5),
])
@pytest.mark.parametrize("jitted", [False, True])
def test_beta_and_gamma_are_not_decayed(make, jitted):
    params = _params()
    opt = make(params)
    grads = tuple(ms.Tensor(np.full((3,), 0.25, np.float32)) for _ in params)
    step = ms.jit(lambda g: opt(g), capture_mode="bytecode") if jitted else opt
    step(grads)
    for p in params:
        decay = 0.0 if ("beta" in p.name or "gamma" in p.name) else 0.5
        want = 2.0 - 0.1 * (0.25 + decay * 2.0)
        np.testing.assert_allclose(p.asnumpy(), np.full((3,), want), rtol=1e-6, err_msg=p.name)


def test_a_group_decays_every_parameter_it_holds():
    params = _params()
    opt = nn.SGD([{"params": params, "weight_decay": 0.5}], learning_rate=0.1)
    opt(tuple(ms.Tensor(np.full((3,), 0.25, np.float32)) for _ in params))
    for p in params:
        np.testing.assert_allclose(p.asnumpy(), np.full((3,), 2.0 - 0.1 * (0.25 + 1.0)),
                                   rtol=1e-6, err_msg=p.name)
