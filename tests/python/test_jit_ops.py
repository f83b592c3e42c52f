"""pijit.jit and ops: for every op (as an operator, a function, a Tensor method and a
primitive), every dtype pair, 0-d, empty and non-contiguous inputs, matmul shapes and
combinations, the jitted result equals the eager one (exactly, or within the fused-exp
tolerance), twice (the second call from the cache); broadcasting and reductions also under
hypothesis."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pijit import ops
from jit_testutil import _quiet_numpy, rng  # noqa: F401 (fixtures)
from jit_testutil import (BINARY_FUNCS, MATMUL_FUNCS, T, UNARY_FUNCS, f_add_op, f_chain, f_div_op,
                          f_exp_fn, f_log_fn, f_matmul_op, f_mean_all, f_mean_axis_keep, f_mlp,
                          f_mul_fn, f_mul_op, f_neg_op, f_relu_fn, f_reshape_fn, f_scalars,
                          f_sub_op, f_sum_all, f_sum_axis, f_transpose_fn, lambda_free_combo,
                          run_and_compare, stats)
from pijit_testutil import NP_DTYPES, random_array

HYP = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- every op gives the eager result ----------------------------------------------------------------

@pytest.mark.parametrize("fn", BINARY_FUNCS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)),
                                    ((), (3,)), ((), ()), ((0, 4), (4,))], ids=str)
def test_binary_op_jitted_equals_eager(rng, fn, shapes):
    a = T(random_array(rng, shapes[0], np.float32))
    b = T(random_array(rng, shapes[1], np.float32, low=1, high=5))
    run_and_compare(fn, a, b)


@pytest.mark.parametrize("fn", [f_add_op, f_sub_op, f_mul_op, f_div_op], ids=lambda f: f.__name__)
@pytest.mark.parametrize("da", NP_DTYPES, ids=str)
@pytest.mark.parametrize("db", NP_DTYPES, ids=str)
def test_binary_op_every_dtype_pair_jitted_equals_eager(rng, fn, da, db):
    a = T(random_array(rng, (2, 3), da))
    b = T(random_array(rng, (3,), db))
    # bool - bool raises: then the jitted call must raise the same error
    run_and_compare(fn, a, b)


@pytest.mark.parametrize("fn", UNARY_FUNCS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64], ids=str)
def test_unary_and_shape_op_jitted_equals_eager(rng, fn, dtype):
    a = T(random_array(rng, (3, 4), dtype, low=1, high=6))
    run_and_compare(fn, a)


@pytest.mark.parametrize("fn", [f_neg_op, f_exp_fn, f_log_fn, f_relu_fn, f_sum_all, f_mean_all,
                                f_scalars, f_chain], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", [(), (0,), (2, 0)], ids=str)
def test_unary_op_on_0d_and_empty_jitted_equals_eager(fn, shape):
    run_and_compare(fn, T(np.full(shape, 1.5, np.float32)))


NONCONTIG = {
    "transposed": lambda a: a.T,
    "steps": lambda a: a[::2, 1::2],
    "negative_strides": lambda a: a[::-1, ::-1],
}


@pytest.mark.parametrize("view", NONCONTIG.values(), ids=NONCONTIG.keys())
@pytest.mark.parametrize("fn", [f_add_op, f_mul_fn, f_matmul_op], ids=lambda f: f.__name__)
def test_binary_op_on_noncontiguous_inputs_jitted_equals_eager(rng, view, fn):
    a = view(random_array(rng, (6, 6), np.float32))
    b = view(random_array(rng, (6, 6), np.float32))
    run_and_compare(fn, T(a), T(b))


@pytest.mark.parametrize("view", NONCONTIG.values(), ids=NONCONTIG.keys())
@pytest.mark.parametrize("fn", [f_chain, f_sum_axis, f_mean_axis_keep, f_reshape_fn,
                                f_transpose_fn], ids=lambda f: f.__name__)
def test_unary_op_on_noncontiguous_input_jitted_equals_eager(rng, view, fn):
    run_and_compare(fn, T(view(random_array(rng, (6, 6), np.float64))))


@pytest.mark.parametrize("fn", MATMUL_FUNCS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((4,), (4,)), ((4,), (4, 2)), ((3, 4), (4,)),
                                    ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)),
                                    ((2, 0), (0, 3))], ids=str)
def test_matmul_jitted_equals_eager(rng, fn, shapes):
    a = T(random_array(rng, shapes[0], np.float32))
    b = T(random_array(rng, shapes[1], np.float32))
    run_and_compare(fn, a, b)


@pytest.mark.parametrize("da", NP_DTYPES, ids=str)
@pytest.mark.parametrize("db", NP_DTYPES, ids=str)
def test_matmul_every_dtype_pair_jitted_equals_eager(rng, da, db):
    run_and_compare(f_matmul_op, T(random_array(rng, (3, 4), da)), T(random_array(rng, (4, 2), db)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_mlp_combination_jitted_equals_eager(rng, dtype):
    args = [T(random_array(rng, s, dtype)) for s in [(8, 16), (16, 32), (32,), (32, 4)]]
    jf = run_and_compare(f_mlp, *args)
    graph = stats(jf)["graphs"][0]
    # float32: the first layer's bias and relu run inside its product (matmul_epilogue).
    fused = dtype == np.float32
    for name in ("matmul", "mean") + (("post=[bias,relu]",) if fused else ("add", "relu")):
        assert name in graph


def test_large_float32_combination_jitted_equals_eager_exactly(rng):
    a = T(rng.standard_normal((64, 257)).astype(np.float32))
    b = T(rng.standard_normal((257, 48)).astype(np.float32))
    run_and_compare(lambda_free_combo, a, b)


@given(data=st.data(),
       shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4),
       fn=st.sampled_from([f_add_op, f_sub_op, f_mul_op, f_div_op]),
       da=st.sampled_from(NP_DTYPES), db=st.sampled_from(NP_DTYPES))
@HYP
def test_binary_broadcasting_jitted_equals_eager_hypothesis(data, shapes, fn, da, db):
    a = data.draw(hnp.arrays(np.int64, shapes.input_shapes[0], elements=st.integers(-50, 50)))
    b = data.draw(hnp.arrays(np.int64, shapes.input_shapes[1], elements=st.integers(-50, 50)))
    with np.errstate(all="ignore"):
        run_and_compare(fn, T(a.astype(da)), T(b.astype(db)))


@given(a=hnp.arrays(st.sampled_from([np.float32, np.float64]),
                    hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
                    elements=st.floats(-20, 20, width=32)),
       data=st.data(), keepdims=st.booleans(), mean=st.booleans())
@HYP
def test_reduction_jitted_equals_eager_hypothesis(a, data, keepdims, mean):
    axis = data.draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1)))

    def reduce_sum(x, ax, kd): return ops.sum(x, ax, keepdims=kd)

    def reduce_mean(x, ax, kd): return ops.mean(x, ax, keepdims=kd)
    run_and_compare(reduce_mean if mean else reduce_sum, T(a), axis, keepdims)
