"""Primitives over the ops functions of pijit/_ops_sample.py, _ops_nn_more.py and
_ops_misc_extra.py, and a few more composed here (bucketing, histograms, diagonals, splits,
norms, mirror padding, embedding lookup, the NLL and sparse cross-entropy losses)."""
import math

from pijit import _C
from pijit import _ops_composed
from pijit import _ops_misc_extra as _misc
from pijit import _ops_nn_more as _nn
from pijit import _ops_sample as _sample
from pijit import _ops_special as _special
from pijit import _ops_conv3d as _conv3d
from pijit import _ops_nd as _nd
from pijit import _ops_math_extra as _math
from pijit import _ops_array_extra as _array
from pijit import _ops_resize
from pijit import _primitives_extra as _prims
from pijit.numpy import creation as _np_creation
from pijit._tensor import Tensor, float32, float64, int32, int64
from pijit.mint import _sort as _mint_sort
from pijit.mint._checks import check_tensor, raise_error
from pijit.mint.nn import _grid_sample
from pijit.ops import Primitive

_ops = _C.ops


def _primitive(name, attributes, call, doc, check=None):
    """A primitive with the given attributes (name -> default), checked by check(name,
    values) when constructed (when given) and called as call(self, *args)."""

    def __init__(self, *args, **kwargs):
        names = tuple(attributes)
        if len(args) > len(names) or set(kwargs) - set(names):
            raise TypeError(f"{name} takes the attributes {names}")
        values = dict(attributes)
        values.update(zip(names, args))
        values.update(kwargs)
        if check is not None:
            check(name, values)
        Primitive.__init__(self, **values)

    return type(name, (Primitive,), {"__init__": __init__, "__call__": call, "__doc__": doc,
                                     "__module__": "pijit.ops"})


def _length(value):
    """A window length or count given as an int or a one-element Tensor."""
    return int(value.asnumpy().reshape(-1)[0]) if isinstance(value, Tensor) else int(value)


# ---- sampling and windows ------------------------------------------------------------------------

Multinomial = _primitive(
    "Multinomial", {"seed": 0, "seed2": 0, "dtype": int32},
    lambda self, x, num_samples: _sample.multinomial(x, num_samples, True, self.seed)
    .astype(self.dtype),
    "Multinomial(seed=0, seed2=0, dtype=int32)(x, num_samples): draws with replacement.")
RandomCategorical = _primitive(
    "RandomCategorical", {"dtype": int64},
    lambda self, logits, num_samples, seed=0: _sample.random_categorical(logits, num_samples,
                                                                         seed, self.dtype),
    "RandomCategorical(dtype=int64)(logits, num_samples, seed=0).")
HammingWindow = _primitive(
    "HammingWindow", {"periodic": True, "alpha": 0.54, "beta": 0.46, "dtype": float32},
    lambda self, length: _sample.hamming_window(_length(length), self.periodic, self.alpha,
                                                self.beta, dtype=self.dtype),
    "HammingWindow(periodic=True, alpha=0.54, beta=0.46, dtype=float32)(length).")
BartlettWindow = _primitive(
    "BartlettWindow", {"periodic": True, "dtype": float32},
    lambda self, length: _sample.bartlett_window(_length(length), self.periodic,
                                                 dtype=self.dtype),
    "BartlettWindow(periodic=True, dtype=float32)(window_length).")
BlackmanWindow = _primitive(
    "BlackmanWindow", {"periodic": True, "dtype": float32},
    lambda self, length: _sample.blackman_window(_length(length), self.periodic,
                                                 dtype=self.dtype),
    "BlackmanWindow(periodic=True, dtype=float32)(window_length).")


def _randperm(self, n):
    count = _length(n)
    if count > self.max_length:
        raise_error(ValueError, f"Randperm: n ({count}) exceeds max_length ({self.max_length})")
    perm = _sample.randperm(count, dtype=self.dtype)
    return _ops.concat((perm, _ops.full((self.max_length - count,), self.pad,
                                        dtype=self.dtype)), 0)


