"""The record framing of MindSpore's summary files, and a reader that checks it.

A summary file is a sequence of records, each a serialized mindspore.irpb.Event framed as
MindSpore's EventWriter frames it (mindspore/ccsrc/utils/summary/event_writer.cc; MindInsight's
loader reads the same):

    uint64 length            little-endian, the message's size in bytes
    uint32 masked_crc32c(the 8 length bytes)
    bytes  message
    uint32 masked_crc32c(message)

The first record of a file holds the version event ("MindSpore.Event:1").
"""
import os
import stat
import struct
import time
import warnings

from pijit.train.summary._crc32c import masked_crc32c
from pijit.train.summary._summary_proto import event_class

__all__ = ["EVENT_VERSION", "SummaryFormatError", "EventFileWriter", "frame", "read_records",
           "read_summary"]

EVENT_VERSION = "MindSpore.Event:1"
_LENGTH, _CRC = struct.Struct("<Q"), struct.Struct("<I")
# Bytes a record takes besides its message.
FRAME_OVERHEAD = _LENGTH.size + 2 * _CRC.size


class SummaryFormatError(ValueError):
    """The bytes are not a well-formed sequence of summary records."""


def frame(message):
    """One record holding serialized message `message` (bytes)."""
    length = _LENGTH.pack(len(message))
    return (length + _CRC.pack(masked_crc32c(length)) + message
            + _CRC.pack(masked_crc32c(message)))


class EventFileWriter:
    """Appends framed events to one file, created (owner read/write only, as MindSpore's) with
    its version record on the first write. With `max_file_size` (bytes) set, a record that would
    make the file larger is not written: a warning says so and the writer stops, as MindSpore's
    does."""

    def __init__(self, path, max_file_size=None):
        self.path, self._budget = path, max_file_size
        self._file, self._stopped = None, False

    def write_event(self, event):
        """Appends `event` (an Event message); False when the size limit stopped the writer."""
        if self._stopped:
            return False
        if self._file is None:
            self._file = self._create()
            version = event_class()(wall_time=time.time(), version=EVENT_VERSION)
            if not self._write(version.SerializeToString()):
                return False
        return self._write(event.SerializeToString())

    def _create(self):
        descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                             stat.S_IRUSR | stat.S_IWUSR)
        return os.fdopen(descriptor, "wb")

    def _write(self, message):
        record = frame(message)
        if self._budget is not None:
            if len(record) > self._budget:
                warnings.warn(f"'max_file_size' reached: {self._budget} bytes remain but "
                              f"{self.path!r} needs {len(record)} for the next record; no more "
                              f"records are written to it", RuntimeWarning, stacklevel=4)
                self._stopped = True
                return False
            self._budget -= len(record)
        self._file.write(record)
        return True

    def flush(self):
        if self._file is not None:
            self._file.flush()

    def close(self):
        """Flushes and closes the file, then makes it read-only, as MindSpore does."""
        if self._file is not None:
            self._file.close()
            self._file = None
            os.chmod(self.path, stat.S_IRUSR)
        self._stopped = True


def read_records(data):
    """The messages (bytes) of the records in `data`, each record's two CRCs checked."""
    records, pos = [], 0
    while pos < len(data):
        if len(data) - pos < _LENGTH.size + _CRC.size:
            raise SummaryFormatError(f"truncated record header at byte {pos}")
        length_bytes = data[pos:pos + _LENGTH.size]
        (length_crc,) = _CRC.unpack_from(data, pos + _LENGTH.size)
        if masked_crc32c(length_bytes) != length_crc:
            raise SummaryFormatError(f"the length CRC of the record at byte {pos} does not match")
        (length,) = _LENGTH.unpack(length_bytes)
        start = pos + _LENGTH.size + _CRC.size
        end = start + length
        if end + _CRC.size > len(data):
            raise SummaryFormatError(f"the record at byte {pos} is truncated: {length} message "
                                     f"bytes announced, {max(len(data) - start, 0)} present")
        message = bytes(data[start:end])
        (message_crc,) = _CRC.unpack_from(data, end)
        if masked_crc32c(message) != message_crc:
            raise SummaryFormatError(f"the message CRC of the record at byte {pos} does not match")
        records.append(message)
        pos = end + _CRC.size
    return records


def read_summary(path):
    """The events of summary file `path`, a list of mindspore.irpb.Event messages (the version
    event first), after checking every record's CRCs; SummaryFormatError if one fails."""
    with open(path, "rb") as file:
        data = file.read()
    events = []
    for i, message in enumerate(read_records(data)):
        try:
            events.append(event_class().FromString(message))
        except Exception as error:  # protobuf's DecodeError, or a missing required field
            raise SummaryFormatError(f"record {i} of {path!r} is not an Event: {error}") from None
    return events
