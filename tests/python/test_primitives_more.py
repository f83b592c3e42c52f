"""The primitives of pijit/_primitives_more.py and the scatter family of pijit/_ops_scatter.py
against NumPy references written here, jitted against eager as one graph where the op is
capturable, and gradients against central differences."""
import numpy as np
import pytest
from scipy import special
from scipy.signal import windows

import pijit as ms
from pijit import ops
from mint_testutil import T, against_numpy_test, same

R = np.random.default_rng(101)
A = R.normal(size=(4, 3))
SPD = (lambda m: m @ np.swapaxes(m, -1, -2) + 3 * np.eye(3))(R.normal(size=(2, 3, 3)))
LABELS = np.array([2, 0, 1, 2])
LABELS_T, WEIGHT_T = T(LABELS), T(np.array([0.5, 1.0, 2.0]))
INDEX_T, COLUMNS_T = T(np.array([3, 0])), T(np.array([2, 0]))


def _log_softmax(x):
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


# (id, the primitive's call, its NumPy reference, inputs, differentiable in the first input)
CASES = [
    ("LRN", ops.LRN(1, 2.0, 0.3, 0.5), lambda x: x / (2.0 + 0.3 * np.stack(
        [(x[:, max(0, c - 1):c + 2] ** 2).sum(1) for c in range(3)], 1)) ** 0.5,
     [R.normal(size=(2, 3, 2, 2))], True),
    ("IOU_iof", ops.IOU("iof"), lambda a, g: np.array([[1.0, 0.25]]),
     [np.array([[0, 0, 2, 2], [1, 1, 3, 3.0]]), np.array([[0.5, 0.5, 1.5, 1.5]])], False),
    ("Cholesky", ops.Cholesky(), np.linalg.cholesky, [SPD], True),
    ("CholeskyInverse_upper", ops.CholeskyInverse(upper=True),
     lambda u: np.linalg.inv(np.swapaxes(u, -1, -2) @ u),
     [np.swapaxes(np.linalg.cholesky(SPD), -1, -2)], True),
    ("MatrixSolve", ops.MatrixSolve(), np.linalg.solve, [SPD, R.normal(size=(2, 3, 1))], True),
    ("MatrixBandPart", lambda x: ops.MatrixBandPart()(x, 0, 1), lambda x: np.triu(np.tril(x, 1)),
     [A], True),
    ("LogMatrixDeterminant", lambda x: ops.LogMatrixDeterminant()(x)[1],
     lambda x: np.linalg.slogdet(x)[1], [SPD], True),
    ("ReverseSequence", lambda x: ops.ReverseSequence(seq_dim=1)(x, T(np.array([3, 1, 2, 0]))),
     lambda x: np.stack([np.concatenate([r[:n][::-1], r[n:]]) for r, n in zip(x, [3, 1, 2, 0])]),
     [A], True),
    ("LpNorm", ops.LpNorm(axis=1, p=3), lambda x: (np.abs(x) ** 3).sum(1) ** (1 / 3), [A], True),
    ("LpNorm_two_axes", ops.LpNorm(axis=(0, 1), p=1, keep_dims=True),
     lambda x: np.abs(x).sum(keepdims=True), [A], False),
    ("EuclideanNorm", lambda x: ops.EuclideanNorm()(x, (0,)), lambda x: np.sqrt((x * x).sum(0)),
     [A], True),
    ("ReduceStd", lambda x: ops.ReduceStd(axis=1)(x),
     lambda x: (x.std(1, ddof=1), x.mean(1)), [A], False),
    ("Diag", ops.Diag(), lambda x: np.einsum("ij,ik,jl->ijkl", x, np.eye(2), np.eye(3)),
     [A[:2]], True),
    ("DiagPart", ops.DiagPart(), lambda x: np.einsum("ijij->ij", x), [R.normal(size=(2, 3, 2, 3))],
     True),
    ("NLLLoss", lambda x: ops.NLLLoss()(x, LABELS_T, WEIGHT_T),
     lambda x: (-(x[np.arange(4), LABELS] * np.array([0.5, 1.0, 2.0])[LABELS]).sum()
                / np.array([0.5, 1.0, 2.0])[LABELS].sum(), np.array([0.5, 1.0, 2.0])[LABELS].sum()),
     [_log_softmax(A)], False),
    ("NLLLoss_sum", lambda x: ops.NLLLoss("sum")(x, LABELS_T, WEIGHT_T)[0],
     lambda x: -(x[np.arange(4), LABELS] * np.array([0.5, 1.0, 2.0])[LABELS]).sum(),
     [_log_softmax(A)], True),
    ("SparseSoftmaxCrossEntropyWithLogits",
     lambda x: ops.SparseSoftmaxCrossEntropyWithLogits()(x, LABELS_T),
     lambda x: -_log_softmax(x)[np.arange(4), LABELS].mean(), [A], True),
    ("SparseSoftmaxCrossEntropyWithLogits_grad",
     lambda x: ops.SparseSoftmaxCrossEntropyWithLogits(is_grad=True)(x, LABELS_T),
     lambda x: (np.exp(_log_softmax(x)) - np.eye(3)[LABELS]) / 4, [A], False),
    ("MultiMarginLoss", lambda x: ops.MultiMarginLoss(p=2, margin=0.5)(x, LABELS_T),
     lambda x: np.mean([sum(max(0, 0.5 - x[i, y] + x[i, j]) ** 2 for j in range(3) if j != y) / 3
                        for i, y in enumerate(LABELS)]), [A], True),
    ("GridSampler2D", lambda x, g: ops.GridSampler2D("nearest", "border", True)(x, g),
     lambda x, g: np.stack([x[0][:, int(round((gy + 1) / 2 * 3)), int(round((gx + 1) / 2 * 2))]
                            for gx, gy in g[0, 0]], -1)[None, :, None],
     [R.normal(size=(1, 2, 4, 3)), np.array([[[[-1.0, -1.0], [0.2, 0.9], [1.0, -0.3]]]])],
     False),
    ("Bucketize", ops.Bucketize(boundaries=(-1.0, 0.0, 1.0)),
     lambda x: np.digitize(x, [-1.0, 0.0, 1.0]).astype(np.int32), [A], False),
    ("LowerBound", ops.LowerBound(), lambda s, v: np.stack(
        [np.searchsorted(r, q, "left") for r, q in zip(s, v)]).astype(np.int32),
     [np.sort(A, 1), A[:, :2] + 0.1], False),
    ("UpperBound", ops.UpperBound(out_type=ms.int64), lambda s, v: np.stack(
        [np.searchsorted(r, q, "right") for r, q in zip(s, v)]), [np.sort(A, 1), np.sort(A, 1)],
     False),
    ("HistogramFixedWidth", lambda x: ops.HistogramFixedWidth(4)(x, (-1.0, 1.0)),
     lambda x: np.bincount(np.clip(np.floor((x.ravel() + 1) / 2 * 4), 0, 3).astype(int),
                           minlength=4).astype(np.int32), [A], False),
    ("SplitV", ops.SplitV((1, -1), 1, 2), lambda x: (x[:, :1], x[:, 1:]), [A], False),
    ("ParallelConcat", lambda x: ops.ParallelConcat()((x[:1], x[1:2])), lambda x: x[:2], [A], True),
    ("MirrorPad", lambda x: ops.MirrorPad("SYMMETRIC")(x, ((1, 1), (0, 2))),
     lambda x: np.pad(x, ((1, 1), (0, 2)), "symmetric"), [A], True),
    ("Padding", ops.Padding(4), lambda x: np.pad(x, ((0, 0), (0, 3))), [A[:, :1]], True),
    ("EmbeddingLookup", lambda p: ops.EmbeddingLookup()(p, T(np.array([[3, 5], [4, 9]])), 3),
     lambda p: np.stack([[p[0], p[2]], [p[1], np.zeros(3)]]), [A], True),
    ("TensorScatterAdd", lambda x: ops.TensorScatterAdd()(x, T(np.array([[1], [1]])),
                                                          T(np.ones((2, 3)))),
     lambda x: x + np.array([[0.0], [2.0], [0.0], [0.0]]), [A], True),
    ("GatherNd", lambda x: ops.GatherNd()(x, T(np.array([[0, 2], [3, 1]]))),
     lambda x: np.array([x[0, 2], x[3, 1]]), [A], True),
    ("ScatterNd", lambda u: ops.ScatterNd()(T(np.array([[1], [3]])), u, (5, 3)),
     lambda u: np.concatenate([np.zeros((1, 3)), u[:1], np.zeros((1, 3)), u[1:2], np.zeros((1, 3))]),
     [A[:2]], True),
    ("StopGradient", lambda x: ops.StopGradient()(x) * x, lambda x: x * x, [A], False),
    ("Real", ops.Real(), np.real, [A], True),
    ("Conj", ops.Conj(), np.conj, [A], True),
    ("LeftShift", ops.LeftShift(), np.left_shift, [np.array([3, -2], np.int32),
                                                   np.array([2, 1], np.int32)], False),
    ("RightShift", ops.RightShift(), np.right_shift, [np.array([13, -9], np.int32),
                                                      np.array([2, 1], np.int32)], False),
    ("IndexAdd", lambda x, y: ops.IndexAdd(axis=0)(x, INDEX_T, y[:2]),
     lambda x, y: x + np.stack([y[1], np.zeros(3), np.zeros(3), y[0]]), [A, A * 2], True),
    ("IndexFill", lambda x: ops.IndexFill()(x, 1, COLUMNS_T, -3.0),
     lambda x: np.where(np.isin(np.arange(3), [2, 0]), -3.0, x), [A], True),
    ("Renorm", ops.Renorm(p=2, dim=0, maxnorm=0.5),
     lambda x: x * np.minimum(1, 0.5 / (np.linalg.norm(x, axis=1, keepdims=True) + 1e-7)),
     [A], True),
    ("Cross", ops.Cross(), lambda a, b: np.cross(a, b, axis=1), [A, A[::-1]], True),
    ("Ger", ops.Ger(), np.outer, [A[:, 0], A[0]], True),
    ("BesselI0e", ops.BesselI0e(), lambda x: np.exp(-np.abs(x)) * np.i0(x), [A], True),
    ("ConjugateTranspose", lambda x: ops.ConjugateTranspose()(x, (1, 0)), np.transpose, [A],
     True),
    ("EqualCount", ops.EqualCount(), lambda x, y: np.array([(x == y).sum()], np.int32),
     [np.array([1, 2, 3], np.int32), np.array([1, 0, 3], np.int32)], False),
    ("SpaceToBatchND", ops.SpaceToBatchND(2, ((0, 0), (0, 0))), lambda x: np.stack(
        [x[n, :, i::2, j::2] for i in range(2) for j in range(2) for n in range(1)]),
     [R.normal(size=(1, 2, 4, 4))], True),
    ("MatrixPower", ops.MatrixPower(3), lambda x: np.linalg.matrix_power(x, 3), [SPD], True),
    ("MatrixPower_negative", ops.MatrixPower(-1), np.linalg.inv, [SPD], True),
    ("CumulativeLogsumexp", lambda x: ops.CumulativeLogsumexp()(x, 1),
     lambda x: np.logaddexp.accumulate(x, 1), [A], True),
    ("CumulativeLogsumexp_reverse", lambda x: ops.CumulativeLogsumexp(reverse=True)(x, 0),
     lambda x: np.flip(np.logaddexp.accumulate(np.flip(x, 0), 0), 0), [A], True),
    ("FillDiagonal", ops.FillDiagonal(2.5), lambda x: np.where(np.eye(4, 3) > 0, 2.5, x), [A],
     True),
    ("InTopK", lambda x: ops.InTopK(2)(x, LABELS_T),
     lambda x: (x > x[np.arange(4), LABELS][:, None]).sum(1) < 2, [A], False),
    ("ResizeNearestNeighbor", ops.ResizeNearestNeighbor((4, 6)),
     lambda x: x[:, :, [0, 0, 1, 1]][:, :, :, [0, 0, 1, 1, 2, 2]], [R.normal(size=(1, 2, 2, 3))],
     True),
    ("Einsum", lambda x, y: ops.Einsum("ij,kj->ik")((x, y)), lambda x, y: x @ y.T, [A, A[:2]],
     True),
]


