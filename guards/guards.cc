#include "guards/guards.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "interop/convert.h"

namespace pijit::guards {

PyObject* SafeGetAttr(PyObject* obj, PyObject* name) {
  if (PyModule_CheckExact(obj)) {
    PyObject* d = PyModule_GetDict(obj);
    return d ? PyDict_GetItemWithError(d, name) : nullptr;
  }
  PyTypeObject* tp = Py_TYPE(obj);
  if (tp->tp_getattro != PyObject_GenericGetAttr) return nullptr;
  PyObject* descr = _PyType_Lookup(tp, name);
  if (descr && Py_TYPE(descr)->tp_descr_set) return nullptr;  // data descriptor (property...)
  PyObject** dictptr = _PyObject_GetDictPtr(obj);
  if (dictptr && *dictptr) {
    PyObject* v = PyDict_GetItemWithError(*dictptr, name);
    if (v) return v;
    if (PyErr_Occurred()) {
      PyErr_Clear();
      return nullptr;
    }
  }
  if (descr && !Py_TYPE(descr)->tp_descr_get) return descr;  // plain class attribute
  return nullptr;
}

GuardProgram::~GuardProgram() {
  for (Source& s : sources_) Py_XDECREF(s.name);
  for (Guard& g : guards_) {
    Py_XDECREF(g.value);
    Py_XDECREF(reinterpret_cast<PyObject*>(g.type));
  }
}

namespace {
bool PlainEqual(PyObject* a, PyObject* b);
}  // namespace

int32_t GuardProgram::AddSource(Source::Kind kind, int32_t parent, int32_t index, PyObject* name) {
  for (size_t i = 0; i < sources_.size(); ++i) {
    const Source& s = sources_[i];
    if (s.kind == kind && s.parent == parent && s.index == index &&
        (s.name == name || (s.name && name && Py_TYPE(s.name) == Py_TYPE(name) &&
                            PlainEqual(s.name, name)))) {
      return static_cast<int32_t>(i);
    }
  }
  Py_XINCREF(name);
  sources_.push_back({kind, parent, index, name});
  return static_cast<int32_t>(sources_.size() - 1);
}

void GuardProgram::GuardType(int32_t source, PyObject* obj) {
  for (const Guard& g : guards_)
    if (g.source == source && g.kind == Guard::kTypeMatch) return;
  Guard g{Guard::kTypeMatch, source};
  g.type = Py_TYPE(obj);
  Py_INCREF(reinterpret_cast<PyObject*>(g.type));
  if (PyTuple_Check(obj) || PyList_Check(obj)) g.length = PySequence_Fast_GET_SIZE(obj);
  if (PyDict_Check(obj)) g.length = PyDict_GET_SIZE(obj);
  guards_.push_back(std::move(g));
}

void GuardProgram::GuardDictKeys(int32_t source, PyObject* dict) {
  for (const Guard& g : guards_)
    if (g.source == source && g.kind == Guard::kDictKeys) return;
  PyObject* keys = PyDict_Keys(dict);
  PyObject* t = keys ? PyList_AsTuple(keys) : nullptr;
  Py_XDECREF(keys);
  if (!t) {
    PyErr_Clear();
    return;
  }
  Guard g{Guard::kDictKeys, source};
  g.type = Py_TYPE(dict);
  Py_INCREF(reinterpret_cast<PyObject*>(g.type));
  g.value = t;
  guards_.push_back(std::move(g));
}

void GuardProgram::GuardIntBound(int32_t source, int bits) {
  for (const Guard& g : guards_)
    if (g.source == source && g.kind == Guard::kIntBound && g.length <= bits) return;
  Guard g{Guard::kIntBound, source};
  g.type = &PyLong_Type;
  Py_INCREF(reinterpret_cast<PyObject*>(g.type));
  g.length = bits;
  guards_.push_back(std::move(g));
}

void GuardProgram::GuardAttrMissing(int32_t source, PyObject* name) {
  for (const Guard& g : guards_)
    if (g.source == source && g.kind == Guard::kAttrMissing && PlainEqual(g.value, name)) return;
  Guard g{Guard::kAttrMissing, source};
  g.value = Py_NewRef(name);
  guards_.push_back(std::move(g));
}

bool AttrMissing(PyObject* obj, PyObject* name) {
  PyTypeObject* type = Py_TYPE(obj);
  if (type->tp_getattro != PyObject_GenericGetAttr || _PyType_Lookup(type, name)) return false;
  static PyObject* getattr_name = PyUnicode_InternFromString("__getattr__");
  if (_PyType_Lookup(type, getattr_name)) return false;
  PyObject** dictptr = _PyObject_GetDictPtr(obj);
  if (dictptr && *dictptr) {
    PyObject* v = PyDict_GetItemWithError(*dictptr, name);
    if (v || PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
  }
  return true;
}

void GuardProgram::GuardSameAs(int32_t source, int32_t other) {
  Guard g{Guard::kSameAs, source};
  g.other = other;
  guards_.push_back(std::move(g));
}

namespace {
// Equality of plain values that also tells 0.0 from -0.0 (1/x differs) and lets a NaN match
// itself: floats compare by their bits, tuples item by item.
bool PlainEqual(PyObject* a, PyObject* b) {
  if (a == b) return true;
  if (Py_TYPE(a) != Py_TYPE(b)) return false;
  if (PyFloat_CheckExact(a)) {
    const double x = PyFloat_AS_DOUBLE(a), y = PyFloat_AS_DOUBLE(b);
    return std::memcmp(&x, &y, sizeof(double)) == 0;
  }
  if (PyTuple_CheckExact(a)) {
    if (PyTuple_GET_SIZE(a) != PyTuple_GET_SIZE(b)) return false;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); ++i)
      if (!PlainEqual(PyTuple_GET_ITEM(a, i), PyTuple_GET_ITEM(b, i))) return false;
    return true;
  }
  if (PySlice_Check(a)) {  // bound by bound, types included (slice(1) is not slice(1.0))
    auto* x = reinterpret_cast<PySliceObject*>(a);
    auto* y = reinterpret_cast<PySliceObject*>(b);
    return PlainEqual(x->start, y->start) && PlainEqual(x->stop, y->stop) &&
           PlainEqual(x->step, y->step);
  }
  int eq = PyObject_RichCompareBool(a, b, Py_EQ);
  if (eq < 0) PyErr_Clear();
  return eq == 1;
}

// Looks `name` up in a dict; borrowed, nullptr (no error) when absent.
PyObject* DictItem(PyObject* dict, PyObject* name) {
  if (!dict || !PyDict_Check(dict)) return nullptr;
  PyObject* v = PyDict_GetItemWithError(dict, name);
  if (!v) PyErr_Clear();
  return v;
}
PyObject* BuiltinItem(PyObject* globals, PyObject* builtins, PyObject* name) {
  if (DictItem(globals, name)) return nullptr;  // shadowed by a global since capture
  return DictItem(builtins, name);
}
PyObject* CellItem(PyObject* closure, int32_t index) {
  if (!closure || !PyTuple_Check(closure) || index >= PyTuple_GET_SIZE(closure)) return nullptr;
  return PyCell_GET(PyTuple_GET_ITEM(closure, index));
}
// A function's __defaults__ or __kwdefaults__ as Python shows it: None when it has none.
PyObject* OrNone(PyObject* v) { return v ? v : Py_None; }
}  // namespace

