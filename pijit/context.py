"""set_context / get_context: the execution mode (PYNATIVE_MODE or GRAPH_MODE) and the device
compiled graphs run on (device_target)."""
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
            value = _set_device_target(value)
        else:
            warnings.warn(f"set_context: {key!r} has no effect in pijit", RuntimeWarning,
                          stacklevel=2)
        _context[key] = value


def _set_device_target(target):
    """Points compiled graphs at the device; returns the device they will run on."""
    from pijit import _C, cuda
    if target == "GPU":
        if cuda.is_available():
            _C._set_default_backend("cuda")
            return "GPU"
        warnings.warn(f"device_target='GPU': {cuda.unavailable_reason()}; graphs run on the CPU",
                      RuntimeWarning, stacklevel=3)
    elif target != "CPU":
        warnings.warn(f"pijit has no {target} backend; device_target={target!r} uses the CPU",
                      RuntimeWarning, stacklevel=3)
    _C._set_default_backend("")
    return "CPU"


def get_context(key):
    if key not in _context:
        raise ValueError(f"get_context: unknown key {key!r}")
    return _context[key]
