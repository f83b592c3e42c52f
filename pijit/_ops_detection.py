"""Object-detection primitives: non-maximum suppression (NMSWithMask, NonMaxSuppressionV3,
NonMaxSuppressionWithOverlaps, CombinedNonMaxSuppression) and ROIAlign.

Suppression keeps a data-dependent number of boxes, so it runs on the host (a captured graph
breaks at the call). ROIAlign's sampling grid depends only on the boxes, which are read on the
host as constants (MindSpore gives them no gradient either); the features are gathered and
averaged by pijit ops, so the result is differentiable with respect to them."""
import numpy as np

from pijit import _C
from pijit._tensor import Tensor, float16, float32
from pijit.mint._checks import check_bool, check_tensor, raise_error
from pijit.mint._shape import gather as _gather
from pijit.ops import Primitive

_ops = _C.ops


def _greedy_keep(order, overlap, threshold, limit):
    """Positions (in score order) kept by greedy suppression: a box is dropped when its overlap
    with an already kept box exceeds `threshold`."""
    kept = []
    for i in order:
        if len(kept) == limit:
            break
        if all(overlap(i, j) <= threshold for j in kept):
            kept.append(i)
    return kept


def _iou_matrix(boxes):
    """Pairwise intersection over union of (N, 4) corner boxes (y1, x1, y2, x2 or x1, y1, x2, y2:
    symmetric in the two axes), corners in either order."""
    lo = np.minimum(boxes[:, :2], boxes[:, 2:])
    hi = np.maximum(boxes[:, :2], boxes[:, 2:])
    area = np.prod(hi - lo, axis=1)
    inter = np.prod(np.clip(np.minimum(hi[:, None], hi[None]) - np.maximum(lo[:, None], lo[None]),
                            0, None), axis=2)
    union = area[:, None] + area[None] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / union, 0.0)


def _host(fname, name, value, ndim=None):
    check_tensor(fname, name, value)
    array = value.asnumpy()
    if ndim is not None and array.ndim != ndim:
        raise_error(ValueError, f"{fname}: {name} must be {ndim}-D, got shape {array.shape}")
    return array


def _scalar(fname, name, value):
    if isinstance(value, Tensor):
        value = value.asnumpy()
        if value.size != 1:
            raise_error(ValueError, f"{fname}: {name} must hold one value, got shape "
                                    f"{value.shape}")
        return value.reshape(()).item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise_error(TypeError, f"{fname}: {name} must be a number or a one-element Tensor, got "
                               f"{type(value).__name__}")
    return value


def _score_order(scores):
    """Indices by decreasing score, the earlier box first among equal scores."""
    return np.argsort(-scores, kind="stable")


class NMSWithMask(Primitive):
    """NMSWithMask(iou_threshold=0.5)(bboxes (N, 5): x1, y1, x2, y2, score): the boxes sorted by
    decreasing score, their Int32 indices in the input, and a Bool mask of those kept by greedy
    suppression (IoU above iou_threshold with a kept, higher-scoring box removes a box)."""

    def __init__(self, iou_threshold=0.5):
        if isinstance(iou_threshold, bool) or not isinstance(iou_threshold, (int, float)):
            raise_error(TypeError, f"NMSWithMask: iou_threshold must be a float, got "
                                   f"{type(iou_threshold).__name__}")
        super().__init__(iou_threshold=float(iou_threshold))

    def __call__(self, bboxes):
        boxes = _host("NMSWithMask", "bboxes", bboxes, 2)
        if boxes.shape[1] != 5:
            raise_error(ValueError, f"NMSWithMask: bboxes must be (N, 5), got {boxes.shape}")
        order = _score_order(boxes[:, 4])
        ranked = boxes[order]
        iou = _iou_matrix(ranked[:, :4].astype(np.float64))
        kept = _greedy_keep(range(len(ranked)), lambda i, j: iou[i, j], self.iou_threshold,
                            len(ranked))
        mask = np.zeros(len(ranked), dtype=np.bool_)
        mask[kept] = True
        return Tensor(ranked), Tensor(order.astype(np.int32)), Tensor(mask)


