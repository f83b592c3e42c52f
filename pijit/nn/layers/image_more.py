"""Conv3dTranspose, MultiFieldEmbeddingLookup and SyncBatchNorm of mindspore.nn (exported
through pijit.nn.layers.image).

Conv3dTranspose runs one 2-D transposed convolution per kernel depth offset over the depth
positions folded into the batch, spreads each result to its output depths (input depth i and
offset k land on depth i * stride + k * dilation) and sums them; the pad mode then crops the
full result, so gradients come from conv_transpose2d's, slicing's and padding's rules."""
from pijit import ops
from pijit._numbers import plain
from pijit._tensor import float32, int32, int64
from pijit.mint._checks import FLOAT_DTYPES, check_tensor, raise_error
from pijit.nn.cell import Cell
from pijit.nn.layers.conv import _channels, _weight_and_bias
from pijit.nn.layers.extra import EmbeddingLookup
from pijit.nn.layers.normalization import BatchNorm2d

__all__ = ["Conv3dTranspose", "MultiFieldEmbeddingLookup", "SyncBatchNorm"]


# --- Conv3dTranspose --------------------------------------------------------------------------

def _triple(cls, name, value, low):
    value = plain(value)
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,) * 3
    if not isinstance(value, (tuple, list)) or len(value) != 3 or any(
            isinstance(v, bool) or not isinstance(v, int) or v < low for v in value):
        raise ValueError(f"{cls}: {name} must be an int >= {low} or a tuple of 3 of them, got "
                         f"{value!r}")
    return tuple(value)


def _padding6(cls, pad_mode, padding):
    padding = plain(padding)
    pads = (padding,) * 6 if isinstance(padding, int) and not isinstance(padding, bool) \
        else padding
    if not isinstance(pads, (tuple, list)) or len(pads) != 6 or any(
            isinstance(p, bool) or not isinstance(p, int) or p < 0 for p in pads):
        raise ValueError(f"{cls}: padding must be a non-negative int or a tuple of 6 of them "
                         f"(head, tail, top, bottom, left, right), got {padding!r}")
    if pad_mode != "pad" and any(pads):
        raise ValueError(f"{cls}: padding must be 0 when pad_mode is '{pad_mode}', got "
                         f"{padding!r}")
    return tuple(pads)


def _spread_depth(y, depth, stride, offset, full):
    """(N, D, ...) placed at depths offset + i * stride of a zero (N, full, ...) tensor."""
    if stride > 1:
        gaps = ops.zeros_like(y)
        y = ops.stack((y,) + (gaps,) * (stride - 1), 2)
        y = ops.reshape(y, (y.shape[0], depth * stride) + tuple(y.shape[3:]))
        y = y[:, :(depth - 1) * stride + 1]
    after = full - offset - y.shape[1]
    rest = ((0, 0),) * (len(y.shape) - 2)
    return ops.pad(y, ((0, 0), (offset, after)) + rest)


def _crop_axis(y, axis, begin, length):
    """y[begin:begin + length] along `axis`, zero-extended at the end where the full result
    is shorter (a kernel smaller than the stride)."""
    available = min(length, y.shape[axis] - begin)
    index = [slice(None)] * len(y.shape)
    index[axis] = slice(begin, begin + available)
    y = y[tuple(index)]
    if available < length:
        pads = [(0, 0)] * len(y.shape)
        pads[axis] = (0, length - available)
        y = ops.pad(y, tuple(pads))
    return y


