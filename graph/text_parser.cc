#include "graph/text_parser.h"

#include <cctype>
#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "graph/control_flow.h"
#include "kernels/errors.h"
#include "kernels/fused_reduce.h"
#include "kernels/number_text.h"

namespace pijit::graph {
namespace {

struct Token {
  enum Kind { kEnd, kId, kWord, kString, kPunct } kind = kEnd;
  std::string text;  // kId: digits after '%'; kString: contents; kPunct: the character
  int line = 1, col = 1;
};

class Lexer {
 public:
  explicit Lexer(absl::string_view s) : s_(s) {}

  absl::StatusOr<std::vector<Token>> Run() {
    std::vector<Token> out;
    while (true) {
      SkipSpace();
      Token t;
      t.line = line_;
      t.col = col_;
      if (pos_ >= s_.size()) {
        out.push_back(t);
        return out;
      }
      char c = s_[pos_];
      if (c == '%') {
        Advance();
        t.kind = Token::kId;
        while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_])))
          t.text += Advance();
        if (t.text.empty()) return Error(t, "expected digits after '%'");
      } else if (c == '"') {
        Advance();
        t.kind = Token::kString;
        while (pos_ < s_.size() && s_[pos_] != '"' && s_[pos_] != '\n') t.text += Advance();
        if (pos_ >= s_.size() || s_[pos_] != '"') return Error(t, "unterminated string");
        Advance();
      } else if (IsWordChar(c)) {
        t.kind = Token::kWord;
        while (pos_ < s_.size() && IsWordChar(s_[pos_])) t.text += Advance();
      } else if (std::strchr("()[]{},:=<>", c)) {
        t.kind = Token::kPunct;
        t.text = std::string(1, Advance());
      } else {
        return Error(t, absl::StrCat("unexpected character '", std::string(1, c), "'"));
      }
      out.push_back(std::move(t));
    }
  }

  static absl::Status Error(const Token& t, absl::string_view msg) {
    return absl::InvalidArgumentError(
        absl::StrCat("line ", t.line, ", column ", t.col, ": ", msg));
  }

 private:
  static bool IsWordChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ||
           c == '+';
  }
  char Advance() {
    char c = s_[pos_++];
    if (c == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    return c;
  }
  void SkipSpace() {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') Advance();
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        Advance();
      } else {
        break;
      }
    }
  }

  absl::string_view s_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
};

// A node as written, before it is added to the graph.
struct Parsed {
  Node node;
  Token at;                 // where the node starts, for errors
  std::vector<Token> value_tokens;  // constant literals
  std::optional<Token> program;     // fused
};

class Parser {
 public:
  Parser(const std::vector<Token>& toks, size_t at) : t_(toks), i_(at) {}

  absl::StatusOr<Graph> Run() {
    PIJIT_ASSIGN_OR_RETURN(Graph g, ParseGraph());
    if (Peek().kind != Token::kEnd) return Lexer::Error(Peek(), "unexpected text after '}'");
    return g;
  }

