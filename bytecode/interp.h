// The abstract interpreter behind Capture (internal to bytecode/).
//
// Values on the simulated stack are tensors (graph nodes), known Python objects (guarded at
// their source when their value steers the trace), sequences, iterators, cells and functions
// built during capture. User functions, methods and Cell calls are inlined into the caller's
// graph; branches and loops on known values are followed (and unrolled) at capture time.
//
// Interp is the frame simulation (the step table, frames, inlining, jumps, branches and
// loops) and the handlers that give Python's semantics to each value. It holds three parts
// with state of their own:
//   value.h            the abstract values themselves;
//   value_model.h      graph inputs read from guard sources, graph outputs, kept references;
//   effect_recorder.h  side effects recorded for replay and what later reads see of them;
//   op_bridge.h        (no state) op calls, tensor operators and casts as graph nodes.
#pragma once
#include <Python.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "bytecode/capture.h"
#include "bytecode/effect_recorder.h"
#include "bytecode/instructions.h"
#include "bytecode/op_bridge.h"
#include "bytecode/value.h"
#include "bytecode/value_model.h"
#include "bytecode/version.h"
#include "graph/autodiff.h"
#include "interop/pyops.h"

namespace pijit::bytecode {

// repr(o) for messages (its type's name where repr raises).
std::string ReprOf(PyObject* o);

// Attributes of a cast node to `dtype`.
inline graph::Attrs CastTo(DType dtype) {
  graph::Attrs a;
  a.dtype = dtype;
  return a;
}

// One simulated frame: the root function or an inlined callee.
struct Frame {
  PyCodeObject* code = nullptr;
  // Where this frame's globals and builtins come from: -1 for the root function (the
  // call's own namespaces), else the guard source of the function object being inlined.
  int32_t func_source = -1;
  PyObject* func = nullptr;  // the function object (nullptr for kFunction values)
  PyObject* globals_func = nullptr;  // kFunction frames: whose globals they read (nullptr: root)
  std::vector<Instr> instrs;
  std::vector<Value> locals;
  std::vector<Value> stack;
  PyObject* kwnames = nullptr;
  int depth = 0;
  ValueList* yields = nullptr;  // a generator's frame: where YIELD_VALUE puts its items
  // A generator stepped item by item: RunFrame starts at `pc`, and YIELD_VALUE suspends the
  // frame (`suspended`, with `pc` the instruction to continue at) instead of running on.
  size_t pc = 0;
  bool suspend_at_yield = false;
  bool suspended = false;
};

// One instruction being simulated (Interp::Step): the handler of its opcode's family reads it
// and says where execution continues (`next`, an instruction index) and whether the frame
// returned (`returned`, with the value in *result).
struct StepState {
  Frame& f;
  const Instr& in;
  size_t next;
  bool returned;
  Value* result;
};

class Interp;
// An Enum class (its metaclass is enum.EnumType), and a member of one whose comparison is
// object identity, int's or str's (no Python runs): handlers_descr.cc.
bool IsEnumClass(PyObject* cls);
// NumPy's array constructors (np.array, np.ones, np.arange, ...): called at compile time with
// constant arguments in either mode (handlers_fallback.cc).
bool IsNumpyConstructor(PyObject* fn);
bool IsComparableEnumMember(PyObject* o);
// A value ==, != and `in` compare without running Python code: a plain value, such an Enum
// member, or a pijit dtype (handlers_descr.cc).
bool ComparesWithoutCode(PyObject* o);
// A pijit dtype (pijit.float32, ...): immutable, one object per dtype.
bool IsDTypeObject(PyObject* o);
// A call of a Python builtin (len, isinstance, min, ...) folded at capture time
// (handlers_builtins.cc): *handled says whether `fn` is one it folds; then the result says
// whether folding succeeded (a failure is recorded on `in`).
bool FoldBuiltinCall(Interp& in, Frame& f, PyObject* fn, const ValueList& args,
                     const std::vector<std::string>& names, Value* out, bool* handled);

class Interp {
 public:
  Interp(PyCodeObject* code, PyObject* func, PyObject* const* args, int nargs, CaptureResult* out,
         const std::vector<guards::DynamicDim>& dynamic_dims, bool allow_break,
         const std::vector<std::string>& dynamic_numbers)
      : root_code_(code), root_func_(func), args_(args), nargs_(nargs), out_(out),
        allow_break_(allow_break), values_(out, dynamic_dims, dynamic_numbers) {}
  void Run();

