// DLPack interop (the unversioned DLManagedTensor ABI of dlpack 0.6): Tensor.__dlpack__,
// Tensor.__dlpack_device__ and pijit.from_dlpack, zero-copy both ways on the CPU.
#include <dlpack/dlpack.h>
#include <pybind11/pybind11.h>

#include "absl/strings/str_format.h"
#include "graph/backend.h"
#include "interop/convert.h"
#include "pijit/csrc/module.h"

namespace py = pybind11;

namespace pijit {
namespace {

constexpr const char* kCapsule = "dltensor";
constexpr const char* kUsedCapsule = "used_dltensor";

// (DType, DLPack type code, bits); bool is exported as uint8 (0.6 has no bool code), so
// a DLPack uint8 imports as UInt8.
struct DLEntry { DType dtype; uint8_t code; uint8_t bits; };
constexpr DLEntry kDLTypes[] = {
    {DType::kUInt8, kDLUInt, 8},      {DType::kInt8, kDLInt, 8},
    {DType::kInt16, kDLInt, 16},      {DType::kInt32, kDLInt, 32},
    {DType::kInt64, kDLInt, 64},      {DType::kFloat16, kDLFloat, 16},
    {DType::kBFloat16, kDLBfloat, 16}, {DType::kFloat32, kDLFloat, 32},
    {DType::kFloat64, kDLFloat, 64},  {DType::kBool, 6 /* kDLBool in dlpack >= 0.8 */, 8},
    {DType::kUInt16, kDLUInt, 16},    {DType::kUInt32, kDLUInt, 32},
    {DType::kUInt64, kDLUInt, 64},
    {DType::kComplex64, kDLComplex, 64}, {DType::kComplex128, kDLComplex, 128},
};
static_assert(sizeof(kDLTypes) / sizeof(kDLTypes[0]) == kNumDTypes, "a dtype without a DLPack type");

bool ToDL(DType d, DLDataType* out) {
  if (d == DType::kBool) {
    *out = {kDLUInt, 8, 1};
    return true;
  }
  for (const DLEntry& e : kDLTypes) {
    if (e.dtype == d) {
      *out = {e.code, e.bits, 1};
      return true;
    }
  }
  return false;
}

bool FromDL(DLDataType t, DType* out) {
  if (t.lanes != 1) return false;
  for (const DLEntry& e : kDLTypes) {
    if (e.code == t.code && e.bits == t.bits) {
      *out = e.dtype;
      return true;
    }
  }
  return false;
}

// What a capsule we export owns: a Tensor (keeping the storage alive) and the shape and
// strides arrays DLTensor points to.
struct Export {
  DLManagedTensor managed;
  Tensor tensor;
  std::vector<int64_t> shape, strides;
};

void DeleteExport(DLManagedTensor* m) { delete static_cast<Export*>(m->manager_ctx); }

void CapsuleDestructor(PyObject* capsule) {
  // Still named "dltensor": nobody consumed it, so its deleter is ours to call.
  if (PyCapsule_IsValid(capsule, kCapsule)) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsule));
    if (m && m->deleter) m->deleter(m);
  }
  PyErr_Clear();
}

