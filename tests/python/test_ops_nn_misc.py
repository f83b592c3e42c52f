"""The ops functions of pijit/_ops_nn_more.py and _ops_misc_extra.py (losses, pooling, channel
dropout, LRN, IoU, affine grids, log-determinants, Cholesky, norms, sequences, creation,
in-place forms) against NumPy references written here, jitted against eager as one graph,
and gradients against central differences."""
import math

import numpy as np
import pytest
from scipy import special

import pijit as ms
from pijit import ops
from mint_testutil import T, against_numpy_test, same

R = np.random.default_rng(97)
A = R.normal(size=(4, 3))
B = R.normal(size=(4, 3))
C = R.normal(size=(4, 3))
SIGN = np.where(R.normal(size=4) > 0, 1.0, -1.0)
SIGN_B, VAR_C, SIGN_T = T(np.sign(B)), T(np.abs(C) + 0.1), T(SIGN)
LABELS_B = T((B > 0).astype(float))
TARGETS = T(np.array([0, 2, 1, 0]))
LENGTHS, LENGTHS_1 = T(np.array([2, 3, 1, 0])), T(np.array([2, 4, 1]))
SPD = (lambda m: m @ np.swapaxes(m, -1, -2) + 3 * np.eye(3))(R.normal(size=(2, 3, 3)))


_trapezoid = getattr(np, "trapezoid", None) or getattr(np, "trapz")


def _lrn(x, r, bias, alpha, beta):
    total = np.zeros_like(x)
    for c in range(x.shape[1]):
        total[:, c] = (x[:, max(0, c - r):c + r + 1] ** 2).sum(1)
    return x / (bias + alpha * total) ** beta


def _pool1d(x, k, s, fn):
    steps = (x.shape[-1] - k) // s + 1
    return np.stack([fn(x[..., i * s:i * s + k], -1) for i in range(steps)], -1)


def _cos(a, b):
    return (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))


