"""Checkpoints in MindSpore's .ckpt format (mindspore.train.serialization): save_checkpoint,
load_checkpoint and load_param_into_net. Files written here load in MindSpore, and MindSpore's
files load here; the byte layout is described in pijit/train/_checkpoint_proto.py.

A tensor is stored as its shape, its dtype's MindSpore name (str(dtype): "Float32", "BFloat16",
"Int64", ...) and its elements' raw little-endian bytes. A string (from `append_dict`) is stored
as NumPy's UTF-32 bytes with type "str" and dims [0], as MindSpore stores it."""
import binascii
import functools
import logging
import math
import os
import tempfile
import threading
from collections import OrderedDict

import numpy as np

from pijit._tensor import Parameter, Tensor, bfloat16
from pijit.nn.cell import Cell
from pijit.train import _checkpoint_proto as _proto
from pijit.train import _safetensors_format as _safetensors

__all__ = ["save_checkpoint", "load_checkpoint", "load_param_into_net"]

logger = logging.getLogger("pijit.train")

# MindSpore's tensor_type names and their NumPy types.
_NUMPY_TYPES = {
    "Bool": np.dtype(np.bool_), "Int8": np.dtype(np.int8), "UInt8": np.dtype(np.uint8),
    "Int16": np.dtype(np.int16), "Int32": np.dtype(np.int32), "Int64": np.dtype(np.int64),
    "UInt16": np.dtype(np.uint16), "UInt32": np.dtype(np.uint32), "UInt64": np.dtype(np.uint64),
    "Float16": np.dtype(np.float16), "Float32": np.dtype(np.float32),
    "Float64": np.dtype(np.float64), "BFloat16": np.dtype(bfloat16.to_numpy()),
}
_FLOAT_TYPES = ("Float16", "Float32", "Float64", "BFloat16")
_INT_TYPES = ("Int8", "Int16", "Int32", "Int64")

# MindSpore writes a tensor of more than 512 MiB as several messages, each with a slice of its
# elements, to stay far below protobuf's 2 GiB message limit.
_SLICE_BYTES = 512 * 1024 * 1024
# With crc_check, MindSpore appends b"crc_num" and the CRC-32 of the messages, as 10 big-endian
# bytes.
_CRC_MARK = b"crc_num"
_CRC_BYTES = 10

_save_lock = threading.Lock()
# The process's umask, read once at import (reading it means setting it), for the mode of new
# checkpoint files: the one open() would give them.
_UMASK = os.umask(0o022)
os.umask(_UMASK)

# The formats save_checkpoint writes, with their file name suffixes.
_FORMATS = {"ckpt": ".ckpt", "safetensors": _safetensors.SUFFIX}


@functools.lru_cache(maxsize=None)
def _codec():
    # Built on first use, so that importing pijit does not import protobuf.
    return _proto.default_codec()


# ---- saving ----------------------------------------------------------------------------------

def _checkpoint_path(ckpt_file_name, function, suffix=".ckpt"):
    if not isinstance(ckpt_file_name, str):
        raise TypeError(f"For '{function}', 'ckpt_file_name' must be a str, got "
                        f"{type(ckpt_file_name).__name__}")
    path = os.path.realpath(ckpt_file_name)
    if os.path.isdir(path):
        raise IsADirectoryError(f"For '{function}', 'ckpt_file_name' {ckpt_file_name!r} is a "
                                f"directory; it must be a file name")
    return path if path.endswith(suffix) else path + suffix


def _named_items(save_obj, choice_func):
    """(name, value) pairs of what save_checkpoint saves, in order; values are Tensors
    (Parameters included), NumPy arrays or strs."""
    chosen = (lambda name: True) if choice_func is None else choice_func
    if isinstance(save_obj, Cell):
        return [(p.name or path, p) for path, p in save_obj.parameters_and_names()
                if chosen(p.name or path)]
    if isinstance(save_obj, dict):
        items = []
        for key, value in save_obj.items():
            if not isinstance(key, str) or not isinstance(value, (Tensor, np.ndarray, str)):
                raise TypeError(f"For 'save_checkpoint', a dict save_obj maps str names to "
                                f"Parameters or Tensors; got {type(key).__name__} -> "
                                f"{type(value).__name__}")
            if chosen(key):
                items.append((key, value))
        return items
    items = []
    for item in save_obj:
        if isinstance(item, dict):
            if set(item) != {"name", "data"} or not isinstance(item["name"], str) \
                    or not isinstance(item["data"], Tensor):
                raise TypeError("For 'save_checkpoint', a list save_obj holds dicts "
                                "{'name': str, 'data': Parameter or Tensor}, got "
                                + repr(item)[:80])
            name, value = item["name"], item["data"]
        elif isinstance(item, Parameter):
            name, value = item.name, item
        else:
            raise TypeError(f"For 'save_checkpoint', a list save_obj holds Parameters or "
                            f"{{'name', 'data'}} dicts, got {type(item).__name__}")
        if chosen(name):
            items.append((name, value))
    return items


