"""Checkpoints in MindSpore's .ckpt format: save_checkpoint, load_checkpoint and
load_param_into_net round trips, the file's protobuf layout (decoded independently with the
protobuf library and checked byte for byte), dtypes, and errors."""
import importlib.util
import os
import threading

import numpy as np
import pytest

import pijit as ms
from pijit import nn
from pijit.train import _checkpoint_proto as fmt
from pijit.train import serialization
from pijit.train.serialization import load_checkpoint, load_param_into_net, save_checkpoint


class SmallNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, pad_mode="valid")
        self.fc = nn.Dense(8, 3)
        self.scale = ms.Parameter(ms.Tensor(np.float32(1.5)), name="scale")

    def construct(self, x):
        return self.fc(self.conv(x).reshape((x.shape[0], -1))) * self.scale


def params_of(net):
    return {p.name: p.asnumpy().copy() for _, p in net.parameters_and_names()}


def independent_checkpoint_class():
    """The Checkpoint message of MindSpore's checkpoint.proto, declared here on its own (not
    with pijit's code), to decode files as MindSpore would."""
    descriptor_pb2 = pytest.importorskip(
        "google.protobuf.descriptor_pb2", reason="the protobuf package is not installed")
    from google.protobuf import descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="test_checkpoint.proto", syntax="proto2")
    tensor = proto.message_type.add(name="TensorProto")
    tensor.field.add(name="dims", number=1, type=F.TYPE_INT64, label=F.LABEL_REPEATED)
    tensor.field.add(name="tensor_type", number=2, type=F.TYPE_STRING, label=F.LABEL_REQUIRED)
    tensor.field.add(name="tensor_content", number=3, type=F.TYPE_BYTES, label=F.LABEL_REQUIRED)
    checkpoint = proto.message_type.add(name="Checkpoint")
    value = checkpoint.nested_type.add(name="Value")
    value.field.add(name="tag", number=1, type=F.TYPE_STRING, label=F.LABEL_REQUIRED)
    value.field.add(name="tensor", number=2, type=F.TYPE_MESSAGE, label=F.LABEL_REQUIRED,
                    type_name=".TensorProto")
    checkpoint.field.add(name="value", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                         type_name=".Checkpoint.Value")
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(proto.SerializeToString())
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("Checkpoint"))


def decode_independently(path):
    message = independent_checkpoint_class()()
    with open(path, "rb") as f:
        message.ParseFromString(f.read())
    assert message.IsInitialized()
    return message


# ---- round trips ---------------------------------------------------------------------------------

def test_save_a_network_and_load_it_into_a_fresh_one(tmp_path):
    ms.set_seed(1)
    net = SmallNet()
    path = str(tmp_path / "net.ckpt")
    save_checkpoint(net, path)
    ms.set_seed(2)
    fresh = SmallNet()
    assert any(not np.array_equal(a, params_of(fresh)[k]) for k, a in params_of(net).items())
    parameter_dict = load_checkpoint(path)
    assert list(parameter_dict) == [p.name for _, p in net.parameters_and_names()]
    assert all(isinstance(p, ms.Parameter) and p.name == k for k, p in parameter_dict.items())
    assert load_param_into_net(fresh, parameter_dict) == ([], [])
    for name, value in params_of(net).items():
        np.testing.assert_array_equal(params_of(fresh)[name], value)
    x = ms.Tensor(np.random.default_rng(0).standard_normal((2, 1, 4, 4)).astype(np.float32))
    np.testing.assert_array_equal(fresh(x).asnumpy(), net(x).asnumpy())
    # load_checkpoint(net=...) loads too; ".ckpt" is added to a name without it.
    save_checkpoint(net, str(tmp_path / "again"))
    other = SmallNet()
    load_checkpoint(str(tmp_path / "again.ckpt"), net=other)
    np.testing.assert_array_equal(params_of(other)["fc.weight"], params_of(net)["fc.weight"])


