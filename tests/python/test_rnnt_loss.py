"""RNNTLoss against a sum over every alignment of the lattice (tiny sizes) and its gradient
against finite differences; training through it with ms.grad."""
import itertools

import numpy as np
import pytest

import pijit as ms
from pijit import ops


def brute_force_cost(acts, labels, blank):
    """-log of the sum over all alignments: T blanks (one per step, the last ends the sequence)
    interleaved with the U labels."""
    t_len, u_len = acts.shape[0], len(labels)
    p = np.exp(acts - acts.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    total = 0.0
    for emit_steps in itertools.combinations_with_replacement(range(t_len), u_len):
        prob, u = 1.0, 0
        for t in range(t_len):
            for _ in range(emit_steps.count(t)):
                prob *= p[t, u, labels[u]]
                u += 1
            prob *= p[t, u, blank]
        total += prob
    return -np.log(total)


def make(seed, b=2, t=4, u=3, v=5):
    rng = np.random.default_rng(seed)
    acts = rng.normal(size=(b, t, u + 1, v))
    labels = rng.integers(1, v, size=(b, u)).astype(np.int32)
    return acts, labels


@pytest.mark.parametrize("blank", [0, 4])
def test_costs_against_every_alignment(blank):
    acts, labels = make(blank)
    labels[labels == blank] = 2
    t_lens = np.array([4, 3], np.int32)
    u_lens = np.array([3, 1], np.int32)
    costs, grads = ops.RNNTLoss(blank)(ms.Tensor(acts.astype(np.float32)), ms.Tensor(labels),
                                        ms.Tensor(t_lens), ms.Tensor(u_lens))
    for b in range(2):
        want = brute_force_cost(acts[b, :t_lens[b], :u_lens[b] + 1], labels[b, :u_lens[b]], blank)
        assert costs.asnumpy()[b] == pytest.approx(want, rel=1e-5)
    g = grads.asnumpy()
    assert (g[1, 3:] == 0).all() and (g[1, :, 2:] == 0).all()
    # Finite differences of the exact (float64) lattice cost.
    for b, t, u, k in [(0, 0, 0, 1), (0, 3, 3, blank), (0, 2, 1, 3), (1, 1, 1, blank),
                       (1, 2, 0, 2)]:
        bumped = acts.copy()
        eps = 1e-5
        bumped[b, t, u, k] += eps
        up = brute_force_cost(bumped[b, :t_lens[b], :u_lens[b] + 1], labels[b, :u_lens[b]], blank)
        bumped[b, t, u, k] -= 2 * eps
        down = brute_force_cost(bumped[b, :t_lens[b], :u_lens[b] + 1], labels[b, :u_lens[b]],
                                blank)
        assert g[b, t, u, k] == pytest.approx((up - down) / (2 * eps), abs=2e-5)


def test_gradient_flows_to_the_network():
    acts, labels = make(7, b=1)
    w = ms.Tensor(np.eye(5, dtype=np.float32) * 0.5)
    x = ms.Tensor(acts.astype(np.float32))
    lengths = (ms.Tensor(np.array([4], np.int32)), ms.Tensor(np.array([3], np.int32)))
    loss_op = ops.RNNTLoss()

    def loss(weight):
        return loss_op(ops.matmul(x, weight), ms.Tensor(labels), *lengths)[0].sum()

    grad = ms.grad(loss)(w)
    _, g_acts = loss_op(ops.matmul(x, w), ms.Tensor(labels), *lengths)
    want = np.einsum("btuv,btuw->vw", acts, g_acts.asnumpy())
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-4, atol=1e-6)


def test_bad_arguments():
    acts, labels = make(1)
    args = [ms.Tensor(acts.astype(np.float32)), ms.Tensor(labels),
            ms.Tensor(np.array([4, 4], np.int32)), ms.Tensor(np.array([3, 3], np.int32))]
    with pytest.raises(ValueError):
        ops.RNNTLoss()(args[0], args[1], ms.Tensor(np.array([5, 4], np.int32)), args[3])
    with pytest.raises(TypeError):
        ops.RNNTLoss()(args[0], ms.Tensor(labels.astype(np.int64)), args[2], args[3])
    with pytest.raises(ValueError):
        ops.RNNTLoss(9)(*args)
    with pytest.raises(ValueError):
        ops.RNNTLoss(-1)