Randperm = _primitive("Randperm", {"max_length": 1, "pad": -1, "dtype": int32}, _randperm,
                      "Randperm(max_length=1, pad=-1, dtype=int32)(n): a permutation of "
                      "0 .. n - 1, padded with pad to max_length.")

# ---- layers, geometry, losses ----------------------------------------------------------------------

LRN = _primitive(
    "LRN", {"depth_radius": 5, "bias": 1.0, "alpha": 1.0, "beta": 0.5,
            "norm_region": "ACROSS_CHANNELS"},
    lambda self, x: _nn.lrn(x, self.depth_radius, self.bias, self.alpha, self.beta,
                            self.norm_region),
    "LRN(depth_radius=5, bias=1.0, alpha=1.0, beta=0.5)(x): local response normalisation.")
IOU = _primitive("IOU", {"mode": "iou"},
                 lambda self, anchor_boxes, gt_boxes: _nn.iou(anchor_boxes, gt_boxes, self.mode),
                 "IOU(mode='iou')(anchor_boxes, gt_boxes): (M, N) overlaps.")
AffineGrid = _primitive(
    "AffineGrid", {"align_corners": False},
    lambda self, theta, output_size: _nn.affine_grid(theta, output_size, self.align_corners),
    "AffineGrid(align_corners=False)(theta, output_size).")
GridSampler2D = _primitive(
    "GridSampler2D", {"interpolation_mode": "bilinear", "padding_mode": "zeros",
                      "align_corners": False},
    lambda self, x, grid: _grid_sample.grid_sample(x, grid, self.interpolation_mode,
                                                   self.padding_mode, self.align_corners),
    "GridSampler2D(interpolation_mode='bilinear', padding_mode='zeros', "
    "align_corners=False)(input_x, grid).")
GridSampler3D = _primitive(
    "GridSampler3D", {"interpolation_mode": "bilinear", "padding_mode": "zeros",
                      "align_corners": False},
    lambda self, x, grid: _grid_sample_3d(self, x, grid),
    "GridSampler3D(interpolation_mode='bilinear', padding_mode='zeros', "
    "align_corners=False)(input_x (N, C, D, H, W), grid (N, Do, Ho, Wo, 3)): trilinear or "
    "nearest samples at grid's (x, y, z) places.")
MultiMarginLoss = _primitive(
    "MultiMarginLoss", {"p": 1, "margin": 1.0, "reduction": "mean"},
    lambda self, x, target, weight=None: _nn.multi_margin_loss(x, target, self.p, self.margin,
                                                               weight, self.reduction),
    "MultiMarginLoss(p=1, margin=1.0, reduction='mean')(inputs, target, weight=None).")
TripletMarginLoss = _primitive(
    "TripletMarginLoss", {"p": 2, "swap": False, "eps": 1e-6, "reduction": "mean"},
    lambda self, x, positive, negative, margin: _nn.triplet_margin_loss(
        x, positive, negative, float(margin.asnumpy()) if isinstance(margin, Tensor) else margin,
        self.p, self.eps, self.swap, self.reduction),
    "TripletMarginLoss(p=2, swap=False, eps=1e-6, reduction='mean')(x, positive, negative, "
    "margin).")


def _nll_loss(self, logits, labels, weight):
    """(loss, total weight): -sum w[y] logits[i, y] over rows, divided by the total weight
    for 'mean'."""
    classes = logits.shape[-1]
    picked = _ops.one_hot(labels.astype(int64), classes, 1.0, 0.0).astype(logits.dtype)
    row_weight = _ops.sum(picked * weight, -1)
    losses = -_ops.sum(picked * logits, -1) * row_weight
    total = _ops.sum(row_weight)
    if self.reduction == "none":
        return losses, total
    loss = _ops.sum(losses)
    return (loss / total if self.reduction == "mean" else loss), total


NLLLoss = _primitive("NLLLoss", {"reduction": "mean"}, _nll_loss,
                     "NLLLoss(reduction='mean')(logits, labels, weight): (loss, total_weight).")


