"""Image ops and primitives with MindSpore's names: crop_and_resize, col2im, the bounding-box
functions, the resize primitives (TensorFlow's coordinate rules), layout primitives and colour
conversions. Each is compared with a NumPy reference written here, eagerly and jitted as one
graph, the differentiable ones with central finite differences in float64."""
import math

import numpy as np
import pytest

import pijit as ms
from pijit import ops
from mint_testutil import T, flat, grad_matches, same


def rng(shape, seed=0, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, shape)


def jit_same(fn, *args):
    """fn captured by the bytecode JIT without a graph break gives fn's eager result."""
    eager = fn(*args)
    jf = ms.jit(lambda *a: fn(*a), capture_mode="bytecode")
    ms.reset(jf)
    got = jf(*args)
    stats = ms.get_code_extra(jf)
    assert stats["total_break_count"] == 0, stats["all_reasons"]
    for e, g in zip(flat(eager), flat(got), strict=True):
        assert e.dtype == g.dtype and e.shape == g.shape
        np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-12, atol=1e-12)
    return eager


# ---- NumPy references ------------------------------------------------------------------------------

def ref_source(i, n_in, n_out, rule):
    if rule == "align_corners":
        scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        scale = n_in / n_out
    return (i + 0.5) * scale - 0.5 if rule == "half_pixel" else i * scale


def ref_linear_1d(x, n_out, rule):
    """Linear resize of the last axis, sampling each output independently."""
    n_in = x.shape[-1]
    out = np.empty(x.shape[:-1] + (n_out,))
    for i in range(n_out):
        src = ref_source(i, n_in, n_out, rule)
        lo = math.floor(src)
        f = src - lo
        a, b = min(max(lo, 0), n_in - 1), min(max(lo + 1, 0), n_in - 1)
        out[..., i] = x[..., a] * (1 - f) + x[..., b] * f
    return out


def ref_cubic_1d(x, n_out, rule):
    n_in = x.shape[-1]
    a = -0.5 if rule == "half_pixel" else -0.75

    def kernel(d):
        d = abs(d)
        if d <= 1:
            return (a + 2) * d ** 3 - (a + 3) * d ** 2 + 1
        return a * d ** 3 - 5 * a * d ** 2 + 8 * a * d - 4 * a if d < 2 else 0.0

    out = np.zeros(x.shape[:-1] + (n_out,))
    for i in range(n_out):
        src = ref_source(i, n_in, n_out, rule)
        lo = math.floor(src)
        taps = [(t, kernel(src - t)) for t in range(lo - 1, lo + 3)]
        if rule == "half_pixel":
            taps = [(t, w) for t, w in taps if 0 <= t < n_in]
            total = sum(w for _, w in taps)
            taps = [(t, w / total) for t, w in taps]
        for t, w in taps:
            out[..., i] += w * x[..., min(max(t, 0), n_in - 1)]
    return out


def ref_rgb_to_hsv(rgb):
    out = np.empty_like(rgb)
    for idx in np.ndindex(*rgb.shape[:-1]):
        r, g, b = rgb[idx]
        v, lo = max(r, g, b), min(r, g, b)
        d = v - lo
        s = d / v if v > 0 else 0.0
        if d == 0:
            h = 0.0
        elif v == r:
            h = ((g - b) / d) / 6
        elif v == g:
            h = (2 + (b - r) / d) / 6
        else:
            h = (4 + (r - g) / d) / 6
        out[idx] = (h + 1 if h < 0 else h, s, v)
    return out


def ref_hsv_to_rgb(hsv):
    out = np.empty_like(hsv)
    for idx in np.ndindex(*hsv.shape[:-1]):
        h, s, v = hsv[idx]
        sector = (h * 6) % 6
        i, f = int(sector), sector - int(sector)
        p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
        out[idx] = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)][i]
    return out


# ---- resize ----------------------------------------------------------------------------------------

def ref_resize(one_axis, x, size, align, half):
    """NCHW `x` resized to `size` by the 1-D reference `one_axis` along the width, then the
    height, under the coordinate rule that (align_corners, half_pixel) choose."""
    rule = "align_corners" if align else ("half_pixel" if half else "asymmetric")
    height, width = size
    return np.swapaxes(one_axis(np.swapaxes(one_axis(x, width, rule), 2, 3), height, rule), 2, 3)


