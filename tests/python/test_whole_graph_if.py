"""`if` on a tensor's value in whole-graph mode (capture_mode="ast"): both ways are captured
as the branches of one cond node of the graph, of which only the way taken runs, equal to
eager Python for either way, gradients included; what cannot be joined is a GraphBreakError
that says why."""
import re

import numpy as np
import pytest

import pijit as ms
from pijit import ops
from whole_graph_testutil import generated_function, whole_graph


def t(*values):
    return ms.Tensor(np.array(values, dtype=np.float32))


POSITIVE, NEGATIVE = t(1.0, 2.0, 3.0), t(-1.0, -2.0, 0.5)


def one_graph(jitted, *args):
    info = ms.explain(jitted, *args)
    assert not info.breaks_graph and not info.break_reasons, info
    assert "cond(" in info.graphs[0]
    return info


def if_else(x, y):
    if x.sum() > 0:
        z = x * 2
        w = y
    else:
        z = y - 1
        w = x
    return z + w


def if_without_else(x):
    z = x + 1
    if x.mean() < 0:
        z = z * -3
    return z


def returns_in_both(x):
    if x[0] > 0:
        return x * x, 1
    return x - 10, 1


def ternary(x):
    return (x + 1 if x.max() > 2 else x - 1) * 2


def nested(x, y):
    if x.sum() > 0:
        if y.sum() > 0:
            z = x + y
        else:
            z = x - y
    else:
        z = x * y
    return z


def python_choice_inside(x, scale):
    if x.sum() > 0:
        z = x * scale if scale > 1 else x
    else:
        z = -x
    return z


def temporaries_in_one_way(x, y):
    if x.sum() > 0:
        doubled = x * 2  # assigned in this way only, not read after the if
        z = doubled + y
    else:
        parts = (x, y)
        z = parts[0] - parts[1]
    return z


@pytest.mark.parametrize("x", [POSITIVE, NEGATIVE], ids=["true", "false"])
def test_both_ways_equal_eager_in_one_graph(x):
    y = t(0.5, 4.0, -2.0)
    for fn, args in [(if_else, (x, y)), (if_without_else, (x,)), (ternary, (x,)),
                     (nested, (x, y)), (nested, (x, -y)), (python_choice_inside, (x, 3)),
                     (temporaries_in_one_way, (x, y))]:
        jitted = whole_graph(fn)
        np.testing.assert_allclose(jitted(*args).asnumpy(), fn(*args).asnumpy(), rtol=1e-6,
                                   err_msg=fn.__name__)
        one_graph(jitted, *args)


def returns_in_one_way(x):
    if x.sum() > 0:
        z = x * 5
    else:
        return x, 0.0
    return z + 1, 0.0


@pytest.mark.parametrize("x", [POSITIVE, NEGATIVE], ids=["true", "false"])
def test_a_return_in_one_way_runs_the_other_to_its_return(x):
    jitted = whole_graph(returns_in_one_way)
    np.testing.assert_allclose(jitted(x)[0].asnumpy(), returns_in_one_way(x)[0].asnumpy(), rtol=1e-6)
    one_graph(jitted, x)


@pytest.mark.parametrize("x", [POSITIVE, NEGATIVE], ids=["true", "false"])
def test_returns_from_both_ways_join(x):
    jitted = whole_graph(returns_in_both)
    got, want = jitted(x), returns_in_both(x)
    np.testing.assert_allclose(got[0].asnumpy(), want[0].asnumpy(), rtol=1e-6)
    assert got[1] == want[1] == 1
    one_graph(jitted, x)


def test_one_compile_serves_both_ways():
    jitted = whole_graph(if_else)
    y = t(1.0, 1.0, 1.0)
    for x in (POSITIVE, NEGATIVE, POSITIVE):
        np.testing.assert_allclose(jitted(x, y).asnumpy(), if_else(x, y).asnumpy(), rtol=1e-6)
    assert ms.get_code_extra(jitted)["compile_count"] == 1


def loss(x):
    if x.sum() > 0:
        y = x * x
    else:
        y = ops.sin(x) * 3
    return y.sum()


@pytest.mark.parametrize("x", [POSITIVE, NEGATIVE], ids=["true", "false"])
def test_gradients_flow_to_the_way_taken(x):
    grad = ms.grad(loss)

    def step(x):
        return grad(x)

    jitted = whole_graph(step)
    want = 2 * x.asnumpy() if x.asnumpy().sum() > 0 else 3 * np.cos(x.asnumpy())
    np.testing.assert_allclose(jitted(x).asnumpy(), want, rtol=1e-5)
    np.testing.assert_allclose(grad(x).asnumpy(), want, rtol=1e-5)  # eager agrees


def guarded_sqrt(x):
    if x.sum() > 0:
        y = ops.sqrt(x)
    else:
        y = x * 0  # sqrt of these values is NaN; only the way taken may count
    return y.sum()


