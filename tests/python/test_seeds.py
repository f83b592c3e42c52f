"""The MindSpore documentation examples in /work/shared/seeds/ that pijit covers, run unchanged
except for their import lines (`mindspore` -> `pijit`), printing what the documents show.

Each example runs in a fresh interpreter (set_context and the jit caches are process state),
once as a plain script and once under `python -m pijit` (every frame captured)."""
import os
import subprocess
import sys
import textwrap

import pytest

RUNNERS = {
    "python": [sys.executable],
    "python_-m_pijit": [sys.executable, "-m", "pijit"],
}


def normalise(text):
    return " ".join(text.split())


def run_example(tmp_path, runner, code):
    script = tmp_path / "example.py"
    script.write_text(textwrap.dedent(code))
    env = dict(os.environ)
    env.pop("PIJIT_LOG", None)
    proc = subprocess.run(RUNNERS[runner] + [str(script)], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout


EXAMPLES = {}


def example(name, code, expected):
    EXAMPLES[name] = (code, expected)


# ---- 002: Dynamic Graph / PSJit / PIJit ----------------------------------------------------------

example("002_pynative_ops_add", """
    import numpy as np
    import pijit as ms
    import pijit.ops as ops
    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
    x = ms.Tensor(np.ones([1, 3, 3, 4]).astype(np.float32))
    y = ms.Tensor(np.ones([1, 3, 3, 4]).astype(np.float32))
    output = ops.add(x, y)
    print(output.asnumpy())
""", """
[[[[2. 2. 2. 2.]
[2. 2. 2. 2.]
[2. 2. 2. 2.]]
[[2. 2. 2. 2.]
[2. 2. 2. 2.]
[2. 2. 2. 2.]]
[[2. 2. 2. 2.]
[2. 2. 2. 2.]
[2. 2. 2. 2.]]]]
""")

# The document's PSJit and PIJit examples differ only in the decorator.
TENSOR_CAL = """
    import numpy as np
    import pijit as ms
    from pijit import ops
    from pijit import jit
    from pijit import Tensor

    DECORATOR
    def tensor_cal(x, y, z):
        return ops.matmul(x, y) + z

    x = Tensor(np.ones(shape=[2, 3]), ms.float32)
    y = Tensor(np.ones(shape=[3, 4]), ms.float32)
    z = Tensor(np.ones(shape=[2, 4]), ms.float32)
    ret = tensor_cal(x, y, z)
    print(ret)
"""

for name, decorator in (("002_psjit_tensor_cal", "@jit"),
                        ("002_pijit_tensor_cal", '@jit(mode="PIJit")')):
    example(name, TENSOR_CAL.replace("DECORATOR", decorator), """
[[4. 4. 4. 4.]
[4. 4. 4. 4.]]
""")

# ---- 000 / 003: Dynamic and Static Graphs ---------------------------------------------------------

MYNET = """
    import numpy as np
    import pijit.nn as nn
    import pijit.ops as ops
    import pijit as ms

    class MyNet(nn.Cell):
        \"\"\"Customize the network to implement the addition of two tensors.\"\"\"
        def __init__(self):
            super(MyNet, self).__init__()
            self.add = ops.Add()

        def construct(self, x, y):
            return self.add(x, y)

    x = ms.Tensor(np.array([1.0, 2.0, 3.0]).astype(np.float32))
    y = ms.Tensor(np.array([4.0, 5.0, 6.0]).astype(np.float32))
"""

example("003_mynet_add_graph_mode", MYNET + """
    import pijit as ms

    ms.set_context(mode=ms.GRAPH_MODE)

    net = MyNet()
    print(net(x, y))
""", "[5. 7. 9.]")

example("003_mynet_add_pynative_mode", MYNET + """
    ms.set_context(mode=ms.PYNATIVE_MODE)

    net = MyNet()
    print(net(x, y))
""", "[5. 7. 9.]")

example("003_mynet_add_graph_then_pynative", MYNET + """
    import pijit as ms

    ms.set_context(mode=ms.GRAPH_MODE)

    net = MyNet()
    print(net(x, y))

    ms.set_context(mode=ms.PYNATIVE_MODE)

    net = MyNet()
    print(net(x, y))
""", "[5. 7. 9.]\n[5. 7. 9.]")

# The documents' docstring `\"\"\"Define execution code.\"\"` is missing a closing quote (a syntax
# error in MindSpore too); it is closed here.
example("003_net_mul_graph_mode", """
    import numpy as np
    import pijit.nn as nn
    import pijit.ops as ops
    import pijit as ms

    # Set the running mode to static graph mode.
    ms.set_context(mode=ms.GRAPH_MODE)

    class Net(nn.Cell):
        \"\"\"Customize the network to implement the multiplication of two tensors.\"\"\"
        def __init__(self):
            super(Net, self).__init__()
            self.mul = ops.Mul()

        def construct(self, x, y):
            \"\"\"Define execution code.\"\"\"
            return self.mul(x, y)

    x = ms.Tensor(np.array([1.0, 2.0, 3.0]).astype(np.float32))
    y = ms.Tensor(np.array([4.0, 5.0, 6.0]).astype(np.float32))

    net = Net()

    print(net(x, y))
""", "[ 4. 10. 18.]")

example("003_pynative_ops_mul", """
    import numpy as np
    import pijit.ops as ops
    import pijit as ms

    # Set the running mode to dynamic graph mode.
    ms.set_context(mode=ms.PYNATIVE_MODE)

    x = ms.Tensor(np.array([1.0, 2.0, 3.0]).astype(np.float32))
    y = ms.Tensor(np.array([4.0, 5.0, 6.0]).astype(np.float32))

    output = ops.mul(x, y)

    print(output.asnumpy())
""", "[ 4. 10. 18.]")

example("003_pynative_control_flow_net", """
    import numpy as np
    import pijit.nn as nn
    import pijit.ops as ops
    import pijit as ms

    # Set the running mode to dynamic graph mode.
    ms.set_context(mode=ms.PYNATIVE_MODE)

    class Net(nn.Cell):
        \"\"\"Customize a network.\"\"\"
        def __init__(self):
            super(Net, self).__init__()
            self.matmul = ops.MatMul()
            self.z = ms.Parameter(ms.Tensor(np.array([1.0], np.float32)), name='z')

        def construct(self, x):
            for _ in range(3):
                x = x + self.z
            return x

    x = ms.Tensor(np.array([1.0, 2.0, 3.0]).astype(np.float32))
    net = Net()
    output = net(x)

    print(output)
""", "[4. 5. 6.]")

# ---- 004: 动静态图结合 (Graph mode with ops.Mul on the CPU) ----------------------------------------

# The network of 004 and of 001's second cell.
MUL_NET = """
    class Net(nn.Cell):
        def __init__(self):
            super(Net, self).__init__()
            self.mul = ops.Mul()

        def construct(self, x, y):
            return self.mul(x, y)
"""

example("004_net_mul_graph_mode_cpu", """
    import numpy as np
    import pijit.nn as nn
    import pijit.ops as ops
    import pijit as ms

    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
""" + MUL_NET + """
    x = ms.Tensor(np.array([1.0, 2.0, 3.0]).astype(np.float32))
    y = ms.Tensor(np.array([4.0, 5.0, 6.0]).astype(np.float32))

    net = Net()
    print(net(x, y))
""", "[ 4. 10. 18.]")

# ---- 001: 动态图与静态图 (r1.6 notebook: add_func, Net with Mul, ms_function) -----------------------
# Only the import lines differ: ParameterTuple, initializer and WithLossCell (used only by the
# notebook's gradient cells, which are not run here) are dropped from them.

NB001_SETUP = """
    import numpy as np
    import pijit.nn as nn
    from pijit import context, Tensor, ms_function
    import pijit.ops as ops

    # 设定为Graph模式,也可替换为PYNATIVE_MODE
    context.set_context(mode=context.GRAPH_MODE, device_target="Ascend")
"""

example("001_add_func", NB001_SETUP + """
    def add_func(x, y):
        z = ops.add(x, y)
        z = ops.add(z, x)
        return z

    x = Tensor(np.ones([3, 3], dtype=np.float32))
    y = Tensor(np.ones([3, 3], dtype=np.float32))
    output = add_func(x, y)
    print(output.asnumpy())
""", """
[[3. 3. 3.]
 [3. 3. 3.]
 [3. 3. 3.]]
""")

example("001_net_mul", NB001_SETUP + """
    import numpy as np
    import pijit.nn as nn
    import pijit.ops as ops
    from pijit import context, Tensor
""" + MUL_NET + """
    x = Tensor(np.array([1.0, 2.0, 3.0]).astype(np.float32))
    y = Tensor(np.array([4.0, 5.0, 6.0]).astype(np.float32))

    net = Net()
    print(net(x, y))
""", "[ 4. 10. 18.]")

example("001_ms_function_add", NB001_SETUP + """
    # 导入ms_function
    from pijit import ms_function

    # 仍设定为PyNative模式
    context.set_context(mode=context.PYNATIVE_MODE, device_target="Ascend")

    add = ops.Add()

    # 使用装饰器编译计算图
    @ms_function
    def add_fn(x, y):
        res = add(x, y)
        return res

    x = Tensor(np.ones([4, 4]).astype(np.float32))
    y = Tensor(np.ones([4, 4]).astype(np.float32))
    z = add_fn(x, y)
    print(z.asnumpy())
""", """
[[2. 2. 2. 2.]
 [2. 2. 2. 2.]
 [2. 2. 2. 2.]
 [2. 2. 2. 2.]]
""")

# The notebook's JIT Fallback cell: NumPy and Tensor(ndarray) inside a GRAPH_MODE construct
# (its device_target="GPU" kept: pijit runs it on the CPU).
example("001_jit_fallback", """
    import numpy as np
    import pijit.nn as nn
    from pijit import context, Tensor

    context.set_context(mode=context.GRAPH_MODE, device_target="GPU")

    class Net(nn.Cell):
        def construct(self):
            x = np.array([1, 2, 3])
            y = Tensor(x)
            return y

    net = Net()
    print(net())
""", "[1 2 3]")


@pytest.mark.parametrize("runner", RUNNERS, ids=str)
@pytest.mark.parametrize("name", EXAMPLES, ids=str)
def test_seed_example_prints_documented_output(tmp_path, runner, name):
    code, expected = EXAMPLES[name]
    out = run_example(tmp_path, runner, code)
    assert normalise(out) == normalise(expected)


def test_seed_examples_use_only_pijit_imports():
    # "adapted only by the import line": no example may still name mindspore.
    for name, (code, _) in EXAMPLES.items():
        assert "mindspore" not in code, name


def test_graph_mode_example_really_compiles_construct(tmp_path):
    code = EXAMPLES["003_mynet_add_graph_mode"][0] + """
    st = ms.get_code_extra(MyNet.construct)
    print("compiled", st["compile_count"], "reasons", len(st["reasons"]))
    """
    out = run_example(tmp_path, "python", code)
    assert normalise(out) == normalise("[5. 7. 9.]\ncompiled 1 reasons 0")


def test_pijit_example_really_compiles_tensor_cal(tmp_path):
    code = EXAMPLES["002_pijit_tensor_cal"][0] + """
    ret = tensor_cal(x, y, z)
    st = ms.get_code_extra(tensor_cal)
    print("compiled", st["compile_count"], "hits", st["cache_hits"], "reasons", len(st["reasons"]))
    """
    out = run_example(tmp_path, "python", code)
    assert normalise(out).endswith("compiled 1 hits 1 reasons 0")


def test_jit_fallback_example_really_compiles_construct(tmp_path):
    code = EXAMPLES["001_jit_fallback"][0] + """
    import pijit as ms
    st = ms.get_code_extra(Net.construct)
    print("graphs", st["graph_count"], "breaks", st["total_break_count"], "eager", st["eager_count"])
    """
    out = run_example(tmp_path, "python", code)
    assert normalise(out) == normalise("[1 2 3]\ngraphs 1 breaks 0 eager 0")
