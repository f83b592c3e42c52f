"""SSIM, MSSSIM, Unfold, ResizeBilinear, Conv3dTranspose, MultiFieldEmbeddingLookup and
SyncBatchNorm (pijit/nn/layers/image.py, image_more.py) against NumPy references written here
in float64, MindSpore's documented examples, jitted (bytecode capture, one graph) equal to
eager, gradients against central finite differences, and bad arguments raising errors that
name the layer and the argument."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn
from pijit.nn.layers.image_more import conv3d_transpose
from mint_testutil import T, grad_matches, jitted_equals_eager
from test_image_ops import ref_linear_1d, ref_resize

R = np.random.default_rng(31)


# --- SSIM and MS-SSIM -----------------------------------------------------------------------

def _window(size, sigma):
    o = np.arange(-size // 2 + 1, size // 2 + 1)
    g = np.exp(-(o[:, None] ** 2 + o[None, :] ** 2) / (2 * sigma ** 2))
    return g / g.sum()


def _filter_valid(img, win):
    k = win.shape[0]
    h, w = img.shape[-2] - k + 1, img.shape[-1] - k + 1
    out = np.zeros(img.shape[:-2] + (h, w))
    for i in range(k):
        for j in range(k):
            out += win[i, j] * img[..., i:i + h, j:j + w]
    return out


def _ssim_reference(x, y, max_val=1.0, size=11, sigma=1.5, k1=0.01, k2=0.03):
    win = _window(size, sigma)
    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2
    mx, my = _filter_valid(x, win), _filter_valid(y, win)
    vx = _filter_valid(x * x, win) - mx * mx
    vy = _filter_valid(y * y, win) - my * my
    cxy = _filter_valid(x * y, win) - mx * my
    cs = (2 * cxy + c2) / (vx + vy + c2)
    ssim = (2 * mx * my + c1) / (mx * mx + my * my + c1) * cs
    return ssim.mean((2, 3)), cs.mean((2, 3))


def test_ssim_against_reference_jit_and_grad():
    x = R.uniform(size=(2, 3, 12, 13))
    y = np.clip(x + R.normal(scale=0.1, size=x.shape), 0, 1)
    net = nn.SSIM(max_val=1.0, filter_size=5, filter_sigma=1.2)
    out = jitted_equals_eager(lambda a, b: net(a, b), T(x), T(y))
    np.testing.assert_allclose(out.asnumpy(), _ssim_reference(x, y, size=5, sigma=1.2)[0]
                               .mean(-1), rtol=1e-10)
    same = nn.SSIM()(T(np.ones((1, 3, 16, 16), np.float32)), T(np.ones((1, 3, 16, 16),
                                                                       np.float32)))
    np.testing.assert_allclose(same.asnumpy(), [1.0], rtol=1e-6)
    ty = T(y[:1, :1, :6, :6])
    small = nn.SSIM(filter_size=3)
    grad_matches(lambda a: small(a, ty), x[:1, :1, :6, :6], rtol=1e-5)


def _pool2x2(img):
    h, w = img.shape[2] // 2, img.shape[3] // 2
    return img[:, :, :2 * h, :2 * w].reshape(img.shape[:2] + (h, 2, w, 2)).mean((3, 5))


def test_msssim_against_reference_and_grad():
    powers = (0.2, 0.3, 0.5)
    x = R.uniform(size=(2, 2, 20, 24))
    y = np.clip(x + R.normal(scale=0.1, size=x.shape), 0, 1)
    net = nn.MSSSIM(power_factors=powers, filter_size=3, filter_sigma=1.0)
    out = jitted_equals_eager(lambda a, b: net(a, b), T(x), T(y))
    terms, a, b = [], x, y
    for j in range(len(powers)):
        ssim, cs = _ssim_reference(a, b, size=3, sigma=1.0)
        terms.append(np.maximum(cs if j < len(powers) - 1 else ssim, 0) ** powers[j])
        a, b = _pool2x2(a), _pool2x2(b)
    np.testing.assert_allclose(out.asnumpy(), np.prod(terms, 0).mean(-1), rtol=1e-10)
    ty = T(y[:1, :1, :8, :8])
    small = nn.MSSSIM(power_factors=(0.5, 0.5), filter_size=3)
    grad_matches(lambda a: small(a, ty), x[:1, :1, :8, :8], rtol=1e-5, atol=1e-6)


def test_ssim_scales_integer_images_by_their_range():
    x = R.integers(0, 256, size=(1, 1, 12, 12)).astype(np.uint8)
    y = R.integers(0, 256, size=(1, 1, 12, 12)).astype(np.uint8)
    got = nn.SSIM(max_val=255, filter_size=5)(T(x), T(y))
    want = _ssim_reference(x / 255.0, y / 255.0, size=5)[0].mean(-1)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-3, atol=1e-6)


def test_ssim_and_msssim_errors():
    with pytest.raises(ValueError, match="SSIM: max_val must be greater than 0"):
        nn.SSIM(max_val=0)
    with pytest.raises(ValueError, match="SSIM: filter_size must be at least 1"):
        nn.SSIM(filter_size=0)
    with pytest.raises(ValueError, match="SSIM: filter_sigma must be greater than 0"):
        nn.SSIM(filter_sigma=-1.0)
    with pytest.raises(TypeError, match="MSSSIM: power_factors must be"):
        nn.MSSSIM(power_factors=0.5)
    with pytest.raises(ValueError, match="SSIM: img1 must be 4-D"):
        nn.SSIM()(T(np.ones((3, 16, 16))), T(np.ones((3, 16, 16))))
    with pytest.raises(TypeError, match="SSIM: img1 and img2 must have the same shape"):
        nn.SSIM()(T(np.ones((1, 1, 16, 16))), T(np.ones((1, 1, 16, 17))))
    with pytest.raises(ValueError, match="smaller than filter_size 11"):
        nn.SSIM()(T(np.ones((1, 1, 8, 8))), T(np.ones((1, 1, 8, 8))))
    with pytest.raises(ValueError, match="MSSSIM: images of \\(32, 32\\) halved 4 times"):
        nn.MSSSIM()(T(np.ones((1, 1, 32, 32))), T(np.ones((1, 1, 32, 32))))


# --- Unfold ---------------------------------------------------------------------------------

def _unfold_reference(x, k, s, r, padding):
    n, c, h, w = x.shape
    span = [(k[i] - 1) * r[i] + 1 for i in range(2)]
    if padding == "valid":
        out = [(size - sp) // st + 1 for size, sp, st in zip((h, w), span, s)]
        pads = ((0, 0), (0, 0))
    else:
        out = [-(-size // st) for size, st in zip((h, w), s)]
        tot = [max((o - 1) * st + sp - size, 0) for o, st, sp, size in zip(out, s, span, (h, w))]
        pads = tuple((t // 2, t - t // 2) for t in tot)
    xp = np.pad(x, ((0, 0), (0, 0)) + pads)
    res = np.zeros((n, k[0] * k[1] * c, out[0], out[1]))
    for oi in range(out[0]):
        for oj in range(out[1]):
            for i in range(k[0]):
                for j in range(k[1]):
                    res[:, (i * k[1] + j) * c:(i * k[1] + j + 1) * c, oi, oj] = \
                        xp[:, :, oi * s[0] + i * r[0], oj * s[1] + j * r[1]]
    return res


@pytest.mark.parametrize("k, s, r, padding", [
    ((2, 2), (2, 2), (2, 2), "valid"), ((3, 2), (1, 2), (1, 1), "same"),
    ((2, 3), (2, 1), (2, 1), "SAME")])
def test_unfold_against_reference_jit_and_grad(k, s, r, padding):
    x = R.normal(size=(2, 3, 6, 7))
    net = nn.Unfold([1, k[0], k[1], 1], [1, s[0], s[1], 1], [1, r[0], r[1], 1], padding)
    out = jitted_equals_eager(lambda a: net(a), T(x))
    np.testing.assert_array_equal(out.asnumpy(), _unfold_reference(x, k, s, r, padding.lower()))
    grad_matches(lambda a: net(a), x[:1, :2])


def test_unfold_errors():
    with pytest.raises(TypeError, match="Unfold: ksizes must be a tuple or list"):
        nn.Unfold(2, [1, 1, 1, 1], [1, 1, 1, 1])
    with pytest.raises(ValueError, match="Unfold: strides must have the form"):
        nn.Unfold([1, 2, 2, 1], [2, 2, 2, 1], [1, 1, 1, 1])
    with pytest.raises(ValueError, match="Unfold: the row and col of rates"):
        nn.Unfold([1, 2, 2, 1], [1, 1, 1, 1], [1, 0, 1, 1])
    with pytest.raises(ValueError, match="Unfold: padding must be 'same' or 'valid'"):
        nn.Unfold([1, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "pad")
    with pytest.raises(ValueError, match="Unfold: x must be 4-D"):
        nn.Unfold([1, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1])(T(np.ones((3, 4, 4))))
    with pytest.raises(ValueError, match="does not fit images"):
        nn.Unfold([1, 5, 5, 1], [1, 1, 1, 1], [1, 1, 1, 1])(T(np.ones((1, 1, 4, 4))))


# --- ResizeBilinear -------------------------------------------------------------------------

def test_resize_bilinear_matches_mindspore_example():
    x = T(np.array([[[[1, 2, 3, 4], [5, 6, 7, 8]]]], np.float32))
    want = [[1, 1.8, 2.6, 3.4, 4], [2.6, 3.4, 4.2, 5, 5.6], [4.2, 5, 5.8, 6.6, 7.2],
            [5, 5.8, 6.6, 7.4, 8], [5, 5.8, 6.6, 7.4, 8]]
    np.testing.assert_allclose(nn.ResizeBilinear()(x, size=(5, 5)).asnumpy()[0, 0], want,
                               rtol=1e-6)


@pytest.mark.parametrize("half, size, scale, align", [
    (False, (5, 3), None, False), (False, None, 2, True), (True, (7, 4), None, False)])
def test_resize_bilinear_against_reference_jit_and_grad(half, size, scale, align):
    x = R.normal(size=(2, 2, 3, 5))
    net = nn.ResizeBilinear(half_pixel_centers=half)
    fn = lambda a: net(a, size, scale, align)  # noqa: E731
    out = jitted_equals_eager(fn, T(x))
    want = ref_resize(ref_linear_1d, x, size if size else (3 * scale, 5 * scale), align, half)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-12, atol=1e-12)
    grad_matches(fn, x[:1, :1])


def test_resize_bilinear_errors():
    with pytest.raises(TypeError, match="ResizeBilinear: half_pixel_centers must be a bool"):
        nn.ResizeBilinear(1)
    net, x = nn.ResizeBilinear(), T(np.ones((1, 1, 2, 2)))
    with pytest.raises(ValueError, match="exactly one of size and scale_factor"):
        net(x)
    with pytest.raises(ValueError, match="exactly one of size and scale_factor"):
        net(x, (2, 2), 2)
    with pytest.raises(ValueError, match="size must be 2 positive ints"):
        net(x, (2, 0))
    with pytest.raises(TypeError, match="scale_factor must be an int"):
        net(x, scale_factor=1.5)
    with pytest.raises(ValueError, match="x must be a 4-D"):
        net(T(np.ones((2, 2))), (3, 3))
    with pytest.raises(TypeError, match="cannot both be True"):
        nn.ResizeBilinear(True)(x, (3, 3), align_corners=True)


# --- Conv3dTranspose ------------------------------------------------------------------------

def _conv3d_transpose_reference(x, w, stride, dilation, group, mode, pads, out_pad):
    n, c_in, *size = x.shape
    k = w.shape[2:]
    c_out = w.shape[1] * group
    full = [(sz - 1) * s + d * (kk - 1) + 1 for sz, s, d, kk in zip(size, stride, dilation, k)]
    y = np.zeros((n, c_out, *full))
    cig, cog = c_in // group, c_out // group
    for ci in range(c_in):
        g = ci // cig
        for pos in np.ndindex(*size):
            for kp in np.ndindex(*k):
                o = [p * s + kk * d for p, s, kk, d in zip(pos, stride, kp, dilation)]
                y[:, g * cog:(g + 1) * cog, o[0], o[1], o[2]] += \
                    x[:, ci, pos[0], pos[1], pos[2]][:, None] * w[ci, :, kp[0], kp[1], kp[2]]
    for axis in range(3):
        if mode == "pad":
            begin, length = pads[2 * axis], full[axis] - pads[2 * axis] - pads[2 * axis + 1] \
                + out_pad[axis]
        elif mode == "same":
            begin, length = max(full[axis] - size[axis] * stride[axis], 0) // 2, \
                size[axis] * stride[axis]
        else:
            begin, length = 0, max(full[axis], size[axis] * stride[axis])
        y = np.moveaxis(y, 2 + axis, -1)
        piece = y[..., begin:begin + length]
        y = np.concatenate([piece, np.zeros(piece.shape[:-1] + (length - piece.shape[-1],))], -1)
        y = np.moveaxis(y, -1, 2 + axis)
    return y


@pytest.mark.parametrize("kernel, stride, dilation, group, mode, padding, out_pad", [
    ((2, 3, 2), (2, 1, 2), 1, 1, "pad", (1, 0, 0, 1, 1, 0), (1, 0, 1)),
    (3, 1, (2, 1, 1), 2, "same", 0, 0),
    ((1, 2, 3), (3, 2, 1), 1, 1, "valid", 0, 0),
    (2, 2, 1, 1, "same", 0, 0)])
def test_conv3d_transpose_against_reference_jit_and_grad(kernel, stride, dilation, group,
                                                         mode, padding, out_pad):
    layer = nn.Conv3dTranspose(4, 2, kernel, stride, mode, padding, dilation, group,
                               output_padding=out_pad, has_bias=True, dtype=ms.float64)
    x = R.normal(size=(2, 4, 3, 3, 2))
    w = layer.weight.asnumpy()
    assert w.shape == (4, 2 // group) + layer.kernel_size and layer.bias.shape == (2,)
    out = jitted_equals_eager(lambda a: layer(a), T(x))
    pads = (padding,) * 6 if isinstance(padding, int) else padding
    want = _conv3d_transpose_reference(x, w, layer.stride, layer.dilation, group, mode, pads,
                                       layer.output_padding)
    want = want + layer.bias.asnumpy().reshape(1, -1, 1, 1, 1)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-12, atol=1e-12)
    args = (layer.stride, mode, padding, layer.dilation, group, layer.output_padding)
    tw = T(w)
    grad_matches(lambda a: conv3d_transpose(a, tw, None, *args), x[:1, :, :2, :2, :2])
    tx = T(x[:1, :, :2, :2, :2])
    grad_matches(lambda k: conv3d_transpose(tx, k, None, *args), w)


def test_conv3d_transpose_matches_mindspore_example_shape():
    layer = nn.Conv3dTranspose(in_channels=16, out_channels=3, kernel_size=(4, 6, 2),
                               pad_mode="pad")
    assert layer(T(np.ones((1, 16, 10, 32, 32), np.float32))).shape == (1, 3, 13, 37, 33)


def test_conv3d_transpose_errors():
    with pytest.raises(ValueError, match="Conv3dTranspose: in_channels \\(3\\) and"):
        nn.Conv3dTranspose(3, 2, 2, group=2)
    with pytest.raises(ValueError, match="Conv3dTranspose: padding must be 0 when pad_mode"):
        nn.Conv3dTranspose(2, 2, 2, padding=1)
    with pytest.raises(ValueError, match="padding must be a non-negative int or a tuple of 6"):
        nn.Conv3dTranspose(2, 2, 2, pad_mode="pad", padding=(1, 1, 1))
    with pytest.raises(ValueError, match="Conv3dTranspose: pad_mode must be"):
        nn.Conv3dTranspose(2, 2, 2, pad_mode="full")
    with pytest.raises(ValueError, match="output_padding needs pad_mode='pad'"):
        nn.Conv3dTranspose(2, 2, 2, stride=2, output_padding=1)
    with pytest.raises(ValueError, match="output_padding must be below its stride"):
        nn.Conv3dTranspose(2, 2, 2, pad_mode="pad", output_padding=1)
    with pytest.raises(ValueError, match="data_format='NCDHW'"):
        nn.Conv3dTranspose(2, 2, 2, data_format="NDHWC")
    with pytest.raises(ValueError, match="expects \\(N, 2, D, H, W\\) input"):
        nn.Conv3dTranspose(2, 2, 2)(T(np.ones((1, 2, 3, 3))))


# --- MultiFieldEmbeddingLookup --------------------------------------------------------------

def _multi_field_reference(table, indices, values, fields, field_size, operator, max_norm):
    rows = table[indices]
    if max_norm is not None:
        norms = np.sqrt((rows ** 2).sum(-1, keepdims=True))
        rows = rows * np.minimum(max_norm / np.maximum(norms, 1e-12), 1.0)
    out = np.zeros((indices.shape[0], field_size, table.shape[1]))
    for b in range(indices.shape[0]):
        for f in range(field_size):
            pick = fields[b] == f
            vals, vecs = values[b][pick], rows[b][pick] * values[b][pick][:, None]
            if operator == "SUM":
                out[b, f] = vecs.sum(0)
            elif operator == "MEAN":
                total = np.abs(vals).sum()
                out[b, f] = vecs.sum(0) / total if total else 0.0
            elif (vals != 0).any():
                out[b, f] = vecs[vals != 0].max(0)
    return out


@pytest.mark.parametrize("operator, max_norm", [("SUM", None), ("MEAN", 1.0), ("MAX", None)])
def test_multi_field_embedding_lookup(operator, max_norm):
    net = nn.MultiFieldEmbeddingLookup(10, 3, field_size=3, operator=operator, target="DEVICE",
                                       max_norm=max_norm, dtype=ms.float64)
    indices = R.integers(0, 10, size=(2, 6)).astype(np.int32)
    values = R.uniform(0.5, 2.0, size=(2, 6))
    values[:, -2:] = 0.0  # padding entries
    fields = np.array([[0, 1, 1, 0, 0, 2], [0, 0, 1, 1, 2, 2]], np.int32)
    ti, tf = T(indices), T(fields)
    out = jitted_equals_eager(lambda v: net(ti, v, tf), T(values))
    want = _multi_field_reference(net.embedding_table.asnumpy(), indices, values, fields, 3,
                                  operator, max_norm)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-12, atol=1e-12)
    if operator != "MAX":
        # Away from zero values: a field whose values all tend to 0 has no limit under MEAN.
        grad_matches(lambda v: net(ti, v, tf), R.uniform(0.5, 2.0, size=(2, 6)))


def test_multi_field_embedding_lookup_errors():
    cls = nn.MultiFieldEmbeddingLookup
    with pytest.raises(ValueError, match="field_size must be at least 1"):
        cls(10, 2, 0)
    with pytest.raises(TypeError, match="vocab_size must be an int"):
        cls(10.0, 2, 2)
    with pytest.raises(ValueError, match="operator must be one of"):
        cls(10, 2, 2, operator="MIN")
    with pytest.raises(ValueError, match="target must be 'CPU' or 'DEVICE'"):
        cls(10, 2, 2, target="GPU")
    with pytest.raises(ValueError, match="sparse must be True when target is 'CPU'"):
        cls(10, 2, 2, sparse=False)
    with pytest.raises(ValueError, match="slice_mode must be one of"):
        cls(10, 2, 2, slice_mode="rows")
    net = cls(10, 2, 2)
    i = T(np.zeros((2, 3), np.int32))
    with pytest.raises(ValueError, match="input_values must be 2-D"):
        net(i, T(np.ones((2, 4))), i)
    with pytest.raises(TypeError, match="input_values must be a float tensor"):
        net(i, i, i)


# --- SyncBatchNorm --------------------------------------------------------------------------

def test_sync_batch_norm_is_batch_norm_over_one_process():
    x = R.normal(size=(4, 3, 2, 5))
    net = nn.SyncBatchNorm(3, momentum=0.8, process_groups=[[0]], dtype=ms.float64)
    assert {p.name for p in net.get_parameters()} == {"gamma", "beta", "moving_mean",
                                                      "moving_variance"}
    net.set_train()
    out = net(T(x))
    mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3))
    want = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-10, atol=1e-12)
    unbiased = x.var((0, 2, 3), ddof=1)
    np.testing.assert_allclose(net.moving_mean.asnumpy(), 0.2 * mean, rtol=1e-10)
    np.testing.assert_allclose(net.moving_variance.asnumpy(), 0.8 + 0.2 * unbiased, rtol=1e-10)
    net.set_train(False)
    flat = R.normal(size=(5, 3))
    evaluated = jitted_equals_eager(lambda a: net(a), T(flat))
    want = (flat - net.moving_mean.asnumpy()) / np.sqrt(net.moving_variance.asnumpy() + 1e-5)
    np.testing.assert_allclose(evaluated.asnumpy(), want, rtol=1e-10)
    grad_matches(lambda a: net(a), flat)


def test_sync_batch_norm_errors():
    with pytest.raises(NotImplementedError, match="SyncBatchNorm: process_groups .* no "
                                                  "communication library"):
        nn.SyncBatchNorm(3, process_groups=[[0, 1]])
    with pytest.raises(NotImplementedError, match="names ranks other than this single"):
        nn.SyncBatchNorm(3, process_groups=[[0], [1]])
    with pytest.raises(TypeError, match="SyncBatchNorm: process_groups must be a list of lists"):
        nn.SyncBatchNorm(3, process_groups=[0])
    with pytest.raises(ValueError, match="expects \\(N, 3, ...\\) input"):
        nn.SyncBatchNorm(3)(T(np.ones((2, 4))))
