"""ConfusionMatrix and ConfusionMatrixMetric (MindSpore's mindspore.train), computed in NumPy.

ConfusionMatrix counts (true class, predicted class) pairs. ConfusionMatrixMetric counts true and
false positives and negatives of one-hot inputs per sample and channel, and turns them into one
of the rates named by `metric_name` (sensitivity, precision, f1 score, ...)."""
import numpy as np

from pijit.train.metrics._args import (check_bool, check_choice, check_input_count, check_int,
                                       check_real, require_update)
from pijit.train.metrics.metric import Metric, rearrange_inputs

__all__ = ["ConfusionMatrix", "ConfusionMatrixMetric"]

_NORMALIZE_MODES = ("no_norm", "target", "prediction", "all")
_DECREASE_MODES = ("none", "mean", "sum", "mean_batch", "sum_batch", "mean_channel",
                   "sum_channel")


class ConfusionMatrix(Metric):
    """A [num_classes, num_classes] matrix whose entry (i, j) counts the samples of true class i
    predicted as class j, accumulated over updates.

    y_pred is [N, C, ...] scores (the arg-max along axis 1 is the prediction) or [N, ...] class
    indices; float predictions of y's shape are probabilities, class 1 where >= threshold.
    `normalize` divides by each row ('target'), each column ('prediction') or the total ('all');
    an empty row or column gives 0."""

    def __init__(self, num_classes, normalize="no_norm", threshold=0.5):
        super().__init__()
        self.num_classes = check_int("ConfusionMatrix", "num_classes", num_classes, low=1)
        self.normalize = check_choice("ConfusionMatrix", "normalize", normalize,
                                      _NORMALIZE_MODES)
        self.threshold = check_real("ConfusionMatrix", "threshold", threshold)
        self.clear()

    def clear(self):
        self.confusion_matrix = np.zeros((self.num_classes, self.num_classes))
        self._is_update = False

    def _class_indices(self, values, what):
        """`values` as int64 class indices, checked to lie in [0, num_classes)."""
        values = values.astype(np.int64) if values.dtype == bool else values
        if values.size and (np.any(values != np.round(values)) or values.min() < 0
                            or values.max() >= self.num_classes):
            raise ValueError(f"For 'ConfusionMatrix.update', the {what} must hold class indices "
                             f"in [0, {self.num_classes}), got values from {values.min()} to "
                             f"{values.max()}")
        return values.astype(np.int64).reshape(-1)

    @rearrange_inputs
    def update(self, *inputs):
        check_input_count("ConfusionMatrix", inputs, ("predicted value", "true value"))
        y_pred, y = self._convert_data(inputs[0]), self._convert_data(inputs[1])
        if y_pred.ndim == y.ndim + 1:
            y_pred = y_pred.argmax(axis=1)
        elif y_pred.ndim != y.ndim:
            raise ValueError(f"For 'ConfusionMatrix.update', the predicted value must have the "
                             f"true value's number of dimensions or one more, got "
                             f"{y_pred.ndim} and {y.ndim}")
        elif y_pred.dtype.kind == "f":
            y_pred = (y_pred >= self.threshold).astype(np.int64)
        if y_pred.shape != y.shape:
            raise ValueError(f"For 'ConfusionMatrix.update', the predictions {y_pred.shape} and "
                             f"the true values {y.shape} must have the same shape")
        pairs = (self._class_indices(y, "true value") * self.num_classes
                 + self._class_indices(y_pred, "predicted value"))
        counts = np.bincount(pairs, minlength=self.num_classes ** 2)
        self.confusion_matrix += counts.reshape(self.num_classes, self.num_classes)
        self._is_update = True

    def eval(self):
        """The matrix (float64 ndarray), normalized as `normalize` says."""
        require_update("ConfusionMatrix", self._is_update)
        matrix = self.confusion_matrix.astype(np.float64)
        if self.normalize == "no_norm":
            return matrix
        totals = {"target": matrix.sum(axis=1, keepdims=True),
                  "prediction": matrix.sum(axis=0, keepdims=True),
                  "all": matrix.sum()}[self.normalize]
        totals = np.broadcast_to(totals, matrix.shape)
        return np.divide(matrix, totals, out=np.zeros_like(matrix), where=totals != 0)


