"""ops.LSTM, MindSpore's LSTM primitive with its CPU kernel's semantics: against a NumPy LSTM
written here from the flat weight layout (gates i, f, g, o; input weights, recurrent weights,
projections, one bias per layer and direction; each direction a stack of layers of its own),
against outputs and reserve shapes recorded from MindSpore 2.10 on CPU, jitted equal to eager
in one graph, gradients against central differences, and the argument checks."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops

from gradcheck_util import central_differences

GATES = 4


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def weight_blocks(input_size, hidden, layers, directions, proj):
    """(start of recurrent weights, of projections, of biases, elements read) in the flat w."""
    state = proj or hidden
    input_block = directions * GATES * hidden * (input_size + (layers - 1) * directions * hidden)
    recurrent = input_block
    projection = recurrent + layers * directions * GATES * hidden * state
    bias = projection + (layers * directions * state * hidden if proj else 0)
    return recurrent, projection, bias, bias + layers * directions * GATES * hidden


def unpack(w, input_size, hidden, layers, directions, has_bias, proj):
    """{(layer, direction): (w_ih, w_hh, w_proj, b)} read from the flat w."""
    state = proj or hidden
    recurrent, projection, bias, _ = weight_blocks(input_size, hidden, layers, directions, proj)
    rows = GATES * hidden
    flat = w.reshape(-1)
    out, at = {}, 0
    for layer in range(layers):
        width = input_size if layer == 0 else state
        for d in range(directions):
            pair = layer * directions + d
            w_ih = flat[at:at + rows * width].reshape(rows, width)
            at += rows * width
            s = recurrent + pair * rows * state
            w_hh = flat[s:s + rows * state].reshape(rows, state)
            w_proj = None
            if proj:
                s = projection + pair * proj * hidden
                w_proj = flat[s:s + proj * hidden].reshape(proj, hidden)
            b = flat[bias + pair * rows:bias + (pair + 1) * rows] if has_bias else 0.0
            out[layer, d] = (w_ih, w_hh, w_proj, b)
    return out


def run_sequence(x, h, c, params, reverse):
    w_ih, w_hh, w_proj, b = params
    hidden = c.shape[1]
    seq = [None] * x.shape[0]
    for t in (range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])):
        g = x[t] @ w_ih.T + h @ w_hh.T + b
        i, f = sigmoid(g[:, :hidden]), sigmoid(g[:, hidden:2 * hidden])
        cand, o = np.tanh(g[:, 2 * hidden:3 * hidden]), sigmoid(g[:, 3 * hidden:])
        c = f * c + i * cand
        h = o * np.tanh(c)
        if w_proj is not None:
            h = h @ w_proj.T
        seq[t] = h
    return np.stack(seq), h, c


def reference(x, h0, c0, w, cfg):
    """output, h_n, c_n in float64."""
    input_size, hidden, layers, bidirectional, has_bias, proj = cfg
    directions = 2 if bidirectional else 1
    x, h0, c0, w = (np.asarray(a, np.float64) for a in (x, h0, c0, w))
    params = unpack(w, input_size, hidden, layers, directions, has_bias, proj)
    h_n, c_n, last = [None] * len(h0), [None] * len(c0), []
    for d in range(directions):
        seq = x
        for layer in range(layers):
            k = layer * directions + d
            seq, h_n[k], c_n[k] = run_sequence(seq, h0[k], c0[k], params[layer, d], d == 1)
        last.append(seq)
    return np.concatenate(last, 2), np.stack(h_n), np.stack(c_n)


def make_inputs(cfg, steps, batch, rng, extra_w=3):
    """x, h, c, w as float64 arrays for the configuration, with w a few elements longer than
    what is read (the kernel ignores them)."""
    input_size, hidden, layers, bidirectional, _, proj = cfg
    stacked = layers * (2 if bidirectional else 1)
    size = weight_blocks(input_size, hidden, layers, 2 if bidirectional else 1, proj)[3]
    return (rng.standard_normal((steps, batch, input_size)),
            0.5 * rng.standard_normal((stacked, batch, proj or hidden)),
            0.5 * rng.standard_normal((stacked, batch, hidden)),
            0.4 * rng.standard_normal((size + extra_w, 1, 1)))


def primitive(cfg, dropout=0.0):
    input_size, hidden, layers, bidirectional, has_bias, proj = cfg
    return ops.LSTM(input_size, hidden, layers, has_bias, bidirectional, dropout, proj)


def tensors(arrays, dtype=np.float64):
    return [ms.Tensor(np.asarray(a, dtype)) for a in arrays]


# (input_size, hidden_size, num_layers, bidirectional, has_bias, proj_size)
CONFIGS = [
    (4, 5, 1, False, False, 0), (4, 5, 1, False, True, 0), (4, 5, 1, True, False, 0),
    (4, 5, 1, True, True, 0), (5, 5, 2, False, True, 0), (5, 5, 2, True, True, 0),
    (5, 5, 2, True, False, 0), (3, 3, 3, False, False, 0), (3, 5, 1, False, True, 3),
    (3, 5, 2, True, True, 3),
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=str)
@pytest.mark.parametrize("dtype, rtol, atol", [(np.float64, 1e-12, 1e-13),
                                               (np.float32, 1e-5, 1e-6)])
def test_matches_numpy_reference(cfg, dtype, rtol, atol):
    x, h, c, w = make_inputs(cfg, 4, 3, np.random.default_rng(0))
    x, h, c, w = (a.astype(dtype) for a in (x, h, c, w))
    got = primitive(cfg)(*tensors((x, h, c, w), dtype))
    for g, want in zip(got[:3], reference(x, h, c, w, cfg)):
        assert np.dtype(g.dtype.to_numpy()) == dtype
        np.testing.assert_allclose(g.asnumpy(), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("cfg", [CONFIGS[3], CONFIGS[5], CONFIGS[9]], ids=str)
def test_float16_is_computed_in_float32_and_rounded(cfg):
    x, h, c, w = (a.astype(np.float16) for a in make_inputs(cfg, 3, 2,
                                                            np.random.default_rng(1)))
    got = primitive(cfg)(*tensors((x, h, c, w), np.float16))
    for g, want in zip(got, reference(x, h, c, w, cfg)):
        assert g.dtype == ms.float16
        np.testing.assert_allclose(g.asnumpy().astype(np.float64), want, rtol=0, atol=2e-3)
    assert all(g.dtype == ms.float16 for g in got[3:])


def deterministic(shape, step, phase, scale):
    n = int(np.prod(shape))
    return (np.sin(step * np.arange(n) + phase) * scale).astype(np.float32).reshape(shape)


# Recorded from MindSpore 2.10's ops.LSTM on CPU with the deterministic inputs below.
MINDSPORE_BIDIRECTIONAL = {
    "cfg": (3, 3, 2, True, True, 0), "steps": 3, "batch": 2, "w_size": 408,
    "output": [0.0033066033, 0.044425335, 0.091800906, -0.2575589, -0.29190806, -0.18960993,
               0.065297626, 0.06123457, -0.06142337, -0.2787732, -0.33155537, -0.20119065,
               -0.016090294, 0.069471486, 0.12553598, -0.18121952, -0.21772154, -0.15764762,
               0.011629167, 0.07250323, 0.06093772, -0.21405195, -0.29311842, -0.19423789,
               -0.010625579, 0.08345537, 0.13606821, -0.09152638, -0.08635805, -0.045061253,
               -0.022856198, 0.08817859, 0.13140038, -0.11267199, -0.25235754, -0.1802751],
    "h_n": [-0.03649372, 0.025062732, -0.11834623, -0.08089787, -0.09812491, -0.18994732,
            0.20295088, 0.22953978, 0.20356107, 0.22053461, 0.21830201, 0.16249365,
            -0.010625579, 0.08345537, 0.13606821, -0.022856198, 0.08817859, 0.13140038,
            -0.2575589, -0.29190806, -0.18960993, -0.2787732, -0.33155537, -0.20119065],
    "c_n": [-0.11693022, 0.086282305, -0.31738633, -0.13016163, -0.15249148, -0.52402,
            0.63027984, 0.5947622, 0.374355, 0.57457757, 0.69584584, 0.38557106,
            -0.018020708, 0.14180107, 0.22684664, -0.037494756, 0.1532055, 0.2310292,
            -0.59199023, -0.59415346, -0.39740214, -0.6308947, -0.69549257, -0.43552163],
}
MINDSPORE_PROJECTION = {
    "cfg": (2, 3, 2, False, True, 2), "steps": 3, "batch": 2, "w_size": 144,
    "output": [-0.14747393, -0.079878554, -0.1503812, 0.013365417, -0.21839105, -0.0722623,
               -0.2120597, -0.025807472, -0.25572962, -0.06778653, -0.25384945, -0.04550065],
    "h_n": [0.06877574, -0.028082902, -0.11001501, 0.15007734, -0.25572962, -0.06778653,
            -0.25384945, -0.04550065],
    "c_n": [0.41973102, 0.2609699, -0.1699063, -0.31168255, -0.45304307, -0.18331467,
            0.3513451, 0.36703005, 0.295272, 0.23860523, 0.37516415, 0.44108438],
}


@pytest.mark.parametrize("case", [MINDSPORE_BIDIRECTIONAL, MINDSPORE_PROJECTION],
                         ids=["bidirectional_2_layers", "projection_2_layers"])
def test_matches_outputs_recorded_from_mindspore(case):
    input_size, hidden, layers, bidirectional, _, proj = case["cfg"]
    stacked = layers * (2 if bidirectional else 1)
    steps, batch = case["steps"], case["batch"]
    x = deterministic((steps, batch, input_size), 0.7, 0.0, 1.0)
    h = deterministic((stacked, batch, proj or hidden), 1.1, 0.3, 0.5)
    c = deterministic((stacked, batch, hidden), 1.3, 0.5, 0.5)
    w = deterministic((case["w_size"], 1, 1), 0.37, 0.1, 0.5)
    got = primitive(case["cfg"])(*tensors((x, h, c, w), np.float32))
    for g, name in zip(got, ("output", "h_n", "c_n")):
        np.testing.assert_allclose(g.asnumpy().ravel(), case[name], rtol=1e-5, atol=2e-6)
    assert got[3].shape == (7168, 1) and got[4].shape == (1, 1)


def test_mindspore_documented_example_gives_the_cpu_kernels_values():
    # The docstring prints 0.9640267, 0.9950539, ...: a bias of 2 per gate, b_ih + b_hh read
    # from the 112 ones by a two-bias (GPU) layout. On CPU, with one bias read and the last 8
    # ones ignored, MindSpore 2.10 gives these.
    lstm = ops.LSTM(10, 2, 1, True, False, 0.0)
    ones = np.ones
    out, h_n, c_n, _, _ = lstm(*tensors((ones((5, 2, 10)), ones((1, 2, 2)), ones((1, 2, 2)),
                                         ones((112, 1, 1))), np.float32))
    want = np.repeat([0.9640251, 0.99505216, 0.999327, 0.99990696, 0.9999854], 4)
    np.testing.assert_allclose(out.asnumpy().ravel(), want, rtol=1e-6)
    np.testing.assert_allclose(h_n.asnumpy(), out.asnumpy()[-1:], rtol=0, atol=0)


# (seq_len, batch, input_size, hidden_size, num_layers, num_directions, proj_size) -> rows of
# reserve, as MindSpore 2.10's CPU kernel gives them.
RESERVE_ROWS = [
    ((1, 1, 1, 1, 1, 1, 0), 7168), ((256, 1, 1, 1, 1, 1, 0), 37888),
    ((1, 256, 1, 1, 1, 1, 0), 59392), ((37, 13, 50, 50, 3, 2, 0), 1940480),
    ((100, 8, 33, 70, 1, 2, 0), 1818624), ((20, 20, 64, 64, 2, 1, 0), 673792),
    ((40, 3, 256, 256, 3, 2, 0), 2254848), ((40, 3, 40, 256, 1, 1, 0), 487424),
    ((5, 1, 256, 256, 1, 2, 15), 48128), ((40, 33, 2, 16, 2, 2, 2), 1073152),
    ((5, 33, 1, 64, 3, 1, 1), 385024),
]


@pytest.mark.parametrize("shape, rows", RESERVE_ROWS, ids=lambda v: str(v))
def test_reserve_and_state_have_mindspores_shapes(shape, rows):
    steps, batch, input_size, hidden, layers, directions, proj = shape
    cfg = (input_size, hidden, layers, directions == 2, True, proj)
    stacked = layers * directions
    zeros = np.zeros
    size = weight_blocks(input_size, hidden, layers, directions, proj)[3]
    got = primitive(cfg)(*tensors((zeros((steps, batch, input_size)),
                                   zeros((stacked, batch, proj or hidden)),
                                   zeros((stacked, batch, hidden)), zeros(size)), np.float32))
    reserve, state = got[3], got[4]
    assert reserve.shape == (rows, 1) and reserve.dtype == ms.float32
    assert state.shape == (1, 1) and state.dtype == ms.float32
    assert not reserve.asnumpy().any() and not state.asnumpy().any()


def test_dropout_has_no_effect_as_in_the_cpu_kernel():
    cfg = (5, 5, 3, True, True, 0)
    args = tensors(make_inputs(cfg, 3, 2, np.random.default_rng(2)))
    plain = primitive(cfg, 0.0)(*args)
    for p in (0.5, 1.0):
        for a, b in zip(primitive(cfg, p)(*args)[:3], plain[:3]):
            np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_w_of_any_shape_is_read_flat():
    cfg = CONFIGS[3]
    x, h, c, w = make_inputs(cfg, 2, 2, np.random.default_rng(3), extra_w=1)
    lstm = primitive(cfg)
    flat = lstm(*tensors((x, h, c, w)))
    reshaped = lstm(*tensors((x, h, c, w.reshape(-1)[:-1].reshape(-1, 4))))
    for a, b in zip(flat, reshaped):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


@pytest.mark.parametrize("cfg", [CONFIGS[1], CONFIGS[5], CONFIGS[9]], ids=str)
def test_jitted_equals_eager_in_one_graph(cfg):
    lstm = primitive(cfg)
    args = tensors(make_inputs(cfg, 3, 2, np.random.default_rng(4)))

    def run(x, h, c, w):
        return lstm(x, h, c, w)

    eager = run(*args)
    jitted = ms.jit(run, capture_mode="bytecode")
    ms.reset(jitted)
    for _ in range(2):
        got = jitted(*args)
        for a, b in zip(got, eager):
            assert a.shape == b.shape and a.dtype == b.dtype
            np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-12, atol=1e-14)
    stats = ms.get_code_extra(jitted)
    assert stats["total_break_count"] == 0, stats["all_reasons"]
    assert stats["graph_count"] == 1 and stats["compile_count"] == 1, stats


def weighted_loss(lstm, weights):
    """sum of every output times fixed weights, so each element counts differently."""
    def loss(x, h, c, w):
        out = lstm(x, h, c, w)
        return sum((o * ms.Tensor(k)).sum() for o, k in zip(out[:3], weights))
    return loss


@pytest.mark.parametrize("cfg", [(2, 2, 2, True, True, 0), (2, 3, 2, False, True, 2),
                                 (3, 2, 1, True, False, 0)], ids=str)
def test_gradients_match_central_differences(cfg):
    rng = np.random.default_rng(5)
    arrays = make_inputs(cfg, 3, 2, rng)
    lstm = primitive(cfg)
    shapes = [o.shape for o in lstm(*tensors(arrays))[:3]]
    loss = weighted_loss(lstm, [rng.uniform(0.5, 1.5, s) for s in shapes])
    grads = ms.grad(loss, grad_position=(0, 1, 2, 3))(*tensors(arrays))
    for position, got in enumerate(grads):
        def loss_of(a, position=position):
            args = list(arrays)
            args[position] = a
            return float(loss(*tensors(args)).asnumpy())
        want = central_differences(loss_of, arrays[position])
        assert got.shape == arrays[position].shape
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6, atol=1e-8)
    jitted = ms.jit(ms.grad(loss, grad_position=(0, 1, 2, 3)), capture_mode="bytecode")
    for a, b in zip(jitted(*tensors(arrays)), grads):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-12, atol=1e-14)


def test_weights_that_are_never_read_get_zero_gradient():
    # Two directions and two layers: the input-weight block keeps room for layer 1 reading
    # 2 * hidden features, but each direction's layer 1 reads hidden of them.
    cfg = (2, 2, 2, True, True, 0)
    arrays = make_inputs(cfg, 2, 1, np.random.default_rng(6), extra_w=5)
    lstm = primitive(cfg)
    grad_w = ms.grad(lambda w: lstm(*tensors(arrays[:3]), w)[0].sum())(
        ms.Tensor(arrays[3])).asnumpy().reshape(-1)
    rows = GATES * 2
    used_inputs = 2 * rows * 2 + 2 * rows * 2
    recurrent_start = weight_blocks(*cfg[:3], 2, 0)[0]
    assert not grad_w[used_inputs:recurrent_start].any()
    assert not grad_w[-5:].any()
    assert grad_w[:used_inputs].any() and grad_w[recurrent_start:-5].any()


def test_mixed_dtypes_follow_x():
    cfg = CONFIGS[1]
    x, h, c, w = make_inputs(cfg, 2, 2, np.random.default_rng(7))
    got = primitive(cfg)(ms.Tensor(x.astype(np.float32)), ms.Tensor(h.astype(np.float16)),
                         ms.Tensor(c), ms.Tensor(w.astype(np.float32)))
    assert all(g.dtype == ms.float32 for g in got)
    want = reference(x.astype(np.float32), h.astype(np.float16), c.astype(np.float32),
                     w.astype(np.float32), cfg)
    np.testing.assert_allclose(got[0].asnumpy(), want[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("args, error, match", [
    ((True, 5, 1, True, False, 0.0), TypeError, "input_size must be an int"),
    ((4.0, 5, 1, True, False, 0.0), TypeError, "input_size must be an int"),
    ((0, 5, 1, True, False, 0.0), ValueError, "input_size must be > 0"),
    ((4, -1, 1, True, False, 0.0), ValueError, "hidden_size must be > 0"),
    ((4, 5, 0, True, False, 0.0), ValueError, "num_layers must be > 0"),
    ((4, 5, 1, 1, False, 0.0), TypeError, "has_bias must be a bool"),
    ((4, 5, 1, True, None, 0.0), TypeError, "bidirectional must be a bool"),
    ((4, 5, 1, True, False, 0), TypeError, "dropout must be a float"),
    ((4, 5, 1, True, False, 1.5), ValueError, r"dropout must be in \[0.0, 1.0\]"),
    ((4, 5, 1, True, False, -0.1), ValueError, r"dropout must be in \[0.0, 1.0\]"),
    ((4, 5, 1, True, False, 0.0, 5), ValueError, r"proj_size must be in \[0, hidden_size=5\)"),
    ((4, 5, 1, True, False, 0.0, -1), ValueError, "proj_size must be >= 0"),
    ((4, 5, 1, True, False, 0.0, 1.0), TypeError, "proj_size must be an int"),
])
def test_constructor_checks(args, error, match):
    with pytest.raises(error, match=match):
        ops.LSTM(*args)


def test_constructor_needs_all_six_arguments():
    with pytest.raises(TypeError):
        ops.LSTM(4, 5, 1, True, False)


def _zeros(*shape, dtype=np.float32):
    return ms.Tensor(np.zeros(shape, dtype))


@pytest.mark.parametrize("inputs, error, match", [
    ((_zeros(3, 2, 3), _zeros(1, 2, 5), _zeros(1, 2, 5), _zeros(200)), ValueError,
     r"x must have shape \(seq_len, batch_size, input_size=4\), got \(3, 2, 3\)"),
    ((_zeros(2, 4), _zeros(1, 2, 5), _zeros(1, 2, 5), _zeros(200)), ValueError, "x must have"),
    ((_zeros(0, 2, 4), _zeros(1, 2, 5), _zeros(1, 2, 5), _zeros(200)), ValueError,
     "at least one time step"),
    ((_zeros(3, 2, 4), _zeros(2, 2, 5), _zeros(1, 2, 5), _zeros(200)), ValueError,
     r"h must have shape \(1, 2, 5\)"),
    ((_zeros(3, 2, 4), _zeros(1, 3, 5), _zeros(1, 2, 5), _zeros(200)), ValueError,
     r"h must have shape \(1, 2, 5\)"),
    ((_zeros(3, 2, 4), _zeros(1, 2, 5), _zeros(1, 2, 6), _zeros(200)), ValueError,
     r"c must have shape \(1, 2, 5\)"),
    ((_zeros(3, 2, 4), _zeros(1, 2, 5), _zeros(1, 2, 5), _zeros(199, 1, 1)), ValueError,
     "w must have at least 200 elements"),
    ((np.zeros((3, 2, 4)), _zeros(1, 2, 5), _zeros(1, 2, 5), _zeros(200)), TypeError,
     "x must be a Tensor"),
    ((_zeros(3, 2, 4), _zeros(1, 2, 5), _zeros(1, 2, 5), _zeros(200, dtype=np.int32)),
     TypeError, "w must be float16, float32 or float64"),
])
def test_call_checks(inputs, error, match):
    with pytest.raises(error, match=match):
        ops.LSTM(4, 5, 1, True, False, 0.0)(*inputs)


def test_stacked_layers_need_input_size_equal_to_the_state_width():
    # MindSpore's CPU kernel refuses these too (its oneDNN LSTM reads every layer with the
    # same weight width).
    with pytest.raises(ValueError, match="input_size must equal hidden_size"):
        ops.LSTM(4, 5, 2, True, False, 0.0)(_zeros(3, 2, 4), _zeros(2, 2, 5), _zeros(2, 2, 5),
                                            _zeros(2000))
    with pytest.raises(ValueError, match="input_size must equal proj_size"):
        ops.LSTM(5, 5, 2, True, False, 0.0, 3)(_zeros(3, 2, 5), _zeros(2, 2, 3),
                                               _zeros(2, 2, 5), _zeros(2000))


def test_reachable_and_described_like_a_primitive():
    lstm = ops.LSTM(4, 5, 1, True, False, 0.0)
    assert isinstance(lstm, ops.Primitive)
    assert repr(lstm) == ("LSTM(input_size=4, hidden_size=5, num_layers=1, has_bias=True, "
                          "bidirectional=False, dropout=0.0, proj_size=0)")
    assert lstm.num_directions == 1 and ops.LSTM(4, 5, 1, True, True, 0.0).num_directions == 2


def test_matches_mindspore_when_installed():
    mindspore = pytest.importorskip(
        "mindspore", reason="MindSpore is not installed in this interpreter")
    for cfg in CONFIGS:
        args = [a.astype(np.float32) for a in make_inputs(cfg, 3, 2, np.random.default_rng(8))]
        input_size, hidden, layers, bidirectional, has_bias, proj = cfg
        theirs = mindspore.ops.LSTM(input_size, hidden, layers, has_bias, bidirectional, 0.0,
                                    proj)(*[mindspore.Tensor(a) for a in args])
        ours = primitive(cfg)(*tensors(args, np.float32))
        for a, b in zip(ours[:3], theirs[:3]):
            np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-6)
        assert ours[3].shape == tuple(theirs[3].shape)
