"""Loops over 1-d NumPy arrays the function reads (module constants, arguments, arrays made
in the function) are unrolled at capture: the items (immutable NumPy scalars) are constants of
the graph, and an array that comes from outside is guarded by its contents (ARRAY_MATCH), so
writing to it between calls recompiles instead of reusing stale values. Rows of n-d arrays
(views a store goes through), stores into an array while a loop over it runs, arrays too
large to guard by value, object arrays and 0-d arrays run in Python or raise as Python does.
Each case against eager Python."""
import numpy as np
import pytest

import pijit as ms
from graph_break_testutil import _reset_state  # noqa: F401 (autouse fixture)
from graph_break_testutil import LOG, X, compare, compare_as_one_graph

WEIGHTS = np.array([0.5, -1.25, 2.0], dtype=np.float32)
TABLE = np.arange(6, dtype=np.float32).reshape(2, 3) - 1.5
STEPS = np.array([1, 2, 3], dtype=np.int64)
BIG = np.arange(20000, dtype=np.float64)
OBJECTS = np.array([1.0, "a"], dtype=object)


def sum_of_floats(x):
    s = x
    for w in WEIGHTS:
        s = s + float(w)
    return s


def rows_as_tensors(x):
    s = x
    for row in TABLE:
        s = s * 0.5 + ms.Tensor(row)
    return s


def scalars_in_ops(x):
    s = x
    for i, step in enumerate(STEPS):
        if i == 2:
            break
        s = s * step + int(step)
    return s


def zipped(x):
    s = x
    for w, step in zip(WEIGHTS, STEPS):
        s = s + float(w) * int(step)
    return s


def made_inside(x):
    s = x
    for v in np.arange(4):
        s = s + int(v)
    return s, len([v for v in np.linspace(0.0, 1.0, 3)])


def generator_over_array(x):
    return x + sum(float(w) for w in WEIGHTS)


@pytest.mark.parametrize("fn", [sum_of_floats, scalars_in_ops, zipped, made_inside,
                                generator_over_array])
def test_loop_over_an_array_is_one_graph(fn, capsys):
    compare_as_one_graph(fn, capsys=capsys)


def test_writing_to_the_array_between_calls_recompiles():
    jf = ms.jit(sum_of_floats, mode="PIJit")
    saved = WEIGHTS.copy()
    try:
        np.testing.assert_array_equal(jf(X()).asnumpy(), sum_of_floats(X()).asnumpy())
        WEIGHTS[1] = 7.0
        np.testing.assert_array_equal(jf(X()).asnumpy(), sum_of_floats(X()).asnumpy())
        assert ms.get_code_extra(jf)["compile_count"] == 2
        WEIGHTS[1] = 7.0  # unchanged contents: the cache entry matches again
        jf(X())
        assert ms.get_code_extra(jf)["compile_count"] == 2
    finally:
        WEIGHTS[:] = saved


def loop_over_argument(x, arr):
    s = x
    for v in arr:
        s = s - float(v)
    return s


def test_argument_array_is_guarded_by_contents():
    jf = ms.jit(loop_over_argument, mode="PIJit")
    for arr in (np.array([1.0, 2.0]), np.array([1.0, 2.0]), np.array([3.0, 2.0]),
                np.array([3.0, 2.0, 1.0]), np.array([3.0, 2.0], dtype=np.float32)):
        np.testing.assert_array_equal(jf(X(), arr).asnumpy(), loop_over_argument(X(), arr).asnumpy())
    # Equal contents (a new object) hit the first entry; other values, length and dtype do not.
    assert ms.get_code_extra(jf)["compile_count"] == 4
    assert "ARRAY_MATCH(args[1])" in str(ms.explain(loop_over_argument, X(), np.array([1.0])))


def over_big(x):
    n = 0
    for _ in BIG:
        n += 1
    return x + n


def over_objects(x):
    s = x
    for v in OBJECTS:
        s = s + len(str(v))
    return s


def over_zero_d(x):
    s = x
    for v in np.array(3.0):
        s = s + v
    return s


def test_big_and_object_arrays_break_and_stay_correct(capsys):
    for fn in (over_big, over_objects):
        stats, outcome, _ = compare(fn, capsys=capsys)
        assert outcome[0] == "ok"
        assert stats["total_break_count"] >= 1
    reasons = str(ms.explain(over_big, X()))
    assert "not guarded by value" in reasons


def test_iterating_a_zero_d_array_raises_as_python_does(capsys):
    _, outcome, _ = compare(over_zero_d, capsys=capsys)
    assert outcome[0] == "raise" and outcome[1] is TypeError


MUT = np.array([1.0, 2.0, 3.0])
GRID = np.array([[1.0, 0.5, -1.0], [0.25, 2.0, 1.5]])


def store_into_the_array_in_its_loop(x):
    for i, v in enumerate(MUT):
        LOG.append(float(v))
        MUT[(i + 1) % 3] = v * 10
    return x + float(MUT.sum())


def store_between_next_calls(x):
    it = iter(MUT)
    a = next(it)
    MUT[1] = 7.0
    return x + a + next(it)


def store_through_rows(x, k):
    for row in GRID:
        row[0] = k
    return x + ms.Tensor(GRID.astype(np.float32))[:, :3].sum()


@pytest.mark.parametrize("fn,args", [(store_into_the_array_in_its_loop, lambda: (X(),)),
                                     (store_between_next_calls, lambda: (X(),)),
                                     (store_through_rows, lambda: (X(), 3.0)),
                                     (rows_as_tensors, lambda: (X(),))])
def test_stores_into_iterated_arrays_and_rows_stay_correct(fn, args, capsys):
    saved = MUT.copy(), GRID.copy()

    def reset():
        MUT[:] = saved[0]
        GRID[:] = saved[1]

    try:
        compare(fn, args, capsys=capsys, reset=reset,
                state=lambda a: (list(LOG), MUT.tolist(), GRID.tolist()))
    finally:
        reset()
