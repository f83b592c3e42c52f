"""nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.TransformerEncoder,
nn.TransformerDecoderLayer, nn.TransformerDecoder and nn.Transformer against a float64 NumPy
reference written from the equations (per batch element and head), with bool and float masks,
2-D and 3-D attention masks, batch_first both ways and unbatched input; jitted equal to eager
and captured as one graph; input gradients against central differences; MindSpore's parameter
names; a small encoder classifier that trains; clear errors for bad arguments."""
import math

import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops
from pijit.nn.layers.transformer import (MultiheadAttention, Transformer, TransformerDecoder,
                                         TransformerDecoderLayer, TransformerEncoder,
                                         TransformerEncoderLayer)

from gradcheck_util import check_input_gradient

RTOL, ATOL = 1e-10, 1e-12


# ---- NumPy reference ----------------------------------------------------------------------

def params_of(net):
    return {name: p.asnumpy().astype(np.float64) for name, p in net.parameters_and_names()}


def additive(mask):
    """A mask as the number added to the scores: -inf where a bool mask is True."""
    if mask is None:
        return 0.0
    if mask.dtype == np.bool_:
        return np.where(mask, -np.inf, 0.0)
    return mask.astype(np.float64)


def softmax(v):
    e = np.exp(v - v.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def mha_reference(p, prefix, q_in, k_in, v_in, num_heads, key_padding_mask=None,
                  attn_mask=None, add_zero_attn=False):
    """Attention over batch-major (N, L, E) inputs: the output (N, L, E) and the per-head
    weights (N, heads, L, S), one batch element and head at a time."""
    e = q_in.shape[-1]
    if prefix + "in_proj_weight" in p:
        wq, wk, wv = np.split(p[prefix + "in_proj_weight"], 3)
    else:
        wq, wk, wv = (p[prefix + n] for n in ("q_proj_weight", "k_proj_weight", "v_proj_weight"))
    bias = p.get(prefix + "in_proj_bias", np.zeros(3 * e))
    bq, bk, bv = np.split(bias, 3)
    q, k, v = q_in @ wq.T + bq, k_in @ wk.T + bk, v_in @ wv.T + bv
    n, length, src = q.shape[0], q.shape[1], k.shape[1]
    extra = []
    if prefix + "bias_k" in p:
        extra.append((p[prefix + "bias_k"][0], p[prefix + "bias_v"][0]))
    if add_zero_attn:
        extra.append((np.zeros((1, e)), np.zeros((1, e))))
    d = e // num_heads
    out = np.zeros((n, length, e))
    weights = np.zeros((n, num_heads, length, src + len(extra)))
    for b in range(n):
        kb = np.concatenate([k[b]] + [bk_ for bk_, _ in extra])
        vb = np.concatenate([v[b]] + [bv_ for _, bv_ in extra])
        for h in range(num_heads):
            cols = slice(h * d, (h + 1) * d)
            scores = q[b][:, cols] @ kb[:, cols].T / math.sqrt(d)
            mask = np.zeros((length, src))
            if attn_mask is not None:
                mask = mask + additive(attn_mask if attn_mask.ndim == 2
                                       else attn_mask[b * num_heads + h])
            if key_padding_mask is not None:
                mask = mask + additive(key_padding_mask[b])[None, :]
            scores[:, :src] += mask
            w = softmax(scores)
            weights[b, h] = w
            out[b][:, cols] = w @ vb[:, cols]
    out = out @ p[prefix + "out_proj.weight"].T + p.get(prefix + "out_proj.bias", 0.0)
    return out, weights


def to_batch_major(x, batch_first):
    return x if batch_first else x.transpose(1, 0, 2)


def layer_norm(x, p, prefix, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * p[prefix + "gamma"] + p[prefix + "beta"]


_erf = np.vectorize(math.erf)
ACTIVATIONS = {
    "relu": lambda v: np.maximum(v, 0),
    "gelu": lambda v: 0.5 * v * (1 + _erf(v / math.sqrt(2))),
    "gelu_tanh": lambda v: 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                                  (v + 0.044715 * v ** 3))),
    "softsign": lambda v: v / (1 + np.abs(v)),
}


def softsign(x):
    return x / (1 + ops.abs(x))


def activation_argument(kind):
    return {"relu": "relu", "gelu": "gelu", "gelu_tanh": nn.GELU(), "softsign": softsign}[kind]


