"""set_context / get_context: the execution mode (PYNATIVE_MODE or GRAPH_MODE)."""
import warnings

GRAPH_MODE = 0
PYNATIVE_MODE = 1

_context = {"mode": PYNATIVE_MODE, "device_target": "CPU"}
_DEVICES = ("CPU", "GPU", "Ascend")


def set_context(**kwargs):
    """Sets `mode` (GRAPH_MODE or PYNATIVE_MODE) and `device_target`."""
    for key, value in kwargs.items():
        if key == "mode":
            if value not in (GRAPH_MODE, PYNATIVE_MODE):
                raise ValueError(f"set_context: mode must be GRAPH_MODE (0) or PYNATIVE_MODE (1), "
                                 f"got {value!r}")
        elif key == "device_target":
            if value not in _DEVICES:
                raise ValueError(f"set_context: device_target must be one of {_DEVICES}, got {value!r}")
            if value != "CPU":
                warnings.warn(f"pijit runs on the CPU; device_target={value!r} uses the CPU",
                              RuntimeWarning, stacklevel=2)
        else:
            warnings.warn(f"set_context: {key!r} has no effect in pijit", RuntimeWarning,
                          stacklevel=2)
        _context[key] = value


def get_context(key):
    if key not in _context:
        raise ValueError(f"get_context: unknown key {key!r}")
    return _context[key]
