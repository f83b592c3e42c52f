"""DynamicRNN and DynamicGRUV2 against torch's LSTM and GRU with the weights mapped between the
layouts (outputs, gates and gradients), and their argument checks."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(0)
T, B, I, H = 5, 3, 4, 6


def test_dynamic_rnn_against_torch_lstm():
    x = RNG.normal(size=(T, B, I))
    w = RNG.normal(size=(I + H, 4 * H)) * 0.4
    b = RNG.normal(size=(4 * H,)) * 0.1
    h0, c0 = RNG.normal(size=(1, B, H)), RNG.normal(size=(1, B, H))
    forget_bias = 0.5
    op = ops.DynamicRNN(forget_bias=forget_bias)
    args = [ms.Tensor(a) for a in (x, w, b)]
    y, out_h, out_c, i, j, f, o, tanh_c = op(*args, None, ms.Tensor(h0), ms.Tensor(c0))
    # torch packs (i, f, g, o) in rows of (4H, I); DynamicRNN packs (i, j, f, o) in columns.
    blocks = [slice(0, H), slice(2 * H, 3 * H), slice(H, 2 * H), slice(3 * H, 4 * H)]
    lstm = torch.nn.LSTM(I, H, dtype=torch.float64)
    with torch.no_grad():
        lstm.weight_ih_l0.copy_(torch.tensor(np.concatenate([w[:I, s].T for s in blocks])))
        lstm.weight_hh_l0.copy_(torch.tensor(np.concatenate([w[I:, s].T for s in blocks])))
        bias = np.concatenate([b[s] for s in blocks])
        bias[H:2 * H] += forget_bias
        lstm.bias_ih_l0.copy_(torch.tensor(bias))
        lstm.bias_hh_l0.zero_()
    tx = torch.tensor(x, requires_grad=True)
    ty, (th, tc) = lstm(tx, (torch.tensor(h0), torch.tensor(c0)))
    np.testing.assert_allclose(y.asnumpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out_c.asnumpy()[-1], tc.detach().numpy()[0], rtol=1e-10)
    np.testing.assert_allclose((o * tanh_c).asnumpy(), y.asnumpy(), rtol=1e-12)
    assert all(t.shape == (T, B, H) for t in (out_h, i, j, f))
    probe = RNG.normal(size=(T, B, H))
    (ty * torch.tensor(probe)).sum().backward()
    gx = ms.grad(lambda v: (op(v, args[1], args[2], None, ms.Tensor(h0), ms.Tensor(c0))[0]
                            * ms.Tensor(probe)).sum())(args[0])
    np.testing.assert_allclose(gx.asnumpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("gate_order", ["rzh", "zrh"])
def test_dynamic_gru_v2_against_torch_gru(gate_order):
    x = RNG.normal(size=(T, B, I))
    w_i = RNG.normal(size=(I, 3 * H)) * 0.4
    w_h = RNG.normal(size=(H, 3 * H)) * 0.4
    b_i, b_h = RNG.normal(size=(3 * H,)) * 0.1, RNG.normal(size=(3 * H,)) * 0.1
    h0 = RNG.normal(size=(B, H))
    op = ops.DynamicGRUV2(gate_order=gate_order)
    y, out_h, update, reset, new, hidden_new = op(
        *[ms.Tensor(a) for a in (x, w_i, w_h, b_i, b_h)], None, ms.Tensor(h0))
    # torch packs (r, z, n) in rows.
    r_s, z_s = (slice(0, H), slice(H, 2 * H)) if gate_order == "rzh" else \
        (slice(H, 2 * H), slice(0, H))
    blocks = [r_s, z_s, slice(2 * H, 3 * H)]
    gru = torch.nn.GRU(I, H, dtype=torch.float64)
    with torch.no_grad():
        gru.weight_ih_l0.copy_(torch.tensor(np.concatenate([w_i[:, s].T for s in blocks])))
        gru.weight_hh_l0.copy_(torch.tensor(np.concatenate([w_h[:, s].T for s in blocks])))
        gru.bias_ih_l0.copy_(torch.tensor(np.concatenate([b_i[s] for s in blocks])))
        gru.bias_hh_l0.copy_(torch.tensor(np.concatenate([b_h[s] for s in blocks])))
    ty, _ = gru(torch.tensor(x), torch.tensor(h0)[None])
    np.testing.assert_allclose(y.asnumpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(out_h.asnumpy(), y.asnumpy())
    previous = np.concatenate([h0[None], y.asnumpy()[:-1]])
    np.testing.assert_allclose(y.asnumpy(), (1 - update.asnumpy()) * new.asnumpy()
                               + update.asnumpy() * previous, rtol=1e-12)
    np.testing.assert_allclose(hidden_new.asnumpy(),
                               previous @ w_h[:, 2 * H:] + b_h[2 * H:], rtol=1e-10)
    assert reset.shape == (T, B, H)


def test_jitted_equals_eager_and_bad_arguments():
    x = ms.Tensor(RNG.normal(size=(T, B, I)).astype(np.float32))
    w_i = ms.Tensor(RNG.normal(size=(I, 3 * H)).astype(np.float32))
    w_h = ms.Tensor(RNG.normal(size=(H, 3 * H)).astype(np.float32))
    h0 = ms.Tensor(np.zeros((B, H), np.float32))
    op = ops.DynamicGRUV2()
    eager = op(x, w_i, w_h, None, None, None, h0)[0]
    jitted = ms.jit(lambda *a: op(*a, None, None, None, h0)[0])(x, w_i, w_h)
    np.testing.assert_allclose(jitted.asnumpy(), eager.asnumpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError):
        op(x, w_h, w_h, None, None, None, h0)
    with pytest.raises(ValueError):
        ops.DynamicGRUV2(gate_order="hzr")
    with pytest.raises(ValueError):
        ops.DynamicRNN(use_peephole=True)
    with pytest.raises(ValueError):
        ops.DynamicRNN()(x, ms.Tensor(np.zeros((I + H, 4 * H), np.float32)),
                         ms.Tensor(np.zeros((4 * H,), np.float32)), ms.Tensor(np.int32(3)),
                         ms.Tensor(np.zeros((1, B, H), np.float32)),
                         ms.Tensor(np.zeros((1, B, H), np.float32)))