# (id, the function of tensors, its NumPy reference, inputs, differentiable in the first)
CASES = [
    ("cosine_embedding_loss", lambda a, b: ops.cosine_embedding_loss(a, b, SIGN_T, 0.2),
     lambda a, b: np.where(SIGN == 1, 1 - _cos(a, b), np.maximum(_cos(a, b) - 0.2, 0)).mean(),
     [A, B], True),
    ("hinge_embedding_loss", lambda a: ops.hinge_embedding_loss(a, SIGN_B, 0.5, "sum"),
     lambda a: np.where(np.sign(B) == 1, a, np.maximum(0.5 - a, 0)).sum(), [A], False),
    ("gaussian_nll_loss", lambda a, b: ops.gaussian_nll_loss(a, b, VAR_C, True),
     lambda a, b: (0.5 * (np.log(np.abs(C) + 0.1) + (a - b) ** 2 / (np.abs(C) + 0.1))
                   + 0.5 * np.log(2 * np.pi)).mean(), [A, B], True),
    ("triplet_margin_loss", lambda a, p, n: ops.triplet_margin_loss(a, p, n, swap=True),
     lambda a, p, n: np.maximum(np.linalg.norm(a - p + 1e-6, axis=-1) - np.minimum(
         np.linalg.norm(a - n + 1e-6, axis=-1), np.linalg.norm(p - n + 1e-6, axis=-1)) + 1, 0)
     .mean(), [A, B, C], True),
    ("multi_margin_loss", lambda a: ops.multi_margin_loss(a, TARGETS),
     lambda a: np.mean([sum(max(0, 1 - a[i, y] + a[i, j]) for j in range(3) if j != y) / 3
                        for i, y in enumerate([0, 2, 1, 0])]), [A], True),
    ("multilabel_soft_margin_loss",
     lambda a: ops.multilabel_soft_margin_loss(a, LABELS_B),
     lambda a: (-((B > 0) * np.log(special.expit(a)) + (B <= 0) * np.log(special.expit(-a))))
     .mean(-1).mean(), [A], True),
    ("avg_pool1d", lambda x: ops.avg_pool1d(x, 3, 2), lambda x: _pool1d(x, 3, 2, np.mean),
     [R.normal(size=(2, 3, 8))], True),
    ("lp_pool1d", lambda x: ops.lp_pool1d(x, 2, 3, 2),
     lambda x: np.sqrt(_pool1d(x * x, 3, 2, np.sum)), [R.normal(size=(2, 3, 8))], True),
    ("lp_pool2d", lambda x: ops.lp_pool2d(x, 3, 2),
     lambda x: np.cbrt((x ** 3).reshape(1, 2, 2, 2, 2, 2).sum((3, 5))),
     [R.uniform(0.1, 1, size=(1, 2, 4, 4))], True),
    ("lrn", lambda x: ops.lrn(x, 2, 1.0, 0.5, 0.75), lambda x: _lrn(x, 2, 1.0, 0.5, 0.75),
     [R.normal(size=(2, 5, 2, 2))], True),
    ("iou", ops.iou, lambda a, g: np.array([[
        max(0, min(ai[2], gi[2]) - max(ai[0], gi[0])) * max(0, min(ai[3], gi[3]) - max(ai[1], gi[1]))
        / ((ai[2] - ai[0]) * (ai[3] - ai[1]) + (gi[2] - gi[0]) * (gi[3] - gi[1])
           - max(0, min(ai[2], gi[2]) - max(ai[0], gi[0]))
           * max(0, min(ai[3], gi[3]) - max(ai[1], gi[1]))) for ai in a] for gi in g]),
     [np.array([[0.1, 0.2, 2.3, 2.1], [1.2, 1.1, 3.3, 4.4]]),
      np.array([[1.4, 0.3, 2.2, 1.9], [0.05, 0.15, 5.1, 5.2], [1.5, 1.6, 2.5, 2.6]])], True),
    ("pdist", ops.pdist, lambda x: np.array([np.linalg.norm(x[i] - x[j]) for i in range(4)
                                             for j in range(i + 1, 4)]), [A], True),
    ("slogdet_abs", lambda x: ops.slogdet(x)[1], lambda x: np.linalg.slogdet(x)[1], [SPD], True),
    ("logdet", ops.logdet, lambda x: np.log(np.linalg.det(x)), [SPD], True),
    ("matrix_solve", lambda m, r: ops.matrix_solve(m, r), np.linalg.solve,
     [SPD, R.normal(size=(2, 3, 2))], True),
    ("matrix_solve_adjoint", lambda m, r: ops.matrix_solve(m, r, adjoint=True),
     lambda m, r: np.linalg.solve(np.swapaxes(m, -1, -2), r), [SPD + np.triu(np.ones(3)),
                                                               R.normal(size=(2, 3, 2))], True),
    ("cholesky", ops.cholesky, np.linalg.cholesky, [SPD], True),
    ("cholesky_upper", lambda x: ops.cholesky(x, upper=True),
     lambda x: np.swapaxes(np.linalg.cholesky(x), -1, -2), [SPD], True),
    ("cholesky_inverse", lambda x: ops.cholesky_inverse(x),
     lambda x: np.linalg.inv(x @ np.swapaxes(x, -1, -2)), [np.linalg.cholesky(SPD)], True),
    ("matrix_band_part", lambda x: ops.matrix_band_part(x, 1, 0),
     lambda x: np.tril(np.triu(x, -1)), [R.normal(size=(4, 5))], True),
    ("block_diag", lambda a, b: ops.block_diag(a, b[:2, :2]),
     lambda a, b: np.block([[a, np.zeros((4, 2))], [np.zeros((2, 3)), b[:2, :2]]]), [A, B], True),
    ("cartesian_prod", lambda a, b: ops.cartesian_prod(a[:, 0], b[:2, 0]),
     lambda a, b: np.array([[x, y] for x in a[:, 0] for y in b[:2, 0]]), [A, B], True),
    ("tensor_dot", lambda a, b: ops.tensor_dot(a, b, ((0,), (0,))),
     lambda a, b: np.tensordot(a, b, ((0,), (0,))), [A, B], True),
    ("norm_default", ops.norm, lambda x: np.linalg.norm(x), [A], True),
    ("norm_vector", lambda x: ops.norm(x, 3, 1, True),
     lambda x: (np.abs(x) ** 3).sum(1, keepdims=True) ** (1 / 3), [A], True),
    ("norm_inf", lambda x: ops.norm(x, math.inf, 0), lambda x: np.abs(x).max(0), [A], False),
    ("norm_matrix_1", lambda x: ops.norm(x, 1, (0, 1)), lambda x: np.linalg.norm(x, 1), [A],
     False),
    ("norm_matrix_inf", lambda x: ops.norm(x, -math.inf, (0, 1)),
     lambda x: np.linalg.norm(x, -np.inf), [A], False),
    ("norm_fro", lambda x: ops.norm(x, "fro", (0, 1)), lambda x: np.linalg.norm(x, "fro"), [A],
     True),
    ("renorm", lambda x: ops.renorm(x, 2, 0, 1.0),
     lambda x: x * np.where(np.linalg.norm(x, axis=1, keepdims=True) > 1.0,
                            1.0 / (np.linalg.norm(x, axis=1, keepdims=True) + 1e-7), 1.0),
     [A], True),
    ("reverse_sequence", lambda x: ops.reverse_sequence(x, LENGTHS, 1),
     lambda x: np.stack([np.concatenate([x[b, :n][::-1], x[b, n:]])
                         for b, n in enumerate([2, 3, 1, 0])]), [A], True),
    ("reverse_sequence_batch1", lambda x: ops.reverse_sequence(x, LENGTHS_1, 0, 1),
     lambda x: np.stack([np.concatenate([x[:n, b][::-1], x[n:, b]])
                         for b, n in enumerate([2, 4, 1])], 1), [A], True),
    ("trapz", lambda y: ops.trapz(y, dx=0.5, dim=0), lambda y: _trapezoid(y, dx=0.5, axis=0), [A],
     True),
    ("angle", ops.angle, np.angle, [A], False),
    ("real", ops.real, np.real, [A], True),
    ("conj", ops.conj, np.conj, [A], True),
    ("soft_shrink", lambda x: ops.soft_shrink(x, 0.3),
     lambda x: np.sign(x) * np.maximum(np.abs(x) - 0.3, 0), [A], False),
    ("inplace_add", lambda x, v: ops.inplace_add(x, v[:2], (3, 1)),
     lambda x, v: x + np.stack([np.zeros(3), v[1], np.zeros(3), v[0]]), [A, B], True),
    ("inplace_sub", lambda x, v: ops.inplace_sub(x, v[:1], 0),
     lambda x, v: x - np.stack([v[0], np.zeros(3), np.zeros(3), np.zeros(3)]), [A, B], True),
    ("inplace_update", lambda x, v: ops.inplace_update(x, v[:1], (2,)),
     lambda x, v: np.concatenate([x[:2], v[:1], x[3:]]), [A, B], True),
    ("cov", lambda x: ops.cov(x), np.cov, [A.T], True),
    ("cov_correction", lambda x: ops.cov(x, correction=0), lambda x: np.cov(x, bias=True), [A.T],
     True),
    ("intopk", lambda x: ops.intopk(x, TARGETS, 2),
     lambda x: (x > x[np.arange(4), [0, 2, 1, 0]][:, None]).sum(1) < 2, [A], False),
    ("padding", lambda x: ops.padding(x, 4), lambda x: np.pad(x, ((0, 0), (0, 3))), [A[:, :1]],
     True),
    ("accumulate_n", lambda a, b: ops.accumulate_n([a, b, a]), lambda a, b: 2 * a + b, [A, B],
     True),
]


