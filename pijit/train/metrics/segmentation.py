"""Segmentation metrics (MindSpore's mindspore.train): Dice, and the surface distances
HausdorffDistance, MeanSurfaceDistance and RootMeanSquareDistance between the masks of one label
in a predicted and a true image.

The surface of a mask is the mask minus its erosion by the cross-shaped neighbourhood, with
everything outside the image counted as background (scipy.ndimage.binary_erosion's defaults,
which MindSpore uses). Distances go from each surface point of one mask to the nearest surface
point of the other; they are computed exactly from point pairs, in blocks to bound memory, which
matches scipy's distance transforms for all three metrics."""
import numbers

import numpy as np

from pijit.train.metrics._args import (check_bool, check_choice, check_input_count,
                                       check_real, require_update)
from pijit.train.metrics.metric import Metric, TotalOverCount, rearrange_inputs

__all__ = ["Dice", "HausdorffDistance", "MeanSurfaceDistance", "RootMeanSquareDistance"]

_DISTANCE_METRICS = ("euclidean", "chessboard", "taxicab")
# Point pairs compared at once when looking for nearest surface points.
_PAIRS_PER_BLOCK = 1 << 22


class Dice(TotalOverCount):
    """2 * sum(y_pred * y) / (sum(y_pred^2) + sum(y^2) + smooth) of each update's batch, summed
    over updates and divided by the number of samples (the first axis), as MindSpore does."""

    def __init__(self, smooth=1e-5):
        super().__init__()
        self.smooth = check_real("Dice", "smooth", smooth, positive=True)

    @rearrange_inputs
    def update(self, *inputs):
        check_input_count("Dice", inputs, ("predicted value", "true value"))
        y_pred, y = self._convert_data(inputs[0]), self._convert_data(inputs[1])
        if y_pred.shape != y.shape or y.ndim == 0:
            raise ValueError(f"For 'Dice.update', the predicted value and the true value must "
                             f"have the same shape (N, ...), got {y_pred.shape} and {y.shape}")
        samples = y.shape[0]
        y_pred, y = y_pred.astype(np.float64).ravel(), y.astype(np.float64).ravel()
        intersection = np.dot(y_pred, y)
        union = np.dot(y_pred, y_pred) + np.dot(y, y)
        self._total += 2.0 * float(intersection) / float(union + self.smooth)
        self._count += samples

    def eval(self):
        """The Dice coefficient, a float."""
        return float(super().eval())


def _erode(mask):
    """scipy.ndimage.binary_erosion(mask): a point stays when it and its two neighbours along
    every axis are set, points outside the image being unset."""
    eroded = mask.copy()
    for axis in range(mask.ndim):
        padded = np.pad(mask, [(1, 1) if a == axis else (0, 0) for a in range(mask.ndim)])
        before = np.take(padded, np.arange(0, mask.shape[axis]), axis=axis)
        after = np.take(padded, np.arange(2, mask.shape[axis] + 2), axis=axis)
        eroded &= before & after
    return eroded


def _surface(mask):
    return _erode(mask) ^ mask


