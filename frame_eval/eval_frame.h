/* The PEP 523 hook: a narrow C interface between CPython's frame internals and pijit.
 *
 * The hook only sees frames that have not started and that belong to a plain call (not a
 * generator or coroutine). For each, it asks the callback; the callback either produces the
 * frame's result (a cached graph ran) or declines, and the frame runs normally.
 *
 * Skipped subtrees. While a PEP 523 hook is installed, CPython 3.11 and 3.12 stop running
 * Python-to-Python calls inside one interpreter loop: every call takes the C path into the
 * hook, which makes call-heavy pure-Python code up to twice as slow. So the hook keeps, per thread, a
 * stack of the skipped frames it is running (code with no tensor work) and notes when a frame
 * that pijit captures or compiles starts below one of them. A skipped code object whose runs
 * completed with nothing captured below them, PIJIT_SUBTREE_CLEAN_RUNS times (a run with many
 * frames below it counts as several), becomes a *skipped subtree*: its later runs take the
 * hook off the interpreter until they return, so their calls are inlined again. Its 1st, 2nd,
 * 4th, ... 64th run after that and every 64th one are still watched; once something is
 * captured below a run, the code object never runs that way again. Code reached only from a
 * skipped subtree therefore runs eagerly (same results, only not compiled) until such a
 * watched run finds it, or until that code makes a tensor: the tensor runtime reports every
 * tensor it makes while a skipped subtree runs (pijit_note_tensor_work), which puts the hook
 * back for the rest of the run and ends the code object's subtree status. Explicit entry points (a @jit call, `with pijit.capture()`,
 * `pijit.enable()`) put the hook back at once. With more than one Python thread the hook
 * never comes off, since the interpreter's hook is shared by all threads. */
#ifndef PIJIT_FRAME_EVAL_EVAL_FRAME_H_
#define PIJIT_FRAME_EVAL_EVAL_FRAME_H_
#include <Python.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Per code object, owned by the caller of the callback (see pijit_frame_callback). */
typedef struct {
  uint32_t clean_runs; /* completed runs with nothing captured below them */
  uint32_t calls;      /* runs as a skipped subtree, for sampling */
  uint8_t subtree;     /* runs with the hook off */
  uint8_t tainted;     /* something was captured below a run: never a subtree */
} pijit_skip_info;

/* Completed clean runs after which a skipped code object runs as a skipped subtree. */
#define PIJIT_SUBTREE_CLEAN_RUNS 8
/* Frames seen below a clean run that count as one more clean run. */
#define PIJIT_SUBTREE_FRAMES_PER_RUN 16

/* What the callback did with a frame. */
enum {
  PIJIT_FRAME_DEFAULT = 0, /* not a candidate now: run it normally */
  PIJIT_FRAME_RESULT = 1,  /* handled: *result is a new reference, or NULL with an exception */
  PIJIT_FRAME_SKIP = 2,    /* skipped code: run it normally, watched (*info is set) */
  PIJIT_FRAME_SUBTREE = 3, /* skipped subtree: run it with the hook off (*info is set) */
};

/* Returns one of the PIJIT_FRAME_ values. `args` are the frame's first `nargs` local slots
 * (its positional and keyword-only parameters). */
typedef int (*pijit_frame_callback)(PyCodeObject* code, PyObject* func, PyObject* const* args,
                                    int nargs, PyObject** result, pijit_skip_info** info);

void pijit_set_frame_callback(pijit_frame_callback callback);
/* The callback calls this for a frame that pijit captures or compiles: the watched frames
 * of this thread that it runs below are then not skipped subtrees. */
void pijit_mark_live(void);
/* Installs the hook on the current interpreter; nested acquires are counted. Acquiring also
 * puts the hook back if a skipped subtree took it off. */
void pijit_hook_acquire(void);
void pijit_hook_release(void);
int pijit_hook_active(void);

/* The skipped subtree running now (only ever one thread runs Python then), or NULL. */
extern pijit_skip_info* pijit_subtree_running;
/* Called when a tensor is made while pijit_subtree_running is set. */
void pijit_note_tensor_work(void);

/* Counters for tests: frames the hook saw, and skipped-subtree runs. */
typedef struct {
  uint64_t frames;
  uint64_t subtree_runs;
} pijit_hook_stats;
pijit_hook_stats pijit_get_hook_stats(void);

#ifdef __cplusplus
}
#endif
#endif /* PIJIT_FRAME_EVAL_EVAL_FRAME_H_ */