 private:
  // graph(...) { ... return (...) }: a whole graph, or a loop's body inside its node.
  absl::StatusOr<Graph> ParseGraph() {
    PIJIT_RETURN_IF_ERROR(ExpectWord("graph"));
    PIJIT_RETURN_IF_ERROR(Expect("("));
    std::vector<NodeId> param_ids;
    if (!Is(")")) {
      do {
        Parsed p;
        p.at = Peek();
        PIJIT_ASSIGN_OR_RETURN(NodeId id, ParseId());
        if (!param_ids.empty() && id <= param_ids.back()) {
          return Lexer::Error(p.at, absl::StrCat("parameter %", id, " is listed after %",
                                                 param_ids.back(),
                                                 "; parameters are listed in increasing order"));
        }
        PIJIT_RETURN_IF_ERROR(Expect(":"));
        PIJIT_ASSIGN_OR_RETURN(p.node.meta, ParseMeta());
        p.node.op = Op::kParam;
        PIJIT_RETURN_IF_ERROR(Define(id, std::move(p)));
        param_ids.push_back(id);
      } while (Accept(","));
    }
    PIJIT_RETURN_IF_ERROR(Expect(")"));
    PIJIT_RETURN_IF_ERROR(Expect("{"));
    NodeId last_body = -1;
    while (!(Peek().kind == Token::kWord && Peek().text == "return")) {
      Parsed p;
      p.at = Peek();
      PIJIT_ASSIGN_OR_RETURN(NodeId id, ParseId());
      if (id <= last_body) {
        return Lexer::Error(p.at, absl::StrCat("%", id, " comes after %", last_body,
                                               "; nodes are listed in increasing order"));
      }
      last_body = id;
      PIJIT_RETURN_IF_ERROR(Expect(":"));
      PIJIT_ASSIGN_OR_RETURN(p.node.meta, ParseMeta());
      PIJIT_RETURN_IF_ERROR(Expect("="));
      PIJIT_RETURN_IF_ERROR(ParseOp(&p));
      PIJIT_RETURN_IF_ERROR(Define(id, std::move(p)));
    }
    Next();  // return
    PIJIT_RETURN_IF_ERROR(Expect("("));
    std::vector<std::pair<NodeId, Token>> outputs;
    if (!Is(")")) {
      do {
        Token at = Peek();
        PIJIT_ASSIGN_OR_RETURN(NodeId id, ParseId());
        outputs.push_back({id, at});
      } while (Accept(","));
    }
    PIJIT_RETURN_IF_ERROR(Expect(")"));
    PIJIT_RETURN_IF_ERROR(Expect("}"));
    return Build(outputs);
  }

  // A control-flow node's graphs (graph/control_flow.h) in braces after its attributes.
  absl::Status ParseRegion(Parsed* p) {
    PIJIT_RETURN_IF_ERROR(Expect("{"));
    auto region = std::make_shared<Region>();
    for (size_t i = 0; i < RegionGraphs(p->node.op); ++i) {
      Parser inner(t_, i_);
      PIJIT_ASSIGN_OR_RETURN(Graph sub, inner.ParseGraph());
      region->graphs.push_back(std::move(sub));
      i_ = inner.i_;
    }
    p->node.region = std::move(region);
    return Expect("}");
  }