  // ---- shared machinery (capture.cc) ----
  bool failed() const { return failed_; }
  // The trace reads a tensor's sizes as Python values: symbolic sizes cannot be kept.
  void NoteShapeRead() { out_->read_shape = true; }
  void Fail(BreakCategory category, std::string explanation, std::string hint = "");
  guards::GuardProgram& gp() { return *out_->guards; }
  graph::Graph& g() { return out_->graph; }
  bool Pop(Frame& f, Value* v);
  bool PopN(Frame& f, size_t n, ValueList* out);
  Value* StackAt(Frame& f, int depth);  // the value `depth` from the top, or fail (nullptr)
  ValueModel& values() { return values_; }
  void UseConst(const Value& v);
  Value SnapshotValue(const Value& v, absl::flat_hash_map<const ValueList*, Value>& copies);
  void UseAll(const ValueList& vs);
  // Materialises a known Python object for a value built during capture (tuples of
  // constants); nullptr when the value is not fully known.
  PyObject* AsPyObject(const Value& v);
  bool RunFrame(Frame& f, Value* result);
  bool MakeOutput(const Value& v, OutputSpec* spec);
  Value SetMemoKey(const Value& v);
  // A known object without a source: a constant of the output, or one memo slot for a set
  // or a NumPy array made at compile time.
  bool ConstantOutput(const Value& v, OutputSpec* spec);
  // The items of sequence or iterator `v` into spec->items, each made by `make` (MakeOutput,
  // MakeBreakSpec); a namedtuple's class as spec->constant.
  bool ItemOutputs(const Value& v, bool (Interp::*make)(const Value&, OutputSpec*), OutputSpec* spec);
  // Graph breaks: how to rebuild a value of the stack or a local in Python (no guards:
  // values from sources are read from them on each call).
  bool MakeBreakSpec(const Value& v, OutputSpec* spec);
  // Whether zip/enumerate `v` takes from an iterator that the break hands Python too.
  bool TakesFromLiveIterator(const Value& v) const;
  void BuildBreak();  // fills out_->brk from the root frame's state, if it can continue