def _suppress(fname, overlaps, scores, max_output_size, threshold, score_threshold):
    scores = scores.astype(np.float64)
    limit = int(_scalar(fname, "max_output_size", max_output_size))
    if limit < 0:
        raise_error(ValueError, f"{fname}: max_output_size must not be negative, got {limit}")
    threshold = float(_scalar(fname, "threshold", threshold))
    score_threshold = float(_scalar(fname, "score_threshold", score_threshold))
    order = [i for i in _score_order(scores) if scores[i] > score_threshold]
    kept = _greedy_keep(order, lambda i, j: overlaps[i, j], threshold, limit)
    return Tensor(np.array(kept, dtype=np.int32))


class NonMaxSuppressionV3(Primitive):
    """NonMaxSuppressionV3()(boxes (N, 4): y1, x1, y2, x2, scores (N,), max_output_size,
    iou_threshold, score_threshold): Int32 indices of at most max_output_size boxes scoring
    above score_threshold, by decreasing score, none overlapping a kept one by more than
    iou_threshold."""

    def __call__(self, boxes, scores, max_output_size, iou_threshold, score_threshold):
        fname = "NonMaxSuppressionV3"
        b = _host(fname, "boxes", boxes, 2)
        s = _host(fname, "scores", scores, 1)
        if b.shape[1] != 4 or len(s) != len(b):
            raise_error(ValueError, f"{fname}: boxes must be (N, 4) and scores (N,), got "
                                    f"{b.shape} and {s.shape}")
        return _suppress(fname, _iou_matrix(b.astype(np.float64)), s, max_output_size,
                         iou_threshold, score_threshold)


class NonMaxSuppressionWithOverlaps(Primitive):
    """NonMaxSuppressionWithOverlaps()(overlaps (N, N), scores (N,), max_output_size,
    overlap_threshold, score_threshold): as NonMaxSuppressionV3 with the pairwise overlaps
    given instead of computed from boxes."""

    def __call__(self, overlaps, scores, max_output_size, overlap_threshold, score_threshold):
        fname = "NonMaxSuppressionWithOverlaps"
        o = _host(fname, "overlaps", overlaps, 2)
        s = _host(fname, "scores", scores, 1)
        if o.shape != (len(s), len(s)):
            raise_error(ValueError, f"{fname}: overlaps must be ({len(s)}, {len(s)}) for "
                                    f"{len(s)} scores, got {o.shape}")
        return _suppress(fname, o.astype(np.float64), s, max_output_size, overlap_threshold,
                         score_threshold)


