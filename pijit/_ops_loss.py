"""Loss functions with MindSpore 2.x's `mindspore.ops` names, signatures and defaults:
cross_entropy, nll_loss, binary_cross_entropy, binary_cross_entropy_with_logits,
smooth_l1_loss, huber_loss, kl_div, mse_loss, l1_loss, soft_margin_loss and
margin_ranking_loss.

Each is composed of pijit's native ops, so it runs on the eager autodiff tape, is inlined into
captured graphs, and takes its gradient from the ops' rules. Arguments are checked in Python
before any op runs; the checks read only shapes, dtypes and Python values, which capture knows,
so a valid call is still captured as one graph."""
from pijit import _C
from pijit._numbers import plain
from pijit._tensor import (Tensor, bfloat16, float16, float32, float64, int8, int16, int32,
                           int64, uint8, uint16, uint32, uint64)

_ops = _C.ops

_REDUCTIONS = ("mean", "sum", "none")
_KL_REDUCTIONS = ("mean", "batchmean", "sum", "none")
_FLOAT_DTYPES = (float16, bfloat16, float32, float64)
_INT_DTYPES = (uint8, int8, int16, int32, int64, uint16, uint32, uint64)
# The floor of log(p) in binary_cross_entropy, as the reference frameworks clamp it, so that a
# probability of exactly 0 or 1 gives a large finite loss rather than inf.
_LOG_FLOOR = -100.0

__all__ = ["cross_entropy", "nll_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "smooth_l1_loss", "huber_loss", "kl_div",
           "mse_loss", "l1_loss", "soft_margin_loss", "margin_ranking_loss"]


# ---- argument checks -------------------------------------------------------------------------

def _check_tensor(fn, name, value):
    if not isinstance(value, Tensor):
        raise TypeError(f"{fn}: {name} must be a Tensor, got {type(value).__name__}")


def _check_float_tensor(fn, name, value):
    _check_tensor(fn, name, value)
    if value.dtype not in _FLOAT_DTYPES:
        raise TypeError(f"{fn}: {name} must have a floating-point dtype, got {value.dtype}")


def _is_int_tensor(value):
    return value.dtype in _INT_DTYPES


def _check_reduction(fn, reduction, allowed=_REDUCTIONS):
    if not isinstance(reduction, str) or reduction not in allowed:
        raise ValueError(f"{fn}: reduction must be one of {allowed}, got {reduction!r}")


