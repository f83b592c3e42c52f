"""MindSpore 2.x's loss functions (pijit/_ops_loss.py) and loss Cells (pijit/nn/losses_extra.py)
against NumPy references written from the formulas in float64: every reduction, class weights,
ignore_index and label smoothing, targets with spatial axes (N, C, d1, ...). Each is run
eagerly and jitted (captured as one graph, equal to eager), its gradient with respect to the
input is compared with central finite differences, and bad arguments raise errors that name
the function, the argument and the value."""
import inspect

import numpy as np
import pytest

import pijit as ms
from pijit._ops_loss import (binary_cross_entropy, binary_cross_entropy_with_logits,
                             cross_entropy, huber_loss, kl_div, l1_loss, margin_ranking_loss,
                             mse_loss, nll_loss, smooth_l1_loss, soft_margin_loss)
from pijit.nn.losses_extra import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss,
                                   KLDivLoss, MarginRankingLoss, NLLLoss, SmoothL1Loss,
                                   SoftMarginLoss)

from gradcheck_util import check_weighted_gradient

REDUCTIONS = ["mean", "sum", "none"]


def T(a, dtype=np.float64):
    return ms.Tensor(np.asarray(a, dtype=dtype))


def rng_array(shape, seed=0, low=-3.0, high=3.0):
    return np.random.default_rng(seed).uniform(low, high, shape)


def class_targets(shape, n_classes, seed=0, ignore_index=-100):
    """Integer class indices with about one in five set to ignore_index."""
    rng = np.random.default_rng(seed)
    target = rng.integers(0, n_classes, shape)
    target[rng.uniform(size=shape) < 0.2] = ignore_index
    target.flat[0] = 0  # at least one target is kept, so a 'mean' is defined
    return target


def probabilities(shape, seed=0, axis=1):
    e = np.exp(rng_array(shape, seed))
    return e / e.sum(axis=axis, keepdims=True)


def check_eager_and_jit(fn, want, *args, rtol=1e-10, atol=1e-12):
    """fn(*args) matches `want` eagerly, and jitted it is captured as one graph that gives
    the eager result."""
    got = fn(*args)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=rtol, atol=atol)
    assert got.shape == np.shape(want)
    jf = ms.jit(fn)
    ms.reset(jf)  # one lambda's code object serves every parametrized case
    for _ in range(2):
        np.testing.assert_allclose(jf(*args).asnumpy(), got.asnumpy(), rtol=1e-13, atol=1e-15)
    stats = ms.get_code_extra(jf)
    assert stats["total_break_count"] == 0 and stats["eager_count"] == 0, stats["all_reasons"]
    assert stats["graph_count"] == 1 and stats["cache_hits"] == 1
    return got


def check_gradient(fn, x):
    """d(sum(fn(x) * w))/dx by pijit.grad against central differences (float64)."""
    w = rng_array(np.shape(fn(T(x)).asnumpy()), seed=9)
    check_weighted_gradient(fn, x, w, rtol=1e-6, atol=1e-7, to_tensor=T)


# ---- NumPy references, from the formulas --------------------------------------------------

def np_reduce(loss, reduction):
    return {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction](loss)


def np_log_softmax(x, axis=1):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def ref_nll(log_probs, target, weight=None, ignore_index=-100, reduction="mean",
            label_smoothing=0.0):
    """Per sample (every position of N, d1, ...): -(1 - ls) * w[y] * logp[y]
    - ls / C * sum_c w[c] * logp[c], 0 where y is ignore_index; 'mean' divides the sum by the
    summed w[y] of the kept samples."""
    n_classes = log_probs.shape[1]
    rows = np.moveaxis(log_probs, 1, -1).reshape(-1, n_classes)
    labels = target.reshape(-1)
    w = np.ones(n_classes) if weight is None else weight
    losses, kept_weight = np.zeros(len(labels)), np.zeros(len(labels))
    for i, (row, y) in enumerate(zip(rows, labels)):
        if y == ignore_index:
            continue
        losses[i] = (-(1 - label_smoothing) * w[y] * row[y]
                     - label_smoothing / n_classes * (w * row).sum())
        kept_weight[i] = w[y]
    if reduction == "none":
        return losses.reshape(target.shape)
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / kept_weight.sum()


def ref_probability_ce(logits, target, weight=None, reduction="mean", label_smoothing=0.0):
    n_classes = logits.shape[1]
    w = np.ones(n_classes) if weight is None else weight
    rows = np.moveaxis(np_log_softmax(logits), 1, -1)
    q = np.moveaxis(target, 1, -1) * (1 - label_smoothing) + label_smoothing / n_classes
    return np_reduce(-(rows * q * w).sum(-1), reduction)