class CombinedNonMaxSuppression(Primitive):
    """CombinedNonMaxSuppression(pad_per_class=False, clip_boxes=True)(boxes (B, N, q, 4),
    scores (B, N, classes), max_output_size_per_class, max_total_size, iou_threshold,
    score_threshold): per image, suppression within each class (q == 1 shares the boxes between
    classes), then the best max_total_size detections over all classes:
    (nmsed_boxes (B, T, 4), nmsed_scores (B, T), nmsed_classes (B, T), valid_detections (B,)),
    padded with zeros; T is max_total_size, or with pad_per_class at most
    max_output_size_per_class * classes. clip_boxes clips the boxes to [0, 1]."""

    def __init__(self, pad_per_class=False, clip_boxes=True):
        check_bool("CombinedNonMaxSuppression", "pad_per_class", pad_per_class)
        check_bool("CombinedNonMaxSuppression", "clip_boxes", clip_boxes)
        super().__init__(pad_per_class=pad_per_class, clip_boxes=clip_boxes)

    def __call__(self, boxes, scores, max_output_size_per_class, max_total_size, iou_threshold,
                 score_threshold):
        fname = "CombinedNonMaxSuppression"
        b = _host(fname, "boxes", boxes, 4)
        s = _host(fname, "scores", scores, 3)
        batch, n, q, _ = b.shape
        classes = s.shape[2]
        if b.shape[3] != 4 or s.shape[:2] != (batch, n) or q not in (1, classes):
            raise_error(ValueError, f"{fname}: boxes must be (B, N, 1 or classes, 4) and scores "
                                    f"(B, N, classes), got {b.shape} and {s.shape}")
        per_class = int(_scalar(fname, "max_output_size_per_class", max_output_size_per_class))
        total = int(_scalar(fname, "max_total_size", max_total_size))
        if per_class < 1 or total < 1:
            raise_error(ValueError, f"{fname}: max_output_size_per_class and max_total_size "
                                    f"must be positive, got {per_class} and {total}")
        size = min(total, per_class * classes) if self.pad_per_class else total
        out_boxes = np.zeros((batch, size, 4), np.float32)
        out_scores = np.zeros((batch, size), np.float32)
        out_classes = np.zeros((batch, size), np.float32)
        valid = np.zeros((batch,), np.int32)
        for image in range(batch):
            found = []
            for c in range(classes):
                class_boxes = b[image, :, 0 if q == 1 else c].astype(np.float64)
                kept = _suppress(fname, _iou_matrix(class_boxes), s[image, :, c], per_class,
                                 iou_threshold, score_threshold).asnumpy()
                found += [(s[image, i, c], c, class_boxes[i]) for i in kept]
            found.sort(key=lambda item: -item[0])
            found = found[:size]
            valid[image] = len(found)
            for slot, (score, c, box) in enumerate(found):
                out_boxes[image, slot] = np.clip(box, 0, 1) if self.clip_boxes else box
                out_scores[image, slot], out_classes[image, slot] = score, c
        return Tensor(out_boxes), Tensor(out_scores), Tensor(out_classes), Tensor(valid)


def _roi_samples(rois, height, width, pooled, scale, sample_num, end_mode):
    """For every RoI, output bin and sample: the four corner indices into the (H * W) plane and
    their bilinear weights (zero for a sample outside the image), and each RoI's sample count."""
    ph, pw = pooled
    indices, weights = [], []
    for roi in rois.astype(np.float64):
        x1, y1, x2, y2 = roi[1:] * scale
        if end_mode == 1:
            x2, y2 = x2 + scale, y2 + scale
            roi_w, roi_h = x2 - x1, y2 - y1
        else:
            roi_w, roi_h = max(x2 - x1, 1.0), max(y2 - y1, 1.0)
        bin_h, bin_w = roi_h / ph, roi_w / pw
        gh = sample_num if sample_num > 0 else max(int(np.ceil(roi_h / ph)), 1)
        gw = sample_num if sample_num > 0 else max(int(np.ceil(roi_w / pw)), 1)
        ys = y1 + (np.arange(ph)[:, None] + (np.arange(gh)[None] + 0.5) / gh) * bin_h
        xs = x1 + (np.arange(pw)[:, None] + (np.arange(gw)[None] + 0.5) / gw) * bin_w
        y = np.broadcast_to(ys[:, None, :, None], (ph, pw, gh, gw)).reshape(ph, pw, -1)
        x = np.broadcast_to(xs[None, :, None, :], (ph, pw, gh, gw)).reshape(ph, pw, -1)
        outside = (y < -1) | (y > height) | (x < -1) | (x > width)
        y, x = np.clip(y, 0, None), np.clip(x, 0, None)
        y0 = np.minimum(np.floor(y), height - 1).astype(np.int64)
        x0 = np.minimum(np.floor(x), width - 1).astype(np.int64)
        y = np.where(y0 >= height - 1, y0, y)
        x = np.where(x0 >= width - 1, x0, x)
        y1i, x1i = np.minimum(y0 + 1, height - 1), np.minimum(x0 + 1, width - 1)
        ly, lx = y - y0, x - x0
        corner_index = np.stack([y0 * width + x0, y0 * width + x1i, y1i * width + x0,
                                 y1i * width + x1i], -1)
        corner_weight = np.stack([(1 - ly) * (1 - lx), (1 - ly) * lx, ly * (1 - lx), ly * lx], -1)
        corner_weight[outside] = 0
        indices.append(corner_index.reshape(ph * pw, -1))
        weights.append(corner_weight.reshape(ph * pw, -1) / (gh * gw))
    # With an adaptive sample count RoIs differ in taps per bin: pad with weight-zero taps.
    taps = max((a.shape[1] for a in indices), default=4)
    index = np.stack([np.pad(a, [(0, 0), (0, taps - a.shape[1])]) for a in indices]) \
        if indices else np.zeros((0, ph * pw, taps), np.int64)
    weight = np.stack([np.pad(a, [(0, 0), (0, taps - a.shape[1])]) for a in weights]) \
        if weights else np.zeros((0, ph * pw, taps))
    return index, weight


