"""pijit: a CPython bytecode-capturing JIT for tensor code.

    import pijit as ms
    x = ms.Tensor(np.ones([2, 3]), ms.float32)

    @ms.jit(mode="PIJit")
    def f(x, y, z):
        return ms.ops.matmul(x, y) + z
"""
import os as _os

# oneDNN's OpenMP workers spin after each primitive by default; beside pijit's own thread pool,
# and on a machine shared with other work, the spinning threads take the cores the next
# kernel needs (10-20x slower training steps were measured on a busy 2-core machine). Idle
# workers sleep instead, unless the user chose otherwise. Set before libgomp loads.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
from pijit import _C  # noqa: E402
from pijit._tensor import (Tensor, Parameter, ParameterTuple, bool_, int8, int16, int32,
                           int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32,
                           float64, complex64, complex128, dtype_to_nptype, dtype_to_pytype, pytype_to_dtype)
from pijit import dtype
from pijit import ops
from pijit import common
from pijit import context
from pijit import cuda
from pijit._autodiff import grad, value_and_grad
from pijit import nn
from pijit.context import (GRAPH_MODE, PYNATIVE_MODE, get_context, set_context)
from pijit.parallel_context import (ParallelMode, get_auto_parallel_context,  # noqa: E402
                                    reset_auto_parallel_context, set_auto_parallel_context)
from pijit.jit import GraphBreakError, capture, disable, enable, jit, jit_class, mutable
from pijit.jit_config import JitConfig
from pijit._install_check import package_version as _package_version, run_check
from pijit.introspect import ExplainOutput, explain, get_code_extra, reset
from pijit._trace import read_trace, trace

from pijit._transforms import jacfwd, jacrev, vjp, vmap  # noqa: E402
from pijit import mint  # noqa: E402
from pijit.common.sparse_tensor import COOTensor, CSRTensor, RowTensor, SparseTensor  # noqa: E402

__version__ = _package_version()
ms_function = jit
ms_class = jit_class  # MindSpore's older name
constexpr = ops.constexpr
tensor = Tensor  # MindSpore's function form of the constructor
# MindSpore's second names of the dtypes (C's and NumPy's spellings).
byte, ubyte, short, intc, intp = int8, uint8, int16, int32, int64
ushort, uintc, uintp = uint16, uint32, uint64
half, single, double = float16, float32, float64
set_seed = _C.set_seed
from_dlpack = _C.from_dlpack
graph_break = _C.graph_break
get_seed = _C.get_seed

__all__ = [
    "Tensor", "Parameter", "ParameterTuple", "common", "context", "dtype", "bool_", "int8", "int16",
    "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "ops", "nn", "jit", "JitConfig", "run_check", "jit_class", "mutable", "ms_function", "tensor", "capture", "enable", "disable", "explain",
    "get_code_extra", "reset", "set_context", "get_context", "GRAPH_MODE", "PYNATIVE_MODE",
    "ParallelMode", "set_auto_parallel_context", "get_auto_parallel_context",
    "reset_auto_parallel_context",
    "GraphBreakError", "ExplainOutput", "dtype_to_nptype", "dtype_to_pytype", "pytype_to_dtype",
    "set_seed", "get_seed", "from_dlpack", "grad", "value_and_grad", "graph_break", "trace", "read_trace",
    "mint", "vjp", "jacrev", "jacfwd", "vmap", "ms_class", "constexpr", "byte", "ubyte",
    "short", "ushort", "intc", "uintc", "intp", "uintp", "half", "single", "double",
    "COOTensor", "CSRTensor", "RowTensor", "SparseTensor",
]

# mindspore.train's names are mindspore's too (Model, save_checkpoint, LossMonitor, ...).
from pijit import dataset, train  # noqa: E402
from pijit import amp  # noqa: E402
from pijit.train import *  # noqa: E402,F401,F403
from pijit.train import __all__ as _train_names  # noqa: E402

__all__ += ["dataset", "train", "amp", *_train_names]

from pijit._transforms_more import *  # noqa: E402,F401,F403 - jvp, get_grad, ...
from pijit._transforms_more import __all__ as _transforms_more  # noqa: E402

__all__ += _transforms_more

from pijit import profiler  # noqa: E402
from pijit.profiler import Profiler  # noqa: E402

__all__ += ["profiler", "Profiler"]

_trace._start_from_environment()  # PIJIT_TRACE=dir traces the whole process
