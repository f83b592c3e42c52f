"""More of MindSpore's neural-network functions, composed of pijit's ops: the embedding and
margin losses, Gaussian NLL, 1-D and power-average pooling, channel dropout, local response
normalisation, box IoU, affine sampling grids and pairwise distances."""
import math

from pijit import _C
from pijit._ops_composed import pad as _pad
from pijit._ops_loss import _reduce
from pijit._tensor import int64
from pijit.mint._checks import check_choice, check_int, check_tensor, raise_error

_ops = _C.ops
_REDUCTIONS = ("none", "mean", "sum")


# ---- losses ------------------------------------------------------------------------------------

def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """1 - cos(x1, x2) where target is 1; max(0, cos(x1, x2) - margin) where it is -1 (the
    cosine along axis 1)."""
    check_choice("cosine_embedding_loss", "reduction", reduction, _REDUCTIONS)
    dot = _ops.sum(input1 * input2, 1)
    norms = _ops.sqrt(_ops.sum(input1 * input1, 1) * _ops.sum(input2 * input2, 1) + 1e-12)
    cos = dot / norms
    loss = _ops.where(_ops.equal(target, 1), 1.0 - cos, _ops.relu(cos - margin))
    return _reduce(loss, reduction)


def hinge_embedding_loss(inputs, targets, margin=1.0, reduction="mean"):
    """x where the target is 1; max(0, margin - x) where it is -1."""
    check_choice("hinge_embedding_loss", "reduction", reduction, _REDUCTIONS)
    loss = _ops.where(_ops.equal(targets, 1), inputs, _ops.relu(margin - inputs))
    return _reduce(loss, reduction)


def gaussian_nll_loss(x, target, var, full=False, eps=1e-06, reduction="mean"):
    """0.5 (log(max(var, eps)) + (x - target)^2 / max(var, eps)), plus 0.5 log(2 pi) with
    full."""
    check_choice("gaussian_nll_loss", "reduction", reduction, _REDUCTIONS)
    var = _ops.maximum(var, eps)
    loss = 0.5 * (_ops.log(var) + _ops.square(x - target) / var)
    if full:
        loss = loss + 0.5 * math.log(2.0 * math.pi)
    return _reduce(loss, reduction)


def _pairwise_distance(a, b, p, eps):
    diff = _ops.abs(a - b + eps)
    return _ops.pow(_ops.sum(_ops.pow(diff, float(p)), -1), 1.0 / p)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False,
                        reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with the p-norm distance over the last axis; swap
    uses min(d(a, n), d(p, n)) as the negative distance."""
    check_choice("triplet_margin_loss", "reduction", reduction, _REDUCTIONS)
    d_pos = _pairwise_distance(anchor, positive, p, eps)
    d_neg = _pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _ops.minimum(d_neg, _pairwise_distance(positive, negative, p, eps))
    return _reduce(_ops.relu(d_pos - d_neg + margin), reduction)


def multi_margin_loss(input, target, p=1, margin=1, weight=None, reduction="mean"):  # noqa: A002
    """The mean over classes j != y of max(0, margin - x[y] + x[j])^p (times weight[y])."""
    check_choice("multi_margin_loss", "reduction", reduction, _REDUCTIONS)
    if p not in (1, 2):
        raise_error(ValueError, f"multi_margin_loss: p must be 1 or 2, got {p}")
    classes = input.shape[-1]
    picked = _ops.one_hot(target.astype(int64), classes, 1.0, 0.0).astype(input.dtype)
    true_score = _ops.sum(input * picked, -1, keepdims=True)
    margins = _ops.relu(margin - true_score + input) * (1.0 - picked)
    if p == 2:
        margins = margins * margins
    if weight is not None:
        margins = margins * _ops.sum(picked * weight, -1, keepdims=True)
    return _reduce(_ops.sum(margins, -1) / classes, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, reduction="mean"):  # noqa: A002
    """-mean over classes of y log(sigmoid(x)) + (1 - y) log(sigmoid(-x))."""
    check_choice("multilabel_soft_margin_loss", "reduction", reduction, _REDUCTIONS)
    # log(sigmoid(x)) = -softplus(-x), written to stay finite for large |x|.
    loss = target * _ops.softplus(-input) + (1.0 - target) * _ops.softplus(input)
    if weight is not None:
        loss = loss * weight
    return _reduce(_ops.mean(loss, -1), reduction)


# ---- pooling, dropout, normalisation -----------------------------------------------------------

def avg_pool1d(input_x, kernel_size=1, stride=1, padding=0, ceil_mode=False,
               count_include_pad=True):
    """The mean of each window of the last axis of (N, C, L) input."""
    check_tensor("avg_pool1d", "input_x", input_x)
    out = _ops.avg_pool2d(_ops.unsqueeze(input_x, -2), (1, kernel_size), stride=(1, stride),
                          padding=(0, padding), ceil_mode=ceil_mode,
                          count_include_pad=count_include_pad)
    return _ops.squeeze(out, -2)


def lp_pool2d(x, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p) on the last two axes."""
    check_tensor("lp_pool2d", "x", x)
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
    mean = _ops.avg_pool2d(_ops.pow(x, float(norm_type)), (kh, kw),
                           stride=(kh, kw) if stride is None else stride, ceil_mode=ceil_mode)
    return _ops.pow(mean * float(kh * kw), 1.0 / norm_type)


