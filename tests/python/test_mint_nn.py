"""pijit.mint.nn, mint.nn.functional and mint.optim against NumPy references written here
(activations, normalisation, losses, pooling with indices, padding modes, fold/unfold,
grid_sample, AdamW's update), jitted against eager as one graph, gradients against
central differences, and clear errors for bad arguments."""
import math

import numpy as np
import pytest

import pijit as ms
from pijit import mint
from mint_testutil import T, grad_matches, jitted_matches, same

F = mint.nn.functional


@pytest.fixture
def rng():
    return np.random.default_rng(31)


def _erf(x):
    return np.vectorize(math.erf)(x)


# ---- activations -------------------------------------------------------------------------------

def test_activations(rng):
    x = rng.normal(size=(3, 5)) * 3
    same(F.relu(T(x)), np.maximum(x, 0))
    same(F.sigmoid(T(x)), 1 / (1 + np.exp(-x)), rtol=1e-12)
    same(F.tanh(T(x)), np.tanh(x), rtol=1e-12)
    same(F.silu(T(x)), x / (1 + np.exp(-x)), rtol=1e-12)
    same(F.elu(T(x), alpha=0.5), np.where(x > 0, x, 0.5 * np.expm1(x)), rtol=1e-12)
    same(F.leaky_relu(T(x)), np.where(x > 0, x, 0.01 * x))
    same(F.leaky_relu(T(x), negative_slope=0.2), np.where(x > 0, x, 0.2 * x))
    same(F.gelu(T(x)), 0.5 * x * (1 + _erf(x / np.sqrt(2))), rtol=1e-12)
    tanh_form = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    same(F.gelu(T(x), approximate="tanh"), tanh_form, rtol=1e-12)
    e = np.exp(x - x.max(0))
    same(F.softmax(T(x), dim=0), e / e.sum(0), rtol=1e-12)
    assert F.softmax(T(x), 1, dtype=ms.float32).dtype == ms.float32
    beta, threshold = 2.0, 3.0
    want = np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta)
    same(F.softplus(T(x), beta, threshold), want, rtol=1e-12)
    for fn in (lambda t: F.gelu(t, approximate="tanh"), lambda t: F.softplus(t, 2.0, 3.0),
               lambda t: F.elu(t, 0.5), F.silu, lambda t: F.softmax(t, 1)):
        grad_matches(fn, x / 3)
        jitted_matches(fn, T(x))
    with pytest.raises(ValueError, match="approximate"):
        F.gelu(T(x), approximate="erf")


# ---- normalisation, layers -----------------------------------------------------------------------

def test_group_norm_and_layer_norm(rng):
    x = rng.normal(size=(2, 6, 3, 2))
    w, b = rng.normal(size=6), rng.normal(size=6)
    g = x.reshape(2, 3, -1)
    ref = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    same(F.group_norm(T(x), 3), ref, rtol=1e-10, atol=1e-12)
    same(F.group_norm(T(x), 3, T(w), T(b)), ref * w[:, None, None] + b[:, None, None], rtol=1e-10,
         atol=1e-12)
    tw, tb = T(w), T(b)
    grad_matches(lambda t: F.group_norm(t, 2, tw, tb), x[:1, :, :2, :1], rtol=1e-5)
    jitted_matches(lambda t: F.group_norm(t, 3, tw, tb), T(x))
    with pytest.raises(ValueError, match="groups"):
        F.group_norm(T(x), 4)
    flat = x.reshape(2, 6, 6)
    ln = (flat - flat.mean(-1, keepdims=True)) / np.sqrt(flat.var(-1, keepdims=True) + 1e-5)
    same(F.layer_norm(T(flat), (6,)), ln, rtol=1e-6, atol=1e-6)
    w6 = rng.normal(size=6)
    same(F.layer_norm(T(flat), 6, T(w6)), ln * w6, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="normalized_shape"):
        F.layer_norm(T(flat), (5,))


def test_batch_norm_inference_and_training(rng):
    x = rng.normal(size=(4, 3, 2, 2))
    mean, var = rng.normal(size=3), rng.uniform(0.5, 2, size=3)
    w, b = rng.normal(size=3), rng.normal(size=3)
    shape = (1, 3, 1, 1)
    ref = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-5) * w.reshape(shape) \
        + b.reshape(shape)
    same(F.batch_norm(T(x), T(mean), T(var), T(w), T(b)), ref, rtol=1e-6, atol=1e-6)
    running_mean, running_var = ms.Parameter(mean), ms.Parameter(var)
    out = F.batch_norm(T(x), running_mean, running_var, training=True, momentum=0.1)
    bm, bv = x.mean((0, 2, 3)), x.var((0, 2, 3))
    same(out, (x - bm.reshape(shape)) / np.sqrt(bv.reshape(shape) + 1e-5), rtol=1e-6, atol=1e-6)
    same(running_mean, 0.9 * mean + 0.1 * bm, rtol=1e-6)