# (primitive, 1-D reference, input shape, output size); bicubic is Keys' cubic convolution.
RESIZES = {"bilinear": (ops.ResizeBilinearV2, ref_linear_1d, (2, 3, 4, 5), (3, 7)),
           "bicubic": (ops.ResizeBicubic, ref_cubic_1d, (1, 2, 4, 5), (6, 8))}


@pytest.mark.parametrize("align,half", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("kind", RESIZES)
def test_resize_follows_each_coordinate_rule(kind, align, half):
    primitive, one_axis, shape, size = RESIZES[kind]
    x = rng(shape)
    want = ref_resize(one_axis, x, size, align, half)
    prim = primitive(align, half)
    same(jit_same(lambda t: prim(t, size), T(x)), want)
    if kind == "bilinear":  # ResizeBilinear, the first version, takes the size at construction
        same(ops.ResizeBilinear(size, align, half)(T(x)), want)


def test_resize_bilinear_gradient_and_errors():
    grad_matches(lambda t: ops.ResizeBilinearV2(False, True)(t, (3, 4)), rng((1, 1, 2, 3)))
    with pytest.raises(ValueError, match="ResizeBilinearV2: align_corners and half_pixel"):
        ops.ResizeBilinearV2(True, True)
    with pytest.raises(ValueError, match="ResizeBilinearV2: x must be 4-D"):
        ops.ResizeBilinearV2()(T(rng((3, 4))), (2, 2))
    with pytest.raises(ValueError, match="size must be"):
        ops.ResizeBilinearV2()(T(rng((1, 1, 3, 4))), (0, 2))


@pytest.mark.parametrize("align,half", [(False, False), (True, False), (False, True)])
def test_resize_nearest_neighbor_v2_picks_tensorflow_sources(align, half):
    x = rng((1, 2, 5, 3))

    def source(n_in, n_out):
        scale = (n_in - 1) / (n_out - 1) if align and n_out > 1 else n_in / n_out
        src = [(i + 0.5 * half) * scale for i in range(n_out)]
        return [min(int(math.floor(s + 0.5)) if align else int(math.floor(s)), n_in - 1)
                for s in src]

    want = x[:, :, source(5, 3)][:, :, :, source(3, 7)]
    prim = ops.ResizeNearestNeighborV2(align, half)
    same(jit_same(lambda t: prim(t, (3, 7)), T(x)), want)


def test_resize_bicubic_gradient_and_mindspore_example():
    images = T(np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 2, 2))
    same(ops.ResizeBicubic()(images, (1, 4)),
         np.array([1, 1.5, 2, 2.09375], np.float32).reshape(1, 1, 1, 4))
    grad_matches(lambda t: ops.ResizeBicubic(False, True)(t, (3, 5)), rng((1, 1, 2, 3)))


def test_resize_area_averages_covered_fractions():
    x = rng((2, 4, 6, 3))

    def area(v, axis, n_out):
        n_in = v.shape[axis]
        scale = n_in / n_out
        out = []
        for i in range(n_out):
            total = 0.0
            for j in range(math.floor(i * scale), math.ceil((i + 1) * scale)):
                cover = min(j + 1, (i + 1) * scale) - max(j, i * scale)
                total = total + cover * np.take(v, min(j, n_in - 1), axis)
            out.append(total / scale)
        return np.stack(out, axis)

    want = area(area(x, 1, 3), 2, 4).astype(np.float32)
    same(jit_same(lambda t: ops.ResizeArea()(t, (3, 4)), T(x)), want, rtol=1e-5)
    example = T(np.array([2, 4, 6, 8, 10, 12, 14, 16], np.float16).reshape(1, 2, 4, 1))
    same(ops.ResizeArea()(example, (1, 2)), np.array([7, 11], np.float32).reshape(1, 1, 2, 1))