test_against_numpy_jitted_and_gradient = against_numpy_test(CASES)


def test_channel_dropout_and_affine_grid():
    ms.set_seed(6)
    for fn, shape in ((ops.dropout1d, (40, 30, 5)), (ops.dropout2d, (40, 30, 2, 2)),
                      (ops.dropout3d, (40, 30, 2, 2, 1))):
        out = fn(T(np.ones(shape)), 0.25).asnumpy()
        channels = out.reshape(40, 30, -1)
        # whole channels are kept (scaled) or dropped
        assert np.all((channels == 0).all(-1) | (channels == 1 / 0.75).all(-1))
        assert abs((channels[..., 0] == 0).mean() - 0.25) < 0.04
        same(fn(T(np.ones(shape)), 0.25, training=False), np.ones(shape))
    with pytest.raises(ValueError, match="3-D"):
        ops.dropout1d(T(np.ones((2, 3, 4, 5))))
    theta = np.array([[[0.5, -0.2, 0.1], [0.3, 1.2, -0.4]]])
    for align in (False, True):
        h, w = 3, 4
        lin = (lambda n: np.linspace(-1, 1, n) if align else (np.arange(n) * 2 + 1) / n - 1)
        ys, xs = np.meshgrid(lin(h), lin(w), indexing="ij")
        base = np.stack([xs, ys, np.ones_like(xs)], -1)
        same(ops.affine_grid(T(theta), (1, 2, h, w), align), (base @ theta[0].T)[None],
             rtol=1e-12, atol=1e-12)


