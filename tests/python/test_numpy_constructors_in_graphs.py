"""NumPy's array constructors (np.array, np.ones, np.full, np.arange, ...) called with values
fixed at compile time stay in the graph in bytecode mode too: `Tensor(np.array(...))` is a
constant of the graph, and an array that leaves it (returned, or in a graph break's state) is
a new copy on every call, one object wherever it appears, as eager code makes it."""
import numpy as np
import pytest

import pijit


def T(*shape):
    return pijit.Tensor(np.arange(np.prod(shape), dtype=np.float32).reshape(shape))


def tensor_of_array(x):
    return x + pijit.Tensor(np.array([1.0, 2.0, 3.0], np.float32))


def python_constructors(x):  # np.ones and np.full are Python functions in NumPy
    return x * pijit.Tensor(np.ones((3,)), pijit.float32) + pijit.Tensor(np.full((3,), 0.5, np.float32))


def array_returned(x):
    a = np.arange(3, dtype=np.float32)
    return x + pijit.Tensor(a), a, a


def array_through_a_break(x):
    a = np.zeros(3, np.float32)
    a.fill(2.0)  # runs in Python (a graph break) on the call's own array
    return x * pijit.Tensor(a), a


def from_a_number(x, n):
    return x + pijit.Tensor(np.full((3,), n, np.float32))


def as_list(v):
    return v.asnumpy().tolist() if isinstance(v, pijit.Tensor) else np.asarray(v).tolist()


@pytest.mark.parametrize("fn, args, breaks", [
    (tensor_of_array, (T(3),), 0),
    (python_constructors, (T(3),), 0),
    (array_returned, (T(3),), 0),
    (array_through_a_break, (T(3),), None),
    (from_a_number, (T(3), 2.0), 0),
], ids=["tensor_of_array", "python_constructors", "array_returned", "array_through_a_break",
        "from_a_number"])
def test_jitted_equals_eager(fn, args, breaks):
    jf = pijit.jit(fn, capture_mode="bytecode")
    pijit.reset(jf)
    for _ in range(3):
        got, want = jf(*args), fn(*args)
        got, want = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple) else (want,))
        assert [as_list(g) for g in got] == [as_list(w) for w in want]
    stats = pijit.get_code_extra(jf)
    assert stats["eager_count"] == 0
    if breaks is not None:
        assert stats["total_break_count"] == breaks, stats["all_reasons"]


def test_a_returned_array_is_new_on_each_call_and_shared_within_one():
    jf = pijit.jit(array_returned, capture_mode="bytecode")
    pijit.reset(jf)
    _, a1, b1 = jf(T(3))
    assert a1 is b1  # the same array twice, as eagerly
    a1[0] = 99.0  # the caller changes its array: the next call must not see it
    _, a2, _ = jf(T(3))
    assert a2 is not a1 and a2.tolist() == [0.0, 1.0, 2.0]


def test_a_changed_number_recompiles():
    jf = pijit.jit(from_a_number, capture_mode="bytecode")
    pijit.reset(jf)
    for n in (1.0, 2.0, 2.0):
        assert as_list(jf(T(3), n)) == as_list(from_a_number(T(3), n))
    assert pijit.get_code_extra(jf)["compile_count"] == 2