  // ---- handlers ----
  bool LoadGlobal(Frame& f, PyObject* name, Value* out);         // handlers_attr.cc
  bool LoadAttr(Frame& f, const Value& owner, PyObject* name, bool method);
  // Pushes a loaded callable or attribute; with `method` (LOAD_METHOD, LOAD_GLOBAL's NULL
  // bit), also the NULL that says it is not a bound method, where the version puts it
  // (kNullAfterCallable).
  bool SplitCallee(Value lower, Value upper, Value* callable, ValueList* args);
  bool SetFunctionAttribute(Value& fn, int flag, const Value& a);
  bool LoadLocal(Frame& f, int slot);
  void NoteInlined(PyCodeObject* code);  // for CaptureResult::inlined
  std::string CurrentLocation() const;  // "file:line" of the instruction being simulated
  void NoteRebuilt(PyObject* cls);      // for CaptureResult::rebuilt_objects
  bool PropertyOf(const Value& owner, PyObject* name, bool setter, PyObject** descr,
                  int32_t* descr_source);
  bool CallPropertyAccessor(Frame& f, const Value& owner, PyObject* name, const Value* value,
                            Value* out, bool* handled);
  bool StoreLocal(Frame& f, int slot);
  // (callable, self) for CALL: a method found for `self`, called with it first.
  static void PushBoundMethod(Frame& f, Value callable, Value self) {
    f.stack.push_back(std::move(callable));
    f.stack.push_back(std::move(self));
  }
  static void PushLoaded(Frame& f, Value v, bool method) {
    if (method && !kNullAfterCallable) f.stack.push_back(Value::Null());
    f.stack.push_back(std::move(v));
    if (method && kNullAfterCallable) f.stack.push_back(Value::Null());
  }
  // Parts of LoadAttr (handlers_attr.cc).
  bool TensorAttr(Frame& f, const Value& owner, PyObject* name, bool method);
  bool InputMutatorMethod(Frame& f, const Value& owner, PyObject* name, bool method, bool* handled);
  // An input dict (of at most 256 str or int keys) as a dict of the trace: its type and keys
  // are guarded and its values read from their sources (handlers_attr.cc).
  bool InputDictSnapshot(const Value& owner, Value* out);
  bool InputDictReadMethod(Frame& f, const Value& owner, PyObject* name, bool method, bool* handled);
  // Class attributes, staticmethod, classmethod and property (handlers_descr.cc); *handled
  // when it took the attribute (then false means capture failed).
  bool LoadDescriptorAttr(Frame& f, const Value& owner, PyObject* name, bool method,
                          bool* handled);
  // Pushes a staticmethod's function `fn` as the attribute, or a classmethod's with its class
  // (class_of) for CALL; a classmethod used as a value is not captured.
  bool PushStaticOrClassMethod(Frame& f, Value fn, bool staticm, bool method,
                               absl::FunctionRef<bool(Value*)> class_of);
  bool LoadDeref(Frame& f, int slot, Value* out);
  bool Call(Frame& f, const Value& callable, ValueList args, Value* out);  // handlers_call.cc
  // A known callable that is none of the functions, classes and builtins Call takes: an
  // object called through its class's __call__ (a Cell's construct, a primitive, a user
  // callable), pijit.graph_break, or JIT Fallback.
  bool CallByClass(Frame& f, const Value& callable, ValueList args,
                   const std::vector<std::string>& names, Value* out);
  // Calls of pijit ops, operators and casts on tensors: graph nodes (op_bridge.h).
  OpBridge& ops() { return ops_; }
  // Whole-graph mode (capture_mode="ast", fullgraph): no graph breaks.
  bool WholeGraph() const { return !allow_break_; }
  // range(start, stop, step) whose start or stop is a tensor, in whole-graph mode: a
  // kTensorRange, which a for loop turns into a loop node (handlers_loop.cc).
  bool TensorRange(const ValueList& args, Value* out);
  bool CallVjp(Frame& f, ValueList args, Value* out);
  bool VjpSeeds(const Value& sens, bool scalar, const std::vector<graph::NodeId>& out_nodes,
                std::vector<graph::NodeId>* seeds);  // handlers_grad.cc
  // type(self).<name> (`method`, a Python function) inlined with self first, its source
  // through the callable's (MethodSource).
  bool InlineMethod(Frame& f, const Value& self, PyObject* method, PyObject* name,
                    ValueList args, const std::vector<std::string>& names, Value* out);
  // A primitive instance called: the op its class names, its attributes as keywords;
  // *handled when `fn` is one.
  bool CallPrimitive(PyObject* fn, ValueList args, std::vector<std::string> names, Value* out,
                     bool* handled);
  // functools.partial(func, *args, **keywords) called: func with the stored arguments first.
  // functools.partial(func, *args, **keywords) made during capture, and a call of one.
  bool MakePartial(const ValueList& args, const std::vector<std::string>& names, Value* out);
  bool CallMadePartial(Frame& f, const Value& partial, ValueList args,
                       const std::vector<std::string>& names, Value* out);
  // Calls `func` with `args`, the last merged_names.size() of them by keyword.
  bool CallWithNames(Frame& f, const Value& func, ValueList args,
                     const std::vector<std::string>& merged_names, Value* out);
  bool CallPartial(Frame& f, const Value& callable, ValueList args,
                   const std::vector<std::string>& names, Value* out);
  // handlers_fallback.cc: whole-graph mode's JIT Fallback. FallbackCall sets *handled when
  // it took the call (then false means capture failed); print becomes an effect. With
  // constexpr_call (a function decorated with ops.constexpr) it calls in either mode.
  bool FallbackCall(PyObject* fn, const ValueList& args, const std::vector<std::string>& names,
                    Value* out, bool* handled, bool constexpr_call = false);
  bool PrintEffect(const ValueList& args, const std::vector<std::string>& names, Value* out);
  // fn called now with arguments fixed at compile time (guarded as constants): its result (a
  // new reference), or nullptr with the Python error set; *unknown (and nullptr, no error)
  // when an argument is not fixed at compile time.
  PyObject* CallWithConstants(PyObject* fn, const ValueList& args,
                              const std::vector<std::string>& names, bool* unknown);
  bool FallbackAttr(const Value& owner, PyObject* name, Value* out);
  // A value whose guards pin what a fallback call computes from it (not a tensor of the
  // call, not an outside object guarded by identity only, such as a list or an array).
  bool FixedAtCompileTime(const Value& v);
  // A Cell that defines bprop, called inside a gradient transform: construct inlined, its
  // output behind a custom_grad node whose gradient is bprop's, traced now (handlers_grad.cc).
  bool CallCellWithBprop(Frame& f, const Value& cell, const ValueList& args, Value* out);
  bool Inline(Frame& caller, PyCodeObject* code, PyObject* func, int32_t func_source,
              const Value* fn_value, ValueList args, const std::vector<std::string>& kwnames,
              Value* out);
  bool BinaryOp(int nb, const Value& a, const Value& b, Value* out);  // handlers_operator.cc
  bool CompareOp(int cmp, const Value& a, const Value& b, Value* out);
  bool Truth(const Value& v, bool* out);
  // Whole-graph mode: an `if` on a tensor's value runs both ways and joins their values with
  // where(cond, then, else) (handlers_branch.cc). `jump_on_true`: the jump goes where the
  // condition is true.
  bool BranchOnTensor(StepState& s, const Value& cond, bool jump_on_true);
  bool Subscript(const Value& container, const Value& index, Value* out);
  // A slice of bounds known at capture time (BUILD_SLICE, 3.12's BINARY_SLICE/STORE_SLICE).
  bool MakeSlice(const ValueList& parts, Value* out);
  // container[index] as BINARY_SUBSCR does it, with __getitem__ inlined where it is Python.
  bool SubscriptStep(Frame& f, const Value& container, const Value& index, Value* out);
  // obj[index] where obj's class defines __getitem__ in Python (a SequentialCell, a user
  // container): the method is inlined; *inlined says whether it applied (handlers_operator.cc).
  bool GetItemInPython(Frame& f, const Value& container, const Value& index, Value* out,
                       bool* inlined);
  // The iterator of `v` for a consumer that takes every item (tuple, list, sum, unpacking,
  // *args...): a fresh one over a container, or the items of an iterator, which is left
  // exhausted. GET_ITER keeps an iterator itself (iter(it) is it).
  bool IterConstantArray(const Value& v, ValueList* items);  // handlers_control.cc
  // The items of a Python iterable known now (iter() of a constant: no user code), as
  // constants; fails when iterating raises.
  bool ItemsOfConstant(PyObject* o, ValueList* items);
  bool GetIter(const Value& v, Value* out);                    // handlers_control.cc
  // GET_ITER and FOR_ITER (`next` is the instruction to run next: the loop's exit when the
  // iterator is exhausted).
  bool StepGetIter(Frame& f);
  // iter(a) as GET_ITER makes it (an iterator is its own; a Python __iter__ is inlined).
  bool IterOf(Frame& f, const Value& a, Value* out);
  bool StepForIter(Frame& f, int32_t target, size_t* next);
  // Takes `n` items from the front of iterator `it` (n <= its items), advancing its sources.
  bool TakeItems(const Value& it, size_t n);
  // Whether source j of zip/enumerate `it` still has the items `it` expects (else fails).
  bool SourceInStep(const Value& it, size_t j);
  // Iterator `it` found empty (a FOR_ITER past its end, a consumer draining it).
  bool ExhaustIter(const Value& it);
  // A zip or enumerate over `args`: `rows` are its items; iterator arguments become sources.
  bool MakeDerivedIter(const ValueList& args, ValueList rows, Value* out);
  bool IterInputDict(const Value& v, Value* out);
  // Runs a generator made during capture to its end, its items into `out` (a kIter). With
  // `pure`, a generator whose items add graph nodes fails: its consumer may stop early.
  bool MakeLazyMap(bool filter, const ValueList& args, Value* out);  // inline.cc
  bool RunLazyMap(GenState& st, bool pure, Value* out);
  // A generator's (or map's, filter's) items, taken whole by a consumer, as an iterator;
  // `pure` consumers (all, any) stop early, so the items must have added no graph nodes.
  bool GeneratorItems(ValueList items, size_t nodes_before, bool pure, Value* out);
  // Whether a generator stepped by the trace is left suspended inside a `try` or `with` of
  // its own (then fails): Python runs that cleanup when the generator is dropped, which the
  // trace cannot, so neither a graph nor a break may be made.
  bool SuspendedGeneratorNeedsCleanup();
  // The next item of a generator stepped item by item (*exhausted when it returned).
  bool NextFromGenerator(const Frame& consumer, const Value& gen, Value* item, bool* exhausted);
  bool BindFrame(const Frame& caller, PyCodeObject* code, PyObject* func, int32_t func_source,
                 const Value* fn_value, const ValueList& args, const std::vector<std::string>& kwnames,
                 Frame* f);
  bool RunGenerator(const Value& gen, bool pure, Value* out);
  // Whether iterating `it` takes items a generator computed ahead of time (it, or a zip or
  // enumerate over one).
  bool TakesFromGenerator(const Value& it);
  // Fails capture (true) when `gen` takes from an iterator aliased elsewhere: its consumer
  // may stop early (a `for` loop, all(), any()) and Python would not run it to its end.
  bool GeneratorTakesSharedIterator(const Value& gen);
  // handlers_container.cc: dicts, container methods, f-strings, *args/**kwargs calls.
  bool DictSet(Value& dict, const Value& key, const Value& value);
  // dict(), dict(mapping), dict(pairs), dict(..., **kwargs): a dict of the trace (handlers_dict.cc).
  bool MakeDictCall(const ValueList& args, const std::vector<std::string>& kwnames, Value* out);
  // A namedtuple class called during capture: a kSeq of its fields (handlers_container.cc);
  // *handled when `cls` is one.
  bool MakeNamedTuple(PyObject* cls, const ValueList& args, const std::vector<std::string>& kwnames,
                      Value* out, bool* handled);
  // handlers_object.cc: instances of plain classes made during capture.
  bool MakeObject(Frame& f, const Value& cls, const ValueList& args,
                  const std::vector<std::string>& kwnames, Value* out, bool* handled);
  // Primitives and pijit's own parameterless Cells made in captured code (ops.MatMul(),
  // nn.ReLU()): built now from constant arguments; *handled when `cls` is such a class.
  bool MakeLibraryObject(const Value& cls, const ValueList& args,
                         const std::vector<std::string>& kwnames, Value* out, bool* handled);
  // The guard source of `callable`'s class attribute `name` (a method to inline): through
  // the callable's own source, or the class's for an object MakeLibraryObject built; -1 when
  // it has neither.
  int32_t MethodSource(const Value& callable, PyObject* name);
  bool HasMethodSource(const Value& callable) const {
    return callable.source >= 0 ||
           (callable.kind == Value::kConst && values_.IsLibraryObject(callable.obj));
  }
  bool ObjectAttr(Frame& f, const Value& owner, PyObject* name, bool method);
  bool StoreObjectAttr(const Value& owner, PyObject* name, const Value& value);
  bool MakeException(const Value& cls, const ValueList& args, const std::vector<std::string>& kwnames,
                     Value* out, bool* handled);  // handlers_object.cc
  bool CallObject(Frame& f, const Value& obj, ValueList args,
                  const std::vector<std::string>& kwnames, Value* out);
  // Field `name` of a namedtuple value (false: not one of its fields).
  bool NamedTupleField(const Value& owner, PyObject* name, Value* out);
  bool DictGet(const Value& dict, const Value& key, Value* out, bool* found);
  // The position of `key` among the keys of kDict `dict` (*found: present), the key as a
  // Python object in *key_obj; false (capture failed) when the key is not a plain value
  // known now or comparing raises.
  bool FindKey(const Value& dict, const Value& key, PyObject** key_obj, size_t* index, bool* found);
  // A pure method of a constant str (lower, split, startswith, ...), folded at capture.
  bool IsFoldableStrMethod(const Value& owner, PyObject* name);
  bool CallStrMethod(std::string_view name, const Value& self, const ValueList& args, Value* out);
  bool CallContainerMethod(const Value& method, ValueList args, const std::vector<std::string>& kwnames,
                           Value* out);
  // handlers_effects.cc: mutations of objects from outside the trace, recorded for replay.
  bool StoreAttr(const Value& owner, PyObject* name, const Value& value);
  bool StoreGlobal(Frame& f, PyObject* name, const Value& value);
  bool AppendEffect(const Value& list, const Value& value);
  bool ExtendEffect(const Value& list, const Value& items);  // as one append per item
  bool InsertEffect(const Value& list, const Value& index, const Value& value);
  // dict[key] = value on an input dict (false: not recorded; failed() tells whether the
  // capture failed or the caller may fall back).
  bool SetItemEffect(const Value& dict, const Value& key, const Value& value);
  // STORE_SUBSCR and DELETE_SUBSCR on the frame's stack: recorded, or a graph break.
  bool StoreSubscr(Frame& f);
  // container[key] = value into a list or dict made during capture (false: not one).
  bool StoreIntoBuiltContainer(Value& container, const Value& key, const Value& value);
  bool DeleteSubscr(Frame& f);
  // del container[key] on an input dict or list (false as for SetItemEffect).
  bool DelItemEffect(const Value& container, const Value& key);
  bool DeleteAttr(const Value& owner, PyObject* name);
  bool DeleteGlobal(Frame& f, PyObject* name);
  // STORE_DEREF into a free variable of the called function or of an inlined function
  // object: replayed into its closure cell.
  bool StoreCellEffect(Frame& f, int slot, const Value& value);
  // A value the trace has recorded an effect on (EffectRecorder::Mutated) cannot be read: the
  // graph breaks (false). Reading another input list or dict after effects guards its identity.
  bool FailIfMutated(const Value& v);
  // The length of an input list with recorded effects, when the trace knows it (guarded).
  bool ListLength(const Value& v, Py_ssize_t* n);
  // handlers_dict.cc: the contents of an input dict the trace mutates, modelled as a kDict
  // (shared by every alias; reads see the trace's stores and deletions in order), its
  // identity guarded at `v`'s source.
  Value* ShadowDict(const Value& v);
  // The model of `v`, made on its first mutation (its identity and keys in order guarded);
  // null when `v` is not a dict the trace can model (without failing the capture).
  Value* MakeShadowDict(const Value& v);
  bool DictDel(Value& dict, const Value& key, Value* removed, bool* found);
  // Methods of a dict: `self` is a kDict, or an input dict (effects recorded for replay).
  bool DictMethod(const Value& self, std::string_view name, ValueList args,
                  const std::vector<std::string>& kwnames, Value* out);
  bool MakeEffects(size_t count);  // the first `count` recorded effects into out_->effects
  EffectRecorder& effects() { return effects_; }
  bool FormatValue(const Value& v, int flags, const Value* spec, Value* out);
  bool Contains(const Value& container, const Value& item, bool* out);
  // Sets of plain values built during capture are known objects (kConst, source -1, made
  // afresh by every change). MakeSet: a new set of `base`'s items (if any) and `items`.
  bool MakeSet(PyObject* base, const ValueList& items, Value* out);
  // The items of an iterable for a set (any order: sets are unordered).
  bool SetItems(const Value& iterable, ValueList* out);

