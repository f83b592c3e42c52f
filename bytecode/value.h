// The abstract values of the interpreter (internal to bytecode/): what a slot of a simulated
// frame holds, shared by the frame simulation, the effect recorder and the value model.
#pragma once
#include <Python.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "interop/pyops.h"

namespace pijit::bytecode {

struct Value;
using ValueList = std::vector<Value>;
struct GenState;
struct IterLink;
struct Frame;

// An exception made in captured code (a kObject of an exception class; its `args` first).
bool IsMadeException(const Value& v);

// A Python int or float whose value the graph computes: a dynamic number (see Capture) or
// +, -, *, / of such numbers and constants. The Value stays a kConst holding the value of
// this call; any use of that value for the trace (UseConst) guards every origin by value.
struct NumberInfo {
  graph::NodeId node = -1;  // a 0-d float64 (float) or int64 (int) node
  int bits = 0;             // ints: |value| < 2^bits on every call the guards accept
  std::vector<std::pair<int32_t, PyObject*>> origins;  // (source, value in this call)
};

struct Value {
  enum Kind : uint8_t {
    kUndef,         // an unassigned local
    kNull,          // the NULL CPython pushes before some callables
    kTensor,        // a graph node
    kConst,         // a known Python object
    kSeq,           // a tuple or list built during capture (items are abstract)
    kIter,          // an iterator over known items
    kCell,          // a closure cell (shared storage)
    kFunction,      // a function made by MAKE_FUNCTION during capture
    kTensorMethod,  // Tensor method looked up on a tensor, waiting for CALL
    kDict,          // a dict built during capture: `keys` (known plain objects) and `items`
    kBuiltinMethod, // a method of a container built during capture (`obj`: its name), + self
    kGenerator,     // a generator made during capture, not started yet (`gen`)
    kObject,        // an instance of a plain class made during capture: attribute names in
                    // `keys`, values in `items`, class in `seq_type` (handlers_object.cc)
    kPartial,       // functools.partial made during capture: its function in `cell`, its
                    // positional then keyword arguments in `items`, the keywords in `keys`
    kTensorRange,   // range() of tensors in whole-graph mode: (start, stop) in `items`, its
                    // step in `range_step`; a for loop over it is a loop node (handlers_loop.cc)
  };
  Kind kind = kUndef;
  graph::NodeId node = -1;       // kTensor
  PyObject* obj = nullptr;       // kConst (kept alive by the interpreter); kFunction: code
  int32_t source = -1;           // guard source of kConst / kTensor, -1 if computed
  PyTypeObject* type = nullptr;  // kTensor: exact Python type
  bool is_list = false;          // kSeq
  PyObject* seq_type = nullptr;  // kSeq: a namedtuple class (its items are the fields);
                                 // kObject: its class
  int32_t type_source = -1;      // kObject: the guard source of its class
  PyOp method = PyOp::kAdd;      // kTensorMethod
  std::shared_ptr<ValueList> items;  // kSeq items; kIter remaining items; kFunction closure
  std::shared_ptr<Value> cell;       // kCell contents; kPartial: its function; kObject of an
                                     // exception: True once raised (IsMadeException)
  std::shared_ptr<ValueList> defaults;  // kFunction positional defaults
  int32_t globals_source = -2;   // kFunction: the source of its globals' function (-1: root)
  PyObject* globals_func = nullptr;  // kFunction: that function (nullptr: the root's)
  std::shared_ptr<std::vector<PyObject*>> keys;  // kDict keys, parallel to `items` (borrowed)
  bool opaque = false;           // a dict view or an iterator over one: cannot become a Python value
  bool view = false;             // kIter that is a dict view (opaque): each iteration of it is
                                 // a fresh iterator, where an iterator's items are taken once
  bool from_generator = false;   // kIter: the items of a generator run ahead (RunGenerator)
  std::shared_ptr<GenState> gen;  // kGenerator (shared by aliases: it runs once)
  // kIter over the keys of an input dict (GET_ITER on the dict): the dict's guard source and
  // its length, so that a break can hand Python the dict's own iterator at the same place.
  int32_t iter_dict = -1;
  Py_ssize_t iter_total = 0;
  std::shared_ptr<const NumberInfo> number;  // kConst: a number the graph computes
  int64_t range_step = 1;                     // kTensorRange
  // kIter made by zip or enumerate over other iterators: taking its items advances them.
  std::shared_ptr<IterLink> link;
  // kIter of a `for` loop over a list made during capture: that list's items (the iterator
  // took iter_total of them at GET_ITER), so that a break hands Python the list's own
  // iterator, advanced as far as the trace took it.
  std::shared_ptr<ValueList> iter_list;
  int32_t iter_list_source = -1;  // that list's guard source when it is an input

  static Value Const(PyObject* o, int32_t source = -1) {
    Value v;
    v.kind = kConst;
    v.obj = o;
    v.source = source;
    return v;
  }
  static Value Tensor(graph::NodeId node, PyTypeObject* type) {  // a graph node's value
    Value v;
    v.kind = kTensor;
    v.node = node;
    v.type = type;
    return v;
  }
  static Value Null() {
    Value v;
    v.kind = kNull;
    return v;
  }
  static Value Dict() {
    Value v;
    v.kind = kDict;
    v.items = std::make_shared<ValueList>();
    v.keys = std::make_shared<std::vector<PyObject*>>();
    return v;
  }
  static Value Seq(ValueList items, bool is_list) {
    Value v;
    v.kind = kSeq;
    v.is_list = is_list;
    v.items = std::make_shared<ValueList>(std::move(items));
    return v;
  }
};

// A zip or enumerate over iterators (kIter values, which share their items with every alias
// of the iterator). Its items are computed when it is made; each one taken advances every
// source by one item, and exhausting it advances the sources before the first empty one by
// one more, as Python's zip does. A source advanced elsewhere in between no longer matches
// `remaining`, and capture stops rather than give a stale item.
struct IterLink {
  ValueList sources;
  std::vector<size_t> remaining;  // each source's items left, as this iterator expects
};

// A generator function called during capture: its frame runs only when a consumer that
// takes every item at once (tuple, sum, list, unpacking...) iterates it (see RunGenerator).
struct GenState {
  Value fn;  // the kFunction value called (a generator expression or one defined in the trace)
  // Or a generator function of the program (fn unset): the function and its guard source.
  PyObject* func = nullptr;
  int32_t func_source = -1;
  ValueList args;
  std::vector<std::string> kwnames;
  bool started = false;
  // map(fn, *iterables) or filter(fn, iterable) made during capture: `fn` the function,
  // `args` the iterables, taken from only when a consumer takes every item (RunLazyMap).
  enum Lazy : uint8_t { kNotLazy, kMap, kFilter } lazy = kNotLazy;
  // A generator stepped item by item (a `for` loop or next() over it): its suspended frame,
  // the item its last YIELD_VALUE gave, and whether it has returned (NextFromGenerator).
  std::shared_ptr<Frame> frame;
  ValueList yielded;
  bool exhausted = false;
};

// The field names of a namedtuple class (collections.namedtuple, typing.NamedTuple: a tuple
// subclass with a tuple of str `_fields` and `_make`), or nullptr (handlers_container.cc).
PyObject* NamedTupleFields(PyObject* cls);

}  // namespace pijit::bytecode