bool GuardProgram::HasGuard(int32_t source) const {
  // TYPE_MATCH, DICT_KEYS and INT_BOUND are weaker than the others: a value guard may still
  // be added.
  for (const Guard& g : guards_) {
    if (g.source == source && g.kind != Guard::kTypeMatch && g.kind != Guard::kDictKeys &&
        g.kind != Guard::kIntBound) {
      return true;
    }
  }
  return false;
}

void GuardProgram::GuardTensor(int32_t source, PyObject* obj, const Tensor& t, uint64_t dynamic) {
  if (HasGuard(source)) return;
  Guard g{Guard::kTensorMatch, source};
  g.type = Py_TYPE(obj);
  Py_INCREF(reinterpret_cast<PyObject*>(g.type));
  g.dtype = t.dtype();
  g.shape = t.shape();
  g.strides = t.strides();
  g.dynamic = dynamic;
  g.contiguous = t.is_contiguous();
  g.device = t.device();
  guards_.push_back(std::move(g));
}

void GuardProgram::RelaxTensorSizes() {
  for (Guard& g : guards_)
    if (g.kind == Guard::kTensorMatch) g.dynamic = ~uint64_t{0};
}

bool GuardProgram::HasDeadReferent() const {
  for (const Guard& g : guards_)
    if (g.kind == Guard::kIdMatch && g.weak && PyWeakref_GET_OBJECT(g.value) == Py_None) return true;
  return false;
}

