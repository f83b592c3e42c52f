/* PEP 523 eval-frame hook for CPython 3.11, 3.12 and 3.13. Internal CPython headers do not compile
 * as C++, so everything that touches _PyInterpreterFrame lives here, in C. */
#define Py_BUILD_CORE
#include <Python.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#undef Py_BUILD_CORE

#include "frame_eval/eval_frame.h"

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030E0000
#error "frame_eval/eval_frame.c supports CPython 3.11, 3.12 and 3.13"
#endif

/* The frame's function: 3.12 renamed the field. */
#if PY_VERSION_HEX >= 0x030C0000
#define PIJIT_FRAME_FUNC(frame) ((frame)->f_funcobj)
#else
#define PIJIT_FRAME_FUNC(frame) ((frame)->f_func)
#endif

/* The frame's code object, and whether the frame has not started: 3.13 holds the code as
 * f_executable and points instr_ptr at the next instruction (3.11 and 3.12 keep prev_instr,
 * one before it). */
#if PY_VERSION_HEX >= 0x030D0000
#define PIJIT_FRAME_CODE(frame) ((PyCodeObject*)(frame)->f_executable)
#define PIJIT_FRAME_FRESH(frame, code) ((frame)->instr_ptr == _PyCode_CODE(code))
#else
#define PIJIT_FRAME_CODE(frame) ((frame)->f_code)
#define PIJIT_FRAME_FRESH(frame, code) ((frame)->prev_instr == _PyCode_CODE(code) - 1)
#endif

static pijit_frame_callback g_callback = NULL;
static int g_acquired = 0;
static pijit_hook_stats g_stats;
pijit_skip_info* pijit_subtree_running = NULL;

/* This thread's watched (skipped) frames, innermost last: live[i] is set once something was
 * captured below frame i. Frames deeper than the array are not watched. */
#define PIJIT_WATCH_MAX 4096
typedef struct {
  int depth;
  unsigned char live[PIJIT_WATCH_MAX];
  uint64_t start[PIJIT_WATCH_MAX]; /* g_stats.frames when frame i started */
} watch_stack;
static _Thread_local watch_stack t_watch;

void pijit_set_frame_callback(pijit_frame_callback callback) { g_callback = callback; }

static PyObject* pijit_eval_frame(PyThreadState* tstate, _PyInterpreterFrame* frame,
                                  int throwflag);

/* The interpreter's hook as pijit's state says: pijit's while acquired, else none. */
static void put_hook(void) {
  _PyInterpreterState_SetEvalFrameFunc(
      PyInterpreterState_Get(), g_acquired > 0 ? pijit_eval_frame : _PyEval_EvalFrameDefault);
}

/* Marks every watched frame of this thread as having something captured below it. A marked
 * frame's outer frames are marked already, so the walk stops at the first one. */
void pijit_mark_live(void) {
  int i = t_watch.depth < PIJIT_WATCH_MAX ? t_watch.depth : PIJIT_WATCH_MAX;
  while (--i >= 0 && !t_watch.live[i]) t_watch.live[i] = 1;
}

static int only_thread(PyThreadState* tstate) {
  return tstate->interp->threads.head == tstate && tstate->next == NULL;
}

static PyObject* run_watched(PyThreadState* tstate, _PyInterpreterFrame* frame,
                             pijit_skip_info* info) {
  const int slot = t_watch.depth++;
  if (slot < PIJIT_WATCH_MAX) {
    t_watch.live[slot] = 0;
    t_watch.start[slot] = g_stats.frames;
  }
  PyObject* r = _PyEval_EvalFrameDefault(tstate, frame, 0);
  t_watch.depth = slot;
  if (slot < PIJIT_WATCH_MAX && !info->tainted) {
    if (t_watch.live[slot]) {
      info->tainted = 1;
      info->subtree = 0;
    } else {
      /* A run counts once, plus once per PIJIT_SUBTREE_FRAMES_PER_RUN frames below it. */
      const uint64_t below = g_stats.frames - t_watch.start[slot];
      const uint64_t evidence = info->clean_runs + 1 + below / PIJIT_SUBTREE_FRAMES_PER_RUN;
      info->clean_runs = evidence < UINT32_MAX ? (uint32_t)evidence : UINT32_MAX;
      if (info->clean_runs >= PIJIT_SUBTREE_CLEAN_RUNS) info->subtree = 1;
    }
  }
  return r;
}

#if PY_VERSION_HEX >= 0x030C0000
/* Releases what a fresh, never-run frame holds and pops it off the thread's data stack, as the
 * 3.12 and 3.13 evaluators do when a frame returns. CPython's own functions for this are internal and
 * not exported. The frame was never linked into the thread's frame chain, so nothing can have
 * made a frame object for it (the hook only offers frames without one to the callback);
 * should one appear while the callback runs, it is given up only when nothing else holds it:
 * another holder would keep a frame object pointing into this memory, so the frame is then
 * left in place (a leak) rather than released. */