def feed_forward(x, p, prefix, act):
    hidden = ACTIVATIONS[act](x @ p[prefix + "dense1.weight"].T + p[prefix + "dense1.bias"])
    return hidden @ p[prefix + "dense2.weight"].T + p[prefix + "dense2.bias"]


def encoder_layer_reference(x, p, prefix, nhead, act, norm_first, mask=None, kpm=None):
    """One encoder layer over batch-major x."""
    def attend(y):
        return mha_reference(p, prefix + "self_attn.", y, y, y, nhead, kpm, mask)[0]

    if norm_first:
        x = x + attend(layer_norm(x, p, prefix + "norm1."))
        return x + feed_forward(layer_norm(x, p, prefix + "norm2."), p, prefix, act)
    x = layer_norm(x + attend(x), p, prefix + "norm1.")
    return layer_norm(x + feed_forward(x, p, prefix, act), p, prefix + "norm2.")


def decoder_layer_reference(x, memory, p, prefix, nhead, act, norm_first, masks):
    tgt_mask, memory_mask, tgt_kpm, memory_kpm = masks

    def self_attend(y):
        return mha_reference(p, prefix + "self_attn.", y, y, y, nhead, tgt_kpm, tgt_mask)[0]

    def cross_attend(y):
        return mha_reference(p, prefix + "multihead_attn.", y, memory, memory, nhead,
                             memory_kpm, memory_mask)[0]

    if norm_first:
        x = x + self_attend(layer_norm(x, p, prefix + "norm1."))
        x = x + cross_attend(layer_norm(x, p, prefix + "norm2."))
        return x + feed_forward(layer_norm(x, p, prefix + "norm3."), p, prefix, act)
    x = layer_norm(x + self_attend(x), p, prefix + "norm1.")
    x = layer_norm(x + cross_attend(x), p, prefix + "norm2.")
    return layer_norm(x + feed_forward(x, p, prefix, act), p, prefix + "norm3.")


# ---- helpers ------------------------------------------------------------------------------

def assert_jitted_matches(fn_to_jit, args, kwargs, eager_results):
    """fn_to_jit jitted gives eager_results (twice: compiled, then cached) in one graph."""
    ms.reset(fn_to_jit)
    jf = ms.jit(fn_to_jit)
    for _ in range(2):
        got = jf(*args, **kwargs)
        got = got if isinstance(got, tuple) else (got,)
        for g, want in zip(got, eager_results):
            np.testing.assert_allclose(g.asnumpy(), want.asnumpy(), rtol=1e-12, atol=1e-14)
    stats = ms.get_code_extra(jf)
    assert stats["total_break_count"] == 0 and stats["eager_count"] == 0, stats["all_reasons"]


def causal_mask(length, src=None):
    return np.triu(np.ones((length, length if src is None else src), bool), 1)


def padding_mask(batch, src, rng):
    """Masks some of the last key positions, never the first (no row is fully masked)."""
    mask = np.zeros((batch, src), bool)
    for b in range(batch):
        mask[b, src - int(rng.integers(0, src - 1)):] = True
    return mask


def mask_case(case, batch, heads, length, src, rng):
    """(key_padding_mask, attn_mask) as NumPy arrays for a named case."""
    if case == "none":
        return None, None
    if case == "bool_padding":
        return padding_mask(batch, src, rng), None
    if case == "float_2d":
        return None, rng.standard_normal((length, src))
    if case == "bool_3d_and_padding":
        attn = rng.random((batch * heads, length, src)) < 0.3
        attn[..., 0] = False
        return padding_mask(batch, src, rng), attn
    if case == "float_padding_and_bool_2d":
        kpm = np.where(padding_mask(batch, src, rng), -1e9, 0.0) + 0.1
        return kpm, causal_mask(length, src)
    raise AssertionError(case)


def tensor_or_none(a):
    return None if a is None else ms.Tensor(a)


# ---- MultiheadAttention -------------------------------------------------------------------

