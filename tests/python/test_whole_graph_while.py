"""`while` on a tensor's value in whole-graph mode (capture_mode="ast"): the loop is one
while_loop node of the graph, equal to eager Python for 0, 1 and many trips, gradients
included; what a loop on a tensor cannot carry is a GraphBreakError that says why."""
import signal

import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops
from whole_graph_testutil import generated_function, whole_graph


def t(*values, dtype=np.float32):
    return ms.Tensor(np.array(values, dtype=dtype))


def one_loop_graph(jitted, *args):
    info = ms.explain(jitted, *args)
    assert not info.breaks_graph and not info.break_reasons, info
    assert len(info.graphs) == 1 and "while_loop(" in info.graphs[0], info.graphs
    return info


def doubling(x, limit):
    while x.sum() < limit:
        x = x * 2
    return x


def two_carried_and_a_tensor_counter(x, limit):
    steps = ms.Tensor(0, ms.int32)
    total = x * 0
    while total.sum() < limit:
        total = total + x
        steps = steps + 1
    return total, steps


def condition_with_not_and_else_after(x):
    y = x + 1
    while not (y.max() > 10):
        y = y * 1.5 + 0.5
    z = y - 3
    return z


def branch_inside(x, limit):
    while x.sum() < limit:
        if x.mean() > 1:
            x = x * 3
        else:
            x = x + 1
    return x


def nested_loops(x, limit):
    rows = x * 0
    while rows.sum() < limit:
        inner = x
        while inner.sum() < 4:
            inner = inner * 2
        rows = rows + inner
    return rows


def unchanged_values_read_inside(x, w, limit):
    y = x
    while y.sum() < limit:
        y = y * w + x   # reads x and w, which the loop leaves as they are
    return y, w, x


def tuple_state(x, y, limit):
    state = (x, (y, x * 0))
    while state[0].sum() < limit:
        a, (b, c) = state
        state = (a * 2, (b + 1, c + a))
    return state


CASES = [
    (doubling, lambda k: (t(0.5, 1.0, 1.5), t(k))),
    (tuple_state, lambda k: (t(0.5, 1.0), t(1.5, 2.0), t(k))),
    (two_carried_and_a_tensor_counter, lambda k: (t(0.5, 1.0, 1.5), t(k))),
    (branch_inside, lambda k: (t(0.1, 0.2, 0.3), t(k))),
    (nested_loops, lambda k: (t(0.5, 1.0), t(k))),
    (unchanged_values_read_inside, lambda k: (t(0.5, 1.0), t(1.5, 2.0), t(k))),
]


def as_numpy(result):
    if isinstance(result, tuple):
        return [a for r in result for a in as_numpy(r)]
    return [result.asnumpy()]


@pytest.mark.parametrize("fn, make", CASES, ids=[c[0].__name__ for c in CASES])
def test_zero_one_and_many_trips_equal_eager_in_one_graph(fn, make):
    jitted = whole_graph(fn)
    for limit in (-5.0, 3.2, 50.0, 1000.0):  # no trip, one or two, several, many
        args = make(limit)
        for got, want in zip(as_numpy(jitted(*args)), as_numpy(fn(*args))):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"{fn.__name__} limit={limit}")
    one_loop_graph(jitted, *make(3.0))
    assert ms.get_code_extra(jitted)["compile_count"] == 1


def test_a_negated_condition_and_code_after_the_loop():
    jitted = whole_graph(condition_with_not_and_else_after)
    for x in (t(0.5, 2.0), t(20.0, 1.0)):
        np.testing.assert_allclose(jitted(x).asnumpy(), condition_with_not_and_else_after(x).asnumpy(), rtol=1e-6)
    one_loop_graph(jitted, t(0.5, 2.0))