test_against_numpy_jitted_and_gradient = against_numpy_test(CASES)


def test_sampling_and_window_primitives():
    ms.set_seed(9)
    draws = ops.Multinomial()(T(np.array([[1.0, 3.0]])), 4000)
    assert draws.dtype == ms.int32 and abs(draws.asnumpy().mean() - 0.75) < 0.03
    cats = ops.RandomCategorical()(T(np.log(np.array([[0.2, 0.8]]))), 4000)
    assert cats.dtype == ms.int64 and abs(cats.asnumpy().mean() - 0.8) < 0.03
    perm = ops.Randperm(max_length=6, pad=-1)(T(np.array([4])))
    assert sorted(perm.asnumpy()[:4].tolist()) == [0, 1, 2, 3] and perm.asnumpy()[4:].tolist() \
        == [-1, -1]
    same(ops.HammingWindow(periodic=False)(T(np.array([7]))),
         windows.hamming(7).astype(np.float32))
    same(ops.BartlettWindow(dtype=ms.float64)(8), windows.bartlett(8, sym=False), atol=1e-12)
    same(ops.BlackmanWindow()(6), windows.blackman(6, sym=False).astype(np.float32), atol=1e-7)
    out, mask = ops.Dropout2D(keep_prob=0.75)(T(np.ones((50, 40, 2, 2), np.float32)))
    kept = mask.asnumpy()
    assert kept.dtype == np.bool_ and np.all(kept == kept[:, :, :1, :1])
    assert abs(kept.mean() - 0.75) < 0.04
    same(out, kept / np.float32(0.75))
    assert ops.InvertPermutation()((2, 0, 3, 1)) == (1, 3, 0, 2)
    same(ops.Range()(0, 10, 3), np.arange(0, 10, 3))
    same(ops.IdentityN()((T(A),))[0], A)
    draws = ops.TruncatedNormal(dtype=ms.float64)((20000,)).asnumpy()
    # N(0, 1) truncated to [-2, 2]: variance 1 - 2 * 2 * pdf(2) / (cdf(2) - cdf(-2))
    pdf2 = np.exp(-2.0) / np.sqrt(2 * np.pi)
    mass = 0.5 * (special.erf(2 / np.sqrt(2)) - special.erf(-2 / np.sqrt(2)))
    assert np.abs(draws).max() <= 2.0 and abs(draws.var() - (1 - 4 * pdf2 / mass)) < 0.03
    ints = ops.UniformInt()((4000,), T(np.array(2)), T(np.array(5))).asnumpy()
    assert ints.dtype == np.int32 and set(np.unique(ints)) == {2, 3, 4}
    laplace = ops.StandardLaplace()((20000,)).asnumpy()
    assert abs(np.abs(laplace).mean() - 1.0) < 0.05
    same(ops.LogSpace(steps=3, base=2)(T(np.array(0.0)), T(np.array(2.0))),
         np.array([1.0, 2.0, 4.0], np.float32))
    rows, cols = np.tril_indices(3, 0, 4)
    same(ops.TrilIndices(3, 4)(), np.stack([rows, cols]).astype(np.int32))
    rows, cols = np.triu_indices(3, 1, 4)
    same(ops.TriuIndices(3, 4, 1, ms.int64)(), np.stack([rows, cols]))
    assert ops.ScalarCast()(2.9, ms.int32) == 2
    same(ops.ScalarToTensor()(1.5), np.array(1.5, np.float32))
    same(ops.TupleToArray()((1, 2)), np.array([1, 2]))
    x = R.normal(size=(1, 1, 2, 4))
    values, indices = ms.mint.nn.functional.max_pool2d(T(x), 2, return_indices=True)
    same(ops.MaxUnpool2D(ksize=2, strides=2)(values, indices),
         ops.max_unpool2d(values, indices, 2).asnumpy())
    batch = ops.SpaceToBatchND(2, ((0, 0), (0, 0)))(T(x))
    same(ops.BatchToSpaceND(2, ((0, 0), (0, 0)))(batch), x)


