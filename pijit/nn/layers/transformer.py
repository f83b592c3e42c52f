"""Attention and Transformer layers (MindSpore 2.x's nn.MultiheadAttention,
nn.TransformerEncoderLayer, nn.TransformerEncoder, nn.TransformerDecoderLayer,
nn.TransformerDecoder and nn.Transformer).

Every layer is made of pijit ops and layers (Dense, LayerNorm, Dropout), so it runs eagerly on
the autodiff tape and a jitted network is captured as one graph; gradients come from the ops'
own rules. Parameters carry MindSpore's names (in_proj_weight, in_proj_bias, out_proj.weight,
q_proj_weight, ..., self_attn.*, dense1.*, norm1.gamma, layers.0.*), so checkpoints and
parameters_dict() keys line up.

Masks follow MindSpore: a bool mask marks positions to ignore (True = masked), a float mask is
added to the attention scores; attn_mask is (L, S) or (batch * num_heads, L, S) and
key_padding_mask (batch, S), or (S,) for unbatched input."""
import math

from pijit import ops
from pijit._numbers import plain
from pijit._tensor import (Parameter, Tensor, bfloat16, bool_, float16, float32, float64,
                           uint8)
from pijit.common.initializer import HeUniform, Normal, Uniform, XavierUniform, initializer
from pijit.nn.cell import Cell, CellList
from pijit.nn.layers.basic import Dense, Dropout
from pijit.nn.layers.normalization import LayerNorm
from pijit.nn._checks import instance_of, positive_int

__all__ = ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
           "TransformerDecoderLayer", "TransformerDecoder", "Transformer"]


