"""examples/train_mnist_like.py runs end to end: its test accuracy rises epoch by epoch to
over 90%, Model.eval agrees with the last epoch's evaluation, and the checkpoint reloaded into
a fresh network predicts the same; all well inside a minute."""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "examples", "train_mnist_like.py")


def test_the_mnist_like_example_learns_and_reloads_its_checkpoint():
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True,
                            timeout=120, cwd=REPO, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    before = float(re.search(r"before training: test accuracy (\d\.\d+)", out).group(1))
    epochs = [(int(e), float(a)) for e, a in
              re.findall(r"^epoch (\d+): test accuracy (\d\.\d+)$", out, re.M)]
    assert [e for e, _ in epochs] == list(range(1, 9))
    accuracies = [a for _, a in epochs]
    assert before < 0.2  # ten classes: chance before training
    assert accuracies[0] < accuracies[3] < accuracies[-1]  # rising
    final = float(re.search(r"^final: test accuracy (\d\.\d+)", out, re.M).group(1))
    assert final == accuracies[-1] and final >= 0.9
    assert len(re.findall(r"^epoch: \d+ step: 93, loss is ", out, re.M)) == 8  # LossMonitor
    assert re.search(r"reloaded lenet-8_93\.ckpt into a fresh LeNet-5: predictions equal: True",
                     out)
    seconds = float(re.search(r"total time (\d+\.\d) s", out).group(1))
    assert seconds < 60
