#include "graph/serialize.h"

#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/errors.h"

namespace pijit::graph {

namespace {

constexpr absl::string_view kMagic("PIJITG\x01\x00", 8);
// Bounds that reject corrupt sizes before they allocate.
constexpr uint64_t kMaxRank = 64;
constexpr uint64_t kMaxCount = uint64_t{1} << 32;

class Writer {
 public:
  void U64(uint64_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void I64(int64_t v) { U64(static_cast<uint64_t>(v)); }
  void Str(absl::string_view s) {
    U64(s.size());
    out_.append(s.data(), s.size());
  }
  void Ints(absl::Span<const int64_t> v) {
    U64(v.size());
    for (int64_t x : v) I64(x);
  }
  void Meta(const TensorMeta& m) {
    Str(DTypeShortName(m.dtype));
    Ints(m.shape);
  }
  void Tensor(const ::pijit::Tensor& t) {
    const ::pijit::Tensor c = t.Contiguous();
    Meta(MetaOf(c));
    const size_t nbytes = static_cast<size_t>(c.numel()) * c.itemsize();
    U64(nbytes);
    if (nbytes) out_.append(static_cast<const char*>(c.raw_data()), nbytes);
  }
  void Raw(absl::string_view s) { out_.append(s.data(), s.size()); }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(absl::string_view in) : in_(in) {}

  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrFormat("graph file: %s at byte %d", what, static_cast<int64_t>(pos_)));
  }
  absl::StatusOr<uint64_t> U64() {
    if (in_.size() - pos_ < sizeof(uint64_t)) return Error("unexpected end");
    uint64_t v;
    std::memcpy(&v, in_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  absl::StatusOr<int64_t> I64() {
    PIJIT_ASSIGN_OR_RETURN(uint64_t v, U64());
    return static_cast<int64_t>(v);
  }
  absl::StatusOr<absl::string_view> Bytes(uint64_t n) {
    if (n > in_.size() - pos_) return Error("unexpected end");
    absl::string_view s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  absl::StatusOr<absl::string_view> Str() {
    PIJIT_ASSIGN_OR_RETURN(uint64_t n, U64());
    return Bytes(n);
  }
  absl::StatusOr<Shape> Ints(uint64_t limit) {
    PIJIT_ASSIGN_OR_RETURN(uint64_t n, U64());
    if (n > limit) return Error("a list too long");
    Shape v;
    for (uint64_t i = 0; i < n; ++i) {
      PIJIT_ASSIGN_OR_RETURN(int64_t x, I64());
      v.push_back(x);
    }
    return v;
  }
  absl::StatusOr<DType> Dtype() {
    PIJIT_ASSIGN_OR_RETURN(absl::string_view name, Str());
    for (int d = 0; d < kNumDTypes; ++d)
      if (name == DTypeShortName(static_cast<DType>(d))) return static_cast<DType>(d);
    return Error(absl::StrCat("unknown dtype '", name, "'"));
  }
  absl::StatusOr<TensorMeta> Meta() {
    PIJIT_ASSIGN_OR_RETURN(DType dtype, Dtype());
    PIJIT_ASSIGN_OR_RETURN(Shape shape, Ints(kMaxRank));
    for (int64_t d : shape)
      if (d < 0) return Error("a negative dimension");
    return TensorMeta{dtype, std::move(shape)};
  }
  absl::StatusOr<::pijit::Tensor> Tensor() {
    PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, Meta());
    PIJIT_ASSIGN_OR_RETURN(uint64_t nbytes, U64());
    // Compare before multiplying out: a corrupt shape must not overflow the product.
    uint64_t elements = 1;
    for (int64_t d : meta.shape) {
      if (d != 0 && elements > (in_.size() - pos_) / static_cast<uint64_t>(d))
        return Error("a tensor larger than the file");
      elements *= static_cast<uint64_t>(d);
    }
    if (nbytes != elements * ItemSize(meta.dtype)) return Error("a tensor's size and shape differ");
    PIJIT_ASSIGN_OR_RETURN(absl::string_view data, Bytes(nbytes));
    ::pijit::Tensor t = ::pijit::Tensor::Empty(meta.shape, meta.dtype);
    if (nbytes) std::memcpy(t.raw_data(), data.data(), nbytes);
    return t;
  }
  bool AtEnd() const { return pos_ == in_.size(); }

 private:
  absl::string_view in_;
  size_t pos_ = 0;
};

// Every op, counted from the table the enum is made of.
constexpr int kNumOps = 0
#define PIJIT_GRAPH_OP(e, name, arity, traits) +1
#include "graph/ops.def"
#undef PIJIT_GRAPH_OP
    ;

absl::StatusOr<Op> OpNamed(absl::string_view name, const Reader& r) {
  for (int o = 0; o < kNumOps; ++o)
    if (name == OpName(static_cast<Op>(o))) return static_cast<Op>(o);
  return r.Error(absl::StrCat("unknown op '", name, "'"));
}

absl::Status ReadAttrs(Reader& r, Attrs* a) {
  PIJIT_ASSIGN_OR_RETURN(a->ints, r.Ints(kMaxCount));
  PIJIT_ASSIGN_OR_RETURN(uint64_t keepdims, r.U64());
  a->keepdims = keepdims != 0;
  PIJIT_ASSIGN_OR_RETURN(a->attr, r.I64());
  PIJIT_ASSIGN_OR_RETURN(uint64_t has_dtype, r.U64());
  if (has_dtype) {
    PIJIT_ASSIGN_OR_RETURN(a->dtype, r.Dtype());
  }
  PIJIT_ASSIGN_OR_RETURN(uint64_t has_value, r.U64());
  if (has_value) {
    PIJIT_ASSIGN_OR_RETURN(a->value, r.Tensor());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> Serialize(const Graph& g) {
  Writer w;
  w.Raw(kMagic);
  w.U64(g.nodes().size());
  for (const Node& n : g.nodes()) {
    if (n.program != nullptr || n.region != nullptr) {
      return absl::UnimplementedError(absl::StrCat(
          "graph file: ", OpName(n.op), " nodes (fused code or control flow) cannot be written"));
    }
    w.Str(OpName(n.op));
    w.U64(n.inputs.size());
    for (NodeId i : n.inputs) w.I64(i);
    w.Meta(n.meta);
    if (n.op == Op::kParam) continue;
    if (n.op == Op::kConstant) {
      w.Tensor(n.value);
      continue;
    }
    w.Ints(n.ints);
    w.U64(n.keepdims ? 1 : 0);
    w.I64(n.attr);
    w.U64(n.dtype.has_value() ? 1 : 0);
    if (n.dtype.has_value()) w.Str(DTypeShortName(*n.dtype));
    w.U64(n.value.defined() ? 1 : 0);
    if (n.value.defined()) w.Tensor(n.value);
  }
  w.U64(g.outputs().size());
  for (NodeId o : g.outputs()) w.I64(o);
  return w.Take();
}

absl::StatusOr<Graph> Deserialize(absl::string_view bytes) {
  if (bytes.substr(0, kMagic.size()) != kMagic)
    return absl::InvalidArgumentError("graph file: not a pijit graph (its first bytes differ)");
  Reader r(bytes.substr(kMagic.size()));
  PIJIT_ASSIGN_OR_RETURN(uint64_t count, r.U64());
  if (count > kMaxCount) return r.Error("too many nodes");
  Graph g;
  for (uint64_t id = 0; id < count; ++id) {
    PIJIT_ASSIGN_OR_RETURN(absl::string_view name, r.Str());
    PIJIT_ASSIGN_OR_RETURN(Op op, OpNamed(name, r));
    if (HasTrait(op, kRegion)) return r.Error(absl::StrCat(name, " nodes cannot be read"));
    Node n;
    n.op = op;
    PIJIT_ASSIGN_OR_RETURN(Shape inputs, r.Ints(kMaxCount));
    for (int64_t i : inputs) {
      if (i < 0 || static_cast<uint64_t>(i) >= id) return r.Error("an input that is not an earlier node");
      n.inputs.push_back(static_cast<NodeId>(i));
    }
    PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, r.Meta());
    if (op == Op::kParam) {
      n.meta = meta;
    } else if (op == Op::kConstant) {
      PIJIT_ASSIGN_OR_RETURN(n.value, r.Tensor());
    } else {
      PIJIT_RETURN_IF_ERROR(ReadAttrs(r, &n));
    }
    if (op != Op::kParam && OpArity(op) >= 0 && static_cast<int>(n.inputs.size()) != OpArity(op))
      return r.Error(absl::StrFormat("%s takes %d inputs, the file gives %d", name, OpArity(op),
                                     n.inputs.size()));
    auto added = g.AddNode(std::move(n));
    if (!added.ok()) return r.Error(absl::StrCat("node %", id, ": ", added.status().message()));
    if (!(g.node(*added).meta == meta))
      return r.Error(absl::StrFormat("node %%%d: the file says %s%s, the op gives %s%s", id,
                                     DTypeShortName(meta.dtype), ShapeToString(meta.shape),
                                     DTypeShortName(g.node(*added).meta.dtype),
                                     ShapeToString(g.node(*added).meta.shape)));
  }
  PIJIT_ASSIGN_OR_RETURN(Shape outputs, r.Ints(kMaxCount));
  std::vector<NodeId> outs;
  for (int64_t o : outputs) {
    if (o < 0 || static_cast<uint64_t>(o) >= count) return r.Error("an output that is not a node");
    outs.push_back(static_cast<NodeId>(o));
  }
  if (!r.AtEnd()) return r.Error("bytes after the outputs");
  g.SetOutputs(std::move(outs));
  return g;
}

}  // namespace pijit::graph
