"""Generator expressions and generator functions consumed whole by a builtin (tuple, list, sum,
min, max, sorted, all, any) or by unpacking are captured in the graph; a generator a consumer
may stop early on, that is kept, or that a `for` loop or comprehension takes (its body runs
between the items in Python and could change what the generator reads next) runs in Python.
Every test compares jitted and eager runs."""
import numpy as np

import pijit as ms
from graph_break_testutil import _reset_state  # noqa: F401 (autouse fixture)
from graph_break_testutil import LOG, X, compare


def Y():
    return ms.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5)


def one_graph(stats):
    assert stats["graph_count"] == 1, stats
    assert stats["total_break_count"] == 0, stats


def tuple_of_genexpr(x, y):
    ts = tuple(t * 2.0 for t in (x, y))
    return ts[0] + ts[1]


def test_tuple_of_a_generator_expression_is_one_graph(capsys):
    stats, _, _ = compare(tuple_of_genexpr, lambda: (X(), Y()), capsys=capsys)
    one_graph(stats)


def sum_of_genexpr(x, y):
    return sum(t * t for t in [x, y, x]) + sum(i * 2 for i in range(4))


def test_sum_of_a_generator_expression(capsys):
    stats, _, _ = compare(sum_of_genexpr, lambda: (X(), Y()), capsys=capsys)
    one_graph(stats)


def shape_max(x):
    n = max(x.shape[i] for i in range(x.ndim))
    m = min(d for d in x.shape)
    return x * n + m, sorted(d * -1 for d in x.shape), list(str(d) for d in x.shape)


def test_min_max_sorted_list_over_shapes(capsys):
    stats, _, _ = compare(shape_max, capsys=capsys)
    one_graph(stats)


def all_any(x, ps):
    if all(isinstance(p, int) for p in ps) and not any(p < 0 for p in ps):
        return x + sum(ps)
    return x - 1.0


def test_all_and_any_over_python_values(capsys):
    stats, _, _ = compare(all_any, lambda: (X(), (1, 2, 3)), capsys=capsys)
    one_graph(stats)
    compare(all_any, lambda: (X(), (1, -2, "a")), capsys=capsys)


def all_with_tensor_work(x, y):
    ok = all(isinstance(t * 2.0, ms.Tensor) for t in (x, y))
    return x + 1.0 if ok else x


def test_all_over_items_computing_tensors_is_not_folded(capsys):
    compare(all_with_tensor_work, lambda: (X(), Y()), capsys=capsys)


def loop_over_genexpr(x, y):
    acc = x
    for t in (u * 3.0 for u in (x, y)):
        acc = acc + t
    return acc


def test_for_loop_over_a_generator_expression(capsys):
    # The loop steps the generator an item at a time (test_capture_generator_loops.py).
    stats, _, _ = compare(loop_over_genexpr, lambda: (X(), Y()), capsys=capsys)
    one_graph(stats)


def loop_body_changes_what_the_generator_reads(x, y):
    seen = []
    acc = x * 0.0
    for n in (len(seen) for _ in range(3)):
        seen.append(n)
        acc = acc + y * n
    return acc, seen


def test_a_loop_whose_body_changes_what_the_generator_reads_next(capsys):
    # Python runs the generator between the loop's iterations (it yields 0, 1, 2 here); run
    # ahead of the loop at capture it would yield 0, 0, 0. Stepped item by item, it is one graph.
    stats, _, _ = compare(loop_body_changes_what_the_generator_reads, lambda: (X(), Y()),
                          capsys=capsys)
    one_graph(stats)


def _halves_and_doubles(t, n):
    for i in range(n):
        yield t * (0.5 * i)
        yield t * (2.0 + i)


def generator_function_consumed_whole(x, y):
    a, b = _halves_and_doubles(x, 1)
    return sum(_halves_and_doubles(y, 2)) + list(_halves_and_doubles(x, 2))[3] + a * b


def test_generator_functions_consumed_whole_are_one_graph(capsys):
    stats, _, _ = compare(generator_function_consumed_whole, lambda: (X(), Y()), capsys=capsys)
    one_graph(stats)


def _logging_generator(t):
    LOG.append("started")
    yield t * 2.0


def generator_with_an_effect(x):
    return sum(_logging_generator(x))


def test_a_generator_function_with_an_effect_runs_in_python(capsys):
    compare(generator_with_an_effect, lambda: (X(),), capsys=capsys)


def nested_genexpr(x, y):
    rows = ((x, y), (y, x))
    return \
        sum(sum(t for t in row) for row in rows)


def test_nested_generator_expressions(capsys):
    stats, _, _ = compare(nested_genexpr, lambda: (X(), Y()), capsys=capsys)
    one_graph(stats)


def closure_genexpr(x, y):
    k = 3.0
    return tuple(t * k for t in (x, y))


def test_generator_expression_reading_a_closure_variable(capsys):
    compare(closure_genexpr, lambda: (X(), Y()), capsys=capsys)


def generator_kept(x, y):
    g = (t + 1.0 for t in (x, y))
    first = next(g)
    return first + sum(g)


def test_generator_consumed_by_next_runs_in_python(capsys):
    compare(generator_kept, lambda: (X(), Y()), capsys=capsys)


def generator_iterated_twice(x, y):
    g = (t + 1.0 for t in (x, y))
    a = list(g)
    b = list(g)
    return a[0] + a[1], len(b)


def test_generator_iterated_twice_is_empty_the_second_time(capsys):
    compare(generator_iterated_twice, lambda: (X(), Y()), capsys=capsys)


def generator_with_effects(x, xs):
    return x + sum(LOG.append(v) or v for v in xs)


def test_generator_with_side_effects_keeps_eager_order(capsys):
    compare(generator_with_effects, lambda: (X(), [1, 2]), capsys=capsys)


def zip_of_generator(x, ps):
    return x + sum(a * b for a, b in zip((p for p in ps), (1, 2)))


def test_zip_of_a_generator_matches_eager(capsys):
    compare(zip_of_generator, lambda: (X(), (3, 4, 5)), capsys=capsys)


def generator_raises(x, ps):
    return x + sum(10 // p for p in ps)


def test_generator_raising_matches_eager(capsys):
    compare(generator_raises, lambda: (X(), (1, 0)), capsys=capsys)
    compare(generator_raises, lambda: (X(), (1, 2)), capsys=capsys)
