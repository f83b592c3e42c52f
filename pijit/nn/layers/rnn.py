"""Recurrent layers: RNN, GRU, LSTM and their single-step cells (MindSpore 2.x's nn.RNN,
nn.GRU, nn.LSTM, nn.RNNCell, nn.GRUCell, nn.LSTMCell).

Parameters are named as MindSpore names them (weight_ih_l0, bias_hh_l1_reverse, ...; the cells'
weight_ih, weight_hh, bias_ih, bias_hh) with the gates stacked in its order: LSTM i, f, g, o;
GRU r, z, n. Every step is made of pijit ops, so a jitted network unrolls the time loop into
one graph; the input projection of the whole sequence is one matmul per layer and direction."""
import math

from pijit import ops
from pijit._numbers import plain
from pijit._tensor import Parameter, Tensor, float32
from pijit.common.initializer import Uniform
from pijit.nn.cell import Cell
from pijit.nn._checks import positive_int

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "GRU": 3, "LSTM": 4}


def _linear(x, w, b):
    y = ops.matmul(x, ops.transpose(w, (1, 0)))
    return y if b is None else y + b


def _rnn_step(mode, gx, h, w_hh, b_hh):
    """One step of the simple RNN given the input's projection gx."""
    y = gx + _linear(h, w_hh, b_hh)
    return ops.relu(y) if mode == "RNN_RELU" else ops.tanh(y)


def _gru_step(gx, h, w_hh, b_hh, hidden):
    gh = _linear(h, w_hh, b_hh)
    r = ops.sigmoid(gx[:, :hidden] + gh[:, :hidden])
    z = ops.sigmoid(gx[:, hidden:2 * hidden] + gh[:, hidden:2 * hidden])
    n = ops.tanh(gx[:, 2 * hidden:] + r * gh[:, 2 * hidden:])
    return (1 - z) * n + z * h


def _lstm_step(gx, h, c, w_hh, b_hh, hidden):
    g = gx + _linear(h, w_hh, b_hh)
    i = ops.sigmoid(g[:, :hidden])
    f = ops.sigmoid(g[:, hidden:2 * hidden])
    cand = ops.tanh(g[:, 2 * hidden:3 * hidden])
    o = ops.sigmoid(g[:, 3 * hidden:])
    c = f * c + i * cand
    return o * ops.tanh(c), c


def _check_input(name, x, size, what="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: {what} must be a Tensor, got {type(x).__name__}")
    if x.shape[-1] != size:
        raise ValueError(f"{name}: {what} has {x.shape[-1]} features in its last axis, "
                         f"expected {size}")