def _sparse_softmax_cross_entropy(self, logits, labels):
    classes = logits.shape[-1]
    picked = _ops.one_hot(labels.astype(int64), classes, 1.0, 0.0).astype(logits.dtype)
    log_p = _ops.log_softmax(logits, -1)
    if self.is_grad:  # the gradient of the mean loss with respect to logits
        return (_ops.exp(log_p) - picked) / float(logits.shape[0])
    return -_ops.mean(_ops.sum(picked * log_p, -1))


SparseSoftmaxCrossEntropyWithLogits = _primitive(
    "SparseSoftmaxCrossEntropyWithLogits", {"is_grad": False}, _sparse_softmax_cross_entropy,
    "SparseSoftmaxCrossEntropyWithLogits(is_grad=False)(logits, labels): the mean "
    "cross-entropy of integer labels (its gradient with is_grad).")


def _channel_dropout(rank):
    def call(self, x):
        keep = _ops.less(_ops.uniform(tuple(x.shape[:2]) + (1,) * (x.ndim - 2), 0.0, 1.0,
                                      dtype=x.dtype), self.keep_prob)
        return _ops.where(keep, x / self.keep_prob, 0.0), _ops.broadcast_to(keep, x.shape)

    return call


Dropout2D = _primitive("Dropout2D", {"keep_prob": 0.5}, _channel_dropout(4),
                       "Dropout2D(keep_prob=0.5)(x): (x with whole channels zeroed, Bool mask).")
Dropout3D = _primitive("Dropout3D", {"keep_prob": 0.5}, _channel_dropout(5),
                       "Dropout3D(keep_prob=0.5)(x): (x with whole channels zeroed, Bool mask).")

# ---- linear algebra ----------------------------------------------------------------------------

Cholesky = _primitive("Cholesky", {"upper": False},
                      lambda self, x: _misc.cholesky(x, self.upper),
                      "Cholesky(upper=False)(input_x).")
CholeskyInverse = _primitive("CholeskyInverse", {"upper": False},
                             lambda self, x: _misc.cholesky_inverse(x, self.upper),
                             "CholeskyInverse(upper=False)(x): A^-1 from A's Cholesky factor.")
MatrixSolve = _primitive("MatrixSolve", {"adjoint": False},
                         lambda self, matrix, rhs: _misc.matrix_solve(matrix, rhs, self.adjoint),
                         "MatrixSolve(adjoint=False)(matrix, rhs).")
MatrixBandPart = _primitive("MatrixBandPart", {},
                            lambda self, x, lower, upper: _misc.matrix_band_part(x, lower, upper),
                            "MatrixBandPart()(x, lower, upper).")
LogMatrixDeterminant = _primitive("LogMatrixDeterminant", {},
                                  lambda self, x: _misc.slogdet(x),
                                  "LogMatrixDeterminant()(x): (sign, log |det|).")
ReverseSequence = _primitive(
    "ReverseSequence", {"seq_dim": 0, "batch_dim": 0},
    lambda self, x, seq_lengths: _misc.reverse_sequence(x, seq_lengths, self.seq_dim,
                                                        self.batch_dim),
    "ReverseSequence(seq_dim, batch_dim=0)(x, seq_lengths).")


def _lp_norm(self, x):
    axes = (self.axis,) if isinstance(self.axis, int) else tuple(self.axis)
    if len(axes) == 1:
        return _misc.norm(x, self.p, axes, self.keep_dims)
    return _ops.pow(_ops.sum(_ops.pow(_ops.abs(x), float(self.p)), axes,
                             keepdims=self.keep_dims), 1.0 / self.p)


LpNorm = _primitive("LpNorm", {"axis": 0, "p": 2, "keep_dims": False, "epsilon": 1e-12},
                    _lp_norm, "LpNorm(axis, p=2, keep_dims=False)(input): the p-norm.")
EuclideanNorm = _primitive(
    "EuclideanNorm", {"keep_dims": False},
    lambda self, x, axes: _ops.sqrt(_ops.sum(x * x, tuple(axes) if isinstance(
        axes, (tuple, list)) else axes, keepdims=self.keep_dims)),
    "EuclideanNorm(keep_dims=False)(x, axes): sqrt(sum(x^2)).")


