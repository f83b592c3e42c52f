"""NMS primitives and ROIAlign against direct Python references and MindSpore's documented
example values."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops


def iou(a, b):
    ax0, ay0, ax1, ay1 = min(a[0], a[2]), min(a[1], a[3]), max(a[0], a[2]), max(a[1], a[3])
    bx0, by0, bx1, by1 = min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3])
    w = max(0.0, min(ax1, bx1) - max(ax0, bx0))
    h = max(0.0, min(ay1, by1) - max(ay0, by0))
    union = (ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - w * h
    return w * h / union if union > 0 else 0.0


def reference_nms(boxes, scores, threshold, limit=None, score_threshold=-np.inf):
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    kept = []
    for i in order:
        if scores[i] <= score_threshold or (limit is not None and len(kept) == limit):
            continue
        if all(iou(boxes[i], boxes[j]) <= threshold for j in kept):
            kept.append(i)
    return kept


def random_boxes(n, seed):
    rng = np.random.default_rng(seed)
    corner = rng.uniform(0, 50, size=(n, 2))
    size = rng.uniform(5, 30, size=(n, 2))
    return np.concatenate([corner, corner + size], 1), rng.random(n)


def test_nms_with_mask_documented_example_and_reference():
    bbox = np.array([[100.0, 100.0, 50.0, 68.0, 0.63], [150.0, 75.0, 165.0, 115.0, 0.55],
                     [12.0, 190.0, 288.0, 200.0, 0.9], [28.0, 130.0, 106.0, 172.0, 0.3]])
    bbox[:, 2] += bbox[:, 0]
    bbox[:, 3] += bbox[:, 1]
    boxes, idx, mask = ops.NMSWithMask(0.1)(ms.Tensor(bbox, ms.float32))
    assert idx.asnumpy()[mask.asnumpy()].tolist() == \
        reference_nms(bbox[:, :4], bbox[:, 4], 0.1)
    np.testing.assert_allclose(boxes.asnumpy(), bbox[np.argsort(-bbox[:, 4])], rtol=1e-6)
    for seed in range(5):
        b, s = random_boxes(40, seed)
        _, idx, mask = ops.NMSWithMask(0.3)(ms.Tensor(np.concatenate([b, s[:, None]], 1)))
        assert idx.asnumpy()[mask.asnumpy()].tolist() == reference_nms(b, s, 0.3)


def test_non_max_suppression_v3_and_with_overlaps():
    for seed in range(5):
        b, s = random_boxes(30, seed + 10)
        yx = b[:, [1, 0, 3, 2]]  # y1, x1, y2, x2
        got = ops.NonMaxSuppressionV3()(ms.Tensor(yx), ms.Tensor(s), ms.Tensor(np.int32(7)),
                                        ms.Tensor(np.float32(0.2)), ms.Tensor(np.float32(0.3)))
        assert got.dtype == ms.int32
        assert got.asnumpy().tolist() == reference_nms(b, s, 0.2, 7, 0.3)
        overlaps = np.array([[iou(p, q) for q in b] for p in b])
        got = ops.NonMaxSuppressionWithOverlaps()(ms.Tensor(overlaps), ms.Tensor(s), 5, 0.25,
                                                  0.0)
        assert got.asnumpy().tolist() == reference_nms(b, s, 0.25, 5, 0.0)
    with pytest.raises(ValueError):
        ops.NonMaxSuppressionV3()(ms.Tensor(np.zeros((3, 4))), ms.Tensor(np.zeros(2)), 1, 0.5, 0)


def test_combined_non_max_suppression():
    rng = np.random.default_rng(3)
    b, _ = random_boxes(12, 4)
    boxes = (b / 80.0)[None, :, None, :].repeat(2, 0)  # (2, 12, 1, 4), shared by classes
    scores = rng.random((2, 12, 3))
    nb, ns, nc, valid = ops.CombinedNonMaxSuppression()(
        ms.Tensor(boxes), ms.Tensor(scores), 2, 5, 0.4, 0.2)
    assert nb.shape == (2, 5, 4) and ns.shape == nc.shape == (2, 5) and valid.shape == (2,)
    for image in range(2):
        found = []
        for c in range(3):
            for i in reference_nms(boxes[image, :, 0], scores[image, :, c], 0.4, 2, 0.2):
                found.append((scores[image, i, c], c, i))
        found.sort(key=lambda t: -t[0])
        found = found[:5]
        assert valid.asnumpy()[image] == len(found)
        np.testing.assert_allclose(ns.asnumpy()[image, :len(found)], [f[0] for f in found],
                                   rtol=1e-6)
        assert nc.asnumpy()[image, :len(found)].tolist() == [f[1] for f in found]
        np.testing.assert_allclose(nb.asnumpy()[image, :len(found)],
                                   np.clip(boxes[image, [f[2] for f in found], 0], 0, 1),
                                   rtol=1e-6)


def bilinear(plane, y, x):
    h, w = plane.shape
    if y < -1 or y > h or x < -1 or x > w:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    return (plane[y0, x0] * (1 - ly) * (1 - lx) + plane[y0, x1] * (1 - ly) * lx
            + plane[y1, x0] * ly * (1 - lx) + plane[y1, x1] * ly * lx)


def reference_roi_align(features, rois, ph, pw, scale, sample_num, end_mode):
    out = np.zeros((len(rois), features.shape[1], ph, pw))
    for r, (b, x1, y1, x2, y2) in enumerate(rois):
        x1, y1, x2, y2 = x1 * scale, y1 * scale, x2 * scale, y2 * scale
        if end_mode == 1:
            x2, y2 = x2 + scale, y2 + scale
            rw, rh = x2 - x1, y2 - y1
        else:
            rw, rh = max(x2 - x1, 1.0), max(y2 - y1, 1.0)
        gh = sample_num if sample_num > 0 else max(int(np.ceil(rh / ph)), 1)
        gw = sample_num if sample_num > 0 else max(int(np.ceil(rw / pw)), 1)
        for c in range(features.shape[1]):
            for i in range(ph):
                for j in range(pw):
                    total = 0.0
                    for a in range(gh):
                        for q in range(gw):
                            y = y1 + i * rh / ph + (a + 0.5) * rh / ph / gh
                            x = x1 + j * rw / pw + (q + 0.5) * rw / pw / gw
                            total += bilinear(features[int(b), c], y, x)
                    out[r, c, i, j] = total / (gh * gw)
    return out


def test_roi_align_documented_example():
    features = ms.Tensor(np.array([[[[1., 2.], [3., 4.]]]]), ms.float32)
    rois = ms.Tensor(np.array([[0, 0.2, 0.3, 0.2, 0.3]]), ms.float32)
    np.testing.assert_allclose(ops.ROIAlign(2, 2, 0.5, 2)(features, rois).asnumpy(),
                               [[[[1.775, 2.025], [2.275, 2.525]]]], rtol=1e-6)


@pytest.mark.parametrize("sample_num, end_mode", [(2, 1), (0, 1), (3, 0), (-1, 0)])
def test_roi_align_against_loops_and_its_gradient(sample_num, end_mode):
    rng = np.random.default_rng(abs(sample_num) + 7 * end_mode)
    features = rng.normal(size=(2, 3, 9, 11)).astype(np.float32)
    rois = np.array([[0, 1.0, 2.0, 17.0, 12.0], [1, -3.0, 4.0, 6.0, 30.0],
                     [1, 10.5, 0.5, 11.0, 1.0], [0, 20.0, 15.0, 24.0, 19.0]], np.float32)
    op = ops.ROIAlign(3, 2, 0.5, sample_num, end_mode)
    got = op(ms.Tensor(features), ms.Tensor(rois))
    want = reference_roi_align(features.astype(np.float64), rois, 3, 2, 0.5, sample_num, end_mode)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-5)
    # The output is linear in the features: its gradient for a probe equals the finite
    # difference of <probe, reference> exactly up to rounding.
    probe = rng.normal(size=want.shape)
    grad = ms.grad(lambda f: (op(f, ms.Tensor(rois)) * ms.Tensor(probe.astype(np.float32)))
                   .sum())(ms.Tensor(features))
    for at in [(0, 1, 3, 4), (1, 2, 8, 0), (1, 0, 5, 2), (0, 0, 0, 0)]:
        bumped = features.astype(np.float64).copy()
        bumped[at] += 1.0
        numeric = ((reference_roi_align(bumped, rois, 3, 2, 0.5, sample_num, end_mode)
                    - want) * probe).sum()
        assert abs(grad.asnumpy()[at] - numeric) < 1e-4


def test_roi_align_bad_arguments():
    with pytest.raises(TypeError):
        ops.ROIAlign(2, 2, 1, 2)
    with pytest.raises(ValueError):
        ops.ROIAlign(2, 2, 1.0, 2, 3)
    op = ops.ROIAlign(2, 2, 1.0)
    features = ms.Tensor(np.zeros((1, 1, 4, 4), np.float32))
    with pytest.raises(ValueError):
        op(features, ms.Tensor(np.array([[1, 0, 0, 1, 1]], np.float32)))
    with pytest.raises(ValueError):
        op(features, ms.Tensor(np.zeros((1, 4), np.float32)))
