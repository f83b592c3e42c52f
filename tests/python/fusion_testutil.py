"""Shared pieces of the fusion tests (elementwise chains, fused reductions, convolution and
matmul epilogues, small dtypes): a jitted copy of a function with a cache of its own, the
text of its first graph, and the activations an epilogue fuses."""
import itertools
import types

import pijit
from pijit import ops

_counter = itertools.count()

ACTIVATIONS = {"none": None, "relu": ops.relu, "gelu": ops.gelu, "tanh": ops.tanh,
               "sigmoid": ops.sigmoid}


def fresh_jit(f):
    """pijit.jit over a copy of f with its own code object, hence its own cache."""
    code = f.__code__.replace(co_name=f"{f.__name__}_{next(_counter)}")
    return pijit.jit(types.FunctionType(code, f.__globals__, code.co_name, None, f.__closure__),
                     mode="PIJit")


def first_graph(jf):
    return pijit.get_code_extra(jf)["graphs"][0]
