"""DiceLoss, MultiClassDiceLoss, FocalLoss and SampledSoftmaxLoss (pijit/nn/losses_more.py)
against NumPy references written here from MindSpore's formulas, in float64: MindSpore's
documented examples, jitted (bytecode capture, one graph) equal to eager, gradients against
central finite differences, and bad arguments raising errors that name the loss and the
argument."""
import numpy as np
import pytest

from pijit import nn
from mint_testutil import T, grad_matches, jitted_equals_eager

R = np.random.default_rng(23)


def check_loss(loss, x, y, want, atol=0.0, grad_rtol=1e-5):
    """loss(x, y), jitted as one graph, equals the reference value `want`, and its gradient in
    x is the one central differences give."""
    out = jitted_equals_eager(lambda a, b: loss(a, b), T(x), T(y))
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-12, atol=atol)
    ty = T(y)
    grad_matches(lambda a: loss(a, ty), x, rtol=grad_rtol)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _dice_reference(x, y, smooth=1e-5):
    return 1.0 - 2.0 * (x * y).sum() / ((x * x).sum() + (y * y).sum() + smooth)


def test_dice_loss_matches_mindspore_example_and_reference():
    logits = np.array([[0.2, 0.5], [0.3, 0.1], [0.9, 0.6]])
    labels = np.array([[0, 1], [1, 0], [0, 1]], dtype=np.float64)
    got = nn.DiceLoss(smooth=1e-5)(T(logits.astype(np.float32)), T(labels.astype(np.float32)))
    np.testing.assert_allclose(got.asnumpy(), 0.38596618, rtol=1e-6)
    x, y = R.uniform(size=(3, 4, 5)), (R.uniform(size=(3, 4, 5)) > 0.5).astype(np.float64)
    loss = nn.DiceLoss(smooth=0.5)
    check_loss(loss, x, y, _dice_reference(x, y, 0.5), grad_rtol=1e-6)


def test_dice_loss_errors():
    with pytest.raises(ValueError, match="DiceLoss: smooth must be greater than 0"):
        nn.DiceLoss(smooth=0.0)
    with pytest.raises(TypeError, match="DiceLoss: smooth must be a float"):
        nn.DiceLoss(smooth="1")
    with pytest.raises(ValueError, match="DiceLoss: logits and labels must have the same shape"):
        nn.DiceLoss()(T(np.ones((2, 3))), T(np.ones((3, 2))))
    with pytest.raises(TypeError, match="DiceLoss: labels must be a Tensor"):
        nn.DiceLoss()(T(np.ones((2, 3))), np.ones((2, 3)))


def _multi_dice_reference(x, y, weights=None, ignore=None, activation=_softmax):
    if activation is not None:
        x = activation(x, -1)
    total = 0.0
    for i in range(y.shape[1]):
        if i == ignore:
            continue
        loss = _dice_reference(x[:, i], y[:, i])
        total = total + (loss * weights[i] if weights is not None else loss)
    return np.asarray(total / y.shape[1])


def test_multi_class_dice_loss_matches_mindspore_example():
    logits = np.array([[0.2, 0.5, 0.7], [0.3, 0.1, 0.5], [0.9, 0.6, 0.3]], np.float32)
    labels = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 1]], np.float32)
    loss = nn.MultiClassDiceLoss(weights=None, ignore_indiex=None, activation="softmax")
    np.testing.assert_allclose(loss(T(logits), T(labels)).asnumpy(), 0.54958105, rtol=1e-6)


@pytest.mark.parametrize("use_weights, ignore, activation", [
    (False, None, "softmax"), (True, 1, "sigmoid"), (False, 0, None)])
def test_multi_class_dice_loss_reference_jit_and_grad(use_weights, ignore, activation):
    x = R.normal(size=(2, 3, 4, 5))
    y = (R.uniform(size=(2, 3, 4, 5)) > 0.5).astype(np.float64)
    weights = R.uniform(0.5, 1.5, size=(3, 5)) if use_weights else None
    act = {"softmax": _softmax, "sigmoid": lambda a, _: 1 / (1 + np.exp(-a)), None: None}
    loss = nn.MultiClassDiceLoss(T(weights) if use_weights else None, ignore, activation)
    check_loss(loss, x, y, _multi_dice_reference(x, y, weights, ignore, act[activation]))