class Repeated(nn.Cell):
    """A Cell whose loop reads its weights (first read inside the loop's body)."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(3, 3, weight_init="normal", bias_init="zeros")

    def construct(self, x):
        while ops.abs(x).sum() < 50:
            x = ops.tanh(self.dense(x)) * 4 + x
        return x


def test_a_cell_whose_loop_reads_its_weights():
    ms.set_seed(3)
    net = Repeated()
    x = ms.Tensor(np.array([[0.1, -0.2, 0.3], [0.0, 0.5, -0.5]], np.float32))
    want = net(x).asnumpy()
    jitted = ms.jit(net.construct, capture_mode="ast")
    np.testing.assert_allclose(jitted(x).asnumpy(), want, rtol=1e-5, atol=1e-6)
    one_loop_graph(jitted, x)


def loss_through_loop(x, w):
    y = x
    while y.sum() < 30:
        y = y * w + 1
    return (y * y).sum()


@pytest.mark.parametrize("start", [25.0, 1.0, 0.1], ids=["no-trip", "few-trips", "many-trips"])
def test_gradients_through_the_loop_equal_eager_and_finite_differences(start):
    grad = ms.grad(loss_through_loop, grad_position=(0, 1))
    x = ms.Tensor(np.array([start, start / 2], np.float64))
    w = ms.Tensor(np.array([1.5, 1.25], np.float64))

    def step(x, w):
        return grad(x, w)

    jitted = whole_graph(step)
    got = [g.asnumpy() for g in jitted(x, w)]
    eager = [g.asnumpy() for g in grad(x, w)]
    for a, b in zip(got, eager):
        np.testing.assert_allclose(a, b, rtol=1e-9)
    # Central differences (the trip count is constant near these points).
    h = 1e-6
    for which, base in enumerate((x.asnumpy(), w.asnumpy())):
        for i in range(2):
            plus, minus = base.copy(), base.copy()
            plus[i] += h
            minus[i] -= h
            args_p = [ms.Tensor(plus) if k == which else (x, w)[k] for k in range(2)]
            args_m = [ms.Tensor(minus) if k == which else (x, w)[k] for k in range(2)]
            numeric = (float(loss_through_loop(*args_p)) - float(loss_through_loop(*args_m))) / (2 * h)
            np.testing.assert_allclose(got[which][i], numeric, rtol=1e-5)
    assert "while_grad(" in ms.explain(jitted, x, w).graphs[0]


def python_counter(x):
    i = 0
    while x.sum() < 10:
        x = x * 2
        i += 1
    return x, i


def leaves_with_break(x):
    while x.sum() < 10:
        x = x * 2
        if x.max() > 100:
            break
    return x


def grows(x):
    while x.sum() < 10:
        x = ops.concat((x, x))
    return x


def changes_dtype(x):
    while x.sum() < 10:
        x = x.astype(ms.float64) * 2
    return x


def prints_inside(x):
    while x.sum() < 10:
        x = x * 2
        print(x)
    return x


def tuple_grows(x):
    state = (x,)
    while state[0].sum() < 10:
        state = (state[0] * 2, x)
    return state[0]


@pytest.mark.parametrize("fn, message", [
    (python_counter, "changes a Python value"),
    (tuple_grows, "changes a Python value"),
    (leaves_with_break, "jump out of a loop on a tensor"),
    (grows, r"is Float32\(2,\) before a loop on a tensor and Float32\(4,\) after its body"),
    (changes_dtype, r"is Float32\(2,\) before a loop on a tensor and Float64\(2,\) after its body"),
    (prints_inside, "side effect"),
])
def test_what_a_loop_cannot_carry_says_why(fn, message):
    jitted = whole_graph(fn)
    x = t(1.0, 2.0)
    with pytest.raises(ms.GraphBreakError, match=message):
        jitted(x)


def test_bytecode_mode_still_breaks_at_the_loop():
    jitted = ms.jit(doubling, capture_mode="bytecode")
    x, limit = t(0.5, 1.0), t(9.0)
    np.testing.assert_allclose(jitted(x, limit).asnumpy(), doubling(x, limit).asnumpy())
    assert ms.explain(jitted, x, limit).breaks_graph


def test_fullgraph_bytecode_mode_compiles_the_loop():
    jitted = ms.jit(doubling, capture_mode="bytecode", fullgraph=True)
    ms.reset(jitted)
    for limit in (0.0, 9.0, 100.0):
        x = t(0.5, 1.0)
        np.testing.assert_allclose(jitted(x, t(limit)).asnumpy(), doubling(x, t(limit)).asnumpy())
    one_loop_graph(jitted, t(0.5, 1.0), t(9.0))


# ---- generated loops: bodies with assignments and ifs, against eager ----------------------------

EXPRS = ["{u} + {v} * 0.5", "{u} * 0.9 + 0.3", "ops.tanh({u}) + {v}", "{u} - y * 0.1", "ops.relu({u}) + 0.2"]


def program(seed):
    rng = np.random.default_rng(seed)
    lines = ["def prog(x, y):", "    a = x + 1", "    b = y * 2", "    n = a * 0"]
    lines.append(f"    while n.sum() < {rng.integers(0, 6)}:")
    for _ in range(rng.integers(1, 4)):
        target, u, v = ("ab"[rng.integers(2)] for _ in range(3))
        if rng.random() < 0.3:
            lines.append(f"        if {u}.sum() > {rng.normal():.2f}:")
            lines.append(f"            {target} = " + EXPRS[rng.integers(len(EXPRS))].format(u=u, v=v))
            lines.append("        else:")
            lines.append(f"            {target} = {u} * -0.5")
        else:
            lines.append(f"        {target} = " + EXPRS[rng.integers(len(EXPRS))].format(u=u, v=v))
    lines.append("        n = n + 1")
    lines.append("    return a + b * 3, n")
    return generated_function(lines, f"<generated loop {seed}>")


@pytest.mark.parametrize("seed", range(20))
def test_generated_loops_equal_eager(seed):
    fn, source = program(seed)
    jitted = whole_graph(fn)
    rng = np.random.default_rng(500 + seed)
    for _ in range(3):
        x = ms.Tensor(rng.standard_normal((2, 3)).astype(np.float32))
        y = ms.Tensor(rng.standard_normal((2, 3)).astype(np.float32))
        for got, want in zip(as_numpy(jitted(x, y)), as_numpy(fn(x, y))):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=source)
    assert ms.get_code_extra(jitted)["compile_count"] == 1, source


# ---- for loops over range() of tensors ----------------------------------------------------------

def over_range(x, n):
    for i in range(n):
        x = x * 1.5 + i
    return x


def over_range_from_to(x, lo, hi):
    total = x * 0
    for i in range(lo, hi):
        total = total + x * i
    return total


def over_range_stepping(x, n):
    for k in range(1, n, 2):
        x = x - k
    for k in range(n, 0, -1):
        x = x * 0.5 + k
    return x


def n_of(k):
    return ms.Tensor(k, ms.int32)


RANGE_CASES = [
    (over_range, lambda k: (t(0.5, -1.0), n_of(k))),
    (over_range_from_to, lambda k: (t(0.5, -1.0), n_of(2), n_of(k))),
    (over_range_stepping, lambda k: (t(0.5, -1.0), n_of(k))),
]


@pytest.mark.parametrize("fn, make", RANGE_CASES, ids=[c[0].__name__ for c in RANGE_CASES])
def test_for_over_range_of_a_tensor_equals_eager_in_one_graph(fn, make):
    jitted = whole_graph(fn)
    for k in (0, 1, 2, 7):
        args = make(k)
        got, want = jitted(*args), fn(*args)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-6, err_msg=f"{fn.__name__} k={k}")
    one_loop_graph(jitted, *make(3))
    assert ms.get_code_extra(jitted)["compile_count"] == 1


def test_gradients_through_a_for_over_range_equal_eager():
    def loss(x, n):
        for i in range(n):
            x = ops.sin(x) * 1.5 + i
        return (x * x).sum()

    grad = ms.grad(loss)
    jitted = whole_graph(lambda x, n: grad(x, n))
    x = ms.Tensor(np.array([0.3, -0.7, 1.1], np.float64))
    for k in (0, 1, 5):
        np.testing.assert_allclose(jitted(x, n_of(k)).asnumpy(), grad(x, n_of(k)).asnumpy(), rtol=1e-12)
    assert "while_grad(" in ms.explain(jitted, x, n_of(3)).graphs[0]


def range_of_a_float(x, n):
    for i in range(n):
        x = x + 1
    return x


def range_with_a_tensor_step(x, n):
    for i in range(0, 10, n):
        x = x + 1
    return x


def continues(x, n):
    for i in range(n):
        if x.sum() > 5:
            continue
        x = x + 1
    return x


@pytest.mark.parametrize("fn, arg, message", [
    (range_of_a_float, t(3.0), "integer"),
    (range_with_a_tensor_step, n_of(2), "step that is not a nonzero Python int"),
    (continues, n_of(3), "jump out of a loop on a tensor"),
])
def test_what_a_for_over_a_tensor_range_cannot_do_says_why(fn, arg, message):
    with pytest.raises((ms.GraphBreakError, TypeError, ValueError), match=message):
        whole_graph(fn)(t(1.0, 2.0), arg)


class Collatz(nn.Cell):
    """MindSpore-style control flow in a GRAPH_MODE Cell: a while loop on a tensor whose body
    branches on a tensor and calls a helper."""

    def halve_or_grow(self, n):
        if (n % 2) == 0:
            return n // 2
        return n * 3 + 1

    def construct(self, n):
        steps = n * 0
        while n > 1:
            n = self.halve_or_grow(n)
            steps = steps + 1
        return steps


def test_a_graph_mode_cell_with_a_loop_and_a_branch_equals_pynative():
    net = Collatz()
    ms.set_context(mode=ms.PYNATIVE_MODE)
    want = [int(net(ms.Tensor(k, ms.int64)).asnumpy()) for k in (1, 6, 27)]
    assert want == [0, 8, 111]  # the Collatz sequences' lengths
    try:
        ms.set_context(mode=ms.GRAPH_MODE)
        graph_net = Collatz()
        got = [int(graph_net(ms.Tensor(k, ms.int64)).asnumpy()) for k in (1, 6, 27)]
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    assert got == want
    jitted = ms.jit(Collatz().construct, capture_mode="ast")
    info = one_loop_graph(jitted, ms.Tensor(27, ms.int64))
    assert "cond(" in info.graphs[0]


# ---- generated loops with branches: gradients against eager -------------------------------------

GRAD_EXPRS = ["ops.tanh({u}) * 0.9 + {v} * 0.1", "{u} * {v} * 0.5 + 0.1", "ops.sin({u}) + 0.2",
              "{u} * 0.8 - {v} * 0.05"]


def grad_program(seed):
    rng = np.random.default_rng(seed)
    lines = ["def prog(x, y):", "    a = x * 1.0", "    b = y * 1.0", "    n = x.sum() * 0"]
    lines.append(f"    while n < {rng.integers(0, 5)}:")
    for _ in range(rng.integers(1, 4)):
        target, u, v = ("ab"[rng.integers(2)] for _ in range(3))
        expr = GRAD_EXPRS[rng.integers(len(GRAD_EXPRS))].format(u=u, v=v)
        if rng.random() < 0.4:
            lines.append(f"        if {u}.mean() > {rng.normal() * 0.3:.2f}:")
            lines.append(f"            {target} = {expr}")
            lines.append("        else:")
            lines.append(f"            {target} = ops.sqrt(ops.abs({u}) + 0.5)")
        else:
            lines.append(f"        {target} = {expr}")
    lines.append("        n = n + 1")
    lines.append("    return (a * b).sum() + (a * a).sum()")
    return generated_function(lines, f"<generated grad loop {seed}>")


@pytest.mark.parametrize("seed", range(16))
def test_generated_loop_gradients_equal_eager(seed):
    fn, source = grad_program(seed)
    grad = ms.grad(fn, grad_position=(0, 1))
    jitted = whole_graph(lambda x, y: grad(x, y))
    rng = np.random.default_rng(900 + seed)
    for _ in range(3):
        x = ms.Tensor(rng.standard_normal((2, 3)))
        y = ms.Tensor(rng.standard_normal((2, 3)))
        for got, want in zip(jitted(x, y), grad(x, y)):
            np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-10, atol=1e-12, err_msg=source)
    info = ms.explain(jitted, x, y)
    assert not info.breaks_graph and "while_grad(" in info.graphs[0], source


class Interrupted(Exception):
    pass


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs POSIX interval timers")
def test_a_loop_that_never_ends_stops_at_a_signal_as_python_would():
    def forever(x):
        while x.sum() > -1:  # x grows to inf and stays there
            x = x + 1
        return x

    def interrupt(signum, frame):
        raise Interrupted()

    jitted = whole_graph(forever)
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(Interrupted):
            jitted(t(1.0, 2.0))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    # The compiled function is intact: a call whose loop ends runs the same graph.
    np.testing.assert_array_equal(jitted(t(-5.0, -5.0)).asnumpy(), [-5.0, -5.0])
    assert ms.get_code_extra(jitted)["compile_count"] == 1


# ---- generated programs mixing ifs, while loops, for loops over range(tensor) and tuples ----------

MIXED_EXPRS = ["ops.tanh({u}) * 0.9 + {v} * 0.1", "{u} * {v} * 0.5 + 0.1", "ops.sin({u}) + 0.2",
               "ops.relu({u}) + {v} * 0.3", "ops.exp({u} * 0.1)"]


def mixed_block(rng, lines, pad, depth):
    for _ in range(rng.integers(1, 4)):
        kind = rng.random()
        target, u, v = ("ab"[rng.integers(2)] for _ in range(3))
        expr = MIXED_EXPRS[rng.integers(len(MIXED_EXPRS))].format(u=u, v=v)
        if kind < 0.25 and depth > 0:
            lines.append(f"{pad}if {u}.mean() > {rng.normal() * 0.3:.2f}:")
            mixed_block(rng, lines, pad + "    ", depth - 1)
            if rng.random() < 0.7:
                lines.append(f"{pad}else:")
                mixed_block(rng, lines, pad + "    ", depth - 1)
        elif kind < 0.4 and depth > 0:
            lines.append(f"{pad}for i in range(k):")
            lines.append(f"{pad}    {target} = {expr} + i * 0")
        elif kind < 0.5 and depth > 0:
            counter = f"n{len(lines)}"
            lines.append(f"{pad}{counter} = {u}.sum() * 0")
            lines.append(f"{pad}while {counter} < {rng.integers(0, 3)}:")
            mixed_block(rng, lines, pad + "    ", depth - 1)
            lines.append(f"{pad}    {counter} = {counter} + 1")
        elif kind < 0.6:  # a tuple temporary
            lines.append(f"{pad}pair = ({u}, {v})")
            lines.append(f"{pad}a, b = pair[0] * 0.5 + pair[1] * 0.25, pair[1]")
        else:
            lines.append(f"{pad}{target} = {expr}")


def mixed_program(seed):
    rng = np.random.default_rng(seed)
    lines = ["def prog(x, y, k):", "    a = x * 1.0", "    b = y * 1.0"]
    mixed_block(rng, lines, "    ", 2)
    lines.append("    return (a * b).sum() + (a * a).sum()")
    return generated_function(lines, f"<generated mixed {seed}>")


@pytest.mark.parametrize("seed", range(12))
def test_generated_mixed_control_flow_equals_eager_with_gradients(seed):
    fn, source = mixed_program(seed)
    grad = ms.grad(fn, grad_position=(0, 1))
    jitted, jitted_grad = whole_graph(fn), whole_graph(lambda x, y, k: grad(x, y, k))
    rng = np.random.default_rng(seed + 7)
    for _ in range(2):
        x, y = ms.Tensor(rng.standard_normal((2, 3))), ms.Tensor(rng.standard_normal((2, 3)))
        k = ms.Tensor(int(rng.integers(0, 3)), ms.int32)
        np.testing.assert_allclose(jitted(x, y, k).asnumpy(), fn(x, y, k).asnumpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=source)
        for got, want in zip(jitted_grad(x, y, k), grad(x, y, k)):
            np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-8, atol=1e-10, err_msg=source)
    assert not ms.explain(jitted, x, y, k).breaks_graph, source
