"""MindSpore's ops.LSTM primitive (P.LSTM) with the semantics of its CPU kernel, built from pijit
ops so that it is differentiable and captured into one graph under pijit.jit.

    lstm = ops.LSTM(input_size, hidden_size, num_layers, has_bias, bidirectional, dropout,
                    proj_size=0)
    output, h_n, c_n, reserve, state = lstm(x, h, c, w)

With G = 4 * hidden_size gate rows (gates i, f, g, o), D directions, L layers and
R = proj_size or hidden_size (the width of h), the flat weights `w` (any shape; read in row-major
order) hold, one after the other:

1. the input weights, a (G, in) matrix per layer and, within a layer, per direction, with
   in = input_size in layer 0 and R above. Their block is D * G * (input_size + (L - 1) * D *
   hidden_size) elements long whatever they use, so with two directions (or a projection) and
   several layers its tail is never read;
2. the recurrent weights, a (G, R) matrix per layer and direction;
3. with proj_size > 0, the projections, an (R, hidden_size) matrix per layer and direction;
4. with has_bias, one (G,) bias per layer and direction: the CPU kernel adds a single bias per
   gate (MindSpore's nn.LSTM passes it b_ih + b_hh); elements past these are ignored.

Each direction is a stack of layers of its own: layer l of the reverse direction reads the
reverse outputs of layer l - 1 only, and `output` concatenates the last layer's two directions.
Layers above the first therefore read R features, and the kernel runs several layers only when
input_size == R. h and h_n, c and c_n are indexed by layer * D + direction.

`reserve` is the kernel's (r, 1) workspace for the backward pass and `state` a (1, 1) tensor;
both come in x's dtype. Their shapes are MindSpore's; their contents are zeros here, since the
kernel leaves part of them uninitialized and pijit's autodiff needs neither. float16 inputs are
computed in float32 and rounded back, as the kernel does; float64 ones are computed in float64
(the kernel computes them in float32). `dropout` is checked but has no effect: the CPU kernel
applies none. The gradient with respect to w has w's shape, zero where w is not read
(MindSpore's backward gives one of shape (n, 1, 1), n the end of the last element read)."""
from pijit import _C
from pijit._arg_checks import check_bool, check_int, check_positive_int
from pijit._ops_composed import cast as _cast
from pijit._tensor import Tensor, float16, float32, float64
from pijit.ops import Primitive

__all__ = ["LSTM"]

_ops = _C.ops
_GATES = 4
_FLOAT_DTYPES = (float16, float32, float64)


class _Layout:
    """Where each weight matrix of one LSTM configuration starts in the flat weights."""

    def __init__(self, input_size, hidden_size, num_layers, num_directions, proj_size, has_bias):
        gate_rows = _GATES * hidden_size
        self.gate_rows = gate_rows
        self.state_size = proj_size or hidden_size
        self.input_widths = [input_size] + [self.state_size] * (num_layers - 1)
        pairs = num_layers * num_directions
        input_block = num_directions * gate_rows * (
            input_size + (num_layers - 1) * num_directions * hidden_size)
        self.recurrent_start = input_block
        self.projection_start = self.recurrent_start + pairs * gate_rows * self.state_size
        projection_block = pairs * self.state_size * hidden_size if proj_size else 0
        self.bias_start = self.projection_start + projection_block
        self.required_size = self.bias_start + (pairs * gate_rows if has_bias else 0)
        self.num_directions = num_directions
        self.hidden_size = hidden_size
        self.proj_size = proj_size
        self.has_bias = has_bias

    def input_start(self, layer, direction):
        before = sum(w * self.gate_rows * self.num_directions for w in self.input_widths[:layer])
        return before + direction * self.gate_rows * self.input_widths[layer]

    def weights(self, flat, layer, direction):
        """(w_ih, w_hh, w_proj or None, bias or None) of one layer and direction."""
        pair = layer * self.num_directions + direction
        rows, width = self.gate_rows, self.input_widths[layer]
        w_ih = _matrix(flat, self.input_start(layer, direction), rows, width)
        w_hh = _matrix(flat, self.recurrent_start + pair * rows * self.state_size, rows,
                       self.state_size)
        w_proj = None
        if self.proj_size:
            size = self.proj_size * self.hidden_size
            w_proj = _matrix(flat, self.projection_start + pair * size, self.proj_size,
                             self.hidden_size)
        bias = None
        if self.has_bias:
            start = self.bias_start + pair * rows
            bias = flat[start:start + rows]
        return w_ih, w_hh, w_proj, bias


