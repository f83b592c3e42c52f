"""Skipped subtrees (frame_eval/eval_frame.h): pure-Python code whose runs never reach
captured code runs with the frame hook off, so CPython inlines its calls again; whatever
is captured below such code is still found and compiled, and results never change."""
import threading

import numpy as np
import pytest

import pijit as ms
from pijit import _C


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def apply(f, x):
    return f(x)


def pure(x):
    return [x, x]


def tensor_work(x):
    return ms.ops.exp(x) * 2 + 1


@pytest.fixture(autouse=True)
def fresh():
    ms.reset()
    yield
    ms.disable()
    ms.reset()


def frames_seen(fn, *args):
    before = _C._hook_stats()
    out = fn(*args)
    after = _C._hook_stats()
    return out, after["frames"] - before["frames"], after["subtree_runs"] - before["subtree_runs"]


def fib_skipped_after_six_runs(n):
    """Turns the hook on and runs fib(n) six times; by then fib's subtree is skipped."""
    ms.enable()
    for _ in range(6):
        fib(n)
    assert _C._skip_info(fib)["subtree"]


def test_recursion_runs_with_the_hook_off_once_it_is_known_pure():
    ms.enable()
    assert fib(15) == 610  # the first call analyses fib: no tensor work, skipped from now on
    second, seen_second, subtree_second = frames_seen(fib, 15)
    assert second == 610
    assert seen_second > 5  # inner calls go through the hook until fib has clean runs
    for _ in range(4):
        fib(15)
    info = _C._skip_info(fib)
    assert info["skip"] and info["subtree"] and not info["tainted"]
    counts = [frames_seen(fib, 15)[1:] for _ in range(8)]
    # Most runs: one frame seen (the outermost call), the rest inlined by CPython. Runs
    # 1, 2, 4, 8 after becoming a subtree are watched, which sees them all again.
    assert sum(1 for seen, subtree in counts if seen == 1 and subtree == 1) >= 4
    assert all(frames_seen(fib, 15)[0] == 610 for _ in range(3))


def test_code_captured_below_a_skipped_subtree_is_found_and_compiled():
    ms.enable()
    for i in range(20):
        assert apply(pure, i) == [i, i]
    assert _C._skip_info(apply)["subtree"]
    x = ms.Tensor(np.linspace(-1, 1, 8, dtype=np.float32))
    expected = np.exp(x.asnumpy()) * 2 + 1
    # The first tensor made below the subtree run ends its subtree status; that run finishes
    # eagerly with the hook back on, and the next run captures tensor_work.
    np.testing.assert_allclose(apply(tensor_work, x).asnumpy(), expected, rtol=1e-6)
    info = _C._skip_info(apply)
    assert info["tainted"] and not info["subtree"]
    for _ in range(2):
        np.testing.assert_allclose(apply(tensor_work, x).asnumpy(), expected, rtol=1e-6)
    stats = ms.get_code_extra(tensor_work)
    assert stats["compile_count"] == 1 and stats["cache_hits"] >= 1
    # From now on every call of apply is watched, and tensor_work keeps hitting its cache.
    hits = stats["cache_hits"]
    for _ in range(5):
        np.testing.assert_allclose(apply(tensor_work, x).asnumpy(), expected, rtol=1e-6)
    assert ms.get_code_extra(tensor_work)["cache_hits"] == hits + 5


def test_watched_runs_find_captured_code_that_makes_no_tensor_below_a_subtree():
    def rows(t):  # reads a tensor's size, makes no tensor: the hook must see it
        return t.shape[0] * 2

    ms.enable()
    for i in range(20):
        apply(pure, i)
    assert _C._skip_info(apply)["subtree"]
    x = ms.Tensor(np.zeros((3, 2), dtype=np.float32))
    for _ in range(70):  # run 64 at the latest is watched
        assert apply(rows, x) == 6
    assert _C._skip_info(apply)["tainted"]
    assert ms.get_code_extra(rows)["call_count"] >= 1


def test_jit_calls_and_capture_regions_below_a_skipped_subtree_still_compile():
    ms.enable()
    for i in range(20):
        apply(pure, i)
    assert _C._skip_info(apply)["subtree"]
    x = ms.Tensor(np.arange(6, dtype=np.float32))
    jitted = ms.jit(lambda t: t * 3 + 1, mode="PIJit")

    def region(t):
        with ms.capture():
            return tensor_work(t)

    for _ in range(10):
        np.testing.assert_array_equal(apply(jitted, x).asnumpy(), x.asnumpy() * 3 + 1)
        np.testing.assert_allclose(apply(region, x).asnumpy(), np.exp(x.asnumpy()) * 2 + 1,
                                   rtol=1e-6)
    assert ms.get_code_extra(jitted)["compile_count"] == 1
    assert ms.get_code_extra(jitted)["cache_hits"] == 9
    # region runs captured (tensor_work inlined into its graph) from its second call on.
    assert ms.get_code_extra(region)["graph_count"] >= 1
    assert ms.get_code_extra(region)["cache_hits"] >= 8


def test_exceptions_leave_skipped_subtrees_unchanged_and_the_hook_on():
    def boom(n):
        if n == 0:
            raise KeyError("deep")
        return boom(n - 1)

    ms.enable()
    for _ in range(12):
        with pytest.raises(KeyError, match="deep"):
            boom(10)
    assert _C._skip_info(boom)["subtree"]
    with pytest.raises(KeyError, match="deep"):
        boom(10)
    # The hook is back after the subtree raised: the next frame is seen.
    assert frames_seen(pure, 1)[1] >= 1


def test_disable_inside_a_skipped_subtree_leaves_the_hook_off():
    def call(f):
        return f()

    ms.enable()
    for _ in range(12):
        call(lambda: 1)
    assert _C._skip_info(call)["subtree"]
    for _ in range(3):  # past the watched runs
        call(lambda: 1)
    assert frames_seen(call, ms.disable)[2] == 1
    assert not _C._hook_active()
    assert frames_seen(pure, 1)[1] == 0


def test_a_second_python_thread_keeps_the_hook_on():
    fib_skipped_after_six_runs(12)
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        out, seen, subtree = frames_seen(fib, 12)
        assert out == 144 and subtree == 0 and seen > 100
    finally:
        release.set()
        worker.join()
    assert frames_seen(fib, 12)[2] == 1


def test_reset_forgets_skipped_subtrees():
    fib_skipped_after_six_runs(10)
    ms.reset()
    assert not _C._skip_info(fib)["subtree"]
    assert frames_seen(fib, 10)[2] == 0
