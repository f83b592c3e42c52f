"""ops.ctc_loss, ops.CTCLossV2 and ops.CTCLoss against a NumPy CTC (the forward recursion
written out state by state), their gradients against finite differences, and jitted against
eager."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops

from jit_testutil import fresh  # noqa: F401 (autouse fixture)

RNG = np.random.default_rng(11)


def T(values, dtype=None):
    return ms.Tensor(np.asarray(values, dtype=dtype))


def reference_ctc(log_probs, targets, input_lengths, target_lengths, blank=0, merge=True):
    """Negative log likelihoods, one per sample, by the textbook alpha recursion."""
    losses = []
    for n in range(log_probs.shape[1]):
        states = [blank]
        for k in range(target_lengths[n]):
            states += [targets[n][k], blank]
        alpha = np.full(len(states), -np.inf)
        alpha[0] = log_probs[0, n, states[0]]
        if len(states) > 1:
            alpha[1] = log_probs[0, n, states[1]]
        for t in range(1, input_lengths[n]):
            new = np.full(len(states), -np.inf)
            for s, label in enumerate(states):
                terms = [alpha[s]] if merge or label == blank else []
                if s >= 1:
                    terms.append(alpha[s - 1])
                if s >= 2 and label != blank and label != states[s - 2]:
                    terms.append(alpha[s - 2])
                new[s] = np.logaddexp.reduce(terms) + log_probs[t, n, label]
            alpha = new
        losses.append(-np.logaddexp.reduce(alpha[-2:]))
    return np.array(losses)


def log_softmax(x):
    shifted = x - x.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


FRAMES, BATCH, CLASSES = 6, 3, 4
TARGETS = np.array([[1, 2, 2], [3, 1, 0], [0, 0, 0]])
INPUT_LENGTHS = np.array([6, 5, 2])
TARGET_LENGTHS = np.array([3, 2, 0])


def sample_log_probs(dtype=np.float64):
    return log_softmax(RNG.standard_normal((FRAMES, BATCH, CLASSES))).astype(dtype)


def ctc_args(log_probs):
    return (T(log_probs), T(TARGETS, np.int64), T(INPUT_LENGTHS, np.int64),
            T(TARGET_LENGTHS, np.int64))


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_ctc_loss_matches_numpy(reduction):
    log_probs = sample_log_probs()
    want = reference_ctc(log_probs, TARGETS, INPUT_LENGTHS, TARGET_LENGTHS)
    if reduction == "sum":
        want = want.sum()
    elif reduction == "mean":
        want = (want / np.maximum(TARGET_LENGTHS, 1)).mean()
    loss, log_alpha = ops.ctc_loss(*ctc_args(log_probs), reduction=reduction)
    np.testing.assert_allclose(loss.asnumpy(), want, rtol=1e-10)
    assert log_alpha.shape == (BATCH, FRAMES, 2 * TARGETS.shape[1] + 1)
    alpha = log_alpha.asnumpy()
    assert alpha[0, 0, 0] == log_probs[0, 0, 0] and np.isneginf(alpha[0, 0, 2])


def test_ctc_loss_jitted_equals_eager():
    log_probs = sample_log_probs(np.float32)
    eager = ops.ctc_loss(*ctc_args(log_probs), reduction="none")
    jitted = ms.jit(lambda *a: ops.ctc_loss(*a, reduction="none"),
                    capture_mode="bytecode")(*ctc_args(log_probs))
    for e, j in zip(eager, jitted):
        np.testing.assert_allclose(j.asnumpy(), e.asnumpy(), rtol=1e-6)
    want = reference_ctc(log_probs.astype(np.float64), TARGETS, INPUT_LENGTHS, TARGET_LENGTHS)
    np.testing.assert_allclose(eager[0].asnumpy(), want, rtol=1e-5)


def test_ctc_loss_gradient_matches_finite_differences():
    logits = RNG.standard_normal((FRAMES, BATCH, CLASSES))
    weights = np.array([1.0, 0.5, 2.0])

    def objective(x):
        loss, _ = ops.ctc_loss(ops.log_softmax(x, 2), *ctc_args(logits)[1:], reduction="none")
        return (loss * T(weights)).sum()

    def value(x):
        return float((reference_ctc(log_softmax(x), TARGETS, INPUT_LENGTHS, TARGET_LENGTHS)
                      * weights).sum())

    grad = ms.grad(objective)(T(logits)).asnumpy()
    numeric = np.zeros_like(logits)
    for i in np.ndindex(*logits.shape):
        plus, minus = logits.copy(), logits.copy()
        plus[i] += 1e-6
        minus[i] -= 1e-6
        numeric[i] = (value(plus) - value(minus)) / 2e-6
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-7)
    assert np.all(grad[2:, 2] == 0)  # frames past sample 2's input length


def test_impossible_alignment_is_infinite_or_zero():
    log_probs = sample_log_probs()
    short = T([6, 5, 1], np.int64)
    targets = T([[1, 1, 1], [3, 1, 0], [2, 0, 0]], np.int64)
    lengths = T([3, 2, 1], np.int64)
    # three equal labels need five frames (blanks between); one label needs one frame
    loss, _ = ops.ctc_loss(T(log_probs), targets, T([4, 5, 1], np.int64), lengths,
                           reduction="none")
    assert np.isinf(loss.asnumpy()[0]) and np.isfinite(loss.asnumpy()[1:]).all()
    loss, _ = ops.ctc_loss(T(log_probs), targets, T([4, 5, 1], np.int64), lengths,
                           reduction="none", zero_infinity=True)
    assert loss.asnumpy()[0] == 0
    grad = ms.grad(lambda x: ops.ctc_loss(x, targets, short, lengths, reduction="sum",
                                          zero_infinity=True)[0])(T(log_probs))
    assert np.isfinite(grad.asnumpy()).all()


def test_ctc_loss_v2_primitive_with_another_blank():
    log_probs = sample_log_probs()
    targets = np.where(TARGETS == 0, 1, TARGETS) - 1  # labels 0..2, blank 3
    args = (T(log_probs), T(targets, np.int32), T(INPUT_LENGTHS, np.int32),
            T(TARGET_LENGTHS, np.int32))
    nll, log_alpha = ops.CTCLossV2(blank=3)(*args)
    want = reference_ctc(log_probs, targets, INPUT_LENGTHS, TARGET_LENGTHS, blank=3)
    np.testing.assert_allclose(nll.asnumpy(), want, rtol=1e-10)
    assert log_alpha.shape == (BATCH, FRAMES, 7)
    jitted = ms.jit(lambda *a: ops.CTCLossV2(blank=3)(*a), capture_mode="bytecode")(*args)
    np.testing.assert_allclose(jitted[0].asnumpy(), nll.asnumpy())


def sparse_labels(rows):
    indices = [(n, k) for n, row in enumerate(rows) for k in range(len(row))]
    values = [v for row in rows for v in row]
    return T(indices, np.int64), T(values, np.int32)


@pytest.mark.parametrize("merge", [True, False])
def test_ctc_loss_primitive_logits_blank_last_and_gradient(merge):
    logits = RNG.standard_normal((FRAMES, 2, CLASSES))
    rows = [[0, 1, 1], [2, 0]]
    indices, values = sparse_labels(rows)
    lengths = np.array([6, 5])
    loss, grad = ops.CTCLoss(ctc_merge_repeated=merge)(T(logits), indices, values,
                                                        T(lengths, np.int32))
    dense = np.array([[0, 1, 1], [2, 0, 0]])

    def value(x):
        return reference_ctc(log_softmax(x), dense, lengths, [3, 2], blank=CLASSES - 1,
                             merge=merge)

    np.testing.assert_allclose(loss.asnumpy(), value(logits), rtol=1e-10)
    numeric = np.zeros_like(logits)
    for i in np.ndindex(*logits.shape):
        plus, minus = logits.copy(), logits.copy()
        plus[i] += 1e-6
        minus[i] -= 1e-6
        numeric[i] = (value(plus).sum() - value(minus).sum()) / 2e-6
    np.testing.assert_allclose(grad.asnumpy(), numeric, rtol=1e-5, atol=1e-7)


def test_ctc_loss_primitive_collapse_and_too_long_labels():
    logits = RNG.standard_normal((3, 2, CLASSES))
    indices, values = sparse_labels([[1, 1, 2], [0, 1, 2, 0]])
    loss, grad = ops.CTCLoss(preprocess_collapse_repeated=True,
                             ignore_longer_outputs_than_inputs=True)(
        T(logits), indices, values, T([3, 3], np.int32))
    want = reference_ctc(log_softmax(logits)[:, :1], np.array([[1, 2]]), [3], [2],
                         blank=CLASSES - 1)
    np.testing.assert_allclose(loss.asnumpy(), [want[0], 0.0], rtol=1e-10)
    assert np.all(grad.asnumpy()[:, 1] == 0)  # the ignored entry gets no gradient
    with pytest.raises(ValueError, match="CTCLoss: the labels of batch entries \\[1\\]"):
        ops.CTCLoss()(T(logits), indices, values, T([3, 3], np.int32))


def test_ctc_argument_errors():
    args = ctc_args(sample_log_probs())
    with pytest.raises(TypeError, match="ctc_loss: log_probs must be a float Tensor"):
        ops.ctc_loss(args[1], *args[1:])
    with pytest.raises(TypeError, match="ctc_loss: targets must be an int Tensor"):
        ops.ctc_loss(args[0], T([1, 2], np.int64), *args[2:])
    with pytest.raises(TypeError, match="ctc_loss: input_lengths must be an int Tensor"):
        ops.ctc_loss(args[0], args[1], T([1.0, 2.0, 3.0]), args[3])
    with pytest.raises(ValueError, match="ctc_loss: blank must be an int in \\[0, 4\\)"):
        ops.ctc_loss(*args, blank=4)
    with pytest.raises(ValueError, match="ctc_loss: reduction"):
        ops.ctc_loss(*args, reduction="max")
    with pytest.raises(ValueError, match="CTCLossV2: reduction"):
        ops.CTCLossV2(reduction="max")
    with pytest.raises(TypeError, match="CTCLoss: ctc_merge_repeated must be a bool"):
        ops.CTCLoss(ctc_merge_repeated=1)
    with pytest.raises(TypeError, match="CTCLoss: x must be a float Tensor"):
        ops.CTCLoss()(T([1, 2], np.int32), *sparse_labels([[1]]), T([1], np.int32))
