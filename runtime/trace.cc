#include "runtime/trace.h"

namespace pijit::runtime {
namespace {
PyObject* g_sink = nullptr;  // strong reference, or nullptr
}  // namespace

bool TraceOn() { return g_sink != nullptr; }

void SetTraceSink(PyObject* sink) {
  PyObject* old = g_sink;
  g_sink = sink && sink != Py_None ? sink : nullptr;
  Py_XINCREF(g_sink);
  Py_XDECREF(old);
}

TraceEvent::TraceEvent(const char* event) : dict_(g_sink ? PyDict_New() : nullptr) {
  Str("event", event);
}

TraceEvent::~TraceEvent() { Py_XDECREF(dict_); }

TraceEvent& TraceEvent::Steal(const char* key, PyObject* value) {
  if (!dict_) {
    Py_XDECREF(value);
    return *this;
  }
  if (!value) {
    PyErr_Clear();
    value = Py_NewRef(Py_None);
  }
  if (PyDict_SetItemString(dict_, key, value) < 0) PyErr_Clear();
  Py_DECREF(value);
  return *this;
}

TraceEvent& TraceEvent::Str(const char* key, std::string_view value) {
  if (!dict_) return *this;
  // Text from the program (source lines, reprs) may not be valid UTF-8: keep what decodes.
  return Steal(key, PyUnicode_DecodeUTF8(value.data(), static_cast<Py_ssize_t>(value.size()),
                                         "replace"));
}

TraceEvent& TraceEvent::Int(const char* key, int64_t value) {
  return dict_ ? Steal(key, PyLong_FromLongLong(value)) : *this;
}

TraceEvent& TraceEvent::Float(const char* key, double value) {
  return dict_ ? Steal(key, PyFloat_FromDouble(value)) : *this;
}

TraceEvent& TraceEvent::Bool(const char* key, bool value) {
  return dict_ ? Steal(key, PyBool_FromLong(value)) : *this;
}

TraceEvent& TraceEvent::None(const char* key) {
  return dict_ ? Steal(key, Py_NewRef(Py_None)) : *this;
}

void TraceEvent::Emit() {
  if (!dict_ || !g_sink) return;
  // The program may be between operations with an exception pending: keep it aside.
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyObject* sink = Py_NewRef(g_sink);
  PyObject* r = PyObject_CallOneArg(sink, dict_);
  if (!r) {
    PyErr_WriteUnraisable(sink);
    if (g_sink == sink) SetTraceSink(nullptr);
  }
  Py_XDECREF(r);
  Py_DECREF(sink);
  PyErr_Restore(type, value, tb);
}

}  // namespace pijit::runtime