def _appended_items(append_dict):
    if append_dict is None:
        return []
    if not isinstance(append_dict, dict):
        raise TypeError(f"For 'save_checkpoint', 'append_dict' must be a dict, got "
                        f"{type(append_dict).__name__}")
    items = []
    for key, value in append_dict.items():
        if not isinstance(key, str) or not isinstance(value, (int, float, bool, str, Tensor)):
            raise TypeError(f"For 'save_checkpoint', 'append_dict' maps str keys to int, float, "
                            f"bool, str, Parameter or Tensor, got {type(key).__name__} -> "
                            f"{type(value).__name__}")
        items.append((key, value if isinstance(value, (str, Tensor)) else Tensor(value)))
    return items


def _array_of(name, value):
    """`value` (a Tensor or NumPy array) as a NumPy array of a dtype checkpoints store."""
    array = value.asnumpy() if isinstance(value, Tensor) else np.asarray(value)
    if array.dtype not in _NUMPY_TYPES.values():
        raise TypeError(f"For 'save_checkpoint', parameter {name!r} has dtype {array.dtype}, "
                        f"which a checkpoint cannot store")
    return array


def _entries_of(name, value):
    """The Entries (one, or one per slice) that store `value` under `name`."""
    if isinstance(value, str):
        return [_proto.Entry(name, [0], "str", np.array(value).tobytes())]
    array = _array_of(name, value)
    tensor_type = next(t for t, np_type in _NUMPY_TYPES.items() if np_type == array.dtype)
    flat = np.ascontiguousarray(array).reshape(-1)
    dims = list(array.shape)
    pieces = max(1, math.ceil(flat.nbytes / _SLICE_BYTES))
    slices = np.array_split(flat, pieces) if pieces > 1 else [flat]
    return [_proto.Entry(name, dims, tensor_type, piece.tobytes()) for piece in slices]


