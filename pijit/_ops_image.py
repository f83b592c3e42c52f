"""Image and box operations (crop_and_resize, col2im, bounding boxes) and the helpers the image
primitives of pijit/_primitives_image.py share: TensorFlow-style resize weights, the colour
space conversions, sliding windows over N-d data and MindSpore's pad modes.

Resizing along one axis is a matmul by an (out, in) weight matrix that depends only on the
sizes, built at compile time by a constexpr; sampling at data-dependent places (crops, RoIs)
gathers from the flattened image at indices computed with tensor ops, and the interpolation
weights stay tensors so gradients reach both the image and the boxes."""
import math

import numpy as np

from pijit import _C
from pijit import _ops_composed
from pijit._tensor import Tensor, float32, int64
from pijit.mint._checks import check_tensor, raise_error
from pijit.mint.nn import _fold
from pijit.ops import constexpr

_ops = _C.ops


# ---- argument helpers ----------------------------------------------------------------------------

def int_tuple(fname, what, value, n, low=1):
    """An int or n ints (a list, tuple or 1-D Tensor), each >= low, as a tuple."""
    if isinstance(value, Tensor):
        value = tuple(int(v) for v in value.asnumpy().reshape(-1))
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,) * n
    value = tuple(value) if isinstance(value, (tuple, list)) else value
    if not isinstance(value, tuple) or len(value) != n or any(
            isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low
            for v in value):
        raise_error(ValueError, f"{fname}: {what} must be an int >= {low} or {n} of them, got "
                                f"{value!r}")
    return tuple(int(v) for v in value)


def check_rank(fname, what, x, rank):
    check_tensor(fname, what, x)
    if x.ndim != rank:
        raise_error(ValueError, f"{fname}: {what} must be {rank}-D, got shape {tuple(x.shape)}")


def check_choice(fname, what, value, choices):
    if value not in choices:
        raise_error(ValueError, f"{fname}: {what} must be one of {choices}, got {value!r}")


# ---- resize weights (TensorFlow's coordinate rules, which MindSpore's kernels follow) -----------

def _source(i, scale, rule):
    """The source coordinate of output i: 'half_pixel' (i + 0.5) * scale - 0.5, else i * scale
    ('align_corners' and 'asymmetric' differ only in the scale)."""
    return (i + 0.5) * scale - 0.5 if rule == "half_pixel" else i * scale


def _scale(n_in, n_out, rule):
    if rule == "align_corners":
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return n_in / n_out


def rule_of(align_corners, half_pixel_centers):
    return "align_corners" if align_corners else ("half_pixel" if half_pixel_centers
                                                  else "asymmetric")


@constexpr
def linear_matrix(n_in, n_out, rule, dtype):
    """(n_out, n_in) linear interpolation weights; a source below 0 or past the end reads
    the edge element."""
    m = np.zeros((n_out, n_in))
    scale = _scale(n_in, n_out, rule)
    for i in range(n_out):
        src = _source(i, scale, rule)
        lo = int(math.floor(src))
        frac = src - lo
        m[i, min(max(lo, 0), n_in - 1)] += 1.0 - frac
        m[i, min(max(lo + 1, 0), n_in - 1)] += frac
    return _C.Tensor(m, dtype)


@constexpr
def nearest_index(n_in, n_out, align_corners, half_pixel_centers):
    """Nearest-neighbour sources: round (align_corners) or floor of i * scale, with
    (i + 0.5) * scale under half_pixel_centers."""
    scale = _scale(n_in, n_out, "align_corners" if align_corners else "asymmetric")
    src = (np.arange(n_out) + (0.5 if half_pixel_centers else 0.0)) * scale
    src = np.floor(src + 0.5) if align_corners else np.floor(src)
    return _C.Tensor(np.clip(src, 0, n_in - 1).astype(np.int64))


def _keys_cubic(t, a):
    """Keys' cubic convolution weights of the taps at offsets -1, 0, 1, 2 from floor(src)."""
    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return (far(1 + t), near(t), near(1 - t), far(2 - t))