  const Token& Peek() const { return t_[i_]; }
  const Token& Next() { return t_[i_ < t_.size() - 1 ? i_++ : i_]; }
  bool Is(absl::string_view p) const {
    return Peek().kind == Token::kPunct && Peek().text == p;
  }
  bool Accept(absl::string_view p) {
    if (!Is(p)) return false;
    Next();
    return true;
  }
  static std::string Describe(const Token& t) {
    switch (t.kind) {
      case Token::kEnd: return "the end of the text";
      case Token::kId: return absl::StrCat("'%", t.text, "'");
      case Token::kString: return absl::StrCat("\"", t.text, "\"");
      default: return absl::StrCat("'", t.text, "'");
    }
  }
  absl::Status Expect(absl::string_view p) {
    if (Accept(p)) return absl::OkStatus();
    return Lexer::Error(Peek(), absl::StrCat("expected '", p, "' but found ", Describe(Peek())));
  }
  absl::Status ExpectWord(absl::string_view w) {
    if (Peek().kind == Token::kWord && Peek().text == w) {
      Next();
      return absl::OkStatus();
    }
    return Lexer::Error(Peek(), absl::StrCat("expected '", w, "' but found ", Describe(Peek())));
  }
  absl::StatusOr<NodeId> ParseId() {
    const Token& t = Peek();
    if (t.kind != Token::kId) {
      return Lexer::Error(t, absl::StrCat("expected a node id (%N) but found ", Describe(t)));
    }
    int64_t v;
    if (!ParseNumber(t.text, &v) || v > (1 << 30)) return Lexer::Error(t, "node id is too large");
    Next();
    return static_cast<NodeId>(v);
  }
  absl::StatusOr<int64_t> ParseInt() {
    const Token& t = Peek();
    int64_t v;
    if (t.kind != Token::kWord || !ParseNumber(t.text, &v)) {
      return Lexer::Error(t, absl::StrCat("expected an integer but found ", Describe(t)));
    }
    Next();
    return v;
  }
  // [item, ...]: each item read by `item` (which returns an absl::StatusOr<int64_t>).
  template <typename Item>
  absl::StatusOr<Shape> ParseList(Item item) {
    PIJIT_RETURN_IF_ERROR(Expect("["));
    Shape out;
    if (!Is("]")) {
      do {
        PIJIT_ASSIGN_OR_RETURN(int64_t v, item());
        out.push_back(v);
      } while (Accept(","));
    }
    PIJIT_RETURN_IF_ERROR(Expect("]"));
    return out;
  }
  absl::StatusOr<Shape> ParseIntList() {
    return ParseList([&] { return ParseInt(); });
  }
  // A float64 value or a list of them ([eps, momentum]), as a [k] tensor (a scalar alone).
  absl::StatusOr<Tensor> ParseFloat64Values() {
    const bool list = Accept("[");
    std::vector<double> values;
    do {
      const Token& t = Peek();
      double v;
      if (t.kind != Token::kWord || !ParseElement(t.text, DType::kFloat64, &v)) {
        return Lexer::Error(t, absl::StrCat("expected a number but found ", Describe(t)));
      }
      Next();
      values.push_back(v);
    } while (list && Accept(","));
    if (list) PIJIT_RETURN_IF_ERROR(Expect("]"));
    Tensor t = list ? Tensor::Empty({static_cast<int64_t>(values.size())}, DType::kFloat64)
                    : Tensor::Empty({}, DType::kFloat64);
    std::copy(values.begin(), values.end(), t.data<double>());
    return t;
  }
  // fused_matmul's post-ops: [name, ...] with the names of MatMulPostName.
  absl::StatusOr<Shape> ParsePostOps() {
    return ParseList([&]() -> absl::StatusOr<int64_t> {
      const Token& t = Peek();
      int64_t code = -1;
      for (int64_t c = 0; c < kNumMatMulPosts; ++c)
        if (t.kind == Token::kWord && t.text == MatMulPostName(static_cast<MatMulPost>(c)))
          code = c;
      if (code < 0) return Lexer::Error(t, absl::StrCat("unknown post-op ", Describe(t)));
      Next();
      return code;
    });
  }
  absl::StatusOr<TensorMeta> ParseMeta() {
    const Token& t = Peek();
    TensorMeta m;
    bool found = false;
    for (int d = 0; d < kNumDTypes; ++d) {
      if (t.kind == Token::kWord && t.text == DTypeShortName(static_cast<DType>(d))) {
        m.dtype = static_cast<DType>(d);
        found = true;
      }
    }
    if (!found) {
      return Lexer::Error(t, absl::StrCat("expected a dtype (bool, u8, i8, i16, i32, i64, f16, bf16, f32, f64) "
                                          "but "
                                          "found ", Describe(t)));
    }
    Next();
    const Token& at = Peek();
    PIJIT_ASSIGN_OR_RETURN(m.shape, ParseIntList());
    for (int64_t d : m.shape)
      if (d < 0) return Lexer::Error(at, "negative dimension in a shape");
    return m;
  }

