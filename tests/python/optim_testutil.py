"""A check shared by the optimizer tests: a least-squares training step run under pijit.jit
loses and updates exactly as the eager step does."""
import numpy as np

import pijit as ms
from pijit import ops


def jitted_step_equals_eager(make_optimizer, x, y, steps, capture_mode=None):
    """`steps` training steps of the weight w (3 x 1) of the least-squares loss of
    x @ w against y, with the optimizer `make_optimizer([w])`, eagerly and jitted (one graph,
    no break) from the same start: the same losses and the same final weight."""
    results = []
    for jit in (False, True):
        w = ms.Parameter(np.full((3, 1), 0.5), name="w")
        opt = make_optimizer([w])

        def loss_fn(weight):
            return ops.mean((ops.matmul(x, weight) - y) ** 2)

        def step():
            loss, g = ms.value_and_grad(loss_fn)(w)
            opt((g,))
            return loss

        run = step
        if jit:
            run = ms.jit(step, capture_mode=capture_mode)
            ms.reset(run)  # every optimizer's step shares this code object
        losses = [float(run().asnumpy()) for _ in range(steps)]
        results.append((losses, w.asnumpy().copy()))
        if jit:
            extra = ms.get_code_extra(run)
            assert extra["total_break_count"] == 0, extra.get("all_reasons")
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-10)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-10)