def test_the_file_decodes_with_protobuf_as_mindspore_declares_it(tmp_path):
    weight = np.arange(6, dtype=np.float32).reshape(2, 3)
    step = np.array(7, np.int32)
    path = str(tmp_path / "layout.ckpt")
    save_checkpoint([{"name": "w", "data": ms.Tensor(weight)},
                     {"name": "step", "data": ms.Tensor(step)}], path)
    message = decode_independently(path)
    assert [v.tag for v in message.value] == ["w", "step"]
    w, s = message.value[0].tensor, message.value[1].tensor
    assert list(w.dims) == [2, 3] and w.tensor_type == "Float32"
    assert w.tensor_content == weight.tobytes()
    assert list(s.dims) == [] and s.tensor_type == "Int32" and s.tensor_content == step.tobytes()
    # The whole file is exactly the message, serialized by protobuf.
    with open(path, "rb") as f:
        assert f.read() == message.SerializeToString()


HAVE_PROTOBUF = importlib.util.find_spec("google.protobuf") is not None
needs_protobuf = pytest.mark.skipif(not HAVE_PROTOBUF,
                                    reason="the protobuf package is not installed")


def test_golden_bytes_of_one_entry():
    content = np.array([1.0, 2.0], np.float32).tobytes()
    tensor = b"\x08\x02" + b"\x12\x07Float32" + b"\x1a\x08" + content   # dims, type, content
    value = b"\x0a\x01w" + b"\x12" + bytes([len(tensor)]) + tensor       # tag, tensor
    golden = b"\x0a" + bytes([len(value)]) + value                       # Checkpoint.value
    entry = fmt.Entry("w", [2], "Float32", content)
    codecs = [fmt.WireCodec()] + ([fmt.ProtobufCodec()] if HAVE_PROTOBUF else [])
    for codec in codecs:
        assert codec.encode(entry) == golden, codec.name
        assert codec.decode(golden) == [entry], codec.name
    assert type(fmt.default_codec()) is (fmt.ProtobufCodec if HAVE_PROTOBUF else fmt.WireCodec)


@needs_protobuf
def test_the_two_codecs_agree_on_every_file():
    rng = np.random.default_rng(3)
    entries = [fmt.Entry("conv.weight", [4, 1, 3, 3], "Float32",
                         rng.standard_normal(36).astype(np.float32).tobytes()),
               fmt.Entry("scalar", [], "Float64", np.float64(2.5).tobytes()),
               fmt.Entry("big.dims", [300, 70000, 0], "Int8", b""),
               fmt.Entry("名前", [2], "BFloat16", b"\x80\x3f\x00\x40"),
               fmt.Entry("note", [0], "str", np.array("hi").tobytes())]
    wire, library = fmt.WireCodec(), fmt.ProtobufCodec()
    data = b"".join(library.encode(e) for e in entries)
    assert b"".join(wire.encode(e) for e in entries) == data
    assert wire.decode(data) == library.decode(data) == entries
    # Packed dims (which protobuf accepts for a repeated int64) decode too.
    packed = b"\x0a\x05" + b"\x03\x04\x05\x06\x07"
    tensor = packed + b"\x12\x04Int8" + b"\x1a\x00"
    value = b"\x0a\x01p\x12" + bytes([len(tensor)]) + tensor
    message = b"\x0a" + bytes([len(value)]) + value
    assert wire.decode(message) == library.decode(message) == [
        fmt.Entry("p", [3, 4, 5, 6, 7], "Int8", b"")]
    # A value without a tensor, or a map parameter, is refused by both.
    for bad, why in ((b"\x0a\x03\x0a\x01q", "no tensor"), (b"\x0a\x05\x0a\x01q\x1a\x00",
                                                            "map parameter")):
        for codec in (wire, library):
            with pytest.raises(fmt.CheckpointFormatError, match=why):
                codec.decode(bad)


