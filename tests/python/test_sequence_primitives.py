"""EditDistance against a dynamic-programming reference and TensorFlow's documented example;
NoRepeatNGram against a direct scan of the sequences."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops


def levenshtein(a, b):
    table = np.zeros((len(a) + 1, len(b) + 1), int)
    table[:, 0] = np.arange(len(a) + 1)
    table[0, :] = np.arange(len(b) + 1)
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            table[i, j] = min(table[i - 1, j] + 1, table[i, j - 1] + 1,
                              table[i - 1, j - 1] + (a[i - 1] != b[j - 1]))
    return table[-1, -1]


def sparse(seqs, width):
    indices = [(b, t) for b, s in enumerate(seqs) for t in range(len(s))]
    values = [v for s in seqs for v in s]
    return (ms.Tensor(np.array(indices, np.int64).reshape(-1, 2)),
            ms.Tensor(np.array(values, np.int64)),
            ms.Tensor(np.array([len(seqs), width], np.int64)))


@pytest.mark.parametrize("normalize", [True, False])
def test_edit_distance_against_dynamic_programming(normalize):
    rng = np.random.default_rng(0)
    hyp = [list(rng.integers(0, 4, rng.integers(0, 7))) for _ in range(6)]
    truth = [list(rng.integers(0, 4, rng.integers(1, 7))) for _ in range(6)]
    truth[2] = []
    got = ops.EditDistance(normalize)(*sparse(hyp, 7), *sparse(truth, 7)).asnumpy()
    for i, (h, t) in enumerate(zip(hyp, truth)):
        want = levenshtein(h, t)
        if normalize:
            want = want / len(t) if t else (np.inf if h else 0.0)
        assert got[i] == pytest.approx(want)
    assert got.dtype == np.float32


def test_edit_distance_three_dimensional_example():
    # The 2 x 2 example of TensorFlow's edit_distance documentation.
    hyp = (ms.Tensor(np.array([[0, 0, 0], [1, 0, 0]], np.int64)),
           ms.Tensor(np.array([1, 2], np.int64)), ms.Tensor(np.array([2, 1, 1], np.int64)))
    truth = (ms.Tensor(np.array([[0, 1, 0], [1, 0, 0], [1, 0, 1], [1, 1, 0]], np.int64)),
             ms.Tensor(np.array([1, 2, 3, 1], np.int64)),
             ms.Tensor(np.array([2, 2, 2], np.int64)))
    got = ops.EditDistance(True)(*hyp, *truth).asnumpy()
    np.testing.assert_allclose(got, [[np.inf, 1.0], [0.5, 1.0]])
    with pytest.raises(ValueError):
        ops.EditDistance()(hyp[0], hyp[1], ms.Tensor(np.array([1, 1, 1], np.int64)), *truth)


def blocked_reference(seq, n, vocab):
    out = set()
    for start in range(len(seq) - n + 1):
        if list(seq[start:start + n - 1]) == list(seq[len(seq) - n + 1:]) or n == 1:
            out.add(seq[start + n - 1])
    return {t for t in out if t < vocab}


@pytest.mark.parametrize("n", [1, 2, 3])
def test_no_repeat_ngram(n):
    rng = np.random.default_rng(n)
    seqs = rng.integers(0, 5, size=(2, 3, 9)).astype(np.int32)
    seqs[0, 0, -2:] = seqs[0, 0, 2:4]  # a repeated bigram ending the sequence
    log_probs = rng.normal(size=(2, 3, 6)).astype(np.float32)
    got = ops.NoRepeatNGram(n)(ms.Tensor(seqs), ms.Tensor(log_probs)).asnumpy()
    lowest = np.finfo(np.float32).min
    for b, beam in np.ndindex(2, 3):
        blocked = blocked_reference(seqs[b, beam].tolist(), n, 6)
        for t in range(6):
            assert got[b, beam, t] == (lowest if t in blocked else log_probs[b, beam, t])
    grad = ms.grad(lambda lp: ops.NoRepeatNGram(n)(ms.Tensor(seqs), lp).sum())(
        ms.Tensor(log_probs)).asnumpy()
    np.testing.assert_array_equal(grad, (got != lowest).astype(np.float32))
    with pytest.raises(ValueError):
        ops.NoRepeatNGram(0)