def conv3d_transpose(x, weight, bias=None, stride=1, pad_mode="same", padding=0, dilation=1,
                     group=1, output_padding=0):
    """The 3-D transposed convolution of (N, C_in, D, H, W) x with weight (C_in, C_out /
    group, kd, kh, kw), as MindSpore's Conv3DTranspose. Output length per axis: 'same'
    in * stride, 'valid' max(in * stride, (in - 1) * stride + dilation * (k - 1) + 1), 'pad'
    (in - 1) * stride - front - back + dilation * (k - 1) + 1 + output_padding."""
    cls = "Conv3dTranspose"
    stride, dilation = _triple(cls, "stride", stride, 1), _triple(cls, "dilation", dilation, 1)
    output_padding = _triple(cls, "output_padding", output_padding, 0)
    pads = _padding6(cls, pad_mode, padding)
    n, c_in, depth = x.shape[0], x.shape[1], x.shape[2]
    kernel = tuple(weight.shape[2:])
    full = [(size - 1) * s + d * (k - 1) + 1
            for size, s, d, k in zip(x.shape[2:], stride, dilation, kernel)]
    folded = ops.reshape(ops.transpose(x, (0, 2, 1, 3, 4)), (n * depth, c_in) + tuple(x.shape[3:]))
    total = None
    for k in range(kernel[0]):
        plane = ops.conv_transpose2d(folded, weight[:, :, k], None, stride=stride[1:],
                                     padding=0, dilation=dilation[1:], groups=group,
                                     pad_mode="pad")
        plane = ops.reshape(plane, (n, depth) + tuple(plane.shape[1:]))
        plane = _spread_depth(plane, depth, stride[0], k * dilation[0], full[0])
        total = plane if total is None else total + plane
    y = ops.transpose(total, (0, 2, 1, 3, 4))
    for axis in range(3):
        size, s = x.shape[2 + axis], stride[axis]
        if pad_mode == "pad":
            begin = pads[2 * axis]
            length = full[axis] - pads[2 * axis] - pads[2 * axis + 1] + output_padding[axis]
        elif pad_mode == "same":
            begin, length = max(full[axis] - size * s, 0) // 2, size * s
        else:
            begin, length = 0, max(full[axis], size * s)
        if length < 1:
            raise_error(ValueError, f"{cls}: the padding {pads} leaves no output along "
                                    f"spatial axis {axis}")
        y = _crop_axis(y, 2 + axis, begin, length)
    if bias is not None:
        y = y + ops.reshape(bias, (1, -1, 1, 1, 1))
    return y