@pytest.mark.parametrize("mode", ["align_corners", "half_pixel", "asymmetric"])
def test_resize_linear_1d(mode):
    x = rng((2, 3, 5))
    prim = ops.ResizeLinear1D(mode)
    same(jit_same(lambda t: prim(t, (8,)), T(x)), ref_linear_1d(x, 8, mode))
    with pytest.raises(ValueError, match="coordinate_transformation_mode must be one of"):
        ops.ResizeLinear1D("nearest")


def test_upsample_3d_nearest_and_trilinear():
    x = rng((1, 2, 2, 3, 4))
    idx = [np.floor(np.arange(o) * n / o).astype(int) for n, o in zip((2, 3, 4), (4, 3, 6))]
    want = x[:, :, idx[0]][:, :, :, idx[1]][:, :, :, :, idx[2]]
    same(jit_same(lambda t: ops.UpsampleNearest3D()(t, (4, 3, 6)), T(x)), want)
    tri = ops.UpsampleTrilinear3D(align_corners=True)(T(x), (3, 5, 4))
    want = x
    for axis, n in ((2, 3), (3, 5), (4, 4)):
        want = np.moveaxis(ref_linear_1d(np.moveaxis(want, axis, -1), n, "align_corners"), -1,
                           axis)
    same(tri, want)
    grad_matches(lambda t: ops.UpsampleTrilinear3D()(t, scales=(2.0, 1.0, 1.5)),
                 rng((1, 1, 2, 2, 2)))
    with pytest.raises(ValueError, match="UpsampleNearest3D: give exactly one"):
        ops.UpsampleNearest3D()(T(x))


# ---- layout ----------------------------------------------------------------------------------------

def test_depth_to_space_and_space_to_depth_use_tensorflow_order():
    x = rng((2, 12, 2, 3))
    b, c = 2, 3
    want = np.zeros((2, c, 4, 6))
    for i in range(b):
        for j in range(b):
            want[:, :, i::b, j::b] = x[:, (i * b + j) * c:(i * b + j + 1) * c]
    same(jit_same(ops.DepthToSpace(2), T(x)), want)
    same(jit_same(ops.SpaceToDepth(2), T(want)), x)
    grad_matches(ops.DepthToSpace(2), rng((1, 4, 1, 2)))
    with pytest.raises(ValueError, match="DepthToSpace: data_format must be 'NCHW'"):
        ops.DepthToSpace(2, "NHWC")
    with pytest.raises(ValueError, match="not divisible by block_size"):
        ops.DepthToSpace(2)(T(rng((1, 6, 2, 2))))


def test_batch_to_space_crops():
    x = rng((4, 1, 2, 3))
    want = np.zeros((1, 1, 4, 6))
    for i in range(2):
        for j in range(2):
            want[0, :, i::2, j::2] = x[i * 2 + j]
    same(jit_same(ops.BatchToSpace(2, ((0, 1), (1, 0))), T(x)), want[:, :, 0:3, 1:6])


def test_data_format_dim_map_and_vec_permute():
    src, dst = "NHWC", "NCHW"
    x = np.array([-4, 3, -1, 2, 0], np.int32)
    want = np.array([dst.index(src[v % 4]) for v in x], np.int32)
    same(jit_same(ops.DataFormatDimMap(), T(x)), want)
    vec = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], np.int32)
    same(jit_same(ops.DataFormatVecPermute(), T(vec)), vec[[0, 3, 1, 2]])
    same(ops.DataFormatVecPermute("NCHW", "NHWC")(T(np.array([1, 2, 3, 4], np.int32))),
         np.array([1, 3, 4, 2], np.int32))
    with pytest.raises(ValueError, match="DataFormatDimMap: src_format and dst_format"):
        ops.DataFormatDimMap("NHWC", "NCH")
    with pytest.raises(ValueError, match="DataFormatVecPermute: input_x must be"):
        ops.DataFormatVecPermute()(T(np.arange(3, dtype=np.int32)))


@pytest.mark.parametrize("mode,np_mode", [("constant", "constant"), ("reflect", "reflect"),
                                          ("edge", "edge"), ("circular", "wrap")])
