"""Compiled graphs run on the backend PIJIT_BACKEND names (graph/backend.h; read per compile):
the reference backend gives the CPU backend's results within rounding, and an unknown name is
an internal capture failure that runs the call eagerly and says why."""
import numpy as np
import pytest

import pijit
from pijit import ops


def mlp(x, w, b):
    return ops.tanh(ops.matmul(x, w) + b) * 2 + ops.exp(-x.sum())


def args():
    rng = np.random.default_rng(0)
    return (pijit.Tensor(rng.standard_normal((8, 16)).astype(np.float32)),
            pijit.Tensor(rng.standard_normal((16, 4)).astype(np.float32)),
            pijit.Tensor(rng.standard_normal(4).astype(np.float32)))


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_backend_results_match_eager_within_rounding(backend, monkeypatch):
    monkeypatch.setenv("PIJIT_BACKEND", backend)
    pijit.reset(mlp)
    jf = pijit.jit(mlp)
    x, w, b = args()
    got, want = jf(x, w, b).asnumpy(), mlp(x, w, b).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    stats = pijit.get_code_extra(jf)
    assert stats["compile_count"] == 1 and stats["eager_count"] == 0, stats


def test_unknown_backend_runs_eagerly_and_says_why(monkeypatch):
    monkeypatch.setenv("PIJIT_BACKEND", "tpu")
    pijit.reset(mlp)
    jf = pijit.jit(mlp, capture_mode="bytecode")
    x, w, b = args()
    np.testing.assert_array_equal(jf(x, w, b).asnumpy(), mlp(x, w, b).asnumpy())
    reasons = [r["explanation"] for r in pijit.get_code_extra(jf)["reasons"]]
    assert any("PIJIT_BACKEND=tpu: unknown backend" in r for r in reasons), reasons
    pijit.reset(mlp)