MASK_CASES = ["none", "bool_padding", "float_2d", "bool_3d_and_padding",
              "float_padding_and_bool_2d"]


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("case", MASK_CASES)
def test_attention_matches_reference_eager_and_jitted(batch_first, case):
    ms.set_seed(1)
    heads, embed, batch, length, src = 2, 6, 3, 4, 5
    net = MultiheadAttention(embed, heads, batch_first=batch_first, dtype=ms.float64)
    rng = np.random.default_rng(0)
    shape = (batch, length, embed) if batch_first else (length, batch, embed)
    kv_shape = (batch, src, embed) if batch_first else (src, batch, embed)
    q, k, v = rng.standard_normal(shape), rng.standard_normal(kv_shape), \
        rng.standard_normal(kv_shape)
    kpm, attn = mask_case(case, batch, heads, length, src, rng)
    args = (ms.Tensor(q), ms.Tensor(k), ms.Tensor(v))
    kwargs = dict(key_padding_mask=tensor_or_none(kpm), attn_mask=tensor_or_none(attn),
                  average_attn_weights=False)
    out, weights = net(*args, **kwargs)
    want_out, want_w = mha_reference(params_of(net), "", to_batch_major(q, batch_first),
                                     to_batch_major(k, batch_first),
                                     to_batch_major(v, batch_first), heads, kpm, attn)
    np.testing.assert_allclose(out.asnumpy(), to_batch_major(want_out, batch_first),
                               rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(weights.asnumpy(), want_w, rtol=RTOL, atol=ATOL)
    averaged = net(*args, key_padding_mask=kwargs["key_padding_mask"],
                   attn_mask=kwargs["attn_mask"])[1]
    np.testing.assert_allclose(averaged.asnumpy(), want_w.mean(1), rtol=RTOL, atol=ATOL)
    assert_jitted_matches(net.construct, args, kwargs, (out, weights))


def test_self_attention_is_batch_layout_independent_and_unbatched_works():
    ms.set_seed(2)
    seq_first = MultiheadAttention(4, 2, dtype=ms.float64)
    batch_first = MultiheadAttention(4, 2, batch_first=True, dtype=ms.float64)
    for name, p in batch_first.parameters_and_names():
        p.set_data(dict(seq_first.parameters_and_names())[name])
    x = np.random.default_rng(1).standard_normal((5, 2, 4))
    a = seq_first(ms.Tensor(x), ms.Tensor(x), ms.Tensor(x))[0].asnumpy()
    xb = ms.Tensor(x.transpose(1, 0, 2))
    b = batch_first(xb, xb, xb)[0].asnumpy()
    np.testing.assert_allclose(b.transpose(1, 0, 2), a, rtol=RTOL, atol=ATOL)
    # Unbatched (L, E): the same as a batch of one; key_padding_mask is then (S,).
    kpm = np.array([False, False, False, True, True])
    x0 = ms.Tensor(x[:, 0])
    out, w = seq_first(x0, x0, x0, key_padding_mask=ms.Tensor(kpm))
    want_out, want_w = mha_reference(params_of(seq_first), "", x[None, :, 0], x[None, :, 0],
                                     x[None, :, 0], 2, kpm[None])
    assert tuple(out.shape) == (5, 4) and tuple(w.shape) == (5, 5)
    np.testing.assert_allclose(out.asnumpy(), want_out[0], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(w.asnumpy(), want_w[0].mean(0), rtol=RTOL, atol=ATOL)


def test_separate_projections_bias_kv_zero_attn_and_no_bias():
    ms.set_seed(3)
    net = MultiheadAttention(4, 2, kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True,
                             batch_first=True, dtype=ms.float64)
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 6, 3)),
               rng.standard_normal((2, 6, 5)))
    kpm, attn = padding_mask(2, 6, rng), causal_mask(3, 6)
    args = (ms.Tensor(q), ms.Tensor(k), ms.Tensor(v))
    kwargs = dict(key_padding_mask=ms.Tensor(kpm), attn_mask=ms.Tensor(attn),
                  average_attn_weights=False)
    out, w = net(*args, **kwargs)
    want_out, want_w = mha_reference(params_of(net), "", q, k, v, 2, kpm, attn,
                                     add_zero_attn=True)
    assert tuple(w.shape) == (2, 2, 3, 8)  # the bias_k and zero slots are attended to
    np.testing.assert_allclose(out.asnumpy(), want_out, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(w.asnumpy(), want_w, rtol=RTOL, atol=ATOL)
    assert_jitted_matches(net.construct, args, kwargs, (out, w))

    plain_net = MultiheadAttention(4, 2, has_bias=False, dtype=ms.float64)
    assert [n for n, _ in plain_net.parameters_and_names()] == ["in_proj_weight",
                                                                "out_proj.weight"]
    x = rng.standard_normal((3, 2, 4))
    got = plain_net(ms.Tensor(x), ms.Tensor(x), ms.Tensor(x), need_weights=False)
    assert isinstance(got, tuple) and len(got) == 1  # MindSpore's (attn_output,)
    xb = x.transpose(1, 0, 2)
    want = mha_reference(params_of(plain_net), "", xb, xb, xb, 2)[0]
    np.testing.assert_allclose(got[0].asnumpy(), want.transpose(1, 0, 2), rtol=RTOL, atol=ATOL)


def test_dropout_drops_attention_weights_only_when_training():
    ms.set_seed(4)
    net = MultiheadAttention(4, 2, dropout=0.5, batch_first=True, dtype=ms.float64)
    x = ms.Tensor(np.random.default_rng(3).standard_normal((2, 6, 4)))
    eval_out, eval_w = net(x, x, x, average_attn_weights=False)
    again = net(x, x, x, average_attn_weights=False)[0]
    np.testing.assert_array_equal(again.asnumpy(), eval_out.asnumpy())
    net.set_train()
    out, w = net(x, x, x, average_attn_weights=False)
    w, eval_w = w.asnumpy(), eval_w.asnumpy()
    dropped = w == 0
    assert 0.2 < dropped.mean() < 0.8
    np.testing.assert_allclose(w[~dropped], eval_w[~dropped] / 0.5, rtol=1e-12)
    # The output is made from the dropped weights returned.
    p = params_of(net)
    xn = x.asnumpy()
    v = xn @ np.split(p["in_proj_weight"], 3)[2].T + np.split(p["in_proj_bias"], 3)[2]
    heads = [w[:, h] @ v[..., 2 * h:2 * h + 2] for h in range(2)]
    want = np.concatenate(heads, -1) @ p["out_proj.weight"].T + p["out_proj.bias"]
    np.testing.assert_allclose(out.asnumpy(), want, rtol=RTOL, atol=ATOL)


# ---- encoder and decoder layers -----------------------------------------------------------

LAYER_CASES = [  # batch_first, norm_first, activation, masks
    (False, False, "relu", False), (True, True, "gelu", True),
    (False, True, "gelu_tanh", True), (True, False, "softsign", False)]


def make_layer(layer_class, d_model, dim_feedforward, act, batch_first, norm_first):
    """An encoder or decoder layer of two heads in float64, without dropout."""
    return layer_class(d_model, 2, dim_feedforward=dim_feedforward, dropout=0.0,
                       activation=activation_argument(act), batch_first=batch_first,
                       norm_first=norm_first, dtype=ms.float64)


def perturb(net, rng):
    """Moves every parameter of `net` a little: the layers of a stack start as copies."""
    for param in net.get_parameters():
        param.set_data(param + ms.Tensor(rng.standard_normal(param.shape) * 0.1))


def check_matches_reference(net, args, kwargs, want, batch_first):
    """net(*args, **kwargs), eagerly and jitted, equals `want`, the reference's batch-major
    result, in net's own layout."""
    got = net(*args, **kwargs)
    np.testing.assert_allclose(got.asnumpy(), to_batch_major(want, batch_first), rtol=1e-9,
                               atol=1e-11)
    assert_jitted_matches(net.construct, args, kwargs, (got,))


@pytest.mark.parametrize("batch_first, norm_first, act, masked", LAYER_CASES)
def test_encoder_layer_and_stack_match_reference(batch_first, norm_first, act, masked):
    ms.set_seed(5)
    layer = make_layer(TransformerEncoderLayer, 6, 10, act, batch_first, norm_first)
    rng = np.random.default_rng(4)
    batch, length = 3, 5
    x = rng.standard_normal((batch, length, 6) if batch_first else (length, batch, 6))
    mask, kpm = (causal_mask(length), padding_mask(batch, length, rng)) if masked else (None,
                                                                                        None)
    args, kwargs = (ms.Tensor(x),), dict(src_mask=tensor_or_none(mask),
                                         src_key_padding_mask=tensor_or_none(kpm))
    xb = to_batch_major(x, batch_first)
    want = encoder_layer_reference(xb, params_of(layer), "", 2, act, norm_first, mask, kpm)
    check_matches_reference(layer, args, kwargs, want, batch_first)

    norm = nn.LayerNorm((6,), epsilon=1e-5, dtype=ms.float64)
    stack = TransformerEncoder(layer, 2, norm)
    perturb(stack, rng)
    p = params_of(stack)
    want = xb
    for i in range(2):
        want = encoder_layer_reference(want, p, f"layers.{i}.", 2, act, norm_first, mask, kpm)
    want = layer_norm(want, p, "norm.")
    check_matches_reference(stack, args, kwargs, want, batch_first)


@pytest.mark.parametrize("batch_first, norm_first, act, masked", LAYER_CASES)
def test_decoder_layer_and_stack_match_reference(batch_first, norm_first, act, masked):
    ms.set_seed(6)
    layer = make_layer(TransformerDecoderLayer, 4, 8, act, batch_first, norm_first)
    rng = np.random.default_rng(5)
    batch, tgt_len, src_len = 2, 4, 5
    tgt = rng.standard_normal((tgt_len, batch, 4))
    memory = rng.standard_normal((src_len, batch, 4))
    if batch_first:
        tgt, memory = tgt.transpose(1, 0, 2), memory.transpose(1, 0, 2)
    masks = (causal_mask(tgt_len), rng.standard_normal((tgt_len, src_len)),
             padding_mask(batch, tgt_len, rng), padding_mask(batch, src_len, rng)) \
        if masked else (None,) * 4
    names = ("tgt_mask", "memory_mask", "tgt_key_padding_mask", "memory_key_padding_mask")
    args = (ms.Tensor(tgt), ms.Tensor(memory))
    kwargs = {n: tensor_or_none(m) for n, m in zip(names, masks)}
    tb, mb = to_batch_major(tgt, batch_first), to_batch_major(memory, batch_first)
    want = decoder_layer_reference(tb, mb, params_of(layer), "", 2, act, norm_first, masks)
    check_matches_reference(layer, args, kwargs, want, batch_first)

    stack = TransformerDecoder(layer, 2)
    perturb(stack, rng)
    p, want = params_of(stack), tb
    for i in range(2):
        want = decoder_layer_reference(want, mb, p, f"layers.{i}.", 2, act, norm_first, masks)
    check_matches_reference(stack, args, kwargs, want, batch_first)


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_matches_reference(batch_first):
    ms.set_seed(7)
    net = Transformer(d_model=4, nhead=2, num_encoder_layers=2, num_decoder_layers=1,
                      dim_feedforward=6, dropout=0.0, activation="gelu",
                      batch_first=batch_first, dtype=ms.float64)
    rng = np.random.default_rng(6)
    src, tgt = rng.standard_normal((5, 2, 4)), rng.standard_normal((3, 2, 4))
    if batch_first:
        src, tgt = src.transpose(1, 0, 2), tgt.transpose(1, 0, 2)
    src_kpm, tgt_mask = padding_mask(2, 5, rng), causal_mask(3)
    args = (ms.Tensor(src), ms.Tensor(tgt))
    kwargs = dict(tgt_mask=ms.Tensor(tgt_mask), src_key_padding_mask=ms.Tensor(src_kpm),
                  memory_key_padding_mask=ms.Tensor(src_kpm))
    p = params_of(net)
    memory = to_batch_major(src, batch_first)
    for i in range(2):
        memory = encoder_layer_reference(memory, p, f"encoder.layers.{i}.", 2, "gelu", False,
                                         None, src_kpm)
    memory = layer_norm(memory, p, "encoder.norm.")
    want = decoder_layer_reference(to_batch_major(tgt, batch_first), memory, p,
                                   "decoder.layers.0.", 2, "gelu", False,
                                   (tgt_mask, None, None, src_kpm))
    want = layer_norm(want, p, "decoder.norm.")
    check_matches_reference(net, args, kwargs, want, batch_first)


# ---- gradients ----------------------------------------------------------------------------

def _attention_loss(rng):
    net = MultiheadAttention(4, 2, add_bias_kv=True, dtype=ms.float64)
    key = ms.Tensor(rng.standard_normal((4, 2, 4)))
    kpm = ms.Tensor(np.array([[False, False, False, True], [False, False, True, True]]))
    attn = ms.Tensor(rng.standard_normal((3, 4)))
    wout = ms.Tensor(rng.standard_normal((3, 2, 4)))

    def loss(x):
        out, w = net(x, key, key, key_padding_mask=kpm, attn_mask=attn)
        return (out * wout).sum() + (w * w).sum()
    return loss, (3, 2, 4)


def _encoder_loss(rng):
    net = TransformerEncoderLayer(4, 2, dim_feedforward=6, dropout=0.0, activation="gelu",
                                  norm_first=True, batch_first=True, dtype=ms.float64)
    mask = ms.Tensor(causal_mask(3))
    wout = ms.Tensor(rng.standard_normal((2, 3, 4)))

    def loss(x):
        return (net(x, src_mask=mask) * wout).sum()
    return loss, (2, 3, 4)


def _decoder_loss(rng):
    net = TransformerDecoderLayer(4, 2, dim_feedforward=6, dropout=0.0, dtype=ms.float64)
    memory = ms.Tensor(rng.standard_normal((4, 2, 4)))
    mask = ms.Tensor(causal_mask(3))
    wout = ms.Tensor(rng.standard_normal((3, 2, 4)))

    def loss(x):
        return (net(x, memory, tgt_mask=mask) * wout).sum()
    return loss, (3, 2, 4)


@pytest.mark.parametrize("make_loss", [_attention_loss, _encoder_loss, _decoder_loss])
def test_input_gradient_matches_finite_differences(make_loss):
    ms.set_seed(8)
    rng = np.random.default_rng(7)
    loss, shape = make_loss(rng)
    x = rng.standard_normal(shape)
    check_input_gradient(loss, x)


# ---- training -----------------------------------------------------------------------------

class EncoderClassifier(nn.Cell):
    def __init__(self, dim, classes):
        super().__init__()
        layer = TransformerEncoderLayer(dim, 2, dim_feedforward=16, dropout=0.0,
                                        batch_first=True)
        self.encoder = TransformerEncoder(layer, 2)
        self.head = nn.Dense(dim, classes)

    def construct(self, x, padding):
        h = self.encoder(x, src_key_padding_mask=padding)
        return self.head(h.mean(1))


def test_encoder_classifier_trains_jitted_equal_to_eager():
    dim, classes = 8, 2
    rng = np.random.default_rng(8)
    x = rng.standard_normal((16, 5, dim)).astype(np.float32)
    labels = (x[:, :3, 0].sum(1) > 0).astype(np.int32)
    padding = ms.Tensor(np.tile(np.array([False, False, False, True, True]), (16, 1)))
    inputs = ms.Tensor(x)
    targets = ops.one_hot(ms.Tensor(labels), classes, 1.0, 0.0)

    def train(jitted):
        ms.set_seed(9)
        net = EncoderClassifier(dim, classes)
        opt = nn.Adam(net.trainable_params(), learning_rate=0.01)

        def loss_fn(x, padding, targets):
            logits = net(x, padding)
            return -(ops.log_softmax(logits, -1) * targets).sum(-1).mean()

        grad_fn = ms.value_and_grad(loss_fn, None, opt.parameters)

        def step(x, padding, targets):
            loss, grads = grad_fn(x, padding, targets)
            opt(grads)
            return loss

        step = ms.jit(step) if jitted else step
        return [float(step(inputs, padding, targets).asnumpy()) for _ in range(20)]

    eager, jitted = train(False), train(True)
    np.testing.assert_allclose(jitted, eager, rtol=1e-4)
    assert eager[-1] < 0.6 * eager[0], eager


# ---- parameter names ----------------------------------------------------------------------

def test_parameter_names_and_shapes_follow_mindspore():
    shapes = {n: tuple(p.shape) for n, p in MultiheadAttention(8, 2).parameters_dict().items()}
    assert shapes == {"in_proj_weight": (24, 8), "in_proj_bias": (24,),
                      "out_proj.weight": (8, 8), "out_proj.bias": (8,)}
    separate = MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True)
    shapes = {n: tuple(p.shape) for n, p in separate.parameters_dict().items()}
    assert shapes == {"q_proj_weight": (8, 8), "k_proj_weight": (8, 3), "v_proj_weight": (8, 5),
                      "in_proj_bias": (24,), "out_proj.weight": (8, 8), "out_proj.bias": (8,),
                      "bias_k": (1, 1, 8), "bias_v": (1, 1, 8)}
    assert np.all(separate.in_proj_bias.asnumpy() == 0)

    layer_names = ["self_attn.in_proj_weight", "self_attn.in_proj_bias",
                   "self_attn.out_proj.weight", "self_attn.out_proj.bias", "dense1.weight",
                   "dense1.bias", "dense2.weight", "dense2.bias", "norm1.gamma", "norm1.beta",
                   "norm2.gamma", "norm2.beta"]
    encoder_layer = TransformerEncoderLayer(8, 2, dim_feedforward=16)
    assert list(encoder_layer.parameters_dict()) == layer_names
    assert tuple(encoder_layer.dense1.weight.shape) == (16, 8)
    decoder_names = list(TransformerDecoderLayer(8, 2, dim_feedforward=16).parameters_dict())
    assert decoder_names[4:8] == ["multihead_attn.in_proj_weight", "multihead_attn.in_proj_bias",
                                  "multihead_attn.out_proj.weight",
                                  "multihead_attn.out_proj.bias"]
    assert decoder_names[-2:] == ["norm3.gamma", "norm3.beta"]

    encoder = TransformerEncoder(encoder_layer, 3, nn.LayerNorm((8,)))
    names = list(encoder.parameters_dict())
    assert names == [f"layers.{i}.{n}" for i in range(3) for n in layer_names] + [
        "norm.gamma", "norm.beta"]
    # The layers are copies of the template: equal at first, trained apart.
    first, second = encoder.layers[0], encoder.layers[1]
    assert first.self_attn.in_proj_weight is not second.self_attn.in_proj_weight
    np.testing.assert_array_equal(second.dense1.weight.asnumpy(),
                                  encoder_layer.dense1.weight.asnumpy())

    model = Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1,
                        dim_feedforward=16)
    names = list(model.parameters_dict())
    assert names[0] == "encoder.layers.0.self_attn.in_proj_weight"
    assert "decoder.layers.0.multihead_attn.out_proj.bias" in names
    assert names[-2:] == ["decoder.norm.gamma", "decoder.norm.beta"]
    assert len(names) == 2 * 12 + 2 + 18 + 2
    weight = model.encoder.layers[0].dense1.weight.asnumpy()
    assert np.abs(weight).max() <= math.sqrt(6 / (16 + 8))  # redrawn from XavierUniform


