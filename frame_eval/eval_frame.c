/* PEP 523 eval-frame hook for CPython 3.11. Internal CPython headers do not compile as
 * C++, so everything that touches _PyInterpreterFrame lives here, in C. */
#define Py_BUILD_CORE
#include <Python.h>
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE

#include "frame_eval/eval_frame.h"

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030C0000
#error "frame_eval/eval_frame.c supports CPython 3.11 (3.12 owns the frame in the hook)"
#endif

static pijit_frame_callback g_callback = NULL;
static int g_acquired = 0;

void pijit_set_frame_callback(pijit_frame_callback callback) { g_callback = callback; }

static PyObject* pijit_eval_frame(PyThreadState* tstate, _PyInterpreterFrame* frame,
                                  int throwflag) {
  PyCodeObject* code = frame->f_code;
  /* Only fresh frames of ordinary calls: on 3.11 the caller (_PyEval_Vector) clears and pops
   * the frame after we return, so returning a result without evaluating it is allowed. */
  if (throwflag || g_callback == NULL || frame->owner != FRAME_OWNED_BY_THREAD ||
      frame->prev_instr != _PyCode_CODE(code) - 1 ||
      (code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR))) {
    return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
  }
  /* The parameters' slots: positional, keyword-only, then the *args tuple and **kwargs dict. */
  int nargs = code->co_argcount + code->co_kwonlyargcount +
              ((code->co_flags & CO_VARARGS) != 0) + ((code->co_flags & CO_VARKEYWORDS) != 0);
  PyObject* result = NULL;
  if (g_callback(code, (PyObject*)frame->f_func, (PyObject* const*)frame->localsplus, nargs,
                 &result)) {
    return result;
  }
  return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
}

void pijit_hook_acquire(void) {
  if (g_acquired++ == 0) {
    _PyInterpreterState_SetEvalFrameFunc(PyInterpreterState_Get(), pijit_eval_frame);
  }
}

void pijit_hook_release(void) {
  if (g_acquired > 0 && --g_acquired == 0) {
    _PyInterpreterState_SetEvalFrameFunc(PyInterpreterState_Get(), _PyEval_EvalFrameDefault);
  }
}

int pijit_hook_active(void) { return g_acquired > 0; }