def test_affine_grid_primitive_feeds_grid_sampler():
    x = R.normal(size=(1, 2, 3, 4))
    identity = T(np.array([[[1.0, 0, 0], [0, 1.0, 0]]]))
    grid = ops.AffineGrid(align_corners=True)(identity, (1, 2, 3, 4))
    same(ops.GridSampler2D(align_corners=True)(T(x), grid), x, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name, combine", [
    ("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.divide),
    ("max", np.maximum), ("min", np.minimum), ("update", lambda a, b: b)])
def test_parameter_scatters_write_in_place(name, combine):
    start = R.normal(size=(4, 3))
    rows = np.array([3, 1]) if name == "update" else np.array([3, 1, 3])
    updates = R.uniform(0.5, 2.0, size=(len(rows), 3))
    want = start.copy()
    for r, u in zip(rows, updates):
        want[r] = combine(want[r], u)
    p = ms.Parameter(start.copy(), name="p")
    assert getattr(ops, f"scatter_{name}")(p, T(rows), T(updates)) is p
    same(p, want, rtol=1e-12)
    prim = getattr(ops, f"Scatter{name.capitalize()}")()
    q = ms.Parameter(start.copy(), name="q")
    prim(q, T(rows), T(updates))
    same(q, want, rtol=1e-12)
    nd = ms.Parameter(start.copy(), name="nd")
    getattr(ops, f"scatter_nd_{name}")(nd, T(rows[:, None]), T(updates))
    same(nd, want, rtol=1e-12)
    nd_prim = getattr(ops, f"ScatterNd{name.capitalize()}")()
    nd2 = ms.Parameter(start.copy(), name="nd2")

    @ms.jit
    def step(i, u):
        nd_prim(nd2, i, u)
        return nd2 * 1.0

    same(step(T(rows[:, None]), T(updates)), want, rtol=1e-12)
    same(nd2, want, rtol=1e-12)
    assert ms.get_code_extra(step)["total_break_count"] == 0


def test_scatter_needs_a_parameter():
    with pytest.raises(TypeError, match="Parameter"):
        ops.scatter_add(T(A), T(np.array([0])), T(A[:1]))
    with pytest.raises(TypeError, match="Einsum"):
        ops.Einsum(3)
    with pytest.raises(ValueError, match="SplitV"):
        ops.SplitV((1, 1), 1, 2)(T(A))