# ---- errors -------------------------------------------------------------------------------

def _t(*shape, dtype=np.float32):
    return ms.Tensor(np.zeros(shape, dtype))


@pytest.mark.parametrize("build, call, error, match", [
    (lambda: MultiheadAttention(10, 3), None, ValueError, "divisible by num_heads"),
    (lambda: MultiheadAttention(8, 0), None, ValueError, "num_heads must be a positive int"),
    (lambda: MultiheadAttention(8, 2, dropout=1.0), None, ValueError, "dropout"),
    (lambda: MultiheadAttention(8, 2), lambda n: n(_t(3, 2, 8), _t(3, 8), _t(3, 8)),
     ValueError, "same rank"),
    (lambda: MultiheadAttention(8, 2), lambda n: n(_t(1, 3, 2, 8), _t(3, 2, 8), _t(3, 2, 8)),
     ValueError, "3-D .batched. or 2-D"),
    (lambda: MultiheadAttention(8, 2), lambda n: n(_t(3, 2, 6), _t(3, 2, 8), _t(3, 2, 8)),
     ValueError, "query has 6 features"),
    (lambda: MultiheadAttention(8, 2, kdim=4), lambda n: n(_t(3, 2, 8), _t(3, 2, 8),
                                                           _t(3, 2, 8)),
     ValueError, "key has 8 features in its last axis, expected 4"),
    (lambda: MultiheadAttention(8, 2), lambda n: n(_t(3, 2, 8), _t(4, 2, 8), _t(5, 2, 8)),
     ValueError, "same sequence length"),
    (lambda: MultiheadAttention(8, 2), lambda n: n(_t(3, 2, 8), _t(4, 3, 8), _t(4, 3, 8)),
     ValueError, "different batch sizes"),
    (lambda: MultiheadAttention(8, 2), lambda n: n(_t(3, 2, 8), _t(4, 2, 8), _t(4, 2, 8),
                                                   key_padding_mask=_t(2, 3, dtype=np.bool_)),
     ValueError, r"key_padding_mask must have shape \(2, 4\)"),
    (lambda: MultiheadAttention(8, 2), lambda n: n(_t(3, 2, 8), _t(4, 2, 8), _t(4, 2, 8),
                                                   key_padding_mask=_t(2, 4, dtype=np.int32)),
     TypeError, "key_padding_mask must be a bool or floating-point"),
    (lambda: MultiheadAttention(8, 2), lambda n: n(_t(3, 2, 8), _t(4, 2, 8), _t(4, 2, 8),
                                                   attn_mask=_t(4, 3)),
     ValueError, r"2-D attn_mask must have shape \(3, 4\)"),
    (lambda: MultiheadAttention(8, 2), lambda n: n(_t(3, 2, 8), _t(4, 2, 8), _t(4, 2, 8),
                                                   attn_mask=_t(2, 3, 4)),
     ValueError, r"3-D attn_mask must have shape \(4, 3, 4\)"),
    (lambda: MultiheadAttention(8, 2), lambda n: n(_t(3, 2, 8), _t(4, 2, 8), _t(4, 2, 8),
                                                   attn_mask=_t(1, 4, 3, 4)),
     ValueError, "attn_mask must be 2-D or 3-D"),
    (lambda: MultiheadAttention(8, 2), lambda n: n(np.zeros((3, 2, 8)), _t(3, 2, 8),
                                                   _t(3, 2, 8)),
     TypeError, "query must be a Tensor"),
    (lambda: TransformerEncoderLayer(8, 2, activation="tanh"), None, ValueError,
     "TransformerEncoderLayer: activation must be 'relu' or 'gelu'"),
    (lambda: TransformerDecoderLayer(8, 2, activation=3), None, ValueError,
     "TransformerDecoderLayer: activation must be a str, a Cell or a callable"),
    (lambda: TransformerEncoderLayer(8, 3), None, ValueError,
     r"TransformerEncoderLayer: d_model \(8\) must be divisible by nhead \(3\)"),
    (lambda: TransformerEncoder(nn.Dense(2, 2), 2), None, TypeError,
     "TransformerEncoder: expected a TransformerEncoderLayer"),
    (lambda: TransformerDecoder(TransformerDecoderLayer(4, 2, 8), 0), None, ValueError,
     "num_layers must be a positive int"),
    (lambda: Transformer(8, 2, 1, 1, 16), lambda n: n(_t(3, 2, 8), _t(4, 3, 8)), ValueError,
     "same batch size"),
    (lambda: Transformer(8, 2, 1, 1, 16), lambda n: n(_t(3, 2, 8), _t(4, 2, 6)), ValueError,
     "d_model=8"),
])
def test_bad_arguments_raise_clear_errors(build, call, error, match):
    with pytest.raises(error, match=match):
        net = build()
        call(net)


