"""pijit.train.summary: the summary file's bytes (record framing and CRC-32C checked by hand,
messages decoded by a wire-format walker written here), what SummaryRecord writes for scalars,
tensors, histograms and images against NumPy and Pillow references, and its errors."""
import importlib
import io
import os
import platform
import re
import struct
import sys

import numpy as np
import pytest

import pijit as ms
from pijit.train.summary import SummaryFormatError, SummaryRecord, read_summary
from pijit.train.summary import _crc32c
from pijit.train.summary._event_file import frame, read_records

# ---- an independent CRC-32C and protobuf wire walker ----------------------------------------


def bitwise_crc32c(data):
    """CRC-32C bit by bit, straight from the reflected Castagnoli polynomial."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def split_frames(data):
    """[(message, length_crc_ok, message_crc_ok)] read with struct and bitwise_crc32c."""
    frames, pos = [], 0
    while pos < len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        (length_crc,) = struct.unpack_from("<I", data, pos + 8)
        message = data[pos + 12:pos + 12 + length]
        (message_crc,) = struct.unpack_from("<I", data, pos + 12 + length)
        frames.append((message, masked(bitwise_crc32c(data[pos:pos + 8])) == length_crc,
                       masked(bitwise_crc32c(message)) == message_crc))
        pos += 16 + length
    return frames


def wire_fields(data):
    """{field number: [values]} of one protobuf message: varints as ints, fixed64 as doubles,
    fixed32 as floats, length-delimited as bytes."""
    fields, pos = {}, 0

    def varint():
        nonlocal pos
        shift = result = 0
        while True:
            byte = data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return result

    while pos < len(data):
        key = varint()
        number, kind = key >> 3, key & 7
        if kind == 0:
            value = varint()
        elif kind == 1:
            (value,) = struct.unpack_from("<d", data, pos)
            pos += 8
        elif kind == 5:
            (value,) = struct.unpack_from("<f", data, pos)
            pos += 4
        else:
            assert kind == 2
            length = varint()
            value, pos = data[pos:pos + length], pos + length
        fields.setdefault(number, []).append(value)
    return fields


def file_bytes(path):
    with open(path, "rb") as file:
        return file.read()


def tensor(values):
    return ms.Tensor(np.asarray(values))


# ---- CRC-32C ---------------------------------------------------------------------------------


def test_crc32c_check_value_and_implementations_agree():
    assert _crc32c.crc32c(b"123456789") == 0xE3069283
    assert _crc32c._python_crc32c(b"123456789") == 0xE3069283
    assert bitwise_crc32c(b"123456789") == 0xE3069283
    rng = np.random.default_rng(0)
    for size in (0, 1, 7, 64, 1000):
        data = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
        assert _crc32c.crc32c(data) == _crc32c._python_crc32c(data) == bitwise_crc32c(data)
        assert _crc32c.masked_crc32c(data) == masked(bitwise_crc32c(data))


def test_pure_python_fallback_is_used_without_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "google_crc32c", None)
    try:
        fallback = importlib.reload(_crc32c)
        assert fallback.implementation == "python"
        assert fallback.crc32c(b"123456789") == 0xE3069283
    finally:
        monkeypatch.undo()
        importlib.reload(_crc32c)


# ---- the file --------------------------------------------------------------------------------


def test_file_name_and_first_event_are_mindspores(tmp_path):
    with SummaryRecord(str(tmp_path)) as record:
        record.add_value("scalar", "loss", tensor(np.float32(0.5)))
        record.record(3)
        path = record.log_dir
    name = os.path.basename(path)
    assert os.path.dirname(path) == os.path.realpath(tmp_path)
    assert re.fullmatch(r"events\.out\.events\.summary\.\d+\.0\." + re.escape(platform.node())
                        + "_MS", name), name
    frames = split_frames(file_bytes(path))
    assert len(frames) == 2 and all(ok1 and ok2 for _, ok1, ok2 in frames)
    version = wire_fields(frames[0][0])
    assert version[3] == [b"MindSpore.Event:1"] and 1 in version
    event = wire_fields(frames[1][0])
    assert event[2] == [3]  # step
    value = wire_fields(wire_fields(event[5][0])[1][0])
    assert value[1] == [b"loss"] and value[3] == [0.5]
    events = read_summary(path)
    assert events[0].version == "MindSpore.Event:1"
    assert events[1].step == 3 and events[1].summary.value[0].scalar_value == 0.5
    assert not os.stat(path).st_mode & 0o222  # read-only once closed, as MindSpore leaves it


def test_prefix_and_suffix_and_no_file_before_a_record(tmp_path):
    record = SummaryRecord(str(tmp_path), file_prefix="run1", file_suffix="_x")
    assert os.path.basename(record.log_dir).startswith("run1.out.events.summary.")
    assert record.log_dir.endswith("_x")
    record.record(1)  # nothing added: nothing to write
    record.close()
    assert os.listdir(tmp_path) == []


def test_scalars_over_steps_and_newest_value_wins(tmp_path):
    with SummaryRecord(str(tmp_path)) as record:
        for step in range(1, 4):
            record.add_value("scalar", "a", tensor(np.float32(step)))
            record.add_value("scalar", "b", tensor(np.array([step * 10], np.int32)))
            record.add_value("scalar", "a", tensor(np.float64(step + 0.25)))
            record.record(step)
        record.record(4)  # values are written once
        path = record.log_dir
    events = read_summary(path)[1:]
    assert [e.step for e in events] == [1, 2, 3]
    for step, event in enumerate(events, 1):
        values = {v.tag: v.scalar_value for v in event.summary.value}
        assert values == {"a": step + 0.25, "b": step * 10}


def test_tensor_values(tmp_path):
    cases = {"f32": np.arange(6, dtype=np.float32).reshape(2, 3) / 4,
             "i64": np.array([[-3, 7]], np.int64), "b": np.array([True, False]),
             "f16": np.array([1.5, -2.25], np.float16)}
    expected_types = {"f32": 11, "i64": 5, "b": 1, "f16": 10}
    with SummaryRecord(str(tmp_path)) as record:
        for name, values in cases.items():
            record.add_value("tensor", name, tensor(values))
        record.record(0)
        path = record.log_dir
    written = {v.tag: v.tensor for v in read_summary(path)[1].summary.value}
    for name, values in cases.items():
        assert list(written[name].dims) == list(values.shape)
        assert written[name].data_type == expected_types[name]
        np.testing.assert_array_equal(np.array(written[name].float_data, np.float32),
                                      values.reshape(-1).astype(np.float32))


def expected_bucket_count(finite):
    """MindSpore's rule, spelled out: 2 buckets up to 5 values, 3 up to 10, then n // 10 + 1
    up to 90 buckets."""
    if finite == 0:
        return 1
    return 2 if finite <= 5 else 3 if finite <= 10 else min(finite // 10 + 1, 90)


@pytest.mark.parametrize("size", [1, 4, 9, 57, 880, 5000])
def test_histograms_match_numpy(tmp_path, size):
    rng = np.random.default_rng(size)
    values = rng.standard_normal(size).astype(np.float32)
    with_invalid = np.concatenate([values, np.float32([np.nan, np.inf, -np.inf, np.inf])])
    with SummaryRecord(str(tmp_path)) as record:
        record.add_value("histogram", "h", tensor(with_invalid))
        record.record(1)
        path = record.log_dir
    histogram = read_summary(path)[1].summary.value[0].histogram
    assert (histogram.count, histogram.nan_count, histogram.pos_inf_count,
            histogram.neg_inf_count) == (size + 4, 1, 2, 1)
    assert histogram.min == values.min() and histogram.max == values.max()
    assert histogram.sum == pytest.approx(values.astype(np.float64).sum(), rel=1e-9, abs=1e-9)
    low, high = float(values.min()), float(values.max())
    if low == high:
        low, high = low - 0.5, high + 0.5
    edges = np.linspace(low, high, expected_bucket_count(size) + 1, dtype=np.float32)
    counts, _ = np.histogram(values, bins=edges)
    assert [b.count for b in histogram.buckets] == counts.tolist()
    np.testing.assert_allclose([b.left for b in histogram.buckets], edges[:-1], rtol=0, atol=0)
    np.testing.assert_allclose([b.width for b in histogram.buckets], np.diff(edges.astype(
        np.float64)), rtol=1e-6, atol=1e-7)


def test_histogram_of_only_invalid_values_has_no_buckets(tmp_path):
    with SummaryRecord(str(tmp_path)) as record:
        record.add_value("histogram", "h", tensor(np.float32([np.nan, np.nan])))
        record.record(1)
        path = record.log_dir
    histogram = read_summary(path)[1].summary.value[0].histogram
    assert histogram.count == 2 and histogram.nan_count == 2 and not histogram.buckets


def decoded_png(value):
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(value.image.encoded_image)).convert("RGB"))


def test_images_are_pngs_of_a_grid(tmp_path):
    pytest.importorskip("PIL")
    rng = np.random.default_rng(1)
    unit = rng.random((1, 3, 5, 6)).astype(np.float32)            # [0, 1]: times 255
    gray = rng.integers(0, 256, (10, 1, 2, 3)).astype(np.uint8)   # uint8: as they are
    wide = (rng.random((2, 3, 4, 4)) * 40 - 20).astype(np.float32)  # mapped from the minimum
    with SummaryRecord(str(tmp_path)) as record:
        for name, images in (("unit", unit), ("gray", gray), ("wide", wide)):
            record.add_value("image", name, tensor(images))
        record.record(2)
        path = record.log_dir
    values = {v.tag: v for v in read_summary(path)[1].summary.value}
    expected_unit = (unit[0].transpose(1, 2, 0) * 255).astype(np.uint8)
    np.testing.assert_array_equal(decoded_png(values["unit"]), expected_unit)
    assert (values["unit"].image.height, values["unit"].image.width) == (5, 6)
    assert values["unit"].image.colorspace == 3
    # Ten images: two rows of up to eight, the two missing cells black.
    grid = np.zeros((4, 24, 3), np.uint8)
    for i in range(10):
        row, column = divmod(i, 8)
        grid[row * 2:row * 2 + 2, column * 3:column * 3 + 3] = gray[i, 0][:, :, None]
    np.testing.assert_array_equal(decoded_png(values["gray"]), grid)
    low, high = float(wide.min()), float(wide.max())
    canvas = np.concatenate([wide[0], wide[1]], axis=2).transpose(1, 2, 0)
    expected_wide = ((canvas - low) * (255 / (high - low + 1))).astype(np.uint8)
    np.testing.assert_array_equal(decoded_png(values["wide"]), expected_wide)


def test_images_without_pillow_raise_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    with SummaryRecord(str(tmp_path)) as record:
        with pytest.raises(ImportError, match="Pillow"):
            record.add_value("image", "img", tensor(np.zeros((1, 3, 2, 2), np.float32)))


def test_plugin_filter_and_export_options(tmp_path):
    with SummaryRecord(str(tmp_path), export_options={"tensor_format": "npy"}) as record:
        record.add_value("scalar", "s", tensor(np.float32(1)))
        record.add_value("tensor", "a/b", tensor(np.arange(3, dtype=np.int32)))
        record.record(7, plugin_filter=lambda plugin: plugin == "tensor")
        path = record.log_dir
    assert [v.tag for v in read_summary(path)[1].summary.value] == ["a/b"]
    exported = [os.path.join(root, name) for root, _, names in os.walk(tmp_path)
                for name in names if name.endswith(".npy")]
    assert [os.path.basename(p) for p in exported] == ["a%2Fb_7.npy"]
    np.testing.assert_array_equal(np.load(exported[0]), np.arange(3, dtype=np.int32))


def test_max_file_size_stops_the_file_with_a_warning(tmp_path):
    with SummaryRecord(str(tmp_path), max_file_size=200) as record:
        record.add_value("scalar", "s", tensor(np.float32(1)))
        record.record(1)
        record.add_value("tensor", "big", tensor(np.zeros(100, np.float32)))
        with pytest.warns(RuntimeWarning, match="max_file_size"):
            record.record(2)
        record.add_value("scalar", "s", tensor(np.float32(3)))
        record.record(3)
        path = record.log_dir
    assert os.path.getsize(path) <= 200
    assert [e.step for e in read_summary(path)[1:]] == [1]


# ---- the reader ------------------------------------------------------------------------------


def test_reader_rejects_corrupted_and_truncated_files(tmp_path):
    with SummaryRecord(str(tmp_path)) as record:
        record.add_value("scalar", "s", tensor(np.float32(1)))
        record.record(1)
        path = record.log_dir
    data = bytearray(file_bytes(path))
    assert len(read_records(bytes(data))) == 2
    corrupted = bytearray(data)
    corrupted[-6] ^= 0x01  # inside the last message
    with pytest.raises(SummaryFormatError, match="message CRC"):
        read_records(bytes(corrupted))
    corrupted = bytearray(data)
    corrupted[0] ^= 0x01  # the first length
    with pytest.raises(SummaryFormatError, match="length CRC"):
        read_records(bytes(corrupted))
    with pytest.raises(SummaryFormatError, match="truncated"):
        read_records(bytes(data[:-3]))
    not_an_event = tmp_path / "other"
    not_an_event.write_bytes(frame(b"\x0a\x01"))  # field 1 as bytes: wall_time is a double
    with pytest.raises(SummaryFormatError, match="not an Event"):
        read_summary(str(not_an_event))


# ---- errors ----------------------------------------------------------------------------------


def test_bad_arguments_raise_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="file_prefix"):
        SummaryRecord(str(tmp_path), file_prefix="a/b")
    with pytest.raises(TypeError, match="max_file_size"):
        SummaryRecord(str(tmp_path), max_file_size=1.5)
    with pytest.raises(ValueError, match="export_options"):
        SummaryRecord(str(tmp_path), export_options={"tensor_format": "csv"})
    with pytest.raises(TypeError, match="network"):
        SummaryRecord(str(tmp_path), network=object())
    record = SummaryRecord(str(tmp_path))
    with pytest.raises(ValueError, match="no such plugin 'scalars'"):
        record.add_value("scalars", "x", tensor(np.float32(1)))
    with pytest.raises(ValueError, match="does not record the 'graph' plugin"):
        record.add_value("graph", "g", tensor(np.float32(1)))
    with pytest.raises(ValueError, match="exactly one element"):
        record.add_value("scalar", "x", tensor(np.zeros(2, np.float32)))
    with pytest.raises(TypeError, match="must be a Tensor"):
        record.add_value("scalar", "x", 1.0)
    with pytest.raises(ValueError, match="valid tag name"):
        record.add_value("scalar", "", tensor(np.float32(1)))
    with pytest.raises(ValueError, match="at least one dimension"):
        record.add_value("histogram", "x", tensor(np.float32(1)))
    with pytest.raises(ValueError, match="NCHW"):
        record.add_value("image", "x", tensor(np.zeros((2, 2, 4, 4), np.float32)))
    with pytest.raises(TypeError, match="'step' must be an int"):
        record.record(True)
    with pytest.raises(ValueError, match="'train' or 'eval'"):
        record.set_mode("test")
    record.close()
    record.close()  # a second close does nothing
    with pytest.raises(ValueError, match="has been closed"):
        record.add_value("scalar", "x", tensor(np.float32(1)))
    with pytest.raises(ValueError, match="has been closed"):
        record.record(1)
    with pytest.raises(ValueError, match="has been closed"):
        with record:
            pass