bool GuardProgram::has_dynamic() const {
  for (const Guard& g : guards_)
    if (g.kind == Guard::kTensorMatch && g.dynamic) return true;
  return false;
}

// TENSOR_MATCH on everything but sizes: type, dtype, rank.
static bool SameKindOfTensor(const Guard& g, PyObject* v) {
  if (Py_TYPE(v) != g.type) return false;
  const Tensor* t = AsTensor(v);
  return t->dtype() == g.dtype && t->device() == g.device && t->shape().size() == g.shape.size();
}

static bool SameDims(const Shape& a, const Shape& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0;
}

static bool TensorMatches(const Guard& g, const Tensor& t) {
  if (t.dtype() != g.dtype || t.device() != g.device) return false;
  if (!g.dynamic) return SameDims(t.shape(), g.shape) && SameDims(t.strides(), g.strides);
  if (t.shape().size() != g.shape.size()) return false;
  for (size_t d = 0; d < g.shape.size(); ++d)
    if (!(g.dynamic >> d & 1) && t.shape()[d] != g.shape[d]) return false;
  // Strides follow the sizes; what stays fixed is whether the layout is contiguous (a
  // guard relaxed for an eager verdict does not care).
  return g.dynamic == ~uint64_t{0} || t.is_contiguous() == g.contiguous;
}

bool IsPlainValue(PyObject* o) {
  if (o == Py_None || IsPythonNumber(o) || PyUnicode_CheckExact(o)) return true;
  if (PySlice_Check(o)) {  // immutable, and equal when its bounds are
    auto* s = reinterpret_cast<PySliceObject*>(o);
    return IsPlainValue(s->start) && IsPlainValue(s->stop) && IsPlainValue(s->step);
  }
  if (PyTuple_CheckExact(o)) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); ++i)
      if (!IsPlainValue(PyTuple_GET_ITEM(o, i))) return false;
    return true;
  }
  return false;
}

