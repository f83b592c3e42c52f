// Python bindings of graphs read from a graph file (graph/serialize.h): pijit._C._GraphFile,
// what pijit.load returns the inside of and nn.GraphCell runs.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "absl/strings/str_format.h"
#include "graph/executor.h"
#include "graph/serialize.h"
#include "interop/convert.h"
#include "pijit/csrc/module.h"

namespace py = pybind11;

namespace pijit {

namespace {

// A graph read from bytes and compiled for the default backend, run with its params given
// in order.
class GraphFile {
 public:
  explicit GraphFile(const py::bytes& data) {
    auto g = graph::Deserialize(std::string(data));
    if (!g.ok()) ThrowStatus(g.status());
    text_ = g->ToText();
    for (graph::NodeId p : g->params()) inputs_.push_back(g->node(p).meta);
    outputs_ = static_cast<int>(g->outputs().size());
    auto compiled = graph::CompiledGraph::Compile(*std::move(g));
    if (!compiled.ok()) ThrowStatus(compiled.status());
    compiled_.emplace(*std::move(compiled));
  }

  py::list Run(const py::list& inputs) const {
    if (py::len(inputs) != inputs_.size()) {
      throw py::value_error(absl::StrFormat("graph: takes %d tensors, got %d", inputs_.size(),
                                            py::len(inputs)));
    }
    std::vector<const Tensor*> ptrs;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      Tensor* t = AsTensor(inputs[i].ptr());
      if (t == nullptr) {
        throw py::type_error(absl::StrFormat("graph: input %d must be a Tensor, got %s", i,
                                             Py_TYPE(inputs[i].ptr())->tp_name));
      }
      if (!(MetaOf(*t) == inputs_[i])) {
        throw py::value_error(absl::StrFormat(
            "graph: input %d must be %s%s, got %s%s", i, DTypeName(inputs_[i].dtype),
            ShapeToString(inputs_[i].shape), DTypeName(t->dtype()), ShapeToString(t->shape())));
      }
      ptrs.push_back(t);
    }
    std::vector<Tensor> out;
    absl::Status st;
    {
      py::gil_scoped_release release;
      st = compiled_->Run(ptrs, &out);
    }
    if (!st.ok()) ThrowStatus(st);
    py::list result;
    for (Tensor& t : out) result.append(py::reinterpret_steal<py::object>(WrapTensor(std::move(t))));
    return result;
  }

  py::list InputMetas() const {
    py::list metas;
    for (const TensorMeta& m : inputs_)
      metas.append(py::make_tuple(DTypeShortName(m.dtype), py::tuple(py::cast(m.shape))));
    return metas;
  }
  int outputs() const { return outputs_; }
  const std::string& text() const { return text_; }

 private:
  std::optional<graph::CompiledGraph> compiled_;
  std::vector<TensorMeta> inputs_;
  int outputs_ = 0;
  std::string text_;
};

}  // namespace

void BindGraphFile(py::module_& m) {
  py::class_<GraphFile>(m, "_GraphFile", "A graph read from graph-file bytes, compiled.")
      .def(py::init<const py::bytes&>())
      .def("run", &GraphFile::Run, "Runs it on its params' tensors, in order; a list of outputs.")
      .def("input_metas", &GraphFile::InputMetas, "(dtype short name, shape) per param.")
      .def_property_readonly("output_count", &GraphFile::outputs)
      .def_property_readonly("text", &GraphFile::text);
}

}  // namespace pijit