class Conv3dTranspose(Cell):
    """3-D transposed convolution of (N, C, D, H, W) data (Conv3d's input gradient); weight
    (in_channels, out_channels / group, kd, kh, kw) with MindSpore 2.x's default
    initialisers. output_padding (an int or 3, each below the stride or the dilation) extends
    the far end of each axis and needs pad_mode='pad'."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same",
                 padding=0, dilation=1, group=1, output_padding=0, has_bias=False,
                 weight_init=None, bias_init=None, data_format="NCDHW", dtype=float32):
        super().__init__()
        cls = "Conv3dTranspose"
        if data_format != "NCDHW":
            raise ValueError(f"{cls}: only data_format='NCDHW' is supported, got "
                             f"{data_format!r}")
        in_channels, out_channels, group = _channels(cls, in_channels, out_channels, group)
        self.in_channels, self.out_channels, self.group = in_channels, out_channels, group
        self.kernel_size = _triple(cls, "kernel_size", kernel_size, 1)
        self.stride = _triple(cls, "stride", stride, 1)
        self.dilation = _triple(cls, "dilation", dilation, 1)
        if not isinstance(pad_mode, str) or pad_mode.lower() not in ("same", "valid", "pad"):
            raise ValueError(f"{cls}: pad_mode must be 'same', 'valid' or 'pad', got "
                             f"{pad_mode!r}")
        self.pad_mode = pad_mode.lower()
        self.padding = _padding6(cls, self.pad_mode, padding)
        self.output_padding = _triple(cls, "output_padding", output_padding, 0)
        if any(p >= max(s, d) for p, s, d in zip(self.output_padding, self.stride,
                                                  self.dilation)):
            raise ValueError(f"{cls}: each output_padding must be below its stride or "
                             f"dilation, got {self.output_padding}")
        if any(self.output_padding) and self.pad_mode != "pad":
            raise ValueError(f"{cls}: output_padding needs pad_mode='pad', got "
                             f"pad_mode='{self.pad_mode}'")
        self.has_bias, self.data_format = has_bias, data_format
        shape = (in_channels, out_channels // group) + self.kernel_size
        self.weight, self.bias = _weight_and_bias(shape, out_channels, has_bias, weight_init,
                                                  bias_init, dtype)

    def construct(self, x):
        check_tensor("Conv3dTranspose", "x", x)
        if x.ndim != 5 or x.shape[1] != self.in_channels:
            raise_error(ValueError, f"Conv3dTranspose: expects (N, {self.in_channels}, D, H, W) "
                                    f"input, got shape {tuple(x.shape)}")
        return conv3d_transpose(x, self.weight, self.bias, self.stride, self.pad_mode,
                                self.padding, self.dilation, self.group, self.output_padding)

    def extend_repr(self):
        return (f"input_channels={self.in_channels}, output_channels={self.out_channels}, "
                f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"pad_mode={self.pad_mode}, padding={self.padding}, dilation={self.dilation}, "
                f"group={self.group}, output_padding={self.output_padding}, "
                f"has_bias={self.has_bias}")


# --- MultiFieldEmbeddingLookup --------------------------------------------------------------

_SLICE_MODES = ("batch_slice", "field_slice", "table_row_slice", "table_column_slice")
_OPERATORS = ("SUM", "MEAN", "MAX")


class MultiFieldEmbeddingLookup(EmbeddingLookup):
    """MultiFieldEmbeddingLookup(vocab_size, embedding_size, field_size, ...)(input_indices,
    input_values, field_ids): the rows of embedding_table at input_indices (batch, seq),
    scaled by input_values, combined per (sample, field id) by `operator` into (batch,
    field_size, embedding_size). 'SUM' adds them; 'MEAN' divides the sum by the field's total
    |value| (0 for an empty field); 'MAX' takes the largest among the entries of non-zero
    value (0 for a field without one). max_norm clips each looked-up row's L2 norm first.
    target and slice_mode choose placements of a distributed table; one process holds the
    whole table, so they are checked and otherwise have no effect."""

    def __init__(self, vocab_size, embedding_size, field_size, param_init="normal",
                 target="CPU", slice_mode="batch_slice", feature_num_list=None, max_norm=None,
                 sparse=True, operator="SUM", dtype=float32):
        cls = "MultiFieldEmbeddingLookup"
        for name, value in (("vocab_size", vocab_size), ("embedding_size", embedding_size),
                            ("field_size", field_size)):
            value = plain(value)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{cls}: {name} must be an int, got {type(value).__name__}")
            if value < 1:
                raise ValueError(f"{cls}: {name} must be at least 1, got {value}")
        if target not in ("CPU", "DEVICE"):
            raise ValueError(f"{cls}: target must be 'CPU' or 'DEVICE', got {target!r}")
        if slice_mode not in _SLICE_MODES:
            raise ValueError(f"{cls}: slice_mode must be one of {_SLICE_MODES}, got "
                             f"{slice_mode!r}")
        if not isinstance(sparse, bool):
            raise TypeError(f"{cls}: sparse must be a bool, got {type(sparse).__name__}")
        if not sparse and target == "CPU":
            raise ValueError(f"{cls}: sparse must be True when target is 'CPU'")
        if slice_mode == "field_slice" and feature_num_list is None:
            raise ValueError(f"{cls}: slice_mode='field_slice' needs feature_num_list")
        if operator not in _OPERATORS:
            raise ValueError(f"{cls}: operator must be one of {_OPERATORS}, got {operator!r}")
        super().__init__(vocab_size, embedding_size, param_init=param_init, target=target,
                         slice_mode=slice_mode, max_norm=max_norm, sparse=sparse, dtype=dtype)
        self.field_size, self.operator = int(plain(field_size)), operator
        self.target, self.slice_mode, self.sparse = target, slice_mode, sparse
        self.feature_num_list = feature_num_list

    def _check_inputs(self, input_indices, input_values, field_ids):
        cls = "MultiFieldEmbeddingLookup"
        for name, value in (("input_indices", input_indices), ("input_values", input_values),
                            ("field_ids", field_ids)):
            check_tensor(cls, name, value)
            if value.ndim != 2 or tuple(value.shape) != tuple(input_indices.shape):
                raise_error(ValueError, f"{cls}: {name} must be 2-D (batch, seq) like "
                                        f"input_indices {tuple(input_indices.shape)}, got "
                                        f"shape {tuple(value.shape)}")
        if input_indices.dtype not in (int32, int64) or \
                field_ids.dtype not in (int32, int64):
            raise_error(TypeError, f"{cls}: input_indices and field_ids must be int32 or int64, "
                                   f"got {input_indices.dtype} and {field_ids.dtype}")
        if input_values.dtype not in FLOAT_DTYPES:
            raise_error(TypeError, f"{cls}: input_values must be a float tensor, got "
                                   f"{input_values.dtype}")

    def construct(self, input_indices, input_values, field_ids):
        self._check_inputs(input_indices, input_values, field_ids)
        batch = input_indices.shape[0]
        segments = batch * self.field_size
        # Segment b * field_size + f collects sample b's entries of field f.
        offsets = ops.reshape(ops.arange(0, segments, self.field_size), (batch, 1))
        segment_ids = ops.reshape(ops.cast(field_ids, int64) + offsets, (-1,))
        rows = EmbeddingLookup.construct(self, input_indices)
        values = ops.cast(input_values, rows.dtype)
        weighted = ops.reshape(rows * ops.expand_dims(values, -1), (-1, self.embedding_size))
        flat_values = ops.reshape(values, (-1,))
        count = ops.unsorted_segment_sum(ops.abs(flat_values), segment_ids, segments)
        count = ops.expand_dims(count, -1)
        if self.operator == "MAX":
            # Entries of value 0 are padding: they never win a maximum.
            padded = ops.expand_dims(ops.equal(flat_values, 0.0), -1)
            weighted = ops.where(padded, -3.402823466e38, weighted)
            merged = ops.unsorted_segment_max(weighted, segment_ids, segments)
            merged = ops.where(ops.equal(count, 0.0), 0.0, merged)
        else:
            merged = ops.unsorted_segment_sum(weighted, segment_ids, segments)
            if self.operator == "MEAN":
                empty = ops.equal(count, 0.0)
                merged = ops.where(empty, 0.0, merged / ops.where(empty, 1.0, count))
        return ops.reshape(merged, (batch, self.field_size, self.embedding_size))

    def extend_repr(self):
        return (f"vocab_size={self.vocab_size}, embedding_size={self.embedding_size}, "
                f"field_size={self.field_size}, operator={self.operator}")


# --- SyncBatchNorm --------------------------------------------------------------------------

def _check_process_groups(process_groups):
    """MindSpore's process_groups is a list of rank lists. Statistics are shared within a
    group; this process is the only one (rank 0), so the one group it can name is [0]."""
    cls = "SyncBatchNorm"
    if process_groups is None:
        return None
    if not isinstance(process_groups, (list, tuple)) or not all(
            isinstance(g, (list, tuple)) and all(isinstance(r, int) and not isinstance(r, bool)
                                                 for r in g) for g in process_groups):
        raise TypeError(f"{cls}: process_groups must be a list of lists of rank ids, got "
                        f"{process_groups!r}")
    ranks = [r for g in process_groups for r in g]
    if ranks != [0]:
        raise NotImplementedError(
            f"{cls}: process_groups {process_groups!r} names ranks other than this single "
            f"process (rank 0); pijit has no communication library to share batch statistics "
            f"across processes, so only None or [[0]] is accepted")
    return [list(g) for g in process_groups]


class SyncBatchNorm(BatchNorm2d):
    """Batch normalisation whose training statistics are shared by the processes of a
    group. In pijit's single-process world the group is this process alone, so the
    statistics are those of its batch: BatchNorm2d's behaviour (moving averages, parameters
    and their names) over (N, C) or (N, C, ...) input. A process_groups naming other ranks
    raises NotImplementedError."""

    def __init__(self, num_features, eps=1e-5, momentum=0.9, affine=True, gamma_init="ones",
                 beta_init="zeros", moving_mean_init="zeros", moving_var_init="ones",
                 use_batch_statistics=None, process_groups=None, dtype=float32):
        groups = _check_process_groups(process_groups)
        super().__init__(num_features, eps, momentum, affine, gamma_init, beta_init,
                         moving_mean_init, moving_var_init, use_batch_statistics, "NCHW", dtype)
        self.process_groups = groups

    def construct(self, x):
        check_tensor("SyncBatchNorm", "x", x)
        if x.ndim < 2 or x.shape[1] != self.num_features:
            raise_error(ValueError, f"SyncBatchNorm: expects (N, {self.num_features}, ...) "
                                    f"input, got shape {tuple(x.shape)}")
        shape = tuple(x.shape)
        if len(shape) == 4:
            return BatchNorm2d.construct(self, x)
        y = BatchNorm2d.construct(self, ops.reshape(x, (shape[0], shape[1], -1, 1)))
        return ops.reshape(y, shape)