PyObject* ArrayContents(PyObject* array) {
  Py_buffer view;
  if (PyObject_GetBuffer(array, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
    PyErr_Clear();
    return nullptr;
  }
  PyObject* out = nullptr;
  // Object arrays hold references to mutable objects: their bytes say nothing of the values.
  if (view.len <= kMaxArrayGuardBytes && view.format && !strchr(view.format, 'O')) {
    // format NUL ndim shape... bytes: equal keys mean equal item types, shapes and values.
    std::string key(view.format);
    key.push_back('\0');
    key.append(reinterpret_cast<const char*>(&view.ndim), sizeof(view.ndim));
    for (int d = 0; d < view.ndim; ++d)
      key.append(reinterpret_cast<const char*>(&view.shape[d]), sizeof(Py_ssize_t));
    key.append(static_cast<const char*>(view.buf), static_cast<size_t>(view.len));
    out = PyBytes_FromStringAndSize(key.data(), static_cast<Py_ssize_t>(key.size()));
    if (!out) PyErr_Clear();
  }
  PyBuffer_Release(&view);
  return out;
}

bool GuardProgram::GuardArrayContents(int32_t source, PyObject* obj) {
  for (const Guard& g : guards_)
    if (g.source == source && g.kind == Guard::kArrayMatch) return true;
  PyObject* contents = ArrayContents(obj);
  if (!contents) return false;
  Guard g{Guard::kArrayMatch, source};
  g.type = Py_TYPE(obj);
  Py_INCREF(reinterpret_cast<PyObject*>(g.type));
  g.value = contents;
  guards_.push_back(std::move(g));
  return true;
}

void GuardProgram::GuardValue(int32_t source, PyObject* obj) {
  if (HasGuard(source)) return;
  Guard g{IsPlainValue(obj) ? Guard::kEqualsMatch : Guard::kIdMatch, source};
  g.type = Py_TYPE(obj);
  Py_INCREF(reinterpret_cast<PyObject*>(g.type));
  // ID_MATCH holds a weak reference where it can, so a cache entry does not keep the user's
  // objects (a network, say) alive; a dead referent never matches, so a new object at the
  // same address cannot pass the guard.
  if (g.kind == Guard::kIdMatch && PyType_SUPPORTS_WEAKREFS(g.type)) {
    g.value = PyWeakref_NewRef(obj, nullptr);
    g.weak = g.value != nullptr;
    if (!g.value) PyErr_Clear();
  }
  if (!g.value) {
    g.value = obj;
    Py_INCREF(obj);
  }
  guards_.push_back(std::move(g));
}

PyObject* (*g_jit_wrapped_function)(PyObject* obj) = nullptr;

PyObject* DescriptorFunction(PyObject* descr, bool setter) {
  const bool prop = PyObject_TypeCheck(descr, &PyProperty_Type);
  const char* attr = setter ? (prop ? "fset" : nullptr)
                     : PyObject_TypeCheck(descr, &PyStaticMethod_Type) ||
                             PyObject_TypeCheck(descr, &PyClassMethod_Type)
                         ? "__func__"
                     : prop ? "fget"
                            : nullptr;
  if (!attr) return nullptr;
  PyObject* fn = PyObject_GetAttrString(descr, attr);
  if (!fn) {
    PyErr_Clear();
    return nullptr;
  }
  Py_DECREF(fn);  // the descriptor keeps it alive
  return fn;
}

PyTypeObject* PartialType() {
  static PyTypeObject* const type = [] {
    PyObject* functools = PyImport_ImportModule("functools");
    PyObject* t = functools ? PyObject_GetAttrString(functools, "partial") : nullptr;
    Py_XDECREF(functools);
    if (!t || !PyType_Check(t)) {
      Py_XDECREF(t);
      PyErr_Clear();
      return static_cast<PyTypeObject*>(nullptr);
    }
    return reinterpret_cast<PyTypeObject*>(t);  // kept: functools lives as long as Python
  }();
  return type;
}

PyObject* PartialPart(PyObject* partial, int index) {
  static const char* const kParts[] = {"func", "args", "keywords"};
  if (index < 0 || index > 2 || PartialType() == nullptr || Py_TYPE(partial) != PartialType())
    return nullptr;
  // Read-only members of the C type: no user code runs; the partial keeps them alive.
  PyObject* v = PyObject_GetAttrString(partial, kParts[index]);
  if (!v) {
    PyErr_Clear();
    return nullptr;
  }
  Py_DECREF(v);
  return v;
}

PyObject* ResolveSource(const Source& s, PyObject* p, const Roots& roots) {
  PyObject* v = nullptr;
  switch (s.kind) {
    case Source::kArg: v = roots.args[s.index]; break;
    case Source::kGlobal: v = DictItem(roots.globals, s.name); break;
    case Source::kBuiltin: v = BuiltinItem(roots.globals, roots.builtins, s.name); break;
    case Source::kAttr: v = SafeGetAttr(p, s.name); break;
    case Source::kClosure: v = CellItem(roots.closure, s.index); break;
    case Source::kFuncGlobal:
      if (PyFunction_Check(p)) v = DictItem(PyFunction_GET_GLOBALS(p), s.name);
      break;
    case Source::kFuncBuiltin:
      if (PyFunction_Check(p)) {
        v = BuiltinItem(PyFunction_GET_GLOBALS(p),
                        reinterpret_cast<PyFunctionObject*>(p)->func_builtins, s.name);
      }
      break;
    case Source::kFuncClosure:
      if (PyFunction_Check(p)) v = CellItem(PyFunction_GET_CLOSURE(p), s.index);
      break;
    case Source::kFuncDefaults:
      if (PyFunction_Check(p)) v = OrNone(PyFunction_GET_DEFAULTS(p));
      break;
    case Source::kTypeAttr: v = _PyType_Lookup(Py_TYPE(p), s.name); break;
    case Source::kItem:
      if ((PyTuple_Check(p) || PyList_Check(p)) && s.index < PySequence_Fast_GET_SIZE(p))
        v = PySequence_Fast_ITEMS(p)[s.index];
      break;
    case Source::kDictItem:
      if (PyDict_CheckExact(p)) v = DictItem(p, s.name);
      break;
    case Source::kFuncKwDefaults:
      if (PyFunction_Check(p)) v = OrNone(PyFunction_GET_KW_DEFAULTS(p));
      break;
    case Source::kJitWrapped:
      if (g_jit_wrapped_function) v = g_jit_wrapped_function(p);
      break;
    case Source::kClassAttr:
      if (PyType_Check(p)) v = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(p), s.name);
      break;
    case Source::kDescrFunc:
      v = DescriptorFunction(p, s.index == kPropertySetter);
      break;
    case Source::kTypeOf:
      v = reinterpret_cast<PyObject*>(Py_TYPE(p));
      break;
    case Source::kPartialPart:
      v = PartialPart(p, s.index);
      break;
    case Source::kTensorClassAttr:
      if (g_tensor_type) v = _PyType_Lookup(g_tensor_type, s.name);
      break;
  }
  if (!v && PyErr_Occurred()) PyErr_Clear();
  return v;
}

