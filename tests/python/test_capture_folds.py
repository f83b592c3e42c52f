"""Capture of Tensor.T, abs() of a tensor, getattr with a default and math functions of known
numbers: one graph, results equal to eager, and guards that notice when the inputs change."""
import enum
import math

import numpy as np
import pytest

import pijit
from pijit import ops

SCALE = 16.0


class Opts:
    alpha = 0.5


OPTS = Opts()


def t(*shape):
    return pijit.Tensor(np.arange(np.prod(shape), dtype=np.float32).reshape(shape) - 2)


def one_graph(fn, *args):
    jf = pijit.jit(fn, capture_mode="bytecode")
    got = jf(*args)
    np.testing.assert_array_equal(got.asnumpy(), fn(*args).asnumpy())
    stats = pijit.get_code_extra(jf)
    assert stats["break_count"] == 0 and stats["eager_count"] == 0, stats["reasons"]
    return jf


def test_transpose_property():
    def f(x):
        return x.T @ x + x.T.sum()

    one_graph(f, t(2, 3))
    np.testing.assert_array_equal(pijit.jit(f)(t(3, 4)).asnumpy(), f(t(3, 4)).asnumpy())


def test_abs_of_a_tensor_is_the_op():
    def f(x):
        return abs(x) - abs(-3)

    one_graph(f, t(5))


def test_math_function_of_a_global_number_follows_the_global():
    global SCALE

    def f(x):
        return x * math.sqrt(SCALE) + math.floor(2.7)

    jf = one_graph(f, t(3))
    SCALE = 25.0
    try:
        np.testing.assert_array_equal(jf(t(3)).asnumpy(), f(t(3)).asnumpy())
    finally:
        SCALE = 16.0


def test_math_function_raising_runs_eagerly_and_raises():
    def f(x):
        return x * math.sqrt(-1.0)

    with pytest.raises(ValueError, match="math domain error"):
        pijit.jit(f, capture_mode="bytecode")(t(2))


def test_getattr_default_of_an_existing_attribute_follows_it():
    def f(x):
        return x * getattr(OPTS, "alpha", 1.0)

    jf = one_graph(f, t(3))
    Opts.alpha = 2.0
    try:
        np.testing.assert_array_equal(jf(t(3)).asnumpy(), f(t(3)).asnumpy())
    finally:
        Opts.alpha = 0.5


def test_getattr_default_of_a_missing_attribute_stays_correct():
    def f(x):
        return x * getattr(OPTS, "beta", 3.0)

    jf = pijit.jit(f, capture_mode="bytecode")
    np.testing.assert_array_equal(jf(t(3)).asnumpy(), f(t(3)).asnumpy())
    OPTS.beta = 5.0
    try:
        np.testing.assert_array_equal(jf(t(3)).asnumpy(), f(t(3)).asnumpy())
    finally:
        del OPTS.beta


@pytest.mark.parametrize("n", [0, -1, 1, 3])
def test_sequence_repetition_is_one_graph(n):
    def f(x):
        t = (x,) * n + (x + 1,)
        lst = n * [x * 2]
        u = (x,)
        u *= 2
        return ops.concat(t) + len(lst) + ops.concat(u).sum()

    one_graph(f, t(2))


def test_list_repeated_in_place_stays_correct():
    def f(x):
        lst = [x]
        alias = lst
        lst *= 2
        return ops.concat(alias) * len(alias)

    jf = pijit.jit(f, capture_mode="bytecode")
    np.testing.assert_array_equal(jf(t(2)).asnumpy(), f(t(2)).asnumpy())


class Util:
    k = 2.0

    @staticmethod
    def twice(x):
        return x + x

    @classmethod
    def scaled(cls, x):
        return x * cls.k


class SubUtil(Util):
    k = 5.0


@pytest.mark.parametrize("cls", [Util, SubUtil])
def test_static_and_class_methods_of_an_object_made_in_the_trace(cls):
    def f(x):
        u = cls()
        return u.twice(x) + u.scaled(x) + cls.scaled(x)

    one_graph(f, t(3))


def test_tensor_of_constants_is_a_graph_constant():
    def f(x):
        return x + pijit.Tensor([1.0, 2.0], pijit.float32) * pijit.Tensor(3.0)

    one_graph(f, t(2))


def test_tensor_of_constants_returned_is_fresh_on_every_call():
    def f(x):
        return pijit.Tensor([1.0, 2.0]), x * 2

    jf = pijit.jit(f, capture_mode="bytecode")
    first, _ = jf(t(2))
    first[0] = 100.0  # the caller owns what it gets
    second, _ = jf(t(2))
    assert first is not second
    np.testing.assert_array_equal(second.asnumpy(), [1.0, 2.0])
    assert pijit.get_code_extra(jf)["break_count"] == 0