@pytest.mark.parametrize("dtype", [ms.bfloat16, ms.float16, ms.float32, ms.float64, ms.int8,
                                   ms.int16, ms.int32, ms.int64, ms.uint8, ms.uint16, ms.uint32,
                                   ms.uint64, ms.bool_])
def test_dtypes_round_trip(tmp_path, dtype):
    rng = np.random.default_rng(5)
    values = rng.standard_normal((3, 4)) * 50
    if str(dtype).startswith("UInt"):
        values = np.abs(values)  # (negative floats have no unsigned value)
    source = ms.Tensor(values.astype(np.float32)).astype(dtype)
    path = str(tmp_path / "dtype.ckpt")
    save_checkpoint({"t": ms.Parameter(source, name="t")}, path)
    loaded = load_checkpoint(path)["t"]
    assert loaded.dtype == dtype and loaded.shape == (3, 4)
    expected, got = source.asnumpy(), loaded.asnumpy()
    assert got.tobytes() == expected.tobytes()  # bit for bit, bfloat16 included
    assert decode_independently(path).value[0].tensor.tensor_type == str(dtype)


def test_scalars_empty_tensors_and_strings_round_trip(tmp_path):
    path = str(tmp_path / "shapes.ckpt")
    save_checkpoint({"scalar": ms.Parameter(np.float32(3.25), name="scalar"),
                     "one": ms.Parameter(np.array([4], np.int64), name="one"),
                     "empty": ms.Parameter(np.zeros((0, 3), np.float32), name="empty")},
                    path, append_dict={"epoch_num": 5, "lr": 0.5, "flag": True, "tag": "run-7"})
    loaded = load_checkpoint(path)
    assert loaded["scalar"].shape == () and float(loaded["scalar"].asnumpy()) == 3.25
    assert loaded["one"].shape == (1,) and loaded["empty"].shape == (0, 3)
    assert loaded["epoch_num"].dtype == ms.int64 and int(loaded["epoch_num"].asnumpy()) == 5
    assert loaded["lr"].dtype == ms.float32 and loaded["flag"].dtype == ms.bool_
    assert loaded["tag"] == "run-7"
    message = decode_independently(path)
    note = [v for v in message.value if v.tag == "tag"][0].tensor
    assert note.tensor_type == "str" and list(note.dims) == [0]


def test_a_scalar_written_with_dims_0_loads_as_a_scalar(tmp_path):
    # MindSpore before 2.3 wrote a scalar's shape as [0].
    path = tmp_path / "old.ckpt"
    path.write_bytes(fmt.WireCodec().encode(fmt.Entry("s", [0], "Float32",
                                                      np.float32(1.5).tobytes())))
    loaded = load_checkpoint(str(path))["s"]
    assert loaded.shape == () and float(loaded.asnumpy()) == 1.5


def test_large_tensors_are_written_in_slices_and_joined_on_load(tmp_path, monkeypatch):
    monkeypatch.setattr(serialization, "_SLICE_BYTES", 100)
    weight = np.arange(60, dtype=np.float32).reshape(6, 10)   # 240 bytes: 3 slices
    path = str(tmp_path / "sliced.ckpt")
    save_checkpoint({"w": ms.Parameter(weight, name="w"), "b": ms.Parameter(np.ones(2, np.float32),
                                                                          name="b")}, path)
    message = decode_independently(path)
    assert [v.tag for v in message.value] == ["w", "w", "w", "b"]
    assert all(list(v.tensor.dims) == [6, 10] for v in message.value[:3])
    assert b"".join(v.tensor.tensor_content for v in message.value[:3]) == weight.tobytes()
    np.testing.assert_array_equal(load_checkpoint(path)["w"].asnumpy(), weight)


# ---- what save_checkpoint takes ------------------------------------------------------------------