def test_pad_v3_modes(mode, np_mode):
    x = rng((2, 3, 4))
    paddings = (1, 2, 2, 1)  # last axis (1, 2), middle axis (2, 1)
    want = np.pad(x, ((0, 0), (2, 1), (1, 2)), np_mode)
    same(jit_same(lambda t: ops.PadV3(mode)(t, paddings), T(x)), want)
    same(ops.PadV3(mode, False)(T(x), (1, 2, 2, 1)),
         np.pad(x, ((0, 0), (2, 1), (1, 2)), np_mode))


def test_pad_v3_value_gradient_and_errors():
    same(ops.PadV3()(T(np.zeros((1, 2))), (1, 0), 5.0), np.array([[5.0, 0, 0]]))
    grad_matches(lambda t: ops.PadV3("reflect")(t, (1, 2)), rng((2, 4)))
    with pytest.raises(ValueError, match="PadV3: mode must be one of"):
        ops.PadV3("wrap")
    with pytest.raises(ValueError, match="PadV3: paddings must hold"):
        ops.PadV3()(T(rng((2, 2))), (1, 2, 3))


# ---- colour ----------------------------------------------------------------------------------------

def test_rgb_hsv_round_trip_and_references():
    rgb = rng((2, 3, 4, 3), low=0.0, high=1.0)
    rgb[0, 0, 0] = (0.3, 0.3, 0.3)  # grey: no hue, no saturation
    hsv = ref_rgb_to_hsv(rgb)
    same(jit_same(ops.RGBToHSV(), T(rgb)), hsv, atol=1e-12)
    same(jit_same(ops.HSVToRGB(), T(hsv)), ref_hsv_to_rgb(hsv), atol=1e-12)
    grad_matches(ops.HSVToRGB(), rng((1, 1, 2, 3), low=0.1, high=0.9))
    with pytest.raises(ValueError, match="HSVToRGB: images must be 4-D with a last axis of 3"):
        ops.HSVToRGB()(T(rng((2, 4))))


def test_adjust_hue_and_saturation():
    rgb = rng((3, 4, 3), 1, low=0.0, high=1.0)
    hsv = ref_rgb_to_hsv(rgb)
    turned = hsv.copy()
    turned[..., 0] = (hsv[..., 0] + 0.3) % 1.0
    same(jit_same(lambda t: ops.AdjustHue()(t, 0.3), T(rgb)), ref_hsv_to_rgb(turned),
         atol=1e-12)
    scaled = hsv.copy()
    scaled[..., 1] = np.clip(hsv[..., 1] * 1.7, 0, 1)
    same(jit_same(lambda t: ops.AdjustSaturation()(t, 1.7), T(rgb)), ref_hsv_to_rgb(scaled),
         atol=1e-12)
    example = T(np.array([[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]], np.float32))
    same(ops.AdjustHue()(example, T(np.float32(0.2))),
         np.array([[[2.4, 1.0, 3.0], [5.4, 4.0, 6.0]]], np.float32), rtol=1e-5)
    with pytest.raises(ValueError, match="AdjustSaturation: images must be"):
        ops.AdjustSaturation()(T(rng((2, 2))), 0.5)


# ---- crops and boxes -------------------------------------------------------------------------------