def _check_number(fn, name, value):
    """`value` as a Python float; ints and NumPy scalars are taken, bools are not."""
    value = plain(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{fn}: {name} must be a float, got {type(value).__name__}")
    return float(value)


def _check_positive(fn, name, value):
    value = _check_number(fn, name, value)
    if not value > 0:
        raise ValueError(f"{fn}: {name} must be greater than 0, got {value}")
    return value


def _check_label_smoothing(fn, value):
    value = _check_number(fn, "label_smoothing", value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{fn}: label_smoothing must be in [0.0, 1.0], got {value}")
    return value


def _check_ignore_index(fn, value):
    value = plain(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{fn}: ignore_index must be an int, got {type(value).__name__}")
    return value


def _check_same_shape(fn, name, value, ref_name, ref):
    if value.shape != ref.shape:
        raise ValueError(f"{fn}: {name} must have the shape of {ref_name} {ref.shape}, "
                         f"got {value.shape}")


def _broadcast_shape(fn, name, shape, ref_name, ref_shape):
    """NumPy's broadcast of two shapes, or a ValueError naming both."""
    ndim = max(len(shape), len(ref_shape))
    a = (1,) * (ndim - len(shape)) + tuple(shape)
    b = (1,) * (ndim - len(ref_shape)) + tuple(ref_shape)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"{fn}: {name} of shape {shape} does not broadcast with {ref_name} "
                             f"of shape {ref_shape}")
        out.append(y if x == 1 else x)
    return tuple(out)


def _check_broadcasts_to(fn, name, value, ref_name, ref):
    """`value` broadcasts to `ref`'s shape without growing it (a per-element weight)."""
    _check_float_tensor(fn, name, value)
    if _broadcast_shape(fn, name, value.shape, ref_name, ref.shape) != ref.shape:
        raise ValueError(f"{fn}: {name} of shape {value.shape} must broadcast to the shape of "
                         f"{ref_name} {ref.shape}")


def _reduce(loss, reduction):
    if reduction == "mean":
        return _ops.mean(loss)
    if reduction == "sum":
        return _ops.sum(loss)
    return loss


# ---- classification over a class axis -------------------------------------------------------

def _class_axis_shape(ndim, n_classes):
    """The shape that spreads a (C,) vector along axis 1 of an ndim-d input."""
    return (1, n_classes) + (1,) * (ndim - 2)


def _check_class_weight(fn, weight, n_classes):
    if weight is None:
        return
    _check_float_tensor(fn, "weight", weight)
    if weight.shape != (n_classes,):
        raise ValueError(f"{fn}: weight must have shape ({n_classes},), one value per class, "
                         f"got {weight.shape}")


def _check_class_input(fn, name, input):  # noqa: A002 - MindSpore's name
    _check_float_tensor(fn, name, input)
    if input.ndim < 2:
        raise ValueError(f"{fn}: {name} must have shape (N, C) or (N, C, d1, ...), "
                         f"got {input.shape}")


def _check_class_index_target(fn, target, input_shape):  # noqa: A002
    expected = (input_shape[0],) + tuple(input_shape[2:])
    if target.shape != expected:
        raise ValueError(f"{fn}: target of class indices must have shape {expected} (the input's "
                         f"{input_shape} without its class axis 1), got {target.shape}")


def _class_index_loss(log_probs, target, weight, ignore_index, reduction, label_smoothing):
    """Negative log-likelihood of integer targets given log-probabilities over axis 1.

    'mean' divides by the summed weight of the targets that are not ignore_index (the
    weighted mean of MindSpore and torch), for the label-smoothing term too."""
    n_classes = log_probs.shape[1]
    dtype = log_probs.dtype
    kept = target != ignore_index
    # An ignored target may lie outside [0, C): one_hot is given class 0 in its place, and
    # the mask zeroes its loss and its weight.
    picked = _ops.one_hot(_ops.where(kept, target, 0), n_classes, 1.0, 0.0, axis=1, dtype=dtype)
    kept = kept.astype(dtype)
    if weight is None:
        target_weight = kept
        weighted_log_probs = log_probs
    else:
        class_weight = weight.astype(dtype).reshape(_class_axis_shape(log_probs.ndim, n_classes))
        target_weight = _ops.sum(picked * class_weight, 1) * kept
        weighted_log_probs = log_probs * class_weight
    nll = -_ops.sum(log_probs * picked, 1) * target_weight
    if label_smoothing > 0.0:
        # The uniform part of the smoothed target: every class weighted by 1/C.
        uniform = -_ops.sum(weighted_log_probs, 1) * kept
        spread = label_smoothing / n_classes
        if reduction == "none":
            return nll * (1.0 - label_smoothing) + uniform * spread
        total = _ops.sum(nll) * (1.0 - label_smoothing) + _ops.sum(uniform) * spread
    elif reduction == "none":
        return nll
    else:
        total = _ops.sum(nll)
    if reduction == "sum":
        return total
    return total / _ops.sum(target_weight)


def _class_probability_loss(log_probs, target, weight, reduction, label_smoothing):
    """Cross entropy against a distribution over axis 1; 'mean' averages over the samples
    (every position of N, d1, ...), as MindSpore and torch do."""
    n_classes = log_probs.shape[1]
    if label_smoothing > 0.0:
        target = target * (1.0 - label_smoothing) + label_smoothing / n_classes
    products = log_probs * target
    if weight is not None:
        class_weight = weight.astype(log_probs.dtype).reshape(
            _class_axis_shape(log_probs.ndim, n_classes))
        products = products * class_weight
    return _reduce(-_ops.sum(products, 1), reduction)


def _one_sample(input, target, target_is_index):  # noqa: A002
    """A (C,) input and its () index or (C,) distribution as a batch of one."""
    target_shape = (1,) if target_is_index else (1,) + tuple(target.shape)
    return input.reshape(1, input.shape[0]), target.reshape(target_shape)


def _check_class_loss_args(fn, target, reduction, ignore_index, label_smoothing):
    """The checks cross_entropy and nll_loss share; the checked ignore_index and
    label_smoothing."""
    _check_tensor(fn, "target", target)
    _check_reduction(fn, reduction)
    return _check_ignore_index(fn, ignore_index), _check_label_smoothing(fn, label_smoothing)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean",  # noqa: A002
                  label_smoothing=0.0):
    """Cross entropy between the logits `input` (N, C) or (N, C, d1, ...), or (C,) for one
    sample, and `target`: class indices of an integer dtype, of shape (N,) or (N, d1, ...)
    (ignore_index marks those left out), or class probabilities of the input's shape.

    weight (C,) rescales each class. 'mean' is the weighted mean over the targets that are
    not ignored for class indices, the mean over samples for probabilities. label_smoothing
    mixes the target with the uniform distribution over the C classes."""
    fn = "cross_entropy"
    _check_float_tensor(fn, "input", input)
    ignore_index, label_smoothing = _check_class_loss_args(fn, target, reduction, ignore_index,
                                                           label_smoothing)
    target_is_index = _is_int_tensor(target)
    if not target_is_index and target.dtype not in _FLOAT_DTYPES:
        raise TypeError(f"{fn}: target must hold class indices (an integer dtype) or class "
                        f"probabilities (a floating-point dtype), got {target.dtype}")
    if input.ndim == 0:
        raise ValueError(f"{fn}: input must have shape (C,), (N, C) or (N, C, d1, ...), "
                         f"got {input.shape}")
    single = input.ndim == 1
    if single:
        expected = () if target_is_index else input.shape
        if target.shape != expected:
            raise ValueError(f"{fn}: for an input of shape {input.shape}, target must have "
                             f"shape {expected}, got {target.shape}")
        input, target = _one_sample(input, target, target_is_index)  # noqa: A001
    _check_class_weight(fn, weight, input.shape[1])
    log_probs = _ops.log_softmax(input, 1)
    if target_is_index:
        _check_class_index_target(fn, target, input.shape)
        loss = _class_index_loss(log_probs, target, weight, ignore_index, reduction,
                                 label_smoothing)
    else:
        _check_same_shape(fn, "target of class probabilities", target, "input", input)
        loss = _class_probability_loss(log_probs, target, weight, reduction, label_smoothing)
    if single and reduction == "none":
        return loss.reshape(())
    return loss


def nll_loss(inputs, target, weight=None, ignore_index=-100, reduction="mean",
             label_smoothing=0.0):
    """Negative log-likelihood: `inputs` (N, C) or (N, C, d1, ...) holds log-probabilities,
    `target` (N,) or (N, d1, ...) integer class indices. weight, ignore_index, reduction and
    label_smoothing as cross_entropy's for class indices."""
    fn = "nll_loss"
    _check_class_input(fn, "inputs", inputs)
    ignore_index, label_smoothing = _check_class_loss_args(fn, target, reduction, ignore_index,
                                                           label_smoothing)
    if not _is_int_tensor(target):
        raise TypeError(f"{fn}: target must hold class indices of an integer dtype, "
                        f"got {target.dtype}")
    _check_class_index_target(fn, target, inputs.shape)
    _check_class_weight(fn, weight, inputs.shape[1])
    return _class_index_loss(inputs, target, weight, ignore_index, reduction, label_smoothing)


# ---- binary classification -------------------------------------------------------------------

def _check_binary_args(fn, logits, labels_name, labels, weight, reduction):
    """The checks of the binary cross-entropies: float logits and labels of one shape, weight
    (when given) broadcasting to logits, a known reduction."""
    _check_float_tensor(fn, "logits", logits)
    _check_float_tensor(fn, labels_name, labels)
    _check_reduction(fn, reduction)
    _check_same_shape(fn, labels_name, labels, "logits", logits)
    if weight is not None:
        _check_broadcasts_to(fn, "weight", weight, "logits", logits)


def binary_cross_entropy(logits, labels, weight=None, reduction="mean"):
    """-weight * (labels * log(logits) + (1 - labels) * log(1 - logits)), where `logits` are
    probabilities in [0, 1] (a sigmoid's output); each log is floored at -100. weight
    broadcasts to the shape of logits."""
    _check_binary_args("binary_cross_entropy", logits, "labels", labels, weight, reduction)
    log_p = _ops.clip(_ops.log(logits), _LOG_FLOOR, None)
    log_not_p = _ops.clip(_ops.log(1.0 - logits), _LOG_FLOOR, None)
    loss = -(labels * log_p + (1.0 - labels) * log_not_p)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _log1p_exp_neg_abs(x):
    """log(1 + exp(-|x|)): the part of softplus that never overflows."""
    return _ops.log1p(_ops.exp(-_ops.abs(x)))


def binary_cross_entropy_with_logits(logits, label, weight=None, pos_weight=None,
                                     reduction="mean"):
    """binary_cross_entropy of sigmoid(logits), in the stable form
    (1 - label) * x + (1 + (pos_weight - 1) * label) * (log1p(exp(-|x|)) + max(-x, 0)),
    which neither overflows for large |x| nor loses the loss where sigmoid rounds to 0 or 1.
    pos_weight weighs the positive term (per class, broadcast over the last axis); weight
    weighs every element. Both broadcast to the shape of logits."""
    fn = "binary_cross_entropy_with_logits"
    _check_binary_args(fn, logits, "label", label, weight, reduction)
    if pos_weight is not None:
        _check_broadcasts_to(fn, "pos_weight", pos_weight, "logits", logits)
    # -log(sigmoid(x)) = log(1 + exp(-x)) = log1p(exp(-|x|)) + max(-x, 0)
    neg_log_sigmoid = _log1p_exp_neg_abs(logits) + _ops.relu(-logits)
    if pos_weight is None:
        loss = (1.0 - label) * logits + neg_log_sigmoid
    else:
        loss = (1.0 - label) * logits + (1.0 + (pos_weight - 1.0) * label) * neg_log_sigmoid
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, reduction="mean"):  # noqa: A002 - MindSpore's name
    """log(1 + exp(-target * input)) per element, for targets of 1 or -1."""
    fn = "soft_margin_loss"
    _check_float_tensor(fn, "input", input)
    _check_float_tensor(fn, "target", target)
    _check_reduction(fn, reduction)
    _check_same_shape(fn, "target", target, "input", input)
    margin = -target * input
    return _reduce(_log1p_exp_neg_abs(margin) + _ops.relu(margin), reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """max(0, -target * (input1 - input2) + margin), for targets of 1 (input1 should rank
    higher) or -1."""
    fn = "margin_ranking_loss"
    _check_float_tensor(fn, "input1", input1)
    _check_float_tensor(fn, "input2", input2)
    _check_float_tensor(fn, "target", target)
    margin = _check_number(fn, "margin", margin)
    _check_reduction(fn, reduction)
    _check_same_shape(fn, "input2", input2, "input1", input1)
    _check_same_shape(fn, "target", target, "input1", input1)
    return _reduce(_ops.relu(-target * (input1 - input2) + margin), reduction)


# ---- regression ------------------------------------------------------------------------------

def _difference(fn, input, target, same_shape):  # noqa: A002
    _check_float_tensor(fn, "input", input)
    _check_float_tensor(fn, "target", target)
    if same_shape:
        _check_same_shape(fn, "target", target, "input", input)
    else:
        _broadcast_shape(fn, "target", target.shape, "input", input.shape)
    return input - target


def mse_loss(input, target, reduction="mean"):  # noqa: A002 - MindSpore's name
    """(input - target) ** 2; the two broadcast."""
    _check_reduction("mse_loss", reduction)
    diff = _difference("mse_loss", input, target, same_shape=False)
    return _reduce(diff * diff, reduction)


def l1_loss(input, target, reduction="mean"):  # noqa: A002 - MindSpore's name
    """|input - target|; the two broadcast."""
    _check_reduction("l1_loss", reduction)
    return _reduce(_ops.abs(_difference("l1_loss", input, target, same_shape=False)), reduction)


def smooth_l1_loss(input, target, beta=1.0, reduction="none"):  # noqa: A002 - MindSpore's name
    """0.5 * d ** 2 / beta where |d| < beta, else |d| - 0.5 * beta, for d = input - target
    (the two of one shape). MindSpore reduces nothing by default here."""
    fn = "smooth_l1_loss"
    beta = _check_positive(fn, "beta", beta)
    _check_reduction(fn, reduction)
    diff = _difference(fn, input, target, same_shape=True)
    size = _ops.abs(diff)
    loss = _ops.where(size < beta, diff * diff * (0.5 / beta), size - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0):  # noqa: A002 - MindSpore's name
    """0.5 * d ** 2 where |d| < delta, else delta * (|d| - 0.5 * delta), for
    d = input - target (the two broadcast)."""
    fn = "huber_loss"
    _check_reduction(fn, reduction)
    delta = _check_positive(fn, "delta", delta)
    diff = _difference(fn, input, target, same_shape=False)
    size = _ops.abs(diff)
    loss = _ops.where(size < delta, diff * diff * 0.5, (size - 0.5 * delta) * delta)
    return _reduce(loss, reduction)


def kl_div(logits, labels, reduction="mean"):
    """labels * (log(labels) - logits) per element, where `logits` are log-probabilities and
    a label of 0 contributes 0. 'batchmean' divides the sum by the batch size (logits'
    first axis), the only reduction that gives the Kullback-Leibler divergence; 'mean'
    divides by the number of elements, as MindSpore's default does."""
    fn = "kl_div"
    _check_float_tensor(fn, "logits", logits)
    _check_float_tensor(fn, "labels", labels)
    _check_reduction(fn, reduction, _KL_REDUCTIONS)
    _check_same_shape(fn, "labels", labels, "logits", logits)
    if reduction == "batchmean" and logits.ndim == 0:
        raise ValueError(f"{fn}: reduction 'batchmean' needs logits with a batch axis, "
                         f"got shape {logits.shape}")
    # log(1) = 0 in place of log(0): 0 * log(0) is taken as 0, and no inf reaches the tape.
    safe_labels = _ops.where(labels > 0, labels, 1.0)
    loss = labels * (_ops.log(safe_labels) - logits)
    if reduction == "batchmean":
        return _ops.sum(loss) / logits.shape[0]
    return _reduce(loss, reduction)
