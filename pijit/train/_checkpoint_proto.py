"""The bytes of a MindSpore .ckpt file: a serialized protobuf `Checkpoint` message, as declared by
MindSpore's mindspore/ccsrc/utils/checkpoint.proto (proto2, no package):

    message Checkpoint {
        message Value {
            required string tag = 1;                 // the parameter's name
            oneof value {
                TensorProto tensor = 2;
                MapTensorProto maptensor = 3;        // MindSpore's MapParameter; not read here
            }
        }
        repeated Value value = 1;
    }
    message TensorProto {
        repeated int64 dims = 1;                     // the shape; [] (or [0]) for a scalar
        required string tensor_type = 2;             // "Float32", "BFloat16", "Int64", "str"...
        required bytes tensor_content = 3;           // the elements in C order, little-endian
    }
    message MapTensorProto { repeated TensorProto tensor = 1; }

MindSpore writes one serialized Checkpoint per parameter (several for a tensor over 512 MiB,
each holding a slice of the flattened elements) one after another. Concatenated protobuf messages
parse as one message whose repeated fields are joined, so a file reads as one Checkpoint whose
consecutive values with the same tag are the slices of one tensor.

Two codecs produce and accept the same bytes:
- ProtobufCodec uses the protobuf package, with message classes built at import from a
  descriptor made here (there is no protoc step and no generated _pb2 module). They live in a
  private descriptor pool, so they never clash with another library's "Checkpoint" message.
- WireCodec encodes and decodes the protobuf wire format by hand. It is used when the protobuf
  package is not installed, and it lets tests check the library's bytes against an independent
  implementation.
"""
from collections import namedtuple

from pijit.train._proto_classes import message_class

__all__ = ["Entry", "CheckpointFormatError", "ProtobufCodec", "WireCodec", "default_codec"]

# One Checkpoint.Value holding a tensor: (str, list[int], str, bytes).
Entry = namedtuple("Entry", ["tag", "dims", "tensor_type", "content"])


class CheckpointFormatError(ValueError):
    """The bytes are not a well-formed Checkpoint message."""


def _check_entries(entries):
    """Required fields present, and only tensor values (the proto2 `required` labels are not
    enforced by every protobuf runtime when parsing, so they are checked here)."""
    for i, entry in enumerate(entries):
        if entry is None:
            raise CheckpointFormatError(f"value {i} holds a map parameter (MapTensorProto), which "
                                        f"pijit cannot load")
        if entry.tag is None:
            raise CheckpointFormatError(f"value {i} has no tag (parameter name)")
        if entry.tensor_type is None or entry.content is None:
            raise CheckpointFormatError(f"value {i} ({entry.tag!r}) has no tensor, or its tensor "
                                        f"lacks tensor_type or tensor_content")
    return entries


# ---- the protobuf library route ------------------------------------------------------------------

def _checkpoint_message_class():
    """The Checkpoint message class, built from a FileDescriptorProto assembled in Python."""
    from google.protobuf import descriptor_pb2

    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="pijit_mindspore_checkpoint.proto",
                                               syntax="proto2")
    tensor = proto.message_type.add(name="TensorProto")
    tensor.field.add(name="dims", number=1, type=field.TYPE_INT64, label=field.LABEL_REPEATED)
    tensor.field.add(name="tensor_type", number=2, type=field.TYPE_STRING,
                     label=field.LABEL_REQUIRED)
    tensor.field.add(name="tensor_content", number=3, type=field.TYPE_BYTES,
                     label=field.LABEL_REQUIRED)
    map_tensor = proto.message_type.add(name="MapTensorProto")
    map_tensor.field.add(name="tensor", number=1, type=field.TYPE_MESSAGE,
                         label=field.LABEL_REPEATED, type_name=".TensorProto")
    checkpoint = proto.message_type.add(name="Checkpoint")
    value = checkpoint.nested_type.add(name="Value")
    value.oneof_decl.add(name="value")
    value.field.add(name="tag", number=1, type=field.TYPE_STRING, label=field.LABEL_REQUIRED)
    value.field.add(name="tensor", number=2, type=field.TYPE_MESSAGE, label=field.LABEL_OPTIONAL,
                    type_name=".TensorProto", oneof_index=0)
    value.field.add(name="maptensor", number=3, type=field.TYPE_MESSAGE,
                    label=field.LABEL_OPTIONAL, type_name=".MapTensorProto", oneof_index=0)
    checkpoint.field.add(name="value", number=1, type=field.TYPE_MESSAGE,
                         label=field.LABEL_REPEATED, type_name=".Checkpoint.Value")
    return message_class(proto, "Checkpoint")