static void finish_unrun_frame(PyThreadState* tstate, _PyInterpreterFrame* frame) {
  PyObject* frame_obj = (PyObject*)frame->frame_obj;
  if (frame_obj != NULL && Py_REFCNT(frame_obj) > 1) return;
  frame->frame_obj = NULL;
  Py_XDECREF(frame_obj);
  for (int i = 0; i < frame->stacktop; ++i) Py_CLEAR(frame->localsplus[i]);
  Py_CLEAR(frame->f_locals);
  Py_CLEAR(frame->f_funcobj);
#if PY_VERSION_HEX >= 0x030D0000
  Py_CLEAR(frame->f_executable);
#else
  Py_CLEAR(frame->f_code);
#endif
  /* Pop: the frame is the data stack's top. A frame at the start of a chunk had the chunk made
   * for it, so the chunk goes back to the arena allocator it came from. */
  PyObject** base = (PyObject**)frame;
  _PyStackChunk* chunk = tstate->datastack_chunk;
  if (base == &chunk->data[0] && chunk->previous != NULL) {
    _PyStackChunk* previous = chunk->previous;
    tstate->datastack_chunk = previous;
    tstate->datastack_top = &previous->data[previous->top];
    tstate->datastack_limit = (PyObject**)((char*)previous + previous->size);
    PyObjectArenaAllocator arena;
    PyObject_GetArenaAllocator(&arena);
    arena.free(arena.ctx, chunk, chunk->size);
  } else {
    tstate->datastack_top = base;
  }
}
#else
/* 3.11: the caller clears and pops the frame. */
static void finish_unrun_frame(PyThreadState* tstate, _PyInterpreterFrame* frame) {
  (void)tstate;
  (void)frame;
}
#endif

static PyObject* pijit_eval_frame(PyThreadState* tstate, _PyInterpreterFrame* frame,
                                  int throwflag) {
  PyCodeObject* code = PIJIT_FRAME_CODE(frame);
  ++g_stats.frames;
#if PY_VERSION_HEX >= 0x030D0000
  /* 3.13's f_executable may be something other than a code object (None in frames CPython
   * makes for itself): such a frame is not a Python function's call. */
  if (!PyCode_Check((PyObject*)code)) return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
#endif
  /* Only fresh frames of ordinary calls. On 3.11 the caller (_PyEval_Vector) clears and pops
   * the frame after we return; from 3.12 on the evaluator does it as the frame exits, so a frame
   * the callback answers is cleared and popped here (finish_unrun_frame). */
  if (throwflag || g_callback == NULL || frame->owner != FRAME_OWNED_BY_THREAD ||
      !PIJIT_FRAME_FRESH(frame, code) || frame->frame_obj != NULL ||
      (code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR))) {
    return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
  }
  /* The parameters' slots: positional, keyword-only, then the *args tuple and **kwargs dict. */
  int nargs = code->co_argcount + code->co_kwonlyargcount +
              ((code->co_flags & CO_VARARGS) != 0) + ((code->co_flags & CO_VARKEYWORDS) != 0);
  PyObject* result = NULL;
  pijit_skip_info* info = NULL;
  switch (g_callback(code, PIJIT_FRAME_FUNC(frame), (PyObject* const*)frame->localsplus, nargs,
                     &result, &info)) {
    case PIJIT_FRAME_RESULT:
      finish_unrun_frame(tstate, frame);
      return result;
    case PIJIT_FRAME_SKIP:
      return run_watched(tstate, frame, info);
    case PIJIT_FRAME_SUBTREE:
      if (!only_thread(tstate)) return run_watched(tstate, frame, info);
      ++g_stats.subtree_runs;
      {
        pijit_skip_info* outer = pijit_subtree_running;
        pijit_subtree_running = info;
        tstate->interp->eval_frame = NULL;
        PyObject* r = _PyEval_EvalFrameDefault(tstate, frame, 0);
        pijit_subtree_running = outer;
        put_hook();  /* pijit.disable() may have run meanwhile */
        return r;
      }
    default:
      break;
  }
  return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
}

void pijit_note_tensor_work(void) {
  pijit_skip_info* info = pijit_subtree_running;
  if (info == NULL) return;
  info->tainted = 1;
  info->subtree = 0;
  pijit_subtree_running = NULL;
  pijit_mark_live();
  put_hook();
}

void pijit_hook_acquire(void) {
  ++g_acquired;
  put_hook();
}

void pijit_hook_release(void) {
  if (g_acquired > 0 && --g_acquired == 0) put_hook();
}

int pijit_hook_active(void) { return g_acquired > 0; }

pijit_hook_stats pijit_get_hook_stats(void) { return g_stats; }
