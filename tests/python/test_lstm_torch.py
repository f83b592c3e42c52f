"""nn.LSTM against torch.nn.LSTM given the same weights: outputs, final states and the gradients
of the input, the initial states and every parameter, eager and jitted (the jitted gradient
function equal to the eager one), over layers, both directions, batch_first and no bias, in
float32 at the shape benchmarks/layers.py times and in float64 on small shapes."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn

torch = pytest.importorskip("torch", reason="torch gives the reference LSTM")


def torch_twin(net, dtype):
    """torch.nn.LSTM with net's configuration and a copy of its parameters (MindSpore's names
    are torch's)."""
    twin = torch.nn.LSTM(net.input_size, net.hidden_size, net.num_layers, bias=net.has_bias,
                         batch_first=net.batch_first, bidirectional=net.bidirectional)
    twin = twin.to(dtype)
    params = dict(twin.named_parameters())
    names = [name for name, _ in net.parameters_and_names()]
    assert sorted(names) == sorted(params), (names, list(params))
    with torch.no_grad():
        for name, p in net.parameters_and_names():
            params[name].copy_(torch.from_numpy(p.asnumpy()))
    return twin, names


def torch_results(twin, names, x, weights, h0c0):
    """(output, h_n, c_n) and the gradients of sum(output * weights) + sum(h_n) + sum(c_n) with
    respect to x, h0, c0 (when given) and the parameters in `names`' order."""
    xt = torch.from_numpy(x).requires_grad_(True)
    inputs = [xt]
    hx = None
    if h0c0 is not None:
        hx = tuple(torch.from_numpy(s).requires_grad_(True) for s in h0c0)
        inputs += list(hx)
    out, (hn, cn) = twin(xt, hx)
    (out * torch.from_numpy(weights)).sum().add(hn.sum()).add(cn.sum()).backward()
    params = dict(twin.named_parameters())
    grads = [t.grad.numpy() for t in inputs] + [params[n].grad.numpy() for n in names]
    return [out.detach().numpy(), hn.detach().numpy(), cn.detach().numpy()], grads


def pijit_functions(net, weights, with_state):
    """The forward and a value_and_grad function matching torch_results' loss."""
    w = ms.Tensor(weights)

    def forward(x, *h0c0):
        out, (hn, cn) = net(x, tuple(h0c0) if with_state else None)
        return out, hn, cn

    def loss(x, *h0c0):
        out, hn, cn = forward(x, *h0c0)
        return (out * w).sum() + hn.sum() + cn.sum()

    positions = (0, 1, 2) if with_state else 0
    return forward, ms.value_and_grad(loss, positions, net.trainable_params())


def flatten_grads(grads, with_state):
    by_input, by_param = grads
    by_input = list(by_input) if with_state else [by_input]
    return [g.asnumpy() for g in by_input] + [g.asnumpy() for g in by_param]


def assert_close(got, want, rtol, atol, what):
    assert len(got) == len(want), what
    for k, (g, w) in enumerate(zip(got, want)):
        scale = max(1.0, float(np.abs(w).max()))
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol * scale, err_msg=f"{what} {k}")


def compare(net, x, dtype, with_state, rtol, atol, rng):
    np_dtype = np.float32 if dtype == torch.float32 else np.float64
    twin, names = torch_twin(net, dtype)
    assert names == [p.name for p in net.trainable_params()]
    states = net.num_layers * net.num_directions, x.shape[0 if net.batch_first else 1]
    h0c0 = None
    if with_state:
        h0c0 = tuple(rng.standard_normal(states + (net.hidden_size,)).astype(np_dtype)
                     for _ in range(2))
    out_shape = x.shape[:2] + (net.num_directions * net.hidden_size,)
    weights = rng.standard_normal(out_shape).astype(np_dtype)
    want_out, want_grads = torch_results(twin, names, x, weights, h0c0)
    forward, grad_fn = pijit_functions(net, weights, with_state)
    args = [ms.Tensor(x)] + ([ms.Tensor(s) for s in h0c0] if with_state else [])
    jitted = ms.jit(forward), ms.jit(grad_fn)
    eager_grads = None
    for label, fwd, grads in (("eager", forward, grad_fn), ("jit",) + jitted):
        for _ in range(2):  # the second call runs the cached graph
            got_out = [t.asnumpy() for t in fwd(*args)]
            assert_close(got_out, want_out, rtol, atol, f"{label} forward")
            value, got = grads(*args)
            got_grads = flatten_grads(got, with_state)
            assert_close(got_grads, want_grads, rtol, atol, f"{label} gradient")
        if eager_grads is None:
            eager_grads = got_grads
        else:  # jitted equal to eager within the rounding of fused kernels
            assert_close(got_grads, eager_grads, rtol, atol, "jit against eager gradient")
    for fn in jitted:  # each jitted function ran as one graph
        stats = ms.get_code_extra(fn)
        assert stats["total_break_count"] == 0 and stats["eager_count"] == 0, \
            stats["all_reasons"]


@pytest.mark.parametrize("layers, bidirectional, batch_first, has_bias, with_state", [
    (1, False, False, True, False),
    (2, False, True, True, True),
    (2, True, True, True, False),
    (3, True, False, False, True),
])
def test_float64_matches_torch(layers, bidirectional, batch_first, has_bias, with_state):
    ms.set_seed(11)
    net = nn.LSTM(5, 7, layers, has_bias=has_bias, batch_first=batch_first,
                  bidirectional=bidirectional, dtype=ms.float64)
    rng = np.random.default_rng(layers * 10 + bidirectional)
    x = rng.standard_normal((3, 6, 5) if batch_first else (6, 3, 5))
    compare(net, x, torch.float64, with_state, rtol=1e-9, atol=1e-11, rng=rng)


def test_float32_benchmark_shape_matches_torch():
    """benchmarks/layers.py's LSTM: 2 layers, input 128, hidden 256, sequence 32, batch 32."""
    ms.set_seed(12)
    net = nn.LSTM(128, 256, 2, batch_first=True)
    rng = np.random.default_rng(12)
    x = rng.standard_normal((32, 32, 128)).astype(np.float32)
    compare(net, x, torch.float32, False, rtol=1e-4, atol=2e-5, rng=rng)


def test_float32_bidirectional_with_state_matches_torch():
    ms.set_seed(13)
    net = nn.LSTM(16, 24, 2, bidirectional=True)
    rng = np.random.default_rng(13)
    x = rng.standard_normal((9, 4, 16)).astype(np.float32)
    compare(net, x, torch.float32, True, rtol=1e-4, atol=2e-5, rng=rng)