bool GuardPasses(const Guard& g, PyObject* v, PyObject* other) {
  switch (g.kind) {
    case Guard::kTensorMatch:
      return Py_TYPE(v) == g.type && TensorMatches(g, *AsTensor(v));
    case Guard::kIdMatch:
      return v == (g.weak ? PyWeakref_GET_OBJECT(g.value) : g.value);
    case Guard::kSameAs:
      return v == other;
    case Guard::kTypeMatch:
      if (Py_TYPE(v) != g.type) return false;
      return g.length < 0 ||
             (PyDict_Check(v) ? PyDict_GET_SIZE(v) : PySequence_Fast_GET_SIZE(v)) == g.length;
    case Guard::kEqualsMatch:
      return Py_TYPE(v) == g.type && (v == g.value || PlainEqual(v, g.value));
    case Guard::kIntBound: {
      if (!PyLong_CheckExact(v)) return false;
      int overflow = 0;
      const long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
      const long long bound = 1LL << g.length;
      return overflow == 0 && x > -bound && x < bound;
    }
    case Guard::kAttrMissing:
      return AttrMissing(v, g.value);
    case Guard::kArrayMatch: {
      if (Py_TYPE(v) != g.type) return false;
      PyObject* contents = ArrayContents(v);
      const bool same = contents && PyBytes_GET_SIZE(contents) == PyBytes_GET_SIZE(g.value) &&
                        memcmp(PyBytes_AS_STRING(contents), PyBytes_AS_STRING(g.value),
                               static_cast<size_t>(PyBytes_GET_SIZE(g.value))) == 0;
      Py_XDECREF(contents);
      return same;
    }
    case Guard::kDictKeys: {
      if (Py_TYPE(v) != g.type || PyDict_GET_SIZE(v) != PyTuple_GET_SIZE(g.value)) return false;
      PyObject *k, *item;
      Py_ssize_t pos = 0, i = 0;
      while (PyDict_Next(v, &pos, &k, &item)) {
        PyObject* want = PyTuple_GET_ITEM(g.value, i++);
        if (k != want && !PlainEqual(k, want)) return false;
      }
      return true;
    }
  }
  return false;
}

