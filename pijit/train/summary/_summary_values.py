"""Checking the values a summary records and filling them into Summary.Value messages as
MindSpore does: a scalar as one float, a tensor as its dims and float32 elements, a histogram
with MindSpore's bucketing, an image as a PNG of a grid of the batch's images."""
import io

import numpy as np

from pijit.train.summary._summary_proto import DATA_TYPES

__all__ = ["PLUGINS", "check_value", "fill_value", "histogram_bucket_count"]

# The plugins whose values are tensors, and the Summary.Value field each fills.
PLUGINS = ("scalar", "tensor", "image", "histogram")

_TENSOR_DATA_TYPES = {np.dtype(np.bool_): "DT_BOOL", np.dtype(np.int8): "DT_INT8",
                      np.dtype(np.int16): "DT_INT16", np.dtype(np.int32): "DT_INT32",
                      np.dtype(np.int64): "DT_INT64", np.dtype(np.uint8): "DT_UINT8",
                      np.dtype(np.uint16): "DT_UINT16", np.dtype(np.uint32): "DT_UINT32",
                      np.dtype(np.uint64): "DT_UINT64", np.dtype(np.float16): "DT_FLOAT16",
                      np.dtype(np.float32): "DT_FLOAT32", np.dtype(np.float64): "DT_FLOAT64"}

# An image grid has at most this many images a row, as MindSpore's.
_IMAGES_PER_ROW = 8
# Summary.Image.colorspace of an RGB image: every image is written as RGB.
_RGB = 3


def check_value(plugin, values, who):
    """Raises ValueError (TypeError for an element type) if NumPy array `values` cannot be
    recorded as `plugin`; `who` names the caller in the message."""
    if plugin == "scalar" and values.size != 1:
        raise ValueError(f"For '{who}', a 'scalar' value must hold exactly one element, got "
                         f"shape {values.shape}")
    if plugin in ("tensor", "histogram") and values.ndim == 0:
        raise ValueError(f"For '{who}', a '{plugin}' value must have at least one dimension, "
                         f"got a 0-d tensor")
    if plugin == "tensor" and values.dtype not in _TENSOR_DATA_TYPES:
        raise TypeError(f"For '{who}', a 'tensor' value must be bool, an integer or float16/32/"
                        f"64, got {values.dtype}")
    if plugin == "histogram" and values.dtype.kind not in "biuf":
        raise TypeError(f"For '{who}', a 'histogram' value must be real, got {values.dtype}")
    if plugin == "image":
        if values.ndim != 4 or values.shape[1] not in (1, 3) or 0 in values.shape:
            raise ValueError(f"For '{who}', an 'image' value must be a non-empty NCHW batch "
                             f"with 1 or 3 channels, got shape {values.shape}")
        if values.dtype.kind not in "biuf":
            raise TypeError(f"For '{who}', an 'image' value must be real, got {values.dtype}")
        _pillow(who)
    if plugin == "scalar" and values.dtype.kind not in "biuf":
        raise TypeError(f"For '{who}', a 'scalar' value must be real, got {values.dtype}")


def fill_value(proto_value, plugin, values):
    """Fills Summary.Value `proto_value` (its tag already set) with checked array `values`."""
    if plugin == "scalar":
        proto_value.scalar_value = float(values.reshape(-1)[0])
    elif plugin == "tensor":
        _fill_tensor(proto_value.tensor, values)
    elif plugin == "histogram":
        _fill_histogram(proto_value.histogram, values)
    else:
        _fill_image(proto_value.image, values)


def _fill_tensor(tensor, values):
    # As MindSpore: every element type is written to float_data (float32), with data_type
    # saying what the elements were.
    tensor.data_type = DATA_TYPES[_TENSOR_DATA_TYPES[values.dtype]]
    tensor.dims.extend(values.shape)
    tensor.float_data.extend(values.reshape(-1).astype(np.float32).tolist())


def histogram_bucket_count(valid_count):
    """MindSpore's number of buckets for `valid_count` finite values: about ten values a bucket,
    at most 90, with fixed counts for tiny tensors."""
    if valid_count == 0:
        return 1
    if valid_count <= 5:
        return 2
    if valid_count <= 10:
        return 3
    if valid_count <= 880:
        return valid_count // 10 + 1
    return 90


def _fill_histogram(histogram, values):
    if values.dtype == np.bool_:
        values = values.astype(np.uint8)
    flat = values.reshape(-1)
    histogram.count = flat.size
    if flat.dtype.kind == "f":
        histogram.nan_count = int(np.count_nonzero(np.isnan(flat)))
        histogram.pos_inf_count = int(np.count_nonzero(np.isposinf(flat)))
        histogram.neg_inf_count = int(np.count_nonzero(np.isneginf(flat)))
        finite = flat[np.isfinite(flat)]
    else:
        finite = flat
    if finite.size == 0:
        return  # min, max and sum stay 0 and there are no buckets, as MindSpore writes
    low, high = finite.min(), finite.max()
    histogram.min, histogram.max = float(low), float(high)
    histogram.sum = float(finite.sum(dtype=np.float64))
    first, last = float(low), float(high)
    if not first < last:  # all values equal: one unit wide range around them
        first, last = first - 0.5, last + 0.5
    # The edges take the values' dtype, as MindSpore's (integer edges for integer tensors).
    edges = np.linspace(first, last, histogram_bucket_count(finite.size) + 1, dtype=finite.dtype)
    counts, edges = np.histogram(finite, bins=edges)
    for count, left, right in zip(counts, edges[:-1], edges[1:]):
        histogram.buckets.add(left=float(left), width=float(right) - float(left), count=int(count))


def image_grid(images):
    """The NCHW batch `images` laid out as one (3, H * rows, W * columns) float64 grid, up to
    eight images a row, empty cells zero; one-channel images are repeated into RGB."""
    if images.shape[1] == 1:
        images = np.repeat(images, 3, axis=1)
    count, _, height, width = images.shape
    columns = min(count, _IMAGES_PER_ROW)
    rows = -(-count // columns)
    grid = np.zeros((3, height * rows, width * columns))
    for i in range(count):
        row, column = divmod(i, columns)
        grid[:, row * height:(row + 1) * height, column * width:(column + 1) * width] = images[i]
    return grid


def image_pixels(images):
    """The uint8 (H, W, 3) pixels MindSpore writes for NCHW batch `images`: uint8 values as
    they are, values within [0, 1] times 255, any other range mapped linearly from its minimum
    with a scale of 255 / (max - min + 1)."""
    grid = image_grid(images)
    low, high = grid.min(), grid.max()
    if images.dtype == np.uint8:
        scale, shift = 1.0, 0.0
    elif low >= 0 and high <= 1:
        scale, shift = 255.0, 0.0
    else:
        scale, shift = (255.0 / (high - low + 1) if high != low else 1.0), low
    pixels = ((grid.astype(np.float32) - shift) * scale).astype(np.uint8)
    return np.ascontiguousarray(pixels.transpose(1, 2, 0))


def _fill_image(image, values):
    pixels = image_pixels(values)
    buffer = io.BytesIO()
    _pillow("SummaryRecord").fromarray(pixels).save(buffer, format="PNG")
    image.height, image.width = pixels.shape[0], pixels.shape[1]
    image.colorspace = _RGB
    image.encoded_image = buffer.getvalue()


def _pillow(who):
    try:
        from PIL import Image
    except ImportError:
        raise ImportError(f"For '{who}', recording an image needs Pillow to encode it as PNG "
                          f"(pip install pillow)") from None
    return Image
