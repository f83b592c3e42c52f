"""MindSpore's image, pooling, resizing and layout primitives over pijit's ops and the helpers
of pijit/_ops_image.py. Attributes follow each primitive's constructor, call arguments its
inputs; everything is NCHW (NCDHW) unless MindSpore fixes the primitive to NHWC."""
import math

import numpy as np

from pijit import _C
from pijit import _ops_composed
from pijit import _ops_conv3d as _conv3d
from pijit import _ops_image as _image
from pijit import _ops_nd as _nd
from pijit import _ops_resize
from pijit._tensor import Tensor, float32, int32, int64
from pijit.mint._checks import check_tensor, raise_error
from pijit.mint.nn import _fold
from pijit.mint.nn import functional as _mint_f
from pijit.ops import constexpr
from pijit._primitives_more import _primitive

_ops = _C.ops
_int_tuple, _check_rank, _check_choice = _image.int_tuple, _image.check_rank, _image.check_choice


def _format_is(*accepted):
    """A constructor check that data_format is one of `accepted` (pijit's ops are
    channels-first)."""
    def check(name, values):
        if values["data_format"] not in accepted:
            raise ValueError(f"{name}: data_format must be {' or '.join(map(repr, accepted))} "
                             f"(pijit is channels-first), got {values['data_format']!r}")
    return check


def _spatial(fname, what, value, n, low=1):
    """An int, n ints, or MindSpore's (1, 1, *n) form of them."""
    if isinstance(value, (tuple, list)) and len(value) == n + 2:
        value = tuple(value)[2:]
    return _int_tuple(fname, what, value, n, low)


def _pad_mode(fname, mode):
    """The pad mode, lower-cased when the primitive was made (captured code calls no str
    methods)."""
    _check_choice(fname, "pad_mode", mode, ("same", "valid", "pad"))
    return mode


def _lower_pad_mode(check):
    """A constructor check that lower-cases pad_mode (MindSpore accepts either case), then
    runs `check`."""
    def run(name, values):
        if isinstance(values["pad_mode"], str):
            values["pad_mode"] = values["pad_mode"].lower()
        check(name, values)
    return run


def _explicit_pads(fname, pad, n):
    """MindSpore's pad: an int, n ints (both sides) or 2n ints (before, after per axis)."""
    pads = (pad,) * n if isinstance(pad, int) else tuple(pad)
    if len(pads) == n:
        pads = tuple(p for v in pads for p in (v, v))
    if len(pads) != 2 * n or any(not isinstance(p, int) or p < 0 for p in pads):
        raise_error(ValueError, f"{fname}: pad must be a non-negative int, {n} or {2 * n} of "
                                f"them, got {pad!r}")
    return tuple((pads[2 * i], pads[2 * i + 1]) for i in range(n))


def _window_pads(fname, mode, pad, sizes, kernel, stride, dilation):
    if mode == "valid":
        return ((0, 0),) * len(sizes)
    if mode == "same":
        return _image.same_pads(sizes, kernel, stride, dilation)
    return _explicit_pads(fname, pad, len(sizes))