def ref_bce(p, y, weight=None, reduction="mean"):
    with np.errstate(divide="ignore"):
        loss = -(y * np.maximum(np.log(p), -100) + (1 - y) * np.maximum(np.log(1 - p), -100))
    return np_reduce(loss * (1.0 if weight is None else weight), reduction)


def ref_bce_logits(x, y, weight=None, pos_weight=None, reduction="mean"):
    sig = 1.0 / (1.0 + np.exp(-x))
    pw = 1.0 if pos_weight is None else pos_weight
    loss = -(pw * y * np.log(sig) + (1 - y) * np.log(1 - sig))
    return np_reduce(loss * (1.0 if weight is None else weight), reduction)


def ref_smooth_l1(x, y, beta=1.0, reduction="none"):
    d = np.abs(x - y)
    return np_reduce(np.where(d < beta, 0.5 * d ** 2 / beta, d - 0.5 * beta), reduction)


def ref_huber(x, y, reduction="mean", delta=1.0):
    d = np.abs(x - y)
    return np_reduce(np.where(d < delta, 0.5 * d ** 2, delta * (d - 0.5 * delta)), reduction)


def ref_kl_div(logp, q, reduction="mean"):
    loss = np.zeros_like(q)
    positive = q > 0
    loss[positive] = q[positive] * (np.log(q[positive]) - logp[positive])
    if reduction == "batchmean":
        return loss.sum() / logp.shape[0]
    return np_reduce(loss, reduction)


def ref_soft_margin(x, y, reduction="mean"):
    return np_reduce(np.log(1 + np.exp(-y * x)), reduction)


def ref_margin_ranking(x1, x2, y, margin=0.0, reduction="mean"):
    return np_reduce(np.maximum(0.0, -y * (x1 - x2) + margin), reduction)


# ---- cross_entropy and nll_loss --------------------------------------------------------------

CLASS_SHAPES = [(5, 4), (3, 4, 6), (2, 3, 4, 2)]  # (N, C), (N, C, d1), (N, C, d1, d2)


@pytest.mark.parametrize("shape", CLASS_SHAPES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
@pytest.mark.parametrize("ignore_index", [-100, 1])
def test_cross_entropy_of_class_indices(shape, weighted, reduction, label_smoothing,
                                        ignore_index):
    logits = rng_array(shape)
    n_classes = shape[1]
    target = class_targets((shape[0],) + shape[2:], n_classes, ignore_index=ignore_index)
    weight = rng_array((n_classes,), seed=3, low=0.2, high=2.0) if weighted else None
    want = ref_nll(np_log_softmax(logits), target, weight, ignore_index, reduction,
                   label_smoothing)
    w = None if weight is None else T(weight)
    check_eager_and_jit(
        lambda x, t: cross_entropy(x, t, w, ignore_index, reduction, label_smoothing),
        want, T(logits), T(target, np.int32))


@pytest.mark.parametrize("shape", [(5, 4), (3, 4, 6)])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.3])
def test_cross_entropy_of_class_probabilities(shape, weighted, reduction, label_smoothing):
    logits, target = rng_array(shape), probabilities(shape, seed=4)
    weight = rng_array((shape[1],), seed=3, low=0.2, high=2.0) if weighted else None
    want = ref_probability_ce(logits, target, weight, reduction, label_smoothing)
    w = None if weight is None else T(weight)
    check_eager_and_jit(
        lambda x, t: cross_entropy(x, t, w, reduction=reduction, label_smoothing=label_smoothing),
        want, T(logits), T(target))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_of_one_unbatched_sample(reduction):
    logits = rng_array((5,))
    want = ref_nll(np_log_softmax(logits[None]), np.array([3]), reduction=reduction)
    got = check_eager_and_jit(lambda x, t: cross_entropy(x, t, reduction=reduction),
                              np.reshape(want, ()), T(logits), T(3, np.int64))
    assert got.shape == ()
    probs = probabilities((5,), seed=2, axis=0)
    want = ref_probability_ce(logits[None], probs[None], reduction=reduction)
    check_eager_and_jit(lambda x, t: cross_entropy(x, t, reduction=reduction),
                        np.reshape(want, ()), T(logits), T(probs))


