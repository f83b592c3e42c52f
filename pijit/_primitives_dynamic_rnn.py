"""DynamicRNN (an LSTM layer) and DynamicGRUV2 (a GRU layer): MindSpore's fused recurrent
primitives with their weight layouts and every per-step gate as an output. Each time step is a
few pijit ops (one product for the input and one for the state), so a compiled function holds
the unrolled recurrence in one graph and gradients come from pijit's autodiff."""
from pijit import _C
from pijit._tensor import float16, float32, float64
from pijit.mint._checks import check_tensor, raise_error
from pijit.ops import Primitive

_ops = _C.ops


def _check_common(fname, direction, cell_depth, keep_prob, cell_clip, num_proj, activation):
    if direction != "UNIDIRECTIONAL" or cell_depth != 1 or num_proj != 0 or activation != "tanh":
        raise_error(ValueError, f"{fname}: only direction='UNIDIRECTIONAL', cell_depth=1, "
                                f"num_proj=0 and activation='tanh' are supported (as on "
                                f"MindSpore's own backends), got {direction!r}, {cell_depth}, "
                                f"{num_proj}, {activation!r}")
    if keep_prob != 1.0 or cell_clip != -1.0:
        raise_error(ValueError, f"{fname}: keep_prob and cell_clip are not used by MindSpore's "
                                f"kernels; leave them at 1.0 and -1.0, got {keep_prob} and "
                                f"{cell_clip}")


def _check_sequence(fname, x, time_major):
    check_tensor(fname, "x", x)
    if x.ndim != 3 or x.dtype not in (float16, float32, float64):
        raise_error(ValueError, f"{fname}: x must be a 3-D float Tensor, got {x.ndim}-D "
                                f"{x.dtype}")
    if not time_major:
        x = _ops.transpose(x, (1, 0, 2))
    return x


def _steps(x):
    return [x[t] for t in range(x.shape[0])]


def _stack(rows, time_major):
    out = _ops.stack(rows, 0)
    return out if time_major else _ops.transpose(out, (1, 0, 2))


class DynamicRNN(Primitive):
    """DynamicRNN(cell_type='LSTM', ..., forget_bias=0.0)(x (T, B, I), w (I + H, 4H), b (4H,),
    seq_length=None, init_h (1, B, H), init_c (1, B, H)): (y, output_h, output_c, i, j, f, o,
    tanh_c), each (T, B, H). The gates are packed in w and b as i, j (the candidate), f, o;
    c' = sigmoid(f + forget_bias) c + sigmoid(i) tanh(j), h' = sigmoid(o) tanh(c')."""

    def __init__(self, cell_type="LSTM", direction="UNIDIRECTIONAL", cell_depth=1,
                 use_peephole=False, keep_prob=1.0, cell_clip=-1.0, num_proj=0, time_major=True,
                 activation="tanh", forget_bias=0.0, is_training=True):
        _check_common("DynamicRNN", direction, cell_depth, keep_prob, cell_clip, num_proj,
                      activation)
        if cell_type != "LSTM" or use_peephole:
            raise_error(ValueError, "DynamicRNN: only cell_type='LSTM' without peepholes is "
                                    "supported")
        super().__init__(cell_type=cell_type, direction=direction, cell_depth=cell_depth,
                         use_peephole=use_peephole, keep_prob=keep_prob, cell_clip=cell_clip,
                         num_proj=num_proj, time_major=time_major, activation=activation,
                         forget_bias=float(forget_bias), is_training=is_training)

    def __call__(self, x, w, b, seq_length=None, init_h=None, init_c=None):
        fname = "DynamicRNN"
        if seq_length is not None:
            raise_error(ValueError, f"{fname}: seq_length must be None (every sequence runs "
                                    f"all steps), as MindSpore requires")
        x = _check_sequence(fname, x, self.time_major)
        steps, batch, inputs = x.shape
        for name, t in (("w", w), ("b", b), ("init_h", init_h), ("init_c", init_c)):
            check_tensor(fname, name, t)
        hidden = w.shape[1] // 4 if w.ndim == 2 else -1
        if w.ndim != 2 or w.shape[0] != inputs + hidden or w.shape[1] != 4 * hidden or \
                tuple(b.shape) != (4 * hidden,) or \
                tuple(init_h.shape) != (1, batch, hidden) or \
                tuple(init_c.shape) != (1, batch, hidden):
            raise_error(ValueError, f"{fname}: with x {tuple(x.shape)} expected w (I + H, 4H), "
                                    f"b (4H,), init_h and init_c (1, {batch}, H); got "
                                    f"{tuple(w.shape)}, {tuple(b.shape)}, "
                                    f"{tuple(init_h.shape)}, {tuple(init_c.shape)}")
        w_x, w_h = w[:inputs], w[inputs:]
        projected = _ops.reshape(_ops.matmul(_ops.reshape(x, (steps * batch, inputs)), w_x) + b,
                                 (steps, batch, 4 * hidden))
        h, c = init_h[0], init_c[0]
        outs = {k: [] for k in ("h", "c", "i", "j", "f", "o", "tanh_c")}
        for gates_x in _steps(projected):
            gates = gates_x + _ops.matmul(h, w_h)
            i = _ops.sigmoid(gates[:, :hidden])
            j = _ops.tanh(gates[:, hidden:2 * hidden])
            f = _ops.sigmoid(gates[:, 2 * hidden:3 * hidden] + self.forget_bias)
            o = _ops.sigmoid(gates[:, 3 * hidden:])
            c = f * c + i * j
            tanh_c = _ops.tanh(c)
            h = o * tanh_c
            for key, value in (("h", h), ("c", c), ("i", i), ("j", j), ("f", f), ("o", o),
                               ("tanh_c", tanh_c)):
                outs[key].append(value)
        stacked = {k: _stack(v, self.time_major) for k, v in outs.items()}
        return (stacked["h"], stacked["h"], stacked["c"], stacked["i"], stacked["j"],
                stacked["f"], stacked["o"], stacked["tanh_c"])