class ProtobufCodec:
    """Encodes and decodes with the protobuf package."""

    name = "protobuf"

    def __init__(self):
        from google.protobuf import message

        self._checkpoint = _checkpoint_message_class()
        self._decode_error = message.DecodeError

    def encode(self, entry):
        """One serialized Checkpoint holding `entry`."""
        checkpoint = self._checkpoint()
        value = checkpoint.value.add()
        value.tag = entry.tag
        value.tensor.dims.extend(entry.dims)
        value.tensor.tensor_type = entry.tensor_type
        value.tensor.tensor_content = entry.content
        return checkpoint.SerializeToString()

    def decode(self, data):
        """The values of the Checkpoint message(s) in `data`, as Entries."""
        checkpoint = self._checkpoint()
        try:
            checkpoint.ParseFromString(data)
        except self._decode_error as e:
            raise CheckpointFormatError(f"malformed protobuf data ({e})") from None
        entries = []
        for value in checkpoint.value:
            kind = value.WhichOneof("value")
            if kind == "maptensor":
                entries.append(None)
                continue
            tensor = value.tensor if kind == "tensor" else None
            entries.append(Entry(_field(value, "tag"), list(value.tensor.dims),
                                 _field(tensor, "tensor_type"), _field(tensor, "tensor_content")))
        return _check_entries(entries)


def _field(message, name):
    """A proto2 field's value, or None when the message or the field is absent."""
    return getattr(message, name) if message is not None and message.HasField(name) else None


# ---- the wire format by hand ---------------------------------------------------------------------

_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5


def _varint(value):
    value &= (1 << 64) - 1  # int64 fields: negative numbers take ten bytes, as protobuf writes them
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _length_field(number, payload):
    return _varint(number << 3 | _LENGTH) + _varint(len(payload)) + payload


def _read_varint(data, pos, end):
    result, shift = 0, 0
    while True:
        if pos >= end or shift > 63:
            raise CheckpointFormatError("truncated or overlong varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result, pos


def _fields(data, start, end):
    """(field number, wire type, value, position after it) for each field in data[start:end]; a
    length-delimited value is the (start, end) of its payload."""
    pos = start
    while pos < end:
        key, pos = _read_varint(data, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise CheckpointFormatError("field number 0")
        if wire == _VARINT:
            value, pos = _read_varint(data, pos, end)
        elif wire == _LENGTH:
            size, pos = _read_varint(data, pos, end)
            value = (pos, pos + size)
            pos += size
        elif wire in (_FIXED64, _FIXED32):
            size = 8 if wire == _FIXED64 else 4
            value = bytes(data[pos:pos + size])
            pos += size
        else:
            raise CheckpointFormatError(f"unsupported wire type {wire}")
        if pos > end:
            raise CheckpointFormatError("a field runs past the end of its message")
        yield number, wire, value


def _signed64(value):
    return value - (1 << 64) if value >= 1 << 63 else value


class WireCodec:
    """Encodes and decodes the protobuf wire format directly (fields in number order, repeated
    int64 unpacked: what protobuf writes for proto2). Decoding also accepts packed dims and skips
    unknown fields, as protobuf does."""

    name = "wire"

    def encode(self, entry):
        tensor = b"".join(_varint(1 << 3 | _VARINT) + _varint(d) for d in entry.dims)
        tensor += _length_field(2, entry.tensor_type.encode("utf-8"))
        tensor += _length_field(3, bytes(entry.content))
        value = _length_field(1, entry.tag.encode("utf-8")) + _length_field(2, tensor)
        return _length_field(1, value)

    def decode(self, data):
        data = memoryview(bytes(data))
        entries = []
        for number, wire, value in _fields(data, 0, len(data)):
            if number == 1 and wire == _LENGTH:
                entries.append(self._value(data, *value))
        return _check_entries(entries)

    def _value(self, data, start, end):
        tag = tensor = None
        is_map = False
        for number, wire, value in _fields(data, start, end):
            if number == 1 and wire == _LENGTH:
                tag = self._text(data, value, "tag")
            elif number == 2 and wire == _LENGTH:
                tensor, is_map = self._tensor(data, *value), False
            elif number == 3 and wire == _LENGTH:
                is_map = True  # the oneof's last field set wins, as in protobuf
        if is_map:
            return None
        dims, tensor_type, content = tensor if tensor is not None else ([], None, None)
        return Entry(tag, dims, tensor_type, content)

    def _tensor(self, data, start, end):
        dims, tensor_type, content = [], None, None
        for number, wire, value in _fields(data, start, end):
            if number == 1 and wire == _VARINT:
                dims.append(_signed64(value))
            elif number == 1 and wire == _LENGTH:  # packed
                pos, stop = value
                while pos < stop:
                    dim, pos = _read_varint(data, pos, stop)
                    dims.append(_signed64(dim))
            elif number == 2 and wire == _LENGTH:
                tensor_type = self._text(data, value, "tensor_type")
            elif number == 3 and wire == _LENGTH:
                content = bytes(data[value[0]:value[1]])
        return dims, tensor_type, content

    @staticmethod
    def _text(data, span, what):
        try:
            return bytes(data[span[0]:span[1]]).decode("utf-8")
        except UnicodeDecodeError:
            raise CheckpointFormatError(f"{what} is not UTF-8 text") from None


def default_codec():
    """ProtobufCodec when the protobuf package is installed, WireCodec otherwise."""
    try:
        return ProtobufCodec()
    except ImportError:
        return WireCodec()
