"""Shared machinery of the pijit.jit tests (test_jit_*.py): a fresh PIJit-compiled function with
reset counters, outcomes (result or exception), source-line markers, the fixtures (a seeded
rng, NumPy warnings off, the context mode restored), the functions under test (every op as an
operator, a function, a method and a primitive; combinations) and `run_and_compare`, which
checks eager against jitted results and the cache counters.

Test modules import the fixtures they use from here, and the autouse `_quiet_numpy` (NumPy's
floating-point warnings off) and `fresh` (pijit's caches cleared) to have them in effect for
their tests."""
import inspect

import numpy as np
import pytest

import pijit as ms
from pijit import ops
from pijit_testutil import assert_close_result, assert_same_result


def T(a, dtype=None):
    return ms.Tensor(np.asarray(a, dtype=dtype))


def pijit(fn, **kw):
    """A fresh PIJit-compiled `fn` (counters reset: parametrized tests share code objects)."""
    jf = ms.jit(fn, mode="PIJit", **kw)
    ms.reset(jf)
    return jf


def stats(fn):
    return ms.get_code_extra(fn)


def outcome(fn, *args, **kwargs):
    """('ok', result) or (exception type, message)."""
    try:
        return "ok", fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - comparing whatever is raised
        return type(e), str(e)


def marked_line(fn, marker="# BREAK"):
    """The line number of the line of `fn`'s source that carries `marker`."""
    lines, first = inspect.getsourcelines(fn)
    for i, text in enumerate(lines):
        if marker in text:
            return first + i
    raise AssertionError(f"no {marker} in {fn.__name__}")


def marked_source(fn, marker="# BREAK"):
    lines, _ = inspect.getsourcelines(fn)
    text = next(line for line in lines if marker in line)
    return text.split("#")[0].strip()


@pytest.fixture
def rng():
    return np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _quiet_numpy():
    with np.errstate(all="ignore"):
        yield


@pytest.fixture(autouse=True)
def fresh():
    """Every jitted function's caches and counters cleared before and after the test."""
    ms.reset()
    yield
    ms.reset()


@pytest.fixture
def pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


# ---- the functions under test ----------------------------------------------------------------------

ADD = ops.Add()
SUB = ops.Sub()
MUL = ops.Mul()
DIV = ops.Div()
MATMUL = ops.MatMul()
RSUM_KEEP = ops.ReduceSum(keep_dims=True)
RMEAN = ops.ReduceMean()
RESHAPE = ops.Reshape()
TRANSPOSE = ops.Transpose()
NEG, EXP, LOG, RELU = ops.Neg(), ops.Exp(), ops.Log(), ops.ReLU()


def f_add_op(a, b): return a + b
def f_sub_op(a, b): return a - b
def f_mul_op(a, b): return a * b
def f_div_op(a, b): return a / b
def f_add_fn(a, b): return ops.add(a, b)
def f_sub_fn(a, b): return ops.sub(a, b)
def f_mul_fn(a, b): return ops.mul(a, b)
def f_div_fn(a, b): return ops.div(a, b)
def f_add_method(a, b): return a.add(b)
def f_mul_method(a, b): return a.mul(b)
def f_add_prim(a, b): return ADD(a, b)
def f_sub_prim(a, b): return SUB(a, b)
def f_mul_prim(a, b): return MUL(a, b)
def f_div_prim(a, b): return DIV(a, b)
def f_add_kw(a, b): return ops.add(x=a, y=b)
def f_inplace(a, b):
    c = a
    c += b
    c *= b
    c -= a
    return c


BINARY_FUNCS = [f_add_op, f_sub_op, f_mul_op, f_div_op, f_add_fn, f_sub_fn, f_mul_fn, f_div_fn,
                f_add_method, f_mul_method, f_add_prim, f_sub_prim, f_mul_prim, f_div_prim,
                f_add_kw, f_inplace]


