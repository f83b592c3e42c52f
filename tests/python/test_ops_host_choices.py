"""Ops computed on the host: candidate samplers, ComputeAccidentalHits, choice_with_mask,
ctc_greedy_decoder, and max_unpool3d, each against a NumPy reference or the distribution it
draws from."""
import math

import numpy as np
import pytest

import pijit as ms
from pijit import ops

TRUE = np.array([[1], [3], [4], [6], [3]], dtype=np.int64)


def test_uniform_sampler_shapes_range_and_expected_counts():
    sampled, true_count, sampled_count = ops.uniform_candidate_sampler(
        ms.Tensor(TRUE), 1, 3, False, 7, 1)
    assert sampled.shape == (3,) and sampled.dtype == ms.int64
    assert true_count.shape == (5, 1) and sampled_count.shape == (3,)
    assert ((sampled.asnumpy() >= 0) & (sampled.asnumpy() < 7)).all()
    np.testing.assert_allclose(true_count.asnumpy(), 3 / 7, rtol=1e-6)
    np.testing.assert_allclose(sampled_count.asnumpy(), 3 / 7, rtol=1e-6)


def test_unique_sampler_has_no_repeats_and_skips_true_classes():
    for seed in range(1, 20):
        sampled, true_count, _ = ops.UniformCandidateSampler(1, 4, True, 8, seed, True)(
            ms.Tensor(TRUE))
        values = sampled.asnumpy().tolist()
        assert len(set(values)) == 4
        assert not set(values) & {1, 3, 4, 6}
        # Unique sampling: expected count 1 - (1 - p)^tries with at least num_sampled tries.
        assert true_count.asnumpy().min() >= 1 - (1 - 1 / 8) ** 4 - 1e-6


def test_seeded_sampler_repeats_and_draws_uniformly():
    a = ops.uniform_candidate_sampler(ms.Tensor(TRUE), 1, 5, False, 10, 7)[0].asnumpy()
    b = ops.uniform_candidate_sampler(ms.Tensor(TRUE), 1, 5, False, 10, 7)[0].asnumpy()
    np.testing.assert_array_equal(a, b)
    ms.set_seed(3)
    draws = np.concatenate([ops.uniform_candidate_sampler(ms.Tensor(TRUE), 1, 50, False, 10)[0]
                            .asnumpy() for _ in range(40)])
    counts = np.bincount(draws, minlength=10)
    # 2,000 draws over 10 classes: each count within 5 sigma of 200.
    assert np.abs(counts - 200).max() < 5 * math.sqrt(200 * 0.9)


def test_log_uniform_sampler_follows_zipf():
    ms.set_seed(5)
    range_max = 20
    draws = np.concatenate([ops.log_uniform_candidate_sampler(
        ms.Tensor(TRUE), 1, 100, False, range_max)[0].asnumpy() for _ in range(30)])
    p = (np.log(np.arange(range_max) + 2) - np.log(np.arange(range_max) + 1)) / \
        math.log(range_max + 1)
    counts = np.bincount(draws, minlength=range_max)
    expected = p * len(draws)
    assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected) + 1)
    _, true_count, sampled_count = ops.LogUniformCandidateSampler(1, 4, False, range_max)(
        ms.Tensor(TRUE))
    np.testing.assert_allclose(true_count.asnumpy()[:, 0], 4 * p[TRUE[:, 0]], rtol=1e-5)


@pytest.mark.parametrize("call, error", [
    (lambda: ops.uniform_candidate_sampler(ms.Tensor(TRUE), 1, 8, True, 7), ValueError),
    (lambda: ops.uniform_candidate_sampler(ms.Tensor(TRUE), 2, 3, False, 7), ValueError),
    (lambda: ops.uniform_candidate_sampler(ms.Tensor(TRUE), 1, 3, False, 5), ValueError),
    (lambda: ops.uniform_candidate_sampler(ms.Tensor(TRUE), 1, 3, 1, 7), TypeError),
    (lambda: ops.uniform_candidate_sampler(ms.Tensor(TRUE * 1.0), 1, 3, False, 7), TypeError),
    (lambda: ops.log_uniform_candidate_sampler(ms.Tensor(TRUE), 1, 0, True, 7), ValueError),
])
def test_sampler_bad_arguments(call, error):
    with pytest.raises(error):
        call()


def test_compute_accidental_hits():
    classes = np.array([[1, 2], [0, 4], [3, 3]], np.int32)
    sampled = np.array([0, 1, 2, 3, 4, 3], np.int32)
    rows, ids, weights = ops.ComputeAccidentalHits(2)(ms.Tensor(classes), ms.Tensor(sampled))
    want = sorted((i, j) for i in range(3) for j in range(6) if sampled[j] in classes[i])
    assert sorted(zip(rows.asnumpy().tolist(), ids.asnumpy().tolist())) == want
    np.testing.assert_array_equal(weights.asnumpy(), -np.finfo(np.float32).max)