def lp_pool1d(x, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p) on the last axis."""
    check_tensor("lp_pool1d", "x", x)
    out = lp_pool2d(_ops.unsqueeze(x, -2), norm_type, (1, kernel_size),
                    (1, kernel_size if stride is None else stride), ceil_mode)
    return _ops.squeeze(out, -2)


def _channel_dropout(fname, input, p, training, rank):  # noqa: A002
    check_tensor(fname, "input", input)
    if not 0.0 <= p <= 1.0:
        raise_error(ValueError, f"{fname}: p must be in [0, 1], got {p}")
    if input.ndim not in (rank, rank - 1):
        raise_error(ValueError, f"{fname}: expects a {rank}-D input (or {rank - 1}-D without "
                                f"N), got {input.ndim}-D")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _ops.zeros_like(input)
    lead = input.ndim - rank + 2  # N and C, or C alone
    mask_shape = tuple(input.shape[:lead]) + (1,) * (input.ndim - lead)
    keep = _ops.less(_ops.uniform(mask_shape, 0.0, 1.0, dtype=input.dtype), 1.0 - p)
    return _ops.where(keep, input / (1.0 - p), 0.0)


def dropout1d(input, p=0.5, training=True):  # noqa: A002
    """Zeroes whole channels of (N, C, L) input with probability p, scaling the rest."""
    return _channel_dropout("dropout1d", input, p, training, 3)


def dropout2d(input, p=0.5, training=True):  # noqa: A002
    """Zeroes whole channels of (N, C, H, W) input with probability p, scaling the rest."""
    return _channel_dropout("dropout2d", input, p, training, 4)


def dropout3d(input, p=0.5, training=True):  # noqa: A002
    """Zeroes whole channels of (N, C, D, H, W) input with probability p, scaling the rest."""
    return _channel_dropout("dropout3d", input, p, training, 5)


def lrn(x, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5, norm_region="ACROSS_CHANNELS"):
    """x / (bias + alpha * the sum of x^2 over the channels within depth_radius)^beta, for
    (N, C, H, W) x."""
    check_tensor("lrn", "x", x)
    check_choice("lrn", "norm_region", norm_region, ("ACROSS_CHANNELS",))
    depth_radius = check_int("lrn", "depth_radius", depth_radius, low=0)
    if x.ndim != 4:
        raise_error(ValueError, f"lrn: x must be 4-D (N, C, H, W), got {x.ndim}-D")
    channels = x.shape[1]
    squares = x * x
    total = _ops.zeros_like(x)
    for shift in range(-depth_radius, depth_radius + 1):  # the channel window, one shift each
        lo, hi = max(0, -shift), min(channels, channels - shift)
        if lo >= hi:
            continue
        moved = squares[:, lo + shift:hi + shift]
        pads = ((0, 0), (lo, channels - hi), (0, 0), (0, 0))
        total = total + _pad(moved, pads)
    return x / _ops.pow(bias + alpha * total, beta)


# ---- geometry ----------------------------------------------------------------------------------

def iou(anchor_boxes, gt_boxes, mode="iou"):
    """(M, N) intersection over union (or over the foreground box's area, mode 'iof') of N
    anchor boxes and M ground-truth boxes, each (x0, y0, x1, y1)."""
    check_choice("iou", "mode", mode, ("iou", "iof"))
    for name, boxes in (("anchor_boxes", anchor_boxes), ("gt_boxes", gt_boxes)):
        check_tensor("iou", name, boxes)
        if boxes.ndim != 2 or boxes.shape[1] != 4:
            raise_error(ValueError, f"iou: {name} must be (count, 4), got {boxes.shape}")
    a = _ops.unsqueeze(anchor_boxes, 0)  # (1, N, 4)
    g = _ops.unsqueeze(gt_boxes, 1)      # (M, 1, 4)
    width = _ops.relu(_ops.minimum(a[..., 2], g[..., 2]) - _ops.maximum(a[..., 0], g[..., 0]))
    height = _ops.relu(_ops.minimum(a[..., 3], g[..., 3]) - _ops.maximum(a[..., 1], g[..., 1]))
    overlap = width * height
    area_a = (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1])
    area_g = (g[..., 2] - g[..., 0]) * (g[..., 3] - g[..., 1])
    return overlap / (area_a + area_g - overlap) if mode == "iou" else overlap / area_g


def affine_grid(theta, size, align_corners=False):
    """The (N, H, W, 2) sampling grid (x, y in [-1, 1]) of the affine maps theta (N, 2, 3)
    for an output of size (N, C, H, W), for grid_sample."""
    check_tensor("affine_grid", "theta", theta)
    size = tuple(size)
    if len(size) != 4 or theta.ndim != 3 or tuple(theta.shape[1:]) != (2, 3):
        raise_error(ValueError, f"affine_grid: expected theta (N, 2, 3) and a 4-D size, got "
                                f"{theta.shape} and {size}")
    n, _, height, width = size

    def axis(count):
        if count == 1:
            return _ops.zeros((1,), dtype=theta.dtype)
        steps = _ops.arange(count, dtype=theta.dtype) * (2.0 / (count - 1)) - 1.0
        return steps if align_corners else steps * ((count - 1) / count)

    xs = _ops.broadcast_to(_ops.unsqueeze(axis(width), 0), (height, width))
    ys = _ops.broadcast_to(_ops.unsqueeze(axis(height), 1), (height, width))
    base = _ops.stack((xs, ys, _ops.ones((height, width), dtype=theta.dtype)), -1)
    flat = _ops.reshape(base, (1, height * width, 3))
    grid = _ops.matmul(flat, _ops.transpose(theta, (0, 2, 1)))  # (N, H * W, 2)
    return _ops.reshape(grid, (n, height, width, 2))


def pdist(input, p=2.0):  # noqa: A002
    """The p-norm distances between the rows of (..., N, M) input, for each pair i < j in
    row-major order: (..., N (N - 1) / 2). Only those pairs are computed, so the gradient
    never meets the zero distance of a row to itself."""
    check_tensor("pdist", "input", input)
    n = input.shape[-2]
    firsts = tuple(i for i in range(n) for _ in range(i + 1, n))
    seconds = tuple(j for i in range(n) for j in range(i + 1, n))
    if not firsts:
        return _ops.zeros(tuple(input.shape[:-2]) + (0,), dtype=input.dtype)
    axis = input.ndim - 2
    diff = _ops.gather(input, _C.Tensor(firsts).astype(int64), axis) \
        - _ops.gather(input, _C.Tensor(seconds).astype(int64), axis)
    if p == 2.0:
        return _ops.sqrt(_ops.sum(diff * diff, -1))
    return _ops.pow(_ops.sum(_ops.pow(_ops.abs(diff), float(p)), -1), 1.0 / p)


__all__ = ["affine_grid", "avg_pool1d", "cosine_embedding_loss", "dropout1d", "dropout2d",
           "dropout3d", "gaussian_nll_loss", "hinge_embedding_loss", "iou", "lp_pool1d",
           "lp_pool2d", "lrn", "multi_margin_loss", "multilabel_soft_margin_loss", "pdist",
           "triplet_margin_loss"]
