// Recording and replaying whole calls on a device (graph/device_replay.h).
#include "graph/device_replay.h"

#include "graph/executor.h"
#include "kernels/errors.h"

namespace pijit::graph {
namespace {

constexpr int64_t kMinLaunchesToReplay = 3;

bool SameView(const Tensor& a, const Tensor& b) {
  return a.storage() == b.storage() && a.offset() == b.offset() && a.strides() == b.strides() &&
         a.dtype() == b.dtype() && a.shape() == b.shape();
}

}  // namespace

int64_t DeviceReplay::launches() const { return recording_ ? recording_->launches() : 0; }

absl::Status DeviceReplay::RecordCall(const CompiledGraph& g, absl::Span<const Tensor* const> inputs) {
  const Backend& backend = g.backend();
  inputs_.clear();
  outputs_.clear();
  for (const Tensor* in : inputs) {
    if (in->device() == backend.device() && in->is_contiguous()) {
      inputs_.push_back(*in);  // read (and written) where it is
    } else if (in->device() == backend.device()) {
      PIJIT_ASSIGN_OR_RETURN(Tensor copy, backend.Copy(*in));
      inputs_.push_back(std::move(copy));
    } else {
      PIJIT_ASSIGN_OR_RETURN(Tensor copy, backend.Upload(*in));
      inputs_.push_back(std::move(copy));
    }
  }
  absl::InlinedVector<const Tensor*, 8> recorded;
  for (const Tensor& t : inputs_) recorded.push_back(&t);
  PIJIT_ASSIGN_OR_RETURN(recording_, backend.Record([&] { return g.RunOnBackend(recorded, &outputs_); }));
  return absl::OkStatus();
}

absl::StatusOr<bool> DeviceReplay::TryRun(const CompiledGraph& g, absl::Span<const Tensor* const> inputs,
                                          std::vector<Tensor>* outputs) {
  // A call overlapping another (another thread, a finalizer) runs the ordinary way.
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock() || given_up_) return false;
  const Backend& backend = g.backend();
  const Device device = backend.device();
  auto give_up = [this](const absl::Status& why) {
    given_up_ = true;
    failure_ = why.ok() ? "too few kernels to gain from a replay" : std::string(why.message());
    recording_.reset();
    inputs_.clear();
    outputs_.clear();
    return false;
  };
  // A written device input takes its new value back in one copy: it must be contiguous.
  for (int i : g.written_params_) {
    if (inputs[i]->device() == device && !inputs[i]->is_contiguous()) return false;
  }
  std::vector<bool> copied(inputs.size(), false);  // inputs whose values the recording holds a copy of
  if (!recording_) {
    if (plain_calls_++ == 0) return false;  // the first call prepares kernels and libraries
    if (absl::Status s = RecordCall(g, inputs); !s.ok()) return give_up(s);
    // One or two kernels launched directly cost no more than a replay and the copies of its
    // results: such a graph keeps launching them.
    if (recording_->launches() < kMinLaunchesToReplay) {
      return give_up(absl::OkStatus());
    }
    for (size_t i = 0; i < inputs.size(); ++i) copied[i] = !SameView(*inputs[i], inputs_[i]);
  } else {
    if (inputs.size() != inputs_.size()) return false;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (SameView(*inputs[i], inputs_[i])) continue;
      // The recorded tensor may be overwritten only when nothing else holds it.
      if (inputs_[i].storage().use_count() > 1) return false;
      copied[i] = true;
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!copied[i]) continue;
      if (absl::Status s = backend.CopyInto(*inputs[i], inputs_[i]); !s.ok()) return give_up(s);
    }
  }
  if (absl::Status s = recording_->Replay(); !s.ok()) return give_up(s);
  ++replays_;
  for (int i : g.written_params_) {
    if (copied[i]) PIJIT_RETURN_IF_ERROR(CopyAcross(inputs_[i], *inputs[i]));  // else written in place
  }
  bool any_on_device = false;
  for (const Tensor* in : inputs) any_on_device |= in->device() == device;
  // The next replay overwrites the recording's results: the caller gets copies.
  outputs->clear();
  for (const Tensor& out : outputs_) {
    PIJIT_ASSIGN_OR_RETURN(Tensor copy, any_on_device ? backend.Copy(out) : backend.Download(out));
    outputs->push_back(std::move(copy));
  }
  return true;
}

}  // namespace pijit::graph