bool SameGuard(const Guard& a, const Guard& b) {
  if (a.kind != b.kind || a.type != b.type || a.weak != b.weak || a.dtype != b.dtype ||
      a.shape != b.shape || a.strides != b.strides || a.length != b.length ||
      a.dynamic != b.dynamic || a.contiguous != b.contiguous) {
    return false;
  }
  switch (a.kind) {
    case Guard::kIdMatch: {
      PyObject* x = a.weak ? PyWeakref_GET_OBJECT(a.value) : a.value;
      PyObject* y = b.weak ? PyWeakref_GET_OBJECT(b.value) : b.value;
      return x == y && x != Py_None;
    }
    case Guard::kEqualsMatch:
    case Guard::kDictKeys:
    case Guard::kAttrMissing:
    case Guard::kArrayMatch:
      return a.value == b.value || PlainEqual(a.value, b.value);
    default:
      return true;
  }
}

bool SameSource(const Source& a, const Source& b) {
  return a.kind == b.kind && a.index == b.index &&
         (a.name == b.name || (a.name && b.name && Py_TYPE(a.name) == Py_TYPE(b.name) &&
                               PlainEqual(a.name, b.name)));
}

bool GuardProgram::ResolveSources(const Roots& roots, PyObject** values) const {
  for (size_t i = 0; i < sources_.size(); ++i) {
    const Source& s = sources_[i];
    values[i] = ResolveSource(s, s.parent >= 0 ? values[s.parent] : nullptr, roots);
    if (!values[i]) return false;
  }
  return true;
}

bool GuardProgram::Check(const Roots& roots, PyObject** values) const {
  // The common cases, an argument and a tensor's layout, are tested here inline: this runs on
  // every call of the most recently used entry.
  for (size_t i = 0; i < sources_.size(); ++i) {
    const Source& s = sources_[i];
    values[i] = s.kind == Source::kArg
                    ? roots.args[s.index]
                    : ResolveSource(s, s.parent >= 0 ? values[s.parent] : nullptr, roots);
    if (!values[i]) return false;
  }
  for (const Guard& g : guards_) {
    PyObject* v = values[g.source];
    const bool ok = g.kind == Guard::kTensorMatch
                        ? Py_TYPE(v) == g.type && TensorMatches(g, *AsTensor(v))
                        : GuardPasses(g, v, g.other >= 0 ? values[g.other] : nullptr);
    if (!ok) return false;
  }
  return true;
}

bool GuardProgram::ShapeOnlyMismatch(const Roots& roots, PyObject** values,
                                     std::vector<DynamicDim>* dims) const {
  // Sources must all resolve and the other guards pass; tensor guards may fail by sizes only.
  GuardProgram probe;
  probe.sources_ = sources_;
  for (Source& s : probe.sources_) Py_XINCREF(s.name);
  for (const Guard& g : guards_) {
    if (g.kind == Guard::kTensorMatch) continue;
    Guard c = g;
    Py_XINCREF(c.value);
    Py_XINCREF(reinterpret_cast<PyObject*>(c.type));
    probe.guards_.push_back(std::move(c));
  }
  if (!probe.Check(roots, values)) return false;
  bool any = false;
  for (const Guard& g : guards_) {
    if (g.kind != Guard::kTensorMatch) continue;
    PyObject* v = values[g.source];
    if (!SameKindOfTensor(g, v)) return false;
    const Tensor* t = AsTensor(v);
    if (TensorMatches(g, *t)) continue;
    for (size_t d = 0; d < g.shape.size(); ++d) {
      if (t->shape()[d] != g.shape[d]) {
        dims->emplace_back(SourceText(g.source), static_cast<int>(d));
        any = true;
      }
    }
  }
  return any;
}

bool GuardProgram::NumberOnlyMismatch(const Roots& roots, PyObject** values,
                                      std::vector<std::string>* sources) const {
  if (!ResolveSources(roots, values)) return false;
  bool any = false;
  for (const Guard& g : guards_) {
    PyObject* v = values[g.source];
    if (GuardPasses(g, v, g.other >= 0 ? values[g.other] : nullptr)) continue;
    const bool number = g.kind == Guard::kEqualsMatch && Py_TYPE(v) == g.type &&
                        (PyLong_CheckExact(v) || PyFloat_CheckExact(v));
    if (!number) return false;
    sources->push_back(SourceText(g.source));
    any = true;
  }
  return any;
}

}  // namespace pijit::guards