def test_multi_class_dice_loss_errors():
    with pytest.raises(ValueError, match="MultiClassDiceLoss: activation must be one of"):
        nn.MultiClassDiceLoss(activation="gelu")
    with pytest.raises(TypeError, match="MultiClassDiceLoss: activation must be a str"):
        nn.MultiClassDiceLoss(activation=3)
    with pytest.raises(ValueError, match="MultiClassDiceLoss: weights must be 2-D"):
        nn.MultiClassDiceLoss(weights=T(np.ones(3)))
    with pytest.raises(TypeError, match="MultiClassDiceLoss: ignore_indiex must be an int"):
        nn.MultiClassDiceLoss(ignore_indiex=1.5)
    loss = nn.MultiClassDiceLoss(weights=T(np.ones((4, 3))))
    with pytest.raises(ValueError, match=r"weights.shape\[0\] \(4\) must equal"):
        loss(T(np.ones((2, 3))), T(np.ones((2, 3))))
    with pytest.raises(ValueError, match="at least 2 axes"):
        nn.MultiClassDiceLoss()(T(np.ones(3)), T(np.ones(3)))


def _focal_reference(x, y, weight, gamma, reduction):
    n, c = x.shape[:2]
    x = x.reshape(n, c, -1)
    y = y.reshape(y.shape[0], y.shape[1], -1)
    log_p = np.log(_softmax(x, 1))
    if y.shape[1] == 1:
        index = y[:, 0].astype(np.int64) % c
        log_p = np.take_along_axis(log_p, index[:, None], 1)[:, 0]
        w = weight[index] if weight is not None else 1.0
        loss = (-(1 - np.exp(log_p)) ** gamma * log_p * w).mean(1)
    else:
        w = weight[None, :, None] if weight is not None else 1.0
        loss = (-(1 - np.exp(log_p)) ** gamma * y * log_p * w).mean(-1)
    return {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[reduction]


def test_focal_loss_matches_mindspore_example():
    logits = np.array([[0.8, 1.4], [0.5, 0.9], [1.2, 0.9]], np.float32)
    labels = np.array([[1], [1], [0]], np.int32)
    loss = nn.FocalLoss(weight=T(np.array([1, 2], np.float32)), gamma=2.0, reduction="mean")
    np.testing.assert_allclose(loss(T(logits), T(labels)).asnumpy(), 0.12516622, rtol=1e-6)


@pytest.mark.parametrize("shape, by_index, use_weight, gamma, reduction", [
    ((4, 3), True, True, 2.0, "mean"), ((2, 3, 4, 5), True, False, 1.5, "sum"),
    ((2, 4, 5), False, True, 2.0, "none"), ((3, 3), False, False, 0.0, "mean")])
def test_focal_loss_reference_jit_and_grad(shape, by_index, use_weight, gamma, reduction):
    x = R.normal(size=shape)
    c = shape[1]
    if by_index:
        y = R.integers(-c, c, size=(shape[0], 1) + shape[2:]).astype(np.int32)
    else:
        y = _softmax(R.normal(size=shape), 1)
    weight = R.uniform(0.5, 2.0, size=c) if use_weight else None
    loss = nn.FocalLoss(T(weight) if use_weight else None, gamma, reduction)
    check_loss(loss, x, y, _focal_reference(x, y, weight, gamma, reduction), atol=1e-14)


def test_focal_loss_errors():
    with pytest.raises(TypeError, match="FocalLoss: gamma must be a float"):
        nn.FocalLoss(gamma="2")
    with pytest.raises(ValueError, match="FocalLoss: weight must be 1-D"):
        nn.FocalLoss(weight=T(np.ones((2, 2))))
    with pytest.raises(ValueError, match="FocalLoss: reduction must be one of"):
        nn.FocalLoss(reduction="max")
    loss = nn.FocalLoss()
    with pytest.raises(ValueError, match="FocalLoss: labels must have 1 channel or logits'"):
        loss(T(np.ones((2, 3))), T(np.ones((2, 2))))
    with pytest.raises(TypeError, match="integer dtype"):
        loss(T(np.ones((2, 3))), T(np.ones((2, 1))))
    with pytest.raises(ValueError, match="FocalLoss: logits must be"):
        loss(T(np.ones(3)), T(np.ones(3)))
    with pytest.raises(ValueError, match="weight has 2 entries but logits have 3"):
        nn.FocalLoss(weight=T(np.ones(2)))(T(np.ones((2, 3))), T(np.zeros((2, 1), np.int32)))


def _sampled_softmax_reference(w, b, labels, x, sampled, true_count, sampled_count):
    num_true = labels.shape[1]
    true_logits = np.einsum("nd,ntd->nt", x, w[labels]) + b[labels] - np.log(true_count)
    sampled_logits = x @ w[sampled].T + b[sampled] - np.log(sampled_count)
    all_logits = np.concatenate([true_logits, sampled_logits], 1)
    log_p = np.log(_softmax(all_logits, 1))
    return -log_p[:, :num_true].sum(1) / num_true


@pytest.mark.parametrize("num_true, reduction", [(1, "none"), (2, "mean")])
def test_sampled_softmax_loss_with_given_samples(num_true, reduction):
    n, dim, classes, num_sampled = 3, 4, 7, 3
    w, b, x = R.normal(size=(classes, dim)), R.normal(size=classes), R.normal(size=(n, dim))
    labels = R.integers(0, classes, size=(n, num_true))
    sampled = np.array([5, 1, 6])
    true_count = R.uniform(0.2, 0.8, size=(n, num_true))
    sampled_count = R.uniform(0.2, 0.8, size=num_sampled)
    loss = nn.SampledSoftmaxLoss(num_sampled, classes, num_true,
                                 (T(sampled), T(true_count), T(sampled_count)),
                                 reduction=reduction)
    tw, tb, tl = T(w), T(b), T(labels)
    out = jitted_equals_eager(lambda a: loss(tw, tb, tl, a), T(x))
    want = _sampled_softmax_reference(w, b, labels, x, sampled, true_count, sampled_count)
    want = want.mean() if reduction == "mean" else want
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-12)
    grad_matches(lambda a: loss(tw, tb, tl, a), x)
    tx = T(x)
    grad_matches(lambda a: loss(a, tb, tl, tx), w)