def _fsync_directory(directory):
    """Makes a rename in `directory` durable; some filesystems cannot open a directory, and
    then the rename is as durable as they make it."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomically(path, write):
    """Calls write(file) on a new temporary file in the folder of `path`, flushes it to disk
    and renames it over `path`. A crash or a kill at any moment leaves either the previous
    file or the complete new one at `path`, never a part of one (os.replace is atomic on one
    filesystem, which the same folder guarantees). On an error the temporary file is
    removed and `path` is untouched."""
    directory, name = os.path.split(path)
    fd, tmp_path = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory or ".")
    try:
        os.chmod(tmp_path, 0o666 & ~_UMASK)  # mkstemp's 0600 would make the file private
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_path, path)
    except BaseException:
        try:
            os.remove(tmp_path)
        except OSError:
            pass
        raise
    _fsync_directory(directory or ".")


def _write_entries(f, entries, crc_check):
    crc = 0
    for entry in entries:
        data = _codec().encode(entry)
        crc = binascii.crc32(data, crc)
        f.write(data)
    if crc_check:
        f.write(_CRC_MARK + crc.to_bytes(_CRC_BYTES, "big"))


def _write_file(path, entries, crc_check):
    with _save_lock:
        write_atomically(path, lambda f: _write_entries(f, entries, crc_check))


def _write_bytes(path, data):
    with _save_lock:
        write_atomically(path, lambda f: f.write(data))


def _check_save_arguments(save_obj, integrated_save, async_save, format, enc_key, choice_func,
                          crc_check):
    if not isinstance(save_obj, (Cell, list, dict)):
        raise TypeError(f"For 'save_checkpoint', 'save_obj' must be a Cell, a list or a dict, got "
                        f"{type(save_obj).__name__}")
    for flag_name, flag in (("integrated_save", integrated_save), ("crc_check", crc_check)):
        if not isinstance(flag, bool):
            raise TypeError(f"For 'save_checkpoint', '{flag_name}' must be a bool, got "
                            f"{type(flag).__name__}")
    if not isinstance(async_save, (bool, str)) or async_save not in (True, False, "thread",
                                                                      "process"):
        raise ValueError(f"For 'save_checkpoint', 'async_save' must be a bool, 'thread' or "
                         f"'process', got {async_save!r}")
    if format not in _FORMATS:
        raise ValueError(f"For 'save_checkpoint', format must be one of {list(_FORMATS)}, got "
                         f"{format!r}")
    if format == "safetensors" and crc_check:
        raise ValueError("For 'save_checkpoint', crc_check is for format='ckpt'; a safetensors "
                         "file has no CRC")
    if enc_key is not None:
        raise NotImplementedError("save_checkpoint: encrypted checkpoints (enc_key) are not "
                                  "supported")
    if choice_func is not None and not callable(choice_func):
        raise TypeError(f"For 'save_checkpoint', 'choice_func' must be callable, got "
                        f"{type(choice_func).__name__}")


def save_checkpoint(save_obj, ckpt_file_name, integrated_save=True, async_save=False,
                    append_dict=None, enc_key=None, enc_mode="AES-GCM", choice_func=None,
                    crc_check=False, format="ckpt", **kwargs):
    """Saves `save_obj` (a Cell's parameters; a list of Parameters or of {"name": str, "data":
    Parameter or Tensor} dicts; or a dict name -> Parameter/Tensor, such as load_checkpoint
    returns) to `ckpt_file_name`, overwriting it. The file is MindSpore's protobuf format with
    format="ckpt" (".ckpt" is appended when missing) or safetensors with
    format="safetensors" (".safetensors" appended). The file is written to a temporary file
    beside it and renamed into place, so an interrupted save leaves the previous file whole.
    `append_dict` adds entries (int, float, bool, str, Tensor); `choice_func(name)` picks the
    parameters to save; `crc_check` appends a CRC-32 that load_checkpoint(crc_check=True)
    verifies; `async_save` writes from a thread. Encryption (enc_key) is not supported."""
    _check_save_arguments(save_obj, integrated_save, async_save, format, enc_key, choice_func,
                          crc_check)
    path = _checkpoint_path(ckpt_file_name, "save_checkpoint", _FORMATS[format])
    items = OrderedDict(_named_items(save_obj, choice_func))  # a later duplicate name wins
    items.update(_appended_items(append_dict))
    # Values are turned into bytes now, so an asynchronous save writes this moment's values.
    if format == "safetensors":
        data = _safetensors.encode([(name, value if isinstance(value, str)
                                     else _array_of(name, value))
                                    for name, value in items.items()])
        target, args = _write_bytes, (path, data)
    else:
        entries = [entry for name, value in items.items() for entry in _entries_of(name, value)]
        target, args = _write_file, (path, entries, crc_check)
    if async_save:
        threading.Thread(target=target, args=args, name="asyn_save_ckpt").start()
        return
    target(*args)


# ---- loading ---------------------------------------------------------------------------------

def _prefixes(prefix, name):
    if prefix is None:
        return ()
    if isinstance(prefix, str):
        prefix = (prefix,)
    if not isinstance(prefix, (list, tuple)):
        raise TypeError(f"For 'load_checkpoint', '{name}' must be a str, or a list or tuple of "
                        f"strs, got {type(prefix).__name__}")
    if not prefix:
        raise ValueError(f"For 'load_checkpoint', '{name}' must not be empty")
    for p in prefix:
        if not isinstance(p, str) or p == "":
            raise ValueError(f"For 'load_checkpoint', '{name}' must hold non-empty strs, got "
                             f"{p!r}")
    return tuple(prefix)


def _read_entries(path, crc_check):
    with open(path, "rb") as f:
        data = f.read()
    marked = len(data) >= len(_CRC_MARK) + _CRC_BYTES and \
        data[-len(_CRC_MARK) - _CRC_BYTES:-_CRC_BYTES] == _CRC_MARK
    if marked:
        stored = int.from_bytes(data[-_CRC_BYTES:], "big")
        data = data[:-len(_CRC_MARK) - _CRC_BYTES]
        if crc_check and binascii.crc32(data) != stored:
            raise ValueError(f"For 'load_checkpoint', the CRC check of {path} failed: the file "
                             f"is damaged")
    elif crc_check:
        logger.warning("load_checkpoint: %s holds no CRC code to check", path)
    try:
        return _codec().decode(data)
    except _proto.CheckpointFormatError as e:
        raise ValueError(f"Failed to read the checkpoint file {path}: it is corrupted or not a "
                         f"checkpoint ({e})") from None


def _grouped(entries):
    """(tag, [entries]) for each run of consecutive entries with the same tag (the slices of
    one tensor)."""
    groups = []
    for entry in entries:
        if groups and groups[-1][0] == entry.tag:
            groups[-1][1].append(entry)
        else:
            groups.append((entry.tag, [entry]))
    return groups


def _value_of(tag, pieces, path):
    """The Parameter (or str) that the entries of one tag hold."""
    tensor_type = pieces[0].tensor_type
    content = b"".join(p.content for p in pieces)
    if tensor_type == "str":
        return str(np.frombuffer(content, f"U{len(content) // 4}")[0]) if content else ""
    np_type = _NUMPY_TYPES.get(tensor_type)
    if np_type is None:
        raise ValueError(f"For 'load_checkpoint', parameter {tag!r} in {path} has the unknown "
                         f"tensor_type {tensor_type!r}")
    dims = list(pieces[0].dims)
    count = len(content) // np_type.itemsize
    if dims == [0] and count == 1:
        dims = []  # MindSpore before 2.3 wrote a scalar's shape as [0]
    if any(d < 0 for d in dims) or len(content) != int(np.prod(dims)) * np_type.itemsize:
        raise ValueError(f"For 'load_checkpoint', parameter {tag!r} in {path} has shape "
                         f"{tuple(dims)} ({tensor_type}) but {len(content)} bytes of data: the "
                         f"file is corrupted")
    array = np.frombuffer(content, np_type).reshape(dims)
    return Parameter(array, name=tag)


def _read_items(path, crc_check, format):
    """(name, Parameter or str) pairs of the checkpoint file at `path`."""
    if format == "ckpt":
        return [(tag, _value_of(tag, pieces, path))
                for tag, pieces in _grouped(_read_entries(path, crc_check))]
    with open(path, "rb") as f:
        data = f.read()
    return [(name, value if isinstance(value, str) else Parameter(value, name=name))
            for name, value in _safetensors.decode(data, path)]


def load_checkpoint(ckpt_file_name, net=None, strict_load=False, filter_prefix=None,
                    dec_key=None, dec_mode="AES-GCM", specify_prefix=None, choice_func=None,
                    crc_check=False, remove_redundancy=False, format="ckpt"):
    """Reads a checkpoint file (format="ckpt": MindSpore's .ckpt; "safetensors": a
    .safetensors file) into a dict name -> Parameter (or str, for strings saved with
    append_dict). `specify_prefix` keeps only names starting with one of its prefixes,
    `filter_prefix` drops them; when neither is given, `choice_func(name)` picks. With `net`,
    the parameters are also loaded into it (load_param_into_net). A damaged file raises a
    ValueError naming it, before anything is loaded into `net`."""
    if not isinstance(ckpt_file_name, str):
        raise TypeError(f"For 'load_checkpoint', 'ckpt_file_name' must be a str, got "
                        f"{type(ckpt_file_name).__name__}")
    if format not in _FORMATS:
        raise ValueError(f"For 'load_checkpoint', format must be one of {list(_FORMATS)}, got "
                         f"{format!r}")
    if not ckpt_file_name.endswith(_FORMATS[format]):
        raise ValueError(f"For 'load_checkpoint', the checkpoint file name must end with "
                         f"'{_FORMATS[format]}' for format={format!r}, got {ckpt_file_name!r}")
    if dec_key is not None:
        raise NotImplementedError("load_checkpoint: encrypted checkpoints (dec_key) are not "
                                  "supported")
    if not isinstance(crc_check, bool):
        raise TypeError(f"For 'load_checkpoint', 'crc_check' must be a bool, got "
                        f"{type(crc_check).__name__}")
    specify = _prefixes(specify_prefix, "specify_prefix")
    exclude = _prefixes(filter_prefix, "filter_prefix")
    if choice_func is not None and not callable(choice_func):
        raise TypeError(f"For 'load_checkpoint', 'choice_func' must be callable, got "
                        f"{type(choice_func).__name__}")
    path = os.path.realpath(ckpt_file_name)
    if not os.path.isfile(path):
        raise ValueError(f"For 'load_checkpoint', the checkpoint file {path} does not exist")

    def wanted(tag):
        if specify and not tag.startswith(specify):
            return False
        if exclude and tag.startswith(exclude):
            return False
        if not specify and not exclude and choice_func is not None:
            return bool(choice_func(tag))
        return True

    parameter_dict = {tag: value for tag, value in _read_items(path, crc_check, format)
                      if wanted(tag)}
    if not parameter_dict:
        raise ValueError(f"For 'load_checkpoint', no parameter was loaded from {path}: the file "
                         f"is empty, or 'filter_prefix', 'specify_prefix' or 'choice_func' left "
                         f"nothing")
    if net is not None:
        load_param_into_net(net, parameter_dict, strict_load)
    return parameter_dict


# ---- loading into a network ------------------------------------------------------------------

def _type_name(tensor):
    return str(tensor.dtype)


def _updated_array(param, new_value, strict_load):
    """The array `new_value` gives `param` (reshaped or converted as MindSpore allows), or a
    RuntimeError naming the parameter."""
    array = new_value.asnumpy()
    if tuple(array.shape) != tuple(param.shape):
        # MindSpore accepts extra trailing dimensions of size 1 in the checkpoint.
        extra = array.shape[len(param.shape):]
        if array.ndim > len(param.shape) and all(d == 1 for d in extra) and \
                array.shape[:len(param.shape)] == tuple(param.shape):
            array = array.reshape(param.shape)
        else:
            raise RuntimeError(f"For 'load_param_into_net', {param.name} has shape "
                               f"{tuple(param.shape)} in the network but "
                               f"{tuple(new_value.shape)} in the parameter dict")
    old_type, new_type = _type_name(param), _type_name(new_value)
    if old_type != new_type:
        same_kind = {old_type, new_type} <= set(_FLOAT_TYPES) or \
            {old_type, new_type} <= set(_INT_TYPES)
        if strict_load or not same_kind:
            raise RuntimeError(f"For 'load_param_into_net', {param.name} is {old_type} in the "
                               f"network but {new_type} in the parameter dict")
        logger.warning("load_param_into_net: converting %s from %s to %s", param.name, new_type,
                       old_type)
        array = array.astype(param.dtype.to_numpy())
    return array


def _plan_with_stripped_prefix(net, parameter_dict, param_not_load, ckpt_not_load, plan,
                               strict_load):
    """Parameters still missing may be in the dict under a common prefix (a checkpoint of a
    wrapper network): finds that prefix from a name ending with a missing parameter's name, and
    plans every missing parameter found under it; repeats while that finds something."""
    while param_not_load:
        prefix = next((key[:-len(name)] for name in param_not_load for key in parameter_dict
                       if key != name and key.endswith(name)), None)
        if prefix is None:
            return
        logger.warning("load_param_into_net: loading parameters under the prefix %r", prefix)
        found = 0
        for _, param in net.parameters_and_names():
            key = prefix + param.name if param.name is not None else None
            if param.name in param_not_load and key in parameter_dict \
                    and isinstance(parameter_dict[key], Tensor):
                plan.append((param, _updated_array(param, parameter_dict[key], strict_load)))
                param_not_load.remove(param.name)
                if key in ckpt_not_load:
                    ckpt_not_load.remove(key)
                found += 1
        if not found:
            return


def load_param_into_net(net, parameter_dict, strict_load=False, remove_redundancy=False):
    """Copies the values of `parameter_dict` (name -> Parameter, as load_checkpoint returns)
    into the parameters of `net` with the same names. Without strict_load, a float (or int)
    value of another width is converted, and names under a common prefix are matched.
    Returns (names of net's parameters not loaded, names in the dict not loaded). A shape or
    dtype mismatch raises a RuntimeError naming the parameter."""
    if not isinstance(net, Cell):
        raise TypeError(f"For 'load_param_into_net', 'net' must be a Cell, got "
                        f"{type(net).__name__}")
    if not isinstance(parameter_dict, dict):
        raise TypeError(f"For 'load_param_into_net', 'parameter_dict' must be a dict, got "
                        f"{type(parameter_dict).__name__}")
    for key, value in parameter_dict.items():
        if not isinstance(key, str) or not isinstance(value, (Tensor, str)):
            raise TypeError(f"For 'load_param_into_net', 'parameter_dict' maps str names to "
                            f"Parameters, got {type(key).__name__} -> {type(value).__name__}")
    if not isinstance(strict_load, bool):
        raise TypeError(f"For 'load_param_into_net', 'strict_load' must be a bool, got "
                        f"{type(strict_load).__name__}")
    # Every value is checked (shape, dtype) before any parameter changes, so an error leaves
    # the network as it was.
    plan, param_not_load, ckpt_not_load = [], [], list(parameter_dict)
    for _, param in net.parameters_and_names():
        value = parameter_dict.get(param.name)
        if value is None:
            param_not_load.append(param.name)
        elif isinstance(value, Tensor):  # a str entry is information, not a parameter
            plan.append((param, _updated_array(param, value, strict_load)))
            ckpt_not_load.remove(param.name)
    if param_not_load and not strict_load:
        _plan_with_stripped_prefix(net, parameter_dict, param_not_load, ckpt_not_load, plan,
                                   strict_load)
    for param, array in plan:
        param.set_data(Tensor(array if array.flags.c_contiguous else array.copy()))
    if param_not_load:
        logger.warning("load_param_into_net: %d parameters of the network are not in the "
                       "parameter dict: %s", len(param_not_load), param_not_load)
    return param_not_load, ckpt_not_load
