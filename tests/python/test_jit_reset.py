"""pijit.reset() while cache entries hold the last references to their own functions: the
reset releases an entry, that frees the function and its code object, and the code object's
cache state (with its recorded break reasons) is freed with it, in the middle of the reset.
Nothing may be freed twice."""
import gc
import itertools
import types

import numpy as np

import pijit as ms
from pijit import ops

_counter = itertools.count()


def body(a, b):
    c = ops.exp(a * 0.25) + ops.relu(b)
    print(end="")  # a graph break, so the code object's state records a reason
    return c, ops.softmax(a, -1), (a * b).sum(0)


def fresh(f):
    code = f.__code__.replace(co_name=f"{f.__name__}_{next(_counter)}")
    return types.FunctionType(code, f.__globals__, code.co_name)


def test_reset_frees_states_whose_code_dies_during_the_reset():
    rng = np.random.default_rng(0)
    for dt in (np.float32, np.float64, np.float16):
        a, b = (ms.Tensor(rng.standard_normal((3, 4)).astype(dt)) for _ in range(2))
        want = [t.asnumpy() for t in body(a, b)]
        for _ in range(4):
            jf = ms.jit(fresh(body), mode="PIJit")
            for _ in range(2):
                for g, w in zip(jf(a, b), want):
                    np.testing.assert_array_equal(g.asnumpy(), w)
            del jf
        gc.collect()
        ms.reset()
    gc.collect()
    ms.reset()
