"""More losses of mindspore.nn: dice, focal and sampled softmax losses.

Each construct is built from pijit ops only, so a network that ends in one of these losses is
captured into one graph and differentiated like any other. Settings are checked where the
Cell is made, so a bad one fails there rather than at the first call."""
from pijit import ops
from pijit._numbers import plain
from pijit._tensor import int32, int64
from pijit.mint._checks import FLOAT_DTYPES, INT_DTYPES, check_tensor, raise_error
from pijit.nn.cell import Cell
from pijit.nn.layers.activation import get_activation
from pijit.nn.loss import LossBase

__all__ = ["DiceLoss", "MultiClassDiceLoss", "FocalLoss", "SampledSoftmaxLoss"]

_DICE_ACTIVATIONS = ("softmax", "logsoftmax", "relu", "relu6", "tanh", "sigmoid")


def _positive_float(cls, name, value):
    value = plain(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{cls}: {name} must be a float, got {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{cls}: {name} must be greater than 0, got {value}")
    return float(value)


def _check_float_input(cls, name, value):
    check_tensor(cls, name, value)
    if value.dtype not in FLOAT_DTYPES:
        raise_error(TypeError, f"{cls}: {name} must have a float dtype, got {value.dtype}")


def _dice(logits, labels, smooth):
    """1 - 2 |x . y| / (|x|^2 + |y|^2 + smooth) over every element of the pair."""
    intersection = ops.sum(logits * labels)
    union = ops.sum(logits * logits) + ops.sum(labels * labels)
    return 1.0 - 2.0 * intersection / (union + smooth)


class DiceLoss(LossBase):
    """DiceLoss(smooth=1e-5)(logits, labels): 1 - 2 sum(x y) / (sum(x^2) + sum(y^2) + smooth),
    one scalar over the whole batch (MindSpore applies no reduction here)."""

    def __init__(self, smooth=1e-5):
        super().__init__()
        self.smooth = _positive_float("DiceLoss", "smooth", smooth)

    def construct(self, logits, labels):
        _check_float_input("DiceLoss", "logits", logits)
        _check_float_input("DiceLoss", "labels", labels)
        if tuple(logits.shape) != tuple(labels.shape):
            raise_error(ValueError, f"DiceLoss: logits and labels must have the same shape, "
                                    f"got {tuple(logits.shape)} and {tuple(labels.shape)}")
        return _dice(logits, labels, self.smooth)

    def extend_repr(self):
        return f"smooth={self.smooth}"


class MultiClassDiceLoss(LossBase):
    """MultiClassDiceLoss(weights=None, ignore_indiex=None, activation='softmax')(logits,
    labels): the binary DiceLoss (smooth 1e-5) of each class slice [:, i] after the activation,
    scaled by weights[i] when weights (num_classes, dim) is given, summed over the classes other
    than ignore_indiex and divided by the number of classes. The activation is MindSpore's
    named Cell with its default axis (-1), a Cell, or None. `ignore_indiex` is MindSpore's
    spelling, kept so that keyword calls port unchanged."""

    def __init__(self, weights=None, ignore_indiex=None, activation="softmax"):
        super().__init__()
        cls = "MultiClassDiceLoss"
        if weights is not None:
            check_tensor(cls, "weights", weights)
            if weights.ndim != 2:
                raise ValueError(f"{cls}: weights must be 2-D (num_classes, dim), got "
                                 f"{weights.ndim}-D")
        ignore_indiex = plain(ignore_indiex)
        if ignore_indiex is not None and (isinstance(ignore_indiex, bool)
                                          or not isinstance(ignore_indiex, int)):
            raise TypeError(f"{cls}: ignore_indiex must be an int or None, got "
                            f"{type(ignore_indiex).__name__}")
        if isinstance(activation, str):
            if activation not in _DICE_ACTIVATIONS:
                raise ValueError(f"{cls}: activation must be one of {_DICE_ACTIVATIONS}, a Cell "
                                 f"or None, got {activation!r}")
            activation = get_activation(activation)
        elif activation is not None and not isinstance(activation, Cell):
            raise TypeError(f"{cls}: activation must be a str, a Cell or None, got "
                            f"{type(activation).__name__}")
        self.weights, self.ignore_indiex, self.activation = weights, ignore_indiex, activation
        self.smooth = 1e-5

    def construct(self, logits, labels):
        cls = "MultiClassDiceLoss"
        _check_float_input(cls, "logits", logits)
        _check_float_input(cls, "labels", labels)
        if tuple(logits.shape) != tuple(labels.shape) or logits.ndim < 2:
            raise_error(ValueError, f"{cls}: logits and labels must have the same shape of at "
                                    f"least 2 axes (N, C, ...), got {tuple(logits.shape)} and "
                                    f"{tuple(labels.shape)}")
        n_classes = labels.shape[1]
        if self.weights is not None and self.weights.shape[0] != n_classes:
            raise_error(ValueError, f"{cls}: weights.shape[0] ({self.weights.shape[0]}) must "
                                    f"equal the number of classes labels.shape[1] ({n_classes})")
        if self.activation is not None:
            logits = self.activation(logits)
        total = 0.0
        for i in range(n_classes):
            if i == self.ignore_indiex:
                continue
            loss = _dice(logits[:, i], labels[:, i], self.smooth)
            if self.weights is not None:
                loss = loss * self.weights[i]
            total = total + loss
        return total / n_classes


class FocalLoss(LossBase):
    """FocalLoss(weight=None, gamma=2.0, reduction='mean')(logits, labels):
    -(1 - p)^gamma log p of softmax over axis 1.

    logits are (N, C), (N, C, H) or (N, C, H, W). labels of one channel, (N, 1, ...), hold class
    indices: the loss per sample is the mean over the spatial positions of the focal term of
    the labelled class, weighted by weight[class]. labels of C channels (logits' shape) are
    per-class targets: each class's focal term is multiplied by its target and weight, and
    averaged over the spatial positions, leaving (N, C). The result is then reduced."""

    def __init__(self, weight=None, gamma=2.0, reduction="mean"):
        super().__init__(reduction)
        gamma = plain(gamma)
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)):
            raise TypeError(f"FocalLoss: gamma must be a float, got {type(gamma).__name__}")
        if weight is not None:
            check_tensor("FocalLoss", "weight", weight)
            if weight.ndim != 1:
                raise ValueError(f"FocalLoss: weight must be 1-D (C,), got {weight.ndim}-D")
        self.gamma, self.weight = float(gamma), weight

    def _check(self, logits, labels):
        _check_float_input("FocalLoss", "logits", logits)
        check_tensor("FocalLoss", "labels", labels)
        if logits.ndim not in (2, 3, 4) or labels.ndim != logits.ndim:
            raise_error(ValueError, f"FocalLoss: logits must be (N, C), (N, C, H) or (N, C, H, "
                                    f"W) and labels of the same rank, got shapes "
                                    f"{tuple(logits.shape)} and {tuple(labels.shape)}")
        if labels.shape[1] != 1 and tuple(labels.shape) != tuple(logits.shape):
            raise_error(ValueError, f"FocalLoss: labels must have 1 channel or logits' shape "
                                    f"{tuple(logits.shape)}, got {tuple(labels.shape)}")
        if labels.shape[1] == 1 and labels.dtype not in INT_DTYPES:
            raise_error(TypeError, f"FocalLoss: labels of one channel hold class indices and "
                                   f"must have an integer dtype, got {labels.dtype}")
        if self.weight is not None and self.weight.shape[0] != logits.shape[1]:
            raise_error(ValueError, f"FocalLoss: weight has {self.weight.shape[0]} entries but "
                                    f"logits have {logits.shape[1]} classes")

    def construct(self, logits, labels):
        self._check(logits, labels)
        n, c = logits.shape[0], logits.shape[1]
        logits = ops.reshape(logits, (n, c, -1))
        labels = ops.reshape(labels, (labels.shape[0], labels.shape[1], -1))
        log_p = ops.log_softmax(logits, 1)
        by_index = labels.shape[1] == 1
        if by_index:
            index = ops.cast(labels, int64) % c
            log_p = ops.squeeze(ops.gather_elements(log_p, 1, index), 1)
        focus = ops.pow(1.0 - ops.exp(log_p), self.gamma)
        if self.weight is not None:
            class_weight = ops.reshape(ops.cast(self.weight, log_p.dtype), (1, c, 1))
            if by_index:
                class_weight = ops.squeeze(ops.gather(ops.reshape(self.weight, (c,)), index, 0),
                                           1)
                class_weight = ops.cast(class_weight, log_p.dtype)
            log_p = log_p * class_weight
        if by_index:
            loss = ops.mean(-focus * log_p, 1)
        else:
            loss = ops.mean(-focus * ops.cast(labels, log_p.dtype) * log_p, -1)
        return self.get_loss(loss)

    def extend_repr(self):
        return f"gamma={self.gamma}, reduction={self.reduction}"


