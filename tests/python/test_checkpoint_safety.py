"""Checkpoints that survive crashes and bad input: a save killed halfway leaves the previous
file whole (temporary file, fsync, os.replace), damaged files and mismatched parameters are
clear errors that leave the network unchanged, and the safetensors format round-trips."""
import glob
import hashlib
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import pijit as ms
from pijit import nn
from pijit.train import load_checkpoint, load_param_into_net, save_checkpoint
from pijit.train import serialization

safetensors_numpy = pytest.importorskip(
    "safetensors.numpy", reason="format='safetensors' needs the safetensors package")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class SmallNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, has_bias=True)
        self.fc = nn.Dense(8, 3)

    def construct(self, x):
        return self.fc(self.conv(x).reshape(x.shape[0], -1)[:, :8])


def params_of(net):
    return {p.name: p.asnumpy().copy() for p in net.get_parameters()}


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def big_parameters(value, count=8, size=1 << 20):
    """`count` float32 parameters of `size` elements (4 MiB each), all equal to `value`."""
    return {f"layer{i}.weight": ms.Parameter(np.full(size, value + i, np.float32),
                                             name=f"layer{i}.weight") for i in range(count)}


# ---- atomic writes -------------------------------------------------------------------------------

# The child saves 8 large parameters with a codec that, after half of them, says so on stdout
# and sleeps: the parent kills it there, in the middle of the write.
CHILD = textwrap.dedent("""
    import sys, time
    import numpy as np
    import pijit as ms
    from pijit.train import serialization, save_checkpoint

    real = serialization._codec()

    class SlowCodec:
        def __init__(self):
            self.count = 0

        def encode(self, entry):
            self.count += 1
            if self.count == 5:
                print("HALF", flush=True)
                time.sleep(120)
            return real.encode(entry)

    slow = SlowCodec()
    serialization._codec = lambda: slow
    params = {f"layer{i}.weight": ms.Parameter(np.full(1 << 20, 100.0 + i, np.float32),
                                               name=f"layer{i}.weight") for i in range(8)}
    save_checkpoint(params, sys.argv[1])
    print("DONE", flush=True)
""")