# Every name ConfusionMatrixMetric takes (lower case, spaces as underscores), and the short name
# of the rate it computes.
_METRIC_ALIASES = {
    "tpr": ("sensitivity", "recall", "hit_rate", "true_positive_rate", "tpr"),
    "tnr": ("specificity", "selectivity", "true_negative_rate", "tnr"),
    "ppv": ("precision", "positive_predictive_value", "ppv"),
    "npv": ("negative_predictive_value", "npv"),
    "fnr": ("miss_rate", "false_negative_rate", "fnr"),
    "fpr": ("fall_out", "false_positive_rate", "fpr"),
    "fdr": ("false_discovery_rate", "fdr"),
    "for": ("false_omission_rate", "for"),
    "pt": ("prevalence_threshold", "pt"),
    "ts": ("threat_score", "critical_success_index", "ts", "csi"),
    "acc": ("accuracy", "acc"),
    "ba": ("balanced_accuracy", "ba"),
    "f1": ("f1_score", "f1"),
    "mcc": ("matthews_correlation_coefficient", "mcc"),
    "fm": ("fowlkes_mallows_index", "fm"),
    "bm": ("informedness", "bookmaker_informedness", "bm"),
    "mk": ("markedness", "deltap", "mk"),
}
_SHORT_METRIC_NAME = {alias: short for short, aliases in _METRIC_ALIASES.items()
                      for alias in aliases}


def _ratio(numerator, denominator):
    """numerator / denominator, NaN where the denominator is 0 (the rate is undefined there)."""
    numerator, denominator = np.broadcast_arrays(np.asarray(numerator, np.float64),
                                                 np.asarray(denominator, np.float64))
    out = np.full(numerator.shape, np.nan)
    return np.divide(numerator, denominator, out=out, where=denominator != 0)


def _rate(short_name, counts):
    """The rate `short_name` of counts [..., 4] = (tp, fp, tn, fn), NaN where undefined."""
    tp, fp, tn, fn = (counts[..., i] for i in range(4))
    positives, negatives = tp + fn, fp + tn
    tpr, tnr = _ratio(tp, positives), _ratio(tn, negatives)
    ppv, npv = _ratio(tp, tp + fp), _ratio(tn, tn + fn)
    with np.errstate(invalid="ignore"):
        rates = {
            "tpr": lambda: tpr, "tnr": lambda: tnr, "ppv": lambda: ppv, "npv": lambda: npv,
            "fnr": lambda: _ratio(fn, positives), "fpr": lambda: _ratio(fp, negatives),
            "fdr": lambda: _ratio(fp, fp + tp), "for": lambda: _ratio(fn, fn + tn),
            "pt": lambda: _ratio(np.sqrt(tpr * (1.0 - tnr)) + tnr - 1.0, tpr + tnr - 1.0),
            "ts": lambda: _ratio(tp, tp + fn + fp),
            "acc": lambda: _ratio(tp + tn, positives + negatives),
            "ba": lambda: (tpr + tnr) / 2.0,
            "f1": lambda: _ratio(2.0 * tp, 2.0 * tp + fn + fp),
            "mcc": lambda: _ratio(tp * tn - fp * fn,
                                  np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))),
            "fm": lambda: np.sqrt(ppv * tpr),
            "bm": lambda: tpr + tnr - 1.0,
            "mk": lambda: ppv + npv - 1.0,
        }
        return rates[short_name]()


def _reduce(chart, decrease):
    """(value, count) of a [B, C] chart of per-sample, per-channel rates, NaN where undefined,
    reduced as `decrease` says; count is how many values (or, for 'mean', samples) went in."""
    valid = ~np.isnan(chart)
    values = np.where(valid, chart, 0.0)
    valid = valid.astype(np.float64)

    def mean(axis, total=values, count=valid):
        summed, counted = total.sum(axis=axis), count.sum(axis=axis)
        return np.divide(summed, counted, out=np.zeros_like(summed), where=counted > 0), counted

    if decrease == "none":
        return values, valid
    if decrease == "sum":
        return values.sum(), valid.sum()
    if decrease == "sum_batch":
        return values.sum(axis=0), valid.sum(axis=0)
    if decrease == "sum_channel":
        return values.sum(axis=1), valid.sum(axis=1)
    if decrease == "mean_batch":
        return mean(0)
    if decrease == "mean_channel":
        return mean(1)
    # 'mean': the mean over channels of each sample, then over the samples that had any.
    per_sample, channel_counts = mean(1)
    samples_with_values = (channel_counts > 0).astype(np.float64)
    return mean(0, per_sample, samples_with_values)[0], samples_with_values.sum()