def ref_crop_and_resize(image, boxes, box_index, crop, method, extrapolation):
    _, height, width, depth = image.shape
    out = np.zeros((len(boxes), crop[0], crop[1], depth))
    for k, ((y1, x1, y2, x2), b) in enumerate(zip(boxes, box_index)):
        for i in range(crop[0]):
            y = (y1 * (height - 1) + i * (y2 - y1) * (height - 1) / (crop[0] - 1)
                 if crop[0] > 1 else 0.5 * (y1 + y2) * (height - 1))
            for j in range(crop[1]):
                x = (x1 * (width - 1) + j * (x2 - x1) * (width - 1) / (crop[1] - 1)
                     if crop[1] > 1 else 0.5 * (x1 + x2) * (width - 1))
                if not (0 <= y <= height - 1 and 0 <= x <= width - 1):
                    out[k, i, j] = extrapolation
                elif method == "nearest":
                    out[k, i, j] = image[b, int(math.floor(y + 0.5)), int(math.floor(x + 0.5))]
                else:
                    t, l_ = math.floor(y), math.floor(x)
                    bt, r = math.ceil(y), math.ceil(x)
                    fy, fx = y - t, x - l_
                    top = image[b, t, l_] + (image[b, t, r] - image[b, t, l_]) * fx
                    bot = image[b, bt, l_] + (image[b, bt, r] - image[b, bt, l_]) * fx
                    out[k, i, j] = top + (bot - top) * fy
    return out


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
def test_crop_and_resize_against_reference(method):
    image = rng((2, 5, 6, 3))
    boxes = np.array([[0.1, 0.2, 0.8, 0.9], [0.9, 0.0, 0.2, 0.5], [-0.2, 0.3, 0.6, 1.3]])
    index = np.array([1, 0, 1], np.int32)
    want = ref_crop_and_resize(image, boxes, index, (4, 3), method, -1.0).astype(np.float32)
    fn = lambda img, bx, ix: ops.crop_and_resize(img, bx, ix, (4, 3), method, -1.0)  # noqa: E731
    same(jit_same(fn, T(image), T(boxes), T(index)), want, rtol=1e-5, atol=1e-6)
    prim = ops.CropAndResize(method, -1.0)
    same(prim(T(image), T(boxes), T(index), (4, 3)), want, rtol=1e-5, atol=1e-6)
    single = ref_crop_and_resize(image, boxes, index, (1, 1), method, 0.0).astype(np.float32)
    same(ops.crop_and_resize(T(image), T(boxes), T(index), (1, 1), method), single, rtol=1e-5)


def test_crop_and_resize_gradient_and_errors():
    boxes = T(np.array([[0.1, 0.2, 0.8, 0.7]]))
    index = T(np.array([0], np.int32))
    grad_matches(lambda t: ops.crop_and_resize(t, boxes, index, (3, 2)).astype(ms.float64),
                 rng((1, 4, 4, 1)), eps=1e-2, rtol=1e-4, atol=1e-4)  # float32 output
    with pytest.raises(ValueError, match="crop_and_resize: method must be one of"):
        ops.crop_and_resize(T(rng((1, 4, 4, 1))), boxes, index, (2, 2), "bilinear_v2")
    with pytest.raises(ValueError, match="crop_and_resize: image must be 4-D"):
        ops.crop_and_resize(T(rng((4, 4, 1))), boxes, index, (2, 2))
    with pytest.raises(IndexError, match="out of bounds"):
        ops.crop_and_resize(T(rng((1, 4, 4, 1))), boxes, T(np.array([3], np.int32)), (2, 2))


def test_col2im_sums_unfolded_blocks():
    x = rng((2, 3, 4, 9))  # kernel (2, 2), output (4, 5), padding 1, stride 2 -> 3 x 3
    out_h, out_w, kh, kw, pad, stride = 4, 5, 2, 2, 1, 2
    want = np.zeros((2, 3, out_h + 2 * pad, out_w + 2 * pad))
    cols = x.reshape(2, 3, kh, kw, 3, 3)
    for a in range(kh):
        for b in range(kw):
            for i in range(3):
                for j in range(3):
                    want[:, :, i * stride + a, j * stride + b] += cols[:, :, a, b, i, j]
    want = want[:, :, pad:pad + out_h, pad:pad + out_w]
    fn = lambda t: ops.col2im(t, T(np.array([4, 5], np.int32)), 2, 1, 1, 2)  # noqa: E731
    same(fn(T(x)), want)
    same(jit_same(lambda t: ops.Col2Im(2, 1, 1, 2)(t, (4, 5)), T(x)), want)
    with pytest.raises(ValueError, match="col2im: input_x's axis 2"):
        ops.col2im(T(rng((1, 1, 3, 9))), (4, 5), 2, 1, 1, 2)