def _nearest_distances(from_surface, to_surface, distance_metric):
    """For each set point of `from_surface`, the distance to the nearest set point of
    `to_surface` (inf when that is empty); an empty array when `from_surface` is empty."""
    sources = np.argwhere(from_surface)
    targets = np.argwhere(to_surface)
    if len(sources) == 0:
        return np.array([])
    if len(targets) == 0:
        return np.full(len(sources), np.inf)
    nearest = np.empty(len(sources))
    block = max(1, _PAIRS_PER_BLOCK // len(targets))
    for start in range(0, len(sources), block):
        gaps = np.abs(sources[start:start + block, None, :] - targets[None, :, :])
        if distance_metric == "euclidean":
            distances = np.sqrt((gaps.astype(np.float64) ** 2).sum(axis=-1))
        elif distance_metric == "chessboard":
            distances = gaps.max(axis=-1)
        else:
            distances = gaps.sum(axis=-1)
        nearest[start:start + block] = distances.min(axis=1)
    return nearest


def _union_box_crop(y_pred, y):
    """Both masks cut to the bounding box of their union, then squeezed (axes of length 1
    dropped), as MindSpore's crop does."""
    points = np.argwhere(y_pred | y)
    box = tuple(slice(low, high + 1) for low, high in zip(points.min(axis=0),
                                                          points.max(axis=0)))
    return np.squeeze(y_pred[box]), np.squeeze(y[box])


class _SurfaceDistance(Metric):
    """Update takes (y_pred, y, label_idx): two images of the same shape and the label whose
    masks (image == label_idx) are compared; each update replaces the previous one."""

    def __init__(self, distance_metric):
        super().__init__()
        self.distance_metric = check_choice(type(self).__name__, "distance_metric",
                                            distance_metric, _DISTANCE_METRICS)

    def clear(self):
        self._y_pred_edges = None
        self._y_edges = None
        self._is_update = False

    def _masks(self, inputs):
        name = type(self).__name__
        check_input_count(name, inputs, ("predicted value", "true value", "label index"))
        y_pred, y = self._convert_data(inputs[0]), self._convert_data(inputs[1])
        label_idx = inputs[2]
        if not isinstance(label_idx, numbers.Real):
            raise TypeError(f"For '{name}.update', the label index (input[2]) must be an int or "
                            f"a float, got {type(label_idx).__name__}")
        if y_pred.size == 0 or y_pred.shape != y.shape:
            raise ValueError(f"For '{name}.update', the predicted value and the true value must "
                             f"be non-empty and of the same shape, got {y_pred.shape} and "
                             f"{y.shape}")
        y_pred, y = y_pred == label_idx, y == label_idx
        if not (y_pred.any() or y.any()):
            raise ValueError(f"For '{name}.update', the label index (input[2]) {label_idx} is "
                             f"in neither the predicted value nor the true value")
        return y_pred, y

    @rearrange_inputs
    def update(self, *inputs):
        y_pred, y = self._masks(inputs)
        self._y_pred_edges, self._y_edges = _surface(y_pred), _surface(y)
        self._is_update = True

    def _distances(self, from_edges, to_edges):
        return _nearest_distances(from_edges, to_edges, self.distance_metric)


class HausdorffDistance(_SurfaceDistance):
    """The largest distance from a surface point of one mask to the other's surface (or the
    `percentile` of those distances): max(h(y_pred, y), h(y, y_pred)), or h(y_pred, y) alone
    when `directed`. With `crop`, both masks are first cut to the bounding box of their union.
    A mask without surface makes the distance inf."""

    def __init__(self, distance_metric="euclidean", percentile=None, directed=False, crop=True):
        super().__init__(distance_metric)
        if percentile is not None:
            percentile = check_real("HausdorffDistance", "percentile", percentile)
            if not 0 <= percentile <= 100:
                raise ValueError(f"For 'HausdorffDistance', 'percentile' must be in [0, 100], "
                                 f"got {percentile}")
        self.percentile = percentile
        self.directed = check_bool("HausdorffDistance", "directed", directed)
        self.crop = check_bool("HausdorffDistance", "crop", crop)
        self.clear()

    @rearrange_inputs
    def update(self, *inputs):
        y_pred, y = self._masks(inputs)
        if self.crop:
            y_pred, y = _union_box_crop(y_pred, y)
        self._y_pred_edges, self._y_edges = _surface(y_pred), _surface(y)
        self._is_update = True

    def _directed(self, from_edges, to_edges):
        distances = self._distances(from_edges, to_edges)
        if distances.size == 0:
            return np.float64(np.inf)
        if self.percentile is None:
            return np.float64(distances.max())
        return np.float64(np.percentile(distances, self.percentile))

    def eval(self):
        """The Hausdorff distance, a numpy.float64."""
        require_update("HausdorffDistance", self._is_update)
        distance = self._directed(self._y_pred_edges, self._y_edges)
        if self.directed:
            return distance
        return max(distance, self._directed(self._y_edges, self._y_pred_edges))


class _AveragedSurfaceDistance(_SurfaceDistance):
    """The mean of a power of the surface distances from y_pred to y; with `symmetric`, the
    mean of that and the same from y to y_pred (the mean of the two means, as MindSpore
    computes it). A mask without surface makes the result inf."""

    _power = 1

    def __init__(self, symmetric=False, distance_metric="euclidean"):
        super().__init__(distance_metric)
        self.symmetric = check_bool(type(self).__name__, "symmetric", symmetric)
        self.clear()

    def _mean_power(self, from_edges, to_edges):
        distances = self._distances(from_edges, to_edges)
        return None if distances.size == 0 else np.float64((distances ** self._power).mean())

    def _finish(self, one_way, both_ways):
        raise NotImplementedError

    def eval(self):
        """The distance, a numpy.float64."""
        require_update(type(self).__name__, self._is_update)
        forward = self._mean_power(self._y_pred_edges, self._y_edges)
        if forward is None:
            return np.float64(np.inf)
        if not self.symmetric:
            return self._finish(forward, False)
        backward = self._mean_power(self._y_edges, self._y_pred_edges)
        if backward is None:
            return np.float64(np.inf)
        return self._finish(np.mean((forward, backward)), True)


class MeanSurfaceDistance(_AveragedSurfaceDistance):
    """The average surface distance from y_pred to y (symmetric: averaged both ways)."""

    def _finish(self, mean_distance, symmetric):
        return np.float64(mean_distance)


class RootMeanSquareDistance(_AveragedSurfaceDistance):
    """The root mean square surface distance. As in MindSpore, the one-way result
    (symmetric=False) is the mean of the squared distances, without the root; the symmetric one
    is the root of the mean of both ways' mean squares."""

    _power = 2

    def _finish(self, mean_square, symmetric):
        return np.float64(np.sqrt(mean_square) if symmetric else mean_square)