def test_tensor_of_a_call_tensor_still_breaks():
    def f(x):
        return pijit.Tensor(x.asnumpy() * 2) + 1

    jf = pijit.jit(f, capture_mode="bytecode")
    np.testing.assert_array_equal(jf(t(3)).asnumpy(), f(t(3)).asnumpy())
    assert pijit.get_code_extra(jf)["break_count"] >= 1


class Mode(enum.Enum):
    A = 1
    B = 2


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 3


class Odd(enum.Enum):
    X = 1

    def __eq__(self, other):  # Python code: not run at capture time
        return True

    __hash__ = enum.Enum.__hash__


@pytest.mark.parametrize("mode", [Mode.A, Mode.B])
def test_enum_members_and_their_comparison_are_constants(mode):
    def f(x, m):
        if m == Mode.A and Level.HIGH > 2 and m is not Mode.B:
            return x * 2
        return x - Level.LOW.value

    jf = one_graph(f, t(3), mode)
    other = Mode.B if mode is Mode.A else Mode.A
    np.testing.assert_array_equal(jf(t(3), other).asnumpy(), f(t(3), other).asnumpy())


def test_enum_with_its_own_eq_is_not_compared_at_capture_time():
    def f(x, m):
        return x * 2 if m == Odd.X else x

    jf = pijit.jit(f, capture_mode="bytecode")
    np.testing.assert_array_equal(jf(t(3), Odd.X).asnumpy(), f(t(3), Odd.X).asnumpy())
    assert pijit.get_code_extra(jf)["break_count"] >= 1


class Scaled:
    factor = 2.0


class Shifted(Scaled):
    factor = 3.0


def test_type_of_a_value_and_its_name_follow_the_argument():
    def f(obj, x):
        if type(obj).__name__ == "Shifted":
            return x * type(obj).factor + 1
        return x * type(obj).factor

    jf = pijit.jit(f, capture_mode="bytecode")
    for obj in (Scaled(), Shifted(), Scaled()):  # the class is guarded: each gets its branch
        np.testing.assert_array_equal(jf(obj, t(3)).asnumpy(), f(obj, t(3)).asnumpy())
    stats = pijit.get_code_extra(jf)
    assert stats["break_count"] == 0 and stats["eager_count"] == 0, stats["reasons"]
    one_graph(lambda x: x + len(type(OPTS).__qualname__) + len(type(OPTS).__module__), t(2))


def test_tensors_in_nested_tuples_are_graph_inputs():
    def f(pairs, x):
        (a, b), (c,) = pairs
        return a @ b + c + x

    pairs = ((t(2, 2), t(2, 2)), (t(2),))
    jf = one_graph(f, pairs, t(2))
    other = ((t(2, 2) * 2, t(2, 2)), (t(2) + 1,))  # new tensors, same structure: no recompile
    np.testing.assert_array_equal(jf(other, t(2)).asnumpy(), f(other, t(2)).asnumpy())
    assert pijit.get_code_extra(jf)["compile_count"] == 1


@pytest.mark.parametrize("dtype", [pijit.float32, pijit.float64, pijit.int32])
def test_dtype_comparisons_and_attributes_fold(dtype):
    def f(x):
        if x.dtype == pijit.float32 or x.dtype in (pijit.float16, pijit.int32):
            x = x + 1
        if x.dtype != pijit.float64 and hasattr(x.dtype, "name"):
            x = x * len(x.dtype.name)
        return x

    jf = pijit.jit(f, capture_mode="bytecode")
    x = pijit.Tensor(np.arange(4, dtype=np.float32)).astype(dtype)
    np.testing.assert_array_equal(jf(x).asnumpy(), f(x).asnumpy())
    stats = pijit.get_code_extra(jf)
    assert stats["break_count"] == 0 and stats["eager_count"] == 0, stats["reasons"]


def test_a_tensors_dtype_is_the_one_dtype_object():
    x = pijit.Tensor(np.ones(2, np.float32))
    assert x.dtype is pijit.float32 and (x + 1).dtype is x.dtype
    assert x.astype(pijit.float64).dtype is pijit.float64


def test_float_of_a_string_and_slices_of_a_parameter_fold():
    p = pijit.Parameter(pijit.Tensor(np.arange(6, dtype=np.float32).reshape(3, 2)), name="p")

    def f(x):
        return ops.maximum(x + p[1:], float("-inf")) + p[0, 1]

    one_graph(f, t(2, 2))