 private:
  bool Step(Frame& f, size_t& pc, bool* returned, Value* result);
  // Step handlers, one per opcode family (steps_frame.cc, steps_values.cc).
  using StepHandler = bool (Interp::*)(StepState&);
  static StepHandler HandlerOf(Opc op);
  bool StepNop(StepState& s);
  bool StepLocal(StepState& s);
  bool StepGlobal(StepState& s);
  bool StepAttr(StepState& s);
  bool StepStack(StepState& s);
  bool StepCall(StepState& s);
  bool StepMakeFunction(StepState& s);
  bool StepBinaryOperator(StepState& s);
  bool StepUnaryOperator(StepState& s);
  bool StepSequence(StepState& s);
  bool StepMapping(StepState& s);
  bool StepSet(StepState& s);
  bool StepString(StepState& s);
  bool StepIterate(StepState& s);
  bool StepJump(StepState& s);
  // One way of a branch on a tensor: runs `f` from `start` until it reaches `stop` (not run),
  // or, with `exit_jump`, until it jumps forward past `stop` (to the join), or until it
  // returns. handlers_branch.cc.
  struct PathEnd {
    bool returned = false;
    size_t join = 0;
    Value value;  // the return value
  };
  bool RunBranchPath(Frame& f, size_t start, size_t stop, bool exit_jump, PathEnd* end);
  // `cond` as a 0-d bool node that holds when the condition is `on_true` (handlers_loop.cc).
  bool TruthNode(graph::NodeId cond, bool on_true, graph::NodeId* pred);
  // A while loop on a tensor in whole-graph mode (handlers_loop.cc): its first jump at
  // instruction `jump` leaves for `exit`; the body runs from `body` to the jump at `end`, which
  // decides whether to go round again.
  struct WhileShape {
    size_t body = 0, end = 0, exit = 0;
    bool entry_stays_on_true = true, end_stays_on_true = true;
  };
  // A frame slot (a local or a stack entry) holding a tensor when a loop starts.
  struct LoopSlot {
    bool local;
    size_t index;
    Value before;                 // its value at the loop's start
    graph::NodeId stand_in = -1;  // the node the body reads for it
    std::vector<size_t> path;     // a tensor inside tuples held there: its item indices
  };
  bool FindWhileLoop(const Frame& f, size_t jump, WhileShape* shape) const;
  // Whether `pc` of `f` leaves the body of the innermost while loop on a tensor being captured
  // (failing capture with the reason if it does).
  bool LeavesLoop(const Frame& f, size_t pc);
  struct OpenLoop {
    const Frame* frame;
    WhileShape shape;
  };
  std::vector<OpenLoop> open_loops_;
  bool LoopOnTensor(StepState& s, const Value& cond, const WhileShape& shape);
  // FOR_ITER over a kTensorRange at instruction `pc`: the loop becomes a loop node.
  bool ForOverTensorRange(StepState& s, size_t pc);
  // for loops over a tensor range: the counter is a carried value outside the frame.
  struct LoopCounter {
    Value start;          // a 0-d integer tensor
    graph::NodeId stop;   // of the start's dtype
    int64_t step;
  };
  static constexpr size_t kCounterSlot = ~size_t{0};
  bool CaptureLoop(StepState& s, graph::NodeId stay, const WhileShape& shape, const LoopCounter* counter);
  // After a trip's body: whether to go round again (a while loop's condition, popped; a for
  // loop's next count, from the counter's stand-in `count`, against the range's end).
  bool GoRoundAgain(Frame& f, const WhileShape& shape, const LoopCounter* counter, graph::NodeId count,
                    graph::NodeId* stay_again, graph::NodeId* next_count);