# ---- PyTorch, when installed --------------------------------------------------------------

def test_attention_matches_torch_when_installed():
    torch = pytest.importorskip("torch", reason="torch is not installed; the NumPy reference "
                                                "covers the same equations")
    ms.set_seed(10)
    net = MultiheadAttention(6, 3, dtype=ms.float64)
    ref = torch.nn.MultiheadAttention(6, 3, dtype=torch.float64)
    with torch.no_grad():
        for name, p in net.parameters_and_names():
            ref.get_parameter(name).copy_(torch.from_numpy(p.asnumpy()))
    rng = np.random.default_rng(9)
    q, k = rng.standard_normal((4, 2, 6)), rng.standard_normal((5, 2, 6))
    kpm, attn = padding_mask(2, 5, rng), causal_mask(4, 5)
    out, w = net(ms.Tensor(q), ms.Tensor(k), ms.Tensor(k), key_padding_mask=ms.Tensor(kpm),
                 attn_mask=ms.Tensor(attn), average_attn_weights=False)
    t_out, t_w = ref(torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(k),
                     key_padding_mask=torch.from_numpy(kpm), attn_mask=torch.from_numpy(attn),
                     average_attn_weights=False)
    np.testing.assert_allclose(out.asnumpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w.asnumpy(), t_w.detach().numpy(), rtol=1e-10, atol=1e-12)
