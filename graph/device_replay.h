// Whole calls of a compiled graph on a device, recorded once and replayed (CUDA graphs).
//
// A graph for a device backend that can record (Backend::CanRecord) runs its first call the
// ordinary way: kernels compile, libraries choose their algorithms, lazily made workspaces
// appear. The second call is recorded and every later call replays the recording: one launch
// for the whole graph instead of one per node, with no host work per node.
//
// A recording reads its inputs from the addresses it was recorded with: the call's own device
// tensors where they were contiguous (weights updated in place, the usual case, then cost no
// copy at all), device copies of its host inputs otherwise. A later call passing another
// tensor copies it into the recorded one first, which is only allowed when nothing but the
// recording still holds that one; when the caller still holds it (two live input tensors
// alternating), the call runs the ordinary way. A written parameter (assign) that was copied
// in is copied back out after the replay. Outputs are copied out of the recording's memory
// (the next replay overwrites it), to the host when every input came from there.
//
// A graph that cannot be recorded (a node synchronises with the host, PIJIT_PROFILE is set)
// runs the ordinary way from then on, as do a graph that draws random numbers (each call
// must draw new ones) and one of fewer than three kernels (launching them
// costs no more than a replay and the copies of its results); PIJIT_CUDA_GRAPHS=0 turns
// recording off per compile.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/backend.h"

namespace pijit::graph {

class CompiledGraph;

class DeviceReplay {
 public:
  // Runs the call through the recording when it can (true); false when the caller must run it
  // the ordinary way (first call, a recording that failed, inputs it cannot take).
  absl::StatusOr<bool> TryRun(const CompiledGraph& g, absl::Span<const Tensor* const> inputs,
                              std::vector<Tensor>* outputs);
  int64_t replays() const { return replays_; }
  int64_t launches() const;  // per replay; 0 before the recording
  const std::string& failure() const { return failure_; }  // why recording was given up

 private:
  absl::Status RecordCall(const CompiledGraph& g, absl::Span<const Tensor* const> inputs);
  std::mutex mu_;
  int plain_calls_ = 0;
  bool given_up_ = false;
  std::string failure_;
  int64_t replays_ = 0;
  std::vector<Tensor> inputs_;   // what the recording reads (and writes: assign)
  std::vector<Tensor> outputs_;  // where the recording leaves its results
  std::unique_ptr<RecordedCall> recording_;
};

}  // namespace pijit::graph