def test_save_obj_forms_and_choice_func(tmp_path):
    net = SmallNet()
    params = net.trainable_params()
    save_checkpoint(params, str(tmp_path / "list.ckpt"))
    assert list(load_checkpoint(str(tmp_path / "list.ckpt"))) == [p.name for p in params]
    save_checkpoint(net, str(tmp_path / "chosen.ckpt"), choice_func=lambda n: n.startswith("fc"))
    assert sorted(load_checkpoint(str(tmp_path / "chosen.ckpt"))) == ["fc.bias", "fc.weight"]
    loaded = load_checkpoint(str(tmp_path / "list.ckpt"))
    save_checkpoint(loaded, str(tmp_path / "dict.ckpt"))
    again = load_checkpoint(str(tmp_path / "dict.ckpt"))
    assert list(again) == list(loaded)
    for name in loaded:
        np.testing.assert_array_equal(again[name].asnumpy(), loaded[name].asnumpy())


def test_save_argument_errors(tmp_path):
    with pytest.raises(TypeError, match="save_checkpoint.*'save_obj' must be a Cell, a list or "
                                        "a dict, got int"):
        save_checkpoint(3, str(tmp_path / "x.ckpt"))
    with pytest.raises(TypeError, match="save_checkpoint.*'ckpt_file_name' must be a str"):
        save_checkpoint(SmallNet(), 5)
    with pytest.raises(IsADirectoryError, match="save_checkpoint.*is a directory"):
        save_checkpoint(SmallNet(), str(tmp_path))
    with pytest.raises(TypeError, match="save_checkpoint.*Parameters or \\{'name', 'data'\\}"):
        save_checkpoint([1, 2], str(tmp_path / "x.ckpt"))
    with pytest.raises(TypeError, match="save_checkpoint.*'append_dict' maps str keys"):
        save_checkpoint(SmallNet(), str(tmp_path / "x.ckpt"), append_dict={"a": [1]})
    with pytest.raises(ValueError, match="save_checkpoint.*format must be one of \\['ckpt', "
                                         "'safetensors'\\], got 'npz'"):
        save_checkpoint(SmallNet(), str(tmp_path / "x.ckpt"), format="npz")
    with pytest.raises(NotImplementedError, match="enc_key"):
        save_checkpoint(SmallNet(), str(tmp_path / "x.ckpt"), enc_key=b"0" * 16)
    assert not os.path.exists(tmp_path / "x.ckpt")


def test_async_save_and_crc_check(tmp_path):
    net = SmallNet()
    path = str(tmp_path / "async.ckpt")
    save_checkpoint(net, path, async_save=True, crc_check=True)
    for thread in threading.enumerate():
        if thread.name == "asyn_save_ckpt":
            thread.join()
    loaded = load_checkpoint(path, crc_check=True)
    np.testing.assert_array_equal(loaded["fc.weight"].asnumpy(), params_of(net)["fc.weight"])
    data = bytearray(open(path, "rb").read())
    data[40] ^= 0xFF  # inside the first tensor's bytes
    with open(path, "wb") as f:
        f.write(bytes(data))
    with pytest.raises(ValueError, match="CRC check of .* failed"):
        load_checkpoint(path, crc_check=True)


# ---- load_checkpoint's selection and errors ------------------------------------------------------

def test_prefix_filters(tmp_path):
    path = str(tmp_path / "net.ckpt")
    save_checkpoint(SmallNet(), path)
    assert sorted(load_checkpoint(path, filter_prefix="conv")) == ["fc.bias", "fc.weight",
                                                                   "scale"]
    assert sorted(load_checkpoint(path, specify_prefix=["conv", "scale"])) == [
        "conv.weight", "scale"]
    assert sorted(load_checkpoint(path, choice_func=lambda n: n.endswith("bias"))) == ["fc.bias"]
    with pytest.raises(ValueError, match="load_checkpoint.*no parameter was loaded"):
        load_checkpoint(path, specify_prefix="nothing")
    with pytest.raises(ValueError, match="load_checkpoint.*'filter_prefix' must hold non-empty"):
        load_checkpoint(path, filter_prefix=[""])
    with pytest.raises(TypeError, match="load_checkpoint.*'specify_prefix' must be a str"):
        load_checkpoint(path, specify_prefix=3)


