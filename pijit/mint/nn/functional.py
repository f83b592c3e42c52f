"""mint.nn.functional: torch-style layer functions (activations, normalisation, losses,
pooling, padding, embedding, fold/unfold, grid_sample) over pijit's ops, so each runs on
the eager tape and pijit.jit captures it like the ops it calls."""
import math

from pijit import _C
from pijit import _ops_activation
from pijit import _ops_composed
from pijit import _ops_loss
from pijit import ops as _pijit_ops
from pijit._ops_special import stop_gradient
from pijit.mint._checks import (check_bool, check_choice, check_dim, check_int, check_tensor,
                                is_int, raise_error)
from pijit.mint.nn._fold import fold, max_pool_indices, pair, unfold  # noqa: F401
from pijit.mint.nn._grid_sample import grid_sample  # noqa: F401 - re-exported

_ops = _C.ops
_REDUCTIONS = ("none", "mean", "sum")


# ---- activations -----------------------------------------------------------------------------

def relu(input, inplace=False):  # noqa: A002 - mint's names
    return _ops.relu(input)


def sigmoid(input):  # noqa: A002
    return _ops.sigmoid(input)


def tanh(input):  # noqa: A002
    return _ops.tanh(input)


def silu(input, inplace=False):  # noqa: A002
    return _ops_activation.silu(input)


def elu(input, alpha=1.0, inplace=False):  # noqa: A002
    """x where x > 0, else alpha * (exp(x) - 1)."""
    return _ops_activation.elu(input, alpha)


def leaky_relu(input, negative_slope=0.01, inplace=False):  # noqa: A002
    """x where x > 0, else negative_slope * x."""
    return _ops_composed.leaky_relu(input, negative_slope)


def gelu(input, approximate="none"):  # noqa: A002
    """x * Phi(x): exact (erf) for approximate='none', the tanh form for 'tanh'."""
    check_choice("gelu", "approximate", approximate, ("none", "tanh"))
    if approximate == "none":
        return _ops.gelu(input)
    inner = math.sqrt(2.0 / math.pi) * (input + 0.044715 * input * input * input)
    return 0.5 * input * (1.0 + _ops.tanh(inner))


def softmax(input, dim=None, dtype=None):  # noqa: A002
    """exp(x) / sum(exp(x)) along `dim` (the last axis when None), computed in `dtype`."""
    check_tensor("softmax", "input", input)
    if dtype is not None and input.dtype != dtype:
        input = input.astype(dtype)  # noqa: A001
    dim = -1 if dim is None else dim
    return _ops.softmax(input, check_dim("softmax", dim, input.ndim))


def softplus(input, beta=1, threshold=20):  # noqa: A002
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""
    check_tensor("softplus", "input", input)
    if beta == 0:
        raise_error(ValueError, "softplus: beta must not be 0")
    scaled = input * beta
    smooth = _ops.softplus(scaled) / beta if beta != 1 else _ops.softplus(input)
    return _ops.where(_ops.greater(scaled, threshold), input, smooth)


# ---- normalisation and layers ----------------------------------------------------------------

