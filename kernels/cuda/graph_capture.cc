// Recording and replaying CUDA graphs (kernels/cuda/graph_capture.h).
#include "kernels/cuda/graph_capture.h"

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/errors.h"

namespace pijit::cuda {

absl::StatusOr<std::unique_ptr<RecordedWork>> RecordedWork::Record(const std::function<absl::Status()>& body) {
  PIJIT_ASSIGN_OR_RETURN(const CudaApi* api, CudaApi::Get());
  PIJIT_ASSIGN_OR_RETURN(CachingAllocator* allocator, DeviceAllocator());
  std::unique_ptr<RecordedWork> work(new RecordedWork());
  // The pool opens before the capture and closes after it, whatever happens between.
  work->pool_ = allocator->OpenPool();
  PIJIT_RETURN_IF_ERROR(DriverStatus(
      *api, api->cuStreamBeginCapture(api->stream, CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture"));
  const absl::Status ran = body();
  // The capture ends even when the body failed: the stream must leave capture mode.
  const CUresult ended = api->cuStreamEndCapture(api->stream, &work->graph_);
  allocator->ClosePool();
  if (!ran.ok()) return absl::Status(ran.code(), absl::StrCat("while recording a CUDA graph: ", ran.message()));
  PIJIT_RETURN_IF_ERROR(DriverStatus(*api, ended, "cuStreamEndCapture"));
  if (work->graph_ == nullptr) return absl::InternalError("cuStreamEndCapture gave no graph");
  size_t count = 0;
  PIJIT_RETURN_IF_ERROR(DriverStatus(*api, api->cuGraphGetNodes(work->graph_, nullptr, &count), "cuGraphGetNodes"));
  work->nodes_ = static_cast<int64_t>(count);
  PIJIT_RETURN_IF_ERROR(DriverStatus(
      *api, api->cuGraphInstantiateWithFlags(&work->exec_, work->graph_, 0), "cuGraphInstantiate"));
  return work;
}

RecordedWork::~RecordedWork() {
  auto api = CudaApi::Get();
  if (api.ok()) {
    // A launch still running finishes first: the driver frees a running graph when it ends.
    if (exec_) (*api)->cuGraphExecDestroy(exec_);
    if (graph_) (*api)->cuGraphDestroy(graph_);
  }
  if (auto allocator = DeviceAllocator(); allocator.ok() && pool_) (*allocator)->RetirePool(pool_);
}

absl::Status RecordedWork::Replay() const {
  PIJIT_ASSIGN_OR_RETURN(const CudaApi* api, CudaApi::Get());
  return DriverStatus(*api, api->cuGraphLaunch(exec_, api->stream), "cuGraphLaunch");
}

}  // namespace pijit::cuda
