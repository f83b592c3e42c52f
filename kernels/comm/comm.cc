// MPI collectives behind kernels/comm/comm.h (see there for the model).
#include "kernels/comm/comm.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kernels/comm/comm_thread.h"
#include "kernels/errors.h"
#include "kernels/flags.h"
#include "kernels/ops.h"

#ifdef PIJIT_WITH_MPI
// MPI's C API only: Open MPI's mpi.h pulls in its removed C++ bindings (libmpi_cxx) otherwise.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace pijit::comm {
namespace {

struct State {
  bool initialized = false;
  bool mpi = false;  // the world is MPI's (launched by mpirun)
  int rank = 0, size = 1, local_rank = 0, local_size = 1;
  double timeout = 300.0;
  bool broken = false;  // a collective timed out: its request is still pending
  CommThread thread;    // makes every MPI call once the world has several processes
  std::vector<std::vector<int>> ranks{{0}};  // world ranks of each group; empty: destroyed
#ifdef PIJIT_WITH_MPI
  std::vector<MPI_Comm> comms;  // [0] the world; MPI_COMM_NULL where this rank is not a member
#endif
};

State& S() {
  static State s;
  return s;
}

// Runs `fn` (MPI calls) on the communication thread, after what is queued there, and waits.
absl::Status OnCommThread(std::function<absl::Status()> fn) { return S().thread.Submit(std::move(fn))->Wait(); }

bool LaunchedByMpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

absl::Status CheckGroup(int group) {
  if (!S().initialized) {
    return absl::FailedPreconditionError("communication is not initialized: call init() first");
  }
  if (group < 0 || group >= static_cast<int>(S().ranks.size()) || S().ranks[group].empty()) {
    return absl::InvalidArgumentError(absl::StrCat("no communication group ", group));
  }
  return absl::OkStatus();
}

// This rank's position in `group`, or -1 when it is not a member.
int PositionIn(int group) {
  const auto& r = S().ranks[group];
  for (size_t i = 0; i < r.size(); ++i)
    if (r[i] == S().rank) return static_cast<int>(i);
  return -1;
}

absl::Status CheckMember(int group, const char* what) {
  if (absl::Status s = CheckGroup(group); !s.ok()) return s;
  if (PositionIn(group) < 0) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: rank %d is not a member of group %d (ranks %s)",
                                                      what, S().rank, group, absl::StrJoin(S().ranks[group], ", ")));
  }
  return absl::OkStatus();
}

// Collectives run on host memory (MPI); a device tensor is moved by the caller.
absl::Status CheckHost(const Tensor& t, const char* what) {
  if (t.device() == Device::kCPU) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      what, ": collectives run on host tensors; move the tensor to the CPU first (Tensor.move_to(\"CPU\"))"));
}

std::string Describe(DType dtype, const Shape& shape) {
  return absl::StrCat(DTypeName(dtype), " (", absl::StrJoin(shape, ", "), shape.size() == 1 ? ",)" : ")");
}

// A reduction of 16-bit floats runs in float32 (MPI has no such type), then casts back.
bool ReducesInFloat32(DType d) { return IsHalfFloat(d); }

#ifdef PIJIT_WITH_MPI

absl::StatusOr<MPI_Datatype> MpiType(DType d) {
  switch (d) {
    case DType::kBool: return MPI_C_BOOL;
    case DType::kUInt8: return MPI_UINT8_T;
    case DType::kInt8: return MPI_INT8_T;
    case DType::kInt16: return MPI_INT16_T;
    case DType::kInt32: return MPI_INT32_T;
    case DType::kInt64: return MPI_INT64_T;
    case DType::kFloat32: return MPI_FLOAT;
    case DType::kFloat64: return MPI_DOUBLE;
    default: return absl::InvalidArgumentError(absl::StrCat("no MPI type for ", DTypeName(d)));
  }
}

MPI_Op MpiOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return MPI_SUM;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kProd: return MPI_PROD;
  }
  return MPI_SUM;
}

absl::Status MpiError(int code, const char* what) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return absl::InternalError(absl::StrCat(what, ": MPI error: ", std::string(text, len)));
}

