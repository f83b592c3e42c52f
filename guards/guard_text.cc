// Text of guard programs: the sources and guards as explain() and PIJIT_LOG=guards print
// them, and which guard rejects a call (the trace's recompile events).
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "guards/guards.h"
#include "interop/convert.h"

namespace pijit::guards {
namespace {

// A tensor guard's device in its text: only when it is not the CPU (the common case).
static std::string DeviceText(const Guard& g) {
  return g.device == Device::kCPU ? "" : absl::StrCat(" device=", DeviceName(g.device));
}

// What a value is, for a guard that rejected it: a tensor's type, dtype and layout, a plain
// value's repr (plain values' repr runs no user code), otherwise its type.
std::string DescribeValue(PyObject* v) {
  if (const Tensor* t = AsTensor(v)) {
    return absl::StrCat(Py_TYPE(v)->tp_name, " ", DTypeName(t->dtype()), ShapeToString(t->shape()),
                        " strides=", ShapeToString(t->strides()));
  }
  if (IsPlainValue(v)) {
    PyObject* r = PyObject_Repr(v);
    std::string text = r ? PyUnicode_AsUTF8(r) : "?";
    Py_XDECREF(r);
    if (!r) PyErr_Clear();
    if (text.size() > 120) text = text.substr(0, 117) + "...";
    return absl::StrCat(Py_TYPE(v)->tp_name, " ", text);
  }
  std::string text = absl::StrFormat("%s at %p", Py_TYPE(v)->tp_name, static_cast<void*>(v));
  if (PyTuple_Check(v) || PyList_Check(v) || PyDict_Check(v)) {
    absl::StrAppend(&text, " len=", PyObject_Length(v));
  }
  return text;
}

}  // namespace

std::string GuardProgram::SourceText(int32_t i) const {
  const Source& s = sources_[i];
  const char* name = s.name ? PyUnicode_AsUTF8(s.name) : "";
  switch (s.kind) {
    case Source::kArg: return absl::StrCat("args[", s.index, "]");
    case Source::kGlobal: return absl::StrCat("G['", name, "']");
    case Source::kBuiltin: return absl::StrCat("B['", name, "']");
    case Source::kAttr: return absl::StrCat(SourceText(s.parent), ".", name);
    case Source::kClosure: return absl::StrCat("closure[", s.index, "]");
    case Source::kFuncGlobal: return absl::StrCat(SourceText(s.parent), ".__globals__['", name, "']");
    case Source::kFuncBuiltin: return absl::StrCat(SourceText(s.parent), ".__builtins__['", name, "']");
    case Source::kFuncClosure:
      return absl::StrCat(SourceText(s.parent), ".__closure__[", s.index, "]");
    case Source::kFuncDefaults: return absl::StrCat(SourceText(s.parent), ".__defaults__");
    case Source::kTypeAttr: return absl::StrCat("type(", SourceText(s.parent), ").", name);
    case Source::kItem: return absl::StrCat(SourceText(s.parent), "[", s.index, "]");
    case Source::kFuncKwDefaults: return absl::StrCat(SourceText(s.parent), ".__kwdefaults__");
    case Source::kJitWrapped: return absl::StrCat(SourceText(s.parent), ".__wrapped__");
    case Source::kClassAttr: return absl::StrCat(SourceText(s.parent), ".", name);
    case Source::kDescrFunc:
      return absl::StrCat(SourceText(s.parent), s.index == kPropertySetter ? ".fset" : ".__func__");
    case Source::kTypeOf: return absl::StrCat("type(", SourceText(s.parent), ")");
    case Source::kTensorClassAttr: return absl::StrCat("Tensor.", name);
    case Source::kPartialPart: {
      static const char* const kParts[] = {"func", "args", "keywords"};
      return absl::StrCat(SourceText(s.parent), ".",
                          s.index >= 0 && s.index <= 2 ? kParts[s.index] : "?");
    }
    case Source::kDictItem: {
      PyObject* r = PyObject_Repr(s.name);
      std::string key = r ? PyUnicode_AsUTF8(r) : "?";
      Py_XDECREF(r);
      PyErr_Clear();
      return absl::StrCat(SourceText(s.parent), "[", key, "]");
    }
  }
  return "?";
}

std::string GuardProgram::GuardText(const Guard& g) const {
  std::string out;
  const std::string src = SourceText(g.source);
  switch (g.kind) {
    case Guard::kTensorMatch:
      if (g.dynamic) {
        std::string dims = "(";
        for (size_t d = 0; d < g.shape.size(); ++d) {
          absl::StrAppend(&dims, d ? ", " : "",
                          (g.dynamic >> d & 1) ? "*" : absl::StrCat(g.shape[d]));
        }
        absl::StrAppend(&out, "TENSOR_MATCH(", src, "): ", g.type->tp_name, " ",
                        DTypeName(g.dtype), dims, g.shape.size() == 1 ? ",)" : ")",
                        g.contiguous ? " contiguous" : " strided", DeviceText(g));
        break;
      }
      absl::StrAppend(&out, "TENSOR_MATCH(", src, "): ", g.type->tp_name, " ",
                      DTypeName(g.dtype), ShapeToString(g.shape),
                      " strides=", ShapeToString(g.strides), DeviceText(g));
      break;
    case Guard::kIdMatch:
      absl::StrAppend(&out, "ID_MATCH(", src, "): ", g.type->tp_name, " at ",
                      absl::StrFormat("%p", static_cast<void*>(
                                                g.weak ? PyWeakref_GET_OBJECT(g.value) : g.value)),
                      g.weak ? " (weak)" : "");
      break;
    case Guard::kSameAs:
      absl::StrAppend(&out, "SAME_AS(", src, "): ", SourceText(g.other));
      break;
    case Guard::kDictKeys: {
      PyObject* r = PyObject_Repr(g.value);
      absl::StrAppend(&out, "DICT_KEYS(", src, "): ", r ? PyUnicode_AsUTF8(r) : "?");
      Py_XDECREF(r);
      if (!r) PyErr_Clear();
      break;
    }
    case Guard::kIntBound:
      absl::StrAppend(&out, "INT_BOUND(", src, "): |int| < 2**", g.length);
      break;
    case Guard::kAttrMissing:
      absl::StrAppend(&out, "ATTR_MISSING(", src, "): ", PyUnicode_AsUTF8(g.value));
      break;
    case Guard::kArrayMatch:
      absl::StrAppend(&out, "ARRAY_MATCH(", src, "): ", g.type->tp_name, " contents (",
                      PyBytes_GET_SIZE(g.value), "-byte key)");
      break;
    case Guard::kTypeMatch:
      absl::StrAppend(&out, "TYPE_MATCH(", src, "): ", g.type->tp_name);
      if (g.length >= 0) absl::StrAppend(&out, " len=", g.length);
      break;
    case Guard::kEqualsMatch: {
      PyObject* r = PyObject_Repr(g.value);
      absl::StrAppend(&out, "EQUALS_MATCH(", src, "): ", g.type->tp_name, " == ",
                      r ? PyUnicode_AsUTF8(r) : "?");
      Py_XDECREF(r);
      if (!r) PyErr_Clear();
      break;
    }
  }
  return out;
}

std::string GuardProgram::ToText() const {
  std::string out;
  for (const Guard& g : guards_) absl::StrAppend(&out, GuardText(g), "\n");
  return out;
}

bool GuardProgram::FirstFailure(const Roots& roots, std::string* guard, std::string* now) const {
  std::vector<PyObject*> values(sources_.size(), nullptr);
  for (size_t i = 0; i < sources_.size(); ++i) {
    const Source& s = sources_[i];
    values[i] = ResolveSource(s, s.parent >= 0 ? values[s.parent] : nullptr, roots);
    if (!values[i]) {
      *guard = absl::StrCat("the value ", SourceText(static_cast<int32_t>(i)));
      *now = "missing (the source no longer resolves)";
      return true;
    }
  }
  for (const Guard& g : guards_) {
    PyObject* v = values[g.source];
    if (GuardPasses(g, v, g.other >= 0 ? values[g.other] : nullptr)) continue;
    *guard = GuardText(g);
    *now = g.kind == Guard::kSameAs ? absl::StrCat("a different object from ", SourceText(g.other))
                                    : DescribeValue(v);
    return true;
  }
  return false;
}

}  // namespace pijit::guards
