"""MindSpore 2.x's documented examples of its most-used ops, run with `import pijit as ms`:
each result must match the documented values, dtype and shape. The functions whose argument
forms are composed in Python are also checked jitted (bytecode capture) against eager."""
import numpy as np
import pytest

import pijit as ms
from pijit import Tensor, ops

NAMESPACE = {"ms": ms, "ops": ops, "Tensor": Tensor, "np": np}

X_CAT = "Tensor(np.array([[0, 1], [2, 1]]).astype(np.float32))"
CLIP_X = "Tensor(np.array([[1., 25., 5., 7.], [4., 11., 6., 21.]]), ms.float32)"
SORT_X = "Tensor(np.array([[8, 2, 1], [5, 9, 3], [4, 6, 7]]), ms.float16)"
ARGMAX_X = "Tensor(np.array([[1, 20, 5], [67, 8, 9], [130, 24, 15]]).astype(np.float32))"
POOL_X = ("Tensor(np.array([[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]] * 3), "
          "ms.float32)")
PAD_X = "Tensor(np.arange(1 * 2 * 2 * 2).reshape((1, 2, 2, 2)), dtype=ms.float64)"
STD_X = "Tensor([[1, 2, 3, 4], [-1, 1, 4, -10]], ms.float32)"

# (name, code, expected): expected is (values, dtype, shape) or a tuple of them for several
# outputs; values None checks dtype and shape only.
EXAMPLES = [
    ("one_hot tensor values",
     "ops.one_hot(Tensor(np.array([0, 1, 2]), ms.int32), 3, Tensor(1.0, ms.float32), "
     "Tensor(0.0, ms.float32))",
     ([[1, 0, 0], [0, 1, 0], [0, 0, 1]], ms.float32, (3, 3))),
    ("OneHot tensor values",
     "ops.OneHot()(Tensor(np.array([0, 1, 2]), ms.int32), 3, Tensor(1.0, ms.float32), "
     "Tensor(0.0, ms.float32))",
     ([[1, 0, 0], [0, 1, 0], [0, 0, 1]], ms.float32, (3, 3))),
    ("flatten keeps axis 0",
     "ops.flatten(Tensor(np.ones(shape=[1, 2, 3, 4]), ms.float32))",
     (None, ms.float32, (1, 24))),
    ("flatten order F",
     "ops.flatten(Tensor(np.arange(6).reshape(2, 3), ms.float32), order='F', start_dim=0)",
     ([0, 3, 1, 4, 2, 5], ms.float32, (6,))),
    ("bmm batch axes",
     "ops.bmm(Tensor(np.ones(shape=[2, 4, 1, 3]), ms.float32), "
     "Tensor(np.ones(shape=[2, 4, 3, 4]), ms.float32))",
     (np.full((2, 4, 1, 4), 3.0), ms.float32, (2, 4, 1, 4))),
    ("gelu tanh",
     "ops.gelu(Tensor([1.0, 2.0, 3.0], ms.float32), approximate='tanh')",
     ([0.8411920, 1.9545977, 2.9963627], ms.float32, (3,))),
    ("full tensor value",
     "ops.full((2, 2), Tensor(1.5, ms.float32))",
     ([[1.5, 1.5], [1.5, 1.5]], ms.float32, (2, 2))),
    ("arange tensors",
     "ops.arange(Tensor(12.0, dtype=ms.float64), 2, Tensor(-1.0, dtype=ms.float32))",
     ([12, 11, 10, 9, 8, 7, 6, 5, 4, 3], ms.float32, (10,))),
    ("linspace tensors",
     "ops.linspace(Tensor(1, ms.float32), Tensor(10, ms.float32), 5)",
     ([1.0, 3.25, 5.5, 7.75, 10.0], ms.float32, (5,))),
    ("pad constant",
     f"ops.pad({PAD_X}, [1, 0, 0, 1], mode='constant', value=6.0)",
     ([[[[6, 0, 1], [6, 2, 3], [6, 6, 6]], [[6, 4, 5], [6, 6, 7], [6, 6, 6]]]], ms.float64,
      (1, 2, 3, 3))),
    ("pad reflect",
     f"ops.pad({PAD_X}, (1, 0, 0, 1), mode='reflect')",
     ([[[[1, 0, 1], [3, 2, 3], [1, 0, 1]], [[5, 4, 5], [7, 6, 7], [5, 4, 5]]]], ms.float64,
      (1, 2, 3, 3))),
    ("clip_by_value list",
     f"ops.clip_by_value([{CLIP_X}, {CLIP_X}], Tensor(5, ms.float32), Tensor(20, ms.float32))",
     (([[5, 20, 5, 7], [5, 11, 6, 20]], ms.float32, (2, 4)),
      ([[5, 20, 5, 7], [5, 11, 6, 20]], ms.float32, (2, 4)))),
    ("adaptive_avg_pool2d 3-D",
     f"ops.adaptive_avg_pool2d({POOL_X}, (None, 2))",
     ([[[1.5, 2.5], [4.5, 5.5], [7.5, 8.5]]] * 3, ms.float32, (3, 3, 2))),
    ("sort",
     f"ops.sort({SORT_X})",
     (([[1, 2, 8], [3, 5, 9], [4, 6, 7]], ms.float16, (3, 3)),
      ([[2, 1, 0], [2, 0, 1], [0, 1, 2]], ms.int32, (3, 3)))),
    ("sort descending",
     f"ops.sort({SORT_X}, axis=-1, descending=True)",
     (([[8, 2, 1], [9, 5, 3], [7, 6, 4]], ms.float16, (3, 3)),
      ([[0, 1, 2], [1, 0, 2], [2, 1, 0]], ms.int32, (3, 3)))),
    ("scatter",
     "ops.scatter(Tensor(np.array([[1, 2, 3, 4, 5]]), dtype=ms.float32), axis=1, "
     "index=Tensor(np.array([[2, 4]]), dtype=ms.int64), "
     "src=Tensor(np.array([[8, 8]]), dtype=ms.float32))",
     ([[1, 2, 8, 4, 8]], ms.float32, (1, 5))),
    ("scatter 2-D",
     "ops.scatter(Tensor(np.zeros((5, 5)), dtype=ms.float32), axis=0, "
     "index=Tensor(np.array([[0, 0, 0], [2, 2, 2], [4, 4, 4]]), dtype=ms.int64), "
     "src=Tensor(np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]]), dtype=ms.float32))",
     ([[1, 2, 3, 0, 0], [0, 0, 0, 0, 0], [4, 5, 6, 0, 0], [0, 0, 0, 0, 0], [7, 8, 9, 0, 0]],
      ms.float32, (5, 5))),
    ("std_mean",
     f"ops.std_mean({STD_X}, axis=1, ddof=1, keepdims=True)",
     (([[1.2909944], [6.0277138]], ms.float32, (2, 1)),
      ([[2.5], [-1.5]], ms.float32, (2, 1)))),
    ("div rounding_mode",
     "ops.div(Tensor(np.array([-4.0, 5.0, 6.0]), ms.float32), "
     "Tensor(np.array([3.0, 2.0, 3.0]), ms.float32), rounding_mode='floor')",
     ([-2, 2, 2], ms.float32, (3,))),
    ("Argmax output_type default",
     f"ops.Argmax(output_type=ms.int32)({ARGMAX_X})",
     ([1, 0, 0], ms.int32, (3,))),
    ("Argmax int32 by default",
     f"ops.Argmax()({ARGMAX_X})",
     ([1, 0, 0], ms.int32, (3,))),
    ("max values and index",
     "ops.max(Tensor(np.array([0.0, 0.4, 0.6, 0.7, 0.1]), ms.float32))",
     ((0.7, ms.float32, ()), (0, ms.int64, ()))),
    ("max along axis keepdims",
     "ops.max(Tensor([[9, 3, 4, 5], [5, 2, 7, 4], [8, 1, 3, 6]], ms.int64), axis=1, "
     "keepdims=True)",
     (([[9], [7], [8]], ms.int64, (3, 1)), ([[0], [2], [0]], ms.int64, (3, 1)))),
    ("max where initial",
     "ops.max(Tensor([[9, 3, 4, 5], [5, 2, 7, 4], [8, 1, 3, 6]], ms.int64), axis=1, "
     "initial=0, where=Tensor([[0, 0, 1, 0], [0, 0, 1, 1], [1, 1, 1, 0]], ms.bool_))",
     (([4, 7, 8], ms.int64, (3,)), ([2, 2, 0], ms.int64, (3,)))),
    ("min along axis",
     "ops.min(Tensor(np.array([[0.0, 0.4], [0.6, -0.7]]), ms.float32), axis=0)",
     (([0.0, -0.7], ms.float32, (2,)), ([0, 1], ms.int64, (2,)))),
    ("var_mean",
     f"ops.var_mean({STD_X}, axis=1, ddof=1, keepdims=True)",
     (([[1.6666666], [36.333332]], ms.float32, (2, 1)),
      ([[2.5], [-1.5]], ms.float32, (2, 1)))),
    ("gather_d keywords",
     "ops.gather_d(x=Tensor(np.array([[1, 2], [3, 4]]), ms.int32), dim=1, "
     "index=Tensor(np.array([[0, 0], [1, 0]]), ms.int32))",
     ([[1, 1], [4, 3]], ms.int32, (2, 2))),
    ("Argmin",
     "ops.Argmin()(Tensor(np.array([2.0, 3.1, 1.2]), ms.float32))",
     (2, ms.int32, ())),
]