// Waits for `req` until the deadline: a rank that never joins the collective (it failed and
// left) makes this one fail instead of hanging.
absl::Status Wait(MPI_Request* req, const char* what) {
  const auto start = std::chrono::steady_clock::now();
  for (int spins = 0;; ++spins) {
    int done = 0;
    if (int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) return MpiError(rc, what);
    if (done) return absl::OkStatus();
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited > S().timeout) {
      S().broken = true;
      return absl::DeadlineExceededError(absl::StrFormat(
          "%s on rank %d: the other ranks did not join within %.0f s (one of them may have failed); "
          "set PIJIT_COMM_TIMEOUT to wait longer", what, S().rank, S().timeout));
    }
    // Polls back off: the caller's computation usually shares this core.
    if (spins > 200) std::this_thread::sleep_for(std::chrono::microseconds(spins > 20000 ? 1000 : 20));
  }
}

// The status of a blocking MPI call that returned `rc`.
absl::Status Checked(int rc, const char* what) { return rc == MPI_SUCCESS ? absl::OkStatus() : MpiError(rc, what); }

// The status of a non-blocking MPI call that returned `rc` and posted `req`: waited on with the
// deadline when posted.
absl::Status Posted(int rc, MPI_Request* req, const char* what) {
  return rc == MPI_SUCCESS ? Wait(req, what) : MpiError(rc, what);
}

// A tensor's bytes as MPI counts them (MPI_BYTE buffers).
int Bytes(const Tensor& t) { return static_cast<int>(t.numel() * t.itemsize()); }

// Every member compares what the others pass: the collective, its op or root, the dtype and
// the shape. A mismatch fails on every rank with the same message.
absl::Status CheckSameEverywhere(int group, const char* what, int arg, DType dtype, const Shape& shape) {
  constexpr int kWords = 12;
  int64_t mine[kWords] = {0};
  mine[0] = arg;
  mine[1] = static_cast<int64_t>(dtype);
  mine[2] = static_cast<int64_t>(shape.size());
  for (size_t i = 0; i < shape.size() && i < kWords - 3; ++i) mine[3 + i] = shape[i];
  const int n = static_cast<int>(S().ranks[group].size());
  std::vector<int64_t> all(static_cast<size_t>(n) * kWords);
  MPI_Request req;
  PIJIT_RETURN_IF_ERROR(Posted(
      MPI_Iallgather(mine, kWords, MPI_INT64_T, all.data(), kWords, MPI_INT64_T, S().comms[group], &req), &req, what));
  std::vector<std::string> seen;
  bool differ = false;
  for (int r = 0; r < n; ++r) {
    const int64_t* w = &all[static_cast<size_t>(r) * kWords];
    differ |= std::memcmp(w, all.data(), kWords * sizeof(int64_t)) != 0;
    Shape s(w + 3, w + 3 + std::min<int64_t>(w[2], kWords - 3));
    seen.push_back(absl::StrCat("rank ", S().ranks[group][r], " passes ",
                                Describe(static_cast<DType>(w[1]), s),
                                arg >= 0 ? absl::StrCat(" (op/root ", w[0], ")") : ""));
  }
  if (!differ) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, ": the ranks disagree: ", absl::StrJoin(seen, "; ")));
}

#endif  // PIJIT_WITH_MPI

}  // namespace

bool BuiltWithMpi() {
#ifdef PIJIT_WITH_MPI
  return true;
#else
  return false;
#endif
}

absl::Status Init() {
  State& s = S();
  if (s.initialized) return absl::OkStatus();
  if (std::optional<double> t = flags::CommTimeout()) s.timeout = *t;
  if (!LaunchedByMpirun()) {  // a world of one
    s.initialized = true;
#ifdef PIJIT_WITH_MPI
    s.comms = {MPI_COMM_NULL};
#endif
    return absl::OkStatus();
  }
#ifndef PIJIT_WITH_MPI
  return absl::FailedPreconditionError(
      "this process was launched by mpirun, but pijit was built without MPI: install Open MPI "
      "(Debian: libopenmpi-dev) and rebuild pijit");
#else
  int ready = 0;
  MPI_Initialized(&ready);
  if (!ready) {
    int provided = 0;
    if (int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided); rc != MPI_SUCCESS) {
      return MpiError(rc, "init");
    }
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s.size);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, s.rank, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &s.local_rank);
  MPI_Comm_size(local, &s.local_size);
  MPI_Comm_free(&local);
  s.ranks = {{}};
  for (int r = 0; r < s.size; ++r) s.ranks[0].push_back(r);
  s.comms = {MPI_COMM_WORLD};
  s.mpi = true;
  s.initialized = true;
  s.thread.Start();  // from here on it makes every MPI call (MPI_THREAD_SERIALIZED)
  return absl::OkStatus();