def test_cross_entropy_takes_every_integer_dtype_and_large_logits():
    logits = np.array([[1000.0, 0.0, -1000.0], [0.0, 0.0, 0.0]])
    for dtype in (np.int32, np.int64, np.uint8, np.int16):
        got = cross_entropy(T(logits), T([1, 2], dtype), reduction="none").asnumpy()
        np.testing.assert_allclose(got, [1000.0, np.log(3.0)], rtol=1e-12)


def test_cross_entropy_mean_is_weighted_by_the_kept_targets():
    # Two samples, class weights 1 and 3: 'mean' is (1 * l0 + 3 * l1) / (1 + 3), not / 2.
    logits = np.array([[0.5, -0.5], [0.2, 0.1]])
    per = -np_log_softmax(logits)[[0, 1], [0, 1]]
    got = cross_entropy(T(logits), T([0, 1], np.int32), T([1.0, 3.0])).asnumpy()
    np.testing.assert_allclose(got, (per[0] + 3 * per[1]) / 4, rtol=1e-12)
    got = cross_entropy(T(logits), T([0, -100], np.int32), T([1.0, 3.0])).asnumpy()
    np.testing.assert_allclose(got, per[0], rtol=1e-12)


@pytest.mark.parametrize("shape", CLASS_SHAPES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_nll_loss(shape, weighted, reduction, label_smoothing):
    log_probs = np_log_softmax(rng_array(shape, seed=5))
    target = class_targets((shape[0],) + shape[2:], shape[1], seed=6)
    weight = rng_array((shape[1],), seed=3, low=0.2, high=2.0) if weighted else None
    want = ref_nll(log_probs, target, weight, -100, reduction, label_smoothing)
    w = None if weight is None else T(weight)
    check_eager_and_jit(
        lambda x, t: nll_loss(x, t, w, reduction=reduction, label_smoothing=label_smoothing),
        want, T(log_probs), T(target, np.int32))


# ---- binary classification -----------------------------------------------------------------

@pytest.mark.parametrize("shape", [(6,), (3, 4), (2, 3, 2)])
@pytest.mark.parametrize("weighting", ["none", "full", "broadcast"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(shape, weighting, reduction):
    p, y = rng_array(shape, low=0.02, high=0.98), rng_array(shape, seed=1, low=0.0, high=1.0)
    weight = {"none": None, "full": rng_array(shape, seed=2, low=0.1, high=2.0),
              "broadcast": rng_array(shape[-1:], seed=2, low=0.1, high=2.0)}[weighting]
    want = ref_bce(p, y, weight, reduction)
    w = None if weight is None else T(weight)
    check_eager_and_jit(lambda a, b: binary_cross_entropy(a, b, w, reduction), want, T(p), T(y))


def test_binary_cross_entropy_floors_the_log_at_minus_100():
    got = binary_cross_entropy(T([0.0, 1.0, 0.5]), T([1.0, 0.0, 1.0]), reduction="none")
    np.testing.assert_allclose(got.asnumpy(), [100.0, 100.0, np.log(2.0)], rtol=1e-12)


@pytest.mark.parametrize("shape", [(6,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("pos_weighted", [False, True])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(shape, weighted, pos_weighted, reduction):
    x, y = rng_array(shape, low=-5, high=5), rng_array(shape, seed=1, low=0.0, high=1.0)
    weight = rng_array(shape, seed=2, low=0.1, high=2.0) if weighted else None
    pos_weight = rng_array(shape[-1:], seed=3, low=0.5, high=3.0) if pos_weighted else None
    want = ref_bce_logits(x, y, weight, pos_weight, reduction)
    w = None if weight is None else T(weight)
    pw = None if pos_weight is None else T(pos_weight)
    check_eager_and_jit(lambda a, b: binary_cross_entropy_with_logits(a, b, w, pw, reduction),
                        want, T(x), T(y))


def test_binary_cross_entropy_with_logits_is_stable_for_large_logits():
    x, y = T([1000.0, -1000.0, 1000.0, -1000.0, 40.0]), T([0.0, 1.0, 1.0, 0.0, 1.0])
    got = binary_cross_entropy_with_logits(x, y, reduction="none").asnumpy()
    np.testing.assert_allclose(got, [1000.0, 1000.0, 0.0, 0.0, np.log1p(np.exp(-40.0))],
                               rtol=1e-12, atol=0)
    grad = ms.grad(lambda t: binary_cross_entropy_with_logits(t, y, reduction="sum"))(x)
    np.testing.assert_allclose(grad.asnumpy(), [1.0, -1.0, 0.0, 0.0, -np.exp(-40.0)],
                               rtol=1e-9, atol=1e-300)


@pytest.mark.parametrize("shape", [(5,), (3, 4)])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_soft_margin_loss(shape, reduction):
    x, y = rng_array(shape), np.sign(rng_array(shape, seed=1))
    check_eager_and_jit(lambda a, b: soft_margin_loss(a, b, reduction),
                        ref_soft_margin(x, y, reduction), T(x), T(y))


@pytest.mark.parametrize("margin", [0.0, 0.5])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_ranking_loss(margin, reduction):
    x1, x2, y = rng_array((3, 4)), rng_array((3, 4), seed=1), np.sign(rng_array((3, 4), seed=2))
    check_eager_and_jit(lambda a, b, c: margin_ranking_loss(a, b, c, margin, reduction),
                        ref_margin_ranking(x1, x2, y, margin, reduction), T(x1), T(x2), T(y))


# ---- regression and divergence --------------------------------------------------------------

@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_smooth_l1_loss(beta, reduction):
    x, y = rng_array((3, 5)), rng_array((3, 5), seed=1)
    check_eager_and_jit(lambda a, b: smooth_l1_loss(a, b, beta, reduction),
                        ref_smooth_l1(x, y, beta, reduction), T(x), T(y))


def test_smooth_l1_loss_reduces_nothing_by_default():
    x, y = rng_array((2, 3)), rng_array((2, 3), seed=1)
    got = smooth_l1_loss(T(x), T(y))
    np.testing.assert_allclose(got.asnumpy(), ref_smooth_l1(x, y), rtol=1e-12)


@pytest.mark.parametrize("delta", [0.5, 1.0, 3])
@pytest.mark.parametrize("target_shape", [(3, 4), (4,), (3, 1)])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_huber_loss(delta, target_shape, reduction):
    x, y = rng_array((3, 4)), rng_array(target_shape, seed=1)
    check_eager_and_jit(lambda a, b: huber_loss(a, b, reduction, delta),
                        ref_huber(x, y, reduction, delta), T(x), T(y))


@pytest.mark.parametrize("shape", [(4,), (3, 5), (2, 3, 4)])
@pytest.mark.parametrize("reduction", ["mean", "batchmean", "sum", "none"])
def test_kl_div(shape, reduction):
    logp = np_log_softmax(rng_array(shape), axis=-1)
    q = probabilities(shape, seed=1, axis=-1)
    q.flat[::3] = 0.0  # a label of 0 contributes 0
    check_eager_and_jit(lambda a, b: kl_div(a, b, reduction), ref_kl_div(logp, q, reduction),
                        T(logp), T(q))


@pytest.mark.parametrize("target_shape", [(3, 4), (4,), (2, 3, 4)])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_mse_and_l1_loss_broadcast(target_shape, reduction):
    x, y = rng_array((3, 4)), rng_array(target_shape, seed=1)
    check_eager_and_jit(lambda a, b: mse_loss(a, b, reduction), np_reduce((x - y) ** 2, reduction),
                        T(x), T(y))
    check_eager_and_jit(lambda a, b: l1_loss(a, b, reduction), np_reduce(np.abs(x - y), reduction),
                        T(x), T(y))


def test_float32_inputs_give_float32_losses():
    x, t = rng_array((4, 3)).astype(np.float32), np.array([0, 2, 1, 1], np.int32)
    got = cross_entropy(T(x, np.float32), T(t, np.int32), T([1.0, 2.0, 0.5], np.float32))
    assert got.dtype == ms.float32
    want = ref_nll(np_log_softmax(x.astype(np.float64)), t, np.array([1.0, 2.0, 0.5]))
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)
    got = binary_cross_entropy_with_logits(T(x, np.float32), T(x > 0, np.float32))
    assert got.dtype == ms.float32


# ---- gradients ------------------------------------------------------------------------------

def _grad_cases():
    target3 = T(class_targets((2, 3), 4, seed=7), np.int32)
    target_index = T(class_targets((6,), 4, seed=8, ignore_index=2), np.int32)
    w = T([0.5, 2.0, 1.0, 1.5])
    probs = T(probabilities((3, 4), seed=2))
    y01, sign = T(rng_array((3, 4), seed=1, low=0, high=1)), T(np.sign(rng_array((3, 4), seed=4)))
    other = T(rng_array((3, 4), seed=5))
    logp = T(np_log_softmax(rng_array((3, 4), seed=6), axis=-1))
    return {
        "cross_entropy (N, C, d1) weighted smoothed mean": (
            lambda x: cross_entropy(x, target3, w, label_smoothing=0.2), (2, 4, 3)),
        "cross_entropy ignore_index=2 sum": (
            lambda x: cross_entropy(x, target_index, w, 2, "sum"), (6, 4)),
        "cross_entropy probabilities none": (
            lambda x: cross_entropy(x, probs, w, reduction="none", label_smoothing=0.1), (3, 4)),
        "nll_loss (N, C, d1) none": (
            lambda x: nll_loss(x, target3, w, reduction="none"), (2, 4, 3)),
        "binary_cross_entropy weighted": (
            lambda x: binary_cross_entropy(ms.ops.sigmoid(x), y01, other * other), (3, 4)),
        "binary_cross_entropy_with_logits pos_weight": (
            lambda x: binary_cross_entropy_with_logits(x, y01, None, T([1.0, 2.0, 0.5, 3.0]),
                                                       "none"), (3, 4)),
        "soft_margin_loss": (lambda x: soft_margin_loss(x, sign, "none"), (3, 4)),
        "margin_ranking_loss": (lambda x: margin_ranking_loss(x, other, sign, 0.3, "none"), (3, 4)),
        "smooth_l1_loss beta=0.7": (lambda x: smooth_l1_loss(x, other, 0.7, "mean"), (3, 4)),
        "huber_loss delta=1.5": (lambda x: huber_loss(x, other, "none", 1.5), (3, 4)),
        "kl_div batchmean": (lambda x: kl_div(x, probs, "batchmean"), (3, 4)),
        "kl_div of labels": (lambda q: kl_div(logp, ms.ops.softmax(q, -1), "sum"), (3, 4)),
        "mse_loss broadcast": (lambda x: mse_loss(x, other[0], "none"), (3, 4)),
        "l1_loss": (lambda x: l1_loss(x, other, "sum"), (3, 4)),
    }


@pytest.mark.parametrize("name", list(_grad_cases()))
def test_gradient_matches_finite_differences(name):
    fn, shape = _grad_cases()[name]
    # Random inputs sit away from the kinks (|d|, max, |d| = beta or delta) the differences
    # would straddle.
    x = rng_array(shape, seed=11)
    check_gradient(fn, x)


def test_gradient_of_jitted_loss_equals_eager():
    target = T(class_targets((5,), 3, seed=2), np.int32)
    fn = lambda x: cross_entropy(x, target, T([1.0, 2.0, 3.0]), label_smoothing=0.1)  # noqa: E731
    x = T(rng_array((5, 3)))
    np.testing.assert_allclose(ms.grad(ms.jit(fn))(x).asnumpy(), ms.grad(fn)(x).asnumpy(),
                               rtol=1e-12)


# ---- Cells ----------------------------------------------------------------------------------

def _cell_cases():
    logits, target = rng_array((4, 3, 2)), class_targets((4, 2), 3, seed=3)
    target_ignoring_1 = class_targets((4, 2), 3, seed=3, ignore_index=1)
    weight = np.array([0.5, 1.0, 2.0])
    p, y = rng_array((3, 4), low=0.05, high=0.95), rng_array((3, 4), seed=1, low=0, high=1)
    x, z = rng_array((3, 4), seed=2), rng_array((3, 4), seed=3)
    sign = np.sign(rng_array((3, 4), seed=4))
    logp, q = np_log_softmax(x, -1), probabilities((3, 4), seed=5, axis=-1)
    return {
        "CrossEntropyLoss": (
            CrossEntropyLoss(T(weight), reduction="sum", label_smoothing=0.1),
            (logits, target), ref_nll(np_log_softmax(logits), target, weight, -100, "sum", 0.1)),
        "NLLLoss": (NLLLoss(T(weight), ignore_index=1, reduction="none"),
                    (logits, target_ignoring_1),
                    ref_nll(logits, target_ignoring_1, weight, 1, "none")),
        "BCELoss": (BCELoss(T(z * z)), (p, y), ref_bce(p, y, z * z)),
        "BCEWithLogitsLoss": (BCEWithLogitsLoss("sum", T(z * z), T([1.0, 2.0, 3.0, 0.5])),
                              (x, y), ref_bce_logits(x, y, z * z, [1.0, 2.0, 3.0, 0.5], "sum")),
        "SmoothL1Loss": (SmoothL1Loss(0.5), (x, z), ref_smooth_l1(x, z, 0.5)),
        "HuberLoss": (HuberLoss("sum", 2.0), (x, z), ref_huber(x, z, "sum", 2.0)),
        "KLDivLoss": (KLDivLoss("batchmean"), (logp, q), ref_kl_div(logp, q, "batchmean")),
        "SoftMarginLoss": (SoftMarginLoss(), (x, sign), ref_soft_margin(x, sign)),
        "MarginRankingLoss": (MarginRankingLoss(0.2, "none"), (x, z, sign),
                              ref_margin_ranking(x, z, sign, 0.2, "none")),
    }


def _tensor_args(args):
    return [T(a, np.int32) if a.dtype.kind == "i" else T(a) for a in args]


@pytest.mark.parametrize("name", list(_cell_cases()))
def test_cell_matches_reference_eagerly_and_jitted(name):
    cell, args, want = _cell_cases()[name]
    check_eager_and_jit(lambda *a: cell(*a), want, *_tensor_args(args))


@pytest.mark.parametrize("name", list(_cell_cases()))
def test_cell_in_graph_mode(name):
    cell, args, want = _cell_cases()[name]
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        got = cell(*_tensor_args(args))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-10, atol=1e-12)


def test_cells_are_loss_bases_with_mindspores_defaults():
    defaults = {
        CrossEntropyLoss: dict(weight=None, ignore_index=-100, reduction="mean",
                               label_smoothing=0.0),
        NLLLoss: dict(weight=None, ignore_index=-100, reduction="mean"),
        BCELoss: dict(weight=None, reduction="mean"),
        BCEWithLogitsLoss: dict(reduction="mean", weight=None, pos_weight=None),
        SmoothL1Loss: dict(beta=1.0, reduction="none"),
        HuberLoss: dict(reduction="mean", delta=1.0),
        KLDivLoss: dict(reduction="mean"),
        SoftMarginLoss: dict(reduction="mean"),
        MarginRankingLoss: dict(margin=0.0, reduction="mean"),
    }
    for cls, want in defaults.items():
        params = inspect.signature(cls.__init__).parameters
        assert {k: p.default for k, p in params.items() if k != "self"} == want, cls.__name__
        assert isinstance(cls(), ms.nn.LossBase)
    assert repr(SmoothL1Loss(0.5)) == "SmoothL1Loss<beta=0.5, reduction=none>"


def test_functions_have_mindspores_signatures():
    want = {
        cross_entropy: "(input, target, weight=None, ignore_index=-100, reduction='mean', "
                       "label_smoothing=0.0)",
        nll_loss: "(inputs, target, weight=None, ignore_index=-100, reduction='mean', "
                  "label_smoothing=0.0)",
        binary_cross_entropy: "(logits, labels, weight=None, reduction='mean')",
        binary_cross_entropy_with_logits: "(logits, label, weight=None, pos_weight=None, "
                                          "reduction='mean')",
        smooth_l1_loss: "(input, target, beta=1.0, reduction='none')",
        huber_loss: "(input, target, reduction='mean', delta=1.0)",
        kl_div: "(logits, labels, reduction='mean')",
        mse_loss: "(input, target, reduction='mean')",
        l1_loss: "(input, target, reduction='mean')",
        soft_margin_loss: "(input, target, reduction='mean')",
        margin_ranking_loss: "(input1, input2, target, margin=0.0, reduction='mean')",
    }
    for fn, signature in want.items():
        assert str(inspect.signature(fn)) == signature, fn.__name__


# ---- errors ---------------------------------------------------------------------------------

X34, Y34 = T(rng_array((3, 4))), T(rng_array((3, 4), seed=1, low=0.1, high=0.9))
IDX3 = T([0, 1, 2], np.int32)

BAD_CALLS = [
    (lambda: cross_entropy(X34, IDX3, reduction="avg"), ValueError,
     r"cross_entropy: reduction must be one of \('mean', 'sum', 'none'\), got 'avg'"),
    (lambda: cross_entropy(X34, IDX3, label_smoothing=1.5), ValueError,
     r"cross_entropy: label_smoothing must be in \[0.0, 1.0\], got 1.5"),
    (lambda: cross_entropy(X34, IDX3, label_smoothing=-0.1), ValueError,
     r"label_smoothing must be in \[0.0, 1.0\], got -0.1"),
    (lambda: cross_entropy(X34, IDX3, label_smoothing="a"), TypeError,
     "cross_entropy: label_smoothing must be a float, got str"),
    (lambda: cross_entropy(X34, T([0, 1], np.int32)), ValueError,
     r"cross_entropy: target of class indices must have shape \(3,\).*got \(2,\)"),
    (lambda: cross_entropy(T(rng_array((2, 3, 4))), T([[0, 1, 2]], np.int32)), ValueError,
     r"must have shape \(2, 4\) \(the input's \(2, 3, 4\) without its class axis 1\)"),
    (lambda: cross_entropy(X34, T(rng_array((3, 5)))), ValueError,
     r"cross_entropy: target of class probabilities must have the shape of input \(3, 4\), "
     r"got \(3, 5\)"),
    (lambda: cross_entropy(X34, T([True, False, True], np.bool_)), TypeError,
     "cross_entropy: target must hold class indices .* got Bool"),
    (lambda: cross_entropy(X34, IDX3, T([1.0, 2.0])), ValueError,
     r"cross_entropy: weight must have shape \(4,\), one value per class, got \(2,\)"),
    (lambda: cross_entropy(X34, IDX3, ignore_index=1.5), TypeError,
     "cross_entropy: ignore_index must be an int, got float"),
    (lambda: cross_entropy(T([[1, 2]], np.int32), T([0], np.int32)), TypeError,
     "cross_entropy: input must have a floating-point dtype, got Int32"),
    (lambda: cross_entropy(np.zeros((3, 4)), IDX3), TypeError,
     "cross_entropy: input must be a Tensor, got ndarray"),
    (lambda: cross_entropy(T(rng_array((4,))), IDX3), ValueError,
     r"for an input of shape \(4,\), target must have shape \(\), got \(3,\)"),
    (lambda: nll_loss(T(rng_array((3,))), IDX3), ValueError,
     r"nll_loss: inputs must have shape \(N, C\) or \(N, C, d1, ...\), got \(3,\)"),
    (lambda: nll_loss(X34, T([0.0, 1.0, 2.0])), TypeError,
     "nll_loss: target must hold class indices of an integer dtype, got Float64"),
    (lambda: nll_loss(X34, IDX3, reduction="batchmean"), ValueError,
     "nll_loss: reduction must be one of"),
    (lambda: binary_cross_entropy(Y34, T(rng_array((4, 3)))), ValueError,
     r"binary_cross_entropy: labels must have the shape of logits \(3, 4\), got \(4, 3\)"),
    (lambda: binary_cross_entropy(Y34, Y34, T(rng_array((3,)))), ValueError,
     r"binary_cross_entropy: weight of shape \(3,\) does not broadcast with logits"),
    (lambda: binary_cross_entropy(Y34, Y34, T(rng_array((2, 3, 4)))), ValueError,
     r"weight of shape \(2, 3, 4\) must broadcast to the shape of logits \(3, 4\)"),
    (lambda: binary_cross_entropy_with_logits(X34, Y34, pos_weight=T([1.0, 2.0])), ValueError,
     r"binary_cross_entropy_with_logits: pos_weight of shape \(2,\) does not broadcast"),
    (lambda: binary_cross_entropy_with_logits(X34, Y34, reduction=None), ValueError,
     "binary_cross_entropy_with_logits: reduction must be one of .* got None"),
    (lambda: smooth_l1_loss(X34, Y34, beta=0.0), ValueError,
     "smooth_l1_loss: beta must be greater than 0, got 0.0"),
    (lambda: smooth_l1_loss(X34, T(rng_array((4,)))), ValueError,
     r"smooth_l1_loss: target must have the shape of input \(3, 4\), got \(4,\)"),
    (lambda: huber_loss(X34, Y34, delta=-1), ValueError,
     "huber_loss: delta must be greater than 0, got -1.0"),
    (lambda: huber_loss(X34, Y34, delta=True), TypeError, "huber_loss: delta must be a float"),
    (lambda: mse_loss(X34, T(rng_array((3,)))), ValueError,
     r"mse_loss: target of shape \(3,\) does not broadcast with input of shape \(3, 4\)"),
    (lambda: l1_loss(X34, Y34, reduction="MEAN"), ValueError,
     "l1_loss: reduction must be one of .* got 'MEAN'"),
    (lambda: kl_div(X34, Y34, "batchsum"), ValueError,
     r"kl_div: reduction must be one of \('mean', 'batchmean', 'sum', 'none'\), got 'batchsum'"),
    (lambda: kl_div(X34, T(rng_array((3, 5)))), ValueError,
     r"kl_div: labels must have the shape of logits \(3, 4\), got \(3, 5\)"),
    (lambda: soft_margin_loss(X34, T(rng_array((3, 1)))), ValueError,
     r"soft_margin_loss: target must have the shape of input \(3, 4\)"),
    (lambda: margin_ranking_loss(X34, Y34, T(rng_array((3,)))), ValueError,
     r"margin_ranking_loss: target must have the shape of input1 \(3, 4\), got \(3,\)"),
    (lambda: margin_ranking_loss(X34, Y34, Y34, margin="1"), TypeError,
     "margin_ranking_loss: margin must be a float, got str"),
    (lambda: CrossEntropyLoss(reduction="avg"), ValueError,
     "CrossEntropyLoss: reduction must be one of"),
    (lambda: CrossEntropyLoss(label_smoothing=2.0), ValueError,
     r"CrossEntropyLoss: label_smoothing must be in \[0.0, 1.0\], got 2.0"),
    (lambda: NLLLoss(weight=[1.0, 2.0]), TypeError, "NLLLoss: weight must be a Tensor, got list"),
    (lambda: BCEWithLogitsLoss(pos_weight=T([1, 2], np.int32)), TypeError,
     "BCEWithLogitsLoss: pos_weight must have a floating-point dtype, got Int32"),
    (lambda: SmoothL1Loss(beta=-0.5), ValueError, "SmoothL1Loss: beta must be greater than 0"),
    (lambda: HuberLoss(delta=0), ValueError, "HuberLoss: delta must be greater than 0"),
    (lambda: KLDivLoss("avg"), ValueError, "KLDivLoss: reduction must be one of"),
    (lambda: SoftMarginLoss("avg"), ValueError, "SoftMarginLoss: reduction must be one of"),
    (lambda: MarginRankingLoss(margin=None), TypeError,
     "MarginRankingLoss: margin must be a float, got NoneType"),
]


@pytest.mark.parametrize("call,error,match", BAD_CALLS,
                         ids=[f"bad{i}" for i in range(len(BAD_CALLS))])
def test_bad_arguments_raise_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_bad_arguments_raise_the_same_error_when_jitted_in_bytecode_mode():
    # A call that fails its checks falls back to Python, which raises the ValueError itself.
    fn = ms.jit(lambda x, t: cross_entropy(x, t, reduction="avg"), capture_mode="bytecode")
    with pytest.raises(ValueError, match="cross_entropy: reduction must be one of"):
        fn(X34, IDX3)


def test_cell_reports_a_shape_mismatch_at_call():
    with pytest.raises(ValueError, match="binary_cross_entropy: labels must have the shape"):
        BCELoss()(Y34, T(rng_array((4, 3))))


# ---- against torch, where it is installed ---------------------------------------------------

try:
    import torch
    import torch.nn.functional as torch_f
except ImportError:  # torch is optional: the NumPy references above cover every case
    torch = None


@pytest.mark.skipif(torch is None, reason="torch is not installed")
def test_matches_torch_functional():
    logits, target = rng_array((4, 3, 2)), class_targets((4, 2), 3, seed=1)
    weight = np.array([0.3, 1.0, 2.0])
    p, y = rng_array((3, 4), low=0.05, high=0.95), rng_array((3, 4), seed=1, low=0, high=1)
    x, z = rng_array((3, 4), seed=2), rng_array((3, 4), seed=3)
    tt = torch.from_numpy
    pairs = [
        (cross_entropy(T(logits), T(target, np.int64), T(weight), label_smoothing=0.2),
         torch_f.cross_entropy(tt(logits), tt(target), tt(weight), label_smoothing=0.2)),
        (nll_loss(T(logits), T(target, np.int64), T(weight), reduction="sum"),
         torch_f.nll_loss(tt(logits), tt(target), tt(weight), reduction="sum")),
        (binary_cross_entropy(T(p), T(y)), torch_f.binary_cross_entropy(tt(p), tt(y))),
        (binary_cross_entropy_with_logits(T(x), T(y), pos_weight=T([1.0, 2.0, 3.0, 0.5])),
         torch_f.binary_cross_entropy_with_logits(tt(x), tt(y),
                                                  pos_weight=tt(np.array([1.0, 2.0, 3.0, 0.5])))),
        (smooth_l1_loss(T(x), T(z), 0.5, "mean"), torch_f.smooth_l1_loss(tt(x), tt(z), beta=0.5)),
        (huber_loss(T(x), T(z), delta=2.0), torch_f.huber_loss(tt(x), tt(z), delta=2.0)),
        (kl_div(T(np_log_softmax(x, -1)), T(p), "batchmean"),
         torch_f.kl_div(tt(np_log_softmax(x, -1)), tt(p), reduction="batchmean")),
        (soft_margin_loss(T(x), T(np.sign(z))), torch_f.soft_margin_loss(tt(x), tt(np.sign(z)))),
        (margin_ranking_loss(T(x), T(z), T(np.sign(p - 0.5)), 0.1),
         torch_f.margin_ranking_loss(tt(x), tt(z), tt(np.sign(p - 0.5)), margin=0.1)),
    ]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours.asnumpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)