def test_linear_embedding_one_hot_dropout(rng):
    x, w, b = rng.normal(size=(2, 4)), rng.normal(size=(3, 4)), rng.normal(size=3)
    same(F.linear(T(x), T(w), T(b)), x @ w.T + b, rtol=1e-12)
    same(F.linear(T(x), T(w)), x @ w.T, rtol=1e-12)
    tw, tb = T(w), T(b)
    grad_matches(lambda t: F.linear(t, tw, tb), x)
    ids = np.array([[0, 2], [2, 1]])
    table = rng.normal(size=(3, 5))
    same(F.embedding(T(ids), T(table)), table[ids])
    jitted_matches(lambda i, t: F.embedding(i, t) * 2, T(ids), T(table))
    # The padding row (2, also given as -1) is read but takes no gradient; the others take
    # one per use.
    uses = np.zeros((3, 5))
    for i in ids.ravel():
        uses[i] += 1
    uses[2] = 0
    for padding_idx in (2, -1):
        grad = ms.grad(lambda t: F.embedding(T(ids), t, padding_idx=padding_idx).sum())(T(table))
        same(grad, uses)
    same(F.embedding(T(ids), T(table), padding_idx=2), table[ids])
    jitted_matches(lambda i, t: F.embedding(i, t, padding_idx=2) * 2, T(ids), T(table))
    with pytest.raises(ValueError, match="padding_idx"):
        F.embedding(T(ids), T(table), padding_idx=3)
    with pytest.raises(ValueError, match="max_norm"):
        F.embedding(T(ids), T(table), max_norm=1.0)
    with pytest.raises(TypeError, match="integer"):
        F.embedding(T(ids.astype(np.float32)), T(table))
    labels = np.array([0, 3, 1], np.int32)
    same(F.one_hot(T(labels), 5), np.eye(5, dtype=np.int32)[labels])
    same(F.one_hot(T(labels)), np.eye(4, dtype=np.int32)[labels])
    jitted_matches(lambda t: F.one_hot(t, 5), T(labels))
    big = T(np.ones((200, 50)))
    kept = F.dropout(big, p=0.3).asnumpy()
    assert set(np.unique(kept)) <= {0.0, 1 / 0.7} and abs((kept == 0).mean() - 0.3) < 0.03
    same(F.dropout(big, p=0.3, training=False), np.ones((200, 50)))
    layer = mint.nn.Dropout(p=0.3)
    layer.set_train(False)
    same(layer(big), np.ones((200, 50)))
    with pytest.raises(ValueError, match="p"):
        mint.nn.Dropout(p=1.5)


def test_binary_cross_entropy_losses(rng):
    p, y = rng.uniform(0.05, 0.95, size=(3, 4)), rng.integers(0, 2, size=(3, 4)).astype(float)
    w = rng.uniform(0.5, 2, size=(4,))
    bce = -(y * np.log(p) + (1 - y) * np.log(1 - p)) * w
    same(F.binary_cross_entropy(T(p), T(y), T(w)), bce.mean(), rtol=1e-12)
    same(F.binary_cross_entropy(T(p), T(y), reduction="none"), bce / w, rtol=1e-12)
    z = rng.normal(size=(3, 4)) * 2
    pos = rng.uniform(0.5, 2, size=(4,))
    s = 1 / (1 + np.exp(-z))
    with_logits = -(pos * y * np.log(s) + (1 - y) * np.log(1 - s))
    same(F.binary_cross_entropy_with_logits(T(z), T(y), pos_weight=T(pos), reduction="sum"),
         with_logits.sum(), rtol=1e-10)
    loss = mint.nn.BCEWithLogitsLoss(pos_weight=T(pos))
    same(loss(T(z), T(y)), with_logits.mean(), rtol=1e-10)
    ty = T(y)
    grad_matches(lambda t: F.binary_cross_entropy_with_logits(t, ty, reduction="none"), z)
    jitted_matches(lambda t: F.binary_cross_entropy_with_logits(t, ty), T(z))
    with pytest.raises(ValueError, match="reduction"):
        F.binary_cross_entropy(T(p), T(y), reduction="avg")


# ---- pooling, padding, fold/unfold, grid_sample ----------------------------------------------------