#endif
}

bool Initialized() { return S().initialized; }

void Abort(int code) {
#ifdef PIJIT_WITH_MPI
  if (S().mpi) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  (void)code;
}

void Finalize() {
#ifdef PIJIT_WITH_MPI
  State& s = S();
  if (!s.mpi) return;
  // A timed-out collective never completes: finalizing would wait for it, so the job ends.
  if (s.broken) Abort(1);
  s.thread.Stop();  // what was queued has run; MPI is finalized by the thread that began it
  for (size_t g = 1; g < s.comms.size(); ++g)
    if (s.comms[g] != MPI_COMM_NULL) MPI_Comm_free(&s.comms[g]);
  int done = 0;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();
  s.mpi = false;
#endif
}

int WorldRank() { return S().rank; }
int WorldSize() { return S().size; }
int LocalRank() { return S().local_rank; }
int LocalSize() { return S().local_size; }

void SetTimeout(double seconds) {
  if (seconds > 0) S().timeout = seconds;
}
double Timeout() { return S().timeout; }

absl::StatusOr<int> CreateGroup(const std::vector<int>& ranks) {
  if (absl::Status st = CheckGroup(0); !st.ok()) return st;
  State& s = S();
  std::vector<bool> used(static_cast<size_t>(s.size), false);
  for (int r : ranks) {
    if (r < 0 || r >= s.size || used[r]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "create_group: rank %d is %s (the world has ranks 0..%d)", r,
          r < 0 || r >= s.size ? "out of range" : "listed twice", s.size - 1));
    }
    used[r] = true;
  }
  if (ranks.empty()) return absl::InvalidArgumentError("create_group: no ranks");
#ifdef PIJIT_WITH_MPI
  MPI_Comm comm = MPI_COMM_NULL;
  if (s.mpi) {
    PIJIT_RETURN_IF_ERROR(OnCommThread([&]() -> absl::Status {
      MPI_Group world, sub;
      MPI_Comm_group(MPI_COMM_WORLD, &world);
      MPI_Group_incl(world, static_cast<int>(ranks.size()), ranks.data(), &sub);
      const int rc = MPI_Comm_create(MPI_COMM_WORLD, sub, &comm);  // every world rank calls it
      MPI_Group_free(&sub);
      MPI_Group_free(&world);
      return Checked(rc, "create_group");
    }));
  }
  s.comms.push_back(comm);
#endif
  s.ranks.push_back(ranks);
  return static_cast<int>(s.ranks.size()) - 1;
}

absl::Status DestroyGroup(int group) {
  if (absl::Status st = CheckGroup(group); !st.ok()) return st;
  if (group == 0) return absl::InvalidArgumentError("the world group cannot be destroyed");
#ifdef PIJIT_WITH_MPI
  if (S().comms[group] != MPI_COMM_NULL) {
    PIJIT_RETURN_IF_ERROR(OnCommThread([group] {
      MPI_Comm_free(&S().comms[group]);
      return absl::OkStatus();
    }));
  }
#endif
  S().ranks[group].clear();
  return absl::OkStatus();
}

absl::StatusOr<int> GroupRank(int group) {
  if (absl::Status st = CheckMember(group, "get_rank"); !st.ok()) return st;
  return PositionIn(group);
}

absl::StatusOr<int> GroupSize(int group) {
  if (absl::Status st = CheckGroup(group); !st.ok()) return st;
  return static_cast<int>(S().ranks[group].size());
}

absl::StatusOr<int> WorldRankOf(int group, int rank) {
  if (absl::Status st = CheckGroup(group); !st.ok()) return st;
  const auto& r = S().ranks[group];
  if (rank < 0 || rank >= static_cast<int>(r.size())) {
    return absl::InvalidArgumentError(absl::StrFormat("rank %d is not in group %d of %d ranks", rank, group,
                                                      static_cast<int>(r.size())));
  }
  return r[rank];
}

absl::StatusOr<Tensor> Pending::Wait() {
  if (work) {
    PIJIT_RETURN_IF_ERROR(work->Wait());
    work.reset();
  }
  return result;
}