  absl::Status ParseOp(Parsed* p) {
    const Token& name = Peek();
    bool found = false;
    for (int o = 0; o <= static_cast<int>(Op::kResult); ++o) {
      if (name.kind == Token::kWord && name.text == OpName(static_cast<Op>(o))) {
        p->node.op = static_cast<Op>(o);
        found = true;
      }
    }
    if (!found || p->node.op == Op::kParam) {
      return Lexer::Error(name, absl::StrCat("unknown op ", Describe(name)));
    }
    Next();
    Node& n = p->node;
    PIJIT_RETURN_IF_ERROR(Expect("("));
    if (n.op == Op::kConstant) return ParseConstantValue(p);
    bool any = false;
    std::map<std::string, bool> seen;
    while (!Is(")")) {
      if (any) PIJIT_RETURN_IF_ERROR(Expect(","));
      any = true;
      if (Peek().kind == Token::kId) {
        if (!seen.empty()) return Lexer::Error(Peek(), "an input after an attribute");
        PIJIT_ASSIGN_OR_RETURN(NodeId in, ParseId());
        n.inputs.push_back(in);
        continue;
      }
      const Token attr = Peek();
      if (attr.kind != Token::kWord) {
        return Lexer::Error(attr, absl::StrCat("expected an input or an attribute but found ",
                                               Describe(attr)));
      }
      Next();
      PIJIT_RETURN_IF_ERROR(Expect("="));
      if (seen[attr.text]) return Lexer::Error(attr, "repeated attribute " + attr.text);
      seen[attr.text] = true;
      // Every reduction prints axes and keepdims (var and std also ddof).
      const bool reduce = HasTrait(n.op, kReduction) || n.op == Op::kFusedReduce;
      if (attr.text == "axes" && reduce) {
        PIJIT_ASSIGN_OR_RETURN(n.ints, ParseIntList());
      } else if (attr.text == "keepdims" && reduce) {
        const Token& v = Peek();
        if (!ParseNumber(v.text, &n.keepdims) || v.kind != Token::kWord) {
          return Lexer::Error(v, "keepdims is true or false");
        }
        Next();
      } else if (attr.text == "ddof" && (n.op == Op::kVar || n.op == Op::kStd)) {
        PIJIT_ASSIGN_OR_RETURN(n.attr, ParseInt());
      } else if ((attr.text == "shape" && (n.op == Op::kReshape || n.op == Op::kBroadcastTo)) ||
                 (attr.text == "perm" && n.op == Op::kTranspose) ||
                 (attr.text == "axes" && n.op == Op::kSqueeze) ||
                 (attr.text == "bounds" && n.op == Op::kClip) ||
                 (attr.text == "dims" && n.op == Op::kFlatten) ||
                 (attr.text == "window_shape" &&
                  (n.op == Op::kConv2DGradInput || n.op == Op::kConv2DGradWeight)) ||
                 (attr.text == "window_outpad" && n.op == Op::kConv2DTranspose)) {
        PIJIT_ASSIGN_OR_RETURN(n.ints, ParseIntList());
      } else if (attr.text == "axis" &&
                 (n.op == Op::kUnsqueeze || n.op == Op::kSoftmax || n.op == Op::kLogSoftmax ||
                  n.op == Op::kConcat || n.op == Op::kStack)) {
        PIJIT_ASSIGN_OR_RETURN(n.attr, ParseInt());
      } else if ((attr.text == "carried" && HasTrait(n.op, kRegion)) ||
                 (attr.text == "index" && n.op == Op::kResult)) {
        PIJIT_ASSIGN_OR_RETURN(n.attr, ParseInt());
      } else if (attr.text == "op" && (n.op == Op::kAllReduce || n.op == Op::kReduceScatter)) {
        const Token& v = Peek();
        int64_t op = -1;
        for (int64_t k = 0; k < kAllReduceOps; ++k)
          if (v.kind == Token::kWord && v.text == kAllReduceOpNames[k]) op = k;
        if (op < 0) return Lexer::Error(v, "op is sum, max, min or prod");
        Next();
        n.attr = op + n.attr / kAllReduceOps * kAllReduceOps;
      } else if (attr.text == "group" && (n.op == Op::kAllReduce || n.op == Op::kReduceScatter)) {
        PIJIT_ASSIGN_OR_RETURN(int64_t group, ParseInt());
        n.attr = n.attr % kAllReduceOps + group * kAllReduceOps;
      } else if (attr.text == "block" &&
                 (n.op == Op::kFusedConv2D || n.op == Op::kToBlocked ||
                  n.op == Op::kConv2DGradInput || n.op == Op::kBatchNormTrain ||
                  n.op == Op::kBatchNormGradSums || n.op == Op::kBatchNormGradInput)) {
        PIJIT_ASSIGN_OR_RETURN(n.attr, ParseInt());
      } else if (attr.text == "group" && n.op == Op::kAllGather) {
        PIJIT_ASSIGN_OR_RETURN(n.attr, ParseInt());
      } else if (attr.text == "group" && n.op == Op::kBroadcast) {
        PIJIT_ASSIGN_OR_RETURN(int64_t group, ParseInt());
        n.attr = n.attr % kBroadcastRoots + group * kBroadcastRoots;
      } else if (attr.text == "root" && n.op == Op::kBroadcast) {
        PIJIT_ASSIGN_OR_RETURN(int64_t root, ParseInt());
        n.attr = root + n.attr / kBroadcastRoots * kBroadcastRoots;
      } else if (attr.text == "post" && n.op == Op::kFusedMatMul) {
        PIJIT_ASSIGN_OR_RETURN(n.ints, ParsePostOps());
      } else if (attr.text == "post" && n.op == Op::kFusedConv2D) {
        // After the window, whichever attribute comes first.
        PIJIT_ASSIGN_OR_RETURN(Shape post, ParsePostOps());
        n.ints.insert(n.ints.end(), post.begin(), post.end());
      } else if (attr.text == "window" && n.op == Op::kFusedConv2D) {
        const Token& at = Peek();
        PIJIT_ASSIGN_OR_RETURN(Shape window, ParseIntList());
        if (window.size() != kWindowInts) {
          return Lexer::Error(at, absl::StrCat("window has ", kWindowInts, " ints"));
        }
        n.ints.insert(n.ints.begin(), window.begin(), window.end());
      } else if (attr.text == "window" &&
                 (n.op == Op::kConv2D || n.op == Op::kMaxPool2D || n.op == Op::kAvgPool2D ||
                  n.op == Op::kMaxPool2DGrad || n.op == Op::kAvgPool2DGrad)) {
        PIJIT_ASSIGN_OR_RETURN(n.ints, ParseIntList());
      } else if ((attr.text == "epilogue" &&
                  (n.op == Op::kConv2D || n.op == Op::kBatchNormTrain)) ||
                 (attr.text == "mask" && n.op == Op::kMaxPool2DGrad)) {
        const Token& v = Peek();
        const char* want = n.op == Op::kMaxPool2DGrad ? "positive" : "relu";
        if (v.kind != Token::kWord || v.text != want) {
          return Lexer::Error(v, absl::StrCat(attr.text, " is ", want));
        }
        Next();
        if (n.op == Op::kBatchNormTrain) {
          n.ints = {1};  // its attr is its block
        } else {
          n.attr = 1;
        }
      } else if (attr.text == "reduce" && n.op == Op::kFusedReduce) {
        const Token& v = Peek();
        bool known = false;
        for (int r = 0; r <= static_cast<int>(ReduceOp::kStd); ++r) {
          if (v.kind == Token::kWord && v.text == ReduceOpName(static_cast<ReduceOp>(r))) {
            n.attr = r;
            known = FusedReduceSupports(static_cast<ReduceOp>(r));
          }
        }
        if (!known) return Lexer::Error(v, "reduce is sum, mean, max or min");
        Next();
      } else if (attr.text == "value" &&
                 (n.op == Op::kBatchNorm || n.op == Op::kBatchNormTrain ||
                  n.op == Op::kBatchNormGradSums)) {
        PIJIT_ASSIGN_OR_RETURN(n.value, ParseFloat64Values());
      } else if (attr.text == "program" && (n.op == Op::kFused || n.op == Op::kFusedReduce)) {
        if (Peek().kind != Token::kString) {
          return Lexer::Error(Peek(), "program is a quoted string");
        }
        p->program = Next();
      } else {
        return Lexer::Error(attr, absl::StrCat(OpName(n.op), " has no attribute ", attr.text));
      }
    }
    Next();  // ')'
    if (HasTrait(n.op, kRegion)) PIJIT_RETURN_IF_ERROR(ParseRegion(p));
    if (n.op == Op::kResult) {  // a region's result is what its declaration says
      n.ints = n.meta.shape;
      n.dtype = n.meta.dtype;
    }
    if ((n.op == Op::kReshape || n.op == Op::kBroadcastTo) && !seen["shape"]) {
      return Lexer::Error(name, absl::StrCat(OpName(n.op), " needs shape="));
    }
    if (n.op == Op::kFused && !p->program) return Lexer::Error(name, "fused needs program=");
    if (n.op == Op::kFusedReduce && (!p->program || !seen["reduce"])) {
      return Lexer::Error(name, "fused_reduce needs program= and reduce=");
    }
    return absl::OkStatus();
  }

