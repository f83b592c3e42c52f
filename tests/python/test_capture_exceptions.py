"""Exceptions in captured code: exception objects made in the function (their args, str,
isinstance) are values of the graph, rebuilt as new exception objects when they leave it;
`raise` caught by an `except` of the same function jumps to the handler inside the graph.
A raise that leaves the function ends the graph and Python raises the same exception from the
user's line; handlers that need Python's live exception state (no clause matches, `finally`
on the exceptional path, a bare `raise`) break at the raise and Python handles them. Each
case against eager Python (values, printed output, module state, exceptions)."""
import sys
import traceback

import pytest

import pijit as ms
from graph_break_testutil import _reset_state  # noqa: F401 (autouse fixture)
from graph_break_testutil import LOG, X, compare, compare_as_one_graph


class AppError(ValueError):
    """A user exception with BaseException's constructor."""


class CodedError(Exception):
    def __init__(self, msg, code):
        super().__init__(msg)
        self.code = code


def object_made_and_read(x):
    e = ValueError("bad value", 3)
    return x + len(e.args) + e.args[1], str(e), isinstance(e, Exception), str(KeyError("k"))


def caught_in_the_same_function(x, k="key"):
    s = x
    try:
        s = s * 2.0
        raise KeyError(k)
    except KeyError as err:
        s = s + len(err.args)
        LOG.append(("caught", err.args))
    return s


def second_clause_and_tuple(x):
    try:
        raise AppError("app", 1)
    except (TypeError, KeyError):
        y = x - 100.0
    except (AttributeError, ValueError) as e:
        y = x + e.args[1]
    return y


def raise_class_caught(x):
    try:
        raise IndexError
    except LookupError as e:
        return x + len(e.args)


def nested_handlers(x):
    s = x
    for i in range(3):
        try:
            if i == 1:
                raise ValueError(i)
            s = s + 1.0
        except ValueError as e:
            s = s * e.args[0] + 0.5
    return s


def else_and_finally_without_raise(x):
    try:
        y = x * 3.0
    except ValueError:
        y = x
    else:
        y = y + 1.0
    finally:
        LOG.append("finally")
    return y


@pytest.mark.parametrize("fn", [object_made_and_read, caught_in_the_same_function,
                                second_clause_and_tuple, raise_class_caught, nested_handlers,
                                else_and_finally_without_raise])
def test_exceptions_inside_the_function_are_one_graph(fn, capsys):
    compare_as_one_graph(fn, capsys=capsys)


def returned_exception(x):
    e = AppError("made", 2)
    e.note = "extra"
    return x * 2.0, e


def test_a_returned_exception_is_a_new_object_each_call():
    jf = ms.jit(returned_exception, mode="PIJit")
    _, e1 = jf(X())
    _, e2 = jf(X())
    for e in (e1, e2):
        assert type(e) is AppError and e.args == ("made", 2) and e.note == "extra"
        assert e.__traceback__ is None
    assert e1 is not e2
    assert ms.get_code_extra(jf)["total_break_count"] == 0


def raises_out(x, flag):
    y = x + 1.0
    if flag:
        raise AppError(f"flag was {flag}")
    return y


def uncaught_by_the_clauses(x):
    try:
        raise KeyError("not a value error")
    except ValueError:
        return x
    return x + 1.0


def finally_on_the_exceptional_path(x):
    try:
        raise KeyError("through finally")
    finally:
        LOG.append("finally ran")


def bare_reraise(x):
    try:
        raise ValueError("again")
    except ValueError:
        LOG.append("handled once")
        raise


def own_constructor(x):
    try:
        raise CodedError("coded", 7)
    except CodedError as e:
        return x + e.code


def os_error(x):
    try:
        raise OSError(2, "missing")
    except OSError as e:
        return x + e.errno


@pytest.mark.parametrize("fn,args", [
    (raises_out, (X(), True)), (raises_out, (X(), False)), (uncaught_by_the_clauses, (X(),)),
    (finally_on_the_exceptional_path, (X(),)), (bare_reraise, (X(),)), (own_constructor, (X(),)),
    (os_error, (X(),))])
def test_exceptions_python_handles_stay_correct(fn, args, capsys):
    compare(fn, lambda: args, capsys=capsys)


def test_a_raise_that_leaves_the_function_shows_the_users_line():
    jf = ms.jit(raises_out, mode="PIJit")
    for _ in range(2):
        with pytest.raises(AppError, match="flag was 1") as info:
            jf(X(), 1)
        frames = traceback.extract_tb(info.value.__traceback__)
        assert frames[-1].name == "raises_out"
        assert frames[-1].line == 'raise AppError(f"flag was {flag}")'
    assert sys.exc_info()[0] is None


def caught_and_kept(x):
    try:
        raise KeyError("kept")
    except KeyError as e:
        err = e
    LOG.append(err)
    return x + 1.0, err


def test_a_caught_exception_that_leaves_the_function_has_its_traceback():
    # Python gives a raised exception its traceback; one caught in the graph and then
    # returned or stored would be rebuilt without it, so such a function runs in Python.
    jf = ms.jit(caught_and_kept, mode="PIJit")
    for _ in range(2):
        LOG.clear()
        _, err = jf(X())
        assert type(err) is KeyError and err.args == ("kept",)
        assert err.__traceback__ is not None and LOG == [err]


def caught_and_returned(x):
    try:
        raise KeyError("kept")
    except KeyError as e:
        err = e
    return x + 1.0, err


def test_a_caught_exception_returned_runs_in_python():
    jf = ms.jit(caught_and_returned, mode="PIJit")
    for _ in range(2):
        _, err = jf(X())
        assert type(err) is KeyError and err.__traceback__ is not None
    assert "raised and caught" in str(ms.get_code_extra(jf)["all_reasons"])


class Finalized:
    def __del__(self):
        LOG.append("finalized")


def raises_after_a_break(x):
    if x.sum() > 0:  # a branch on tensor data: the raise runs in a resume function
        raise ValueError("after a break")
    return x


jitted_raiser = ms.jit(raises_after_a_break, mode="PIJit")


def caller_holding_an_object(x):
    held = Finalized()
    try:
        jitted_raiser(x)
    except ValueError:
        LOG.append("caught")
    return len(LOG) + (held is not None)


def test_an_exception_raised_past_a_break_keeps_no_frame_alive():
    # The exception's traceback holds the frames it passed through; none of them may hold the
    # exception in turn (a cycle), or the caller's locals would live until the next garbage
    # collection instead of being finalized when the caller returns, as in Python.
    import gc
    gc.disable()
    try:
        for _ in range(2):
            LOG.clear()
            caller_holding_an_object(X() + 10.0)
            assert LOG == ["caught", "finalized"]
    finally:
        gc.enable()
