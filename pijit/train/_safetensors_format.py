"""Checkpoints in the safetensors format (save_checkpoint(..., format="safetensors") and
load_checkpoint(..., format="safetensors")), through the `safetensors` package's NumPy API.

A safetensors file is an 8-byte little-endian header length, a JSON header (each tensor's
dtype, shape and byte range, and an optional "__metadata__" object of str -> str) and the
tensors' bytes. Tensors keep their names and dtypes (bfloat16 as "BF16"); strings saved with
append_dict, which safetensors cannot hold as tensors, go into the metadata under their
names, and come back as strs. The metadata's "format" entry names the framework that wrote
the file, by the convention of safetensors' writers: "ms", as MindSpore writes, and it is
not read back as a value."""
import json
import struct

import numpy as np

from pijit._tensor import bfloat16

__all__ = ["encode", "decode", "SUFFIX"]

SUFFIX = ".safetensors"
_FORMAT_KEY, _FORMAT = "format", "ms"

# The header's dtype names, as NumPy dtypes; the safetensors NumPy API lacks BF16 on load.
_NUMPY_TYPES = {
    "BOOL": np.dtype(np.bool_), "U8": np.dtype(np.uint8), "I8": np.dtype(np.int8),
    "I16": np.dtype(np.int16), "I32": np.dtype(np.int32), "I64": np.dtype(np.int64),
    "U16": np.dtype(np.uint16), "U32": np.dtype(np.uint32), "U64": np.dtype(np.uint64),
    "F16": np.dtype(np.float16), "F32": np.dtype(np.float32), "F64": np.dtype(np.float64),
    "BF16": np.dtype(bfloat16.to_numpy()),
}


def _package():
    try:
        import safetensors.numpy as safetensors_numpy
        from safetensors import deserialize
    except ImportError:
        raise ImportError("format='safetensors' needs the safetensors package: "
                          "python3 -m pip install safetensors") from None
    return safetensors_numpy, deserialize


def encode(items):
    """The bytes of a safetensors file holding `items`, (name, NumPy array or str) pairs."""
    safetensors_numpy, _ = _package()
    arrays, metadata = {}, {_FORMAT_KEY: _FORMAT}
    for name, value in items:
        if isinstance(value, str):
            if name == _FORMAT_KEY:
                raise ValueError(f"For 'save_checkpoint', a str named {_FORMAT_KEY!r} cannot be "
                                 f"saved in a safetensors file: the metadata's {_FORMAT_KEY!r} "
                                 f"names the framework")
            metadata[name] = value
        else:
            arrays[name] = np.require(value, requirements="C")  # keeps 0-d arrays 0-d
    return safetensors_numpy.save(arrays, metadata=metadata)


def _header(data, path):
    if len(data) < 8:
        raise ValueError(f"Failed to read the checkpoint file {path}: it is corrupted or not a "
                         f"safetensors file ({len(data)} bytes, shorter than the header size)")
    (size,) = struct.unpack("<Q", data[:8])
    if size > len(data) - 8:
        raise ValueError(f"Failed to read the checkpoint file {path}: it is corrupted or "
                         f"truncated (the header claims {size} bytes, the file has "
                         f"{len(data) - 8} after the size)")
    try:
        return json.loads(data[8:8 + size])
    except ValueError as e:
        raise ValueError(f"Failed to read the checkpoint file {path}: its header is not JSON "
                         f"({e})") from None


def decode(data, path):
    """(name, NumPy array or str) pairs of a safetensors file's bytes, in the file's order of
    tensors followed by the metadata strings. A damaged file raises a ValueError naming it."""
    _, deserialize = _package()
    metadata = _header(data, path).get("__metadata__") or {}
    try:
        views = deserialize(data)
    except Exception as e:  # SafetensorError, or the JSON parser's errors
        raise ValueError(f"Failed to read the checkpoint file {path}: it is corrupted or not a "
                         f"safetensors file ({e})") from None
    items = []
    for name, view in views:
        np_type = _NUMPY_TYPES.get(view["dtype"])
        if np_type is None:
            raise ValueError(f"For 'load_checkpoint', parameter {name!r} in {path} has the "
                             f"safetensors dtype {view['dtype']}, which pijit does not have")
        array = np.frombuffer(bytes(view["data"]), np_type).reshape(view["shape"])
        items.append((name, array))
    items.extend((name, str(value)) for name, value in metadata.items() if name != _FORMAT_KEY)
    return items