def _reduce_std(self, x):
    empty = isinstance(self.axis, (tuple, list)) and len(self.axis) == 0
    axis = None if empty else self.axis
    mean = _ops.mean(x, axis, keepdims=self.keep_dims)
    std = _ops.std(x, axis, 1 if self.unbiased else 0, keepdims=self.keep_dims)
    return std, mean


ReduceStd = _primitive("ReduceStd", {"axis": (), "unbiased": True, "keep_dims": False},
                       _reduce_std, "ReduceStd(axis=(), unbiased=True, keep_dims=False)(x): "
                                    "(std, mean).")


def _diag(self, x):
    """(D1..Dk) -> (D1..Dk, D1..Dk) with x on the diagonal."""
    n = x.size
    flat = _ops.reshape(x, (n, 1)) * _ops.eye(n, dtype=x.dtype)
    return _ops.reshape(flat, tuple(x.shape) * 2)


def _diag_part(self, x):
    """(D1..Dk, D1..Dk) -> (D1..Dk): the inverse of Diag."""
    k = x.ndim // 2
    if x.ndim % 2 or tuple(x.shape[:k]) != tuple(x.shape[k:]):
        raise_error(ValueError, f"DiagPart: x must have shape (D..., D...), got {x.shape}")
    n = 1
    for d in x.shape[:k]:
        n *= d
    square = _ops.reshape(x, (n, n))
    return _ops.reshape(_ops.sum(square * _ops.eye(n, dtype=x.dtype), 1), tuple(x.shape[:k]))


Diag = _primitive("Diag", {}, _diag, "Diag()(x): x on the diagonal of a (x.shape * 2) tensor.")
DiagPart = _primitive("DiagPart", {}, _diag_part, "DiagPart()(x): the inverse of Diag.")

# ---- bucketing, splitting, padding, lookups ------------------------------------------------------

Bucketize = _primitive(
    "Bucketize", {"boundaries": ()},
    lambda self, x: _mint_sort.searchsorted(Tensor(tuple(self.boundaries)).astype(x.dtype), x,
                                            right=True).astype(int32),
    "Bucketize(boundaries)(input): the Int32 bucket of each element (boundaries[i-1] <= x < "
    "boundaries[i]).")
LowerBound = _primitive(
    "LowerBound", {"out_type": int32},
    lambda self, sorted_x, values: _mint_sort.searchsorted(sorted_x, values).astype(
        self.out_type), "LowerBound(out_type=int32)(sorted_x, values).")
UpperBound = _primitive(
    "UpperBound", {"out_type": int32},
    lambda self, sorted_x, values: _mint_sort.searchsorted(sorted_x, values, right=True)
    .astype(self.out_type), "UpperBound(out_type=int32)(sorted_x, values).")


def _histogram_fixed_width(self, x, value_range):
    """Counts of x in nbins equal bins over value_range; values outside go to the end bins."""
    low, high = value_range[0], value_range[1]
    scaled = (x.astype(float32) - low) / (high - low) * float(self.nbins)
    bins = _ops.clip(_ops.floor(scaled), 0.0, float(self.nbins - 1)).astype(int64)
    hits = _ops.one_hot(_ops.reshape(bins, (-1,)), self.nbins, 1, 0)
    return _ops.sum(hits, 0).astype(self.dtype)


HistogramFixedWidth = _primitive("HistogramFixedWidth", {"nbins": 100, "dtype": int32},
                                 _histogram_fixed_width,
                                 "HistogramFixedWidth(nbins, dtype=int32)(x, range).")


def _split_v(self, x):
    axis = self.split_dim % x.ndim
    known = sum(n for n in self.size_splits if n != -1)
    # One size may be -1: the rest of the axis.
    sizes = tuple(x.shape[axis] - known if n == -1 else n for n in self.size_splits)
    if len(sizes) != self.num_split or sum(sizes) != x.shape[axis]:
        raise_error(ValueError, f"SplitV: size_splits {self.size_splits} do not split axis "
                                f"{axis} of size {x.shape[axis]} into {self.num_split} pieces")
    return _ops_composed.split(x, tuple(sizes), axis)


SplitV = _primitive("SplitV", {"size_splits": (), "split_dim": 0, "num_split": 1}, _split_v,
                    "SplitV(size_splits, split_dim, num_split)(x).")