@constexpr
def cubic_matrix(n_in, n_out, rule, dtype):
    """(n_out, n_in) bicubic weights: a = -0.5 with half-pixel centres (taps outside the input
    dropped and the rest renormalised), else a = -0.75 with taps clamped to the edge."""
    m = np.zeros((n_out, n_in))
    scale = _scale(n_in, n_out, rule)
    a = -0.5 if rule == "half_pixel" else -0.75
    for i in range(n_out):
        src = _source(i, scale, rule)
        lo = int(math.floor(src))
        weights = _keys_cubic(src - lo, a)
        taps = [lo - 1 + k for k in range(4)]
        if rule == "half_pixel":
            weights = [w if 0 <= t < n_in else 0.0 for w, t in zip(weights, taps)]
            total = sum(weights)
            weights = [w / total for w in weights]
        for w, t in zip(weights, taps):
            m[i, min(max(t, 0), n_in - 1)] += w
    return _C.Tensor(m, dtype)


@constexpr
def area_matrix(n_in, n_out, align_corners, dtype):
    """(n_out, n_in) area weights: output i averages the input span [i * s, (i + 1) * s),
    partly covered elements counting by the covered fraction (places past the end read the
    last element)."""
    scale = _scale(n_in, n_out, "align_corners" if align_corners else "asymmetric")
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        start, end = i * scale, (i + 1) * scale
        for j in range(int(math.floor(start)), int(math.ceil(end))):
            cover = min(j + 1, end) - max(j, start)
            m[i, min(j, n_in - 1)] += cover / scale
    return _C.Tensor(m, dtype)


def apply_matrix(x, axis, matrix):
    """x with `axis` mapped through matrix (n_out, n_in)."""
    last = x.ndim - 1
    perm = list(range(x.ndim))
    perm[axis], perm[last] = perm[last], perm[axis]
    moved = x if axis == last else _ops.transpose(x, tuple(perm))
    out = _ops.matmul(moved, _ops.transpose(matrix, (1, 0)))
    return out if axis == last else _ops.transpose(out, tuple(perm))


def resize_axes(x, axes, sizes, make_matrix):
    """x resized along each axis in `axes` to the matching size by the weights
    make_matrix(n_in, n_out)."""
    for axis, n_out in zip(axes, sizes):
        x = apply_matrix(x, axis, make_matrix(x.shape[axis], n_out))
    return x


def size_pair(fname, size, n=2):
    """The output size given as a tuple, list or 1-D Tensor of n positive ints."""
    return int_tuple(fname, "size", size, n)


# ---- colour spaces -------------------------------------------------------------------------------

def _safe_div(num, den):
    """num / den where den != 0, else 0 (without a NaN in either branch's gradient)."""
    nonzero = _ops.not_equal(den, 0.0)
    return _ops.where(nonzero, num / _ops.where(nonzero, den, 1.0), 0.0)


def rgb_to_hsv(images):
    """(..., 3) RGB -> HSV: v the maximum, s its spread relative to v, h the hexcone angle in
    [0, 1)."""
    r, g, b = images[..., 0], images[..., 1], images[..., 2]
    value = _ops.maximum(_ops.maximum(r, g), b)
    spread = value - _ops.minimum(_ops.minimum(r, g), b)
    saturation = _safe_div(spread, value)
    hue = _ops.where(_ops.equal(value, r), _safe_div(g - b, spread),
                     _ops.where(_ops.equal(value, g), 2.0 + _safe_div(b - r, spread),
                                4.0 + _safe_div(r - g, spread))) / 6.0
    hue = _ops.where(_ops.less(hue, 0.0), hue + 1.0, hue)
    hue = _ops.where(_ops.equal(spread, 0.0), 0.0 * hue, hue)
    return _ops.stack((hue, saturation, value), -1)


def hsv_to_rgb(images):
    """(..., 3) HSV -> RGB: channel n is v - v s clip(min(k, 4 - k), 0, 1) with
    k = (n + 6 h) mod 6 and n = 5, 3, 1 for red, green, blue."""
    hue, saturation, value = images[..., 0], images[..., 1], images[..., 2]
    chroma = value * saturation
    channels = []
    for n in (5.0, 3.0, 1.0):
        k = n + hue * 6.0
        k = k - _ops.floor(k / 6.0) * 6.0
        channels.append(value - chroma * _ops.clamp(_ops.minimum(k, 4.0 - k), 0.0, 1.0))
    return _ops.stack(tuple(channels), -1)