absl::StatusOr<Pending> AllReduceStart(const Tensor& t, ReduceOp op, int group) {
  PIJIT_RETURN_IF_ERROR(CheckMember(group, "all_reduce"));
  PIJIT_RETURN_IF_ERROR(CheckHost(t, "all_reduce"));
  if (t.dtype() == DType::kBool && op != ReduceOp::kMax && op != ReduceOp::kMin) {
    return absl::InvalidArgumentError("all_reduce: a bool tensor reduces with MAX or MIN only");
  }
  if (ReducesInFloat32(t.dtype())) {  // runs to completion: the cast back needs the sum
    PIJIT_ASSIGN_OR_RETURN(Tensor wide, Cast(t, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Pending p, AllReduceStart(wide, op, group));
    PIJIT_ASSIGN_OR_RETURN(Tensor sum, p.Wait());
    PIJIT_ASSIGN_OR_RETURN(Tensor back, Cast(sum, t.dtype()));
    return Pending{std::move(back), nullptr};
  }
  // The reduction happens in place in a copy of the input, so the input may be reused (or its
  // memory planned for another value) as soon as this returns.
  Tensor out = Tensor::Empty(t.shape(), t.dtype());
  CopyInto(t, out);
  Pending pending{out, nullptr};
#ifdef PIJIT_WITH_MPI
  if (S().mpi) {
    PIJIT_ASSIGN_OR_RETURN(MPI_Datatype type, MpiType(t.dtype()));
    pending.work = S().thread.Submit([out, op, group, type]() -> absl::Status {
      PIJIT_RETURN_IF_ERROR(CheckSameEverywhere(group, "all_reduce", static_cast<int>(op), out.dtype(), out.shape()));
      // Every rank has arrived (the check waited for them with the deadline): the blocking
      // collective cannot wait for a rank that never comes, and runs MPI's tuned algorithms
      // (twice as fast as the non-blocking one for megabytes between two local ranks).
      return Checked(MPI_Allreduce(MPI_IN_PLACE, out.raw_data(), static_cast<int>(out.numel()), type, MpiOp(op),
                                   S().comms[group]),
                     "all_reduce");
    });
  }
#endif
  (void)op;
  return pending;
}

absl::StatusOr<Tensor> AllReduce(const Tensor& t, ReduceOp op, int group) {
  PIJIT_ASSIGN_OR_RETURN(Pending p, AllReduceStart(t, op, group));
  return p.Wait();
}

absl::StatusOr<Tensor> AllGather(const Tensor& t, int group) {
  PIJIT_RETURN_IF_ERROR(CheckMember(group, "all_gather"));
  PIJIT_RETURN_IF_ERROR(CheckHost(t, "all_gather"));
  const int n = static_cast<int>(S().ranks[group].size());
  Shape shape = t.shape();
  if (shape.empty()) shape.push_back(1);  // 0-d tensors gather into a vector
  shape[0] *= n;
  Tensor in = t.Contiguous();
  Tensor out = Tensor::Empty(shape, t.dtype());
  const size_t bytes = static_cast<size_t>(in.numel()) * in.itemsize();
  if (n == 1) {
    std::memcpy(out.raw_data(), in.raw_data(), bytes);
    return out;
  }
#ifdef PIJIT_WITH_MPI
  PIJIT_RETURN_IF_ERROR(OnCommThread([&]() -> absl::Status {
    PIJIT_RETURN_IF_ERROR(CheckSameEverywhere(group, "all_gather", -1, t.dtype(), t.shape()));
    // Every rank has arrived: blocking is safe (see AllReduceStart).
    return Checked(MPI_Allgather(in.raw_data(), Bytes(in), MPI_BYTE, out.raw_data(), Bytes(in), MPI_BYTE,
                                 S().comms[group]),
                   "all_gather");
  }));
#endif
  return out;
}

absl::StatusOr<Tensor> ReduceScatter(const Tensor& t, ReduceOp op, int group) {
  PIJIT_RETURN_IF_ERROR(CheckMember(group, "reduce_scatter"));
  PIJIT_RETURN_IF_ERROR(CheckHost(t, "reduce_scatter"));
  const int n = static_cast<int>(S().ranks[group].size());
  if (t.ndim() == 0 || t.shape()[0] % n != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "reduce_scatter: the first axis of %s must be a multiple of the group's %d ranks",
        Describe(t.dtype(), t.shape()), n));
  }
  absl::StatusOr<Tensor> reduced = n == 1 ? absl::StatusOr<Tensor>(t.Contiguous()) : AllReduce(t, op, group);
  if (!reduced.ok()) return reduced.status();
  // The reduction is complete on every rank; each keeps its block of the first axis (one
  // all-reduce moves the bytes of MPI's reduce-scatter and shares its dtype handling).
  const int64_t block = t.shape()[0] / n;
  Shape shape = t.shape();
  shape[0] = block;
  Tensor out = Tensor::Empty(shape, t.dtype());
  const size_t bytes = static_cast<size_t>(out.numel()) * out.itemsize();
  std::memcpy(out.raw_data(), static_cast<char*>(reduced->raw_data()) + bytes * PositionIn(group), bytes);
  return out;
}