ParallelConcat = _primitive("ParallelConcat", {},
                            lambda self, values: _ops.concat(tuple(values), 0),
                            "ParallelConcat()(values): the values joined along axis 0.")
IdentityN = _primitive("IdentityN", {}, lambda self, x: tuple(x), "IdentityN()(x): x.")
Range = _primitive("Range", {"maxlen": 1000000},
                   lambda self, start, limit, delta: _misc.range_of(start, limit, delta),
                   "Range(maxlen)(start, limit, delta).")


def _mirror_pad(self, x, paddings):
    pads = paddings.asnumpy().tolist() if isinstance(paddings, Tensor) else paddings
    return _ops_composed.pad(x, tuple(tuple(int(v) for v in p) for p in pads), self.mode)


MirrorPad = _primitive("MirrorPad", {"mode": "REFLECT"}, _mirror_pad,
                       "MirrorPad(mode='REFLECT')(input_x, paddings): REFLECT or SYMMETRIC.")


def _padding(self, x):
    if x.shape[-1] != 1:
        raise_error(ValueError, f"Padding: x's last axis must have size 1, got {x.shape}")
    pads = ((0, 0),) * (x.ndim - 1) + ((0, self.pad_dim_size - 1),)
    return _ops_composed.pad(x, pads)


Padding = _primitive("Padding", {"pad_dim_size": 8}, _padding,
                     "Padding(pad_dim_size=8)(x): x's size-1 last axis padded with zeros.")


def _embedding_lookup(self, params, indices, offset):
    """params' rows at indices - offset; rows outside params read zeros."""
    check_tensor("EmbeddingLookup", "params", params)
    rows = params.shape[0]
    shifted = indices.astype(int64) - offset
    inside = _ops.logical_and(_ops.greater_equal(shifted, 0), _ops.less(shifted, rows))
    picked = _ops.gather(params, _ops.clip(shifted, 0, rows - 1), 0)
    mask = _ops.reshape(inside, tuple(inside.shape) + (1,) * (params.ndim - 1))
    return _ops.where(mask, picked, 0.0)


EmbeddingLookup = _primitive("EmbeddingLookup", {}, _embedding_lookup,
                             "EmbeddingLookup()(input_params, input_indices, offset).")
InvertPermutation = _primitive(
    "InvertPermutation", {},
    lambda self, x: tuple(sorted(range(len(x)), key=lambda i: x[i])),
    "InvertPermutation()(x): the inverse of the permutation tuple x.")


# ---- more primitives over the ops functions --------------------------------------------------------

StopGradient = _primitive("StopGradient", {}, lambda self, x: _special.stop_gradient(x),
                          "StopGradient()(x): x, through which no gradient flows back.")
ScalarCast = _primitive("ScalarCast", {}, lambda self, x, t: _misc.scalar_cast(x, t),
                        "ScalarCast()(input_x, input_y): the number as dtype input_y's type.")
ScalarToTensor = _primitive("ScalarToTensor", {},
                            lambda self, x, dtype=float32: _misc.scalar_to_tensor(x, dtype),
                            "ScalarToTensor()(input_x, dtype=float32).")
TupleToArray = _primitive("TupleToArray", {}, lambda self, x: _misc.tuple_to_array(x),
                          "TupleToArray()(input_x): the numbers as a 1-D tensor.")
LeftShift = _primitive("LeftShift", {}, lambda self, x, y: _special.bitwise_left_shift(x, y),
                       "LeftShift()(x1, x2): x1 * 2 ** x2 for integers.")
RightShift = _primitive("RightShift", {},
                        lambda self, x, y: _special.bitwise_right_shift(x, y),
                        "RightShift()(x1, x2): x1 // 2 ** x2 for integers.")
IndexAdd = _primitive("IndexAdd", {"axis": 0, "use_lock": True, "check_index_bound": True},
                      lambda self, x, indices, y: _misc.index_add(x, indices, y, self.axis),
                      "IndexAdd(axis)(x, indices, y): y's slices added at indices along axis.")
IndexFill = _primitive("IndexFill", {},
                       lambda self, x, dim, index, value: _array.index_fill(x, dim, index,
                                                                            value),
                       "IndexFill()(x, dim, index, value).")