def test_load_errors_for_missing_corrupt_and_strange_files(tmp_path):
    with pytest.raises(ValueError, match="load_checkpoint.*missing.ckpt does not exist"):
        load_checkpoint(str(tmp_path / "missing.ckpt"))
    with pytest.raises(ValueError, match="load_checkpoint.*must end with '.ckpt'"):
        load_checkpoint(str(tmp_path / "net.bin"))
    with pytest.raises(TypeError, match="load_checkpoint.*'ckpt_file_name' must be a str"):
        load_checkpoint(None)
    good = tmp_path / "good.ckpt"
    save_checkpoint(SmallNet(), str(good))
    data = good.read_bytes()
    truncated = tmp_path / "truncated.ckpt"
    truncated.write_bytes(data[:len(data) - 5])
    with pytest.raises(ValueError, match="Failed to read the checkpoint file .*truncated.ckpt: "
                                         "it is corrupted"):
        load_checkpoint(str(truncated))
    garbage = tmp_path / "garbage.ckpt"
    garbage.write_bytes(b"\xff" * 64)
    with pytest.raises(ValueError, match="garbage.ckpt: it is corrupted"):
        load_checkpoint(str(garbage))
    empty = tmp_path / "empty.ckpt"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="no parameter was loaded"):
        load_checkpoint(str(empty))
    codec = fmt.WireCodec()
    short = tmp_path / "short.ckpt"
    short.write_bytes(codec.encode(fmt.Entry("fc.weight", [2, 3], "Float32", b"\0" * 8)))
    with pytest.raises(ValueError, match="parameter 'fc.weight' .* shape \\(2, 3\\) \\(Float32\\) "
                                         "but 8 bytes"):
        load_checkpoint(str(short))
    untyped = tmp_path / "untyped.ckpt"
    untyped.write_bytes(codec.encode(fmt.Entry("x", [1], "Complex64", b"\0" * 8)))
    with pytest.raises(ValueError, match="parameter 'x' .* unknown tensor_type 'Complex64'"):
        load_checkpoint(str(untyped))


# ---- load_param_into_net -------------------------------------------------------------------------

def test_shape_and_dtype_mismatches_name_the_parameter(tmp_path):
    net = SmallNet()
    wrong_shape = {"fc.weight": ms.Parameter(np.zeros((3, 9), np.float32), name="fc.weight")}
    with pytest.raises(RuntimeError, match="load_param_into_net.*fc.weight has shape \\(3, 8\\) "
                                           "in the network but \\(3, 9\\)"):
        load_param_into_net(net, wrong_shape)
    wrong_kind = {"fc.bias": ms.Parameter(np.zeros(3, np.int32), name="fc.bias")}
    with pytest.raises(RuntimeError, match="fc.bias is Float32 in the network but Int32"):
        load_param_into_net(net, wrong_kind)
    half = {"fc.bias": ms.Parameter(np.array([1.5, 2.5, 3.5], np.float16), name="fc.bias")}
    with pytest.raises(RuntimeError, match="fc.bias is Float32 in the network but Float16"):
        load_param_into_net(net, half, strict_load=True)
    not_loaded, unused = load_param_into_net(net, half)  # converted without strict_load
    assert "fc.bias" not in not_loaded and unused == []
    np.testing.assert_array_equal(net.fc.bias.asnumpy(), [1.5, 2.5, 3.5])
    assert net.fc.bias.dtype == ms.float32
    trailing_ones = {"fc.bias": ms.Parameter(np.ones((3, 1, 1), np.float32), name="fc.bias")}
    load_param_into_net(net, trailing_ones)  # MindSpore accepts extra trailing 1s
    np.testing.assert_array_equal(net.fc.bias.asnumpy(), np.ones(3))
    with pytest.raises(TypeError, match="load_param_into_net.*'net' must be a Cell"):
        load_param_into_net({}, half)
    with pytest.raises(TypeError, match="load_param_into_net.*'parameter_dict' must be a dict"):
        load_param_into_net(net, [])
    with pytest.raises(TypeError, match="load_param_into_net.*maps str names to Parameters"):
        load_param_into_net(net, {"fc.bias": 3})