class ROIAlign(Primitive):
    """ROIAlign(pooled_height, pooled_width, spatial_scale, sample_num=2, roi_end_mode=1)
    (features (N, C, H, W), rois (R, 5): image index, x1, y1, x2, y2): (R, C, pooled_height,
    pooled_width), each bin the mean of sample_num x sample_num bilinear samples (an adaptive
    count when sample_num <= 0). roi_end_mode=1 moves the box's end by one pixel
    (+spatial_scale); 0 is the legacy form, whose boxes are at least one pixel wide."""

    def __init__(self, pooled_height, pooled_width, spatial_scale, sample_num=2, roi_end_mode=1):
        for name, value in (("pooled_height", pooled_height), ("pooled_width", pooled_width),
                            ("sample_num", sample_num), ("roi_end_mode", roi_end_mode)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise_error(TypeError, f"ROIAlign: {name} must be an int, got "
                                       f"{type(value).__name__}")
        if not isinstance(spatial_scale, float):
            raise_error(TypeError, f"ROIAlign: spatial_scale must be a float, got "
                                   f"{type(spatial_scale).__name__}")
        if pooled_height < 1 or pooled_width < 1 or roi_end_mode not in (0, 1):
            raise_error(ValueError, "ROIAlign: pooled sizes must be positive and roi_end_mode 0 "
                                    "or 1")
        super().__init__(pooled_height=pooled_height, pooled_width=pooled_width,
                         spatial_scale=spatial_scale, sample_num=sample_num,
                         roi_end_mode=roi_end_mode)

    def __call__(self, features, rois):
        fname = "ROIAlign"
        check_tensor(fname, "features", features)
        if features.ndim != 4 or features.dtype not in (float16, float32):
            raise_error(ValueError, f"{fname}: features must be a 4-D Float16 or Float32 Tensor, "
                                    f"got {features.ndim}-D {features.dtype}")
        boxes = _host(fname, "rois", rois, 2)
        n, c, h, w = features.shape
        if boxes.shape[1] != 5:
            raise_error(ValueError, f"{fname}: rois must be (R, 5), got {boxes.shape}")
        images = boxes[:, 0].astype(np.int64)
        if len(images) and (images.min() < 0 or images.max() >= n):
            raise_error(ValueError, f"{fname}: a RoI's image index is outside [0, {n})")
        pooled = (self.pooled_height, self.pooled_width)
        index, weight = _roi_samples(boxes, h, w, pooled, self.spatial_scale, self.sample_num,
                                     self.roi_end_mode)
        r, bins, taps = index.shape
        planes = _ops.gather(_ops.reshape(features, (n, c, h * w)), Tensor(images), 0)
        picked = _gather(planes, 2, _ops.broadcast_to(Tensor(index.reshape(r, 1, -1)),
                                                      (r, c, bins * taps)))
        picked = _ops.reshape(picked, (r, c, bins, taps))
        pooled_values = _ops.sum(picked * Tensor(weight.reshape(r, 1, bins, taps)
                                                 .astype(np.float32)).astype(features.dtype), -1)
        return _ops.reshape(pooled_values, (r, c) + pooled)


__all__ = ["CombinedNonMaxSuppression", "NMSWithMask", "NonMaxSuppressionV3",
           "NonMaxSuppressionWithOverlaps", "ROIAlign"]