Renorm = _primitive("Renorm", {"p": 2, "dim": 0, "maxnorm": 1.0},
                    lambda self, x: _misc.renorm(x, self.p, self.dim, self.maxnorm),
                    "Renorm(p, dim, maxnorm)(input_x).")
Cross = _primitive("Cross", {"dim": -65530},
                   lambda self, x1, x2: _math.cross(x1, x2, None if self.dim == -65530
                                                    else self.dim),
                   "Cross(dim)(x1, x2): the cross product of 3-vectors.")
Ger = _primitive("Ger", {}, lambda self, x1, x2: _math.ger(x1, x2), "Ger()(x1, x2): outer.")
Lgamma = _primitive("Lgamma", {}, lambda self, x: _special.lgamma(x), "log |Gamma(x)|.")
Digamma = _primitive("Digamma", {}, lambda self, x: _special.digamma(x),
                     "psi(x), the derivative of lgamma.")
Mvlgamma = _primitive("Mvlgamma", {"p": 1}, lambda self, x: _special.mvlgamma(x, self.p),
                      "Mvlgamma(p)(x): the log of the multivariate gamma function.")
BesselI0e = _primitive("BesselI0e", {}, lambda self, x: _special.bessel_i0e(x),
                       "exp(-|x|) i0(x).")
BesselI1e = _primitive("BesselI1e", {}, lambda self, x: _special.bessel_i1e(x),
                       "exp(-|x|) i1(x).")
ConjugateTranspose = _primitive("ConjugateTranspose", {},
                                lambda self, x, perm: _ops.transpose(x, tuple(perm)),
                                "ConjugateTranspose()(x, perm): x transposed (real dtypes).")
EqualCount = _primitive("EqualCount", {},
                        lambda self, x, y: _ops.reshape(_ops.sum(_ops.equal(x, y)), (1,))
                        .astype(x.dtype),
                        "EqualCount()(x, y): the number of equal elements, as a (1,) tensor.")
LogSpace = _primitive("LogSpace", {"steps": 10, "base": 10, "dtype": float32},
                      lambda self, start, end: _misc.logspace(
                          _number(start), _number(end), self.steps, self.base,
                          dtype=self.dtype),
                      "LogSpace(steps=10, base=10, dtype=float32)(start, end).")
StandardLaplace = _primitive("StandardLaplace", {"seed": 0, "seed2": 0},
                             lambda self, shape: _sample.standard_laplace(shape, self.seed),
                             "StandardLaplace(seed=0, seed2=0)(shape).")
UniformInt = _primitive(
    "UniformInt", {"seed": 0, "seed2": 0},
    lambda self, shape, minval, maxval: _array.randint(_number(minval), _number(maxval), shape,
                                                       self.seed, dtype=int32),
    "UniformInt(seed=0, seed2=0)(shape, minval, maxval): Int32 draws from [minval, maxval).")
SpaceToBatchND = _primitive(
    "SpaceToBatchND", {"block_shape": 1, "paddings": ((0, 0), (0, 0))},
    lambda self, x: _nd.space_to_batch_nd(x, self.block_shape, self.paddings),
    "SpaceToBatchND(block_shape, paddings)(input_x).")
BatchToSpaceND = _primitive(
    "BatchToSpaceND", {"block_shape": 1, "crops": ((0, 0), (0, 0))},
    lambda self, x: _nd.batch_to_space_nd(x, self.block_shape, self.crops),
    "BatchToSpaceND(block_shape, crops)(input_x).")
MaxUnpool2D = _primitive(
    "MaxUnpool2D", {"ksize": 1, "strides": 0, "pads": 0, "output_shape": (),
                    "data_format": "NCHW"},
    lambda self, x, argmax: _nd.max_unpool2d(x, argmax, self.ksize, self.strides or None,
                                             self.pads, self.output_shape or None),
    "MaxUnpool2D(ksize, strides=0, pads=0, output_shape=())(x, argmax).")