def test_names_missing_on_either_side_and_prefixed_names(tmp_path):
    net = SmallNet()
    source = SmallNet()
    parameter_dict = {"extra": ms.Parameter(np.ones(1, np.float32), name="extra"),
                      "fc.weight": ms.Parameter(source.fc.weight.asnumpy(), name="fc.weight")}
    not_loaded, unused = load_param_into_net(net, parameter_dict, strict_load=True)
    assert sorted(not_loaded) == ["conv.weight", "fc.bias", "scale"] and unused == ["extra"]
    # A checkpoint of a wrapper network: every name has a prefix, found and stripped.
    wrapped = {"backbone." + p.name: ms.Parameter(p.asnumpy(), name="backbone." + p.name)
               for _, p in source.parameters_and_names()}
    fresh = SmallNet()
    assert load_param_into_net(fresh, wrapped, strict_load=True)[0] != []
    assert load_param_into_net(fresh, wrapped) == ([], [])
    for name, value in params_of(source).items():
        np.testing.assert_array_equal(params_of(fresh)[name], value)


def test_a_checkpoint_of_a_training_network_holds_the_optimizer_state(tmp_path):
    net = nn.Dense(3, 2)
    optimizer = nn.Momentum(net.trainable_params(), 0.1, 0.9)
    train_net = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), optimizer)
    x = ms.Tensor(np.ones((4, 3), np.float32))
    y = ms.Tensor(np.zeros((4, 2), np.float32))
    train_net(x, y)
    path = str(tmp_path / "train.ckpt")
    save_checkpoint(train_net, path)
    names = list(load_checkpoint(path))
    assert {"weight", "bias", "learning_rate", "global_step", "moments.weight"} <= set(names)
    fresh = nn.Dense(3, 2)
    not_loaded, unused = load_param_into_net(fresh, load_checkpoint(path))
    assert not_loaded == [] and "moments.weight" in unused
    np.testing.assert_array_equal(fresh.weight.asnumpy(), net.weight.asnumpy())


# ---- files written by MindSpore itself -----------------------------------------------------------
#
# MindSpore runs in a separate interpreter: the one PIJIT_MINDSPORE_PYTHON names, else this one.
# (MindSpore's wheels need numpy<2, so it often lives in an environment of its own.) The
# networks match layer for layer, the outputs are computed on each side and compared.

# The network both sides save and load; the same text builds it on either side.
NET_SOURCE = """
class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, pad_mode="valid", has_bias=True)
        self.fc = nn.Dense(64, 3)

    def construct(self, x):
        return self.fc(self.conv(x).reshape(x.shape[0], -1))
"""

MINDSPORE_SIDE = '''
import sys
import numpy as np
import mindspore as ms
from mindspore import nn

folder, fmt = sys.argv[1], sys.argv[2]
suffix = ".ckpt" if fmt == "ckpt" else ".safetensors"

''' + NET_SOURCE + '''

ms.set_seed(5)
x = ms.Tensor(np.load(folder + "/x.npy"))
net = Net()
# MindSpore's safetensors writer stores numbers but not strings from append_dict.
extra = {"epoch_num": 7, "note": "written by mindspore"} if fmt == "ckpt" else {"epoch_num": 7}
ms.save_checkpoint(net, folder + "/from_mindspore" + suffix, format=fmt, append_dict=extra)
np.save(folder + "/mindspore_out.npy", net(x).asnumpy())
typed = [{"name": "half", "data": ms.Tensor(np.array([1.5, -2.25], np.float16))},
         {"name": "count", "data": ms.Tensor(np.array([3, 4], np.int64))},
         {"name": "flag", "data": ms.Tensor(np.array([True, False]))},
         {"name": "bf16", "data": ms.Tensor(np.array([1.0, 2.5], np.float32), ms.bfloat16)}]
ms.save_checkpoint(typed, folder + "/typed" + suffix, format=fmt)
fresh = Net()
not_loaded, _ = ms.load_param_into_net(
    fresh, ms.load_checkpoint(folder + "/from_pijit" + suffix, format=fmt))
assert not not_loaded, not_loaded
np.save(folder + "/mindspore_from_pijit_out.npy", fresh(x).asnumpy())
print("mindspore", ms.__version__)
'''