def test_a_save_killed_halfway_leaves_the_previous_checkpoint_whole(tmp_path):
    path = str(tmp_path / "model.ckpt")
    save_checkpoint(big_parameters(1.0), path)
    before = digest(path)
    child = subprocess.Popen([sys.executable, "-c", CHILD, path], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        line = child.stdout.readline()  # blocks until the child is halfway through its save
        assert line.strip() == "HALF", child.stderr.read()
        partial = glob.glob(str(tmp_path / ".model.ckpt.*.tmp"))
        assert len(partial) == 1 and os.path.getsize(partial[0]) > 0  # the write was under way
    finally:
        child.kill()
        child.wait(timeout=30)
        child.stdout.close()
        child.stderr.close()
    assert child.returncode != 0
    assert digest(path) == before
    loaded = load_checkpoint(path)
    for i in range(8):
        np.testing.assert_array_equal(loaded[f"layer{i}.weight"].asnumpy(),
                                      np.full(1 << 20, 1.0 + i, np.float32))


def test_a_save_that_raises_removes_its_temporary_file_and_keeps_the_old_one(tmp_path,
                                                                             monkeypatch):
    path = str(tmp_path / "net.ckpt")
    net = SmallNet()
    save_checkpoint(net, path)
    before = digest(path)
    real = serialization._codec()

    class FailingCodec:
        count = 0

        def encode(self, entry):
            FailingCodec.count += 1
            if FailingCodec.count == 3:
                raise OSError("disk full")
            return real.encode(entry)

    failing = FailingCodec()
    monkeypatch.setattr(serialization, "_codec", lambda: failing)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(SmallNet(), path)
    assert digest(path) == before
    assert sorted(os.listdir(tmp_path)) == ["net.ckpt"]


def test_the_data_is_synced_before_the_rename(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", os.path.realpath(f"/proc/self/fd/{fd}")))
        return real_fsync(fd)

    def replace(src, dst):
        events.append(("replace", src, dst))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    path = os.path.realpath(str(tmp_path / "net.ckpt"))
    save_checkpoint(SmallNet(), path)
    replaced = [e for e in events if e[0] == "replace"]
    assert len(replaced) == 1 and replaced[0][2] == path
    temporary = replaced[0][1]
    assert os.path.dirname(temporary) == os.path.dirname(path)  # same folder: same filesystem
    assert events.index(("fsync", temporary)) < events.index(replaced[0])
    assert not os.path.exists(temporary)
    # The file gets the mode open() would give it, not the temporary file's private 0600.
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask


def test_saves_from_many_threads_leave_one_whole_file(tmp_path):
    path = str(tmp_path / "net.ckpt")
    values = [big_parameters(float(10 * k), count=2, size=1 << 16) for k in range(4)]
    threads = [threading.Thread(target=save_checkpoint, args=(v, path)) for v in values]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    loaded = load_checkpoint(path)
    first = float(loaded["layer0.weight"].asnumpy()[0])
    assert first in (0.0, 10.0, 20.0, 30.0)
    np.testing.assert_array_equal(loaded["layer1.weight"].asnumpy(), np.full(1 << 16, first + 1))
    assert sorted(os.listdir(tmp_path)) == ["net.ckpt"]


# ---- damaged files and mismatches leave the network unchanged ------------------------------------

@pytest.mark.parametrize("damage", ["truncated", "garbage", "cut_in_header"])
def test_a_damaged_file_is_an_error_naming_it_and_the_network_is_unchanged(tmp_path, damage):
    path = tmp_path / "net.ckpt"
    save_checkpoint(SmallNet(), str(path))
    data = path.read_bytes()
    damaged = {"truncated": data[:len(data) // 2], "garbage": b"\x07" * 200,
               "cut_in_header": data[:3]}[damage]
    path.write_bytes(damaged)
    net = SmallNet()
    before = params_of(net)
    with pytest.raises(ValueError, match="net.ckpt: it is corrupted"):
        load_checkpoint(str(path), net=net)
    for name, value in params_of(net).items():
        np.testing.assert_array_equal(value, before[name])


def test_a_shape_mismatch_names_the_parameter_and_both_shapes_and_changes_nothing(tmp_path):
    source, net = SmallNet(), SmallNet()
    parameter_dict = {name: ms.Parameter(value + 1.0, name=name)
                      for name, value in params_of(source).items()}
    # fc.weight comes after conv.* in the network's order: conv.* would have been written
    # first by a loader that assigns while it checks.
    parameter_dict["fc.weight"] = ms.Parameter(np.zeros((3, 9), np.float32), name="fc.weight")
    before = params_of(net)
    with pytest.raises(RuntimeError, match=r"fc.weight has shape \(3, 8\) in the network but "
                                           r"\(3, 9\) in the parameter dict"):
        load_param_into_net(net, parameter_dict)
    for name, value in params_of(net).items():
        np.testing.assert_array_equal(value, before[name])
    path = str(tmp_path / "wrong.ckpt")
    save_checkpoint(parameter_dict, path)
    with pytest.raises(RuntimeError, match=r"fc.weight has shape \(3, 8\) .* \(3, 9\)"):
        load_checkpoint(path, net=net)
    for name, value in params_of(net).items():
        np.testing.assert_array_equal(value, before[name])


def test_a_dtype_mismatch_changes_nothing_either():
    net = SmallNet()
    before = params_of(net)
    parameter_dict = {name: ms.Parameter(value * 0, name=name)
                      for name, value in params_of(net).items()}
    parameter_dict["fc.bias"] = ms.Parameter(np.zeros(3, np.int32), name="fc.bias")
    with pytest.raises(RuntimeError, match="fc.bias is Float32 in the network but Int32"):
        load_param_into_net(net, parameter_dict)
    for name, value in params_of(net).items():
        np.testing.assert_array_equal(value, before[name])


def test_missing_parameters_are_reported_by_name_and_the_rest_is_loaded(caplog):
    # As MindSpore: a partial dict (fine-tuning a head, say) loads what it has and returns
    # the names it lacks, with a warning naming them.
    net, source = SmallNet(), SmallNet()
    parameter_dict = {name: ms.Parameter(value, name=name)
                      for name, value in params_of(source).items() if name.startswith("conv")}
    with caplog.at_level("WARNING", logger="pijit.train"):
        not_loaded, unused = load_param_into_net(net, parameter_dict)
    assert sorted(not_loaded) == ["fc.bias", "fc.weight"] and unused == []
    assert "fc.weight" in caplog.text
    np.testing.assert_array_equal(net.conv.weight.asnumpy(), source.conv.weight.asnumpy())


# ---- safetensors ---------------------------------------------------------------------------------

def test_safetensors_round_trip_into_a_fresh_network(tmp_path):
    net = SmallNet()
    path = str(tmp_path / "net")
    save_checkpoint(net, path, format="safetensors")
    assert os.path.exists(path + ".safetensors")
    # The file is plain safetensors: the package reads it without pijit.
    raw = safetensors_numpy.load_file(path + ".safetensors")
    assert sorted(raw) == sorted(params_of(net))
    for name, value in params_of(net).items():
        np.testing.assert_array_equal(raw[name], value)
    fresh = SmallNet()
    loaded = load_checkpoint(path + ".safetensors", net=fresh, format="safetensors")
    assert sorted(loaded) == sorted(params_of(net))
    x = ms.Tensor(np.random.default_rng(0).standard_normal((2, 1, 4, 4)).astype(np.float32))
    np.testing.assert_array_equal(fresh(x).asnumpy(), net(x).asnumpy())


def test_safetensors_keeps_dtypes_scalars_and_appended_strings(tmp_path):
    values = {
        "f16": np.array([1.5, -2.25], np.float16), "f64": np.array([[1e-300]], np.float64),
        "i8": np.array([-3, 4], np.int8), "i64": np.array([2 ** 40], np.int64),
        "u8": np.arange(5, dtype=np.uint8), "flag": np.array([True, False]),
        "scalar": np.array(3.5, np.float32), "empty": np.zeros((0, 3), np.float32),
    }
    save_obj = {k: ms.Tensor(v) for k, v in values.items()}
    save_obj["bf16"] = ms.Tensor(np.array([1.0, 2.5], np.float32)).astype(ms.bfloat16)
    path = str(tmp_path / "typed.safetensors")
    save_checkpoint(save_obj, path, format="safetensors",
                    append_dict={"epoch_num": 3, "note": "seven"})
    loaded = load_checkpoint(path, format="safetensors")
    for name, value in values.items():
        assert loaded[name].asnumpy().dtype == value.dtype, name
        assert loaded[name].shape == value.shape, name
        np.testing.assert_array_equal(loaded[name].asnumpy(), value)
    assert loaded["bf16"].dtype == ms.bfloat16
    np.testing.assert_array_equal(loaded["bf16"].astype(ms.float32).asnumpy(), [1.0, 2.5])
    assert int(loaded["epoch_num"].asnumpy()) == 3 and loaded["note"] == "seven"


def test_safetensors_errors(tmp_path):
    path = tmp_path / "net.safetensors"
    save_checkpoint(SmallNet(), str(path), format="safetensors")
    with pytest.raises(ValueError, match="must end with '.safetensors' for format='safetensors'"):
        load_checkpoint(str(tmp_path / "net.ckpt"), format="safetensors")
    with pytest.raises(ValueError, match="crc_check is for format='ckpt'"):
        save_checkpoint(SmallNet(), str(path), format="safetensors", crc_check=True)
    data = path.read_bytes()
    net = SmallNet()
    before = params_of(net)
    for damaged in (data[:len(data) - 7], data[:5], b"\x10" + b"\0" * 7 + b"{not json}" * 2):
        path.write_bytes(damaged)
        with pytest.raises(ValueError, match="net.safetensors: "):
            load_checkpoint(str(path), net=net, format="safetensors")
    for name, value in params_of(net).items():
        np.testing.assert_array_equal(value, before[name])


def test_a_killed_safetensors_save_is_atomic_too(tmp_path, monkeypatch):
    path = str(tmp_path / "net.safetensors")
    net = SmallNet()
    save_checkpoint(net, path, format="safetensors")
    before = digest(path)

    real_write = serialization.write_atomically

    def write_then_interrupt(target, write):
        def partial(f):  # an interrupt after some bytes reached the temporary file
            f.write(b"\0" * 10)
            raise KeyboardInterrupt
        return real_write(target, partial)

    monkeypatch.setattr(serialization, "write_atomically", write_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(SmallNet(), path, format="safetensors")
    assert digest(path) == before
    assert sorted(os.listdir(tmp_path)) == ["net.safetensors"]
