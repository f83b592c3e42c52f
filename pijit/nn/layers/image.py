"""Image layers of mindspore.nn: SSIM, MSSSIM, Unfold, ResizeBilinear, Conv3dTranspose, and
embedding and normalisation variants (MultiFieldEmbeddingLookup, SyncBatchNorm).

Every construct is composed of pijit ops (convolutions, slices, gathers, matmuls, segment
reductions), so a network using these layers is captured into one graph and differentiated
through those ops' rules. Arguments fixed at construction are checked there; shapes that only
the input reveals are checked in construct with raise_error, which raises the same error
eagerly and under pijit.jit."""
import math

import numpy as np

from pijit import _C, ops
from pijit._numbers import plain
from pijit._ops_resize import _apply
from pijit._tensor import Tensor, float32
from pijit.mint._checks import FLOAT_DTYPES, INT_DTYPES, check_tensor, raise_error
from pijit.nn.cell import Cell
from pijit.ops import constexpr

__all__ = ["SSIM", "MSSSIM", "Unfold", "ResizeBilinear", "Conv3dTranspose",
           "MultiFieldEmbeddingLookup", "SyncBatchNorm"]

_NUMPY_INTS = {_C.dtype.u8: np.uint8, _C.dtype.i8: np.int8, _C.dtype.i16: np.int16,
               _C.dtype.i32: np.int32, _C.dtype.i64: np.int64}


# --- SSIM and MS-SSIM ---------------------------------------------------------------------