ResizeNearestNeighbor = _primitive(
    "ResizeNearestNeighbor", {"size": (1, 1), "align_corners": False},
    lambda self, x: _resize_nearest(self, x),
    "ResizeNearestNeighbor(size, align_corners=False)(input_x).")
Conv3D = _primitive(
    "Conv3D", {"out_channel": 1, "kernel_size": 1, "mode": 1, "pad_mode": "valid", "pad": 0,
               "stride": 1, "dilation": 1, "group": 1, "data_format": "NCDHW"},
    lambda self, x, weight: _conv3d.conv3d(x, weight, None, self.stride, self.pad_mode,
                                           self.pad, self.dilation, self.group),
    "Conv3D(out_channel, kernel_size, pad_mode='valid', pad=0, stride=1, dilation=1, "
    "group=1)(x, weight): 3-D convolution of NCDHW data.")
Conv3DTranspose = _primitive(
    "Conv3DTranspose", {"in_channel": 1, "out_channel": 1, "kernel_size": 1, "mode": 1,
                        "stride": 1, "pad_mode": "valid", "pad": 0, "dilation": 1, "group": 1,
                        "output_padding": 0, "data_format": "NCDHW"},
    lambda self, dout, weight: _conv3d_transpose(self, dout, weight),
    "Conv3DTranspose(in_channel, out_channel, kernel_size, pad_mode='valid', pad=0, stride=1, "
    "dilation=1, group=1, output_padding=0)(dout, weight): the 3-D transposed convolution "
    "(Conv3D's input gradient) of NCDHW dout with weight (in_channel, out_channel / group, "
    "kd, kh, kw).")
AdaptiveAvgPool3D = _primitive("AdaptiveAvgPool3D", {"output_size": 1},
                               lambda self, x: _conv3d.adaptive_avg_pool3d(x, self.output_size),
                               "AdaptiveAvgPool3D(output_size)(x).")
AdaptiveMaxPool3D = _primitive(
    "AdaptiveMaxPool3D", {},
    lambda self, x, output_size: _conv3d.adaptive_max_pool3d(
        x, tuple(output_size.asnumpy().tolist()) if isinstance(output_size, Tensor)
        else output_size),
    "AdaptiveMaxPool3D()(x, output_size): the maxima of adaptive windows (without their "
    "indices).")


def _number(value):
    return value.asnumpy().item() if isinstance(value, Tensor) else value


def _grid_sample_3d(self, x, grid):
    check_tensor("GridSampler3D", "input_x", x)
    if x.ndim != 5:
        raise_error(ValueError, f"GridSampler3D: input_x must be (N, C, D, H, W), got shape "
                                f"{tuple(x.shape)}")
    return _grid_sample.grid_sample(x, grid, self.interpolation_mode, self.padding_mode,
                                    self.align_corners)


def _conv3d_transpose(self, dout, weight):
    from pijit.nn.layers.image_more import conv3d_transpose
    check_tensor("Conv3DTranspose", "dout", dout)
    check_tensor("Conv3DTranspose", "weight", weight)
    if dout.ndim != 5 or weight.ndim != 5 or dout.shape[1] != weight.shape[0]:
        raise_error(ValueError, f"Conv3DTranspose: dout (N, C, D, H, W) and weight (C, "
                                f"out / group, kd, kh, kw) must agree in C, got "
                                f"{tuple(dout.shape)} and {tuple(weight.shape)}")
    if self.data_format != "NCDHW":
        raise_error(ValueError, f"Conv3DTranspose: data_format must be 'NCDHW', got "
                                f"{self.data_format!r}")
    return conv3d_transpose(dout, weight, None, self.stride, self.pad_mode.lower(), self.pad,
                            self.dilation, self.group, self.output_padding)


def _resize_nearest(self, x):
    if self.align_corners:
        raise_error(ValueError, "ResizeNearestNeighbor: align_corners=True is not supported")
    return _ops_resize.interpolate(x, size=tuple(self.size), mode="nearest")


