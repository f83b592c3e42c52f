/* The PEP 523 hook: a narrow C interface between CPython's frame internals and pijit.
 *
 * The hook only sees frames that have not started and that belong to a plain call (not a
 * generator or coroutine). For each, it asks the callback; the callback either produces the
 * frame's result (a cached graph ran) or declines, and the frame runs normally. */
#ifndef PIJIT_FRAME_EVAL_EVAL_FRAME_H_
#define PIJIT_FRAME_EVAL_EVAL_FRAME_H_
#include <Python.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Returns 1 when it handled the frame (*result is a new reference, or NULL with an
 * exception set), 0 to let the interpreter run the frame. `args` are the frame's first
 * `nargs` local slots (its positional and keyword-only parameters). */
typedef int (*pijit_frame_callback)(PyCodeObject* code, PyObject* func, PyObject* const* args,
                                    int nargs, PyObject** result);

void pijit_set_frame_callback(pijit_frame_callback callback);
/* Installs the hook on the current interpreter; nested acquires are counted. */
void pijit_hook_acquire(void);
void pijit_hook_release(void);
int pijit_hook_active(void);

#ifdef __cplusplus
}
#endif
#endif /* PIJIT_FRAME_EVAL_EVAL_FRAME_H_ */