def _probability(layer, what, value):
    value = plain(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(f"{layer}: {what} must be a number in [0, 1), got {value!r}")
    return float(value)


_FLOAT_DTYPES = (float16, bfloat16, float32, float64)


def _is_float(tensor):
    return tensor.dtype in _FLOAT_DTYPES


def _is_bool(tensor):
    return tensor.dtype == bool_


def _dense(in_channels, out_channels, has_bias, dtype):
    """A Dense initialised as MindSpore's attention and feed-forward projections are:
    HeUniform(sqrt(5)) weights and U(-1/sqrt(fan_in), 1/sqrt(fan_in)) biases."""
    return Dense(in_channels, out_channels, weight_init=HeUniform(math.sqrt(5)),
                 bias_init=Uniform(1 / math.sqrt(in_channels)), has_bias=has_bias, dtype=dtype)


def _linear(x, weight, bias):
    y = ops.matmul(x, ops.transpose(weight, (1, 0)))
    return y if bias is None else y + bias


def _additive_mask(mask, dtype):
    """A mask as the float to add to the scores: -inf where a bool mask is True; a float mask
    as it is (in the scores' dtype)."""
    if _is_bool(mask):
        return ops.where(mask, ops.full((), -math.inf, dtype=dtype), 0.0)
    return mask if mask.dtype == dtype else ops.cast(mask, dtype)


def _append_zero_column(mask):
    """The mask for one more key position (a bias_k or zero-attention slot), which every query
    may attend to."""
    if mask is None:
        return None
    return ops.concat((mask, ops.zeros(mask.shape[:-1] + (1,), mask.dtype)), -1)


def _split_heads(x, num_heads):
    """(N, L, E) -> (N, heads, L, E // heads)."""
    n, length, embed = x.shape
    return ops.transpose(ops.reshape(x, (n, length, num_heads, embed // num_heads)),
                         (0, 2, 1, 3))


def _merge_heads(x):
    """(N, heads, L, D) -> (N, L, heads * D)."""
    n, heads, length, head_dim = x.shape
    return ops.reshape(ops.transpose(x, (0, 2, 1, 3)), (n, length, heads * head_dim))


def _scaled_dot_product(q, k, v, mask, dropout_p, training):
    """softmax(q k^T / sqrt(d) + mask) v over (N, heads, L|S, d) tensors, with dropout on the
    attention weights when training. Returns the output and the (dropped) weights."""
    q = q * (1.0 / math.sqrt(q.shape[-1]))
    scores = ops.matmul(q, ops.swapaxes(k, -1, -2))
    if mask is not None:
        scores = scores + mask
    weights = ops.softmax(scores, -1)
    if training and dropout_p > 0:
        weights = ops.dropout(weights, dropout_p)
    return ops.matmul(weights, v), weights


class MultiheadAttention(Cell):
    """Multi-head attention (Attention Is All You Need):
    Concat(head_1, ..., head_h) W^O with head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V).

    Inputs are (L, N, E) ((N, L, E) with batch_first), or (L, E) unbatched. construct returns
    (attn_output, attn_weights) or, with need_weights=False, the 1-tuple (attn_output,) as
    MindSpore does. The weights are averaged over heads, (N, L, S), unless
    average_attn_weights=False, (N, num_heads, L, S); they are the weights after dropout.

    When kdim and vdim equal embed_dim the projections are one `in_proj_weight` of shape
    (3 * embed_dim, embed_dim) (rows: query, key, value); otherwise `q_proj_weight`
    (embed_dim, embed_dim), `k_proj_weight` (embed_dim, kdim) and `v_proj_weight`
    (embed_dim, vdim). `in_proj_bias` (3 * embed_dim,) serves both forms."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, has_bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, dtype=float32):
        super().__init__()
        name = "MultiheadAttention"
        embed_dim = positive_int(name, "embed_dim", embed_dim)
        num_heads = positive_int(name, "num_heads", num_heads)
        if embed_dim % num_heads:
            raise ValueError(f"{name}: embed_dim ({embed_dim}) must be divisible by num_heads "
                             f"({num_heads})")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.kdim = embed_dim if kdim is None else positive_int(name, "kdim", kdim)
        self.vdim = embed_dim if vdim is None else positive_int(name, "vdim", vdim)
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.dropout = _probability(name, "dropout", dropout)
        self.batch_first = bool(batch_first)
        self.head_dim = embed_dim // num_heads
        self.has_bias = bool(has_bias)
        self.dtype = dtype
        xavier = XavierUniform()
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(xavier((3 * embed_dim, embed_dim), dtype),
                                            name="in_proj_weight")
            self.q_proj_weight = self.k_proj_weight = self.v_proj_weight = None
        else:
            self.q_proj_weight = Parameter(xavier((embed_dim, embed_dim), dtype),
                                           name="q_proj_weight")
            self.k_proj_weight = Parameter(xavier((embed_dim, self.kdim), dtype),
                                           name="k_proj_weight")
            self.v_proj_weight = Parameter(xavier((embed_dim, self.vdim), dtype),
                                           name="v_proj_weight")
            self.in_proj_weight = None
        self.in_proj_bias = Parameter(initializer("zeros", (3 * embed_dim,), dtype),
                                      name="in_proj_bias") if self.has_bias else None
        self.out_proj = _dense(embed_dim, embed_dim, self.has_bias, dtype)
        if add_bias_kv:
            # XavierNormal of a (1, 1, E) tensor: std = sqrt(2 / (E + E)).
            normal = Normal(sigma=math.sqrt(1.0 / embed_dim))
            self.bias_k = Parameter(normal((1, 1, embed_dim), dtype), name="bias_k")
            self.bias_v = Parameter(normal((1, 1, embed_dim), dtype), name="bias_v")
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = bool(add_zero_attn)

    def construct(self, query, key, value, key_padding_mask=None, need_weights=True,
                  attn_mask=None, average_attn_weights=True):
        batched = self._check_inputs(query, key, value)
        if batched:
            batch, tgt_len, src_len = self._batch_and_lengths(query, key)
        else:
            batch, tgt_len, src_len = 1, query.shape[0], key.shape[0]
        mask = self._combined_mask(key_padding_mask, attn_mask, batched, batch, tgt_len,
                                   src_len, query.dtype)
        if not batched:
            query, key, value = (ops.expand_dims(query, 0), ops.expand_dims(key, 0),
                                 ops.expand_dims(value, 0))
        elif not self.batch_first:
            query, key, value = (ops.swapaxes(query, 0, 1), ops.swapaxes(key, 0, 1),
                                 ops.swapaxes(value, 0, 1))
        q, k, v = self._project(query, key, value)
        if self.bias_k is not None:
            k = ops.concat((k, ops.broadcast_to(self.bias_k, (batch, 1, self.embed_dim))), 1)
            v = ops.concat((v, ops.broadcast_to(self.bias_v, (batch, 1, self.embed_dim))), 1)
            mask = _append_zero_column(mask)
        if self.add_zero_attn:
            zeros = ops.zeros((batch, 1, self.embed_dim), k.dtype)
            k, v = ops.concat((k, zeros), 1), ops.concat((v, zeros), 1)
            mask = _append_zero_column(mask)
        heads, weights = _scaled_dot_product(
            _split_heads(q, self.num_heads), _split_heads(k, self.num_heads),
            _split_heads(v, self.num_heads), mask, self.dropout, self.training)
        output = self.out_proj(_merge_heads(heads))
        if not batched:
            output = ops.squeeze(output, 0)
        elif not self.batch_first:
            output = ops.swapaxes(output, 0, 1)
        if not need_weights:
            return (output,)
        if average_attn_weights:
            weights = ops.mean(weights, 1)
        if not batched:
            weights = ops.squeeze(weights, 0)
        return output, weights

    def _check_inputs(self, query, key, value):
        """Whether the inputs are batched; raises on wrong types, ranks or feature sizes."""
        name = "MultiheadAttention"
        for what, x in (("query", query), ("key", key), ("value", value)):
            if not isinstance(x, Tensor):
                raise TypeError(f"{name}: {what} must be a Tensor, got {type(x).__name__}")
        if query.ndim not in (2, 3):
            raise ValueError(f"{name}: query must be 3-D (batched) or 2-D (unbatched), got "
                             f"{query.ndim}-D of shape {tuple(query.shape)}")
        if key.ndim != query.ndim or value.ndim != query.ndim:
            raise ValueError(f"{name}: query, key and value must have the same rank, got "
                             f"{query.ndim}-D, {key.ndim}-D and {value.ndim}-D")
        if not _is_float(query):
            raise TypeError(f"{name}: query must be a floating-point Tensor, got {query.dtype}")
        for what, x, size in (("query", query, self.embed_dim), ("key", key, self.kdim),
                              ("value", value, self.vdim)):
            if x.shape[-1] != size:
                raise ValueError(f"{name}: {what} has {x.shape[-1]} features in its last axis, "
                                 f"expected {size}")
        seq_axis = 1 if self.batch_first and query.ndim == 3 else 0
        if key.shape[seq_axis] != value.shape[seq_axis]:
            raise ValueError(f"{name}: key and value must have the same sequence length, got "
                             f"{key.shape[seq_axis]} and {value.shape[seq_axis]}")
        return query.ndim == 3

    def _batch_and_lengths(self, query, key):
        batch_axis, seq_axis = (0, 1) if self.batch_first else (1, 0)
        batch = query.shape[batch_axis]
        if key.shape[batch_axis] != batch:
            raise ValueError(f"MultiheadAttention: query and key/value have different batch "
                             f"sizes, {batch} and {key.shape[batch_axis]}")
        return batch, query.shape[seq_axis], key.shape[seq_axis]

    def _combined_mask(self, key_padding_mask, attn_mask, batched, batch, tgt_len, src_len,
                       dtype):
        """The sum of the additive forms of both masks, shaped to broadcast against the
        (N, heads, L, S) scores; None without masks."""
        name = "MultiheadAttention"
        mask = None
        if key_padding_mask is not None:
            if not isinstance(key_padding_mask, Tensor) or not (
                    _is_bool(key_padding_mask) or _is_float(key_padding_mask)):
                raise TypeError(f"{name}: key_padding_mask must be a bool or floating-point "
                                f"Tensor, got {getattr(key_padding_mask, 'dtype', None)}")
            expected = (batch, src_len) if batched else (src_len,)
            if tuple(key_padding_mask.shape) != expected:
                raise ValueError(f"{name}: key_padding_mask must have shape {expected}, got "
                                 f"{tuple(key_padding_mask.shape)}")
            mask = ops.reshape(_additive_mask(key_padding_mask, dtype), (batch, 1, 1, src_len))
        if attn_mask is not None:
            if not isinstance(attn_mask, Tensor) or not (
                    _is_bool(attn_mask) or attn_mask.dtype == uint8
                    or _is_float(attn_mask)):
                raise TypeError(f"{name}: attn_mask must be a bool, uint8 or floating-point "
                                f"Tensor, got {getattr(attn_mask, 'dtype', None)}")
            if attn_mask.dtype == uint8:
                attn_mask = ops.cast(attn_mask, bool_)
            if attn_mask.ndim == 2:
                expected, shape4 = (tgt_len, src_len), (1, 1, tgt_len, src_len)
            elif attn_mask.ndim == 3:
                expected = (batch * self.num_heads, tgt_len, src_len)
                shape4 = (batch, self.num_heads, tgt_len, src_len)
            else:
                raise ValueError(f"{name}: attn_mask must be 2-D or 3-D, got {attn_mask.ndim}-D")
            if tuple(attn_mask.shape) != expected:
                raise ValueError(f"{name}: a {attn_mask.ndim}-D attn_mask must have shape "
                                 f"{expected}, got {tuple(attn_mask.shape)}")
            additive = ops.reshape(_additive_mask(attn_mask, dtype), shape4)
            mask = additive if mask is None else mask + additive
        return mask

    def _project(self, query, key, value):
        """The input projections of (N, L|S, E) inputs."""
        # The packed parameters are reshaped before they are sliced: capture slices tensors
        # but not Parameters themselves.
        e = self.embed_dim
        bq = bk = bv = None
        if self.in_proj_bias is not None:
            b = ops.reshape(self.in_proj_bias, (3, e))
            bq, bk, bv = b[0], b[1], b[2]
        if self._qkv_same_embed_dim:
            w = ops.reshape(self.in_proj_weight, (3, e, e))
            wq, wk, wv = w[0], w[1], w[2]
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        return _linear(query, wq, bq), _linear(key, wk, bk), _linear(value, wv, bv)

    def extend_repr(self):
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"dropout={self.dropout}, batch_first={self.batch_first}")


def _resolve_activation(layer, activation):
    """'relu' and 'gelu' name ops.relu and ops.gelu (exact, erf-based) as in MindSpore; a Cell
    or any other callable is used as given."""
    if isinstance(activation, str):
        if activation == "relu":
            return ops.relu
        if activation == "gelu":
            return ops.gelu
        raise ValueError(f"{layer}: activation must be 'relu' or 'gelu' when a str, got "
                         f"{activation!r}")
    if isinstance(activation, Cell) or callable(activation):
        return activation
    raise ValueError(f"{layer}: activation must be a str, a Cell or a callable, got "
                     f"{type(activation).__name__}")


class _FeedForwardLayer(Cell):
    """What the encoder and decoder layers share: their constructor and its arguments, kept
    under MindSpore's attribute names (TransformerEncoder/Decoder rebuild layers from them),
    the self-attention block and the feed-forward block dense2(dropout(activation(dense1(x)))).
    Each residual block k (self-attention, [attention over memory,] feed-forward) has its own
    norm<k> and dropout<k>; the decoder's middle block attends to the encoder's memory
    (multihead_attn)."""
    _attends_memory = False

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, dtype=float32):
        super().__init__()
        activation = self._keep_config(d_model, nhead, dim_feedforward, dropout, activation,
                                       layer_norm_eps, batch_first, norm_first, dtype)
        self.self_attn = self._attention()
        if self._attends_memory:
            self.multihead_attn = self._attention()
        self._make_feed_forward()
        blocks = 3 if self._attends_memory else 2
        for k in range(1, blocks + 1):
            setattr(self, f"norm{k}", self._layer_norm())
        for k in range(1, blocks + 1):
            setattr(self, f"dropout{k}", Dropout(p=self.dropout_num))
        self.activation = activation

    def _keep_config(self, d_model, nhead, dim_feedforward, dropout, activation,
                     layer_norm_eps, batch_first, norm_first, dtype):
        name = type(self).__name__
        self.d_model = positive_int(name, "d_model", d_model)
        self.nhead = positive_int(name, "nhead", nhead)
        if self.d_model % self.nhead:
            raise ValueError(f"{name}: d_model ({self.d_model}) must be divisible by nhead "
                             f"({self.nhead})")
        self.dim_feedforward = positive_int(name, "dim_feedforward", dim_feedforward)
        self.dropout_num = _probability(name, "dropout", dropout)
        self.layernorm_eps = float(plain(layer_norm_eps))
        self.batch_first, self.norm_first = bool(batch_first), bool(norm_first)
        self.dtype = dtype
        resolved = _resolve_activation(name, activation)
        # The argument as given, outside the cell registry so a Cell activation is registered
        # once (as `activation`).
        self.__dict__["activation1"] = activation
        return resolved

    def _config(self):
        return dict(d_model=self.d_model, nhead=self.nhead,
                    dim_feedforward=self.dim_feedforward, dropout=self.dropout_num,
                    activation=self.activation1, layer_norm_eps=self.layernorm_eps,
                    batch_first=self.batch_first, norm_first=self.norm_first, dtype=self.dtype)

    def _make_feed_forward(self):
        self.dense1 = _dense(self.d_model, self.dim_feedforward, True, self.dtype)
        self.dropout = Dropout(p=self.dropout_num)
        self.dense2 = _dense(self.dim_feedforward, self.d_model, True, self.dtype)

    def _attention(self):
        return MultiheadAttention(self.d_model, self.nhead, dropout=self.dropout_num,
                                  batch_first=self.batch_first, dtype=self.dtype)

    def _layer_norm(self):
        return LayerNorm((self.d_model,), epsilon=self.layernorm_eps, dtype=self.dtype)

    def _ff_block(self, x):
        return self.dense2(self.dropout(self.activation(self.dense1(x))))

    def _sa_block(self, x, attn_mask, key_padding_mask):
        x = self.self_attn(x, x, x, key_padding_mask=key_padding_mask, need_weights=False,
                           attn_mask=attn_mask)[0]
        return self.dropout1(x)


class TransformerEncoderLayer(_FeedForwardLayer):
    """One encoder layer: self-attention then a feed-forward block, each with a residual
    connection and LayerNorm (after the sum by default; before the block with norm_first).
    Inputs: src (S, N, E) ((N, S, E) with batch_first, (S, E) unbatched), src_mask,
    src_key_padding_mask."""

    def construct(self, src, src_mask=None, src_key_padding_mask=None):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask)
            x = x + self.dropout2(self._ff_block(self.norm2(x)))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask))
            x = self.norm2(x + self.dropout2(self._ff_block(x)))
        return x


class TransformerDecoderLayer(_FeedForwardLayer):
    """One decoder layer: self-attention over tgt, attention over the encoder's memory, then a
    feed-forward block, each with a residual connection and LayerNorm (norm_first as in
    TransformerEncoderLayer). Inputs: tgt, memory, tgt_mask, memory_mask,
    tgt_key_padding_mask, memory_key_padding_mask."""
    _attends_memory = True

    def construct(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                  memory_key_padding_mask=None):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask)
            x = x + self.dropout3(self._ff_block(self.norm3(x)))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask))
            x = self.norm3(x + self.dropout3(self._ff_block(x)))
        return x

    def _mha_block(self, x, memory, attn_mask, key_padding_mask):
        x = self.multihead_attn(x, memory, memory, key_padding_mask=key_padding_mask,
                                need_weights=False, attn_mask=attn_mask)[0]
        return self.dropout2(x)


def _copies(stack, template, expected_cls, num_layers):
    """num_layers independent layers, each built from `template`'s arguments and holding a
    copy of its parameter values (so the stack starts as copies of the template and trains
    each layer on its own)."""
    if not isinstance(template, expected_cls):
        raise TypeError(f"{stack}: expected a {expected_cls.__name__}, got "
                        f"{type(template).__name__}")
    num_layers = positive_int(stack, "num_layers", num_layers)
    layers = []
    for _ in range(num_layers):
        layer = type(template)(**template._config())
        sources = dict(template.parameters_and_names())
        for path, param in layer.parameters_and_names():
            param.set_data(sources[path])
            param.requires_grad = sources[path].requires_grad
        layer.set_train(template.training)
        layers.append(layer)
    return CellList(layers)


def _check_norm(stack, norm):
    if norm is not None and not isinstance(norm, Cell):
        raise TypeError(f"{stack}: norm must be a Cell or None, got {type(norm).__name__}")
    return norm


def _stack(stack, name, template, expected_cls, num_layers, norm):
    """Gives `stack`, the TransformerEncoder or TransformerDecoder `name`, its layers (copies
    of `template`), num_layers and final norm."""
    stack.layers = _copies(name, template, expected_cls, num_layers)
    stack.num_layers = len(stack.layers)
    stack.norm = _check_norm(name, norm)


class TransformerEncoder(Cell):
    """num_layers TransformerEncoderLayers run in turn (copies of encoder_layer), then `norm`
    when given. Inputs: src, src_mask, src_key_padding_mask."""

    def __init__(self, encoder_layer, num_layers, norm=None):
        super().__init__()
        _stack(self, "TransformerEncoder", encoder_layer, TransformerEncoderLayer, num_layers, norm)

    def construct(self, src, src_mask=None, src_key_padding_mask=None):
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=src_mask, src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoder(Cell):
    """num_layers TransformerDecoderLayers run in turn (copies of decoder_layer), each attending
    to the same memory, then `norm` when given."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        _stack(self, "TransformerDecoder", decoder_layer, TransformerDecoderLayer, num_layers, norm)

    def construct(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                  memory_key_padding_mask=None):
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Cell):
    """An encoder-decoder Transformer: TransformerEncoder (num_encoder_layers, final LayerNorm)
    over src, TransformerDecoder (num_decoder_layers, final LayerNorm) over tgt attending to the
    encoder's output. As in MindSpore every parameter of two or more axes, custom encoder and
    decoder included, is then drawn again from XavierUniform."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 dtype=float32):
        super().__init__()
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                      batch_first, norm_first, dtype)

        def custom_or_stack(what, custom, stack_cls, layer_cls, num_layers):
            if custom is not None:
                return instance_of("Transformer", what, custom, Cell)
            return stack_cls(layer_cls(*layer_args), num_layers,
                             LayerNorm((d_model,), epsilon=layer_norm_eps, dtype=dtype))

        self.encoder = custom_or_stack("custom_encoder", custom_encoder, TransformerEncoder,
                                       TransformerEncoderLayer, num_encoder_layers)
        self.decoder = custom_or_stack("custom_decoder", custom_decoder, TransformerDecoder,
                                       TransformerDecoderLayer, num_decoder_layers)
        for param in self.get_parameters():
            if param.ndim > 1:
                param.set_data(initializer(XavierUniform(), param.shape, param.dtype))
        self.d_model, self.nhead = positive_int("Transformer", "d_model", d_model), nhead
        self.batch_first = bool(batch_first)

    def construct(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                  src_key_padding_mask=None, tgt_key_padding_mask=None,
                  memory_key_padding_mask=None):
        if src.ndim == 3 and tgt.ndim == 3:
            batch_axis = 0 if self.batch_first else 1
            if src.shape[batch_axis] != tgt.shape[batch_axis]:
                raise ValueError(f"Transformer: src and tgt must have the same batch size, got "
                                 f"{src.shape[batch_axis]} and {tgt.shape[batch_axis]}")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ValueError(f"Transformer: src and tgt must have d_model={self.d_model} "
                             f"features, got {src.shape[-1]} and {tgt.shape[-1]}")
        memory = self.encoder(src, src_mask=src_mask, src_key_padding_mask=src_key_padding_mask)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask)