def _truncated_normal(self, shape):
    """N(0, 1) samples truncated to [-2, 2], by the inverse CDF of uniform draws."""
    shape = tuple(_number(v) for v in (shape.asnumpy().tolist() if isinstance(shape, Tensor)
                                      else shape))
    low = 0.5 * (1.0 + math.erf(-2.0 / math.sqrt(2.0)))
    u = _ops.uniform(shape, low, 1.0 - low, dtype=float64,
                     **({"seed": self.seed} if self.seed else {}))
    return (math.sqrt(2.0) * _math.erfinv(2.0 * u - 1.0)).astype(self.dtype)


TruncatedNormal = _primitive("TruncatedNormal", {"seed": 0, "seed2": 0, "dtype": float32},
                             _truncated_normal,
                             "TruncatedNormal(seed=0, seed2=0, dtype=float32)(shape): N(0, 1) "
                             "samples within two standard deviations.")


def _matrix_power(self, x):
    n = self.n
    base = _math.inverse(x) if n < 0 else x
    out = _ops.broadcast_to(_ops.eye(x.shape[-1], dtype=x.dtype), x.shape)
    for _ in range(abs(n)):
        out = _ops.matmul(out, base)
    return out


MatrixPower = _primitive("MatrixPower", {"n": 1}, _matrix_power,
                         "MatrixPower(n)(x): x multiplied by itself n times (the inverse's "
                         "powers for negative n).")


def _cumulative_logsumexp(self, x, axis):
    """log(cumsum(exp(x))) along axis, shifted by the axis maximum to stay finite."""
    axis = _number(axis) % x.ndim
    top = _ops.max(x, axis, keepdims=True)
    scan = _prims.CumSum(exclusive=self.exclusive, reverse=self.reverse)
    return _ops.log(scan(_ops.exp(x - top), axis)) + top


CumulativeLogsumexp = _primitive("CumulativeLogsumexp", {"exclusive": False, "reverse": False},
                                 _cumulative_logsumexp,
                                 "CumulativeLogsumexp(exclusive=False, reverse=False)(x, axis).")


def _fill_diagonal(self, x):
    """x with its diagonal (flat positions 0, cols + 1, ...; restarting below a tall
    matrix's square when wrap) set to fill_value."""
    rows, cols = x.shape[-2], x.shape[-1]
    flat = _ops.reshape(_ops.arange(rows * cols), (rows, cols))
    on = _ops.equal(_ops.remainder(flat, cols + 1), 0)
    if not self.wrap:
        on = _ops.logical_and(on, _ops.less(flat, min(rows, cols) * cols))
    return _ops.where(on, float(self.fill_value), x)


FillDiagonal = _primitive("FillDiagonal", {"fill_value": 0.0, "wrap": False}, _fill_diagonal,
                          "FillDiagonal(fill_value, wrap=False)(input_x).")


def _in_top_k(self, x1, x2):
    """Whether each row's target class x2[i] is among the k largest of x1[i] (fewer than k
    elements larger than it)."""
    classes = x1.shape[-1]
    picked = _ops.one_hot(x2.astype(int64), classes, 1.0, 0.0).astype(x1.dtype)
    target = _ops.sum(picked * x1, -1, keepdims=True)
    return _ops.less(_ops.sum(_ops.greater(x1, target), -1), self.k)


InTopK = _primitive("InTopK", {"k": 1}, _in_top_k, "InTopK(k)(x1, x2): Bool per row.")


def _tri_indices(lower):
    def call(self):
        indices_of = _np_creation.tril_indices if lower else _np_creation.triu_indices
        rows, cols = indices_of(self.row, self.offset, self.col)
        return _ops.stack((rows, cols), 0).astype(self.dtype)

    return call


TrilIndices = _primitive("TrilIndices", {"row": 1, "col": 1, "offset": 0, "dtype": int32},
                         _tri_indices(True), "TrilIndices(row, col, offset=0, dtype=int32)(): "
                                             "(2, N) indices of the lower triangle.")
TriuIndices = _primitive("TriuIndices", {"row": 1, "col": 1, "offset": 0, "dtype": int32},
                         _tri_indices(False), "TriuIndices(row, col, offset=0, dtype=int32)(): "
                                              "(2, N) indices of the upper triangle.")

__all__ = sorted(name for name, value in dict(globals()).items()
                 if isinstance(value, type) and issubclass(value, Primitive)
                 and value is not Primitive)
