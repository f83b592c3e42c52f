// pijit.communication's native part: the job's world and groups, and the collectives over
// host tensors (kernels/comm).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "interop/convert.h"
#include "kernels/comm/comm.h"
#include "pijit/csrc/module.h"

namespace py = pybind11;

namespace pijit {
namespace {

comm::ReduceOp ReduceOpOf(const std::string& name) {
  if (name == "sum") return comm::ReduceOp::kSum;
  if (name == "max") return comm::ReduceOp::kMax;
  if (name == "min") return comm::ReduceOp::kMin;
  if (name == "prod") return comm::ReduceOp::kProd;
  throw py::value_error("unknown reduce op '" + name + "' (expected sum, max, min or prod)");
}

const Tensor& HostTensor(py::handle obj, const char* what) {
  const Tensor* t = AsTensor(obj.ptr());
  if (!t) throw py::type_error(std::string(what) + ": expected a Tensor, got " + Py_TYPE(obj.ptr())->tp_name);
  if (t->device() != Device::kCPU) {
    throw py::value_error(std::string(what) + ": collectives run on host tensors; move the tensor to the CPU");
  }
  return *t;
}

// Errors as the eager ops raise them (interop/convert.cc): ValueError for bad arguments,
// TimeoutError for a collective the other ranks did not join in time.
void Check(const absl::Status& s) {
  if (!s.ok()) ThrowStatus(s);
}

template <typename T>
T Get(absl::StatusOr<T> r) {
  Check(r.status());
  return *std::move(r);
}

py::object Wrap(absl::StatusOr<Tensor> r) {
  return py::reinterpret_steal<py::object>(WrapTensor(Get(std::move(r))));
}

}  // namespace

void BindComm(py::module_& m) {
  py::module_ c = m.def_submodule("comm", "collective communication over MPI");
  c.def("built_with_mpi", &comm::BuiltWithMpi);
  c.def("init", [] { Check(comm::Init()); });
  c.def("initialized", &comm::Initialized);
  c.def("finalize", &comm::Finalize);
  c.def("abort", &comm::Abort);
  c.def("world_rank", &comm::WorldRank);
  c.def("world_size", &comm::WorldSize);
  c.def("local_rank", &comm::LocalRank);
  c.def("local_size", &comm::LocalSize);
  c.def("create_group", [](const std::vector<int>& ranks) { return Get(comm::CreateGroup(ranks)); });
  c.def("destroy_group", [](int group) { Check(comm::DestroyGroup(group)); });
  c.def("group_rank", [](int group) { return Get(comm::GroupRank(group)); });
  c.def("group_size", [](int group) { return Get(comm::GroupSize(group)); });
  c.def("world_rank_of", [](int group, int rank) { return Get(comm::WorldRankOf(group, rank)); });
  c.def("set_timeout", &comm::SetTimeout);
  c.def("timeout", &comm::Timeout);
  c.def("all_reduce", [](py::handle t, const std::string& op, int group) {
    return Wrap(comm::AllReduce(HostTensor(t, "all_reduce"), ReduceOpOf(op), group));
  });
  c.def("all_gather", [](py::handle t, int group) {
    return Wrap(comm::AllGather(HostTensor(t, "all_gather"), group));
  });
  c.def("reduce_scatter", [](py::handle t, const std::string& op, int group) {
    return Wrap(comm::ReduceScatter(HostTensor(t, "reduce_scatter"), ReduceOpOf(op), group));
  });
  c.def("broadcast", [](py::handle t, int root, int group) {
    return Wrap(comm::Broadcast(HostTensor(t, "broadcast"), root, group));
  });
  c.def("barrier", [](int group) { Check(comm::Barrier(group)); });
  c.def("send", [](py::handle t, int dest, int tag, int group) {
    Check(comm::Send(HostTensor(t, "send"), dest, tag, group));
  });
  c.def("receive", [](py::handle like, int src, int tag, int group) {
    const Tensor& t = HostTensor(like, "receive");
    return Wrap(comm::Receive(t.dtype(), t.shape(), src, tag, group));
  });
}

}  // namespace pijit
