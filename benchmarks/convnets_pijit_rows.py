"""The pijit.jit rows of convnets.py and convnets_more.py alone, for comparing two builds
(run it once per build, alternating, each with its tree on PYTHONPATH): ResNet-18's training
step at batch 32 and inference at batch 1 and 32 (`r18`); ResNet-50's training step at batch 8
(`r50`) and inference at batch 1 and 8 (`r50`, or `r50i` for inference alone). One line per
row: tag, row, median ms.

    PYTHONPATH=<tree> python benchmarks/convnets_pijit_rows.py <steps> r18,r50i [tag]
"""
import os
import sys

import numpy as np

import pijit as ms

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convnets as c18  # noqa: E402
import convnets_more as c50  # noqa: E402


def resnet18_rows(steps, tag, rng):
    x = rng.random((32, 3, 32, 32), dtype=np.float32)
    y = (np.arange(32) % 10).astype(np.int32)
    print(tag, "r18 train b32", round(c18.pijit_step_ms(ms.Tensor(x), ms.Tensor(y), steps), 1), flush=True)
    for b in (1, 32):
        print(tag, f"r18 infer b{b}", round(c18.pijit_inference_ms(ms.Tensor(x[:b]), steps * 2), 2), flush=True)


def resnet50_rows(steps, tag, train):
    x = np.random.default_rng(0).standard_normal((8, 3, 224, 224)).astype(np.float32)
    y = (np.arange(8) % 1000).astype(np.int32)
    ms.set_seed(0)
    if train:
        rows = c50.pijit_rows(c50.ResNet50, ms.Tensor(x), ms.Tensor(y), steps, True)
        print(tag, "r50 train b8", round(rows["pijit.jit"], 1), flush=True)
    for b in (1, 8):
        net = c50.ResNet50()
        net.set_train(False)
        forward = ms.jit(lambda a: net(a), mode="PIJit")
        xb = ms.Tensor(x[:b])
        print(tag, f"r50 infer b{b}", round(c18.median_ms(lambda: forward(xb).asnumpy(), steps * 2), 1), flush=True)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    parts = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else {"r18", "r50"}
    tag = sys.argv[3] if len(sys.argv) > 3 else os.path.dirname(ms.__file__)
    if "r18" in parts:
        resnet18_rows(steps, tag, np.random.default_rng(0))
    if "r50" in parts or "r50i" in parts:
        resnet50_rows(steps, tag, train="r50" in parts)


if __name__ == "__main__":
    main()
