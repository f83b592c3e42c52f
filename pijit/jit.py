"""jit (MindSpore 2.x's signature and the seeds' older `mode=` spelling), jit_class, capture
regions and transparent mode.

    jit(function=None, *, capture_mode="ast", jit_level=None, dynamic=0, fullgraph=False,
        backend="", **options)

capture_mode  "ast" (also mode="PSJit", bare @jit): the whole function is one graph;
              anything else raises GraphBreakError naming the construct and its line.
              "bytecode" (also mode="PIJit"): what can be captured is, the rest runs in
              Python between graphs (graph breaks); fullgraph=True makes breaks errors.
              "trace": captured from the bytecode as "bytecode" is (breaks allowed), so
              Python control flow is re-checked by guards on every call rather than frozen
              at the first one.
jit_level     None, "O1" or "O2": every optimisation (simplification, epilogues, fusion).
              "O0": the graph runs as captured (dead code removed), for debugging.
dynamic       0: sizes become symbolic after a call with other sizes; 1: every size of
              every tensor argument is symbolic from the first compile.
backend       "" / "default" / "ms_backend": pijit's own executor.
"""
import inspect
import os
import sysconfig
import types

from pijit import _C
from pijit.jit_config import jit_level_of

GraphBreakError = _C.GraphBreakError

_CAPTURE_MODES = ("ast", "bytecode", "trace")
_LEGACY_MODES = {"PSJit": "ast", "PIJit": "bytecode"}
_JIT_LEVELS = ("O0", "O1", "O2")
_BACKENDS = ("", "default", "ms_backend")
_KEYWORDS = ("capture_mode", "jit_level", "dynamic", "fullgraph", "backend", "mode",
             "jit_config")


def _resolve_mode(capture_mode, mode):
    if mode is not None and mode not in _LEGACY_MODES:
        raise ValueError(f"jit: mode must be one of {tuple(_LEGACY_MODES)}, got {mode!r} "
                         f"(or use capture_mode, one of {_CAPTURE_MODES})")
    if capture_mode is not None and capture_mode not in _CAPTURE_MODES:
        raise ValueError(f"jit: capture_mode must be one of {_CAPTURE_MODES}, got {capture_mode!r}")
    legacy = _LEGACY_MODES.get(mode)
    if capture_mode is not None and legacy is not None and capture_mode != legacy:
        raise ValueError(f"jit: mode={mode!r} means capture_mode={legacy!r}, which contradicts "
                         f"capture_mode={capture_mode!r}; give one of them")
    return capture_mode or legacy or "ast"


def _resolve_level(jit_level, jit_config):
    if jit_level is None and jit_config is not None:
        # MindSpore's JitConfig (or a dict of its fields): only its jit_level matters here.
        jit_level = jit_level_of(jit_config) or None
    if jit_level is not None and jit_level not in _JIT_LEVELS:
        raise ValueError(f"jit: jit_level must be one of {_JIT_LEVELS} (or None), got {jit_level!r}")
    return jit_level


def jit(function=None, *, capture_mode=None, jit_level=None, dynamic=0, fullgraph=False,
        backend="", mode=None, jit_config=None, **options):
    """Compiles `function` (a function, a bound method, a staticmethod or classmethod, a Cell
    instance or a Cell class) into guard-checked graphs; see the module docstring."""
    if options:
        raise TypeError(f"jit() got unexpected keyword arguments {sorted(options)}; it takes "
                        f"{', '.join(_KEYWORDS)}")
    # jit(f) of an already jitted f keeps it as compiled; settings given anew recompile it.
    keep_jitted = (mode, capture_mode, jit_level, jit_config, dynamic, fullgraph) == (
        None, None, None, None, 0, False)
    capture_mode = _resolve_mode(capture_mode, mode)
    level = _resolve_level(jit_level, jit_config)
    if isinstance(dynamic, bool) or dynamic not in (0, 1):
        raise ValueError(f"jit: dynamic must be 0 or 1, got {dynamic!r}")
    if backend not in _BACKENDS:
        raise ValueError(f"jit: backend must be one of {_BACKENDS}, got {backend!r}")
    if not isinstance(fullgraph, bool):
        raise TypeError(f"jit: fullgraph must be a bool, got {type(fullgraph).__name__}")
    settings = dict(fullgraph=fullgraph or capture_mode == "ast", optimize=level != "O0",
                    dynamic=bool(dynamic))

    def wrap(fn):
        if keep_jitted and isinstance(fn, _C.JitFunction):
            return fn
        return _compile(fn, settings)

    return wrap if function is None else wrap(function)