def _matrix(flat, start, rows, cols):
    return _ops.reshape(flat[start:start + rows * cols], (rows, cols))


def _affine(x, w, b):
    y = _ops.matmul(x, _ops.transpose(w, (1, 0)))
    return y if b is None else y + b


def _run_direction(x, h, c, weights, hidden, reverse):
    """Outputs (seq_len, batch, R) and the final h, c of one layer in one direction."""
    w_ih, w_hh, w_proj, bias = weights
    steps, batch = x.shape[0], x.shape[1]
    # The input's share of the gates, for the whole sequence in one product.
    gx_all = _affine(_ops.reshape(x, (steps * batch, x.shape[2])), w_ih, bias)
    gx_all = _ops.reshape(gx_all, (steps, batch, _GATES * hidden))
    outputs = [None] * steps
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        gates = gx_all[t] + _affine(h, w_hh, None)
        i = _ops.sigmoid(gates[:, :hidden])
        f = _ops.sigmoid(gates[:, hidden:2 * hidden])
        g = _ops.tanh(gates[:, 2 * hidden:3 * hidden])
        o = _ops.sigmoid(gates[:, 3 * hidden:])
        c = f * c + i * g
        h = o * _ops.tanh(c)
        if w_proj is not None:
            h = _affine(h, w_proj, None)
        outputs[t] = h
    return _ops.stack(outputs, 0), h, c


