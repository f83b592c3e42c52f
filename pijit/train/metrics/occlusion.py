"""OcclusionSensitivity (MindSpore's mindspore.train): how much a model's score for a label drops
when each part of an image is covered, which shows the parts the classification relies on."""
import numbers

import numpy as np

from pijit._tensor import Tensor
from pijit.train.metrics._args import check_input_count, check_int, check_real, require_update
from pijit.train.metrics.metric import Metric, rearrange_inputs

__all__ = ["OcclusionSensitivity"]


class OcclusionSensitivity(Metric):
    """For each position of the image (or of the bounding box `b_box`), the model's score for
    the label on the whole image minus its score when the window [position - margin,
    position + margin) of every spatial axis is set to `pad_val`; larger means more important.

    Update takes (model, image, label): a pijit Cell mapping [B, ...] images to [B, classes]
    scores, one image [1, ...] and its label. The occluded images go through the model
    `n_batch` at a time. `margin` is an int or one int per spatial axis; `b_box` is
    [min1, max1, min2, max2, ...] (inclusive, a negative max meaning the last index). eval
    gives an ndarray of the image's (or box's) spatial shape with axes of length 1 dropped."""

    def __init__(self, pad_val=0.0, margin=2, n_batch=128, b_box=None):
        super().__init__()
        name = "OcclusionSensitivity"
        self.pad_val = check_real(name, "pad_val", pad_val)
        if isinstance(margin, (list, tuple)):
            margin = [check_int(name, "margin", m, low=0) for m in margin]
        else:
            margin = check_int(name, "margin", margin, low=0)
        self.margin = margin
        self.n_batch = check_int(name, "n_batch", n_batch, low=1)
        if b_box is not None:
            if not isinstance(b_box, (list, tuple)):
                raise TypeError(f"For '{name}', 'b_box' must be a list, got "
                                f"{type(b_box).__name__}")
            b_box = [check_int(name, "b_box", bound) for bound in b_box]
        self.b_box = b_box
        self.clear()

    def clear(self):
        self._baseline = 0.0
        self._sensitivity_im = None
        self._is_update = False

    def _box(self, image_shape):
        """(first, last) spatial positions to occlude, inclusive."""
        if self.b_box is None:
            return np.zeros(len(image_shape), np.int64), np.array(image_shape) - 1
        if len(self.b_box) != 2 * len(image_shape):
            raise ValueError(f"For 'OcclusionSensitivity', 'b_box' needs a minimum and a maximum "
                             f"for each of the image's {len(image_shape)} spatial axes, got "
                             f"{len(self.b_box)} values")
        shape = np.array(image_shape)
        first = np.maximum(np.array(self.b_box[::2]), 0)
        last = np.array(self.b_box[1::2])
        last = np.where(last < 0, shape - 1, last)
        if np.any(last >= shape) or np.any(first > last):
            raise ValueError(f"For 'OcclusionSensitivity', 'b_box' {self.b_box} must lie inside "
                             f"the image's spatial shape {tuple(image_shape)} with each minimum "
                             f"not above its maximum")
        return first, last

    def _margins(self, spatial_axes):
        if isinstance(self.margin, int):
            return np.full(spatial_axes, self.margin)
        if len(self.margin) != spatial_axes:
            raise ValueError(f"For 'OcclusionSensitivity', 'margin' must have one value per "
                             f"spatial axis ({spatial_axes}), got {len(self.margin)}")
        return np.array(self.margin)

    def _label(self, label, image):
        if isinstance(label, numbers.Integral) and not isinstance(label, bool):
            return int(label)
        label = self._convert_data(label)
        if label.size != image.shape[0]:
            raise RuntimeError(f"For 'OcclusionSensitivity.update', there must be one label per "
                               f"image, got {label.size} labels for {image.shape[0]} images")
        return int(label.reshape(-1)[0])

    @staticmethod
    def _scores(model, images, label):
        """The model's score for `label` on each of `images`."""
        output = model(Tensor(images))
        output = output.asnumpy() if isinstance(output, Tensor) else np.asarray(output)
        output = output.reshape(images.shape[0], -1)
        if not 0 <= label < output.shape[1]:
            raise ValueError(f"For 'OcclusionSensitivity.update', the label {label} is not a "
                             f"class of the model's output, which has {output.shape[1]} scores "
                             f"per image")
        return output[:, label]

    @rearrange_inputs
    def update(self, *inputs):
        from pijit.nn.cell import Cell  # pijit.nn re-exports the metrics, so import late.

        name = "OcclusionSensitivity"
        check_input_count(name, inputs, ("model", "image", "label"))
        model, image = inputs[0], self._convert_data(inputs[1])
        if not isinstance(model, Cell):
            raise TypeError(f"For '{name}.update', the model (input[0]) must be a Cell, got "
                            f"{type(model).__name__}")
        if image.ndim < 2 or image.shape[0] != 1:
            raise RuntimeError(f"For '{name}.update', the image (input[1]) must be one image of "
                               f"shape [1, ...], got shape {image.shape}")
        label = self._label(inputs[2], image)
        image_shape = image.shape[1:]
        first, last = self._box(image_shape)
        margins = self._margins(len(image_shape))
        self._baseline = float(self._scores(model, image, label)[0])

        output_shape = tuple(last - first + 1)
        positions = np.argwhere(np.ones(output_shape, bool)) + first
        scores = []
        for start in range(0, len(positions), self.n_batch):
            block = positions[start:start + self.n_batch]
            occluded = np.repeat(image, len(block), axis=0)
            for row, position in enumerate(block):
                window = tuple(slice(max(0, p - m), min(size, p + m))
                               for p, m, size in zip(position, margins, image_shape))
                occluded[(row,) + window] = self.pad_val
            scores.append(self._scores(model, occluded, label))
        self._sensitivity_im = np.concatenate(scores).reshape(output_shape)
        self._is_update = True

    def eval(self):
        """The sensitivity map: baseline score minus the occluded scores, an ndarray."""
        require_update("OcclusionSensitivity", self._is_update)
        return self._baseline - np.squeeze(self._sensitivity_im)