class DynamicGRUV2(Primitive):
    """DynamicGRUV2(..., gate_order='rzh', reset_after=True)(x (T, B, I), weight_input (I, 3H),
    weight_hidden (H, 3H), bias_input (3H,) or None, bias_hidden (3H,) or None,
    seq_length=None, init_h (B, H)): (y, output_h, update, reset, new, hidden_new), each
    (T, B, H): r and z gates, n = tanh(x W_in + b_in + r (h W_hn + b_hn)) (with
    reset_after=False, tanh(x W_in + b_in + (r h) W_hn + b_hn)), h' = (1 - z) n + z h;
    hidden_new is h W_hn + b_hn."""

    def __init__(self, direction="UNIDIRECTIONAL", cell_depth=1, keep_prob=1.0, cell_clip=-1.0,
                 num_proj=0, time_major=True, activation="tanh", gate_order="rzh",
                 reset_after=True, is_training=True):
        _check_common("DynamicGRUV2", direction, cell_depth, keep_prob, cell_clip, num_proj,
                      activation)
        if gate_order not in ("rzh", "zrh"):
            raise_error(ValueError, f"DynamicGRUV2: gate_order must be 'rzh' or 'zrh', got "
                                    f"{gate_order!r}")
        super().__init__(direction=direction, cell_depth=cell_depth, keep_prob=keep_prob,
                         cell_clip=cell_clip, num_proj=num_proj, time_major=time_major,
                         activation=activation, gate_order=gate_order, reset_after=reset_after,
                         is_training=is_training)

    def _split(self, t, hidden):
        """The (reset, update, new) parts of a packed 3H axis."""
        first, second, new = t[..., :hidden], t[..., hidden:2 * hidden], t[..., 2 * hidden:]
        return (first, second, new) if self.gate_order == "rzh" else (second, first, new)

    def __call__(self, x, weight_input, weight_hidden, bias_input=None, bias_hidden=None,
                 seq_length=None, init_h=None):
        fname = "DynamicGRUV2"
        if seq_length is not None:
            raise_error(ValueError, f"{fname}: seq_length must be None (every sequence runs "
                                    f"all steps)")
        x = _check_sequence(fname, x, self.time_major)
        steps, batch, inputs = x.shape
        for name, t in (("weight_input", weight_input), ("weight_hidden", weight_hidden),
                        ("init_h", init_h)):
            check_tensor(fname, name, t)
        hidden = weight_hidden.shape[0]
        ok = tuple(weight_input.shape) == (inputs, 3 * hidden) and \
            tuple(weight_hidden.shape) == (hidden, 3 * hidden) and \
            tuple(init_h.shape) == (batch, hidden)
        for bias in (bias_input, bias_hidden):
            ok = ok and (bias is None or tuple(bias.shape) == (3 * hidden,))
        if not ok:
            raise_error(ValueError, f"{fname}: with x {tuple(x.shape)} expected weight_input "
                                    f"(I, 3H), weight_hidden (H, 3H), biases (3H,) and init_h "
                                    f"({batch}, H); got {tuple(weight_input.shape)}, "
                                    f"{tuple(weight_hidden.shape)}, {tuple(init_h.shape)}")
        projected = _ops.reshape(_ops.matmul(_ops.reshape(x, (steps * batch, inputs)),
                                             weight_input), (steps, batch, 3 * hidden))
        if bias_input is not None:
            projected = projected + bias_input
        h = init_h
        w_r, w_z, w_n = self._split(weight_hidden, hidden)
        b_r, b_z, b_n = self._split(bias_hidden, hidden) if bias_hidden is not None else \
            (0.0, 0.0, 0.0)
        outs = {k: [] for k in ("h", "z", "r", "n", "hn")}
        for gates_x in _steps(projected):
            x_r, x_z, x_n = self._split(gates_x, hidden)
            r = _ops.sigmoid(x_r + _ops.matmul(h, w_r) + b_r)
            z = _ops.sigmoid(x_z + _ops.matmul(h, w_z) + b_z)
            hidden_new = _ops.matmul(h, w_n) + b_n
            if self.reset_after:
                n = _ops.tanh(x_n + r * hidden_new)
            else:
                n = _ops.tanh(x_n + _ops.matmul(r * h, w_n) + b_n)
            h = (1 - z) * n + z * h
            for key, value in (("h", h), ("z", z), ("r", r), ("n", n), ("hn", hidden_new)):
                outs[key].append(value)
        stacked = {k: _stack(v, self.time_major) for k, v in outs.items()}
        return (stacked["h"], stacked["h"], stacked["z"], stacked["r"], stacked["n"],
                stacked["hn"])


__all__ = ["DynamicGRUV2", "DynamicRNN"]