def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,  # noqa: A002
               momentum=0.1, eps=1e-05):
    """Normalises each channel (axis 1): by the batch's statistics when training (updating
    running_mean and running_var in place with `momentum`), else by the running ones."""
    check_tensor("batch_norm", "input", input)
    if input.ndim < 2:
        raise_error(ValueError, f"batch_norm: input must have a channel axis, got "
                                f"{input.ndim}-D")
    channels = input.shape[1]
    ones = _ops.ones((channels,), dtype=input.dtype)
    return _ops.batch_norm(input, running_mean, running_var,
                           ones if weight is None else weight,
                           ones * 0.0 if bias is None else bias,
                           training=training, momentum=momentum, eps=eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):  # noqa: A002
    """Normalises over the last len(normalized_shape) axes, then scales and shifts."""
    check_tensor("layer_norm", "input", input)
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    if input.shape[input.ndim - len(normalized_shape):] != normalized_shape:
        raise_error(ValueError, f"layer_norm: normalized_shape {normalized_shape} does not "
                                f"end input's shape {input.shape}")
    ones = _ops.ones(normalized_shape, dtype=input.dtype)
    return _ops.layer_norm(input, normalized_shape, ones if weight is None else weight,
                           ones * 0.0 if bias is None else bias, eps=eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):  # noqa: A002
    """Normalises each of num_groups groups of channels (axis 1) over its channels and the
    spatial axes, then scales and shifts each channel."""
    check_tensor("group_norm", "input", input)
    num_groups = check_int("group_norm", "num_groups", num_groups, low=1)
    if input.ndim < 2 or input.shape[1] % num_groups:
        raise_error(ValueError, f"group_norm: input's channels (axis 1 of {input.shape}) must "
                                f"divide into {num_groups} groups")
    n, channels = input.shape[0], input.shape[1]
    grouped = _ops.reshape(input, (n, num_groups, -1))
    mean = _ops.mean(grouped, -1, keepdims=True)
    centred = grouped - mean
    var = _ops.mean(centred * centred, -1, keepdims=True)
    out = _ops.reshape(centred * _ops.rsqrt(var + eps), input.shape)
    per_channel = (1, channels) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = out * _ops.reshape(weight, per_channel)
    if bias is not None:
        out = out + _ops.reshape(bias, per_channel)
    return out


def linear(input, weight, bias=None):  # noqa: A002
    """input @ weight.T + bias."""
    check_tensor("linear", "input", input)
    check_tensor("linear", "weight", weight)
    return _pijit_ops.dense(input, weight, bias)


