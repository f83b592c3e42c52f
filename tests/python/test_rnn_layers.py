"""nn.RNN, nn.GRU, nn.LSTM and their cells against a NumPy reference written from the equations
(gate orders LSTM i, f, g, o and GRU r, z, n), with layers, both directions, batch_first, given
initial states and per-sequence lengths; jitted equal to eager in one graph; gradients against
central differences; MindSpore's parameter names; a small LSTM language model that trains."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops

from gradcheck_util import check_input_gradient


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def ref_step(mode, x, h, c, w_ih, w_hh, b_ih, b_hh):
    gx = x @ w_ih.T + (0 if b_ih is None else b_ih)
    gh = h @ w_hh.T + (0 if b_hh is None else b_hh)
    hs = h.shape[1]
    if mode == "LSTM":
        g = gx + gh
        i, f = sigmoid(g[:, :hs]), sigmoid(g[:, hs:2 * hs])
        cand, o = np.tanh(g[:, 2 * hs:3 * hs]), sigmoid(g[:, 3 * hs:])
        c = f * c + i * cand
        return o * np.tanh(c), c
    if mode == "GRU":
        r = sigmoid(gx[:, :hs] + gh[:, :hs])
        z = sigmoid(gx[:, hs:2 * hs] + gh[:, hs:2 * hs])
        n = np.tanh(gx[:, 2 * hs:] + r * gh[:, 2 * hs:])
        return (1 - z) * n + z * h, None
    y = gx + gh
    return (np.maximum(y, 0) if mode == "RNN_RELU" else np.tanh(y)), None


def reference(mode, net, x, h0=None, c0=None, lengths=None):
    """The network's output and final states, one sequence of the batch at a time (each run
    over its own length only)."""
    p = {name: v.asnumpy().astype(np.float64) for name, v in net.parameters_and_names()}
    if net.batch_first:
        x = x.transpose(1, 0, 2)
    steps, batch = x.shape[:2]
    dirs, hs = net.num_directions, net.hidden_size
    nstate = net.num_layers * dirs
    h0 = np.zeros((nstate, batch, hs)) if h0 is None else h0
    c0 = np.zeros((nstate, batch, hs)) if c0 is None else c0
    out = np.zeros((steps, batch, dirs * hs))
    hn, cn = np.zeros_like(h0), np.zeros_like(c0)
    for b in range(batch):
        n = steps if lengths is None else int(lengths[b])
        layer_in = x[:n, b:b + 1]
        for layer in range(net.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                h, c = h0[k, b:b + 1], c0[k, b:b + 1]
                seq = np.zeros((n, 1, hs))
                for t in (range(n - 1, -1, -1) if d else range(n)):
                    h, c2 = ref_step(mode, layer_in[t], h, c, p["weight_ih" + sfx],
                                     p["weight_hh" + sfx], p.get("bias_ih" + sfx),
                                     p.get("bias_hh" + sfx))
                    c = c2 if c2 is not None else c
                    seq[t] = h
                outs.append(seq)
                hn[k, b], cn[k, b] = h[0], c[0]
            layer_in = np.concatenate(outs, axis=2)
        out[:n, b] = layer_in[:, 0]
    if net.batch_first:
        out = out.transpose(1, 0, 2)
    return out, hn, cn


MODES = {"LSTM": nn.LSTM, "GRU": nn.GRU, "RNN_TANH": nn.RNN, "RNN_RELU": nn.RNN}


def make(mode, *args, **kwargs):
    if mode == "RNN_RELU":
        kwargs["nonlinearity"] = "relu"
    return MODES[mode](*args, dtype=ms.float64, **kwargs)


def _unpack(mode, result):
    out, state = result
    if mode == "LSTM":
        return out, state[0], state[1]
    return out, state, None


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("layers, bidirectional, batch_first, has_bias", [
    (1, False, False, True), (2, True, True, True), (2, False, False, False)])
def test_matches_reference_eager_and_jitted(mode, layers, bidirectional, batch_first, has_bias):
    ms.set_seed(3)
    net = make(mode, 3, 5, num_layers=layers, bidirectional=bidirectional,
               batch_first=batch_first, has_bias=has_bias)
    x = np.random.default_rng(0).standard_normal((4, 6, 3) if batch_first else (6, 4, 3))
    out, hn, cn = _unpack(mode, net(ms.Tensor(x)))
    want_out, want_h, want_c = reference(mode, net, x)
    np.testing.assert_allclose(out.asnumpy(), want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(hn.asnumpy(), want_h, rtol=1e-10, atol=1e-12)
    if mode == "LSTM":
        np.testing.assert_allclose(cn.asnumpy(), want_c, rtol=1e-10, atol=1e-12)
    jf = ms.jit(net.construct)
    for _ in range(2):
        j_out, j_h, _ = _unpack(mode, jf(ms.Tensor(x)))
        np.testing.assert_allclose(j_out.asnumpy(), out.asnumpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(j_h.asnumpy(), hn.asnumpy(), rtol=1e-12, atol=1e-14)
    stats = ms.get_code_extra(jf)
    assert stats["total_break_count"] == 0 and stats["eager_count"] == 0, stats["all_reasons"]


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH"])
def test_initial_state_and_sequence_lengths(mode):
    ms.set_seed(4)
    net = make(mode, 2, 3, num_layers=2, bidirectional=True)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 3, 2))
    h0 = rng.standard_normal((4, 3, 3))
    c0 = rng.standard_normal((4, 3, 3))
    lengths = np.array([5, 2, 4], np.int32)
    hx = (ms.Tensor(h0), ms.Tensor(c0)) if mode == "LSTM" else ms.Tensor(h0)

    def run(x, hx, lengths):
        return net(x, hx, lengths)

    out, hn, cn = _unpack(mode, run(ms.Tensor(x), hx, ms.Tensor(lengths)))
    want_out, want_h, want_c = reference(mode, net, x, h0, c0, lengths)
    np.testing.assert_allclose(out.asnumpy(), want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(hn.asnumpy(), want_h, rtol=1e-10, atol=1e-12)
    if mode == "LSTM":
        np.testing.assert_allclose(cn.asnumpy(), want_c, rtol=1e-10, atol=1e-12)
    j_out, j_h, _ = _unpack(mode, ms.jit(run)(ms.Tensor(x), hx, ms.Tensor(lengths)))
    np.testing.assert_allclose(j_out.asnumpy(), want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(j_h.asnumpy(), want_h, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH"])
def test_input_gradient_matches_finite_differences(mode):
    ms.set_seed(5)
    net = make(mode, 2, 3, bidirectional=True)
    x = np.random.default_rng(2).standard_normal((3, 2, 2))
    wout = ms.Tensor(np.random.default_rng(3).standard_normal((3, 2, 6)))

    def loss(x):
        return (net(x)[0] * wout).sum()

    check_input_gradient(loss, x)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"])
def test_cells_match_one_step_of_reference(mode):
    ms.set_seed(6)
    cls = {"LSTM": nn.LSTMCell, "GRU": nn.GRUCell}.get(mode, nn.RNNCell)
    kwargs = {"nonlinearity": "relu"} if mode == "RNN_RELU" else {}
    cell = cls(3, 4, dtype=ms.float64, **kwargs)
    assert [n for n, _ in cell.parameters_and_names()] == ["weight_ih", "weight_hh", "bias_ih",
                                                           "bias_hh"]
    rng = np.random.default_rng(4)
    x, h, c = rng.standard_normal((2, 3)), rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    p = {n: v.asnumpy() for n, v in cell.parameters_and_names()}
    want_h, want_c = ref_step(mode, x, h, c, p["weight_ih"], p["weight_hh"], p["bias_ih"],
                              p["bias_hh"])
    hx = (ms.Tensor(h), ms.Tensor(c)) if mode == "LSTM" else ms.Tensor(h)
    for fn in (cell, ms.jit(cell.construct)):
        got = fn(ms.Tensor(x), hx)
        got_h = got[0] if mode == "LSTM" else got
        np.testing.assert_allclose(got_h.asnumpy(), want_h, rtol=1e-10, atol=1e-12)
        if mode == "LSTM":
            np.testing.assert_allclose(got[1].asnumpy(), want_c, rtol=1e-10, atol=1e-12)


def test_parameter_names_and_shapes_follow_mindspore():
    net = nn.LSTM(10, 20, num_layers=2, bidirectional=True)
    shapes = {n: tuple(p.shape) for n, p in net.parameters_and_names()}
    assert shapes["weight_ih_l0"] == (80, 10) and shapes["weight_hh_l0"] == (80, 20)
    assert shapes["weight_ih_l1_reverse"] == (80, 40) and shapes["bias_hh_l1_reverse"] == (80,)
    assert len(shapes) == 16
    bound = 1 / np.sqrt(20)
    assert all(np.abs(p.asnumpy()).max() <= bound for p in net.get_parameters())
    assert len(list(nn.GRU(4, 6, has_bias=False).get_parameters())) == 2
    assert tuple(nn.GRU(4, 6).weight_ih_l0.shape) == (18, 4)


@pytest.mark.parametrize("build, call, error, match", [
    (lambda: nn.LSTM(3, 4), lambda n: n(ms.Tensor(np.zeros((2, 2, 5), np.float32))),
     ValueError, "5 features"),
    (lambda: nn.GRU(3, 4), lambda n: n(ms.Tensor(np.zeros((2, 2, 3), np.float32)),
                                       ms.Tensor(np.zeros((2, 2, 4), np.float32))),
     ValueError, "initial state has shape"),
    (lambda: nn.LSTM(3, 4), lambda n: n(ms.Tensor(np.zeros((2, 2, 3), np.float32)),
                                        ms.Tensor(np.zeros((1, 2, 4), np.float32))),
     TypeError, "tuple"),
    (lambda: nn.RNN(3, 4, nonlinearity="gelu"), None, ValueError, "nonlinearity"),
    (lambda: nn.LSTM(3, 4, dropout=1.5), None, ValueError, "dropout"),
    (lambda: nn.GRU(0, 4), None, ValueError, "input_size"),
])
def test_bad_input_raises_clear_error(build, call, error, match):
    with pytest.raises(error, match=match):
        net = build()
        call(net)


class LanguageModel(nn.Cell):
    def __init__(self, vocab, dim):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, dim, batch_first=True)
        self.head = nn.Dense(dim, vocab)

    def construct(self, tokens):
        h, _ = self.lstm(self.embed(tokens))
        return self.head(h)


def test_lstm_language_model_trains_jitted_equal_to_eager():
    vocab, dim = 11, 8
    tokens = ms.Tensor(np.random.default_rng(5).integers(0, vocab, (4, 7)).astype(np.int32))
    targets = ops.one_hot(tokens, vocab, 1.0, 0.0)  # learn to echo the input

    def train(jitted):
        ms.set_seed(7)
        net = LanguageModel(vocab, dim)
        opt = nn.Adam(net.trainable_params(), learning_rate=0.05)

        def loss_fn(tokens, targets):
            logits = net(tokens)
            return -(ops.log_softmax(logits, -1) * targets).sum(-1).mean()

        grad_fn = ms.value_and_grad(loss_fn, None, opt.parameters)

        def step(tokens, targets):
            loss, grads = grad_fn(tokens, targets)
            opt(grads)
            return loss

        step = ms.jit(step) if jitted else step
        return [float(step(tokens, targets).asnumpy()) for _ in range(30)]

    eager, jitted = train(False), train(True)
    np.testing.assert_allclose(jitted, eager, rtol=1e-4)
    assert eager[-1] < 0.4 * eager[0], eager
