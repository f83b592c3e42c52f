"""Dynamic numbers: after a miss where only Python ints or floats changed, a number that only
meets floating tensors in arithmetic becomes a graph input instead of a guarded constant, so a
learning rate or a step count that changes on every call compiles twice, not once per value.
Any other use of the number (control flow, returning it, integer tensors) keeps it guarded."""
import numpy as np
import pytest

import pijit as ms

from jit_testutil import fresh  # noqa: F401 (autouse fixture)


def tensor(dtype=np.float32, n=5):
    return ms.Tensor(np.linspace(-2, 2, n).astype(dtype))


def check(jitted, plain, *args):
    got, want = jitted(*args), plain(*args)
    if isinstance(want, ms.Tensor):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
    else:
        assert type(got) is type(want) and got == want
    return got


def compiles(fn):
    return ms.get_code_extra(fn)["compile_count"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_learning_rate_and_step_compile_twice(dtype):
    def step(x, lr, i):
        return x - lr * x * 0.5 + x * i / 3

    f = ms.jit(step, mode="PIJit")
    x = tensor(dtype)
    for i in range(12):
        check(f, step, x, 0.1 / (i + 1), i)
    assert compiles(f) == 2
    assert ms.get_code_extra(f)["cache_hits"] == 10


def test_a_number_that_steers_control_flow_stays_guarded():
    def g(x, k):
        y = x * k
        return y + 1 if k > 2 else y - 1

    f = ms.jit(g, mode="PIJit")
    x = tensor()
    for k in [1, 2, 3, 4, 1, 5.0, 0.5]:
        check(f, g, x, k)
    assert compiles(f) == 6  # one per distinct value: each entry depends on k > 2 by value


def test_integer_and_half_tensors_keep_the_number_constant():
    def g(x, k):
        return x * k + k

    f = ms.jit(g, mode="PIJit")
    for dtype in (np.int32, np.int8, np.float16):
        x = tensor(dtype)
        for k in (3, 4, 5, 100):
            check(f, g, x, k)
    with pytest.raises(Exception) as eager_error:
        g(tensor(np.int8), 1000)
    with pytest.raises(type(eager_error.value)):
        f(tensor(np.int8), 1000)


def test_type_changes_and_bools_recompile():
    def g(x, k):
        return x * k

    f = ms.jit(g, mode="PIJit")
    x = tensor()
    for k in (2, 3, 4, 2.5, 3.5, 4.5, True, False, 7, 7.25):
        check(f, g, x, k)
    # int, then float values share an entry each; bools are constants.
    assert compiles(f) <= 6


def test_huge_ints_raise_what_eager_raises_or_match_it():
    def g(x, k):
        return x + k

    f = ms.jit(g, mode="PIJit")
    x = tensor()
    for k in (1, 2, 3):
        check(f, g, x, k)
    try:
        want = g(x, 10**30)
    except Exception as e:  # noqa: BLE001 - the jitted call must raise the same
        with pytest.raises(type(e)):
            f(x, 10**30)
    else:
        np.testing.assert_array_equal(f(x, 10**30).asnumpy(), want.asnumpy())


SCALE = 1.0


class Model:
    def __init__(self):
        self.lr = 0.5


def test_globals_and_attributes_become_inputs():
    global SCALE
    model = Model()

    def g(x, m):
        return x * SCALE + m.lr * x

    f = ms.jit(g, mode="PIJit")
    x = tensor()
    for i in range(10):
        SCALE = 1.0 + i
        model.lr = 0.5 / (i + 1)
        check(f, g, x, model)
    assert compiles(f) == 2


def test_numbers_returned_or_stored_or_computed_stay_exact():
    log = []

    def g(x, k):
        log.append(k)
        y = x * k
        return y, k * 2, k

    f = ms.jit(g, mode="PIJit")
    x = tensor()
    for k in (1.5, 2.5, 3.5, 4.5):
        got = f(x, k)
        want = g(x, k)
        np.testing.assert_array_equal(got[0].asnumpy(), want[0].asnumpy())
        assert got[1:] == want[1:]
    assert log == [1.5, 1.5, 2.5, 2.5, 3.5, 3.5, 4.5, 4.5]


def test_numbers_around_a_graph_break():
    printed = []

    def g(x, lr):
        y = x * lr
        printed.append("between")
        return y - lr

    f = ms.jit(g, mode="PIJit")
    x = tensor()
    for lr in (0.1, 0.2, 0.3, 0.4, 0.5):
        check(f, g, x, lr)
    assert printed == ["between"] * 10
    assert compiles(f) <= 3


def test_gradients_with_changing_numbers_match_eager():
    def loss(x, k):
        return (x * x * k).sum()

    grad = ms.grad(loss)
    jgrad = ms.jit(lambda x, k: grad(x, k), mode="PIJit")
    x = tensor()
    for k in (0.5, 1.5, 2.5, 3.5):
        np.testing.assert_allclose(jgrad(x, k).asnumpy(), grad(x, k).asnumpy(), rtol=1e-6)


# ---- numbers the graph computes: +, -, *, / of dynamic numbers and constants -------------

def test_arithmetic_on_changing_numbers_stays_in_one_entry():
    def step(x, lr, i):
        decay = lr * 0.5 + i / 4 - 1
        return x * decay - lr / 3 * x, decay, i * 2 + 1

    f = ms.jit(step, mode="PIJit")
    x = tensor()
    for i in range(12):
        lr = 0.1 / (i + 1)
        got, want = f(x, lr, i), step(x, lr, i)
        np.testing.assert_array_equal(got[0].asnumpy(), want[0].asnumpy())
        assert type(got[1]) is float and got[1] == want[1]
        assert type(got[2]) is int and got[2] == want[2]
    assert compiles(f) == 2


def test_closure_and_global_counters_compile_twice():
    def make():
        count = 0

        def bump(x):
            nonlocal count
            count += 1
            return x * count

        return bump, lambda: count

    bump, read = make()
    f = ms.jit(bump, mode="PIJit")
    x = tensor()
    for n in range(1, 13):
        np.testing.assert_array_equal(f(x).asnumpy(), x.asnumpy() * n)
        assert read() == n
    assert compiles(f) == 2

    global STEPS
    STEPS = 0

    def tick(x):
        global STEPS
        STEPS = STEPS + 1
        return x + STEPS * 0.5

    g = ms.jit(tick, mode="PIJit")
    for n in range(1, 13):
        np.testing.assert_array_equal(g(x).asnumpy(), x.asnumpy() + n * 0.5)
        assert STEPS == n
    assert compiles(g) == 2


STEPS = 0


def test_a_zero_or_changing_divisor_and_large_ints_keep_python_semantics():
    def g(x, a, b):
        return x * (a / b), a * b * 3

    f = ms.jit(g, mode="PIJit")
    x = tensor()
    for a, b in [(1.0, 2.0), (3.0, 4.0), (5.0, 8.0), (1.0, 0.5)]:
        got, want = f(x, a, b), g(x, a, b)
        np.testing.assert_array_equal(got[0].asnumpy(), want[0].asnumpy())
        assert got[1] == want[1]
    with pytest.raises(ZeroDivisionError):
        f(x, 1.0, 0.0)

    def h(x, k):
        return x * 2, k * k * k + 1

    fh = ms.jit(h, mode="PIJit")
    for k in (1, 2, 3, 2**20, 2**40, -(2**31), 2**31 - 1, 10**30):
        got, want = fh(x, k), h(x, k)
        assert got[1] == want[1] and type(got[1]) is int


def test_computed_numbers_that_steer_control_flow_or_leave_through_a_break():
    printed = []

    def g(x, lr):
        half = lr * 0.5
        printed.append("break")  # a graph break with `half` live
        y = x * half
        return y if half < 1 else -y

    f = ms.jit(g, mode="PIJit")
    x = tensor()
    for lr in (0.5, 1.0, 1.5, 2.5, 3.0):
        check(f, g, x, lr)
    assert printed == ["break"] * 10


def test_fuzz_small_number_programs_match_python():
    rng = np.random.default_rng(7)
    ops = ["+", "-", "*", "/"]
    x = tensor(np.float64, 3)
    for trial in range(25):
        expr = "a"
        for _ in range(int(rng.integers(1, 5))):
            op = ops[rng.integers(4)]
            operand = ["a", "b", "2", "0.25", "3"][rng.integers(5)]
            if op == "/" and operand in ("a", "b"):
                operand = "4"
            expr = f"({expr} {op} {operand})"
        src = f"def g(x, a, b):\n    v = {expr}\n    return x * v, v\n"
        ns = {}
        exec(src, ns)  # noqa: S102 - generated test programs
        g = ns["g"]
        f = ms.jit(g, mode="PIJit")
        for a, b in [(1, 2), (3, 5), (0.5, 0.25), (7, -3), (2.5, 4), (-1, 9), (10, 10)]:
            got, want = f(x, a, b), g(x, a, b)
            np.testing.assert_array_equal(got[0].asnumpy(), want[0].asnumpy(), err_msg=src)
            assert type(got[1]) is type(want[1]) and got[1] == want[1], (src, a, b)


def _counter():
    n = 0

    def bump(by):
        nonlocal n
        n = n + by
        return n

    def read():
        return n

    return bump, read


def test_a_guarded_number_next_to_a_dynamic_one_is_guarded_by_value(capsys):
    # The closure counter becomes a dynamic number in the loop's resume function; `by` (an
    # argument) stays a constant there and must be checked by value: a new `by` recompiles
    # instead of adding the old one.
    bump, read = _counter()

    def prog(x, k):
        v = x * 2.0
        for _ in range(3):
            print("tick")  # a graph break inside the loop
            bump(k)
        return v

    jf = ms.jit(prog, mode="PIJit")
    x = ms.Tensor(np.ones(3))
    for k in (3, 4, 6, 7):
        start = read()
        jf(x, k)
        assert read() - start == 3 * k, k
