// pijit.communication's native part: the job's world and groups, the collectives that are not
// ops (barrier, send, receive; the others are graph ops, interop/pyops.def), and what the
// collectives have cost (kernels/comm).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "graph/graph.h"
#include "interop/convert.h"
#include "kernels/comm/comm.h"
#include "pijit/csrc/module.h"

namespace py = pybind11;

namespace pijit {
namespace {

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

// Runs a collective with the interpreter's lock released: the caller waits for the other ranks
// (and the communication thread), and other Python threads may run meanwhile.
template <typename Fn>
auto Released(Fn fn) {
  py::gil_scoped_release release;
  return fn();
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
  c.def("barrier", [](int group) { Check(Released([&] { return comm::Barrier(group); })); });
  c.def("send", [](py::handle t, int dest, int tag, int group) {
    const Tensor& x = HostTensor(t, "send");
    Check(Released([&] { return comm::Send(x, dest, tag, group); }));
  });
  c.def("receive", [](py::handle like, int src, int tag, int group) {
    const Tensor& t = HostTensor(like, "receive");
    return Wrap(Released([&] { return comm::Receive(t.dtype(), t.shape(), src, tag, group); }));
  });
  // A collective under way (comm_func's CommHandle wraps it): wait() returns when it is done
  // and raises what it failed with.
  py::class_<comm::Work, std::shared_ptr<comm::Work>>(c, "Work")
      .def("wait", [](comm::Work& w) { Check(Released([&] { return w.Wait(); })); })
      .def("done", &comm::Work::done);
  // An all-reduce started on the communication thread: (its result, valid once the Work is
  // waited for; the Work, or None when it completed already).
  c.def("all_reduce_start", [](py::handle t, int64_t code) {
    const Tensor& x = HostTensor(t, "all_reduce");
    if (code < 0) throw py::value_error("all_reduce: negative code");
    // The code of the graph op (graph/graph.h): reduction plus kAllReduceOps times group.
    comm::Pending p = Get(comm::AllReduceStart(x, static_cast<comm::ReduceOp>(code % graph::kAllReduceOps),
                                               static_cast<int>(code / graph::kAllReduceOps)));
    py::object work = p.work ? py::cast(p.work) : py::none();
    return py::make_tuple(py::reinterpret_steal<py::object>(WrapTensor(std::move(p.result))), work);
  });
  // What collectives have cost so far (kernels/comm/comm_thread.h Stats): busy is the time
  // from each start to its completion, waited the part of it callers spent blocked.
  c.def("stats", [] {
    const comm::Stats s = comm::GetStats();
    py::dict d;
    d["works"] = s.works;
    d["busy_seconds"] = s.busy_seconds;
    d["waited_seconds"] = s.waited_seconds;
    return d;
  });
  c.def("reset_stats", &comm::ResetStats);
}

}  // namespace pijit