def test_choice_with_mask_picks_distinct_true_positions():
    x = np.random.default_rng(0).random((4, 5)) > 0.5
    index, mask = ops.choice_with_mask(ms.Tensor(x), 16)
    index, mask = index.asnumpy(), mask.asnumpy()
    assert mask.sum() == x.sum()
    picked = [tuple(p) for p in index[mask]]
    assert len(set(picked)) == len(picked) and all(x[p] for p in picked)
    assert (index[~mask] == 0).all()
    few, few_mask = ops.RandomChoiceWithMask(3, 1, 2)(ms.Tensor(x))
    again, _ = ops.RandomChoiceWithMask(3, 1, 2)(ms.Tensor(x))
    assert few_mask.asnumpy().all() and all(x[tuple(p)] for p in few.asnumpy())
    np.testing.assert_array_equal(few.asnumpy(), again.asnumpy())
    with pytest.raises(TypeError):
        ops.choice_with_mask(ms.Tensor(x.astype(np.float32)))


def greedy_reference(logits, lengths, merge):
    decoded, log_prob = [], []
    for b in range(logits.shape[1]):
        best = logits[:lengths[b], b].argmax(1)
        log_prob.append(-logits[:lengths[b], b].max(1).sum())
        out = [c for t, c in enumerate(best)
               if c != logits.shape[2] - 1 and not (merge and t and best[t - 1] == c)]
        decoded.append(out)
    return decoded, np.array(log_prob)


@pytest.mark.parametrize("merge", [True, False])
def test_ctc_greedy_decoder_against_reference(merge):
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(12, 4, 5)).astype(np.float32)
    logits[3:6, 1, 2] = 9  # a repeated label
    lengths = np.array([12, 7, 0, 3], np.int32)
    indices, values, shape, log_prob = ops.ctc_greedy_decoder(ms.Tensor(logits),
                                                              ms.Tensor(lengths), merge)
    decoded, want_log_prob = greedy_reference(logits, lengths, merge)
    got = [[] for _ in range(4)]
    for (b, t), v in zip(indices.asnumpy().tolist(), values.asnumpy().tolist()):
        assert t == len(got[b])
        got[b].append(v)
    assert got == [[int(c) for c in d] for d in decoded]
    np.testing.assert_array_equal(shape.asnumpy(), [4, max(len(d) for d in decoded)])
    np.testing.assert_allclose(log_prob.asnumpy()[:, 0], want_log_prob, rtol=1e-6)


def test_ctc_greedy_decoder_bad_input():
    logits = ms.Tensor(np.zeros((3, 2, 4), np.float32))
    with pytest.raises(ValueError):
        ops.CTCGreedyDecoder()(logits, ms.Tensor(np.array([4, 1], np.int32)))
    with pytest.raises(TypeError):
        ops.CTCGreedyDecoder()(logits, ms.Tensor(np.array([1, 1], np.int64)))
    with pytest.raises(ValueError):
        ops.ctc_greedy_decoder(ms.Tensor(np.zeros((3, 4), np.float32)),
                               ms.Tensor(np.array([1], np.int32)))


def test_max_unpool3d_inverts_a_max_pool_and_differentiates():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 3, 4, 4, 6))
    windows = x.reshape(2, 3, 2, 2, 2, 2, 3, 2).transpose(0, 1, 2, 4, 6, 3, 5, 7) \
        .reshape(2, 3, 2, 2, 3, 8)
    arg = windows.argmax(-1)
    values = windows.max(-1)
    dz, dy, dx = np.unravel_index(arg, (2, 2, 2))
    d = np.arange(2)[:, None, None] * 2 + dz
    h = np.arange(2)[None, :, None] * 2 + dy
    w = np.arange(3)[None, None, :] * 2 + dx
    flat = (d * 4 + h) * 6 + w
    want = np.zeros((2, 3, 4 * 4 * 6))
    np.put_along_axis(want, flat.reshape(2, 3, -1), values.reshape(2, 3, -1), -1)
    out = ops.max_unpool3d(ms.Tensor(values), ms.Tensor(flat), 2)
    np.testing.assert_array_equal(out.asnumpy(), want.reshape(x.shape))
    grad = ms.grad(lambda v: (ops.max_unpool3d(v, ms.Tensor(flat), 2) * ms.Tensor(x)).sum())(
        ms.Tensor(values))
    np.testing.assert_allclose(grad.asnumpy(), np.take_along_axis(
        x.reshape(2, 3, -1), flat.reshape(2, 3, -1), -1).reshape(values.shape))
    with pytest.raises(ValueError):
        ops.max_unpool3d(ms.Tensor(values), ms.Tensor(flat[..., :2]), 2)