absl::StatusOr<Tensor> Broadcast(const Tensor& t, int root, int group) {
  PIJIT_RETURN_IF_ERROR(CheckMember(group, "broadcast"));
  PIJIT_RETURN_IF_ERROR(CheckHost(t, "broadcast"));
  const int n = static_cast<int>(S().ranks[group].size());
  if (root < 0 || root >= n) {
    return absl::InvalidArgumentError(absl::StrFormat("broadcast: root %d is not a rank of the group's %d", root, n));
  }
  Tensor out = Tensor::Empty(t.shape(), t.dtype());
  CopyInto(t, out);
#ifdef PIJIT_WITH_MPI
  if (n > 1) {
    PIJIT_RETURN_IF_ERROR(OnCommThread([&]() -> absl::Status {
      PIJIT_RETURN_IF_ERROR(CheckSameEverywhere(group, "broadcast", root, t.dtype(), t.shape()));
      // Every rank has arrived: blocking is safe (see AllReduceStart).
      return Checked(MPI_Bcast(out.raw_data(), Bytes(out), MPI_BYTE, root, S().comms[group]), "broadcast");
    }));
  }
#endif
  return out;
}

absl::Status Barrier(int group) {
  PIJIT_RETURN_IF_ERROR(CheckMember(group, "barrier"));
#ifdef PIJIT_WITH_MPI
  if (S().mpi) {
    return OnCommThread([group]() -> absl::Status {
      MPI_Request req;
      return Posted(MPI_Ibarrier(S().comms[group], &req), &req, "barrier");
    });
  }
#endif
  return absl::OkStatus();
}

namespace {
absl::Status CheckPeer(int group, int peer, const char* what) {
  PIJIT_RETURN_IF_ERROR(CheckMember(group, what));
  const int n = static_cast<int>(S().ranks[group].size());
  if (peer < 0 || peer >= n || peer == PositionIn(group)) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: rank %d is not another rank of the group's %d",
                                                      what, peer, n));
  }
  return absl::OkStatus();
}
}  // namespace

absl::Status Send(const Tensor& t, int dest, int tag, int group) {
  PIJIT_RETURN_IF_ERROR(CheckPeer(group, dest, "send"));
  PIJIT_RETURN_IF_ERROR(CheckHost(t, "send"));
#ifdef PIJIT_WITH_MPI
  Tensor in = t.Contiguous();
  return OnCommThread([&]() -> absl::Status {
    MPI_Request req;
    return Posted(MPI_Isend(in.raw_data(), Bytes(in), MPI_BYTE, dest, tag, S().comms[group], &req), &req, "send");
  });
#else
  (void)t, (void)tag;
  return absl::OkStatus();
#endif
}

absl::StatusOr<Tensor> Receive(DType dtype, const Shape& shape, int src, int tag, int group) {
  PIJIT_RETURN_IF_ERROR(CheckPeer(group, src, "receive"));
  Tensor out = Tensor::Empty(shape, dtype);
#ifdef PIJIT_WITH_MPI
  PIJIT_RETURN_IF_ERROR(OnCommThread([&]() -> absl::Status {
    MPI_Request req;
    return Posted(MPI_Irecv(out.raw_data(), Bytes(out), MPI_BYTE, src, tag, S().comms[group], &req), &req,
                  "receive");
  }));
#else
  (void)tag;
#endif
  return out;
}

}  // namespace pijit::comm