  absl::Status ParseConstantValue(Parsed* p) {
    if (Is("<")) {
      return Lexer::Error(Peek(), "constant values were elided by the printer (<N elements>); "
                                  "write them out to parse this graph");
    }
    const bool list = Accept("[");
    do {
      if (Peek().kind != Token::kWord) {
        return Lexer::Error(Peek(), absl::StrCat("expected a number but found ",
                                                 Describe(Peek())));
      }
      p->value_tokens.push_back(Next());
    } while (list && Accept(","));
    if (list) PIJIT_RETURN_IF_ERROR(Expect("]"));
    return Expect(")");
  }

  absl::Status Define(NodeId id, Parsed p) {
    if (defined_.count(id)) {
      return Lexer::Error(p.at, absl::StrCat("%", id, " is defined twice"));
    }
    defined_.emplace(id, std::move(p));
    return absl::OkStatus();
  }

  absl::StatusOr<Tensor> MakeConstant(const Parsed& p) {
    const TensorMeta& m = p.node.meta;
    Tensor t = Tensor::Empty(m.shape, m.dtype);
    const int64_t n = t.numel();
    const size_t item = t.itemsize();
    const auto& toks = p.value_tokens;
    if (toks.size() != 1 && static_cast<int64_t>(toks.size()) != n) {
      return Lexer::Error(toks[0], absl::StrCat("constant of shape ", ShapeToString(m.shape),
                                                " needs 1 or ", n, " values, found ",
                                                toks.size()));
    }
    char* out = static_cast<char*>(t.raw_data());
    for (int64_t i = 0; i < n; ++i) {
      const Token& v = toks.size() == 1 ? toks[0] : toks[i];
      if (!ParseElement(v.text, m.dtype, out + i * item)) {
        return Lexer::Error(v, absl::StrCat("'", v.text, "' is not a ", DTypeName(m.dtype),
                                            " value"));
      }
    }
    return t;
  }