def _check(name, got, expected):
    values, dtype, shape = expected
    assert isinstance(got, Tensor), f"{name}: expected a Tensor, got {type(got).__name__}"
    assert got.dtype == dtype, f"{name}: dtype {got.dtype} != {dtype}"
    assert tuple(got.shape) == tuple(shape), f"{name}: shape {got.shape} != {shape}"
    if values is not None:
        np.testing.assert_allclose(got.asnumpy().astype(np.float64),
                                   np.asarray(values, dtype=np.float64), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,code,expected", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_documented_example(name, code, expected):
    got = eval(code, NAMESPACE)  # noqa: S307 - the examples above, written in this file
    if isinstance(expected[0], tuple):
        assert isinstance(got, (tuple, list)) and len(got) == len(expected), name
        for g, e in zip(got, expected):
            _check(name, g, e)
    else:
        _check(name, got, expected)


def _as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _t(a, dtype=ms.float32):
    return Tensor(np.asarray(a), dtype)


# Functions of tensors whose new argument forms are composed in Python: jitted == eager.
JITTED = [
    ("one_hot", lambda i, on, off: ops.one_hot(i, 3, on, off),
     (_t([0, 2, 1], ms.int32), _t(2.0), _t(-1.0))),
    ("OneHot", lambda i, on, off: ops.OneHot(axis=0)(i, 3, on, off),
     (_t([0, 2, 1], ms.int32), _t(2.0), _t(-1.0))),
    ("flatten", lambda x: ops.flatten(x, order="F"), (_t(np.arange(24).reshape(2, 3, 4)),)),
    ("bmm", ops.bmm, (_t(np.random.rand(2, 3, 2, 4)), _t(np.random.rand(2, 3, 4, 5)))),
    ("gelu", lambda x: ops.gelu(x, approximate="tanh"), (_t(np.linspace(-3, 3, 7)),)),
    ("full", lambda v: ops.full((2, 3), v), (_t(2.5),)),
    ("pad", lambda x: ops.pad(x, (1, 2, 2, 1), mode="replicate"),
     (_t(np.arange(12).reshape(1, 3, 4)),)),
    ("clip_by_value", lambda x, y: ops.clip_by_value((x, y), 0.5, 1.5),
     (_t(np.linspace(0, 2, 5)), _t(np.linspace(2, 0, 5)))),
    ("adaptive_avg_pool2d", lambda x: ops.adaptive_avg_pool2d(x, (2, 2)),
     (_t(np.arange(27).reshape(3, 3, 3)),)),
    ("sort", lambda x: ops.sort(x, descending=True), (_t([[3, 1, 2], [0, 5, 4]]),)),
    ("scatter", lambda x, i, s: ops.scatter(x, 1, i, s),
     (_t(np.zeros((2, 4))), _t([[3, 0], [1, 2]], ms.int64), _t([[1, 2], [3, 4]]))),
    ("std_mean", lambda x: ops.std_mean(x, axis=0, ddof=1), (_t(np.arange(8).reshape(4, 2)),)),
    ("div", lambda x, y: ops.div(x, y, rounding_mode="trunc"), (_t([-7, 7]), _t([2, 2]))),
    ("Argmax", lambda x: ops.Argmax(axis=0)(x), (_t([[1, 5], [3, 2]]),)),
    ("var_mean", lambda x: ops.var_mean(x, axis=1), (_t(np.arange(8).reshape(2, 4)),)),
    ("max", lambda x: ops.max(x, 1), (_t([[1, 5], [3, 2]]),)),
    ("min", lambda x: ops.min(x, 0, keepdims=True), (_t([[1, 5], [3, 2]]),)),
    ("arange", lambda s: ops.arange(s, 5), (_t(1.0),)),
    ("linspace", lambda a, b: ops.linspace(a, b, 4), (_t(0.0), _t(3.0))),
]


# Scalar Tensors read as Python numbers stop the graph there (the result is still eager's).
READS_VALUES = ("arange", "linspace")


@pytest.mark.parametrize("name,fn,args", JITTED, ids=[j[0] for j in JITTED])
def test_jitted_matches_eager(name, fn, args):
    eager = _as_list(fn(*args))
    compiled = ms.jit(fn, capture_mode="bytecode")
    jitted = _as_list(compiled(*args))
    if name not in READS_VALUES:
        assert ms.get_code_extra(compiled)["reasons"] == [], name
    assert len(eager) == len(jitted), name
    for e, j in zip(eager, jitted):
        assert e.dtype == j.dtype and tuple(e.shape) == tuple(j.shape), name
        np.testing.assert_allclose(j.asnumpy(), e.asnumpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("code,error", [
    ("ops.one_hot(Tensor([0, 1], ms.int32), 2, Tensor([1.0, 2.0], ms.float32), "
     "Tensor(0.0, ms.float32))", ValueError),
    ("ops.flatten(Tensor(np.ones((2, 2)), ms.float32), order='K')", ValueError),
    ("ops.bmm(Tensor(np.ones((2, 2, 3)), ms.float32), Tensor(np.ones((3, 3, 2)), ms.float32))",
     ValueError),
    ("ops.gelu(Tensor([1.0], ms.float32), approximate='erf')", ValueError),
    ("ops.full((2,), Tensor([1.0, 2.0], ms.float32))", ValueError),
    ("ops.arange(Tensor([1, 2], ms.int32))", ValueError),
    ("ops.pad(Tensor(np.ones((2, 2)), ms.float32), (1, 1), mode='edge')", ValueError),
    ("ops.Argmax(output_type=ms.float32)", TypeError),
    ("ops.max(Tensor([1.0, 2.0], ms.float32), axis=(0,))", TypeError),
    ("ops.max(Tensor([1.0, 2.0], ms.float32), where=Tensor([True, False]))", ValueError),
])
def test_bad_arguments_raise(code, error):
    with pytest.raises(error):
        eval(code, NAMESPACE)  # noqa: S307


def test_size_takes_its_keyword():
    assert ops.size(input_x=Tensor(np.ones((2, 3)), ms.float32)) == 6

