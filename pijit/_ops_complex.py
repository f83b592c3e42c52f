"""Complex tensors' parts and forms: real, imag, conj, angle, polar, view_as_real and MindSpore's
primitives over them (Complex, ComplexAbs, Real, Imag, Conj, Polar). Complex64 and complex128
tensors run eagerly on the CPU (graph/complex_support.h): a jitted function that meets one
breaks its graph there and runs the complex steps as ordinary Python, with the same results."""
from pijit import _C
from pijit._tensor import Tensor, complex64, complex128, float32, float64
from pijit.mint._checks import check_tensor, raise_error
from pijit.mint._elementwise import atan2
from pijit.ops import Primitive

_ops = _C.ops
_COMPLEX = (complex64, complex128)


def is_complex(input):  # noqa: A002
    """Whether input's dtype is complex64 or complex128."""
    check_tensor("is_complex", "input", input)
    return input.dtype in _COMPLEX


def real(input):  # noqa: A002
    """The real part of each element (a copy, in float32 for complex64, float64 for complex128);
    a real tensor is its own real part."""
    check_tensor("real", "input", input)
    if input.dtype not in _COMPLEX:
        return input
    return _C._complex_part(input, False)


def imag(input):  # noqa: A002
    """The imaginary part of each element; zeros of input's dtype for a real tensor."""
    check_tensor("imag", "input", input)
    if input.dtype not in _COMPLEX:
        return _ops.zeros_like(input)
    return _C._complex_part(input, True)


def conj(input):  # noqa: A002
    """The complex conjugate of each element; a real tensor is its own conjugate."""
    check_tensor("conj", "input", input)
    if input.dtype not in _COMPLEX:
        return input
    return _C._make_complex(real(input), _ops.neg(imag(input)))


def angle(input):  # noqa: A002
    """The argument of each element, in (-pi, pi]: atan2(imag, real) for complex input (float32
    for complex64, float64 for complex128); for real input pi where it is negative, else 0."""
    check_tensor("angle", "input", input)
    if input.dtype in _COMPLEX:
        return atan2(imag(input), real(input))
    x = input if input.is_floating_point() else input.astype(float32)
    return _ops.where(_ops.less(x, 0), 3.141592653589793, _ops.zeros_like(x))


def from_parts(real, imag):
    """real + imag * 1j from float32 (complex64) or float64 (complex128) tensors of one dtype,
    broadcast together."""
    check_tensor("Complex", "real", real)
    check_tensor("Complex", "imag", imag)
    return _C._make_complex(real, imag)


def polar(abs, angle):  # noqa: A002 - MindSpore's parameter names
    """abs * (cos(angle) + sin(angle) * 1j), from float32 or float64 tensors of one dtype."""
    check_tensor("polar", "abs", abs)
    check_tensor("polar", "angle", angle)
    if abs.dtype != angle.dtype or abs.dtype not in (float32, float64):
        raise_error(TypeError, f"polar: abs and angle must both be Float32 or both Float64, got "
                               f"{abs.dtype} and {angle.dtype}")
    return _C._make_complex(_ops.mul(abs, _ops.cos(angle)), _ops.mul(abs, _ops.sin(angle)))


def view_as_real(input):  # noqa: A002
    """A complex tensor as a real one of shape input.shape + (2,): the last axis holds each
    element's real and imaginary parts (a copy: pijit's functional ops return new tensors)."""
    check_tensor("view_as_real", "input", input)
    if input.dtype not in _COMPLEX:
        raise_error(TypeError, f"view_as_real: expected a Complex64 or Complex128 tensor, got "
                               f"{input.dtype}")
    return _C._view_as_real(input)


def complex_abs(x):
    """|x| of each complex element (hypot of its parts: no overflow), in the parts' dtype."""
    check_tensor("ComplexAbs", "x", x)
    if x.dtype not in _COMPLEX:
        raise_error(TypeError, f"ComplexAbs: expected a Complex64 or Complex128 tensor, got {x.dtype}")
    return _ops.abs(x)


def _primitive(name, call, doc):
    return type(name, (Primitive,), {"__init__": lambda self: Primitive.__init__(self),
                                     "__call__": call, "__doc__": doc, "__module__": "pijit.ops"})


Complex = _primitive("Complex", lambda self, real, imag: from_parts(real, imag),
                     "Complex()(real, imag): real + imag * 1j (float32 -> complex64, float64 -> "
                     "complex128).")
ComplexAbs = _primitive("ComplexAbs", lambda self, x: complex_abs(x),
                        "ComplexAbs()(x): |x| of a complex tensor, in the dtype of its parts.")
Real = _primitive("Real", lambda self, x: real(x), "Real()(x): the real part of x.")
Imag = _primitive("Imag", lambda self, x: imag(x), "Imag()(x): the imaginary part of x.")
Conj = _primitive("Conj", lambda self, x: conj(x), "Conj()(x): the complex conjugate of x.")
Polar = _primitive("Polar", lambda self, abs, angle: polar(abs, angle),  # noqa: A006
                   "Polar()(abs, angle): abs * (cos(angle) + sin(angle) * 1j).")

__all__ = ["Complex", "ComplexAbs", "Conj", "Imag", "Polar", "Real", "angle", "conj", "imag",
           "is_complex", "polar", "real", "view_as_real"]