def test_creation_and_small_forms():
    same(ops.logspace(0, 2, 3), np.array([1.0, 10.0, 100.0], np.float32))
    same(ops.logspace(0.0, 3.0, 4, base=2, dtype=ms.float64), 2.0 ** np.arange(4.0))
    same(ops.range(T(np.array(1)), T(np.array(7)), T(np.array(2))), np.arange(1, 7, 2))
    same(ops.range(0.0, 1.0, 0.25), np.arange(0, 1, 0.25, dtype=np.float32))
    same(ops.scalar_to_tensor(3, ms.int32), np.array(3, np.int32))
    same(ops.tuple_to_array((1, 2, 3)), np.array([1, 2, 3]))
    same(ops.tuple_to_array((1, 2.5)), np.array([1, 2.5], np.float32))
    assert ops.scalar_cast(2.7, ms.int32) == 2 and isinstance(ops.scalar_cast(2, ms.float32),
                                                               float)
    same(ops.dyn_shape(T(A)), np.array([4, 3]))
    sign, logabs = ops.log_matrix_determinant(T(SPD * np.array([1, -1, 1])))
    want_sign, want_log = np.linalg.slogdet(SPD * np.array([1, -1, 1]))
    same((sign, logabs), (want_sign, want_log), rtol=1e-10)
    p = ms.Parameter(np.array([1.0, 2.0]), name="p")
    ops.assign_add(p, T(np.array([0.5, 0.5])))
    ops.assign_sub(p, T(np.array([1.0, 0.0])))
    same(p, np.array([0.5, 2.5]))
    table = ms.Parameter(np.zeros((3, 2)), name="table")
    assert ops.index_add(table, T(np.array([2, 0, 2])), T(np.ones((3, 2))), 0) is table
    same(table, np.array([[1.0, 1.0], [0.0, 0.0], [2.0, 2.0]]))
    clipped = ops.clip_by_global_norm((T(np.array([3.0])), T(np.array([4.0]))), 1.0)
    same(clipped, (np.array([0.6]), np.array([0.8])))
    with pytest.raises(ValueError, match="singular values"):
        ops.norm(T(A), 2, (0, 1))
    with pytest.raises(ValueError, match="step"):
        ops.range(0, 3, 0)
