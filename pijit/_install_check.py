"""run_check (MindSpore's `mindspore.run_check`): whether this installation computes, eagerly
and compiled, on the device the context names; and the package's version."""
import numpy as np

from importlib.metadata import PackageNotFoundError, version as _distribution_version


def package_version():
    """pijit's version as installed ("unknown" for a source tree used without installing)."""
    try:
        return _distribution_version("pijit")
    except PackageNotFoundError:
        return "unknown"


def run_check():
    """Prints the version, then multiplies two tensors eagerly and in a compiled function on
    the context's device and compares both with NumPy; prints whether that succeeded (and the
    error when it did not), as MindSpore's run_check does."""
    import pijit
    from pijit import ops

    print(f"pijit version: {pijit.__version__}")
    platform = pijit.get_context("device_target")
    try:
        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        b = np.full((3, 4), 2.0, dtype=np.float32)
        x, y = pijit.Tensor(a), pijit.Tensor(b)
        want = a * b
        eager = ops.mul(x, y).asnumpy()
        compiled = pijit.jit(lambda p, q: ops.mul(p, q))(x, y).asnumpy()
        if not (np.array_equal(eager, want) and np.array_equal(compiled, want)):
            raise RuntimeError(f"the product of two tensors differs from NumPy's: eager "
                               f"{eager.tolist()}, compiled {compiled.tolist()}, expected "
                               f"{want.tolist()}")
    except Exception as err:  # reported, as MindSpore reports it, rather than raised
        print("pijit running check failed.")
        print(err)
        return
    print(f"The result of multiplication calculation is correct, pijit has been installed on "
          f"platform [{platform}] successfully!")