def _compile(fn, settings):
    from pijit.nn.cell import Cell  # the layers import jit: imported late

    if isinstance(fn, _C.JitFunction):
        return _C.JitFunction(fn.__wrapped__, **settings)
    if inspect.isfunction(fn):
        return _C.JitFunction(fn, **settings)
    if isinstance(fn, types.MethodType):
        return types.MethodType(_compile(fn.__func__, settings), fn.__self__)
    if isinstance(fn, (staticmethod, classmethod)):
        return type(fn)(_compile(fn.__func__, settings))
    if isinstance(fn, Cell):
        # The Cell itself, its construct compiled: calling it runs the graph.
        object.__setattr__(fn, "construct", _compile(type(fn).construct, settings).__get__(fn))
        return fn
    if isinstance(fn, type) and issubclass(fn, Cell):
        if "construct" not in fn.__dict__:
            raise TypeError(f"jit: Cell class {fn.__name__} defines no construct of its own")
        fn.construct = _compile(fn.__dict__["construct"], settings)
        return fn
    if isinstance(fn, type):
        raise TypeError(f"jit: {fn.__name__} is a class that is not a Cell; use jit_class to "
                        f"use its instances inside compiled functions")
    raise TypeError(f"jit: expected a function, a method, a Cell or a Cell class, got "
                    f"{type(fn).__name__}")


def jit_class(cls):
    """Marks a plain Python class whose instances compiled functions use (their attributes
    and methods are captured), as MindSpore's jit_class; returns the class."""
    from pijit.nn.cell import Cell

    if not isinstance(cls, type):
        raise TypeError(f"jit_class: expected a class, got {type(cls).__name__}")
    if issubclass(cls, Cell):
        raise TypeError(f"jit_class: {cls.__name__} is a Cell, which compiled functions use "
                        f"as it is; decorate plain classes only")
    cls.__ms_class__ = True
    return cls


class capture:
    """`with pijit.capture():` makes every Python frame started inside a capture candidate."""

    def __enter__(self):
        _C._capture_enter()
        return self

    def __exit__(self, *exc):
        _C._capture_exit()
        return False


def enable():
    """Captures every frame process-wide (pijit.disable() stops)."""
    _C._set_enabled(True)


def disable():
    _C._set_enabled(False)


def _skip_prefixes():
    paths = sysconfig.get_paths()
    prefixes = {os.path.dirname(os.path.abspath(__file__)) + os.sep}
    for key in ("stdlib", "platstdlib"):
        if paths.get(key):
            prefixes.add(paths[key] + os.sep)
    # site-packages lives under stdlib on POSIX: keep user libraries capturable.
    return sorted(prefixes)


_C._set_skip_prefixes(_skip_prefixes())


class _MutableInt(int):
    __ms_mutable__ = True


class _MutableFloat(float):
    __ms_mutable__ = True


class _MutableTuple(tuple):
    __ms_mutable__ = True


class _MutableList(list):
    __ms_mutable__ = True


def mutable(input_data, dynamic_len=False):
    """`input_data` (an int, a float, or a tuple or list of them and of tensors) marked as a
    variable input of compiled functions, as MindSpore's mutable: its numbers become graph
    inputs from the first compile instead of constants guarded by value, so new values do
    not recompile. Tensors are variable already and come back as they are. A tuple's or
    list's length stays fixed per compile (dynamic_len=True is accepted; another length
    compiles once more)."""
    from pijit._tensor import Tensor

    if not isinstance(dynamic_len, bool):
        raise TypeError(f"mutable: dynamic_len must be a bool, got {type(dynamic_len).__name__}")
    if isinstance(input_data, Tensor):
        return input_data
    _C._note_mutable()
    if isinstance(input_data, bool):
        raise TypeError("mutable: a bool cannot be mutable (MindSpore takes int, float, tuple, "
                        "list and dict)")
    if dynamic_len and not isinstance(input_data, (tuple, list)):
        raise ValueError(f"mutable: dynamic_len=True needs a tuple or a list, got "
                         f"{type(input_data).__name__}")
    if isinstance(input_data, int):
        return _MutableInt(input_data)
    if isinstance(input_data, float):
        return _MutableFloat(input_data)
    if isinstance(input_data, (tuple, list)):
        return (_MutableTuple if isinstance(input_data, tuple) else _MutableList)(input_data)
    if isinstance(input_data, dict):
        return input_data
    raise TypeError(f"mutable: input_data must be an int, a float, a tuple, a list, a dict or a "
                    f"Tensor, got {type(input_data).__name__}")