def test_keyword_arguments_from_a_dict_follow_its_contents():
    kwargs = {"axis": 0}

    def f(x):
        return ops.sum(x, **kwargs) + ops.mean(x, **{**kwargs, "keepdims": False})

    jf = one_graph(f, t(2, 3))
    kwargs["axis"] = 1  # the dict's values are guarded: a change recompiles
    np.testing.assert_array_equal(jf(t(2, 3)).asnumpy(), f(t(2, 3)).asnumpy())
    kwargs["keepdims"] = True  # and so are its keys
    np.testing.assert_array_equal(jf(t(2, 3)).asnumpy(), f(t(2, 3)).asnumpy())
    assert pijit.get_code_extra(jf)["compile_count"] == 3


class Lookup:
    """A container whose __getitem__ is Python code (as a SequentialCell's is)."""

    def __init__(self, scales):
        self.scales = tuple(scales)

    def __getitem__(self, i):
        return self.scales[i] * 2


def test_python_getitem_is_inlined_and_follows_the_object():
    table = Lookup([1.0, 3.0])

    def f(x):
        return x * table[1] + table[-2]

    jf = one_graph(f, t(3))
    table.scales = (5.0, 7.0)  # read through guarded sources: a change recompiles
    np.testing.assert_array_equal(jf(t(3)).asnumpy(), f(t(3)).asnumpy())


def test_cells_of_a_sequential_cell_by_index_are_inlined():
    from pijit import nn
    pijit.set_seed(0)
    seq = nn.SequentialCell([nn.Dense(3, 4), nn.ReLU(), nn.Dense(4, 2)])
    one_graph(lambda x: seq[2](seq[1](seq[0](x))) + seq[-1](seq[1](seq[0](x))), t(2, 3))


def test_primitives_and_parameterless_cells_made_inside_are_captured():
    from pijit import nn

    def f(x):
        y = ops.MatMul(transpose_b=True)(x, x)
        y = nn.ReLU()(y - 10.0) + ops.ReduceSum(keep_dims=True)(x, 1)
        return nn.Softmax(axis=0)(y) + nn.Flatten()(x)[:, :1]

    one_graph(f, t(3, 3))


def test_a_cell_with_parameters_made_inside_runs_eagerly():
    from pijit import nn

    def f(x):
        return nn.Dense(3, 2)(x)

    jf = pijit.jit(f, capture_mode="bytecode")
    assert jf(t(2, 3)).shape == (2, 2)
    reasons = [r["explanation"] for r in pijit.get_code_extra(jf)["all_reasons"]]
    assert any("has Parameters" in r for r in reasons), reasons


def test_enumerate_with_a_start_counts_from_it():
    def f(xs):
        total = xs[0] * 0
        for i, x in enumerate(xs, 1):
            total = total + x * i
        return total

    one_graph(f, (t(2), t(2) + 1, t(2) * 3))


def test_a_container_built_after_an_iterated_list_is_freed_stays_mutable():
    def f(x):
        for k in range(6):
            for p in [1, 2, 3][1:]:  # a list that a loop iterates, then frees
                x = x + p
            items = []  # new containers, possibly at the freed list's address
            items.append(x)
            d = {}
            d[k] = items[0]
            x = d[k]
        return x

    one_graph(f, t(3))


def test_iterating_a_tensor_unrolls_its_rows():
    def f(x):
        total = x[0] * 0
        for i, row in enumerate(x):
            total = total + row * (i + 1)
        return total + sum(r.sum() for r in x)

    jf = one_graph(f, t(4, 3))
    np.testing.assert_array_equal(jf(t(2, 3)).asnumpy(), f(t(2, 3)).asnumpy())  # new length


def test_iterating_a_long_or_0d_tensor_runs_eagerly():
    def f(x):
        return [r * 2 for r in x][0]

    jf = pijit.jit(f, capture_mode="bytecode")
    np.testing.assert_array_equal(jf(t(300)).asnumpy(), f(t(300)).asnumpy())
    assert pijit.get_code_extra(jf)["total_break_count"] >= 1


def test_functools_partial_calls_its_function_with_stored_arguments():
    import functools

    def scale_shift(x, scale, shift=0.0):
        return x * scale + shift

    by_op = functools.partial(ops.mul, 2.0)
    by_fn = functools.partial(scale_shift, scale=3.0, shift=1.0)
    with_tensor = functools.partial(scale_shift, t(3))

    def f(x):
        return by_op(x) + by_fn(x) + by_fn(x, shift=5.0) + with_tensor(x)

    jf = one_graph(f, t(3))
    by_fn.keywords["shift"] = -1.0  # the stored keywords are guarded: a change recompiles
    np.testing.assert_array_equal(jf(t(3)).asnumpy(), f(t(3)).asnumpy())
