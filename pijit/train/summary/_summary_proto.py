"""Message classes for MindSpore's summary events, built at import from a descriptor made here
(no protoc step, no generated _pb2 module), in a private descriptor pool so that they never clash
with another library's messages of the same names.

They declare the part of MindSpore's mindspore/ccsrc/utils/summary.proto (package mindspore.irpb,
proto2) and of anf_ir.proto that pijit writes and reads:

    message Event {
        required double wall_time = 1;
        optional int64 step = 2;
        oneof what { string version = 3; GraphProto graph_def = 4; Summary summary = 5;
                     Explain explain = 6; }          // graph_def and explain: not declared here
    }
    message Summary {
        message Image { required int32 height = 1; required int32 width = 2;
                        required int32 colorspace = 3; required bytes encoded_image = 4; }
        message Histogram {
            message bucket { required double left = 1; required double width = 2;
                             required int64 count = 3; }
            repeated bucket buckets = 1; optional int64 nan_count = 2;
            optional int64 pos_inf_count = 3; optional int64 neg_inf_count = 4;
            optional double max = 5; optional double min = 6; optional double sum = 7;
            optional int64 count = 8;
        }
        message Value {
            required string tag = 1;
            oneof value { float scalar_value = 3; Image image = 4; TensorProto tensor = 8;
                          Histogram histogram = 9; }
        }
        repeated Value value = 1;
    }
    message TensorProto {                            // anf_ir.proto
        repeated int64 dims = 1; optional DataType data_type = 2;
        repeated float float_data = 3 [packed = true]; ...   // 4-8: other element fields
    }

Fields not declared here (a graph event, an explanation) survive parsing as unknown fields.
"""
import functools

from pijit.train._proto_classes import message_class

__all__ = ["Event", "DATA_TYPES"]

# anf_ir.proto's DataType values for the element types a summary tensor may have.
DATA_TYPES = {"DT_UNDEFINED": 0, "DT_BOOL": 1, "DT_INT8": 2, "DT_INT16": 3, "DT_INT32": 4,
              "DT_INT64": 5, "DT_UINT8": 6, "DT_UINT16": 7, "DT_UINT32": 8, "DT_UINT64": 9,
              "DT_FLOAT16": 10, "DT_FLOAT32": 11, "DT_FLOAT64": 12}


def _add_fields(message, fields):
    """fields: (name, number, type, label[, type_name][, oneof_index][, packed])."""
    from google.protobuf import descriptor_pb2

    for name, number, kind, label, *rest in fields:
        field = message.field.add(name=name, number=number, type=kind, label=label)
        for extra in rest:
            if isinstance(extra, str):
                field.type_name = extra
            elif isinstance(extra, bool):
                field.options.CopyFrom(descriptor_pb2.FieldOptions(packed=extra))
            else:
                field.oneof_index = extra


def _tensor_proto(proto, f):
    enum = proto.enum_type.add(name="DataType")
    for name, number in DATA_TYPES.items():
        enum.value.add(name=name, number=number)
    tensor = proto.message_type.add(name="TensorProto")
    _add_fields(tensor, [
        ("dims", 1, f.TYPE_INT64, f.LABEL_REPEATED),
        ("data_type", 2, f.TYPE_ENUM, f.LABEL_OPTIONAL, ".mindspore.irpb.DataType"),
        ("float_data", 3, f.TYPE_FLOAT, f.LABEL_REPEATED, True),
        ("int32_data", 4, f.TYPE_INT32, f.LABEL_REPEATED, True),
        ("int64_data", 5, f.TYPE_INT64, f.LABEL_REPEATED, True),
        ("double_data", 6, f.TYPE_DOUBLE, f.LABEL_REPEATED, True),
        ("uint64_data", 7, f.TYPE_UINT64, f.LABEL_REPEATED, True),
        ("raw_data", 8, f.TYPE_BYTES, f.LABEL_OPTIONAL)])


def _summary(proto, f):
    summary = proto.message_type.add(name="Summary")
    image = summary.nested_type.add(name="Image")
    _add_fields(image, [("height", 1, f.TYPE_INT32, f.LABEL_REQUIRED),
                        ("width", 2, f.TYPE_INT32, f.LABEL_REQUIRED),
                        ("colorspace", 3, f.TYPE_INT32, f.LABEL_REQUIRED),
                        ("encoded_image", 4, f.TYPE_BYTES, f.LABEL_REQUIRED)])
    histogram = summary.nested_type.add(name="Histogram")
    bucket = histogram.nested_type.add(name="bucket")
    _add_fields(bucket, [("left", 1, f.TYPE_DOUBLE, f.LABEL_REQUIRED),
                         ("width", 2, f.TYPE_DOUBLE, f.LABEL_REQUIRED),
                         ("count", 3, f.TYPE_INT64, f.LABEL_REQUIRED)])
    _add_fields(histogram, [
        ("buckets", 1, f.TYPE_MESSAGE, f.LABEL_REPEATED, ".mindspore.irpb.Summary.Histogram.bucket"),
        ("nan_count", 2, f.TYPE_INT64, f.LABEL_OPTIONAL),
        ("pos_inf_count", 3, f.TYPE_INT64, f.LABEL_OPTIONAL),
        ("neg_inf_count", 4, f.TYPE_INT64, f.LABEL_OPTIONAL),
        ("max", 5, f.TYPE_DOUBLE, f.LABEL_OPTIONAL), ("min", 6, f.TYPE_DOUBLE, f.LABEL_OPTIONAL),
        ("sum", 7, f.TYPE_DOUBLE, f.LABEL_OPTIONAL), ("count", 8, f.TYPE_INT64, f.LABEL_OPTIONAL)])
    value = summary.nested_type.add(name="Value")
    value.oneof_decl.add(name="value")
    _add_fields(value, [
        ("tag", 1, f.TYPE_STRING, f.LABEL_REQUIRED),
        ("scalar_value", 3, f.TYPE_FLOAT, f.LABEL_OPTIONAL, 0),
        ("image", 4, f.TYPE_MESSAGE, f.LABEL_OPTIONAL, ".mindspore.irpb.Summary.Image", 0),
        ("tensor", 8, f.TYPE_MESSAGE, f.LABEL_OPTIONAL, ".mindspore.irpb.TensorProto", 0),
        ("histogram", 9, f.TYPE_MESSAGE, f.LABEL_OPTIONAL, ".mindspore.irpb.Summary.Histogram",
         0)])
    _add_fields(summary, [("value", 1, f.TYPE_MESSAGE, f.LABEL_REPEATED,
                           ".mindspore.irpb.Summary.Value")])


@functools.lru_cache(maxsize=None)
def event_class():
    """The Event message class, made on first use (protobuf is needed only to write or read
    summaries, not to import pijit)."""
    from google.protobuf import descriptor_pb2

    f = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="pijit_mindspore_summary.proto",
                                               package="mindspore.irpb", syntax="proto2")
    _tensor_proto(proto, f)
    _summary(proto, f)
    event = proto.message_type.add(name="Event")
    event.oneof_decl.add(name="what")
    _add_fields(event, [
        ("wall_time", 1, f.TYPE_DOUBLE, f.LABEL_REQUIRED),
        ("step", 2, f.TYPE_INT64, f.LABEL_OPTIONAL),
        ("version", 3, f.TYPE_STRING, f.LABEL_OPTIONAL, 0),
        ("summary", 5, f.TYPE_MESSAGE, f.LABEL_OPTIONAL, ".mindspore.irpb.Summary", 0)])
    return message_class(proto, "mindspore.irpb.Event")