def check_rgb(fname, images, rank=None):
    check_tensor(fname, "images", images)
    if images.ndim < 1 or images.shape[-1] != 3 or (rank is not None and images.ndim != rank):
        raise_error(ValueError, f"{fname}: images must be {rank or 'at least 1'}-D with a last "
                                f"axis of 3 channels, got shape {tuple(images.shape)}")


# ---- sliding windows -----------------------------------------------------------------------------

def same_pads(sizes, kernel, stride, dilation):
    """((before, after) per axis) for ceil(size / stride) outputs, the odd element after."""
    pads = []
    for size, k, s, d in zip(sizes, kernel, stride, dilation):
        total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
        pads.append((total // 2, total - total // 2))
    return tuple(pads)


@constexpr
def _offsets(kernel):
    return tuple(np.ndindex(*kernel))


def window_stack(x, kernel, stride, dilation):
    """The windows over x's trailing len(kernel) axes as (..., K, out...) with K the kernel
    offsets in row-major order: one strided slice per offset."""
    spatial = len(kernel)
    lead = x.ndim - spatial
    sizes = x.shape[lead:]
    out = tuple((n - d * (k - 1) - 1) // s + 1
                for n, k, s, d in zip(sizes, kernel, stride, dilation))
    if any(o < 1 for o in out):
        raise_error(ValueError, f"the window {kernel} (dilation {dilation}) does not fit the "
                                f"(padded) input of spatial shape {tuple(sizes)}")
    pieces = []
    for offset in _offsets(kernel):
        index = (slice(None),) * lead + tuple(
            slice(o * d, o * d + s * (n - 1) + 1, s)
            for o, d, s, n in zip(offset, dilation, stride, out))
        pieces.append(x[index])
    return _ops.stack(tuple(pieces), lead), out


def pad_spatial(x, pads, value):
    """x padded on its trailing len(pads) axes by pads ((before, after) per axis)."""
    if not any(p for pair in pads for p in pair):
        return x
    return _ops_composed.pad(x, ((0, 0),) * (x.ndim - len(pads)) + tuple(pads), "CONSTANT",
                             value)


# ---- crop_and_resize -----------------------------------------------------------------------------

def _crop_coords(start, end, size, crop):
    """(num_boxes, crop) sampling places along one axis of a box from start to end
    (normalised), and whether each lies inside [0, size - 1]."""
    steps = _ops.arange(crop).astype(start.dtype)
    if crop > 1:
        coords = (_ops.unsqueeze(start, 1) * (size - 1) +
                  _ops.unsqueeze(end - start, 1) * ((size - 1) / (crop - 1)) * steps)
    else:
        coords = _ops.unsqueeze((start + end) * (0.5 * (size - 1)), 1) + steps
    inside = _ops.logical_and(_ops.greater_equal(coords, 0.0),
                              _ops.less_equal(coords, float(size - 1)))
    return coords, inside


def _clamped_index(coords, size):
    return _ops.clamp(coords, 0.0, float(size - 1)).astype(int64)


def crop_and_resize(image, boxes, box_indices, crop_size, method="bilinear",
                    extrapolation_value=0.0):
    """Crops of (batch, height, width, depth) images, box i from image box_indices[i] between
    the normalised corners (y1, x1, y2, x2), resized to crop_size by bilinear or nearest
    sampling; places outside the image read extrapolation_value. Float32 output."""
    fname = "crop_and_resize"
    check_rank(fname, "image", image, 4)
    check_rank(fname, "boxes", boxes, 2)
    check_rank(fname, "box_indices", box_indices, 1)
    check_choice(fname, "method", method, ("bilinear", "nearest"))
    if boxes.shape[1] != 4 or box_indices.shape[0] != boxes.shape[0]:
        raise_error(ValueError, f"{fname}: boxes must be (num_boxes, 4) and box_indices "
                                f"(num_boxes,), got {tuple(boxes.shape)} and "
                                f"{tuple(box_indices.shape)}")
    crop_h, crop_w = int_tuple(fname, "crop_size", crop_size, 2)
    batch, height, width, depth = image.shape
    boxes = boxes.astype(float32) if boxes.dtype != image.dtype else boxes
    ys, y_in = _crop_coords(boxes[:, 0], boxes[:, 2], height, crop_h)
    xs, x_in = _crop_coords(boxes[:, 1], boxes[:, 3], width, crop_w)
    flat = _ops.reshape(image, (batch * height * width, depth))
    base = _ops.reshape(box_indices.astype(int64) * (height * width), (-1, 1, 1))

    def pick(rows, cols):  # (K, ch, 1) and (K, 1, cw) indices -> (K, ch, cw, depth)
        return _ops.gather(flat, base + rows * width + cols, 0)

    if method == "nearest":
        rows = _clamped_index(_ops.floor(ys + 0.5), height)
        cols = _clamped_index(_ops.floor(xs + 0.5), width)
        out = pick(_ops.unsqueeze(rows, 2), _ops.unsqueeze(cols, 1))
    else:
        top, left = _ops.floor(ys), _ops.floor(xs)
        y_frac = _ops.reshape(ys - top, (-1, crop_h, 1, 1))
        x_frac = _ops.reshape(xs - left, (-1, 1, crop_w, 1))
        rows0 = _ops.unsqueeze(_clamped_index(top, height), 2)
        rows1 = _ops.unsqueeze(_clamped_index(_ops.ceil(ys), height), 2)
        cols0 = _ops.unsqueeze(_clamped_index(left, width), 1)
        cols1 = _ops.unsqueeze(_clamped_index(_ops.ceil(xs), width), 1)
        upper = pick(rows0, cols0) + (pick(rows0, cols1) - pick(rows0, cols0)) * x_frac
        lower = pick(rows1, cols0) + (pick(rows1, cols1) - pick(rows1, cols0)) * x_frac
        out = upper + (lower - upper) * y_frac
    inside = _ops.logical_and(_ops.reshape(y_in, (-1, crop_h, 1, 1)),
                              _ops.reshape(x_in, (-1, 1, crop_w, 1)))
    out = _ops.where(inside, out, float(extrapolation_value))
    return out.astype(float32) if out.dtype != float32 else out


# ---- col2im --------------------------------------------------------------------------------------

def col2im(input_x, output_size, kernel_size, dilation, padding_value, stride):
    """(N, C, kh * kw, L) sliding blocks summed back into (N, C, H, W) with (H, W) =
    output_size (overlaps add): the adjoint of Im2Col."""
    fname = "col2im"
    check_rank(fname, "input_x", input_x, 4)
    kernel = int_tuple(fname, "kernel_size", kernel_size, 2)
    if input_x.shape[2] != kernel[0] * kernel[1]:
        raise_error(ValueError, f"{fname}: input_x's axis 2 ({input_x.shape[2]}) must equal "
                                f"kernel_size[0] * kernel_size[1] = {kernel[0] * kernel[1]}")
    n, c, k, length = input_x.shape
    return _fold.fold(_ops.reshape(input_x, (n, c * k, length)),
                      int_tuple(fname, "output_size", output_size, 2), kernel,
                      int_tuple(fname, "dilation", dilation, 2),
                      int_tuple(fname, "padding_value", padding_value, 2, low=0),
                      int_tuple(fname, "stride", stride, 2))


# ---- bounding boxes ------------------------------------------------------------------------------

def _box_parts(boxes):
    """Centres and sizes of (N, 4) boxes (x1, y1, x2, y2), the sizes counting both ends
    (x2 - x1 + 1) as MindSpore's box kernels do."""
    x1, y1, x2, y2 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    return (x1 + x2) * 0.5, (y1 + y2) * 0.5, x2 - x1 + 1.0, y2 - y1 + 1.0


def _check_boxes(fname, what, boxes):
    check_rank(fname, what, boxes, 2)
    if boxes.shape[1] != 4:
        raise_error(ValueError, f"{fname}: {what} must be (N, 4), got {tuple(boxes.shape)}")


def _four(fname, what, value):
    value = tuple(value) if isinstance(value, (tuple, list)) else value
    if not isinstance(value, tuple) or len(value) != 4:
        raise_error(ValueError, f"{fname}: {what} must be 4 numbers, got {value!r}")
    return tuple(float(v) for v in value)


def bounding_box_encode(anchor_box, groundtruth_box, means=(0.0, 0.0, 0.0, 0.0),
                        stds=(1.0, 1.0, 1.0, 1.0)):
    """The deltas (dx, dy, dw, dh) that move each anchor box onto its ground-truth box,
    normalised by means and stds."""
    fname = "bounding_box_encode"
    _check_boxes(fname, "anchor_box", anchor_box)
    _check_boxes(fname, "groundtruth_box", groundtruth_box)
    if anchor_box.shape[0] != groundtruth_box.shape[0]:
        raise_error(ValueError, f"{fname}: anchor_box and groundtruth_box must have as many "
                                f"boxes, got {anchor_box.shape[0]} and "
                                f"{groundtruth_box.shape[0]}")
    means, stds = _four(fname, "means", means), _four(fname, "stds", stds)
    px, py, pw, ph = _box_parts(anchor_box)
    gx, gy, gw, gh = _box_parts(groundtruth_box)
    deltas = ((gx - px) / pw, (gy - py) / ph, _ops.log(gw / pw), _ops.log(gh / ph))
    return _ops.stack(tuple((d - m) / s for d, m, s in zip(deltas, means, stds)), 1)


def bounding_box_decode(anchor_box, deltas, max_shape, means=(0.0, 0.0, 0.0, 0.0),
                        stds=(1.0, 1.0, 1.0, 1.0), wh_ratio_clip=0.016):
    """The boxes (x1, y1, x2, y2) that deltas move the anchor boxes to, their size change
    limited to |log(wh_ratio_clip)| and the corners clipped to max_shape (height, width)."""
    fname = "bounding_box_decode"
    _check_boxes(fname, "anchor_box", anchor_box)
    _check_boxes(fname, "deltas", deltas)
    if anchor_box.shape[0] != deltas.shape[0]:
        raise_error(ValueError, f"{fname}: anchor_box and deltas must have as many boxes, got "
                                f"{anchor_box.shape[0]} and {deltas.shape[0]}")
    means, stds = _four(fname, "means", means), _four(fname, "stds", stds)
    height, width = int_tuple(fname, "max_shape", max_shape, 2)
    if not 0 < wh_ratio_clip:
        raise_error(ValueError, f"{fname}: wh_ratio_clip must be positive, got {wh_ratio_clip}")
    limit = abs(math.log(wh_ratio_clip))
    dx, dy, dw, dh = (deltas[:, i] * stds[i] + means[i] for i in range(4))
    dw, dh = _ops.clamp(dw, -limit, limit), _ops.clamp(dh, -limit, limit)
    px, py, pw, ph = _box_parts(anchor_box)
    gx, gy = px + pw * dx, py + ph * dy
    half_w, half_h = pw * _ops.exp(dw) * 0.5, ph * _ops.exp(dh) * 0.5
    x_max, y_max = float(width - 1), float(height - 1)
    return _ops.stack((_ops.clamp(gx - half_w + 0.5, 0.0, x_max),
                       _ops.clamp(gy - half_h + 0.5, 0.0, y_max),
                       _ops.clamp(gx + half_w - 0.5, 0.0, x_max),
                       _ops.clamp(gy + half_h - 0.5, 0.0, y_max)), 1)


def check_valid(bboxes, img_metas):
    """Bool (N,): whether box (x1, y1, x2, y2) lies inside an image of img_metas = (height,
    width, ratio), i.e. x1, y1 >= 0, x2 <= width * ratio - 1 and y2 <= height * ratio - 1."""
    fname = "check_valid"
    _check_boxes(fname, "bboxes", bboxes)
    check_rank(fname, "img_metas", img_metas, 1)
    if img_metas.shape[0] != 3:
        raise_error(ValueError, f"{fname}: img_metas must hold (height, width, ratio), got "
                                f"shape {tuple(img_metas.shape)}")
    metas = img_metas.astype(bboxes.dtype)
    x_limit, y_limit = metas[1] * metas[2] - 1.0, metas[0] * metas[2] - 1.0
    inside = (_ops.greater_equal(bboxes[:, 0], 0.0), _ops.greater_equal(bboxes[:, 1], 0.0),
              _ops.less_equal(bboxes[:, 2], x_limit), _ops.less_equal(bboxes[:, 3], y_limit))
    return _ops.logical_and(_ops.logical_and(inside[0], inside[1]),
                            _ops.logical_and(inside[2], inside[3]))


_FUNCTIONS = ["bounding_box_decode", "bounding_box_encode", "check_valid", "col2im",
              "crop_and_resize"]

from pijit._primitives_image import *  # noqa: E402,F401,F403 - the primitives over these ops
from pijit import _primitives_image  # noqa: E402

__all__ = _FUNCTIONS + list(_primitives_image.__all__)
