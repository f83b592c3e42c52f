"""MindSpore's confusion-matrix, segmentation, curve, text, similarity and occlusion metrics,
checked against NumPy references written here, the values in MindSpore's documentation, and
SciPy where it is installed."""
import math
from collections import Counter

import numpy as np
import pytest

import pijit as ms
from pijit import nn
from pijit.train import (ROC, BleuScore, ConfusionMatrix, ConfusionMatrixMetric,
                         CosineSimilarity, Dice, HausdorffDistance, MeanSurfaceDistance,
                         OcclusionSensitivity, Perplexity, RootMeanSquareDistance, auc,
                         get_metric_fn, names)

T = ms.Tensor


# ConfusionMatrix

def test_confusion_matrix_counts_pairs_over_batches():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 60)
    scores = rng.standard_normal((60, 4)).astype(np.float32)
    metric = ConfusionMatrix(num_classes=4)
    metric.update(T(scores[:25]), T(y[:25]))
    metric.update(scores[25:], y[25:].tolist())
    expected = np.zeros((4, 4))
    for true, predicted in zip(y, scores.argmax(axis=1)):
        expected[true, predicted] += 1
    result = metric.eval()
    assert result.dtype == np.float64
    np.testing.assert_array_equal(result, expected)


def test_confusion_matrix_documented_example_threshold_and_normalization():
    metric = ConfusionMatrix(num_classes=2, normalize="no_norm", threshold=0.5)
    np.testing.assert_array_equal(metric(T(np.array([1, 0, 1, 0])), T(np.array([1, 0, 0, 1]))),
                                  [[1, 1], [1, 1]])
    # Float predictions of the labels' shape are thresholded: 0.7 -> 1, 0.2 -> 0, 0.5 -> 1.
    y_pred, y = np.array([0.7, 0.2, 0.5, 0.1, 0.9]), np.array([1, 0, 0, 0, 0])
    counts = np.array([[2.0, 2.0], [0.0, 1.0]])
    np.testing.assert_array_equal(ConfusionMatrix(2)(y_pred, y), counts)
    np.testing.assert_allclose(ConfusionMatrix(2, threshold=0.8)(y_pred, y), [[3, 1], [1, 0]])
    np.testing.assert_allclose(ConfusionMatrix(2, "target")(y_pred, y),
                               counts / counts.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(ConfusionMatrix(2, "prediction")(y_pred, y),
                               counts / counts.sum(axis=0, keepdims=True))
    np.testing.assert_allclose(ConfusionMatrix(2, "all")(y_pred, y), counts / 5)
    np.testing.assert_array_equal(ConfusionMatrix(2)(y_pred > 0.45, y.astype(bool)), counts)
    # A class never seen gives a zero row instead of NaN.
    np.testing.assert_array_equal(ConfusionMatrix(3, "target")(np.array([0, 1]), np.array([0, 1])),
                                  [[1, 0, 0], [0, 1, 0], [0, 0, 0]])


def test_confusion_matrix_errors():
    with pytest.raises(ValueError, match="'ConfusionMatrix', 'normalize' must be one of"):
        ConfusionMatrix(2, normalize="label")
    with pytest.raises(TypeError, match="'ConfusionMatrix', 'num_classes' must be an int"):
        ConfusionMatrix(2.0)
    with pytest.raises(TypeError, match="'ConfusionMatrix', 'threshold' must be a float"):
        ConfusionMatrix(2, threshold="0.5")
    with pytest.raises(ValueError, match="ConfusionMatrix.update'.*true value must hold class "
                                         "indices in \\[0, 2\\)"):
        ConfusionMatrix(2)(np.array([0, 1]), np.array([0, 2]))
    with pytest.raises(ValueError, match="ConfusionMatrix.update'.*dimensions or one more"):
        ConfusionMatrix(2)(np.ones((2, 2, 2, 2)), np.array([0, 1]))
    with pytest.raises(ValueError, match="ConfusionMatrix.update', it needs 2 inputs"):
        ConfusionMatrix(2).update(np.array([0, 1]))
    with pytest.raises(RuntimeError, match="ConfusionMatrix.eval', call 'update' before"):
        ConfusionMatrix(2).eval()


# ConfusionMatrixMetric

def numpy_counts(y_pred, y):
    """(tp, fp, tn, fn) per sample and channel of binary [B, C, ...] arrays."""
    y_pred = y_pred.reshape(y_pred.shape[0], y_pred.shape[1], -1).astype(bool)
    y = y.reshape(y_pred.shape).astype(bool)
    return ((y_pred & y).sum(-1), (y_pred & ~y).sum(-1), (~y_pred & ~y).sum(-1),
            (~y_pred & y).sum(-1))


NUMPY_RATES = {
    "sensitivity": lambda tp, fp, tn, fn: tp / (tp + fn),
    "specificity": lambda tp, fp, tn, fn: tn / (tn + fp),
    "precision": lambda tp, fp, tn, fn: tp / (tp + fp),
    "negative predictive value": lambda tp, fp, tn, fn: tn / (tn + fn),
    "miss rate": lambda tp, fp, tn, fn: fn / (tp + fn),
    "fall out": lambda tp, fp, tn, fn: fp / (fp + tn),
    "false discovery rate": lambda tp, fp, tn, fn: fp / (fp + tp),
    "false omission rate": lambda tp, fp, tn, fn: fn / (fn + tn),
    "threat score": lambda tp, fp, tn, fn: tp / (tp + fn + fp),
    "accuracy": lambda tp, fp, tn, fn: (tp + tn) / (tp + fp + tn + fn),
    "balanced accuracy": lambda tp, fp, tn, fn: (tp / (tp + fn) + tn / (tn + fp)) / 2,
    "f1 score": lambda tp, fp, tn, fn: 2 * tp / (2 * tp + fn + fp),
    "matthews correlation coefficient": lambda tp, fp, tn, fn: (tp * tn - fp * fn) / math.sqrt(
        (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)),
    "fowlkes mallows index": lambda tp, fp, tn, fn: math.sqrt(tp / (tp + fp) * tp / (tp + fn)),
    "informedness": lambda tp, fp, tn, fn: tp / (tp + fn) + tn / (tn + fp) - 1,
    "markedness": lambda tp, fp, tn, fn: tp / (tp + fp) + tn / (tn + fn) - 1,
    "prevalence threshold": lambda tp, fp, tn, fn: (
        math.sqrt(tp / (tp + fn) * (1 - tn / (tn + fp))) + tn / (tn + fp) - 1) / (
        tp / (tp + fn) + tn / (tn + fp) - 1),
}


def test_confusion_matrix_metric_rates_of_accumulated_counts():
    rng = np.random.default_rng(1)
    y_pred = rng.integers(0, 2, (6, 3, 5, 5))
    y = rng.integers(0, 2, (6, 3, 5, 5))
    totals = [float(c.sum()) for c in numpy_counts(y_pred, y)]
    for metric_name, rate in NUMPY_RATES.items():
        metric = ConfusionMatrixMetric(metric_name=metric_name)
        metric.update(T(y_pred[:2]), T(y[:2]))
        metric.update(y_pred[2:], y[2:])
        result = metric.eval()
        assert isinstance(result, np.ndarray) and result.shape == (1,), metric_name
        assert result[0] == pytest.approx(rate(*totals)), metric_name
    # skip_channel=False leaves channel 0 out (what MindSpore computes).
    kept = [float(c.sum()) for c in numpy_counts(y_pred[:, 1:], y[:, 1:])]
    result = ConfusionMatrixMetric(skip_channel=False, metric_name="TPR")(y_pred, y)
    assert result[0] == pytest.approx(kept[0] / (kept[0] + kept[3]))


def test_confusion_matrix_metric_documented_example_and_undefined_rate():
    metric = ConfusionMatrixMetric(skip_channel=True, metric_name="tpr",
                                   calculation_method=False, decrease="mean")
    x = T(np.array([[[0], [1]], [[1], [0]]]))
    y = T(np.array([[[0], [1]], [[0], [1]]]))
    np.testing.assert_allclose(metric(x, y), [0.5])
    # No positive labels at all: the sensitivity is undefined.
    assert np.isnan(ConfusionMatrixMetric()(np.ones((2, 2)), np.zeros((2, 2))))[0]


def test_confusion_matrix_metric_per_sample_rates():
    rng = np.random.default_rng(2)
    y_pred = rng.integers(0, 2, (4, 3, 6, 6))
    y = rng.integers(0, 2, (4, 3, 6, 6))
    y[0, 1] = 0  # Sample 0, channel 1 has no positives: its sensitivity is left out.
    tp, fp, tn, fn = numpy_counts(y_pred, y)
    with np.errstate(invalid="ignore"):
        chart = tp / (tp + fn)
    valid = ~np.isnan(chart)
    per_sample = [chart[b][valid[b]].mean() for b in range(4)]
    metric = ConfusionMatrixMetric(metric_name="sensitivity", calculation_method=True)
    metric.update(y_pred[:2], y[:2])
    metric.update(y_pred[2:], y[2:])
    # 'mean': each batch's mean over samples, weighted by its number of samples.
    assert metric.eval() == pytest.approx(np.mean(per_sample))
    summed = ConfusionMatrixMetric(calculation_method=True, decrease="sum")
    summed.update(y_pred, y)
    assert summed.eval() == pytest.approx(chart[valid].sum())
    assert isinstance(summed.eval(), float)
    # Classification inputs [N, C] accumulate counts even with calculation_method=True.
    flat_pred, flat_y = rng.integers(0, 2, (8, 3)), rng.integers(0, 2, (8, 3))
    tp, fp, tn, fn = (c.sum() for c in numpy_counts(flat_pred, flat_y))
    result = ConfusionMatrixMetric(calculation_method=True)(flat_pred, flat_y)
    assert result[0] == pytest.approx(tp / (tp + fn))


def test_confusion_matrix_metric_errors():
    with pytest.raises(NotImplementedError, match="'ConfusionMatrixMetric'.*'hit rates' is not "
                                                  "implemented"):
        ConfusionMatrixMetric(metric_name="hit rates")
    with pytest.raises(ValueError, match="'decrease' must be one of"):
        ConfusionMatrixMetric(decrease="median")
    with pytest.raises(TypeError, match="'calculation_method' must be a bool"):
        ConfusionMatrixMetric(calculation_method=1)
    with pytest.raises(ValueError, match="ConfusionMatrixMetric.update'.*true value must be "
                                         "binarized"):
        ConfusionMatrixMetric()(np.ones((2, 2)), np.full((2, 2), 2))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        ConfusionMatrixMetric()(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="same shape"):
        ConfusionMatrixMetric()(np.ones((2, 3)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="decrease='none' leaves 6 values.*use 'mean' or 'sum'"):
        ConfusionMatrixMetric(calculation_method=True, decrease="none")(
            np.ones((2, 3, 4, 4)), np.ones((2, 3, 4, 4)))
    with pytest.raises(RuntimeError, match="'ConfusionMatrixMetric' can not be calculated"):
        ConfusionMatrixMetric(calculation_method=True).eval()


# CosineSimilarity and Dice

def test_cosine_similarity_matches_numpy():
    data = np.array([[1, 3, 4, 7], [2, 4, 2, 5], [3, 1, 5, 8]])
    metric = CosineSimilarity()
    metric.update(T(data))
    np.testing.assert_allclose(metric.eval(), [[0, 0.94025615, 0.95162452],
                                               [0.94025615, 0, 0.86146098],
                                               [0.95162452, 0.86146098, 0]], rtol=1e-7)
    # eval leaves the state alone, so a second eval gives the same.
    np.testing.assert_allclose(metric.eval(), metric.eval())
    unit = data / np.sqrt((data ** 2).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(CosineSimilarity(zero_diagonal=False)(data), unit @ unit.T)
    dots = (data @ data.T).astype(np.float64)
    np.testing.assert_allclose(CosineSimilarity("dot", "sum", False)(data), dots.sum(axis=1))
    np.fill_diagonal(dots, 0)
    np.testing.assert_allclose(CosineSimilarity("dot", "mean")(data.tolist()), dots.mean(axis=1))


def test_cosine_similarity_errors():
    with pytest.raises(ValueError, match="'CosineSimilarity', 'similarity' must be one of"):
        CosineSimilarity(similarity="euclidean")
    with pytest.raises(TypeError, match="'CosineSimilarity', 'zero_diagonal' must be a bool"):
        CosineSimilarity(zero_diagonal=0)
    with pytest.raises(ValueError, match="CosineSimilarity.update'.*matrix"):
        CosineSimilarity()(np.ones(3))
    with pytest.raises(RuntimeError, match="CosineSimilarity.eval'"):
        CosineSimilarity().eval()


def test_dice_documented_example_and_batches():
    x = T(np.array([[0.2, 0.5], [0.3, 0.1], [0.9, 0.6]]))
    y = T(np.array([[0, 1], [1, 0], [0, 1]]))
    assert Dice(smooth=1e-5)(x, y) == pytest.approx(0.20467791371802546)
    rng = np.random.default_rng(3)
    batches = [(rng.random((n, 4, 4)), rng.integers(0, 2, (n, 4, 4))) for n in (2, 5)]
    metric = Dice()
    for y_pred, y in batches:
        metric.update(y_pred, y)
    # One coefficient per batch, their sum over the number of samples (MindSpore's definition).
    coefficients = [2 * np.sum(p * t) / (np.sum(p * p) + np.sum(t * t) + 1e-5) for p, t in batches]
    assert metric.eval() == pytest.approx(sum(coefficients) / 7)


def test_dice_errors():
    with pytest.raises(ValueError, match="'Dice', 'smooth' must be greater than 0"):
        Dice(smooth=0)
    with pytest.raises(ValueError, match="Dice.update'.*same shape"):
        Dice()(np.ones((2, 3)), np.ones((3, 2)))
    with pytest.raises(RuntimeError, match="'Dice' can not be calculated"):
        Dice().eval()


# Surface distances

DOC_X = np.array([[3, 0, 1], [1, 3, 0], [1, 0, 2]])
DOC_Y = np.array([[0, 2, 1], [1, 2, 1], [0, 0, 1]])


def test_surface_distances_documented_examples():
    assert HausdorffDistance()(T(DOC_X), T(DOC_Y), 0) == pytest.approx(1.4142135623730951)
    assert MeanSurfaceDistance(symmetric=False)(T(DOC_X), T(DOC_Y), 0) == \
        pytest.approx(0.8047378541243649)
    assert RootMeanSquareDistance(symmetric=False)(T(DOC_X), T(DOC_Y), 0) == \
        pytest.approx(1.0000000000000002)


def scipy_surface_distances(from_mask, to_mask, metric):
    ndimage = pytest.importorskip("scipy.ndimage")
    from_edges = ndimage.binary_erosion(from_mask) ^ from_mask
    to_edges = ndimage.binary_erosion(to_mask) ^ to_mask
    if metric == "euclidean":
        field = ndimage.distance_transform_edt(~to_edges)
    else:
        field = ndimage.distance_transform_cdt(~to_edges, metric=metric)
    return field[from_edges].astype(np.float64)


@pytest.mark.parametrize("metric_name", ["euclidean", "chessboard", "taxicab"])
def test_surface_distances_match_scipy(metric_name):
    rng = np.random.default_rng(4)
    for shape in ((12, 15), (6, 7, 8)):
        y_pred = rng.integers(0, 3, shape)
        y = rng.integers(0, 3, shape)
        forward = scipy_surface_distances(y_pred == 1, y == 1, metric_name)
        backward = scipy_surface_distances(y == 1, y_pred == 1, metric_name)
        assert MeanSurfaceDistance(False, metric_name)(y_pred, y, 1) == \
            pytest.approx(forward.mean())
        assert MeanSurfaceDistance(True, metric_name)(y_pred, y, 1) == \
            pytest.approx((forward.mean() + backward.mean()) / 2)
        assert RootMeanSquareDistance(False, metric_name)(y_pred, y, 1) == \
            pytest.approx((forward ** 2).mean())
        assert RootMeanSquareDistance(True, metric_name)(y_pred, y, 1) == \
            pytest.approx(np.sqrt(((forward ** 2).mean() + (backward ** 2).mean()) / 2))
        hausdorff = HausdorffDistance(metric_name, crop=False)
        assert hausdorff(y_pred, y, 1) == pytest.approx(max(forward.max(), backward.max()))
        assert HausdorffDistance(metric_name, directed=True, crop=False)(y_pred, y, 1) == \
            pytest.approx(forward.max())
        assert HausdorffDistance(metric_name, percentile=90.0, crop=False)(y_pred, y, 1) == \
            pytest.approx(max(np.percentile(forward, 90), np.percentile(backward, 90)))


def test_hausdorff_crop_and_one_sided_masks():
    # Two squares 4 apart along the rows: the surfaces are 4 apart at most.
    y_pred, y = np.zeros((20, 20)), np.zeros((20, 20))
    y_pred[2:5, 3:6] = 1
    y[6:9, 3:6] = 1
    for crop in (True, False):
        assert HausdorffDistance(crop=crop)(y_pred, y, 1) == pytest.approx(4.0)
    assert HausdorffDistance("taxicab", crop=True)(y_pred, y, 1) == pytest.approx(4.0)
    # The label only in y: y_pred has no surface, so the distances are inf.
    assert HausdorffDistance()(np.zeros((5, 5)), np.eye(5), 1) == np.inf
    assert MeanSurfaceDistance()(np.zeros((5, 5)), np.eye(5), 1) == np.inf
    assert RootMeanSquareDistance(symmetric=True)(np.eye(5), np.zeros((5, 5)), 1) == np.inf


def test_surface_distance_errors():
    for metric_class in (HausdorffDistance, MeanSurfaceDistance, RootMeanSquareDistance):
        name = metric_class.__name__
        with pytest.raises(ValueError, match=f"'{name}', 'distance_metric' must be one of"):
            metric_class(distance_metric="cosine")
        with pytest.raises(ValueError, match=f"{name}.update', it needs 3 inputs"):
            metric_class()(DOC_X, DOC_Y)
        with pytest.raises(TypeError, match=f"{name}.update', the label index.*int or a float"):
            metric_class()(DOC_X, DOC_Y, "0")
        with pytest.raises(ValueError, match=f"{name}.update', the label index.*7 is in "
                                             f"neither"):
            metric_class()(DOC_X, DOC_Y, 7)
        with pytest.raises(ValueError, match=f"{name}.update'.*same shape"):
            metric_class()(DOC_X, DOC_Y[:2], 0)
        with pytest.raises(RuntimeError, match=f"{name}.eval', call 'update' before"):
            metric_class().eval()
    with pytest.raises(ValueError, match="'HausdorffDistance', 'percentile' must be in"):
        HausdorffDistance(percentile=101.0)
    with pytest.raises(TypeError, match="'MeanSurfaceDistance', 'symmetric' must be a bool"):
        MeanSurfaceDistance(symmetric="yes")


# OcclusionSensitivity

class LinearNet(nn.Cell):
    def __init__(self, weight, bias):
        super().__init__()
        self.dense = nn.Dense(weight.shape[1], weight.shape[0], weight_init=T(weight),
                              bias_init=T(bias))

    def construct(self, x):
        return self.dense(x.reshape(x.shape[0], -1))


def test_occlusion_sensitivity_documented_example():
    weight = np.array([[0.1, 0.8, 0.1, 0.1], [1, 1, 1, 1]], np.float32)
    model = LinearNet(weight, np.array([0.3, 0.6], np.float32))
    metric = OcclusionSensitivity()
    metric.update(model, np.array([[0.1, 0.2, 0.3, 0.4]], np.float32), np.array(1, np.int32))
    np.testing.assert_allclose(metric.eval(), [0.3, 0.6, 1.0, 0.9], rtol=1e-5)


def test_occlusion_sensitivity_of_an_image_in_a_box_matches_numpy():
    rng = np.random.default_rng(5)
    image = rng.random((1, 5, 6)).astype(np.float32)
    weight = rng.standard_normal((3, 30)).astype(np.float32)
    bias = rng.standard_normal(3).astype(np.float32)
    model = LinearNet(weight, bias)

    def score(picture):
        return float(weight[2] @ picture.reshape(-1) + bias[2])

    metric = OcclusionSensitivity(pad_val=-1.0, margin=[1, 2], n_batch=4, b_box=[1, 3, 2, -1])
    metric.update(model, T(image), 2)
    expected = np.zeros((3, 4))
    for row in range(1, 4):
        for col in range(2, 6):
            covered = image[0].copy()
            covered[max(0, row - 1):row + 1, max(0, col - 2):col + 2] = -1.0
            expected[row - 1, col - 2] = score(image[0]) - score(covered)
    np.testing.assert_allclose(metric.eval(), expected, rtol=1e-4, atol=1e-5)


def test_occlusion_sensitivity_errors():
    model = LinearNet(np.ones((2, 4), np.float32), np.zeros(2, np.float32))
    image = np.ones((1, 4), np.float32)
    with pytest.raises(TypeError, match="OcclusionSensitivity.update', the model.*must be a "
                                        "Cell"):
        OcclusionSensitivity()(lambda x: x, image, 1)
    with pytest.raises(RuntimeError, match="OcclusionSensitivity.update', the image.*\\[1, "
                                           "\\.\\.\\.\\]"):
        OcclusionSensitivity()(model, np.ones((2, 4), np.float32), 1)
    with pytest.raises(RuntimeError, match="one label per image"):
        OcclusionSensitivity()(model, image, np.array([0, 1]))
    with pytest.raises(ValueError, match="label 5 is not a class"):
        OcclusionSensitivity()(model, image, 5)
    with pytest.raises(ValueError, match="'b_box' needs a minimum and a maximum"):
        OcclusionSensitivity(b_box=[0, 1, 0, 1])(model, image, 1)
    with pytest.raises(ValueError, match="'b_box' \\[0, 4\\] must lie inside"):
        OcclusionSensitivity(b_box=[0, 4])(model, image, 1)
    with pytest.raises(ValueError, match="'n_batch' must be at least 1"):
        OcclusionSensitivity(n_batch=0)
    with pytest.raises(RuntimeError, match="OcclusionSensitivity.eval'"):
        OcclusionSensitivity().eval()


# Perplexity

def test_perplexity_matches_numpy_and_ignores_a_label():
    preds = np.array([[0.2, 0.5], [0.3, 0.1], [0.9, 0.6]])
    labels = np.array([1, 0, 1])
    assert Perplexity()(T(preds), T(labels)) == pytest.approx(2.231443166940565)
    rng = np.random.default_rng(6)
    probs = rng.dirichlet(np.ones(5), size=(4, 3))  # [batch, time, classes]
    words = rng.integers(0, 5, (4, 3))
    words[0, 0] = 4
    metric = Perplexity(ignore_label=4)
    metric.update(probs[:2], words[:2])
    metric.update(probs[2:], words[2:])
    kept = words != 4
    picked = np.take_along_axis(probs, words[..., None], axis=-1)[..., 0][kept]
    assert metric.eval() == pytest.approx(math.exp(-np.log(picked).mean()))
    assert isinstance(metric.eval(), float)


def test_perplexity_errors():
    with pytest.raises(TypeError, match="'Perplexity', 'ignore_label' must be an int"):
        Perplexity(ignore_label=1.5)
    with pytest.raises(RuntimeError, match="Perplexity.update', the labels must have one entry"):
        Perplexity()(np.ones((3, 2)), np.ones(4))
    with pytest.raises(ValueError, match="Perplexity.update', the labels must be class indices"):
        Perplexity()(np.ones((2, 2)), np.array([0, 3]))
    with pytest.raises(RuntimeError, match="'Perplexity' can not be calculated"):
        Perplexity(ignore_label=0)(np.ones((2, 2)), np.array([0, 0]))


# ROC and auc

def test_roc_documented_examples():
    fpr, tpr, thresholds = ROC(pos_label=2)(T(np.array([3, 1, 4, 2])), T(np.array([0, 1, 2, 3])))
    np.testing.assert_allclose(fpr, [0, 0, 1 / 3, 2 / 3, 1])
    np.testing.assert_allclose(tpr, [0, 1, 1, 1, 1])
    np.testing.assert_array_equal(thresholds, [5, 4, 3, 2, 1])
    scores = np.array([[0.28, 0.55, 0.15, 0.05], [0.10, 0.20, 0.05, 0.05],
                       [0.20, 0.05, 0.15, 0.05], [0.05, 0.05, 0.05, 0.75]])
    fpr, tpr, thresholds = ROC(class_num=4)(T(scores), T(np.array([0, 1, 2, 3])))
    assert isinstance(fpr, list) and len(fpr) == 4
    np.testing.assert_allclose(fpr[1], [0, 1 / 3, 1 / 3, 1])
    np.testing.assert_allclose(tpr[1], [0, 0, 1, 1])
    np.testing.assert_allclose(thresholds[0], [1.28, 0.28, 0.2, 0.1, 0.05])
    np.testing.assert_allclose(thresholds[3], [1.75, 0.75, 0.05])
    fpr, tpr, _ = ROC(pos_label=2)(DOC_X, DOC_Y)
    assert auc(fpr, tpr) == pytest.approx(0.5357142857142857)


def numpy_roc(scores, positive):
    """The ROC points at each distinct threshold, from the highest down."""
    fpr, tpr = [0.0], [0.0]
    for threshold in sorted(set(scores), reverse=True):
        chosen = scores >= threshold
        tpr.append(np.sum(chosen & positive) / positive.sum())
        fpr.append(np.sum(chosen & ~positive) / (~positive).sum())
    return np.array(fpr), np.array(tpr)


def rank_auc(scores, positive):
    """P(a positive outscores a negative), ties counting half: the ROC curve's area."""
    gaps = scores[positive][:, None] - scores[~positive][None, :]
    return np.mean((gaps > 0) + 0.5 * (gaps == 0))


def test_roc_and_auc_match_numpy_for_binary_and_multiclass():
    rng = np.random.default_rng(7)
    scores = np.round(rng.random(40), 1)  # rounded, so that there are ties
    labels = rng.integers(0, 2, 40)
    fpr, tpr, _ = ROC()(scores, labels)
    expected_fpr, expected_tpr = numpy_roc(scores, labels == 1)
    np.testing.assert_allclose(fpr, expected_fpr)
    np.testing.assert_allclose(tpr, expected_tpr)
    assert auc(fpr, tpr) == pytest.approx(rank_auc(scores, labels == 1))
    # Unsigned scores and bool labels give the same curve as their float and int forms.
    unsigned_fpr, unsigned_tpr, _ = ROC()((scores * 10).astype(np.uint8), labels == 1)
    np.testing.assert_allclose(unsigned_fpr, expected_fpr)
    np.testing.assert_allclose(unsigned_tpr, expected_tpr)
    assert isinstance(auc(fpr, tpr), np.float64)
    # Each update replaces the previous one.
    metric = ROC()
    metric.update(np.array([0.1, 0.9]), np.array([1, 0]))
    metric.update(scores, labels)
    np.testing.assert_allclose(metric.eval()[0], expected_fpr)
    # Multiclass with a spatial axis: class c against the rest.
    class_scores = rng.random((10, 3, 4))
    classes = rng.integers(0, 3, (10, 4))
    fprs, tprs, _ = ROC(class_num=3)(class_scores, classes)
    areas = auc(fprs, tprs)
    for c in range(3):
        flat = class_scores[:, c].reshape(-1)
        assert areas[c] == pytest.approx(rank_auc(flat, classes.reshape(-1) == c))


def test_auc_orders_and_directions():
    x, y = np.array([0.0, 0.5, 1.0]), np.array([0.0, 1.0, 1.0])
    assert auc(x, y) == pytest.approx(0.75)
    assert auc(x[::-1], y[::-1]) == pytest.approx(0.75)
    assert auc(np.array([1.0, 0.0, 0.5]), np.array([1.0, 0.0, 1.0]), reorder=True) == \
        pytest.approx(0.75)
    assert auc(x.reshape(3, 1), y) == pytest.approx(0.75)


def test_roc_and_auc_errors():
    with pytest.raises(ValueError, match="ROC.eval', the true values hold no negative samples"):
        ROC()(np.array([0.1, 0.2]), np.array([1, 1]))
    with pytest.raises(ValueError, match="ROC.eval', the true values hold no positive samples"):
        ROC()(np.array([0.1, 0.2]), np.array([0, 0]))
    with pytest.raises(ValueError, match="'class_num' must equal the number of classes"):
        ROC()(np.ones((3, 2)), np.array([0, 1, 0]))
    with pytest.raises(ValueError, match="'pos_label' must be None"):
        ROC(class_num=2, pos_label=1)(np.ones((3, 2)), np.array([0, 1, 0]))
    with pytest.raises(ValueError, match="'class_num' must be None or 1"):
        ROC(class_num=3)(np.ones(3), np.array([0, 1, 0]))
    with pytest.raises(TypeError, match="'ROC', 'pos_label' must be an int"):
        ROC(pos_label=1.0)
    with pytest.raises(RuntimeError, match="ROC.eval'"):
        ROC().eval()
    with pytest.raises(TypeError, match="'auc', 'x' and 'y' must be numpy.ndarrays"):
        auc([0, 1], [0, 1])
    with pytest.raises(ValueError, match="'auc', with reorder=False 'x' must be increasing or "
                                         "decreasing"):
        auc(np.array([0.0, 1.0, 0.5]), np.array([0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="'auc', a curve needs at least 2 points"):
        auc(np.array([0.0]), np.array([1.0]))
    with pytest.raises(ValueError, match="'auc', 'x' and 'y' must have the same number"):
        auc(np.array([0.0, 1.0]), np.array([0.0, 1.0, 1.0]))


# BleuScore

def numpy_bleu(candidates, references_list, max_n, smooth=False):
    """Corpus BLEU written out per n-gram order."""
    matched, total = np.zeros(max_n), np.zeros(max_n)
    candidate_len = reference_len = 0
    for candidate, references in zip(candidates, references_list):
        candidate_len += len(candidate)
        reference_len += min((len(r) for r in references), key=lambda n: abs(n - len(candidate)))
        for n in range(1, max_n + 1):
            grams = Counter(tuple(candidate[i:i + n]) for i in range(len(candidate) - n + 1))
            best = Counter()
            for reference in references:
                counts = Counter(tuple(reference[i:i + n]) for i in range(len(reference) - n + 1))
                best = Counter({g: max(best[g], counts[g]) for g in set(best) | set(counts)})
            matched[n - 1] += sum(min(c, best[g]) for g, c in grams.items())
            total[n - 1] += sum(grams.values())
    if matched.min() == 0:
        return 0.0
    precisions = (matched + 1) / (total + 1) if smooth else matched / total
    penalty = 1.0 if candidate_len > reference_len else math.exp(1 - reference_len /
                                                                 candidate_len)
    return penalty * math.exp(np.mean(np.log(precisions)))


def test_bleu_score_documented_example_and_numpy():
    candidates = [["i", "have", "a", "pen", "on", "my", "desk"]]
    references = [[["i", "have", "a", "pen", "in", "my", "desk"],
                   ["there", "is", "a", "pen", "on", "the", "desk"]]]
    metric = BleuScore()
    metric.update(candidates, references)
    assert metric.eval() == pytest.approx(0.5946035575013605)
    more_candidates = [["the", "cat", "sat", "on", "the", "mat"], ["a", "dog", "ran"]]
    more_references = [[["the", "cat", "is", "on", "the", "mat"], ["a", "cat", "sat"]],
                       [["a", "dog", "ran", "away", "fast"]]]
    metric.update(more_candidates, more_references)
    assert metric.eval() == pytest.approx(
        numpy_bleu(candidates + more_candidates, references + more_references, 4))
    for n_gram, smooth in ((1, False), (2, True), (3, False)):
        assert BleuScore(n_gram, smooth)(more_candidates, more_references) == pytest.approx(
            numpy_bleu(more_candidates, more_references, n_gram, smooth))
    # No matching 4-gram: the score is 0.
    assert BleuScore()([["a", "b", "c", "d"]], [[["a", "b", "c", "x"]]]) == 0.0


def test_bleu_score_errors():
    with pytest.raises(ValueError, match="'BleuScore', 'n_gram' must be in \\[1, 4\\]"):
        BleuScore(n_gram=5)
    with pytest.raises(TypeError, match="'BleuScore', 'smooth' must be a bool"):
        BleuScore(smooth=1)
    with pytest.raises(ValueError, match="BleuScore.update'.*same length"):
        BleuScore()([["a"]], [])
    with pytest.raises(ValueError, match="BleuScore.update'.*list of references"):
        BleuScore()([["a"]], [["a"]])
    with pytest.raises(RuntimeError, match="BleuScore.eval'"):
        BleuScore().eval()


# Names

def test_metric_names_and_nn_exports():
    assert {"dice", "roc", "auc", "bleu_score", "cosine_similarity", "occlusion_sensitivity",
            "hausdorff_distance", "mean_surface_distance", "root_mean_square_distance",
            "perplexity", "confusion_matrix", "confusion_matrix_metric"} <= set(names())
    assert isinstance(get_metric_fn("confusion_matrix", 3), ConfusionMatrix)
    assert get_metric_fn("bleu_score", n_gram=2).n_gram == 2
    assert get_metric_fn("auc", np.array([0.0, 1.0]), np.array([1.0, 1.0])) == 1.0
    assert nn.Dice is Dice and nn.ROC is ROC and nn.auc is auc
    assert ms.train.RootMeanSquareDistance is RootMeanSquareDistance
