"""Guards shared across a code object's cache entries (guards/shared.h): a guard several
entries have is evaluated once per call, entries fail on what distinguishes them first, and
the entry chosen is always one whose guards all pass."""
import gc
import itertools

import numpy as np
import pytest

import pijit as ms
from pijit import _C


@pytest.fixture(autouse=True)
def fresh():
    ms.reset()
    limit = _C._cache_limit()
    _C._set_cache_limit(32)
    yield
    _C._set_cache_limit(limit)
    ms.reset()


def t(dtype, shape):
    return ms.Tensor(np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape) + 1)


DTYPES = [np.float32, np.float64, np.int32, np.int64, np.float16, np.int8, np.int16, np.uint8]


def evaluations(fn, *args):
    before = _C._guard_evaluations()
    out = fn(*args)
    return out, _C._guard_evaluations() - before


def test_a_miss_over_many_entries_evaluates_shared_guards_once():
    @ms.jit(mode="PIJit")
    def f(x, y, k):
        return x + y * k if k < 1000 else x  # entries depend on k's value

    x, y = t(np.float32, (4,)), t(np.float32, (4,))
    for k in range(8):
        f(x, y, k)
    assert ms.get_code_extra(f)["cache_entries"] == 8
    # A k no entry takes: the most recently used entry fails on its own program, each other
    # one on its own k guard, checked first; x and y are never evaluated (all eight have them).
    out, n = evaluations(f, x, y, 100)
    np.testing.assert_array_equal(out.asnumpy(), x.asnumpy() + y.asnumpy() * 100)
    assert n == 7
    # The miss compiled a ninth entry. The least recently used entry (k=1): the seven others
    # but the most recent fail on k, then its k, x and y are evaluated once each.
    assert ms.get_code_extra(f)["cache_entries"] == 9
    out, n = evaluations(f, x, y, 1)
    np.testing.assert_array_equal(out.asnumpy(), x.asnumpy() + y.asnumpy())
    assert n == 7 + 3
    # Checking each program on its own would have evaluated x and y for every entry.


def test_entries_that_differ_in_one_tensor_layout_are_found_by_lookup():
    @ms.jit(mode="PIJit")
    def f(x, y, z):
        return x + y + z

    x, y = t(np.float32, (4,)), t(np.float32, (4,))
    zs = [t(d, (4,)) for d in DTYPES] + [t(np.float32, (1, 4)), t(np.float32, (2, 1, 4))]
    for z in zs:
        f(x, y, z)
    assert ms.get_code_extra(f)["cache_entries"] == len(zs)
    # No entry has a bool z: the lookup finds none and no guard is evaluated.
    out, n = evaluations(f, x, y, ms.Tensor(np.ones(4, dtype=np.bool_)))
    np.testing.assert_array_equal(out.asnumpy(), x.asnumpy() + y.asnumpy() + 1)
    assert n == 0
    # Each entry in turn (always the least recently used one): its three guards only.
    for z in zs:
        out, n = evaluations(f, x, y, z)
        np.testing.assert_array_equal(out.asnumpy(), (x + y + z).asnumpy())
        assert n == 3
    # A transposed view has other strides: no entry takes it, and the result is still right.
    zt = ms.Tensor(np.arange(4, dtype=np.float32).reshape(2, 2).T.copy()).transpose(1, 0)
    out = f(x.reshape(2, 2), y.reshape(2, 2), zt)
    np.testing.assert_array_equal(out.asnumpy(), (x.reshape(2, 2) + y.reshape(2, 2) + zt).asnumpy())


def test_the_most_recently_used_entry_checks_its_own_program():
    @ms.jit(mode="PIJit")
    def f(x):
        return x * 2

    x, x64 = t(np.float32, (3,)), t(np.float64, (3,))
    f(x64)
    f(x)
    out, n = evaluations(f, x)
    np.testing.assert_array_equal(out.asnumpy(), x.asnumpy() * 2)
    assert n == 0
    out, n = evaluations(f, x64)  # the other entry, through the shared tables
    np.testing.assert_array_equal(out.asnumpy(), x64.asnumpy() * 2)
    assert n == 1


SCALE = 2


def test_random_calls_over_mixed_entries_match_eager():
    def body(x, y, k, flag):
        r = x * k + y * SCALE
        return r - 1 if flag else r

    f = ms.jit(body, mode="PIJit")
    _C._set_cache_limit(128)
    rng = np.random.default_rng(0)
    tensors = [t(d, s) for d, s in itertools.product([np.float32, np.int32], [(3,), (2, 3)])]
    for _ in range(150):
        x = tensors[rng.integers(len(tensors))]
        y = x if rng.random() < 0.3 else tensors[rng.integers(len(tensors))]
        k = int(rng.integers(2))
        flag = bool(rng.integers(2))
        try:
            want = body(x, y, k, flag)
        except Exception as e:  # noqa: BLE001 - the jitted call must raise the same
            with pytest.raises(type(e)):
                f(x, y, k, flag)
            continue
        got = f(x, y, k, flag)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
    assert ms.get_code_extra(f)["cache_entries"] > 1


def test_same_object_guards_tell_aliased_arguments_apart():
    @ms.jit(mode="PIJit")
    def f(a, b):
        a[0] = 10
        return b * 1

    x, y = t(np.float32, (3,)), t(np.float32, (3,))
    np.testing.assert_array_equal(f(x, y).asnumpy(), [1, 2, 3])
    x2 = t(np.float32, (3,))
    np.testing.assert_array_equal(f(x2, x2).asnumpy(), [10, 2, 3])
    x3, y3 = t(np.float32, (3,)), t(np.float32, (3,))
    np.testing.assert_array_equal(f(x3, y3).asnumpy(), [1, 2, 3])
    x4 = t(np.float32, (3,))
    np.testing.assert_array_equal(f(x4, x4).asnumpy(), [10, 2, 3])


def test_entries_guarding_dead_objects_are_dropped_and_the_table_rebuilt():
    class Box:
        def __init__(self, v):
            self.v = v

    @ms.jit(mode="PIJit")
    def f(box, x):
        return x * box.v

    x = t(np.float32, (2,))
    keep = Box(3.0)
    np.testing.assert_array_equal(f(keep, x).asnumpy(), x.asnumpy() * 3)
    for v in (4.0, 5.0):
        b = Box(v)
        np.testing.assert_array_equal(f(b, x).asnumpy(), x.asnumpy() * v)
        del b
        gc.collect()
    for v in (6.0, 7.0):
        np.testing.assert_array_equal(f(Box(v), x).asnumpy(), x.asnumpy() * v)
    np.testing.assert_array_equal(f(keep, x).asnumpy(), x.asnumpy() * 3)