class _RNNBase(Cell):
    """Multi-layer, optionally bidirectional recurrence over (seq, batch, input) data
    ((batch, seq, input) with batch_first)."""

    _mode = None

    def __init__(self, input_size, hidden_size, num_layers=1, has_bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, dtype=float32):
        super().__init__()
        name = type(self).__name__
        self.input_size = positive_int(name, "input_size", input_size)
        self.hidden_size = positive_int(name, "hidden_size", hidden_size)
        self.num_layers = positive_int(name, "num_layers", num_layers)
        dropout = plain(dropout)
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) \
                or not 0 <= dropout < 1:
            raise ValueError(f"{name}: dropout must be a number in [0, 1), got {dropout!r}")
        self.has_bias, self.batch_first, self.dropout = bool(has_bias), bool(batch_first), dropout
        self.bidirectional = bool(bidirectional)
        self.num_directions = 2 if self.bidirectional else 1
        gates = _GATES[self._mode] * self.hidden_size
        init = Uniform(1 / math.sqrt(self.hidden_size))
        weights = []
        for layer in range(self.num_layers):
            layer_in = self.input_size if layer == 0 else self.hidden_size * self.num_directions
            for direction in range(self.num_directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                group = []
                for kind, shape in (("weight_ih", (gates, layer_in)),
                                    ("weight_hh", (gates, self.hidden_size)),
                                    ("bias_ih", (gates,)), ("bias_hh", (gates,))):
                    if kind.startswith("bias") and not self.has_bias:
                        group.append(None)
                        continue
                    p = Parameter(init(shape, dtype), name=kind + suffix)
                    setattr(self, kind + suffix, p)
                    group.append(p)
                weights.append(tuple(group))
        # (weight_ih, weight_hh, bias_ih, bias_hh) per layer and direction, in that order.
        self._weights = tuple(weights)

    def _initial_state(self, x, hx):
        shape = (self.num_layers * self.num_directions, x.shape[1], self.hidden_size)
        if hx is None:
            return ops.zeros(shape, x.dtype)
        if not isinstance(hx, Tensor):
            raise TypeError(f"{type(self).__name__}: the initial state must be a Tensor, got "
                            f"{type(hx).__name__}")
        if tuple(hx.shape) != shape:
            raise ValueError(f"{type(self).__name__}: the initial state has shape "
                             f"{tuple(hx.shape)}, expected {shape}")
        return hx

    def _run_direction(self, x, weights, h, c, reverse, lengths):
        """Outputs (seq, batch, hidden) and the final (h, c) of one layer in one direction.
        Past a sequence's length the state is held and the output is zero, so the reverse
        direction starts at each sequence's last valid step."""
        w_ih, w_hh, b_ih, b_hh = weights
        steps, batch = x.shape[0], x.shape[1]
        gx_all = _linear(x.reshape(steps * batch, x.shape[2]), w_ih, b_ih)
        gx_all = gx_all.reshape(steps, batch, gx_all.shape[1])
        outputs = [None] * steps
        order = range(steps - 1, -1, -1) if reverse else range(steps)
        for t in order:
            gx = gx_all[t]
            if self._mode == "LSTM":
                h_new, c_new = _lstm_step(gx, h, c, w_hh, b_hh, self.hidden_size)
            elif self._mode == "GRU":
                h_new, c_new = _gru_step(gx, h, w_hh, b_hh, self.hidden_size), None
            else:
                h_new, c_new = _rnn_step(self._mode, gx, h, w_hh, b_hh), None
            if lengths is None:
                h, c = h_new, c_new
                outputs[t] = h
            else:
                valid = ops.reshape(lengths > t, (batch, 1))
                h = ops.where(valid, h_new, h)
                if c_new is not None:
                    c = ops.where(valid, c_new, c)
                outputs[t] = ops.where(valid, h_new, ops.zeros_like(h_new))
        return ops.stack(outputs, 0), h, c

    def construct(self, x, hx=None, seq_length=None):
        name = type(self).__name__
        _check_input(name, x, self.input_size)
        if len(x.shape) != 3:
            raise ValueError(f"{name}: input must be 3-D (seq, batch, input_size) or with "
                             f"batch_first (batch, seq, input_size), got shape {tuple(x.shape)}")
        if self.batch_first:
            x = ops.transpose(x, (1, 0, 2))
        is_lstm = self._mode == "LSTM"
        if is_lstm:
            if hx is not None and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
                raise TypeError(f"{name}: hx must be a tuple (h0, c0), got {type(hx).__name__}")
            h0 = self._initial_state(x, None if hx is None else hx[0])
            c0 = self._initial_state(x, None if hx is None else hx[1])
        else:
            h0 = self._initial_state(x, hx)
            c0 = None
        lengths = None if seq_length is None else ops.cast(seq_length, x.dtype)
        h_n, c_n = [], []
        layer_input = x
        for layer in range(self.num_layers):
            outs = []
            for direction in range(self.num_directions):
                k = layer * self.num_directions + direction
                out, h, c = self._run_direction(layer_input, self._weights[k], h0[k],
                                                c0[k] if is_lstm else None, direction == 1,
                                                lengths)
                outs.append(out)
                h_n.append(h)
                c_n.append(c)
            layer_input = outs[0] if len(outs) == 1 else ops.concat(outs, 2)
            if self.dropout and self.training and layer + 1 < self.num_layers:
                layer_input = ops.dropout(layer_input, self.dropout, True)
        output = layer_input
        if self.batch_first:
            output = ops.transpose(output, (1, 0, 2))
        h_n = ops.stack(h_n, 0)
        if is_lstm:
            return output, (h_n, ops.stack(c_n, 0))
        return output, h_n

    def extend_repr(self):
        return (f"input_size={self.input_size}, hidden_size={self.hidden_size}, "
                f"num_layers={self.num_layers}, has_bias={self.has_bias}, "
                f"batch_first={self.batch_first}, dropout={self.dropout}, "
                f"bidirectional={self.bidirectional}")


class RNN(_RNNBase):
    """Elman RNN: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu, with
    nonlinearity='relu'). construct(x, hx=None, seq_length=None) -> (output, h_n)."""

    def __init__(self, *args, nonlinearity="tanh", **kwargs):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self._mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(*args, **kwargs)


class GRU(_RNNBase):
    """Gated recurrent unit, gates r, z, n. construct(x, hx=None, seq_length=None) ->
    (output, h_n)."""
    _mode = "GRU"


class LSTM(_RNNBase):
    """Long short-term memory, gates i, f, g, o. construct(x, hx=None, seq_length=None) ->
    (output, (h_n, c_n)), hx = (h_0, c_0)."""
    _mode = "LSTM"


class _CellBase(Cell):
    _mode = None

    def __init__(self, input_size, hidden_size, has_bias=True, dtype=float32):
        super().__init__()
        name = type(self).__name__
        self.input_size = positive_int(name, "input_size", input_size)
        self.hidden_size = positive_int(name, "hidden_size", hidden_size)
        self.has_bias = bool(has_bias)
        gates = _GATES[self._mode] * self.hidden_size
        init = Uniform(1 / math.sqrt(self.hidden_size))
        self.weight_ih = Parameter(init((gates, self.input_size), dtype), name="weight_ih")
        self.weight_hh = Parameter(init((gates, self.hidden_size), dtype), name="weight_hh")
        self.bias_ih = Parameter(init((gates,), dtype), name="bias_ih") if has_bias else None
        self.bias_hh = Parameter(init((gates,), dtype), name="bias_hh") if has_bias else None

    def _state(self, x, h):
        if h is None:
            return ops.zeros((x.shape[0], self.hidden_size), x.dtype)
        _check_input(type(self).__name__, h, self.hidden_size, "the state")
        return h

    def extend_repr(self):
        return (f"input_size={self.input_size}, hidden_size={self.hidden_size}, "
                f"has_bias={self.has_bias}")


class RNNCell(_CellBase):
    """One step of RNN: construct(x, hx) -> h'."""

    def __init__(self, input_size, hidden_size, has_bias=True, nonlinearity="tanh",
                 dtype=float32):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: nonlinearity must be 'tanh' or 'relu', got "
                             f"{nonlinearity!r}")
        self._mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(input_size, hidden_size, has_bias, dtype)

    def construct(self, x, hx=None):
        _check_input("RNNCell", x, self.input_size)
        return _rnn_step(self._mode, _linear(x, self.weight_ih, self.bias_ih),
                         self._state(x, hx), self.weight_hh, self.bias_hh)


class GRUCell(_CellBase):
    """One step of GRU: construct(x, hx) -> h'."""
    _mode = "GRU"

    def construct(self, x, hx=None):
        _check_input("GRUCell", x, self.input_size)
        return _gru_step(_linear(x, self.weight_ih, self.bias_ih), self._state(x, hx),
                         self.weight_hh, self.bias_hh, self.hidden_size)


class LSTMCell(_CellBase):
    """One step of LSTM: construct(x, hx=(h, c)) -> (h', c')."""
    _mode = "LSTM"

    def construct(self, x, hx=None):
        _check_input("LSTMCell", x, self.input_size)
        h, c = (None, None) if hx is None else hx
        return _lstm_step(_linear(x, self.weight_ih, self.bias_ih), self._state(x, h),
                          self._state(x, c), self.weight_hh, self.bias_hh, self.hidden_size)
