"""pijit.cuda: the GPU backend's state.

Graphs compiled by ``pijit.jit`` run on the GPU when ``pijit.set_context(device_target="GPU")``
is set and a GPU is usable: host tensors are copied to the GPU for each call and the results
back, and a graph with an op the CUDA backend has no kernel for yet runs on the CPU
(``pijit.explain`` says which op). Tensors made with ``Tensor(..., device="GPU")`` or
``t.move_to("GPU")`` live on the GPU: eager ops, gradients and jitted calls on them run there
(docs/cuda.md). Nothing here needs a GPU: on a machine without one ``is_available()`` is
False and ``unavailable_reason()`` says why.
"""
from . import _C

__all__ = ["is_available", "unavailable_reason", "is_built", "device_count", "get_device_name",
           "get_device_capability", "memory_stats"]


def _info():
    return _C._cuda_info()


def is_built():
    """Whether this build of pijit has the CUDA backend (it needs no GPU to build)."""
    return bool(_info()["built"])


def is_available():
    """Whether a GPU, its driver, NVRTC and cuBLAS were found and the device opened."""
    return bool(_info()["available"])


def unavailable_reason():
    """Why ``is_available()`` is False ("" when it is True)."""
    return _info()["reason"]


def device_count():
    """1 when the GPU is usable (pijit uses device 0), else 0."""
    return 1 if is_available() else 0


def _require():
    info = _info()
    if not info["available"]:
        raise RuntimeError(info["reason"])
    return info


def get_device_name(device=0):
    """The name of the GPU, e.g. 'NVIDIA H100 80GB HBM3'."""
    _check_device(device)
    return _require()["device_name"]


def get_device_capability(device=0):
    """The GPU's compute capability as (major, minor)."""
    _check_device(device)
    return tuple(_require()["capability"])


def memory_stats():
    """Bytes in use and held for reuse by pijit's device allocator, and kernels compiled."""
    info = _require()
    return {key: info[key] for key in ("bytes_in_use", "bytes_cached", "kernels_compiled",
                                        "kernels_from_disk") if key in info}


def _check_device(device):
    if device != 0:
        raise ValueError(f"pijit.cuda: device {device!r} does not exist (pijit uses GPU 0)")