  absl::StatusOr<Graph> Build(const std::vector<std::pair<NodeId, Token>>& outputs) {
    Graph g;
    const NodeId count = static_cast<NodeId>(defined_.size());
    for (NodeId id = 0; id < count; ++id) {
      auto it = defined_.find(id);
      if (it == defined_.end()) {
        auto after = defined_.upper_bound(id);
        return Lexer::Error(after->second.at, absl::StrCat("%", id, " is never defined (ids are "
                                                           "0..N-1, each defined once)"));
      }
      Parsed& p = it->second;
      for (NodeId in : p.node.inputs) {
        if (in >= id) {
          return Lexer::Error(p.at, absl::StrCat("%", id, " uses %", in,
                                                 ", which does not come before it"));
        }
      }
      if (p.node.op == Op::kConstant) {
        PIJIT_ASSIGN_OR_RETURN(p.node.value, MakeConstant(p));
      }
      if (p.node.op == Op::kFused || p.node.op == Op::kFusedReduce) {
        // A fused_reduce's program computes in its result's dtype (sum, mean, max and min of
        // float32/float64 keep it).
        auto prog = FusedProgram::Parse(p.program->text, p.node.meta.dtype,
                                        static_cast<int>(p.node.inputs.size()));
        if (!prog.ok()) return Lexer::Error(*p.program, prog.status().message());
        p.node.program = std::make_shared<const FusedProgram>(std::move(*prog));
      }
      const TensorMeta declared = p.node.meta;
      auto added = g.AddNode(std::move(p.node));
      if (!added.ok()) return Lexer::Error(p.at, added.status().message());
      const TensorMeta& got = g.node(*added).meta;
      if (!(got == declared)) {
        return Lexer::Error(p.at, absl::StrCat(
            "%", id, " is declared ", DTypeShortName(declared.dtype), ShapeToString(declared.shape),
            " but ", OpName(g.node(*added).op), " gives ", DTypeShortName(got.dtype),
            ShapeToString(got.shape)));
      }
    }
    std::vector<NodeId> outs;
    for (const auto& [id, at] : outputs) {
      if (id >= count) return Lexer::Error(at, absl::StrCat("output %", id, " does not exist"));
      outs.push_back(id);
    }
    g.SetOutputs(std::move(outs));
    return g;
  }

  const std::vector<Token>& t_;
  size_t i_ = 0;
  std::map<NodeId, Parsed> defined_;
};

}  // namespace

absl::StatusOr<Graph> Parse(absl::string_view text) {
  PIJIT_ASSIGN_OR_RETURN(std::vector<Token> toks, Lexer(text).Run());
  return Parser(toks, 0).Run();
}

}  // namespace pijit::graph
