"""Traces a small network whose forward pass branches on a tensor's value (a graph break) and is
called with two batch sizes (a recompile), then writes the HTML report of the trace.

    PYTHONPATH=. python examples/trace_report.py [--out report.html]
"""
import argparse
import os
import tempfile

import numpy as np

import pijit as ms
from pijit import _report, nn, ops


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(8, 16)
        self.fc2 = nn.Dense(16, 4)

    def construct(self, x):
        h = ops.relu(self.fc1(x))
        if h.sum() > 0:  # branches on data: the graph breaks here
            h = h * 2.0
        return ops.softmax(self.fc2(h), axis=-1).mean(axis=0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="pijit-report.html")
    args = parser.parse_args()
    net = Net()
    step = ms.jit(net.construct, capture_mode="bytecode")
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as trace_dir:
        with ms.trace(trace_dir):
            for batch in (4, 4, 4, 16, 16):
                x = ms.Tensor(rng.standard_normal((batch, 8)).astype(np.float32))
                out = step(x)
                np.testing.assert_allclose(out.asnumpy(), net.construct(x).asnumpy(), rtol=1e-6)
        _report.write_report(trace_dir, args.out, title="pijit report: examples/trace_report.py")
    print(os.path.abspath(args.out))


if __name__ == "__main__":
    main()
