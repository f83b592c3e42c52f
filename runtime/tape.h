// The PyNative gradient tape: eager ops recorded as an IR graph while a gradient is taken.
//
//   tape.watch(x)                 x (a pijit.Tensor object) becomes a graph parameter
//   tape.start() ... tape.stop()  eager ops run in between are recorded (innermost tape only)
//   tape.gradient(outs, seeds, wrt)
//
// While a tape records, every eager op whose operands include a tracked tensor object (a
// watched one, or the result of a recorded op) appends its node (the same IR op and attributes
// the eager call ran, graph/ops.def) to the tape's graph; untracked operands enter as
// constants holding their values, Python scalars as the 0-d constants the eager call used.
// Ops with no tracked operand, or a non-floating result, are not recorded: no gradient
// flows through them. Tensor objects are tracked by identity; the tape keeps a reference to
// each, so an address is never reused while it records.
//
// gradient() appends the backward computation (graph/autodiff.h) to a copy of the graph,
// turns every recorded forward op into a constant holding the value the eager call computed
// (nothing is recomputed; random draws keep their values) and runs the result on the
// executor.
//
// A Cell with a custom `bprop` is recorded as one opaque node (RecordCustom): its outputs
// become parameters of the graph, and gradient() works backward in stages, calling each
// bprop (Python) with the gradient of its outputs and seeding its inputs with the result.
//
// When no tape records, the cost to an eager op is one load and compare (ActiveTape()).
// Functions compiled by @jit run eagerly while a tape records, so that the tape sees their
// ops (runtime/dispatch.cc).
#pragma once
#include <Python.h>

#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "interop/pyops.h"

namespace pijit {

class Tape {
 public:
  Tape() = default;
  ~Tape();
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  // Makes the tensor object `obj` a parameter and returns its index among the watched
  // tensors; watching a watched object again returns its index.
  absl::StatusOr<int> Watch(PyObject* obj);
  bool Tracks(PyObject* obj) const { return node_of_.contains(obj); }

  // Records `n` (op and attributes set; inputs filled here) applied to the operand objects
  // (nullptr for a Python scalar, whose converted value is in `values`), giving `result`.
  // Records nothing when no operand is tracked or the result is not floating-point.
  void Record(graph::Node n, absl::Span<PyObject* const> operands,
              absl::Span<const Tensor* const> values, PyObject* result);
  // `result` is the same tensor as `source` (Tensor.__pos__), on every recording tape.
  static void Alias(PyObject* source, PyObject* result);
  // An opaque node: `outputs` were computed from `inputs` (any objects; tensors among them
  // may be tracked) by code that was not recorded; `bprop(douts)` gives their gradients.
  absl::Status RecordCustom(absl::Span<PyObject* const> inputs, absl::Span<PyObject* const> outputs,
                            PyObject* bprop);

  // Gradients of sum_i <seeds[i], outputs[i]> with respect to the watched tensors `wrt`
  // (indices from Watch). An output object the tape does not track contributes nothing.
  // A non-floating watched tensor gets no gradient (nullopt).
  absl::StatusOr<std::vector<std::optional<Tensor>>> Gradient(absl::Span<PyObject* const> outputs,
                                                               absl::Span<const Tensor> seeds,
                                                               absl::Span<const int> wrt);

  // The same gradients computed while an enclosing tape records (a gradient inside a
  // gradient): the backward runs op by op as eager ops do, each recorded by the recording
  // tapes, so that the results can be differentiated again. `seeds` are tensor objects.
  // Returns new references (nullptr: no gradient).
  absl::StatusOr<std::vector<PyObject*>> RecordedGradient(absl::Span<PyObject* const> outputs,
                                                          absl::Span<PyObject* const> seeds,
                                                          absl::Span<const int> wrt);

  // For export (pijit.export): records every op with a tracked operand whatever its result's
  // dtype (integer results included), and the random draws (which have no operands), so that
  // the graph computes everything the call did from the watched tensors.
  void RecordEverything() { record_everything_ = true; }
  bool RecordsEverything() const { return record_everything_; }
  // `obj`'s values were read into Python (asnumpy, item, bool, int, float, index) on every
  // recording tape that tracks it: what the call did next may depend on them, which a graph
  // cannot hold, so ForwardGraph refuses (the gradient is unaffected).
  static void NoteHostRead(PyObject* obj);
  // The recorded computation of `outputs` from the watched tensors (the graph's params, in
  // watch order), its dead nodes dropped. Fails where an output is not computed from them,
  // a Cell with a bprop ran (its construct was not recorded), or recording failed.
  absl::StatusOr<graph::Graph> ForwardGraph(absl::Span<PyObject* const> outputs) const;

  // Recording: tapes form a per-thread stack; every tape from the innermost out to the
  // nearest pause records. Pause pushes a gap (code under a custom bprop is not recorded).
  void Start();
  void Stop();
  static void Pause();
  static void Resume();

 private:
  struct Custom {
    std::vector<graph::NodeId> inputs;   // per input: its node, or -1 (untracked / not a tensor)
    std::vector<graph::NodeId> outputs;  // the parameter nodes standing for its outputs
    PyObject* bprop;
  };
  graph::NodeId Track(PyObject* obj, graph::NodeId id, Tensor value);
  void AliasOne(PyObject* source, PyObject* result);
  graph::NodeId OperandNode(PyObject* obj, const Tensor& value);
  absl::Status Fail(absl::Status s);

  graph::Graph graph_;
  std::vector<Tensor> values_;            // per node: the value its eager run produced
  std::vector<graph::NodeId> watched_;     // watched parameter nodes, by watch index
  std::vector<Custom> customs_;
  absl::flat_hash_map<PyObject*, graph::NodeId> node_of_;
  // Constants standing for untracked tensor operands, by node: their objects (which an
  // enclosing tape may track).
  absl::flat_hash_map<graph::NodeId, PyObject*> constant_object_;
  std::vector<PyObject*> refs_;           // strong references to tracked objects
  absl::Status error_;                    // the first recording failure, reported by Gradient
  bool record_everything_ = false;        // RecordEverything
  int64_t host_reads_ = 0;                // NoteHostRead of tracked tensors
};

// Records an eager call on every recording tape (the single eager path, CallEager in
// tensor_py.cc): `operand_objects[i]` is the object of call.operands[i] (nullptr for a Python
// scalar), `operands[i]` its tensor as ApplyEager received it.
void RecordCall(const ParsedCall& call, absl::Span<PyObject* const> operand_objects,
                absl::Span<const Tensor* const> operands, PyObject* result);

extern int g_tapes_started;  // tapes started on any thread: the fast "no tape" check
Tape* ActiveTapeSlow();
// The tape recording on this thread, or nullptr.
inline Tape* ActiveTape() { return g_tapes_started == 0 ? nullptr : ActiveTapeSlow(); }

}  // namespace pijit