def _gaussian_window(size, sigma):
    """The (1, 1, size, size) Gaussian window, normalised to sum 1, centred as MindSpore's
    (offsets -(size // 2) + 1 .. size // 2 for even sizes)."""
    offsets = np.arange(-size // 2 + 1, size // 2 + 1, dtype=np.float64)
    g = np.exp(-(offsets[:, None] ** 2 + offsets[None, :] ** 2) / (2.0 * sigma * sigma))
    return Tensor((g / g.sum()).reshape(1, 1, size, size))


def _check_similarity_args(cls, max_val, filter_size, filter_sigma, k1, k2):
    max_val = plain(max_val)
    if isinstance(max_val, bool) or not isinstance(max_val, (int, float)):
        raise TypeError(f"{cls}: max_val must be an int or float, got {type(max_val).__name__}")
    if max_val <= 0:
        raise ValueError(f"{cls}: max_val must be greater than 0, got {max_val}")
    filter_size = plain(filter_size)
    if isinstance(filter_size, bool) or not isinstance(filter_size, int):
        raise TypeError(f"{cls}: filter_size must be an int, got {type(filter_size).__name__}")
    if filter_size < 1:
        raise ValueError(f"{cls}: filter_size must be at least 1, got {filter_size}")
    for name, value in (("filter_sigma", filter_sigma), ("k1", k1), ("k2", k2)):
        if isinstance(plain(value), bool) or not isinstance(plain(value), (int, float)):
            raise TypeError(f"{cls}: {name} must be a float, got {type(value).__name__}")
    if filter_sigma <= 0:
        raise ValueError(f"{cls}: filter_sigma must be greater than 0, got {filter_sigma}")
    return float(max_val), filter_size, float(filter_sigma), float(k1), float(k2)


def _as_unit_float(cls, img1, img2, max_val, scale_levels=1):
    """The images as floats, integer images cast to float32 and divided by their dtype's
    maximum (and max_val with them), as MindSpore does; checks shapes and dtypes."""
    for name, img in (("img1", img1), ("img2", img2)):
        check_tensor(cls, name, img)
        if img.ndim != 4:
            raise_error(ValueError, f"{cls}: {name} must be 4-D (N, C, H, W), got "
                                    f"{img.ndim}-D")
    if tuple(img1.shape) != tuple(img2.shape) or img1.dtype != img2.dtype:
        raise_error(TypeError, f"{cls}: img1 and img2 must have the same shape and dtype, got "
                               f"{tuple(img1.shape)} {img1.dtype} and {tuple(img2.shape)} "
                               f"{img2.dtype}")
    if img1.dtype in INT_DTYPES:
        top = float(np.iinfo(_NUMPY_INTS[img1.dtype]).max)
        img1 = ops.cast(img1, float32) / top
        img2 = ops.cast(img2, float32) / top
        max_val = max_val / top if max_val > 1.0 else max_val
    elif img1.dtype not in FLOAT_DTYPES:
        raise_error(TypeError, f"{cls}: images must have a float or integer dtype, got "
                               f"{img1.dtype}")
    return img1, img2, max_val


def _ssim_and_contrast(img1, img2, window, c1, c2):
    """Per image and channel, the mean SSIM and the mean contrast-structure term, (N, C)
    each. The five local moments come from one depthwise 'valid' convolution of the stacked
    maps with the Gaussian window."""
    n, c, h, w = img1.shape
    maps = ops.concat((img1, img2, img1 * img1, img2 * img2, img1 * img2), 0)
    moments = ops.conv2d(ops.reshape(maps, (5 * n * c, 1, h, w)), ops.cast(window, img1.dtype),
                         pad_mode="valid")
    moments = ops.reshape(moments, (5, n, c) + tuple(moments.shape[2:]))
    mu1, mu2 = moments[0], moments[1]
    mu12 = mu1 * mu2
    luminance_num = 2.0 * mu12 + c1
    luminance_den = mu1 * mu1 + mu2 * mu2 + c1
    contrast_num = 2.0 * (moments[4] - mu12) + c2
    contrast_den = (moments[2] - mu1 * mu1) + (moments[3] - mu2 * mu2) + c2
    ssim = (luminance_num * contrast_num) / (luminance_den * contrast_den)
    contrast = contrast_num / contrast_den
    return ops.mean(ssim, (2, 3)), ops.mean(contrast, (2, 3))


class SSIM(Cell):
    """SSIM(max_val=1.0, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03)(img1, img2):
    the structural similarity of each pair of (N, C, H, W) images, (N,), from local moments
    under a Gaussian window ('valid' positions only), averaged over positions and channels."""

    def __init__(self, max_val=1.0, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03):
        super().__init__()
        self.max_val, self.filter_size, self.filter_sigma, self.k1, self.k2 = \
            _check_similarity_args("SSIM", max_val, filter_size, filter_sigma, k1, k2)
        self._window = _gaussian_window(self.filter_size, self.filter_sigma)

    def construct(self, img1, img2):
        img1, img2, max_val = _as_unit_float("SSIM", img1, img2, self.max_val)
        if img1.shape[2] < self.filter_size or img1.shape[3] < self.filter_size:
            raise_error(ValueError, f"SSIM: images of {tuple(img1.shape[2:])} are smaller than "
                                    f"filter_size {self.filter_size}")
        c1, c2 = (self.k1 * max_val) ** 2, (self.k2 * max_val) ** 2
        ssim, _ = _ssim_and_contrast(img1, img2, self._window, c1, c2)
        return ops.mean(ssim, -1)

    def extend_repr(self):
        return (f"max_val={self.max_val}, filter_size={self.filter_size}, "
                f"filter_sigma={self.filter_sigma}, k1={self.k1}, k2={self.k2}")


class MSSSIM(Cell):
    """MSSSIM(max_val=1.0, power_factors=(0.0448, 0.2856, 0.3001, 0.2363, 0.1333),
    filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03)(img1, img2): multi-scale SSIM, (N,).
    Level j (of len(power_factors)) compares the images average-pooled 2x2 j times; the
    product over levels of relu(contrast_j) ** power_j, with the last level's relu(SSIM)
    in place of its contrast, is averaged over channels."""

    def __init__(self, max_val=1.0, power_factors=(0.0448, 0.2856, 0.3001, 0.2363, 0.1333),
                 filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03):
        super().__init__()
        self.max_val, self.filter_size, self.filter_sigma, self.k1, self.k2 = \
            _check_similarity_args("MSSSIM", max_val, filter_size, filter_sigma, k1, k2)
        if not isinstance(power_factors, (tuple, list)) or not power_factors:
            raise TypeError(f"MSSSIM: power_factors must be a non-empty tuple or list, got "
                            f"{power_factors!r}")
        self.power_factors = tuple(float(p) for p in power_factors)
        self.level = len(self.power_factors)
        self._powers = Tensor(np.array(self.power_factors))
        self._window = _gaussian_window(self.filter_size, self.filter_sigma)

    def construct(self, img1, img2):
        img1, img2, max_val = _as_unit_float("MSSSIM", img1, img2, self.max_val)
        smallest = min(img1.shape[2], img1.shape[3]) // 2 ** (self.level - 1)
        if smallest < self.filter_size:
            raise_error(ValueError, f"MSSSIM: images of {tuple(img1.shape[2:])} halved "
                                    f"{self.level - 1} times are smaller than filter_size "
                                    f"{self.filter_size}")
        c1, c2 = (self.k1 * max_val) ** 2, (self.k2 * max_val) ** 2
        terms = []
        ssim = None
        for j in range(self.level):
            ssim, contrast = _ssim_and_contrast(img1, img2, self._window, c1, c2)
            if j < self.level - 1:
                terms.append(ops.relu(contrast))
                img1 = ops.avg_pool2d(img1, 2, 2)
                img2 = ops.avg_pool2d(img2, 2, 2)
        terms.append(ops.relu(ssim))
        stacked = ops.stack(tuple(terms), -1)
        scaled = ops.pow(stacked, ops.cast(self._powers, stacked.dtype))
        return ops.mean(ops.prod(scaled, -1), -1)

    def extend_repr(self):
        return (f"max_val={self.max_val}, power_factors={self.power_factors}, "
                f"filter_size={self.filter_size}, filter_sigma={self.filter_sigma}")


# --- Unfold ---------------------------------------------------------------------------------

def _nhwc_quad(cls, name, value):
    """(row, col) from MindSpore's [1, row, col, 1] form."""
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{cls}: {name} must be a tuple or list [1, row, col, 1], got "
                        f"{type(value).__name__}")
    value = tuple(plain(v) for v in value)
    if len(value) != 4 or value[0] != 1 or value[3] != 1:
        raise ValueError(f"{cls}: {name} must have the form [1, row, col, 1], got {value!r}")
    if any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in value[1:3]):
        raise ValueError(f"{cls}: the row and col of {name} must be positive ints, got "
                         f"{value!r}")
    return value[1], value[2]


