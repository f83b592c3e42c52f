"""Jitted functions that take **kwargs (and *args with keyword-only parameters): the dict is
one more parameter slot, its keys guarded in order and its values read as sources of their
own; jitted results equal eager ones, the graph does not break, and explain() sees them."""
import numpy as np
import pytest

import pijit


def T(*shape):
    return pijit.Tensor(np.arange(np.prod(shape), dtype=np.float32).reshape(shape) - 1.0)


def same(a, b):
    if isinstance(a, pijit.Tensor):
        return isinstance(b, pijit.Tensor) and np.array_equal(a.asnumpy(), b.asnumpy())
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return type(a) is type(b) and a == b


def scaled(x, **k):
    y = x * k["s"]
    if "shift" in k:
        y = y + k["shift"]
    return y, len(k), sorted(k)


def mixed(x, *a, scale=2.0, **k):
    k["added"] = 1  # the callee's own dict: the caller's is untouched
    return x * scale + sum(a), k.get("q", 0), len(k)


def tensors_in_kwargs(x, **k):
    return x @ k["w"] + k.get("b", 0.0)


def with_break(x, **k):
    y = x * k["s"]
    pijit.graph_break()
    return y + k.get("b", 10.0)


CASES = [
    (scaled, [((T(3),), dict(s=3.0)), ((T(3),), dict(s=3.0)), ((T(3),), dict(s=4.0, shift=1.0)),
              ((T(3),), dict(shift=1.0, s=4.0)), ((T(2, 2),), dict(s=2.0))]),
    (mixed, [((T(3), 1.0, 2.0), {}), ((T(3), 1.0, 2.0), dict(scale=3.0, q=1)),
             ((T(3),), dict(q=1, scale=3.0))]),
    (tensors_in_kwargs, [((T(2, 3),), dict(w=T(3, 4))), ((T(2, 3),), dict(w=T(3, 4), b=T(4)))]),
]


@pytest.mark.parametrize("fn, calls", CASES, ids=[c[0].__name__ for c in CASES])
def test_kwargs_functions_are_captured_whole_and_equal_eager(fn, calls):
    jf = pijit.jit(fn, capture_mode="bytecode")
    pijit.reset(jf)
    for args, kwargs in calls:
        caller_kwargs = dict(kwargs)
        got, want = jf(*args, **kwargs), fn(*args, **kwargs)
        assert same(got, want), (fn.__name__, kwargs, got, want)
        assert kwargs == caller_kwargs
    stats = pijit.get_code_extra(jf)
    assert stats["total_break_count"] == 0 and stats["eager_count"] == 0, stats["all_reasons"]
    assert stats["cache_hits"] >= 1 or len(calls) == stats["compile_count"]


def test_the_keys_and_their_order_are_guarded():
    jf = pijit.jit(scaled, capture_mode="bytecode")
    pijit.reset(jf)
    x = T(3)
    jf(x, s=3.0)
    jf(x, s=3.0)
    assert pijit.get_code_extra(jf)["compile_count"] == 1
    for kwargs in (dict(s=3.0, shift=1.0), dict(shift=1.0, s=3.0)):
        assert same(jf(x, **kwargs), scaled(x, **kwargs))
    assert pijit.get_code_extra(jf)["compile_count"] == 3


def test_a_graph_break_in_a_kwargs_function_resumes():
    jf = pijit.jit(with_break, capture_mode="bytecode")
    pijit.reset(jf)
    for kwargs in (dict(s=2.0, b=1.0), dict(s=2.0), dict(s=3.0, b=2.0)):
        assert same(jf(T(3), **kwargs), with_break(T(3), **kwargs))
    stats = pijit.get_code_extra(jf)
    assert stats["eager_count"] == 0 and stats["resume_functions"] >= 1


def test_missing_keyword_raises_as_eager():
    jf = pijit.jit(scaled, capture_mode="bytecode")
    with pytest.raises(KeyError, match="s"):
        jf(T(3), shift=1.0)


def test_explain_sees_varargs_and_kwargs():
    out = pijit.explain(mixed, T(3), 1.0, 2.0, scale=3.0, q=1)
    assert out.graph_count == 1 and out.graph_break_count == 0
    assert "args[3]" in out.guards  # the **kwargs dict's slot (x, scale, *a, **k)