def ref_encode(anchor, gt, means, stds):
    def parts(b):
        return ((b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2, b[:, 2] - b[:, 0] + 1,
                b[:, 3] - b[:, 1] + 1)
    px, py, pw, ph = parts(anchor)
    gx, gy, gw, gh = parts(gt)
    d = np.stack([(gx - px) / pw, (gy - py) / ph, np.log(gw / pw), np.log(gh / ph)], 1)
    return (d - np.array(means)) / np.array(stds)


def ref_decode(anchor, deltas, max_shape, means, stds, clip):
    d = deltas * np.array(stds) + np.array(means)
    limit = abs(np.log(clip))
    dw, dh = np.clip(d[:, 2], -limit, limit), np.clip(d[:, 3], -limit, limit)
    px, py = (anchor[:, 0] + anchor[:, 2]) / 2, (anchor[:, 1] + anchor[:, 3]) / 2
    pw, ph = anchor[:, 2] - anchor[:, 0] + 1, anchor[:, 3] - anchor[:, 1] + 1
    gx, gy, gw, gh = px + pw * d[:, 0], py + ph * d[:, 1], pw * np.exp(dw), ph * np.exp(dh)
    out = np.stack([gx - gw / 2 + 0.5, gy - gh / 2 + 0.5, gx + gw / 2 - 0.5, gy + gh / 2 - 0.5], 1)
    out[:, 0::2] = np.clip(out[:, 0::2], 0, max_shape[1] - 1)
    out[:, 1::2] = np.clip(out[:, 1::2], 0, max_shape[0] - 1)
    return out


def test_bounding_box_encode_and_decode():
    anchor = np.array([[2.0, 3.0, 10.0, 12.0], [0.0, 0.0, 4.0, 5.0], [5.0, 1.0, 9.0, 20.0]])
    gt = np.array([[1.0, 4.0, 11.0, 10.0], [1.0, 1.0, 3.0, 8.0], [4.0, 0.0, 10.0, 18.0]])
    means, stds = (0.1, -0.1, 0.0, 0.2), (0.5, 0.5, 1.0, 2.0)
    enc = jit_same(lambda a, g: ops.bounding_box_encode(a, g, means, stds), T(anchor), T(gt))
    same(enc, ref_encode(anchor, gt, means, stds))
    same(ops.BoundingBoxEncode(means, stds)(T(anchor), T(gt)), ref_encode(anchor, gt, means, stds))
    deltas = np.array([[0.1, -0.2, 0.3, 5.0], [0.0, 0.4, -6.0, 0.1], [1.0, 1.0, 0.2, 0.2]])
    want = ref_decode(anchor, deltas, (15, 12), means, stds, 0.016)
    dec = jit_same(lambda a, d: ops.bounding_box_decode(a, d, (15, 12), means, stds), T(anchor),
                   T(deltas))
    same(dec, want)
    same(ops.BoundingBoxDecode((15, 12), means, stds)(T(anchor), T(deltas)), want)
    # decode undoes encode for boxes inside the image
    same(ops.bounding_box_decode(T(anchor), enc, (100, 100), means, stds), gt, atol=1e-9)
    grad_matches(lambda t: ops.bounding_box_encode(T(anchor), t), gt)
    grad_matches(lambda t: ops.bounding_box_decode(T(anchor), t, (100, 100)), deltas * 0.1)
    with pytest.raises(ValueError, match="bounding_box_encode: anchor_box must be \\(N, 4\\)"):
        ops.bounding_box_encode(T(rng((3, 3))), T(gt))
    with pytest.raises(ValueError, match="bounding_box_decode: anchor_box and deltas"):
        ops.bounding_box_decode(T(anchor), T(deltas[:2]), (15, 12))


def test_check_valid():
    boxes = np.array([[0.0, 0.0, 9.0, 19.0], [-1.0, 0.0, 5.0, 5.0], [0.0, 0.0, 10.0, 5.0],
                      [1.0, 2.0, 3.0, 20.0]], np.float32)
    metas = np.array([20.0, 10.0, 1.0], np.float32)
    want = np.array([True, False, False, False])
    same(jit_same(ops.check_valid, T(boxes), T(metas)), want)
    same(ops.CheckValid()(T(boxes), T(np.array([10.0, 5.0, 2.0], np.float32))), want)
    with pytest.raises(ValueError, match="check_valid: img_metas must hold"):
        ops.check_valid(T(boxes), T(metas[:2]))