def guarded_log(x):
    if x.min() > 0:
        return ops.log(x).sum()
    return (x * 2).sum()


@pytest.mark.parametrize("fn", [guarded_sqrt, guarded_log])
@pytest.mark.parametrize("x", [POSITIVE, NEGATIVE], ids=["true", "false"])
def test_the_way_not_taken_leaves_no_nan_in_values_or_gradients(fn, x):
    grad = ms.grad(fn)
    jitted_value, jitted_grad = whole_graph(fn), whole_graph(lambda x: grad(x))
    np.testing.assert_array_equal(jitted_value(x).asnumpy(), fn(x).asnumpy())
    got, want = jitted_grad(x).asnumpy(), grad(x).asnumpy()
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert "cond_grad(" in ms.explain(jitted_grad, x).graphs[0]


def different_shapes(x):
    if x.sum() > 0:
        z = x
    else:
        z = x[:2]
    return z


def different_python_values(x):
    n = 1
    if x.sum() > 0:
        n = 2
    return x * n


def prints_in_a_way(x):
    if x.sum() > 0:
        print("positive")
    return x


@pytest.mark.parametrize("fn, message", [
    # (3.12 copies the return into both ways: the value is `z` or the return value.)
    (different_shapes, r"is a Float32\(3,\) tensor when the tensor condition is true and a Float32\(2,\) tensor when "
                       "it is false"),
    (different_python_values, "`n` is 2 when the tensor condition is true and 1 when it is false"),
    (prints_in_a_way, "side effect"),
])
def test_what_cannot_be_joined_says_why(fn, message):
    jitted = whole_graph(fn)
    with pytest.raises(ms.GraphBreakError, match=message):
        jitted(POSITIVE)
    reason = ms.explain(jitted, POSITIVE).break_reasons[0]
    assert re.search(message, str(reason["explanation"])) or re.search(message, reason["text"])


def test_a_condition_of_many_elements_is_ambiguous_as_in_python():
    def many(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(ValueError, match="ambiguous"):
        whole_graph(many)(POSITIVE)


def test_bytecode_mode_still_breaks_at_the_if():
    jitted = ms.jit(if_else, capture_mode="bytecode")
    y = t(1.0, 1.0, 1.0)
    np.testing.assert_allclose(jitted(NEGATIVE, y).asnumpy(), if_else(NEGATIVE, y).asnumpy())
    assert ms.explain(jitted, NEGATIVE, y).breaks_graph


# ---- generated programs: nested ifs, early returns, against eager -------------------------------

EXPRS = ["{u} + {v}", "{u} * 0.5", "ops.exp({u} * 0.1)", "{u} - y", "ops.relu({u})", "-{u}"]


def generate(rng, depth, indent, lines):
    """Statements over the locals a and b (tensors of one shape): assignments, and ifs on a
    tensor's value whose ways nest, assign and sometimes return."""
    for _ in range(rng.integers(1, 4)):
        pad = " " * indent
        kind = rng.random()
        if kind < 0.35 and depth > 0:
            var = "ab"[rng.integers(2)]
            lines.append(f"{pad}if ({var}).sum() {'<>'[rng.integers(2)]} {rng.normal():.2f}:")
            generate(rng, depth - 1, indent + 4, lines)
            if rng.random() < 0.6:
                lines.append(f"{pad}else:")
                generate(rng, depth - 1, indent + 4, lines)
        elif kind < 0.42 and indent > 4:
            lines.append(f"{pad}return a * 2 - b")
            return
        else:
            target, u, v = ("ab"[rng.integers(2)] for _ in range(3))
            lines.append(f"{pad}{target} = " + EXPRS[rng.integers(len(EXPRS))].format(u=u, v=v))


def program(seed):
    rng = np.random.default_rng(seed)
    lines = ["def prog(x, y):", "    a = x + 1", "    b = y * 2"]
    generate(rng, 2, 4, lines)
    lines.append("    return a + b * 3")
    return generated_function(lines, f"<generated {seed}>")


@pytest.mark.parametrize("seed", range(40))
def test_generated_ifs_equal_eager_for_every_way(seed):
    fn, source = program(seed)
    jitted = whole_graph(fn)
    rng = np.random.default_rng(1000 + seed)
    for _ in range(6):  # inputs of both signs and scales take different ways
        x = ms.Tensor((rng.standard_normal((2, 3)) * rng.choice([0.1, 1, 5])).astype(np.float32))
        y = ms.Tensor((rng.standard_normal((2, 3)) * rng.choice([0.1, 1, 5])).astype(np.float32))
        np.testing.assert_allclose(jitted(x, y).asnumpy(), fn(x, y).asnumpy(), rtol=1e-5, atol=1e-5,
                                   err_msg=source)
    assert ms.get_code_extra(jitted)["compile_count"] == 1, source