class ConfusionMatrixMetric(Metric):
    """A rate from the confusion counts of binarized one-hot predictions and labels, both
    [N, C, ...] (C channels or classes).

    With calculation_method False the counts accumulate over all samples and channels and eval
    gives the rate of the totals as a 1-element ndarray. With True each sample and channel gets
    its own rate (NaN ones are left out), `decrease` reduces a batch's rates to one number, and
    eval gives the mean of those numbers weighted by how many rates each had, as a float.
    Classification inputs ([N, C], or [N, C, 1]) always accumulate counts.

    skip_channel follows what MindSpore computes: True uses every channel and False leaves out
    channel 0 (MindSpore's documentation describes the reverse)."""

    def __init__(self, skip_channel=True, metric_name="sensitivity", calculation_method=False,
                 decrease="mean"):
        super().__init__()
        name = "ConfusionMatrixMetric"
        self.skip_channel = check_bool(name, "skip_channel", skip_channel)
        if not isinstance(metric_name, str):
            raise TypeError(f"For '{name}', 'metric_name' must be a str, got "
                            f"{type(metric_name).__name__}")
        short_name = _SHORT_METRIC_NAME.get(metric_name.replace(" ", "_").lower())
        if short_name is None:
            raise NotImplementedError(f"For '{name}', the metric {metric_name!r} is not "
                                      f"implemented; choose one of {sorted(_SHORT_METRIC_NAME)}")
        self.metric_name = metric_name
        self._short_name = short_name
        self.calculation_method = check_bool(name, "calculation_method", calculation_method)
        self.decrease = check_choice(name, "decrease", decrease, _DECREASE_MODES)
        self.clear()

    def clear(self):
        self._weighted_sum = 0.0
        self._rate_count = 0.0
        self._totals = np.zeros(4)
        self._has_totals = False

    def _counts(self, y_pred, y):
        """[B, C, 4] counts (tp, fp, tn, fn) per sample and channel."""
        name = "ConfusionMatrixMetric.update"
        if y_pred.ndim < 2:
            raise ValueError(f"For '{name}', the predicted value must have at least 2 dimensions "
                             f"[N, C, ...], got {y_pred.ndim}")
        for what, values in (("predicted value", y_pred), ("true value", y)):
            if not np.all((values == 0) | (values == 1)):
                raise ValueError(f"For '{name}', the {what} must be binarized (only 0 and 1)")
        if not self.skip_channel:
            y_pred = y_pred[:, 1:] if y_pred.shape[1] > 1 else y_pred
            y = y[:, 1:] if y.ndim > 1 and y.shape[1] > 1 else y
        if y_pred.shape != y.shape:
            raise ValueError(f"For '{name}', the predicted value {y_pred.shape} and the true "
                             f"value {y.shape} must have the same shape")
        y_pred = y_pred.reshape(y_pred.shape[0], y_pred.shape[1], -1).astype(bool)
        y = y.reshape(y_pred.shape).astype(bool)
        true_positives = (y_pred & y).sum(axis=2)
        true_negatives = (~y_pred & ~y).sum(axis=2)
        positives = y.sum(axis=2)
        negatives = y.shape[2] - positives
        return np.stack([true_positives, negatives - true_negatives, true_negatives,
                         positives - true_positives], axis=-1).astype(np.float64)

    @rearrange_inputs
    def update(self, *inputs):
        check_input_count("ConfusionMatrixMetric", inputs, ("predicted value", "true value"))
        y_pred, y = self._convert_data(inputs[0]), self._convert_data(inputs[1])
        counts = self._counts(y_pred, y)
        classification = y_pred.ndim == 2 or (y_pred.ndim == 3 and y_pred.shape[-1] == 1)
        if not self.calculation_method or classification:
            self._totals += counts.sum(axis=(0, 1))
            self._has_totals = True
            return
        value, count = _reduce(_rate(self._short_name, counts), self.decrease)
        if np.size(value) != 1:
            raise ValueError(f"For 'ConfusionMatrixMetric.update', decrease={self.decrease!r} "
                             f"leaves {np.size(value)} values for this batch of shape "
                             f"{y_pred.shape}; eval needs one, so use 'mean' or 'sum'")
        self._weighted_sum += float(value) * float(count)
        self._rate_count += float(count)

    def eval(self):
        """A 1-element float64 ndarray (counts accumulated), or a float (per-sample rates)."""
        name = "ConfusionMatrixMetric"
        per_sample = self._rate_count > 0
        if per_sample and self._has_totals:
            raise RuntimeError(f"For '{name}.eval', the updates mixed classification inputs "
                               f"(whose counts accumulate) with per-sample inputs; clear between "
                               f"them")
        if self.calculation_method and not self._has_totals:
            if not per_sample:
                raise RuntimeError(f"The '{name}' can not be calculated, because the number of "
                                   f"samples is 0; call update before eval")
            return self._weighted_sum / self._rate_count
        require_update(name, self._has_totals)
        return _rate(self._short_name, self._totals.reshape(1, 4))
