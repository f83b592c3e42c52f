// Tensors from and to NumPy through pybind11: pijit.Tensor(...) of a NumPy array or a Python
// sequence, asnumpy(), dtype objects. The PyObject* level conversions (scalars, index arrays,
// assigned values) are declared in convert.h and defined with these in numpy_convert.cc.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "kernels/tensor.h"

namespace pijit {

// NumPy's one-character type code of `d`.
char NumpyChar(DType d);
// The numpy module, imported once.
pybind11::module_& Numpy();
// Zero-copy view of a NumPy array whose layout the runtime can address; a copy otherwise.
// `want` (may be null) is the dtype the result must have.
Tensor FromNumpy(pybind11::array arr, const DType* want);
// The NumPy dtype of `d`. bfloat16 is ml_dtypes.bfloat16 where ml_dtypes is installed;
// otherwise `what` raises a TypeError that says how to get a NumPy array.
pybind11::dtype NumpyDType(DType d, const char* what);
// A NumPy array sharing `t`'s memory (a host copy's, for a device tensor).
pybind11::array ToNumpy(const Tensor& t);
// `t` itself when it is a host tensor, else a host copy of it (raises the Python error when
// its device cannot be read).
Tensor OnHost(const Tensor& t);
// A pijit dtype, or anything numpy.dtype() accepts (np.float32, "float64", float).
DType DTypeFromPy(pybind11::handle d);
// pijit.Tensor(input_data, dtype): the tensor a Tensor object is constructed with.
Tensor MakeTensor(pybind11::object data, pybind11::object dtype);

}  // namespace pijit