def test_sampled_softmax_loss_samples_every_other_class_without_accidental_hits():
    # Three distinct true classes of seven leave exactly four to sample, so the drawn set
    # (though random) is fixed, and so is the loss.
    n, dim, classes = 3, 5, 7
    w, b, x = R.normal(size=(classes, dim)), R.normal(size=classes), R.normal(size=(n, dim))
    labels = np.array([0, 1, 2])
    loss = nn.SampledSoftmaxLoss(num_sampled=4, num_classes=classes)
    got = loss(T(w), T(b), T(labels), T(x))
    q = 4 / classes
    want = _sampled_softmax_reference(w, b, labels[:, None], x, np.array([3, 4, 5, 6]),
                                      np.full((n, 1), q), np.full(4, q))
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-10)


def test_sampled_softmax_loss_errors():
    with pytest.raises(ValueError, match="num_sampled \\(8\\) and num_true \\(1\\) must not"):
        nn.SampledSoftmaxLoss(8, 7)
    with pytest.raises(ValueError, match="SampledSoftmaxLoss: num_true must be at least 1"):
        nn.SampledSoftmaxLoss(2, 7, num_true=0)
    with pytest.raises(TypeError, match="sampled_values must be a list or tuple"):
        nn.SampledSoftmaxLoss(2, 7, sampled_values=T(np.ones(2)))
    with pytest.raises(ValueError, match="sampled_values must hold 3 tensors"):
        nn.SampledSoftmaxLoss(2, 7, sampled_values=(1, 2))
    with pytest.raises(ValueError, match="reduction must be one of"):
        nn.SampledSoftmaxLoss(2, 7, reduction="avg")
    loss = nn.SampledSoftmaxLoss(2, 7)
    w, b, x = T(np.ones((7, 3))), T(np.ones(7)), T(np.ones((2, 3)))
    with pytest.raises(TypeError, match="labels must be int32 or int64"):
        loss(w, b, T(np.ones(2)), x)
    with pytest.raises(ValueError, match="weights must be \\(num_classes, dim\\)"):
        loss(w, b, T(np.array([0, 1])), T(np.ones((2, 4))))