def _ceil_extra(sizes, pads, kernel, stride, dilation):
    """The extra elements after each axis that ceil mode's last window reads (a window must
    start inside the input or its leading padding)."""
    extra = []
    for n, (lo, hi), k, s, d in zip(sizes, pads, kernel, stride, dilation):
        span = n + lo + hi - d * (k - 1) - 1
        out = -(-span // s) + 1
        if (out - 1) * s >= n + lo:
            out -= 1
        extra.append(max((out - 1) * s + d * (k - 1) + 1 - (n + lo + hi), 0))
    return tuple(extra)


# ---- layout --------------------------------------------------------------------------------------

def _depth_to_space(self, x):
    """(N, C * b * b, H, W) -> (N, C, H * b, W * b), input channel (i * b + j) * C + c going
    to offset (i, j) of output channel c (TensorFlow's order, not pixel_shuffle's)."""
    _check_rank("DepthToSpace", "x", x, 4)
    b = self.block_size
    n, c, h, w = x.shape
    if c % (b * b):
        raise_error(ValueError, f"DepthToSpace: the {c} channels are not divisible by "
                                f"block_size ** 2 = {b * b}")
    parts = _ops.reshape(x, (n, b, b, c // (b * b), h, w))
    return _ops.reshape(_ops.transpose(parts, (0, 3, 4, 1, 5, 2)), (n, c // (b * b), h * b,
                                                                    w * b))


def _space_to_depth(self, x):
    """(N, C, H * b, W * b) -> (N, C * b * b, H, W), DepthToSpace's inverse."""
    _check_rank("SpaceToDepth", "x", x, 4)
    b = self.block_size
    n, c, h, w = x.shape
    if h % b or w % b:
        raise_error(ValueError, f"SpaceToDepth: H ({h}) and W ({w}) must be divisible by "
                                f"block_size {b}")
    parts = _ops.reshape(x, (n, c, h // b, b, w // b, b))
    return _ops.reshape(_ops.transpose(parts, (0, 3, 5, 1, 2, 4)), (n, c * b * b, h // b,
                                                                    w // b))


def _check_block(name, values):
    _format_is("NCHW")(name, values)
    block = values["block_size"]
    if isinstance(block, bool) or not isinstance(block, int) or block < 2:
        raise ValueError(f"{name}: block_size must be an int >= 2, got {block!r}")


DepthToSpace = _primitive("DepthToSpace", {"block_size": 2, "data_format": "NCHW"},
                          _depth_to_space, "DepthToSpace(block_size, data_format='NCHW')(x).",
                          _check_block)
SpaceToDepth = _primitive("SpaceToDepth", {"block_size": 2, "data_format": "NCHW"},
                          _space_to_depth, "SpaceToDepth(block_size, data_format='NCHW')(x).",
                          _check_block)
BatchToSpace = _primitive(
    "BatchToSpace", {"block_size": 2, "crops": ((0, 0), (0, 0))},
    lambda self, x: _nd.batch_to_space_nd(x, (self.block_size, self.block_size), self.crops),
    "BatchToSpace(block_size, crops)(x): (b * b * N, C, H, W) -> (N, C, H * b, W * b) cropped.")


@constexpr
def _dim_table(src, dst):
    return _C.Tensor(np.array([dst.index(ch) for ch in src], dtype=np.int64))


def _check_formats(name, values):
    src, dst = values["src_format"], values["dst_format"]
    if not (isinstance(src, str) and isinstance(dst, str) and len(src) in (4, 5)
            and sorted(src) == sorted(dst) and len(set(src)) == len(src)):
        raise ValueError(f"{name}: src_format and dst_format must be 4 or 5 distinct letters "
                         f"in two orders (e.g. 'NHWC', 'NCHW'), got {src!r} and {dst!r}")


def _dim_map(self, x):
    check_tensor("DataFormatDimMap", "input_x", x)
    rank = len(self.src_format)
    index = _ops.remainder(x.astype(int64), rank)
    return _ops.gather(_dim_table(self.src_format, self.dst_format), index, 0).astype(x.dtype)


@constexpr
def _vec_order(src, dst, entries):
    """Where each of dst's letters sits in src: y[i] = x[order[i]], over the spatial letters
    alone when the vector holds two fewer entries than the formats have letters (None when
    it fits neither)."""
    if entries == len(src) - 2:
        src, dst = ("".join(ch for ch in f if ch not in "NC") for f in (src, dst))
    return tuple(src.index(ch) for ch in dst) if entries == len(src) else None


def _vec_permute(self, x):
    fname = "DataFormatVecPermute"
    check_tensor(fname, "input_x", x)
    order = _vec_order(self.src_format, self.dst_format, x.shape[0] if x.ndim else 0)
    if x.ndim not in (1, 2) or order is None or (x.ndim == 2 and x.shape[1] != 2):
        raise_error(ValueError, f"{fname}: input_x must be ({len(self.src_format)},) or "
                                f"({len(self.src_format)}, 2) (or the spatial entries alone), "
                                f"got shape {tuple(x.shape)}")
    return _ops.stack(tuple(x[i] for i in order), 0)


DataFormatDimMap = _primitive("DataFormatDimMap", {"src_format": "NHWC", "dst_format": "NCHW"},
                              _dim_map, "DataFormatDimMap(src_format='NHWC', "
                              "dst_format='NCHW')(input_x): dimension indices in dst_format.",
                              _check_formats)
DataFormatVecPermute = _primitive(
    "DataFormatVecPermute", {"src_format": "NHWC", "dst_format": "NCHW"}, _vec_permute,
    "DataFormatVecPermute(src_format='NHWC', dst_format='NCHW')(input_x): a shape vector "
    "reordered into dst_format.", _check_formats)

_PADV3_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate",
                "circular": "circular"}


def _pad_v3(self, x, paddings, constant_value=None):
    """Pads pairs from the last axis backwards, as torch's pad does; paddings_contiguous=False
    lists all the befores first, then all the afters."""
    fname = "PadV3"
    check_tensor(fname, "x", x)
    pads = tuple(int(p) for p in (paddings.asnumpy().reshape(-1) if isinstance(paddings, Tensor)
                                  else paddings))
    if len(pads) % 2 or len(pads) // 2 > x.ndim:
        raise_error(ValueError, f"{fname}: paddings must hold (before, after) pairs for at most "
                                f"{x.ndim} axes, got {pads}")
    if not self.paddings_contiguous:
        half = len(pads) // 2
        pads = tuple(p for i in range(half) for p in (pads[i], pads[half + i]))
    value = None
    if self.mode == "constant":
        value = 0.0 if constant_value is None else (
            float(constant_value.asnumpy()) if isinstance(constant_value, Tensor)
            else constant_value)
    return _mint_f.pad(x, pads, _PADV3_MODES[self.mode], value)


def _check_padv3(name, values):
    if values["mode"] not in _PADV3_MODES:
        raise ValueError(f"{name}: mode must be one of {tuple(_PADV3_MODES)}, got "
                         f"{values['mode']!r}")


PadV3 = _primitive("PadV3", {"mode": "constant", "paddings_contiguous": True}, _pad_v3,
                   "PadV3(mode='constant', paddings_contiguous=True)(x, paddings, "
                   "constant_value=None).", _check_padv3)


# ---- resizing ------------------------------------------------------------------------------------

def _check_corners(name, values):
    if values["align_corners"] and values.get("half_pixel_centers"):
        raise ValueError(f"{name}: align_corners and half_pixel_centers cannot both be True")


def _resize_nchw(fname, x, size, make_matrix):
    _check_rank(fname, "x", x, 4)
    return _image.resize_axes(x, (2, 3), _image.size_pair(fname, size), make_matrix)


def _bilinear(self, x, size):
    rule = _image.rule_of(self.align_corners, self.half_pixel_centers)
    return _resize_nchw(type(self).__name__, x, size,
                        lambda n_in, n_out: _image.linear_matrix(n_in, n_out, rule, x.dtype))


ResizeBilinearV2 = _primitive(
    "ResizeBilinearV2", {"align_corners": False, "half_pixel_centers": False}, _bilinear,
    "ResizeBilinearV2(align_corners=False, half_pixel_centers=False)(x, size).",
    _check_corners)
ResizeBilinear = _primitive(
    "ResizeBilinear", {"size": None, "align_corners": False, "half_pixel_centers": False},
    lambda self, x: _bilinear(self, x, self.size),
    "ResizeBilinear(size, align_corners=False, half_pixel_centers=False)(x).", _check_corners)


def _nearest_v2(self, x, size):
    fname = "ResizeNearestNeighborV2"
    _check_rank(fname, "x", x, 4)
    for axis, n_out in zip((2, 3), _image.size_pair(fname, size)):
        index = _image.nearest_index(x.shape[axis], n_out, self.align_corners,
                                     self.half_pixel_centers)
        x = _ops.gather(x, index, axis)
    return x


ResizeNearestNeighborV2 = _primitive(
    "ResizeNearestNeighborV2", {"align_corners": False, "half_pixel_centers": False},
    _nearest_v2, "ResizeNearestNeighborV2(align_corners=False, half_pixel_centers=False)"
                 "(x, size): NCHW.", _check_corners)


def _bicubic(self, images, size):
    rule = _image.rule_of(self.align_corners, self.half_pixel_centers)
    return _resize_nchw("ResizeBicubic", images, size,
                        lambda n_in, n_out: _image.cubic_matrix(n_in, n_out, rule,
                                                                images.dtype))


ResizeBicubic = _primitive(
    "ResizeBicubic", {"align_corners": False, "half_pixel_centers": False}, _bicubic,
    "ResizeBicubic(align_corners=False, half_pixel_centers=False)(images, size): NCHW.",
    _check_corners)


def _area(self, images, size):
    """NHWC images, float32 out (MindSpore's ResizeArea)."""
    fname = "ResizeArea"
    _check_rank(fname, "images", images, 4)
    x = images.astype(float32) if images.dtype != float32 else images
    return _image.resize_axes(x, (1, 2), _image.size_pair(fname, size),
                              lambda n_in, n_out: _image.area_matrix(n_in, n_out,
                                                                     self.align_corners,
                                                                     float32))


ResizeArea = _primitive("ResizeArea", {"align_corners": False}, _area,
                        "ResizeArea(align_corners=False)(images, size): NHWC images, "
                        "float32 result.")


def _linear1d(self, x, size):
    fname = "ResizeLinear1D"
    _check_rank(fname, "x", x, 3)
    rule = self.coordinate_transformation_mode
    return _image.resize_axes(x, (2,), _image.size_pair(fname, size, 1),
                              lambda n_in, n_out: _image.linear_matrix(n_in, n_out, rule,
                                                                       x.dtype))


ResizeLinear1D = _primitive(
    "ResizeLinear1D", {"coordinate_transformation_mode": "align_corners"}, _linear1d,
    "ResizeLinear1D(coordinate_transformation_mode='align_corners')(x, size): (N, C, W).",
    lambda name, values: _check_choice(name, "coordinate_transformation_mode",
                                       values["coordinate_transformation_mode"],
                                       ("align_corners", "half_pixel", "asymmetric")))


def _upsample3d(mode):
    def call(self, x, output_size=None, scales=None):
        fname = type(self).__name__
        _check_rank(fname, "x", x, 5)
        size = self.output_size if output_size is None else output_size
        scale = self.scales if scales is None else scales
        if (size is None) == (scale is None):
            raise_error(ValueError, f"{fname}: give exactly one of output_size and scales")
        size = None if size is None else _int_tuple(fname, "output_size", size, 3)
        scale = None if scale is None else tuple(float(s) for s in scale)
        kwargs = {} if mode == "nearest" else {"align_corners": bool(self.align_corners)}
        return _ops_resize.interpolate(x, size, scale, mode, **kwargs)
    return call


UpsampleNearest3D = _primitive(
    "UpsampleNearest3D", {"output_size": None, "scales": None}, _upsample3d("nearest"),
    "UpsampleNearest3D()(x, output_size=None, scales=None): NCDHW (the sizes may also be "
    "given as attributes).")
UpsampleTrilinear3D = _primitive(
    "UpsampleTrilinear3D", {"output_size": None, "scales": None, "align_corners": False},
    _upsample3d("trilinear"), "UpsampleTrilinear3D(align_corners=False)(x, output_size=None, "
                              "scales=None): NCDHW.")


# ---- pooling, normalisation, convolution ---------------------------------------------------------

def _adaptive_max_2d(self, x):
    """(values, Int64 flat h * W + w index of each maximum) over adaptive windows."""
    fname = "AdaptiveMaxPool2D"
    check_tensor(fname, "x", x)
    if x.ndim not in (3, 4):
        raise_error(ValueError, f"{fname}: x must be 3-D or 4-D, got shape {tuple(x.shape)}")
    size = self.output_size
    size = (size, size) if isinstance(size, int) else tuple(size)
    if len(size) != 2:
        raise_error(ValueError, f"{fname}: output_size must be an int or 2 of them, got "
                                f"{self.output_size!r}")
    h, w = x.shape[-2:]
    out_h, out_w = (h if size[0] is None else size[0]), (w if size[1] is None else size[1])
    values = _ops_resize.adaptive_max_pool2d(x if x.ndim == 4 else _ops.unsqueeze(x, 0),
                                             (out_h, out_w))
    rows = []
    for top, bottom in _ops_resize._windows(h, out_h):
        cells = []
        for left, right in _ops_resize._windows(w, out_w):
            window = x[..., top:bottom, left:right]
            local = _ops.argmax(_ops.reshape(window, tuple(x.shape[:-2]) + (-1,)), -1)
            span = right - left
            cells.append((local // span + top) * w + local % span + left)
        rows.append(_ops.stack(tuple(cells), -1))
    indices = _ops.stack(tuple(rows), -2).astype(int64)
    return (values if x.ndim == 4 else values[0]), indices


AdaptiveMaxPool2D = _primitive("AdaptiveMaxPool2D", {"output_size": 1}, _adaptive_max_2d,
                               "AdaptiveMaxPool2D(output_size)(x): (values, Int64 argmax).")


def _max_with_argmax(self, x):
    """MaxPoolWithArgmax: (values, Int32 flat h * W + w index in the unpadded plane)."""
    fname = "MaxPoolWithArgmax"
    _check_rank(fname, "x", x, 4)
    kernel = _spatial(fname, "kernel_size", self.kernel_size, 2)
    stride = _spatial(fname, "strides", self.strides, 2)
    mode = _pad_mode(fname, self.pad_mode)
    pads = _window_pads(fname, mode, 0, x.shape[2:], kernel, stride, (1, 1))
    padded = _image.pad_spatial(x, pads, -math.inf)
    values = _ops.max_pool2d(padded, kernel, stride=stride)
    index = _fold.max_pool_indices(x, values, kernel, stride, (pads[0][0], pads[1][0]), (1, 1))
    return values, index.astype(int32)


MaxPoolWithArgmax = _primitive(
    "MaxPoolWithArgmax", {"kernel_size": 1, "strides": 1, "pad_mode": "valid",
                          "data_format": "NCHW"}, _max_with_argmax,
    "MaxPoolWithArgmax(kernel_size=1, strides=1, pad_mode='valid', data_format='NCHW')(x): "
    "(output, argmax).", _lower_pad_mode(_format_is("NCHW")))


def _max3d_argmax(self, x):
    """(values, flat d * H * W + h * W + w index of each maximum in the unpadded volume)."""
    fname = "MaxPool3DWithArgmax"
    _check_rank(fname, "x", x, 5)
    kernel = _spatial(fname, "ksize", self.ksize, 3)
    stride = _spatial(fname, "strides", self.strides, 3)
    dilation = _spatial(fname, "dilation", self.dilation, 3)
    pads = _explicit_pads(fname, self.pads, 3)
    if self.ceil_mode:
        extra = _ceil_extra(x.shape[2:], pads, kernel, stride, dilation)
        pads = tuple((lo, hi + e) for (lo, hi), e in zip(pads, extra))
    windows, out = _image.window_stack(_image.pad_spatial(x, pads, -math.inf), kernel, stride,
                                       dilation)
    values = _ops.max(windows, 2)
    offset = _ops.argmax(windows, 2)
    depth, height, width = x.shape[2:]
    place = []
    for axis, inner in enumerate((kernel[1] * kernel[2], kernel[2], 1)):
        k_index = (offset // inner) % kernel[axis]
        start = _ops.reshape(_ops.arange(out[axis]) * stride[axis] - pads[axis][0],
                             (-1,) + (1,) * (2 - axis))
        place.append(start + k_index * dilation[axis])
    index = (place[0] * height + place[1]) * width + place[2]
    return values, index.astype(self.argmax_type)


def _check_max3d_argmax(name, values):
    _format_is("NCDHW")(name, values)
    if values["argmax_type"] not in (int32, int64):
        raise ValueError(f"{name}: argmax_type must be int32 or int64, got "
                         f"{values['argmax_type']!r}")


MaxPool3DWithArgmax = _primitive(
    "MaxPool3DWithArgmax", {"ksize": 1, "strides": 1, "pads": 0, "dilation": (1, 1, 1),
                            "ceil_mode": False, "data_format": "NCDHW", "argmax_type": int64},
    _max3d_argmax, "MaxPool3DWithArgmax(ksize, strides, pads, dilation=(1, 1, 1), "
                   "ceil_mode=False, data_format='NCDHW', argmax_type=int64)(x): "
                   "(output, argmax).", _check_max3d_argmax)


def _pool3d_pads(fname, self, x, kernel, stride, pad):
    mode = _pad_mode(fname, self.pad_mode)
    pads = _window_pads(fname, mode, pad, x.shape[2:], kernel, stride, (1, 1, 1))
    extra = _ceil_extra(x.shape[2:], pads, kernel, stride, (1, 1, 1)) if self.ceil_mode \
        else (0, 0, 0)
    return pads, extra


def _max_pool3d(self, x):
    fname = "MaxPool3D"
    _check_rank(fname, "x", x, 5)
    kernel = _spatial(fname, "kernel_size", self.kernel_size, 3)
    stride = _spatial(fname, "strides", self.strides, 3)
    pads, extra = _pool3d_pads(fname, self, x, kernel, stride, self.pad_list)
    padded = _image.pad_spatial(x, tuple((lo, hi + e) for (lo, hi), e in zip(pads, extra)),
                                -math.inf)
    return _conv3d.max_pool3d(padded, kernel, stride)


MaxPool3D = _primitive(
    "MaxPool3D", {"kernel_size": 1, "strides": 1, "pad_mode": "VALID", "pad_list": 0,
                  "ceil_mode": None, "data_format": "NCDHW"}, _max_pool3d,
    "MaxPool3D(kernel_size=1, strides=1, pad_mode='VALID', pad_list=0, ceil_mode=None, "
    "data_format='NCDHW')(x).", _lower_pad_mode(_format_is("NCDHW")))


def _avg_pool3d(self, x):
    """Window sums over the padded input divided by the count of places that count:
    every padded place with count_include_pad, the real ones without, never ceil mode's
    overhang; divisor_override replaces the count."""
    fname = "AvgPool3D"
    _check_rank(fname, "x", x, 5)
    kernel = _spatial(fname, "kernel_size", self.kernel_size, 3)
    stride = _spatial(fname, "strides", self.strides, 3)
    pads, extra = _pool3d_pads(fname, self, x, kernel, stride, self.pad)
    full = tuple((lo, hi + e) for (lo, hi), e in zip(pads, extra))
    volume = kernel[0] * kernel[1] * kernel[2]
    sums = _conv3d.avg_pool3d(_image.pad_spatial(x, full, 0.0), kernel, stride) * volume
    if self.divisor_override:
        return sums / float(self.divisor_override)
    counted = _ops.ones((1, 1) + tuple(x.shape[2:]), dtype=x.dtype)
    if self.count_include_pad:
        counted = _image.pad_spatial(counted, pads, 1.0)
        full = tuple((0, e) for e in extra)
    counts = _conv3d.avg_pool3d(_image.pad_spatial(counted, full, 0.0), kernel, stride)
    return sums / (counts * volume)


AvgPool3D = _primitive(
    "AvgPool3D", {"kernel_size": 1, "strides": 1, "pad_mode": "valid", "pad": 0,
                  "ceil_mode": False, "count_include_pad": True, "divisor_override": 0,
                  "data_format": "NCDHW"}, _avg_pool3d,
    "AvgPool3D(kernel_size=1, strides=1, pad_mode='valid', pad=0, ceil_mode=False, "
    "count_include_pad=True, divisor_override=0, data_format='NCDHW')(x).",
    _lower_pad_mode(_format_is("NCDHW")))


def _batch_norm(self, x, scale, bias, mean, variance):
    """(y, batch_mean, batch_variance, reserve_space_1, reserve_space_2). Training normalises
    by the batch's statistics and updates mean and variance in place (new = (1 - momentum) *
    old + momentum * batch); inference uses mean and variance and passes them through."""
    fname = "BatchNorm"
    check_tensor(fname, "input_x", x)
    if x.ndim not in (2, 4):
        raise_error(ValueError, f"{fname}: input_x must be 2-D or 4-D (N, C, ...), got shape "
                                f"{tuple(x.shape)}")
    if not self.is_training:
        y = _ops.batch_norm(x, mean, variance, scale, bias, training=False, eps=self.epsilon)
        return y, mean, variance, mean, variance
    axes = (0,) if x.ndim == 2 else (0, 2, 3)
    batch_mean = _ops.mean(x, axes)
    batch_var = _ops.mean(_ops.square(x - _ops.reshape(batch_mean, (1, -1) + (1,) *
                                                       (x.ndim - 2))), axes)
    y = _ops.batch_norm(x, mean, variance, scale, bias, training=True,
                        momentum=self.momentum, eps=self.epsilon)
    return y, batch_mean, batch_var, batch_mean, batch_var


BatchNorm = _primitive(
    "BatchNorm", {"is_training": False, "epsilon": 1e-5, "momentum": 0.1,
                  "data_format": "NCHW"}, _batch_norm,
    "BatchNorm(is_training=False, epsilon=1e-5, momentum=0.1, data_format='NCHW')(input_x, "
    "scale, bias, mean, variance): (y, batch_mean, batch_variance, reserve_space_1, "
    "reserve_space_2).", _format_is("NCHW"))


def _conv2d_transpose(self, dout, weight, input_size):
    """The gradient of Conv2D with respect to its input: the transposed convolution without
    padding, cropped by the forward convolution's leading padding to input_size's (H, W)
    (places no window reached stay 0)."""
    fname = "Conv2DTranspose"
    _check_rank(fname, "dout", dout, 4)
    _check_rank(fname, "weight", weight, 4)
    size = _int_tuple(fname, "input_size", input_size, 4)
    kernel = tuple(weight.shape[2:])
    stride = _spatial(fname, "stride", self.stride, 2)
    dilation = _spatial(fname, "dilation", self.dilation, 2)
    mode = _pad_mode(fname, self.pad_mode)
    pad = self.pad_list if self.pad_list is not None else self.pad
    pads = _window_pads(fname, mode, pad, size[2:], kernel, stride, dilation)
    full = _ops.conv_transpose2d(dout, weight, stride=stride, dilation=dilation,
                                 groups=self.group)
    kept = tuple(max(min(covered - lo, n), 0) for covered, (lo, _), n in
                 zip(full.shape[2:], pads, size[2:]))
    out = full[:, :, pads[0][0]:pads[0][0] + kept[0], pads[1][0]:pads[1][0] + kept[1]]
    if kept != size[2:]:
        out = _ops_composed.pad(out, ((0, 0), (0, 0), (0, size[2] - kept[0]),
                                      (0, size[3] - kept[1])))
    return out


Conv2DTranspose = _primitive(
    "Conv2DTranspose", {"out_channel": 1, "kernel_size": 1, "pad_mode": "valid", "pad": 0,
                        "pad_list": None, "mode": 1, "stride": 1, "dilation": 1, "group": 1,
                        "data_format": "NCHW"}, _conv2d_transpose,
    "Conv2DTranspose(out_channel, kernel_size, pad_mode='valid', pad=0, pad_list=None, mode=1, "
    "stride=1, dilation=1, group=1, data_format='NCHW')(dout, weight, input_size).",
    _lower_pad_mode(_format_is("NCHW")))


# ---- colour ----------------------------------------------------------------------------------------

def _hsv_to_rgb(self, x):
    _image.check_rgb("HSVToRGB", x, 4)
    return _image.hsv_to_rgb(x)


def _rgb_to_hsv(self, images):
    _image.check_rgb("RGBToHSV", images)
    return _image.rgb_to_hsv(images)


def _scalar(value):
    return value.astype(float32) if isinstance(value, Tensor) else float(value)


def _adjust_hue(self, image, delta):
    """The hue turned by delta (wrapping around 1)."""
    _image.check_rgb("AdjustHue", image)
    hsv = _image.rgb_to_hsv(image)
    hue = hsv[..., 0] + _scalar(delta)
    hue = hue - _ops.floor(hue)
    return _image.hsv_to_rgb(_ops.stack((hue, hsv[..., 1], hsv[..., 2]), -1))


def _adjust_saturation(self, image, scale):
    """The saturation multiplied by scale, kept in [0, 1]."""
    _image.check_rgb("AdjustSaturation", image)
    hsv = _image.rgb_to_hsv(image)
    saturation = _ops.clamp(hsv[..., 1] * _scalar(scale), 0.0, 1.0)
    return _image.hsv_to_rgb(_ops.stack((hsv[..., 0], saturation, hsv[..., 2]), -1))


HSVToRGB = _primitive("HSVToRGB", {}, _hsv_to_rgb, "HSVToRGB()(x): (N, H, W, 3) HSV to RGB.")
RGBToHSV = _primitive("RGBToHSV", {}, _rgb_to_hsv, "RGBToHSV()(images): (..., 3) RGB to HSV.")
AdjustHue = _primitive("AdjustHue", {}, _adjust_hue, "AdjustHue()(image, delta): (..., 3) RGB.")
AdjustSaturation = _primitive("AdjustSaturation", {}, _adjust_saturation,
                              "AdjustSaturation()(image, scale): (..., 3) RGB.")


# ---- boxes -----------------------------------------------------------------------------------------

CropAndResize = _primitive(
    "CropAndResize", {"method": "bilinear", "extrapolation_value": 0.0},
    lambda self, x, boxes, box_index, crop_size: _image.crop_and_resize(
        x, boxes, box_index, crop_size, self.method, self.extrapolation_value),
    "CropAndResize(method='bilinear', extrapolation_value=0.0)(x, boxes, box_index, "
    "crop_size): NHWC crops, float32.",
    lambda name, values: _check_choice(name, "method", values["method"],
                                       ("bilinear", "nearest")))
BoundingBoxEncode = _primitive(
    "BoundingBoxEncode", {"means": (0.0, 0.0, 0.0, 0.0), "stds": (1.0, 1.0, 1.0, 1.0)},
    lambda self, anchor_box, groundtruth_box: _image.bounding_box_encode(
        anchor_box, groundtruth_box, self.means, self.stds),
    "BoundingBoxEncode(means=(0.0, 0.0, 0.0, 0.0), stds=(1.0, 1.0, 1.0, 1.0))(anchor_box, "
    "groundtruth_box).")
BoundingBoxDecode = _primitive(
    "BoundingBoxDecode", {"max_shape": None, "means": (0.0, 0.0, 0.0, 0.0),
                          "stds": (1.0, 1.0, 1.0, 1.0), "wh_ratio_clip": 0.016},
    lambda self, anchor_box, deltas: _image.bounding_box_decode(
        anchor_box, deltas, self.max_shape, self.means, self.stds, self.wh_ratio_clip),
    "BoundingBoxDecode(max_shape, means=(0.0, 0.0, 0.0, 0.0), stds=(1.0, 1.0, 1.0, 1.0), "
    "wh_ratio_clip=0.016)(anchor_box, deltas).")
CheckValid = _primitive("CheckValid", {},
                        lambda self, bboxes, img_metas: _image.check_valid(bboxes, img_metas),
                        "CheckValid()(bboxes, img_metas): Bool (N,).")


# ---- patches -----------------------------------------------------------------------------------------

def _im2col(self, x):
    """(N, C, H, W) -> (N, C, kh * kw, L) sliding blocks (Col2Im's adjoint)."""
    fname = "Im2Col"
    _check_rank(fname, "x", x, 4)
    kernel = _int_tuple(fname, "ksizes", self.ksizes, 2)
    stride = _int_tuple(fname, "strides", self.strides, 2)
    dilation = _int_tuple(fname, "dilations", self.dilations, 2)
    pads = self.pads
    pads = (pads,) * 2 if isinstance(pads, int) else tuple(pads)
    if len(pads) == 2:
        pads = (pads[0], pads[0], pads[1], pads[1])
    pads = _explicit_pads(fname, pads, 2)
    cols = _fold.unfold(_image.pad_spatial(x, pads, 0.0), kernel, dilation, 0, stride)
    n, c = x.shape[:2]
    return _ops.reshape(cols, (n, c, kernel[0] * kernel[1], -1))


Im2Col = _primitive("Im2Col", {"ksizes": 1, "strides": 1, "dilations": 1, "pads": 0}, _im2col,
                    "Im2Col(ksizes, strides=1, dilations=1, pads=0)(x): (N, C, kh * kw, L).")
Col2Im = _primitive(
    "Col2Im", {"kernel_size": 1, "dilation": 1, "padding": 0, "stride": 1},
    lambda self, x, output_size: _image.col2im(x, output_size, self.kernel_size,
                                               self.dilation, self.padding, self.stride),
    "Col2Im(kernel_size, dilation=1, padding=0, stride=1)(x, output_size).")


def _volume_patches(self, x):
    """(N, C, D, H, W) -> (N, kd * kh * kw * C, D', H', W'), channel k * C + c holding
    kernel offset k of channel c."""
    fname = "ExtractVolumePatches"
    _check_rank(fname, "input_x", x, 5)
    kernel = _spatial(fname, "kernel_size", self.kernel_size, 3)
    stride = _spatial(fname, "strides", self.strides, 3)
    pads = _image.same_pads(x.shape[2:], kernel, stride, (1, 1, 1)) if self.padding == "SAME" \
        else ((0, 0),) * 3
    windows, out = _image.window_stack(_image.pad_spatial(x, pads, 0.0), kernel, stride,
                                       (1, 1, 1))  # (N, C, K, D', H', W')
    n, c = x.shape[:2]
    return _ops.reshape(_ops.transpose(windows, (0, 2, 1, 3, 4, 5)), (n, -1) + tuple(out))


def _check_volume_padding(name, values):
    """padding in upper case (MindSpore accepts either)."""
    values["padding"] = str(values["padding"]).upper()
    _check_choice(name, "padding", values["padding"], ("VALID", "SAME"))


ExtractVolumePatches = _primitive(
    "ExtractVolumePatches", {"kernel_size": 1, "strides": 1, "padding": "VALID"},
    _volume_patches, "ExtractVolumePatches(kernel_size, strides, padding='VALID')(input_x).",
    _check_volume_padding)


def _dilation2d(self, x, filter):  # noqa: A002 - MindSpore's name
    """Grey-scale dilation: out[n, c, i, j] = max over (a, b) of
    x[n, c, i * s + a * d, j * s + b * d] + filter[c, a, b] (padding never wins)."""
    fname = "Dilation2D"
    _check_rank(fname, "x", x, 4)
    _check_rank(fname, "filter", filter, 3)
    if filter.shape[0] != x.shape[1]:
        raise_error(ValueError, f"{fname}: filter must be (C, kh, kw) with C = {x.shape[1]}, "
                                f"got {tuple(filter.shape)}")
    kernel = tuple(filter.shape[1:])
    stride = _spatial(fname, "stride", self.stride, 2)
    dilation = _spatial(fname, "dilation", self.dilation, 2)
    mode = _pad_mode(fname, self.pad_mode)
    pads = _window_pads(fname, mode, 0, x.shape[2:], kernel, stride, dilation)
    windows, _ = _image.window_stack(_image.pad_spatial(x, pads, -math.inf), kernel, stride,
                                     dilation)  # (N, C, K, H', W')
    offsets = _ops.reshape(filter, (1, x.shape[1], -1, 1, 1))
    return _ops.max(windows + offsets, 2)


def _check_dilation2d(name, values):
    _format_is("NCHW")(name, values)
    _check_choice(name, "pad_mode", values["pad_mode"], ("same", "valid"))


Dilation2D = _primitive(
    "Dilation2D", {"stride": 1, "dilation": 1, "pad_mode": "SAME", "data_format": "NCHW"},
    _dilation2d, "Dilation2D(stride, dilation, pad_mode='SAME', data_format='NCHW')"
                 "(x, filter).", _lower_pad_mode(_check_dilation2d))

__all__ = ["AdaptiveMaxPool2D", "AdjustHue", "AdjustSaturation", "AvgPool3D", "BatchNorm",
           "BatchToSpace", "BoundingBoxDecode", "BoundingBoxEncode", "CheckValid", "Col2Im",
           "Conv2DTranspose", "CropAndResize", "DataFormatDimMap", "DataFormatVecPermute",
           "DepthToSpace", "Dilation2D", "ExtractVolumePatches", "HSVToRGB", "Im2Col",
           "MaxPool3D", "MaxPool3DWithArgmax", "MaxPoolWithArgmax", "PadV3", "RGBToHSV",
           "ResizeArea", "ResizeBicubic", "ResizeBilinear", "ResizeBilinearV2",
           "ResizeLinear1D", "ResizeNearestNeighborV2", "SpaceToDepth", "UpsampleNearest3D",
           "UpsampleTrilinear3D"]
