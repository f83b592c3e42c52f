"""ROC and auc (MindSpore's mindspore.train): the receiver operating characteristic of scores
against labels, and the area under a curve by the trapezoidal rule."""
import numpy as np

from pijit.train.metrics._args import check_bool, check_input_count, check_int, require_update
from pijit.train.metrics.metric import Metric, rearrange_inputs

__all__ = ["ROC", "auc"]


def _binary_roc(scores, labels, pos_label):
    """(fpr, tpr, thresholds) of 1-D scores, labels == pos_label being positive. One point per
    distinct score, from the highest down, after a leading (0, 0) point whose threshold is the
    highest score plus 1."""
    scores = scores.astype(np.int64) if scores.dtype == bool else scores
    order = np.argsort(scores, kind="stable")[::-1]  # descending; unsigned scores can't negate
    scores, positive = scores[order], (labels[order] == pos_label).astype(np.int64)
    # The last index of each run of equal scores: every sample up to it scores >= its score.
    run_ends = np.append(np.flatnonzero(np.diff(scores)), scores.size - 1)
    true_positives = np.concatenate(([0], np.cumsum(positive)[run_ends]))
    false_positives = np.concatenate(([0], run_ends + 1 - true_positives[1:]))
    thresholds = np.concatenate((scores[:1] + 1, scores[run_ends]))
    if false_positives[-1] <= 0:
        raise ValueError("For 'ROC.eval', the true values hold no negative samples, so the "
                         "false positive rate is meaningless")
    if true_positives[-1] <= 0:
        raise ValueError("For 'ROC.eval', the true values hold no positive samples, so the true "
                         "positive rate is meaningless")
    return (false_positives / false_positives[-1], true_positives / true_positives[-1],
            thresholds)


class ROC(Metric):
    """The ROC curve of the last update's inputs (each update replaces the previous one, as in
    MindSpore).

    Binary: y_pred and y of the same shape; y == pos_label (default 1) marks the positives, and
    eval gives (fpr, tpr, thresholds) as ndarrays. Multiclass: y_pred [N, C, ...] scores and y
    [N, ...] class indices, class_num == C and pos_label None; eval gives three lists with one
    ndarray per class, each class against the rest."""

    def __init__(self, class_num=None, pos_label=None):
        super().__init__()
        self.class_num = None if class_num is None else check_int("ROC", "class_num", class_num,
                                                                  low=1)
        self.pos_label = None if pos_label is None else check_int("ROC", "pos_label", pos_label)
        self.clear()

    def clear(self):
        self.y_pred = None
        self.y = None
        self._per_class = False
        self._positive = None
        self._is_update = False

    @rearrange_inputs
    def update(self, *inputs):
        check_input_count("ROC", inputs, ("predicted value", "true value"))
        y_pred, y = self._convert_data(inputs[0]), self._convert_data(inputs[1])
        if y_pred.ndim == y.ndim:
            if self.class_num not in (None, 1):
                raise ValueError(f"For 'ROC.update', predictions of the true values' shape are "
                                 f"binary, so 'class_num' must be None or 1, got "
                                 f"{self.class_num}")
            if y_pred.shape != y.shape:
                raise ValueError(f"For 'ROC.update', binary predictions {y_pred.shape} and true "
                                 f"values {y.shape} must have the same shape")
            self.y_pred, self.y = y_pred.ravel(), y.ravel()
            self._per_class = False
            self._positive = 1 if self.pos_label is None else self.pos_label
        elif y_pred.ndim == y.ndim + 1:
            self._check_multiclass(y_pred, y)
            self.y_pred = np.moveaxis(y_pred, 1, -1).reshape(-1, y_pred.shape[1])
            self.y = y.ravel()
            self._per_class = True
        else:
            raise ValueError(f"For 'ROC.update', the predicted value must have the true value's "
                             f"number of dimensions or one more, got {y_pred.ndim} and {y.ndim}")
        self._is_update = True

    def _check_multiclass(self, y_pred, y):
        if self.pos_label is not None:
            raise ValueError(f"For 'ROC.update', multiclass predictions (one more dimension than "
                             f"the true values) take every class in turn as positive, so "
                             f"'pos_label' must be None, got {self.pos_label}")
        if self.class_num != y_pred.shape[1]:
            raise ValueError(f"For 'ROC.update', 'class_num' must equal the number of classes of "
                             f"the predicted value, got 'class_num' {self.class_num} and "
                             f"{y_pred.shape[1]} classes")
        if y.shape != (y_pred.shape[0],) + y_pred.shape[2:]:
            raise ValueError(f"For 'ROC.update', the true values {y.shape} must have the shape "
                             f"of the predictions {y_pred.shape} without axis 1")

    def eval(self):
        """(fpr, tpr, thresholds): ndarrays (binary) or lists of ndarrays, one per class."""
        require_update("ROC", self._is_update)
        if not self._per_class:
            return _binary_roc(self.y_pred, self.y, self._positive)
        curves = [_binary_roc(self.y_pred[:, c], self.y, c) for c in range(self.y_pred.shape[1])]
        fpr, tpr, thresholds = (list(parts) for parts in zip(*curves))
        return fpr, tpr, thresholds


def _curve_points(values, name):
    """A 1-D array (or an [N, 1] column, raveled) of curve coordinates."""
    values = np.asarray(values)
    if values.ndim == 1 or (values.ndim == 2 and values.shape[1] == 1):
        return values.ravel()
    raise ValueError(f"For 'auc', '{name}' must be a 1-D array or an [N, 1] column, got shape "
                     f"{values.shape}")


def _area(x, y, reorder):
    x, y = _curve_points(x, "x"), _curve_points(y, "y")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"For 'auc', 'x' and 'y' must have the same number of points, got "
                         f"{x.shape[0]} and {y.shape[0]}")
    if x.shape[0] < 2:
        raise ValueError(f"For 'auc', a curve needs at least 2 points, got {x.shape[0]}")
    direction = 1.0
    if reorder:
        order = np.lexsort((y, x))
        x, y = x[order], y[order]
    else:
        steps = np.diff(x)
        if np.any(steps < 0):
            if not np.all(steps <= 0):
                raise ValueError(f"For 'auc', with reorder=False 'x' must be increasing or "
                                 f"decreasing, got {x}")
            direction = -1.0
    widths = np.diff(x.astype(np.float64))
    heights = (y[1:].astype(np.float64) + y[:-1]) / 2.0
    return np.float64(direction * np.sum(widths * heights))


def auc(x, y, reorder=False):
    """The area under the curve through the points (x, y), by the trapezoidal rule.

    x and y are ndarrays (e.g. ROC's fpr and tpr); x must rise or fall monotonically unless
    `reorder` sorts the points by x. Multiclass ROC output (lists with one ndarray per class)
    gives a list with one area per class."""
    check_bool("auc", "reorder", reorder)
    if isinstance(x, list) and isinstance(y, list) and x and \
            all(isinstance(part, np.ndarray) for part in x + y):
        if len(x) != len(y):
            raise ValueError(f"For 'auc', 'x' and 'y' must hold as many curves, got {len(x)} "
                             f"and {len(y)}")
        return [_area(xc, yc, reorder) for xc, yc in zip(x, y)]
    if not isinstance(x, np.ndarray) or not isinstance(y, np.ndarray):
        raise TypeError(f"For 'auc', 'x' and 'y' must be numpy.ndarrays (or lists of them, one "
                        f"per class), got {type(x).__name__} and {type(y).__name__}")
    return _area(x, y, reorder)
