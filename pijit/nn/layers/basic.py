"""Dense, Flatten, Dropout, Embedding, Identity and Pad."""
from pijit import ops
from pijit._numbers import plain
from pijit._tensor import Parameter, float32, int32
from pijit.common.initializer import initializer
from pijit.nn.cell import Cell
from pijit.nn.layers.activation import get_activation
from pijit.nn._checks import positive_int


class Dense(Cell):
    """y = activation(x @ weight.T + bias), weight of shape (out_channels, in_channels)."""

    def __init__(self, in_channels, out_channels, weight_init="normal", bias_init="zeros",
                 has_bias=True, activation=None, dtype=float32):
        super().__init__()
        in_channels = positive_int("Dense", "in_channels", in_channels)
        out_channels = positive_int("Dense", "out_channels", out_channels)
        self.in_channels, self.out_channels, self.has_bias = in_channels, out_channels, has_bias
        self.weight = Parameter(initializer(weight_init, (out_channels, in_channels), dtype),
                                name="weight")
        self.bias = Parameter(initializer(bias_init, (out_channels,), dtype), name="bias") \
            if has_bias else None
        if activation is not None and not isinstance(activation, (str, Cell)):
            raise TypeError(f"Dense: activation must be a str or a Cell, got {type(activation).__name__}")
        self.activation = get_activation(activation) if isinstance(activation, str) else activation
        self.activation_flag = self.activation is not None

    def construct(self, x):
        x = ops.matmul(x, ops.transpose(self.weight, (1, 0)))
        if self.has_bias:
            x = x + self.bias
        if self.activation_flag:
            x = self.activation(x)
        return x

    def extend_repr(self):
        s = f"input_channels={self.in_channels}, output_channels={self.out_channels}"
        if self.has_bias:
            s += f", has_bias={self.has_bias}"
        if self.activation_flag:
            s += f", activation={self.activation}"
        return s


class Flatten(Cell):
    """Merges axes start_dim..end_dim (default: all but the first)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def construct(self, x):
        return ops.flatten(x, start_dim=self.start_dim, end_dim=self.end_dim)


class Dropout(Cell):
    """Zeroes elements with probability p (= 1 - keep_prob) and scales the rest by 1 / (1 - p)
    in training mode; the identity in evaluation mode. Draws from the global generator
    (pijit.set_seed)."""

    def __init__(self, keep_prob=0.5, p=None, dtype=float32):
        super().__init__()
        keep_prob, p = plain(keep_prob), plain(p)
        if p is None:
            p = 1.0 - keep_prob
        if not 0.0 <= p < 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1), got {p}")
        self.p = float(p)
        self.keep_prob = 1.0 - self.p

    def construct(self, x):
        if not self.training or self.p == 0.0:
            return x
        return ops.dropout(x, self.p)

    def extend_repr(self):
        return f"p={self.p}"


class Embedding(Cell):
    """Looks up rows of embedding_table (vocab_size, embedding_size) by integer ids; computed
    as one_hot(ids) @ table, which capture keeps in one graph. padding_idx's row starts at
    zero."""

    def __init__(self, vocab_size, embedding_size, use_one_hot=False, embedding_table="normal",
                 dtype=int32, padding_idx=None):
        super().__init__()
        vocab_size = positive_int("Embedding", "vocab_size", vocab_size)
        embedding_size = positive_int("Embedding", "embedding_size", embedding_size)
        padding_idx = plain(padding_idx)
        self.vocab_size, self.embedding_size = vocab_size, embedding_size
        self.use_one_hot, self.padding_idx = use_one_hot, padding_idx
        table = initializer(embedding_table, (vocab_size, embedding_size), float32).asnumpy().copy()
        if padding_idx is not None:
            if not -vocab_size <= padding_idx < vocab_size:
                raise ValueError(f"Embedding: padding_idx {padding_idx} is outside [0, {vocab_size})")
            table[padding_idx] = 0
        self.embedding_table = Parameter(table, name="embedding_table")

    def construct(self, ids):
        onehot = ops.one_hot(ids, self.vocab_size, 1.0, 0.0, dtype=self.embedding_table.dtype)
        return ops.matmul(onehot, self.embedding_table)

    def extend_repr(self):
        return f"vocab_size={self.vocab_size}, embedding_size={self.embedding_size}, " \
               f"use_one_hot={self.use_one_hot}, embedding_table={self.embedding_table}, " \
               f"padding_idx={self.padding_idx}"


class Identity(Cell):
    """Returns its input."""

    def construct(self, x):
        return x


class Pad(Cell):
    """Pads x by paddings[i] = (before, after) along axis i: with zeros (mode "CONSTANT") or
    with its mirror image without (REFLECT) or with (SYMMETRIC) the edge."""

    def __init__(self, paddings, mode="CONSTANT"):
        super().__init__()
        self.paddings, self.mode = tuple(tuple(p) for p in plain(paddings)), str(mode).upper()
        if self.mode not in ("CONSTANT", "REFLECT", "SYMMETRIC"):
            raise ValueError(f"Pad: mode must be 'CONSTANT', 'REFLECT' or 'SYMMETRIC', got {mode!r}")

    def construct(self, x):
        return ops.pad(x, self.paddings, self.mode)

