"""Classification metrics: Accuracy, TopKCategoricalAccuracy (Top1, Top5), Precision, Recall,
Fbeta and F1, as MindSpore computes them.

Precision, Recall and Fbeta give one value per class (a NumPy array); eval(average=True) gives
their mean. Counts accumulate over every update since clear, so a metric over a dataset is the
metric of all its samples, not a mean over batches."""
import sys

import numpy as np

from pijit.train.metrics.metric import (EvaluationBase, Metric, TotalOverCount, one_hot_rows,
                                        rearrange_inputs)

__all__ = ["Accuracy", "TopKCategoricalAccuracy", "Top1CategoricalAccuracy",
           "Top5CategoricalAccuracy", "Precision", "Recall", "Fbeta", "F1"]

# Added to denominators, so that a class never predicted (or never present) scores 0, not NaN.
_EPS = sys.float_info.min


def _check_average(metric, average):
    if not isinstance(average, bool):
        raise TypeError(f"For '{metric}.eval', 'average' must be a bool, got "
                        f"{type(average).__name__}")


class Accuracy(EvaluationBase, TotalOverCount):
    """The fraction of samples predicted right: for 'classification' the arg-max of y_pred
    equals the label; for 'multilabel' every label of the sample matches. The total is the
    number of samples predicted right, the count that of all samples."""

    def __init__(self, eval_type="classification"):
        super().__init__(eval_type)  # TotalOverCount.__init__ clears, after Metric.__init__

    def clear(self):
        super().clear()
        self._class_num = 0

    @rearrange_inputs
    def update(self, *inputs):
        y_pred, y = self._prepared(inputs)
        if self._type == "classification":
            result = (y_pred.argmax(axis=1) == y).reshape(-1)
        else:
            # One row per (sample, remaining positions), with the classes along the last axis.
            rows = lambda a: np.moveaxis(a, 1, -1).reshape(-1, self._class_num)
            result = np.all(rows(y_pred) == rows(y), axis=1)
        self._total += int(result.sum())
        self._count += result.shape[0]


class TopKCategoricalAccuracy(TotalOverCount):
    """The fraction of samples whose label is among the k classes with the highest scores (ties
    broken towards the lower class index)."""

    def __init__(self, k):
        super().__init__()
        if isinstance(k, bool) or not isinstance(k, int):
            raise TypeError(f"For 'TopKCategoricalAccuracy', 'k' must be an int, got "
                            f"{type(k).__name__}")
        if k < 1:
            raise ValueError(f"For 'TopKCategoricalAccuracy', 'k' must be at least 1, got {k}")
        self.k = k

    @rearrange_inputs
    def update(self, *inputs):
        y_pred, y = self._scores_and_labels(inputs)
        top = np.argsort(-y_pred, axis=1, kind="stable")[:, :self.k]
        self._total += int((top == y.reshape(-1, 1)).any(axis=1).sum())
        self._count += top.shape[0]


class Top1CategoricalAccuracy(TopKCategoricalAccuracy):
    def __init__(self):
        super().__init__(1)


class Top5CategoricalAccuracy(TopKCategoricalAccuracy):
    def __init__(self):
        super().__init__(5)


class _PerClassRate(EvaluationBase):
    """Precision and Recall: true positives / (a count of positives), per class. For
    'multilabel', as in MindSpore, each update adds one rate per sample (over its labels) and
    average=True gives the mean of those rates."""

    def __init__(self, eval_type="classification"):
        super().__init__(eval_type)
        self.clear()

    def clear(self):
        self._class_num = 0
        if self._type == "multilabel":
            self._true_positives = np.empty(0)
            self._denominators = np.empty(0)
            self._rate_sum = 0.0
            self._rate_count = 0
        else:
            self._true_positives = 0
            self._denominators = 0

    def _denominator(self, y_pred, y):
        raise NotImplementedError

    @rearrange_inputs
    def update(self, *inputs):
        y_pred, y = self._prepared(inputs)
        if self._type == "classification":
            y = one_hot_rows(y, self._class_num, type(self).__name__)
            y_pred = np.eye(self._class_num)[y_pred.argmax(axis=1).reshape(-1)]
        else:
            y_pred = np.swapaxes(y_pred, 0, 1).reshape(self._class_num, -1)
            y = np.swapaxes(y, 0, 1).reshape(self._class_num, -1)
        true_positives = (y * y_pred).sum(axis=0)
        denominators = self._denominator(y_pred, y)
        if self._type == "multilabel":
            self._rate_sum += float(np.sum(true_positives / (denominators + _EPS)))
            self._rate_count += len(denominators)
            self._true_positives = np.concatenate((self._true_positives, true_positives))
            self._denominators = np.concatenate((self._denominators, denominators))
        else:
            self._true_positives = self._true_positives + true_positives
            self._denominators = self._denominators + denominators

    def eval(self, average=False):
        self._check_not_empty(self._class_num == 0)
        _check_average(type(self).__name__, average)
        result = self._true_positives / (self._denominators + _EPS)
        if not average:
            return result
        if self._type == "multilabel":
            return self._rate_sum / (self._rate_count + _EPS)
        return result.mean()


class Precision(_PerClassRate):
    """Per class: true positives / predicted positives."""

    def _denominator(self, y_pred, y):
        return y_pred.sum(axis=0)


class Recall(_PerClassRate):
    """Per class: true positives / actual positives."""

    def _denominator(self, y_pred, y):
        return y.sum(axis=0)


class Fbeta(Metric):
    """Per class: (1 + beta^2) tp / ((1 + beta^2) tp + beta^2 fn + fp), the weighted harmonic
    mean of precision and recall."""

    def __init__(self, beta):
        super().__init__()
        if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not beta > 0:
            raise ValueError(f"For 'Fbeta', 'beta' must be a number greater than 0, got {beta!r}")
        self.beta = beta
        self.clear()

    def clear(self):
        self._true_positives = 0
        self._actual_positives = 0
        self._positives = 0
        self._class_num = 0

    @rearrange_inputs
    def update(self, *inputs):
        y_pred, y = self._scores_and_labels(inputs)
        self._note_class_count(y_pred)
        y = one_hot_rows(y, self._class_num, type(self).__name__)
        y_pred = np.eye(self._class_num)[y_pred.argmax(axis=1).reshape(-1)]
        self._true_positives = self._true_positives + (y * y_pred).sum(axis=0)
        self._positives = self._positives + y_pred.sum(axis=0)
        self._actual_positives = self._actual_positives + y.sum(axis=0)

    def eval(self, average=False):
        _check_average(type(self).__name__, average)
        self._check_not_empty(self._class_num == 0)
        weight = self.beta ** 2
        fbeta = (1.0 + weight) * self._true_positives / \
            (weight * self._actual_positives + self._positives + _EPS)
        return fbeta.mean() if average else fbeta


class F1(Fbeta):
    """Fbeta with beta = 1."""

    def __init__(self):
        super().__init__(1.0)
