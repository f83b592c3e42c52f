"""Pure methods of constant strings ("SAME".lower(), mode.split(",")), reversed() of tuples,
ranges and lists made in the function, and zip(strict=...) are captured in the graph; each
case is compared with the eager run (results, output, side effects) and its break count
checked. Where Python would raise (a strict zip of unequal lengths) or where capture cannot
follow (an input list, an iterator zipped strictly), the function still gives eager's
outcome."""
import pytest

import pijit as ms
from graph_break_testutil import _reset_state  # noqa: F401 (autouse fixture)
from graph_break_testutil import X, compare


class Layer:
    pad_mode = "SAME"
    names = "conv,bn,relu"


LAYER = Layer()


def str_methods(x):
    scale = 2.0 if LAYER.pad_mode.lower() == "same" else 1.0
    parts = LAYER.names.split(",")
    if "-".join(("a", "b")).startswith("a-") and parts[-1].upper() == "RELU":
        scale = scale + len(parts)
    return x * scale + " pad ".strip().count("a")


def str_method_of_an_argument(x, mode):
    return x * (2.0 if mode.upper().removeprefix("V") == "ALID" else 5.0)


def reversed_sequences(x):
    acc = x
    for i in reversed(range(3)):
        acc = acc * 2.0 + i
    made = [x, x + 1.0]
    rows = [t * 2.0 for t in reversed(made)]
    return acc + sum(t * c for t, c in zip((x, x * 2.0), reversed((1.0, 2.0)))) + rows[0]


def reversed_then_mutated(x):
    made = [x, x + 1.0]
    it = reversed(made)
    made.append(x * 3.0)
    return next(it)


def zip_strict(x):
    return sum(a * b for a, b in zip((x, x * 2.0), [1.0, 3.0], strict=True))


def zip_strict_unequal(x):
    return sum(a * b for a, b in zip((x, x), (1.0, 2.0, 3.0), strict=True))


def zip_strict_left_early(x):
    out = x
    for a, b in zip((x, x), (1.0, 2.0, 3.0), strict=True):
        out = out + a * b
        break
    return out


@pytest.mark.parametrize("fn, breaks", [
    (str_methods, 0), (reversed_sequences, 0), (zip_strict, 0),
    (reversed_then_mutated, 1), (zip_strict_unequal, 1), (zip_strict_left_early, 1),
])
def test_against_eager(fn, breaks, capsys):
    stats, _, _ = compare(fn, lambda: (X(),), capsys=capsys)
    assert stats["total_break_count"] == breaks, stats["all_reasons"]


@pytest.mark.parametrize("mode", ["valid", "same", "VALID"])
def test_a_str_argument_is_guarded_by_value(mode, capsys):
    stats, _, _ = compare(str_method_of_an_argument, lambda: (X(), mode), capsys=capsys)
    assert stats["total_break_count"] == 0


def test_a_changed_attribute_string_recompiles():
    jf = ms.jit(str_methods, capture_mode="bytecode")
    want = str_methods(X())
    assert (jf(X()) - want).abs().max() == 0
    LAYER.pad_mode = "valid"
    try:
        want = str_methods(X())
        assert (jf(X()) - want).abs().max() == 0
    finally:
        LAYER.pad_mode = "SAME"