def f_neg_op(a): return -a
def f_neg_fn(a): return ops.neg(a)
def f_neg_prim(a): return NEG(a)
def f_exp_fn(a): return ops.exp(a)
def f_exp_method(a): return a.exp()
def f_exp_prim(a): return EXP(a)
def f_log_fn(a): return ops.log(a)
def f_log_prim(a): return LOG(a)
def f_relu_fn(a): return ops.relu(a)
def f_relu_method(a): return a.relu()
def f_relu_prim(a): return RELU(a)
def f_sum_all(a): return ops.sum(a)
def f_sum_axis(a): return ops.sum(a, -1)
def f_sum_tuple_keep(a): return ops.sum(a, (0, 1), keepdims=True)
def f_sum_method(a): return a.sum(axis=0)
def f_sum_prim(a): return RSUM_KEEP(a, 1)
def f_mean_all(a): return ops.mean(a)
def f_mean_axis_keep(a): return ops.mean(a, 0, True)
def f_mean_method(a): return a.mean(-1, keepdims=True)
def f_mean_prim(a): return RMEAN(a, (0, -1))
def f_reshape_fn(a): return ops.reshape(a, (-1,))
def f_reshape_method(a): return a.reshape(a.shape[1], -1)
def f_reshape_prim(a): return RESHAPE(a, (1, -1, 1))
def f_transpose_fn(a): return ops.transpose(a, (1, 0))
def f_transpose_method(a): return a.transpose()
def f_transpose_prim(a): return TRANSPOSE(a, (1, 0))
def f_scalars(a): return 2 * a + 1.5 - a / 4 * 3.0 + True
def f_python_arith(a): return a * (2 ** 3 - 1.5) + (7 // 2) - (5 % 3)
def f_chain(a): return ops.log(ops.exp(a) + 1.0) * -a - ops.neg(a)
def f_reflected(a): return 2 - a, 3.0 / (a * a + 1), True * a, 7 + a
def f_shape_attrs(a): return a * a.ndim + a.size - a.shape[0]


UNARY_FUNCS = [f_neg_op, f_neg_fn, f_neg_prim, f_exp_fn, f_exp_method, f_exp_prim, f_log_fn,
               f_log_prim, f_relu_fn, f_relu_method, f_relu_prim, f_sum_all, f_sum_axis,
               f_sum_tuple_keep, f_sum_method, f_sum_prim, f_mean_all, f_mean_axis_keep,
               f_mean_method, f_mean_prim, f_reshape_fn, f_reshape_method, f_reshape_prim,
               f_transpose_fn, f_transpose_method, f_transpose_prim, f_scalars, f_python_arith,
               f_chain, f_reflected, f_shape_attrs]


def f_matmul_op(a, b): return a @ b
def f_matmul_fn(a, b): return ops.matmul(a, b)
def f_matmul_method(a, b): return a.matmul(b)
def f_matmul_prim(a, b): return MATMUL(a, b)


MATMUL_FUNCS = [f_matmul_op, f_matmul_fn, f_matmul_method, f_matmul_prim]


def f_mlp(x, w1, b1, w2):
    h = ops.relu(ops.matmul(x, w1) + b1)
    return ops.mean(h @ w2, -1)


def f_many_outputs(a, b):
    s = a + b
    return s, ops.sum(s), [s * 2, a], 3, "text", None, 2.5


def f_tensor_cal(x, y, z):
    return ops.matmul(x, y) + z


def f_kwonly(a, *, b, scale=3.0):
    return a * scale - b


def lambda_free_combo(a, b):
    h = ops.exp(a * 0.1) - a / 3.0
    return ops.sum(ops.relu(h @ b) * 0.5, 0) + ops.mean(h)


# Functions whose graphs fuse exp with other elementwise ops.
FUSES_EXP = {f_chain, lambda_free_combo}


def run_and_compare(fn, *args, expect_graph=True):
    """Eager vs PIJit on the same arguments: same result or the same error, twice (the second
    call is a cache hit). Exactly equal, except within the fused-exp tolerance for functions
    whose graphs fuse exp with other ops. Returns the jitted function."""
    same = assert_close_result if fn in FUSES_EXP else assert_same_result
    jf = pijit(fn)
    before = [a.asnumpy().copy() for a in args if isinstance(a, ms.Tensor)]
    eager = outcome(fn, *args)
    for _ in range(2):
        jitted = outcome(jf, *args)
        if eager[0] == "ok":
            assert jitted[0] == "ok", f"jitted call raised {jitted}"
            same(jitted[1], eager[1])
        else:
            assert jitted == eager
    after = [a.asnumpy() for a in args if isinstance(a, ms.Tensor)]
    for b, a in zip(before, after):  # the jitted calls leave their inputs alone
        np.testing.assert_array_equal(a, b)
    s = stats(jf)
    assert s["compile_count"] == 1
    assert s["cache_hits"] == 1
    if expect_graph and eager[0] == "ok":
        assert s["reasons"] == [], s["reasons"]
        assert s["eager_count"] == 0
    return jf
