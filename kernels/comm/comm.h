// Collective communication between the processes of a data-parallel job, on MPI (Open MPI).
//
// A process started by mpirun (OMPI_COMM_WORLD_SIZE in its environment) joins the job's world
// at Init; any other process is a world of one, where every collective returns its input, so
// the same program runs unchanged on one machine without MPI. Groups are sub-communicators
// of the world, named by an index (0 is the world).
//
// Before each collective the ranks compare what they pass (op, dtype, shape): a mismatch is an
// error on every rank naming the ranks that differ, never a silent mix of buffers. That
// comparison (an all-gather) runs non-blocking and is waited on with a deadline (SetTimeout): a
// rank that never arrives (it raised and left) makes the others fail within that time instead
// of hanging. Once every rank has arrived, the collective itself runs MPI's blocking, tuned
// algorithm; barrier, send and receive are waited on with the deadline throughout. Every MPI
// call is made by the communication thread (kernels/comm/comm_thread.h).
//
// Built with MPI when CMake finds it (PIJIT_WITH_MPI); without it only the world of one works
// and Init under mpirun reports why.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/comm/comm_thread.h"
#include "kernels/tensor.h"

namespace pijit::comm {

enum class ReduceOp { kSum, kMax, kMin, kProd };

// Joins the job (idempotent). Fails under mpirun when pijit was built without MPI.
absl::Status Init();
bool Initialized();
// Whether this build has MPI, and why not when it has not.
bool BuiltWithMpi();
// Leaves the job (at exit; idempotent). After a timed-out collective it aborts the job.
void Finalize();
// Ends every process of the job (MPI_Abort) with `code`: a rank that failed stops the others
// now rather than leaving them waiting in a collective.
void Abort(int code);

int WorldRank();
int WorldSize();
int LocalRank();   // rank among the processes on this machine
int LocalSize();

// A group of world ranks (in that order): its index, or an error (a rank out of range or
// repeated, or this rank not in it). Every rank of the world must call it, as MPI requires.
absl::StatusOr<int> CreateGroup(const std::vector<int>& ranks);
absl::Status DestroyGroup(int group);
absl::StatusOr<int> GroupRank(int group);
absl::StatusOr<int> GroupSize(int group);
// The world rank of `rank` in `group`.
absl::StatusOr<int> WorldRankOf(int group, int rank);

// Seconds a collective may wait for the other ranks (default 300, PIJIT_COMM_TIMEOUT).
void SetTimeout(double seconds);
double Timeout();

// Collectives over host tensors. Results are new contiguous tensors; inputs are not changed.
absl::StatusOr<Tensor> AllReduce(const Tensor& t, ReduceOp op, int group);

// An all-reduce under way on the communication thread (kernels/comm/comm_thread.h): `result`
// is allocated (where the caller's planned slot is, if one is open) and holds the reduction
// once Wait returns. The input may be reused as soon as AllReduceStart returns.
struct Pending {
  Tensor result;
  std::shared_ptr<Work> work;  // null: already complete
  absl::StatusOr<Tensor> Wait();
};
// Starts an all-reduce: compute can go on while it runs. Every rank must start its
// collectives in the same order (the communication thread issues them in the order started).
absl::StatusOr<Pending> AllReduceStart(const Tensor& t, ReduceOp op, int group);
// The ranks' tensors concatenated along axis 0, in rank order.
absl::StatusOr<Tensor> AllGather(const Tensor& t, int group);
// The reduction split along axis 0 (its size a multiple of the group's): this rank's part.
absl::StatusOr<Tensor> ReduceScatter(const Tensor& t, ReduceOp op, int group);
// Rank `root`'s tensor (every rank passes one of the same dtype and shape).
absl::StatusOr<Tensor> Broadcast(const Tensor& t, int root, int group);
absl::Status Barrier(int group);
absl::Status Send(const Tensor& t, int dest, int tag, int group);
// Receives into a new tensor of the given dtype and shape.
absl::StatusOr<Tensor> Receive(DType dtype, const Shape& shape, int src, int tag, int group);

}  // namespace pijit::comm