  bool MoveBodyIntoLoop(graph::NodeId stay, graph::NodeId stay_again, size_t first_node,
                        const std::vector<LoopSlot>& slots, const std::vector<const LoopSlot*>& carried,
                        const std::vector<Value>& after, std::vector<Value>* results);
  // Drops the nodes from `first_node` on but the inputs among them (params), which move down,
  // and renumbers the node ids the interpreter keeps; returns each old id's new one (-1: gone).
  std::vector<graph::NodeId> DropNodesFrom(size_t first_node);
  // Joining the ways of an if on a tensor (handlers_branch.cc): the first pass collects the
  // pairs of tensors that differ (the cond's results); the second, with `results` set, puts
  // result i where pair i was.
  struct BranchJoin {
    size_t first_node = 0;  // the first node of the ways
    std::vector<std::pair<graph::NodeId, graph::NodeId>> pairs;  // (if true, if false)
    const std::vector<graph::NodeId>* results = nullptr;
    size_t next = 0;
  };
  bool MergeBranchValues(BranchJoin& join, const Value& on_true, const Value& on_false,
                         const std::string& what, Value* out);
  // A copy of node `n` added to subgraph `sub` (a cond's way, a loop's body), its inputs
  // mapped into `sub` by `map`: *added is its id there.
  bool AddMappedNode(graph::Graph& sub, const graph::Node& n,
                     absl::FunctionRef<graph::NodeId(graph::NodeId)> map, graph::NodeId* added);
  using NodeRanges = std::vector<std::pair<size_t, size_t>>;  // [begin, end) of node ids
  // Moves the nodes of the ways (from `first_node` on) into the branches of a cond node on
  // `pred` whose results are the pairs' values; `results` gets them (renumbered graph).
  bool MoveWaysIntoCond(graph::NodeId pred, size_t first_node, const NodeRanges& if_true,
                        const NodeRanges& if_false, const std::vector<std::pair<graph::NodeId, graph::NodeId>>& pairs,
                        std::vector<graph::NodeId>* results);
  bool StepStoreSubscript(StepState& s);
  bool StepGenerator(StepState& s);
  bool StepReturn(StepState& s);
  bool StepWith(StepState& s);
  bool StepException(StepState& s);  // handlers_exceptions.cc
  bool RaiseToHandler(StepState& s, Value exc);
  bool EnterWith(Frame& f, const Value& manager);
  bool StepUnsupported(StepState& s);