py::object ToCapsule(const Tensor& t) {
  auto* e = new Export;
  e->tensor = t;
  e->shape.assign(t.shape().begin(), t.shape().end());
  e->strides.assign(t.strides().begin(), t.strides().end());
  DLTensor& d = e->managed.dl_tensor;
  d.data = t.storage()->data();
  d.byte_offset = static_cast<uint64_t>(t.offset()) * t.itemsize();
  d.device = {t.device() == Device::kCUDA ? kDLCUDA : kDLCPU, 0};  // pijit uses GPU 0
  d.ndim = static_cast<int32_t>(t.ndim());
  ToDL(t.dtype(), &d.dtype);
  d.shape = e->shape.data();
  d.strides = e->strides.data();
  e->managed.manager_ctx = e;
  e->managed.deleter = DeleteExport;
  PyObject* cap = PyCapsule_New(&e->managed, kCapsule, CapsuleDestructor);
  if (!cap) {
    delete e;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(cap);
}

Tensor FromCapsule(py::handle capsule) {
  if (!PyCapsule_IsValid(capsule.ptr(), kCapsule)) {
    ThrowStatus(absl::InvalidArgumentError(
        "from_dlpack: expected an unconsumed 'dltensor' capsule or an object with __dlpack__"));
  }
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kCapsule));
  const DLTensor& d = m->dl_tensor;
  Device device = Device::kCPU;
  if (d.device.device_type == kDLCUDA && d.device.device_id == 0 && graph::CudaBackend() != nullptr) {
    device = Device::kCUDA;  // shared as it is: the producer and pijit use GPU 0's primary context
  } else if (d.device.device_type != kDLCPU) {
    ThrowStatus(absl::InvalidArgumentError(absl::StrFormat(
        "from_dlpack: the tensor lives on DLPack device (%d, %d); pijit reads CPU memory and, "
        "in a build with CUDA, GPU 0's (device (%d, 0))", static_cast<int>(d.device.device_type),
        static_cast<int>(d.device.device_id), static_cast<int>(kDLCUDA))));
  }
  DType dt;
  if (!FromDL(d.dtype, &dt)) {
    ThrowStatus(absl::UnimplementedError(absl::StrFormat(
        "from_dlpack: unsupported dtype (code %d, %d bits, %d lanes)", d.dtype.code, d.dtype.bits,
        d.dtype.lanes)));
  }
  Shape shape(d.shape, d.shape + d.ndim);
  Shape strides = d.strides ? Shape(d.strides, d.strides + d.ndim) : ContiguousStrides(shape);
  // The producer's deleter runs when the last view of the storage dies.
  auto storage = Storage::Wrap(static_cast<char*>(d.data) + d.byte_offset, 0, [m] {
    PyGILState_STATE g = PyGILState_Ensure();
    if (m->deleter) m->deleter(m);
    PyGILState_Release(g);
  }, device);
  if (PyCapsule_SetName(capsule.ptr(), kUsedCapsule) < 0) throw py::error_already_set();
  return Tensor::View(std::move(storage), dt, std::move(shape), std::move(strides), 0);
}

}  // namespace

void BindDLPack(py::module_& m, py::object tensor_class) {
  tensor_class.attr("__dlpack__") = py::cpp_function(
      [](const Tensor& t, py::object stream, py::object max_version, py::object dl_device,
         py::object copy) {
        if (t.device() != Device::kCPU) {
          // The consumer reads it at once: the work that writes it must be done.
          const graph::Backend* backend = graph::BackendOfDevice(t.device());
          Tensor out = t;
          if (!copy.is_none() && copy.cast<bool>()) {
            auto c = backend->Copy(t);
            if (!c.ok()) ThrowStatus(c.status());
            out = *c;
          }
          if (absl::Status s = backend->Synchronize(); !s.ok()) ThrowStatus(s);
          return ToCapsule(out);
        }
        if (!copy.is_none() && copy.cast<bool>()) {
          Tensor out = Tensor::Empty(t.shape(), t.dtype());
          CopyInto(t, out);
          return ToCapsule(out);
        }
        return ToCapsule(t);
      },
      py::is_method(tensor_class), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
      py::arg("dl_device") = py::none(), py::arg("copy") = py::none());
  tensor_class.attr("__dlpack_device__") = py::cpp_function(
      [](const Tensor& t) {
        return py::make_tuple(static_cast<int>(t.device() == Device::kCUDA ? kDLCUDA : kDLCPU), 0);
      },
      py::is_method(tensor_class));
  m.def("from_dlpack", [](py::object obj) {
    if (PyCapsule_CheckExact(obj.ptr())) return FromCapsule(obj);
    if (!py::hasattr(obj, "__dlpack__")) {
      ThrowStatus(absl::UnimplementedError(absl::StrFormat(
          "from_dlpack: %s has no __dlpack__", std::string(py::str(obj.get_type())))));
    }
    // A GPU producer is asked to order its writes before the legacy default stream (1), which
    // pijit's stream waits for (kernels/cuda/cuda_api.h).
    bool on_gpu = false;
    if (py::hasattr(obj, "__dlpack_device__")) {
      py::tuple where = obj.attr("__dlpack_device__")();
      on_gpu = where.size() > 0 && where[0].cast<int>() == static_cast<int>(kDLCUDA);
    }
    py::object cap = on_gpu ? obj.attr("__dlpack__")(py::arg("stream") = 1) : obj.attr("__dlpack__")();
    return FromCapsule(cap);
  }, py::arg("obj"), "A Tensor sharing the memory of a DLPack-capable object (NumPy, torch, jax).");
}

}  // namespace pijit