# Ops, not just the import: a mindspore built for numpy<2 imports under numpy 2, warns
# "Numpy init failed" and fails at some ops (reshape, add) but not others.
PROBE = ("import numpy, mindspore; from mindspore import nn; "
         "x = mindspore.Tensor(numpy.ones((1, 2), numpy.float32)); "
         "nn.Dense(2, 1)((x.reshape(2, 1) + 1).reshape(1, 2)).asnumpy()")


def mindspore_python():
    """(interpreter, None) for a Python whose mindspore works, or (None, why not)."""
    import subprocess
    import sys
    candidates = [os.environ.get("PIJIT_MINDSPORE_PYTHON"), sys.executable]
    reasons = []
    for python in [c for c in candidates if c]:
        try:
            probe = subprocess.run([python, "-c", PROBE], capture_output=True, text=True,
                                   timeout=180)
        except (OSError, subprocess.TimeoutExpired) as e:
            reasons.append(f"{python}: {e}")
            continue
        if probe.returncode == 0 and "Numpy init failed" not in probe.stderr:
            return python, None
        lines = [line for line in probe.stderr.strip().splitlines() if line.strip()]
        numpy_clash = "compiled using NumPy 1.x" in probe.stderr
        reasons.append(f"{python}: " + ("its mindspore needs numpy<2" if numpy_clash
                                        else lines[-1] if lines else "failed"))
    return None, ("mindspore cannot be imported and run (" + "; ".join(reasons) + "); set "
                  "PIJIT_MINDSPORE_PYTHON to a Python with a working mindspore to run this test")


def mindspore_net():
    """The network of MINDSPORE_SIDE, in pijit."""
    scope = {"nn": nn}
    exec(NET_SOURCE, scope)  # noqa: S102 - the same network MindSpore built
    return scope["Net"]()


@pytest.fixture(scope="module")
def mindspore_interpreter():
    python, why_not = mindspore_python()
    if python is None:
        pytest.skip(why_not)
    return python