class Unfold(Cell):
    """Unfold(ksizes, strides, rates, padding='valid')(x): the patches of (N, C, H, W) images
    as (N, kh * kw * C, out_h, out_w), channel (i * kw + j) * C + c holding pixel (i, j) of the
    patch in channel c. ksizes, strides and rates are [1, row, col, 1]; 'valid' keeps patches
    inside the image, 'same' pads with zeros (the odd one at the bottom/right) for
    ceil(H / stride) patches per column."""

    def __init__(self, ksizes, strides, rates, padding="valid"):
        super().__init__()
        self.ksizes = _nhwc_quad("Unfold", "ksizes", ksizes)
        self.strides = _nhwc_quad("Unfold", "strides", strides)
        self.rates = _nhwc_quad("Unfold", "rates", rates)
        if not isinstance(padding, str) or padding.lower() not in ("same", "valid"):
            raise ValueError(f"Unfold: padding must be 'same' or 'valid', got {padding!r}")
        self.padding = padding.lower()

    def _geometry(self, size, axis):
        """(pad before, pad after, number of patches) along one spatial axis."""
        span = (self.ksizes[axis] - 1) * self.rates[axis] + 1
        stride = self.strides[axis]
        if self.padding == "valid":
            return 0, 0, (size - span) // stride + 1
        count = -(-size // stride)
        total = max((count - 1) * stride + span - size, 0)
        return total // 2, total - total // 2, count

    def construct(self, x):
        check_tensor("Unfold", "x", x)
        if x.ndim != 4:
            raise_error(ValueError, f"Unfold: x must be 4-D (N, C, H, W), got {x.ndim}-D")
        n, c, h, w = x.shape
        top, bottom, out_h = self._geometry(h, 0)
        left, right, out_w = self._geometry(w, 1)
        if out_h < 1 or out_w < 1:
            raise_error(ValueError, f"Unfold: a patch of ksizes {self.ksizes} and rates "
                                    f"{self.rates} does not fit images of {(h, w)}")
        if top or bottom or left or right:
            x = ops.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
        (kh, kw), (sh, sw), (rh, rw) = self.ksizes, self.strides, self.rates
        patches = []
        for i in range(kh):
            for j in range(kw):
                patches.append(x[:, :, i * rh:i * rh + (out_h - 1) * sh + 1:sh,
                                 j * rw:j * rw + (out_w - 1) * sw + 1:sw])
        return ops.reshape(ops.stack(tuple(patches), 1), (n, kh * kw * c, out_h, out_w))

    def extend_repr(self):
        return (f"ksizes={self.ksizes}, strides={self.strides}, rates={self.rates}, "
                f"padding={self.padding}")


# --- ResizeBilinear ---------------------------------------------------------------------------

@constexpr
def _bilinear_matrix(n_in, n_out, rule, dtype):
    """(n_out, n_in) weights of linear interpolation along one axis. `rule` maps output i to
    a source coordinate: 'asymmetric' i * n_in / n_out (MindSpore's default), 'align_corners'
    i * (n_in - 1) / (n_out - 1), 'half_pixel' (i + 0.5) * n_in / n_out - 0.5, clamped at 0."""
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        if rule == "align_corners":
            src = i * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        elif rule == "half_pixel":
            src = max((i + 0.5) * n_in / n_out - 0.5, 0.0)
        else:
            src = i * n_in / n_out
        lo = min(int(math.floor(src)), n_in - 1)
        hi = min(lo + 1, n_in - 1)
        frac = src - lo if lo < n_in - 1 else 0.0
        m[i, lo] += 1.0 - frac
        m[i, hi] += frac
    return _C.Tensor(m, dtype)


class ResizeBilinear(Cell):
    """ResizeBilinear(half_pixel_centers=False)(x, size=None, scale_factor=None,
    align_corners=False): bilinear resizing of (N, C, H, W) data to `size` (2 ints) or to
    scale_factor (a positive int) times H and W. Source coordinates are i * in / out by
    default, corner to corner with align_corners, pixel centres with half_pixel_centers."""

    def __init__(self, half_pixel_centers=False):
        super().__init__()
        if not isinstance(half_pixel_centers, bool):
            raise TypeError(f"ResizeBilinear: half_pixel_centers must be a bool, got "
                            f"{type(half_pixel_centers).__name__}")
        self.half_pixel_centers = half_pixel_centers

    def _out_size(self, x, size, scale_factor):
        if (size is None) == (scale_factor is None):
            raise_error(ValueError, "ResizeBilinear: give exactly one of size and scale_factor")
        if size is not None:
            if not isinstance(size, (tuple, list)):
                raise_error(TypeError, f"ResizeBilinear: size must be a tuple or list of 2 "
                                       f"ints, got {type(size).__name__}")
            size = tuple(plain(s) for s in size)
            if len(size) != 2 or any(isinstance(s, bool) or not isinstance(s, int) or s < 1
                                     for s in size):
                raise_error(ValueError, f"ResizeBilinear: size must be 2 positive ints, got "
                                        f"{size!r}")
            return size
        scale_factor = plain(scale_factor)
        if isinstance(scale_factor, bool) or not isinstance(scale_factor, int):
            raise_error(TypeError, f"ResizeBilinear: scale_factor must be an int, got "
                                   f"{type(scale_factor).__name__}")
        if scale_factor < 1:
            raise_error(ValueError, f"ResizeBilinear: scale_factor must be positive, got "
                                    f"{scale_factor}")
        return x.shape[2] * scale_factor, x.shape[3] * scale_factor

    def construct(self, x, size=None, scale_factor=None, align_corners=False):
        check_tensor("ResizeBilinear", "x", x)
        if x.ndim != 4 or x.dtype not in FLOAT_DTYPES:
            raise_error(ValueError, f"ResizeBilinear: x must be a 4-D (N, C, H, W) float "
                                    f"tensor, got {x.ndim}-D {x.dtype}")
        if not isinstance(align_corners, bool):
            raise_error(TypeError, f"ResizeBilinear: align_corners must be a bool, got "
                                   f"{type(align_corners).__name__}")
        if align_corners and self.half_pixel_centers:
            raise_error(TypeError, "ResizeBilinear: align_corners and half_pixel_centers "
                                   "cannot both be True")
        out_h, out_w = self._out_size(x, size, scale_factor)
        rule = "align_corners" if align_corners else \
            "half_pixel" if self.half_pixel_centers else "asymmetric"
        x = _apply(x, 2, _bilinear_matrix(x.shape[2], out_h, rule, x.dtype))
        return _apply(x, 3, _bilinear_matrix(x.shape[3], out_w, rule, x.dtype))

    def extend_repr(self):
        return f"half_pixel_centers={self.half_pixel_centers}"


from pijit.nn.layers.image_more import (Conv3dTranspose, MultiFieldEmbeddingLookup,  # noqa: E402
                                        SyncBatchNorm)