  PyCodeObject* root_code_;
  PyObject* root_func_;
  PyObject* const* args_;
  int nargs_;
  CaptureResult* out_;
  bool allow_break_;
  ValueModel values_;
  OpBridge ops_{*this};
  // The root frame's state before its current instruction (the break point, on failure).
  Frame* root_frame_ = nullptr;
  size_t root_pc_ = 0;
  // Stack positions of the __exit__ of `with` blocks open in the root frame: while one is
  // open the resume state stays at its BEFORE_WITH, so a break inside the block breaks there
  // and Python runs the block (its __exit__ then sees any exception).
  std::vector<size_t> open_withs_;
  // Exceptions raised and caught in the root frame whose handler has not reached POP_EXCEPT:
  // the resume state stays at the raise (Python raises and handles it if the handler breaks).
  int open_handlers_ = 0;
  std::vector<Value> root_stack_, root_locals_;
  absl::flat_hash_set<const ValueList*> live_iters_;  // iterators a break hands Python
  PyObject* root_kwnames_ = nullptr;
  size_t root_nodes_ = 0;   // graph size before the instruction
  size_t root_params_ = 0;  // parameters before the instruction
  bool failed_ = false;
  EffectRecorder effects_;
  ValueList* pending_yields_ = nullptr;  // handed to the next frame Inline sets up
  int gen_depth_ = 0;                    // generators being run (no effects are recorded)
  // Generators stepped an item at a time (NextFromGenerator), to find those left suspended.
  std::vector<std::shared_ptr<GenState>> stepped_generators_;
  int grad_depth_ = 0;  // nesting of gradient transforms being captured (handlers_grad.cc)
  std::vector<graph::CustomVjp> customs_;  // Cells with a bprop, for AppendBackward
  int64_t vjp_calls_ = 0;                  // gradient transforms captured so far
  int64_t steps_ = 0;
  // Where the interpreter is, for break reasons.
  PyCodeObject* cur_code_ = nullptr;
  int cur_offset_ = -1;

  friend struct FramePosition;
};

// A hash of what the frame slots hold, containers followed (handlers_branch.cc): equal before
// and after code that mutated nothing they reach.
size_t FingerprintOf(const std::vector<Value>& locals, const std::vector<Value>& stack);

// The closure cell behind free-variable slot `slot` of a frame running a function object
// (the called function or an inlined one), or null (handlers_effects.cc).
PyObject* FreeCell(const Frame& f, int slot);

// Decodes `co` into `f` for simulation; fails (through `in`) on what cannot be followed.
bool PrepareFrame(Interp& in, PyCodeObject* co, Frame& f, bool generator = false);

constexpr int kMaxInlineDepth = 16;
constexpr int64_t kMaxSteps = 200000;  // bounds loop unrolling

}  // namespace pijit::bytecode
