"""Protobuf message classes made at run time from a FileDescriptorProto built in Python (no
protoc step, no generated _pb2 module), each file in a private descriptor pool so that its
messages never clash with another library's of the same name."""


def message_class(file_proto, full_name):
    """The class of message `full_name` ("package.Message") declared in `file_proto`."""
    from google.protobuf import descriptor_pool, message_factory
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(file_proto.SerializeToString())
    descriptor = pool.FindMessageTypeByName(full_name)
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)  # protobuf < 4.21