def _check_count(cls, name, value, low):
    value = plain(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{cls}: {name} must be an int, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{cls}: {name} must be at least {low}, got {value}")
    return value


class SampledSoftmaxLoss(LossBase):
    """SampledSoftmaxLoss(num_sampled, num_classes, num_true=1, sampled_values=None,
    remove_accidental_hits=True, seed=0, reduction='none')(weights, biases, labels, logits):
    the softmax cross entropy over each example's num_true true classes and num_sampled
    sampled classes, with logits = logits . weights[class] + biases[class] - log(expected
    count), the true classes sharing the target 1 / num_true.

    sampled_values, when given, is (sampled_candidates (num_sampled,), true_expected_count
    (N, num_true), sampled_expected_count (num_sampled,)). Without it, num_sampled distinct
    classes are drawn uniformly at each call (excluding the batch's true classes when
    remove_accidental_hits), and every class's expected count is num_sampled / num_classes,
    the chance that a uniform draw without replacement includes it."""

    def __init__(self, num_sampled, num_classes, num_true=1, sampled_values=None,
                 remove_accidental_hits=True, seed=0, reduction="none"):
        super().__init__(reduction)
        cls = "SampledSoftmaxLoss"
        self.num_sampled = _check_count(cls, "num_sampled", num_sampled, 1)
        self.num_classes = _check_count(cls, "num_classes", num_classes, 1)
        self.num_true = _check_count(cls, "num_true", num_true, 1)
        self.seed = _check_count(cls, "seed", seed, 0)
        if self.num_sampled > self.num_classes or self.num_true > self.num_classes:
            raise ValueError(f"{cls}: num_sampled ({self.num_sampled}) and num_true "
                             f"({self.num_true}) must not exceed num_classes "
                             f"({self.num_classes})")
        if sampled_values is not None:
            if not isinstance(sampled_values, (list, tuple)):
                raise TypeError(f"{cls}: sampled_values must be a list or tuple, got "
                                f"{type(sampled_values).__name__}")
            if len(sampled_values) != 3:
                raise ValueError(f"{cls}: sampled_values must hold 3 tensors (sampled "
                                 f"candidates, true and sampled expected counts), got "
                                 f"{len(sampled_values)}")
            sampled_values = tuple(sampled_values)
        if not isinstance(remove_accidental_hits, bool):
            raise TypeError(f"{cls}: remove_accidental_hits must be a bool, got "
                            f"{type(remove_accidental_hits).__name__}")
        self.sampled_values = sampled_values
        self.remove_accidental_hits = remove_accidental_hits

    def _sample(self, labels_flat, batch, dtype):
        """num_sampled distinct classes: the smallest of uniform keys, with the true classes'
        keys raised above every other when accidental hits are to be avoided."""
        keys = ops.uniform((self.num_classes,), 0.0, 1.0, seed=self.seed)
        if self.remove_accidental_hits:
            hit = ops.amax(ops.one_hot(labels_flat, self.num_classes, 1.0, 0.0), 0)
            keys = keys + 2.0 * hit
        _, sampled = ops.topk(keys, self.num_sampled, largest=False)
        expected = float(self.num_sampled) / self.num_classes
        true_count = ops.fill(dtype, (batch, self.num_true), expected)
        sampled_count = ops.fill(dtype, (self.num_sampled,), expected)
        return sampled, true_count, sampled_count

    def construct(self, weights, biases, labels, logits):
        cls = "SampledSoftmaxLoss"
        for name, value in (("weights", weights), ("biases", biases), ("logits", logits)):
            _check_float_input(cls, name, value)
        check_tensor(cls, "labels", labels)
        if labels.dtype not in (int32, int64):
            raise_error(TypeError, f"{cls}: labels must be int32 or int64, got {labels.dtype}")
        if weights.ndim != 2 or logits.ndim != 2 or weights.shape[1] != logits.shape[1]:
            raise_error(ValueError, f"{cls}: weights must be (num_classes, dim) and logits "
                                    f"(N, dim), got {tuple(weights.shape)} and "
                                    f"{tuple(logits.shape)}")
        batch = logits.shape[0]
        labels = ops.reshape(ops.cast(labels, int64), (batch, self.num_true))
        labels_flat = ops.reshape(labels, (-1,))
        if self.sampled_values is None:
            sampled, true_count, sampled_count = self._sample(labels_flat, batch, logits.dtype)
        else:
            sampled, true_count, sampled_count = self.sampled_values
        sampled = ops.cast(sampled, int64)
        true_w = ops.reshape(ops.gather(weights, labels_flat, 0), (batch, self.num_true, -1))
        true_logits = ops.sum(ops.expand_dims(logits, 1) * true_w, -1)
        true_logits = true_logits + ops.reshape(ops.gather(biases, labels_flat, 0),
                                                (batch, self.num_true))
        sampled_logits = ops.matmul(logits, ops.transpose(ops.gather(weights, sampled, 0),
                                                          (1, 0)))
        sampled_logits = sampled_logits + ops.gather(biases, sampled, 0)
        true_logits = true_logits - ops.log(ops.cast(true_count, logits.dtype))
        sampled_logits = sampled_logits - ops.log(ops.cast(sampled_count, logits.dtype))
        all_logits = ops.concat((true_logits, sampled_logits), 1)
        # The true classes take the first num_true columns, each with target 1 / num_true.
        log_p = ops.log_softmax(all_logits, 1)
        loss = -ops.sum(log_p[:, :self.num_true], 1) / self.num_true
        return self.get_loss(loss)

    def extend_repr(self):
        return (f"num_sampled={self.num_sampled}, num_classes={self.num_classes}, "
                f"num_true={self.num_true}, reduction={self.reduction}")