def _padded_row(n):
    """The kernel's row length for n float32 values: a multiple of 64 bytes, one more 64 bytes
    when that is a multiple of 1 KiB (which the kernel avoids, against cache aliasing)."""
    row = -(-n // 16) * 16
    return row + 16 if row % 256 == 0 else row


def _pages(n_floats):
    """n float32 values rounded up to whole 4 KiB pages, counted in float32 values."""
    return -(-n_floats // 1024) * 1024


def _reserve_size(seq_len, batch, input_size, hidden_size, num_layers, num_directions,
                  state_size):
    """Rows of MindSpore's `reserve` output: the float32 workspace its CPU kernel keeps for
    the backward pass (gates, outputs and the states of every layer and step), each part
    page-aligned. The formula reproduces the shapes the kernel gives for every configuration
    measured, with and without projection."""
    per_step = num_layers * num_directions * seq_len * batch
    per_state = (num_layers + 1) * num_directions * (seq_len + 1) * batch
    widest = max(input_size, hidden_size)
    return (_pages(per_step * _padded_row(_GATES * hidden_size))
            + _pages(per_step * _padded_row(hidden_size))
            + _pages(per_state * _padded_row(max(input_size, state_size)))
            + 2 * _pages(per_state * _padded_row(widest))
            + 2 * _pages(per_state * hidden_size))


def _check_dropout(value):
    if not isinstance(value, float):
        raise TypeError(f"LSTM: dropout must be a float, got {type(value).__name__}")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"LSTM: dropout must be in [0.0, 1.0], got {value}")
    return value


def _check_proj_size(value, hidden_size):
    check_int("LSTM: proj_size", value, 0)
    if value >= hidden_size:
        raise ValueError(f"LSTM: proj_size must be in [0, hidden_size={hidden_size}), got "
                         f"{value}")
    return value


def _check_tensor(name, value):
    if not isinstance(value, Tensor):
        raise TypeError(f"LSTM: {name} must be a Tensor, got {type(value).__name__}")
    if value.dtype not in _FLOAT_DTYPES:
        raise TypeError(f"LSTM: {name} must be float16, float32 or float64, got {value.dtype}")


def _check_shape(name, value, expected, meaning):
    if tuple(value.shape) != expected:
        raise ValueError(f"LSTM: {name} must have shape {expected} {meaning}, got "
                         f"{tuple(value.shape)}")


class LSTM(Primitive):
    """LSTM(input_size, hidden_size, num_layers, has_bias, bidirectional, dropout,
    proj_size=0)(x, h, c, w) -> (output, h_n, c_n, reserve, state): a multi-layer LSTM over x of
    shape (seq_len, batch, input_size) from the states h, c of shape (D * num_layers, batch, R)
    and (D * num_layers, batch, hidden_size), with the flat weights w laid out as the CPU kernel
    of MindSpore reads them (see pijit/_primitives_lstm.py)."""
    __module__ = "pijit.ops"

    def __init__(self, input_size, hidden_size, num_layers, has_bias, bidirectional, dropout,
                 proj_size=0):
        check_positive_int("LSTM: input_size", input_size)
        check_positive_int("LSTM: hidden_size", hidden_size)
        _check_proj_size(proj_size, hidden_size)
        check_positive_int("LSTM: num_layers", num_layers)
        check_bool("LSTM: has_bias", has_bias)
        check_bool("LSTM: bidirectional", bidirectional)
        _check_dropout(dropout)
        super().__init__(input_size=input_size, hidden_size=hidden_size, num_layers=num_layers,
                         has_bias=has_bias, bidirectional=bidirectional, dropout=dropout,
                         proj_size=proj_size)
        object.__setattr__(self, "num_directions", 2 if bidirectional else 1)

    def _layout(self):
        return _Layout(self.input_size, self.hidden_size, self.num_layers, self.num_directions,
                       self.proj_size, self.has_bias)

    def _check_inputs(self, x, h, c, w, layout):
        for name, value in (("x", x), ("h", h), ("c", c), ("w", w)):
            _check_tensor(name, value)
        if len(x.shape) != 3 or x.shape[2] != self.input_size:
            raise ValueError(f"LSTM: x must have shape (seq_len, batch_size, input_size="
                             f"{self.input_size}), got {tuple(x.shape)}")
        if x.shape[0] == 0:
            raise ValueError("LSTM: x must have at least one time step, got seq_len 0")
        stacked = self.num_directions * self.num_layers
        batch = x.shape[1]
        _check_shape("h", h, (stacked, batch, layout.state_size),
                     "(num_directions * num_layers, batch_size, proj_size or hidden_size)")
        _check_shape("c", c, (stacked, batch, self.hidden_size),
                     "(num_directions * num_layers, batch_size, hidden_size)")
        if w.size < layout.required_size:
            raise ValueError(f"LSTM: w must have at least {layout.required_size} elements for "
                             f"this configuration, got {w.size}")
        if self.num_layers > 1 and self.input_size != layout.state_size:
            raise ValueError(f"LSTM: with num_layers > 1, input_size must equal "
                             f"{'proj_size' if self.proj_size else 'hidden_size'} "
                             f"({layout.state_size}), as MindSpore's CPU kernel requires; got "
                             f"input_size={self.input_size}")

    def _run_layers(self, x, h, c, flat, layout):
        """output, h_n, c_n: every direction through its own stack of layers."""
        directions = self.num_directions
        finals_h = [None] * (self.num_layers * directions)
        finals_c = [None] * (self.num_layers * directions)
        last_outputs = []
        for direction in range(directions):
            layer_input = x
            for layer in range(self.num_layers):
                k = layer * directions + direction
                layer_input, finals_h[k], finals_c[k] = _run_direction(
                    layer_input, h[k], c[k], layout.weights(flat, layer, direction),
                    self.hidden_size, direction == 1)
            last_outputs.append(layer_input)
        output = last_outputs[0] if directions == 1 else _ops.concat(last_outputs, 2)
        return output, _ops.stack(finals_h, 0), _ops.stack(finals_c, 0)

    def __call__(self, x, h, c, w):
        layout = self._layout()
        self._check_inputs(x, h, c, w, layout)
        out_dtype = x.dtype
        compute_dtype = float32 if out_dtype == float16 else out_dtype
        x, h, c, w = (v if v.dtype == compute_dtype else _cast(v, compute_dtype)
                      for v in (x, h, c, w))
        output, h_n, c_n = self._run_layers(x, h, c, _ops.reshape(w, (-1,)), layout)
        if compute_dtype != out_dtype:
            output, h_n, c_n = (_cast(v, out_dtype) for v in (output, h_n, c_n))
        rows = _reserve_size(x.shape[0], x.shape[1], self.input_size, self.hidden_size,
                             self.num_layers, self.num_directions, layout.state_size)
        reserve = _ops.zeros((rows, 1), out_dtype)
        state = _ops.zeros((1, 1), out_dtype)
        return output, h_n, c_n, reserve, state