def dropout(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zeroes each element with probability p and scales the rest by 1 / (1 - p) when
    training; the identity otherwise."""
    if not 0.0 <= p <= 1.0:
        raise_error(ValueError, f"dropout: p must be in [0, 1], got {p}")
    return _pijit_ops.dropout(input, p, training)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,  # noqa: A002
              scale_grad_by_freq=False):
    """The rows of `weight` at the integer ids of `input`: input.shape + (embedding size,).
    The row at padding_idx gets no gradient."""
    check_tensor("embedding", "input", input)
    check_tensor("embedding", "weight", weight)
    if not is_int(input):
        raise_error(TypeError, f"embedding: input must hold integer ids, got {input.dtype}")
    if max_norm is not None or scale_grad_by_freq:
        # Both change the weight or its gradient in ways pijit's ops do not express.
        raise_error(ValueError, "embedding: max_norm and scale_grad_by_freq are not supported")
    rows = _ops.gather(weight, input, 0)
    if padding_idx is None:
        return rows
    padding_idx = check_int("embedding", "padding_idx", padding_idx)
    if not -weight.shape[0] <= padding_idx < weight.shape[0]:
        raise_error(ValueError, f"embedding: padding_idx {padding_idx} is outside the "
                                f"{weight.shape[0]} rows of weight")
    # The padding row is read like any other but takes no gradient.
    padded = _ops.unsqueeze(_ops.equal(input, padding_idx % weight.shape[0]), -1)
    return _ops.where(padded, stop_gradient(rows), rows)


def one_hot(tensor, num_classes=-1):
    """tensor's integer classes as one-hot vectors along a new last axis, in tensor's dtype.
    num_classes=-1 takes the largest class + 1, read from the data (eagerly: a captured
    graph stops there)."""
    check_tensor("one_hot", "tensor", tensor)
    if not is_int(tensor):
        raise_error(TypeError, f"one_hot: tensor must be an integer Tensor, got {tensor.dtype}")
    num_classes = check_int("one_hot", "num_classes", num_classes, low=-1)
    if num_classes == -1:
        num_classes = int(tensor.asnumpy().max()) + 1 if tensor.size else 0
    return _ops.one_hot(tensor, num_classes, 1, 0).astype(tensor.dtype)


# ---- losses ----------------------------------------------------------------------------------

def binary_cross_entropy(input, target, weight=None, reduction="mean"):  # noqa: A002
    """-weight * (target * log(input) + (1 - target) * log(1 - input)) for probabilities
    `input`, reduced by `reduction`."""
    check_choice("binary_cross_entropy", "reduction", reduction, _REDUCTIONS)
    return _ops_loss.binary_cross_entropy(input, target, weight, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean",  # noqa: A002
                                     pos_weight=None):
    """binary_cross_entropy of sigmoid(input), computed stably; pos_weight scales the
    positive term."""
    check_choice("binary_cross_entropy_with_logits", "reduction", reduction, _REDUCTIONS)
    return _ops_loss.binary_cross_entropy_with_logits(input, target, weight, pos_weight,
                                                      reduction)


# ---- pooling and padding ---------------------------------------------------------------------

def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    """The maximum over each kernel window of the last two axes; with return_indices, also
    the Int64 flat (h * W + w) index of each maximum."""
    check_tensor("max_pool2d", "input", input)
    check_bool("max_pool2d", "ceil_mode", ceil_mode)
    check_bool("max_pool2d", "return_indices", return_indices)
    stride = kernel_size if stride is None else stride
    values = _ops.max_pool2d(input, kernel_size, stride=stride, padding=padding,
                             dilation=dilation, ceil_mode=ceil_mode)
    if not return_indices:
        return values
    fname = "max_pool2d"
    indices = max_pool_indices(input, values, pair(fname, "kernel_size", kernel_size, 1),
                               pair(fname, "stride", stride, 1),
                               pair(fname, "padding", padding, 0),
                               pair(fname, "dilation", dilation, 1))
    return values, indices


def _pad_axis(x, axis, before, after, mode, value):
    """x padded (or cropped, for negative amounts) on one axis."""
    size = x.shape[axis]
    if before < 0 or after < 0:
        x = x[(slice(None),) * axis + (slice(-before if before < 0 else 0,
                                             size + after if after < 0 else size),)]
        return _pad_axis(x, axis, max(before, 0), max(after, 0), mode, value)
    if not before and not after:
        return x
    if mode == "constant":
        paddings = tuple((before, after) if d == axis else (0, 0) for d in range(x.ndim))
        return _ops_composed.pad(x, paddings, "CONSTANT", value)
    if mode == "reflect":
        paddings = tuple((before, after) if d == axis else (0, 0) for d in range(x.ndim))
        return _ops_composed.pad(x, paddings, "REFLECT")
    lead = (slice(None),) * axis
    if mode == "replicate":
        first, last = x[lead + (slice(0, 1),)], x[lead + (slice(size - 1, size),)]
        pieces = (_ops_composed.tile(first, (1,) * axis + (before,) + (1,) * (x.ndim - axis - 1)),
                  x,
                  _ops_composed.tile(last, (1,) * axis + (after,) + (1,) * (x.ndim - axis - 1)))
    else:  # circular: the other end's elements wrap around
        if before > size or after > size:
            raise_error(ValueError, f"pad: circular padding of {max(before, after)} exceeds "
                                    f"the axis size {size}")
        pieces = (x[lead + (slice(size - before, size),)], x, x[lead + (slice(0, after),)])
    return _ops.concat(tuple(p for p in pieces if p.shape[axis]), axis)


def pad(input, pad, mode="constant", value=None):  # noqa: A002
    """input padded by `pad` = (last axis before, last axis after, second-to-last before,
    ...): with `value` (constant), the mirror image without the edge (reflect), the edge
    repeated (replicate) or the other end's elements (circular). Negative amounts crop."""
    check_tensor("pad", "input", input)
    check_choice("pad", "mode", mode, ("constant", "reflect", "replicate", "circular"))
    pad = tuple(pad)
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise_error(ValueError, f"pad: pad must hold (before, after) pairs for at most "
                                f"{input.ndim} axes, got {pad}")
    if mode != "constant" and value is not None:
        raise_error(ValueError, f"pad: value applies to mode 'constant' only, not {mode!r}")
    out = input
    for i in range(len(pad) // 2):
        axis = input.ndim - 1 - i
        out = _pad_axis(out, axis, check_int("pad", "pad", pad[2 * i]),
                        check_int("pad", "pad", pad[2 * i + 1]), mode,
                        0.0 if value is None else value)
    return out