def _max_pool_reference(x, k, s, p, ceil_mode):
    n, c, h, w = x.shape
    size = [((d + 2 * p - k + (s - 1 if ceil_mode else 0)) // s) + 1 for d in (h, w)]
    # torch's rule: the last window must start inside the input or its left padding.
    size = [o - 1 if ceil_mode and (o - 1) * s >= d + p else o for o, d in zip(size, (h, w))]
    values = np.full((n, c, *size), -np.inf)
    index = np.zeros((n, c, *size), np.int64)
    for i in range(size[0]):
        for j in range(size[1]):
            for di in range(k):
                for dj in range(k):
                    r, q = i * s - p + di, j * s - p + dj
                    if 0 <= r < h and 0 <= q < w:
                        better = x[:, :, r, q] > values[:, :, i, j]
                        values[:, :, i, j] = np.where(better, x[:, :, r, q], values[:, :, i, j])
                        index[:, :, i, j] = np.where(better, r * w + q, index[:, :, i, j])
    return values, index


@pytest.mark.parametrize("k, s, p, ceil_mode", [(2, 2, 0, False), (3, 2, 1, False),
                                                (2, 2, 0, True), (3, 2, 1, True)])
def test_max_pool2d_with_indices(rng, k, s, p, ceil_mode):
    x = rng.normal(size=(2, 3, 5, 7))
    values, index = _max_pool_reference(x, k, s, p, ceil_mode)
    same(F.max_pool2d(T(x), k, s, p, ceil_mode=ceil_mode), values)
    same(F.max_pool2d(T(x), k, s, p, ceil_mode=ceil_mode, return_indices=True), (values, index))
    jitted_matches(lambda t: F.max_pool2d(t, k, s, p, ceil_mode=ceil_mode, return_indices=True),
                   T(x))


@pytest.mark.parametrize("mode, np_mode", [("constant", "constant"), ("reflect", "reflect"),
                                           ("replicate", "edge"), ("circular", "wrap")])
def test_pad_modes(rng, mode, np_mode):
    x = rng.normal(size=(2, 3, 4))
    want = np.pad(x, ((0, 0), (2, 1), (1, 3)), np_mode)
    same(F.pad(T(x), (1, 3, 2, 1), mode=mode), want)
    grad_matches(lambda t: F.pad(t, (1, 2), mode=mode), x[0])
    jitted_matches(lambda t: F.pad(t, (1, 3, 2, 1), mode=mode), T(x))


def test_pad_value_and_cropping(rng):
    x = rng.normal(size=(3, 4))
    same(F.pad(T(x), (1, 1), value=7.0), np.pad(x, ((0, 0), (1, 1)), constant_values=7.0))
    same(F.pad(T(x), (-1, 2, 0, -1)), np.pad(x[:2, 1:], ((0, 0), (0, 2))))
    with pytest.raises(ValueError, match="pairs"):
        F.pad(T(x), (1, 2, 3))
    with pytest.raises(ValueError, match="mode"):
        F.pad(T(x), (1, 1), mode="wrap")


def _unfold_reference(x, k, d, p, s):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    oh, ow = [(size + 2 * p - d * (k - 1) - 1) // s + 1 for size in (h, w)]
    cols = np.zeros((n, c, k, k, oh, ow))
    for i in range(k):
        for j in range(k):
            cols[:, :, i, j] = xp[:, :, i * d:i * d + s * (oh - 1) + 1:s,
                                  j * d:j * d + s * (ow - 1) + 1:s]
    return cols.reshape(n, c * k * k, oh * ow)


@pytest.mark.parametrize("k, d, p, s", [(2, 1, 0, 1), (3, 1, 1, 2), (2, 2, 1, 1)])
def test_unfold_and_fold_are_adjoint(rng, k, d, p, s):
    x = rng.normal(size=(2, 3, 6, 5))
    cols = _unfold_reference(x, k, d, p, s)
    same(F.unfold(T(x), k, dilation=d, padding=p, stride=s), cols, rtol=1e-12)
    same(mint.nn.Unfold(k, d, p, s)(T(x)), cols, rtol=1e-12)
    # fold is unfold's adjoint: <unfold(x), y> == <x, fold(y)> for every x and y.
    y = rng.normal(size=cols.shape)
    folded = F.fold(T(y), (6, 5), k, dilation=d, padding=p, stride=s).asnumpy()
    np.testing.assert_allclose((cols * y).sum(), (x * folded).sum(), rtol=1e-10)
    same(mint.nn.Fold((6, 5), k, d, p, s)(T(y)), folded, rtol=1e-12)
    grad_matches(lambda t: F.unfold(t, k, d, p, s), x[:1, :1])
    jitted_matches(lambda t: F.fold(F.unfold(t, k, d, p, s), (6, 5), k, d, p, s), T(x))
    with pytest.raises(ValueError, match="output_size"):
        F.fold(T(y), (7, 5), k, dilation=d, padding=p, stride=s)


def _grid_sample_reference(x, grid, mode, padding_mode, align_corners):
    n, c, h, w = x.shape
    out = np.zeros((n, c) + grid.shape[1:3])

    def pixel(v, size):
        pos = (v + 1) / 2 * (size - 1) if align_corners else ((v + 1) * size - 1) / 2
        return np.clip(pos, 0, size - 1) if padding_mode == "border" else pos

    def read(b, r, q):
        return x[b, :, r, q] if 0 <= r < h and 0 <= q < w else np.zeros(c)

    for b in range(n):
        for i in range(grid.shape[1]):
            for j in range(grid.shape[2]):
                px, py = pixel(grid[b, i, j, 0], w), pixel(grid[b, i, j, 1], h)
                if mode == "nearest":
                    out[b, :, i, j] = read(b, int(np.rint(py)), int(np.rint(px)))
                    continue
                x0, y0 = int(np.floor(px)), int(np.floor(py))
                fx, fy = px - x0, py - y0
                out[b, :, i, j] = (read(b, y0, x0) * (1 - fy) * (1 - fx)
                                   + read(b, y0, x0 + 1) * (1 - fy) * fx
                                   + read(b, y0 + 1, x0) * fy * (1 - fx)
                                   + read(b, y0 + 1, x0 + 1) * fy * fx)
    return out


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample(rng, mode, padding_mode, align_corners):
    x = rng.normal(size=(2, 3, 4, 5))
    grid = rng.uniform(-1.3, 1.3, size=(2, 3, 2, 2))
    want = _grid_sample_reference(x, grid, mode, padding_mode, align_corners)
    same(F.grid_sample(T(x), T(grid), mode, padding_mode, align_corners), want, rtol=1e-10,
         atol=1e-12)
    jitted_matches(lambda a, g: F.grid_sample(a, g, mode, padding_mode, align_corners),
                   T(x), T(grid))
    if mode == "bilinear":
        tx, tg = T(x), T(grid)
        grad_matches(lambda a: F.grid_sample(a, tg, mode, padding_mode, align_corners), x)
        grad_matches(lambda g: F.grid_sample(tx, g, mode, padding_mode, align_corners),
                     grid, rtol=1e-5, atol=1e-6)


def test_grid_sample_rejects_reflection():
    with pytest.raises(ValueError, match="padding_mode"):
        F.grid_sample(T(np.zeros((1, 1, 2, 2))), T(np.zeros((1, 1, 1, 2))),
                      padding_mode="reflection")


# ---- optim ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("amsgrad, maximize", [(False, False), (True, False), (False, True)])
def test_adamw_matches_its_update_rule(rng, amsgrad, maximize):
    start = rng.normal(size=(3, 2))
    p = ms.Parameter(start.copy(), name="w")
    lr, (b1, b2), eps, wd = 0.05, (0.8, 0.9), 1e-6, 0.1
    opt = mint.optim.AdamW([p], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd,
                           amsgrad=amsgrad, maximize=maximize)
    want, m, v, v_max = start.copy(), np.zeros_like(start), np.zeros_like(start), \
        np.zeros_like(start)
    for t in range(1, 4):
        g = rng.normal(size=start.shape)
        opt((T(g),))
        g = -g if maximize else g
        want = want * (1 - lr * wd)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        v_hat = v / (1 - b2 ** t)
        v_max = np.maximum(v_max, v_hat)
        want = want - lr * (m / (1 - b1 ** t)) / (np.sqrt(v_max if amsgrad else v_hat) + eps)
        np.testing.assert_allclose(p.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_adamw_trains_under_jit_and_checks_arguments(rng):
    x, y = T(rng.normal(size=(16, 3))), T(rng.normal(size=(16, 1)))
    w = ms.Parameter(np.zeros((3, 1)), name="w")
    opt = mint.optim.AdamW([w], lr=0.1)

    def loss_fn(w_):
        return mint.mean((mint.matmul(x, w_) - y) ** 2)

    @ms.jit
    def step():
        loss, g = ms.value_and_grad(loss_fn)(w)
        opt((g,))
        return loss

    best = np.linalg.lstsq(x.asnumpy(), y.asnumpy(), rcond=None)[0]
    best_loss = float(np.mean((x.asnumpy() @ best - y.asnumpy()) ** 2))
    losses = [float(step().asnumpy()) for _ in range(60)]
    # The loss falls from its start most of the way to the least-squares minimum.
    assert losses[-1] - best_loss < 0.2 * (losses[0] - best_loss)
    assert ms.get_code_extra(step)["total_break_count"] == 0
    with pytest.raises(ValueError, match="betas"):
        mint.optim.AdamW([w], betas=(0.9, 1.0))
    with pytest.raises(TypeError, match="amsgrad"):
        mint.optim.AdamW([w], amsgrad=1)