@pytest.mark.parametrize("format", ["ckpt", "safetensors"])
def test_checkpoints_move_between_mindspore_and_pijit_with_equal_outputs(
        tmp_path, mindspore_interpreter, format):
    import subprocess
    suffix = ".ckpt" if format == "ckpt" else ".safetensors"
    if format == "safetensors":
        pytest.importorskip("safetensors", reason="format='safetensors' needs safetensors")
    folder = str(tmp_path)
    x = np.random.default_rng(0).standard_normal((2, 1, 6, 6)).astype(np.float32)
    np.save(os.path.join(folder, "x.npy"), x)
    ms.set_seed(9)
    ours = mindspore_net()
    save_checkpoint(ours, os.path.join(folder, "from_pijit" + suffix), format=format)
    result = subprocess.run([mindspore_interpreter, "-c", MINDSPORE_SIDE, folder, format],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    # MindSpore's file in pijit: every parameter loaded, the same outputs.
    fresh = mindspore_net()
    loaded = load_checkpoint(os.path.join(folder, "from_mindspore" + suffix), format=format)
    extra = ["epoch_num", "note"] if format == "ckpt" else ["epoch_num"]
    assert load_param_into_net(fresh, loaded) == ([], extra)
    assert int(loaded["epoch_num"].asnumpy()) == 7
    assert format != "ckpt" or loaded["note"] == "written by mindspore"
    np.testing.assert_allclose(fresh(ms.Tensor(x)).asnumpy(),
                               np.load(os.path.join(folder, "mindspore_out.npy")),
                               rtol=1e-5, atol=1e-6)
    # pijit's file in MindSpore: the same outputs there.
    np.testing.assert_allclose(np.load(os.path.join(folder, "mindspore_from_pijit_out.npy")),
                               ours(ms.Tensor(x)).asnumpy(), rtol=1e-5, atol=1e-6)
    typed = load_checkpoint(os.path.join(folder, "typed" + suffix), format=format)
    np.testing.assert_array_equal(typed["half"].asnumpy(), np.array([1.5, -2.25], np.float16))
    assert typed["count"].dtype == ms.int64 and typed["flag"].dtype == ms.bool_
    np.testing.assert_array_equal(typed["count"].asnumpy(), [3, 4])
    np.testing.assert_array_equal(typed["flag"].asnumpy(), [True, False])
    assert typed["bf16"].dtype == ms.bfloat16
    np.testing.assert_array_equal(typed["bf16"].astype(ms.float32).asnumpy(), [1.0, 2.5])


# The layers whose parameter names (checkpoint keys) and shapes must equal MindSpore's; the
# same text builds them on either side.
LAYERS_SOURCE = """
layers = {
    "Dense": lambda: nn.Dense(3, 4),
    "Conv2d": lambda: nn.Conv2d(3, 4, 3, has_bias=True),
    "Conv2dTranspose": lambda: nn.Conv2dTranspose(3, 4, 3, has_bias=True),
    "Conv1d": lambda: nn.Conv1d(3, 4, 3, has_bias=True),
    "Conv1dTranspose": lambda: nn.Conv1dTranspose(3, 4, 3, has_bias=True),
    "BatchNorm2d": lambda: nn.BatchNorm2d(4),
    "BatchNorm1d": lambda: nn.BatchNorm1d(4),
    "LayerNorm": lambda: nn.LayerNorm((4,)),
    "GroupNorm": lambda: nn.GroupNorm(2, 4),
    "InstanceNorm2d": lambda: nn.InstanceNorm2d(4),
    "Embedding": lambda: nn.Embedding(10, 4),
    "PReLU": lambda: nn.PReLU(4),
    "LSTM": lambda: nn.LSTM(3, 4, num_layers=2, bidirectional=True),
    "GRU": lambda: nn.GRU(3, 4),
    "RNN": lambda: nn.RNN(3, 4),
    "LSTMCell": lambda: nn.LSTMCell(3, 4),
    "GRUCell": lambda: nn.GRUCell(3, 4),
    "MultiheadAttention": lambda: nn.MultiheadAttention(8, 2),
    "TransformerEncoderLayer": lambda: nn.TransformerEncoderLayer(8, 2, 16),
    "TransformerDecoderLayer": lambda: nn.TransformerDecoderLayer(8, 2, 16),
}


class Holder(nn.Cell):
    def __init__(self, layer):
        super().__init__()
        self.layer = layer


def names():
    return {name: sorted([p.name, list(p.shape)] for p in Holder(make()).get_parameters())
            for name, make in layers.items()}
"""
NAMES_SIDE = "import json\nfrom mindspore import nn\n" + LAYERS_SOURCE + "print(json.dumps(names()))\n"


def test_layer_parameter_names_and_shapes_match_mindspores(mindspore_interpreter):
    import json
    import subprocess
    result = subprocess.run([mindspore_interpreter, "-c", NAMES_SIDE], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    theirs = json.loads(result.stdout.strip().splitlines()[-1])
    scope = {"nn": nn}
    exec(LAYERS_SOURCE, scope)  # noqa: S102 - the same layer list MindSpore built
    assert scope["names"]() == theirs


def test_batch_norm_and_prelu_parameters_carry_mindspores_names():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm2d(2)
            self.act = nn.PReLU(2)

    assert [p.name for p in Net().get_parameters()] == [
        "bn.moving_mean", "bn.moving_variance", "bn.gamma", "bn.beta", "act.w"]
