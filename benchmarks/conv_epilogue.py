"""Convolution epilogues (graph/passes/conv_epilogue.h): a residual block and LeNet-size
conv + bias + relu layers, float32, jitted and eager.

The residual block on (32, 64, 56, 56) is relu(conv3x3(relu(conv3x3(x) + b1)) + b2 + x):
jitted, each convolution with the ops after it is one fused_conv2d node (oneDNN's convolution
with bias and post-ops); without the pass (run this script against a build without it to
compare), the adds and relus are fused elementwise loops after plain convolutions. The
LeNet-size rows are conv(x, w) + b then relu on LeNet's two layers at batch 32 (the direct
kernels, conv_direct.h, with the epilogue applied while the result is in cache).

Prints the median time per call (ms) and the jitted / eager ratio, after checking the jitted
result against eager execution bit for bit, and the jitted graph's convolution nodes.
"""
import re
import statistics
import timeit

import numpy as np

import pijit
from pijit import ops


def median_ms(fn, repeat):
    fn()  # warm up (compile, page in, build primitives)
    return statistics.median(timeit.repeat(fn, number=1, repeat=repeat)) * 1e3


def block(x, w1, b1, w2, b2):
    h = ops.relu(ops.conv2d(x, w1, pad_mode="same") + b1)
    return ops.relu(ops.conv2d(h, w2, pad_mode="same") + b2 + x)


def layer(x, w, b):
    return ops.relu(ops.conv2d(x, w) + b)


def case(name, fn, arrays, repeat):
    tensors = [pijit.Tensor(a) for a in arrays]
    jf = pijit.jit(fn, mode="PIJit")
    np.testing.assert_array_equal(jf(*tensors).asnumpy(), fn(*tensors).asnumpy())
    graph = pijit.get_code_extra(jf)["all_graphs"][-1]  # the layers share a code object
    nodes = [" ".join(n) for n in
             re.findall(r"= ((?:fused_)?conv2d)\(.*?(post=\[[a-z,]*\]|epilogue=relu)?\)\n", graph)]
    nodes = "; ".join(n.strip() for n in nodes)
    jit_ms = median_ms(lambda: jf(*tensors), repeat)
    eager_ms = median_ms(lambda: fn(*tensors), repeat)
    print(f"| {name} | {jit_ms:.3f} | {eager_ms:.3f} | {jit_ms / eager_ms:.2f}x | {nodes} |")


def main():
    rng = np.random.default_rng(0)
    f32 = np.float32
    print("| case | pijit.jit ms | eager ms | jit / eager | jitted conv nodes |")
    print("|---|---|---|---|---|")
    x = rng.standard_normal((32, 64, 56, 56), dtype=f32)
    w1, w2 = ((rng.standard_normal((64, 64, 3, 3)) * 0.05).astype(f32) for _ in range(2))
    b1, b2 = (rng.standard_normal((64, 1, 1), dtype=f32) for _ in range(2))
    case("residual block (32,64,56,56)", block, [x, w1, b1, w2, b2], repeat=7)
    for c, o, hw in ((1, 6, 28), (6, 16, 14)):
        x = rng.standard_normal((32, c, hw, hw), dtype=f32)
        w = (rng.standard_normal((o, c, 5, 5)) * 0.2).astype(f32)
        b = rng.standard_normal((o, 1, 1), dtype=f32)
        case(f"LeNet conv {c}->{o} + bias + relu (32,{c},{hw},{hw})", layer, [x, w, b], 101)


if __name__ == "__main__":
    main()
