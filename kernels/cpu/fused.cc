// Fused elementwise kernels: program text and checks, the C++ interpreter, and the driver
// that walks broadcast inputs and calls the generated code (kernels/cpu/fused_x86.cc) once per
// run of the innermost (coalesced) axis.
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "kernels/cpu/loops.h"
#include "kernels/errors.h"
#include "kernels/fused.h"
#include "kernels/thread_pool.h"
#include "kernels/number_text.h"
#include "kernels/ops.h"
#include "kernels/cpu/fused_x86.h"

namespace pijit {

namespace {
constexpr struct {
  FusedOpcode op;
  const char* name;
  int arity;
} kFusedOps[] = {
#define PIJIT_FUSED_ROW(e, name, arity) {FusedOpcode::e, name, arity},
    PIJIT_FUSED_OPCODES(PIJIT_FUSED_ROW)
#undef PIJIT_FUSED_ROW
};
constexpr int kMaxFusedInputs = 64;
}  // namespace

const char* FusedOpcodeName(FusedOpcode op) { return kFusedOps[static_cast<int>(op)].name; }
int FusedOpcodeArity(FusedOpcode op) { return kFusedOps[static_cast<int>(op)].arity; }

bool FusedOperand::operator==(const FusedOperand& o) const {
  if (kind != o.kind) return false;
  if (kind == kConst) return std::memcmp(&value, &o.value, sizeof(double)) == 0;
  return index == o.index;
}

// --- text -------------------------------------------------------------------------------

std::string FusedProgram::ToText() const {
  std::string out;
  auto operand = [&](const FusedOperand& a) {
    switch (a.kind) {
      case FusedOperand::kInput: absl::StrAppend(&out, "$", a.index); break;
      case FusedOperand::kTemp: absl::StrAppend(&out, "#", a.index); break;
      case FusedOperand::kConst:
        if (dtype == DType::kFloat32) AppendNumber(&out, static_cast<float>(a.value));
        else AppendNumber(&out, a.value);
        break;
    }
  };
  for (size_t i = 0; i < insts.size(); ++i) {
    const FusedInst& in = insts[i];
    absl::StrAppend(&out, i ? "; " : "", FusedOpcodeName(in.op), "(");
    const int arity = FusedOpcodeArity(in.op);
    for (int k = 0; k < arity; ++k) {
      if (k) out += ", ";
      operand(k == 0 ? in.a : k == 1 ? in.b : in.c);
    }
    out += ")";
  }
  return out;
}

absl::StatusOr<FusedProgram> FusedProgram::Parse(absl::string_view text, DType dtype,
                                                 int num_inputs) {
  FusedProgram p;
  p.dtype = dtype;
  p.num_inputs = num_inputs;
  int index = 0;
  for (absl::string_view inst : absl::StrSplit(text, ';')) {
    inst = absl::StripAsciiWhitespace(inst);
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("fused program, instruction #", index, " '", inst, "': ", why));
    };
    size_t open = inst.find('(');
    if (open == absl::string_view::npos || inst.back() != ')') return bad("expected op(args)");
    absl::string_view name = absl::StripAsciiWhitespace(inst.substr(0, open));
    FusedInst fi{};
    bool found = false;
    for (const auto& o : kFusedOps) {
      if (name == o.name) {
        fi.op = o.op;
        found = true;
      }
    }
    if (!found) return bad("unknown opcode");
    std::vector<absl::string_view> args =
        absl::StrSplit(inst.substr(open + 1, inst.size() - open - 2), ',');
    if (static_cast<int>(args.size()) != FusedOpcodeArity(fi.op)) {
      return bad(absl::StrCat("takes ", FusedOpcodeArity(fi.op), " operands"));
    }
    for (size_t k = 0; k < args.size(); ++k) {
      absl::string_view a = absl::StripAsciiWhitespace(args[k]);
      FusedOperand& o = k == 0 ? fi.a : k == 1 ? fi.b : fi.c;
      int64_t i64 = 0;
      if (!a.empty() && (a[0] == '$' || a[0] == '#')) {
        if (!ParseNumber(a.substr(1), &i64) || i64 < 0 || i64 > (1 << 20)) {
          return bad(absl::StrCat("bad operand '", a, "'"));
        }
        o.kind = a[0] == '$' ? FusedOperand::kInput : FusedOperand::kTemp;
        o.index = static_cast<int32_t>(i64);
      } else {
        o.kind = FusedOperand::kConst;
        bool ok;
        if (dtype == DType::kFloat32) {
          float f;
          ok = ParseNumber(a, &f);
          o.value = f;
        } else {
          ok = ParseNumber(a, &o.value);
        }
        if (!ok) return bad(absl::StrCat("'", a, "' is not a ", DTypeName(dtype), " value"));
      }
    }
    p.insts.push_back(fi);
    ++index;
  }
  PIJIT_RETURN_IF_ERROR(p.Validate());
  return p;
}

absl::Status FusedProgram::Validate() const {
  if (!FusedKernelSupports(dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("fused program: dtype ", DTypeName(dtype), " is not float32 or float64"));
  }
  if (insts.empty()) return absl::InvalidArgumentError("fused program: no instructions");
  if (num_inputs < 0 || num_inputs > kMaxFusedInputs) {
    return absl::InvalidArgumentError(
        absl::StrCat("fused program: ", num_inputs, " inputs (at most ", kMaxFusedInputs, ")"));
  }
  std::vector<bool> used(num_inputs, false);
  if (FusedOpcodeIsCompare(insts.back().op)) {
    return absl::InvalidArgumentError("fused program: the result is a mask");
  }
  for (size_t i = 0; i < insts.size(); ++i) {
    const FusedInst& in = insts[i];
    for (int k = 0; k < FusedOpcodeArity(in.op); ++k) {
      const FusedOperand& o = k == 0 ? in.a : k == 1 ? in.b : in.c;
      // Masks exist only between a comparison and the where that selects with it.
      const bool wants_mask = in.op == FusedOpcode::kWhere && k == 0;
      const bool is_mask = o.kind == FusedOperand::kTemp && o.index < static_cast<int32_t>(i) &&
                           FusedOpcodeIsCompare(insts[o.index].op);
      if (wants_mask != is_mask) {
        return absl::InvalidArgumentError(absl::StrCat(
            "fused program: #", i, " operand ", k,
            wants_mask ? " must be a comparison's result" : " reads a comparison's mask"));
      }
      if (o.kind == FusedOperand::kInput) {
        if (o.index >= num_inputs) {
          return absl::InvalidArgumentError(absl::StrCat("fused program: #", i, " reads $",
                                                         o.index, " of ", num_inputs, " inputs"));
        }
        used[o.index] = true;
      } else if (o.kind == FusedOperand::kTemp && o.index >= static_cast<int32_t>(i)) {
        return absl::InvalidArgumentError(
            absl::StrCat("fused program: #", i, " reads #", o.index, ", which is not before it"));
      } else if (o.kind == FusedOperand::kConst && dtype == DType::kFloat32 &&
                 !std::isnan(o.value) &&
                 static_cast<double>(static_cast<float>(o.value)) != o.value) {
        return absl::InvalidArgumentError(
            absl::StrCat("fused program: constant ", o.value, " is not a float32 value"));
      }
    }
  }
  for (int k = 0; k < num_inputs; ++k) {
    if (!used[k]) return absl::InvalidArgumentError(absl::StrCat("fused program: $", k, " is unused"));
  }
  return absl::OkStatus();
}

// --- kernel -------------------------------------------------------------------------------

namespace {
// Inner-stride pattern of contiguous inputs of `in_shape` broadcast to `out`: stride 1 unless
// the innermost axis is broadcast (or the input is a scalar).
bool InnerContiguous(absl::Span<const int64_t> in_shape, absl::Span<const int64_t> out) {
  if (out.empty() || out.back() == 1) return false;
  return !in_shape.empty() && in_shape.back() == out.back();
}
}  // namespace

absl::StatusOr<std::shared_ptr<const FusedKernel>> FusedKernel::Create(
    FusedProgram program, absl::Span<const Shape> input_shapes, const Shape& out_shape,
    FusedBackend backend) {
  PIJIT_RETURN_IF_ERROR(program.Validate());
  std::shared_ptr<FusedKernel> k(new FusedKernel());
  k->program_ = std::move(program);
  k->native_ = backend != FusedBackend::kInterpreter && HostHasAvx2();
  k->avx512_ = backend == FusedBackend::kAuto && HostHasAvx512();
  if (k->native_ && input_shapes.size() == static_cast<size_t>(k->program_.num_inputs)) {
    // Coalescing turns full-shape contiguous inputs into one long stride-1 run, so the
    // pattern the driver will ask for is the per-input one computed here.
    uint64_t mask = 0;
    for (size_t i = 0; i < input_shapes.size(); ++i)
      if (InnerContiguous(input_shapes[i], out_shape)) mask |= uint64_t{1} << i;
    PIJIT_RETURN_IF_ERROR(k->NativeFor(mask).status());
  }
  return std::shared_ptr<const FusedKernel>(std::move(k));
}

FusedKernel::~FusedKernel() {
  for (auto& [mask, fn] : fns_) ReleaseFusedCode(fn);
}

absl::StatusOr<FusedKernel::Fn> FusedKernel::NativeFor(uint64_t stride_mask) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [mask, fn] : fns_)
    if (mask == stride_mask) return fn;
  PIJIT_ASSIGN_OR_RETURN(Fn fn, GenerateFusedX86(program_, stride_mask, avx512_));
  fns_.push_back({stride_mask, fn});
  return fn;
}

FusedKernel::Fn FusedKernel::NativeFn(uint64_t stride_mask) const {
  if (!native_) return nullptr;
  auto f = NativeFor(stride_mask);
  return f.ok() ? *f : nullptr;
}

void FusedKernel::RunSpan(Fn fn, void* out, const void* const* inputs, uint64_t stride_mask,
                          int64_t n) const {
  if (n <= 0) return;
  if (fn) fn(out, inputs, n);
  else Interpret(out, inputs, stride_mask, n);
}

namespace {
// Masks are 1 (set) or 0 in the interpreter.
template <typename T>
T Apply(FusedOpcode op, T a, T b, T c) {
  switch (op) {
    case FusedOpcode::kAdd: return a + b;
    case FusedOpcode::kSub: return a - b;
    case FusedOpcode::kMul: return a * b;
    case FusedOpcode::kDiv: return a / b;
    case FusedOpcode::kNeg: return -a;
    case FusedOpcode::kRelu: return loops::Relu(a);  // as the eager kernel
    case FusedOpcode::kExp: return std::exp(a);
    case FusedOpcode::kMaximum: return loops::Maximum(a, b);
    case FusedOpcode::kMinimum: return loops::Minimum(a, b);
    case FusedOpcode::kGreater: return a > b;
    case FusedOpcode::kGreaterEqual: return a >= b;
    case FusedOpcode::kLess: return a < b;
    case FusedOpcode::kLessEqual: return a <= b;
    case FusedOpcode::kEqual: return a == b;
    case FusedOpcode::kNotEqual: return a != b;
    case FusedOpcode::kWhere: return a != T(0) ? b : c;
    case FusedOpcode::kSqrt: return std::sqrt(a);
    case FusedOpcode::kRsqrt: return T(1) / std::sqrt(a);
    case FusedOpcode::kLog: return std::log(a);
    case FusedOpcode::kTanh: return std::tanh(a);
    case FusedOpcode::kErf: return std::erf(a);
    case FusedOpcode::kSigmoid: return loops::Sigmoid(a);  // as the eager kernel
  }
  return a;
}

// Runs the program over blocks of kBlock elements, one instruction at a time per block.
template <typename T>
void InterpretT(const FusedProgram& p, T* out, const void* const* inputs, uint64_t mask,
                int64_t n) {
  constexpr int64_t kBlock = 128;
  std::vector<T> temps(p.insts.size() * kBlock);
  for (int64_t base = 0; base < n; base += kBlock) {
    const int64_t len = std::min(kBlock, n - base);
    auto fetch = [&](const FusedOperand& o, int64_t j) -> T {
      switch (o.kind) {
        case FusedOperand::kInput: {
          const T* in = static_cast<const T*>(inputs[o.index]);
          return (mask >> o.index) & 1 ? in[base + j] : in[0];
        }
        case FusedOperand::kTemp: return temps[o.index * kBlock + j];
        case FusedOperand::kConst: return static_cast<T>(o.value);
      }
      return T(0);
    };
    for (size_t i = 0; i < p.insts.size(); ++i) {
      const FusedInst& in = p.insts[i];
      T* dst = &temps[i * kBlock];
      const int arity = FusedOpcodeArity(in.op);
      for (int64_t j = 0; j < len; ++j) {
        dst[j] = Apply<T>(in.op, fetch(in.a, j), arity > 1 ? fetch(in.b, j) : T(0),
                          arity > 2 ? fetch(in.c, j) : T(0));
      }
    }
    std::memcpy(out + base, &temps[(p.insts.size() - 1) * kBlock], len * sizeof(T));
  }
}
}  // namespace

void FusedKernel::Interpret(void* out, const void* const* inputs, uint64_t mask,
                            int64_t n) const {
  if (program_.dtype == DType::kFloat32) {
    InterpretT<float>(program_, static_cast<float*>(out), inputs, mask, n);
  } else {
    InterpretT<double>(program_, static_cast<double*>(out), inputs, mask, n);
  }
}

namespace {
// Rows shorter than this whose operands repeat along the next axis run as periodic rows; the
// repeated runs are buffered in chunks of about kPeriodicChunk elements.
constexpr int64_t kShortRow = 64;
constexpr int64_t kPeriodicChunk = 1024;
}  // namespace

absl::StatusOr<Tensor> FusedKernel::Run(absl::Span<const Tensor* const> inputs,
                                        absl::Span<const int64_t> shape) const {
  const int n_in = program_.num_inputs;
  if (static_cast<int>(inputs.size()) != n_in) {
    return absl::InternalError(absl::StrCat("fused: ", inputs.size(), " inputs, expected ", n_in));
  }
  const size_t nd = shape.size();
  size_t inner_axis = nd;  // the innermost axis longer than 1
  for (size_t d = nd; d-- > 0;) {
    if (shape[d] > 1) {
      inner_axis = d;
      break;
    }
  }
  // Broadcast views. An input whose stride along inner_axis is not 0 or 1 (a transposed
  // view, say) is gathered tile by tile into a per-thread buffer below, not copied whole.
  absl::InlinedVector<Tensor, 8> views;
  uint64_t gathered = 0;
  for (int k = 0; k < n_in; ++k) {
    const Tensor* t = inputs[k];
    if (t->dtype() != program_.dtype) {
      return absl::InternalError(absl::StrCat("fused: input of dtype ", DTypeName(t->dtype()),
                                              " for a ", DTypeName(program_.dtype), " program"));
    }
    PIJIT_ASSIGN_OR_RETURN(Tensor v, BroadcastTo(*t, shape));
    if (inner_axis < nd && v.strides()[inner_axis] != 0 && v.strides()[inner_axis] != 1)
      gathered |= uint64_t{1} << k;
    views.push_back(std::move(v));
  }
  Tensor out = Tensor::Empty(shape, program_.dtype);
  const int64_t total = out.numel();
  if (total == 0) return out;

  // Coalesce axes: drop size-1 axes, merge axis d into d+1 when every operand steps over d
  // exactly as over d+1 taken whole. dims[0] is the innermost.
  absl::InlinedVector<int64_t, 6> dims;
  absl::InlinedVector<absl::InlinedVector<int64_t, 6>, 8> strides(n_in);
  for (size_t d = nd; d-- > 0;) {
    if (shape[d] == 1) continue;
    bool merge = !dims.empty();
    for (int k = 0; k < n_in && merge; ++k)
      merge = views[k].strides()[d] == strides[k].back() * dims.back();
    if (merge) {
      dims.back() *= shape[d];
      continue;
    }
    dims.push_back(shape[d]);
    for (int k = 0; k < n_in; ++k) strides[k].push_back(views[k].strides()[d]);
  }
  if (dims.empty()) {
    dims.push_back(1);
    for (int k = 0; k < n_in; ++k) strides[k].push_back(0);
  }
  // Short periodic rows (an operand repeating a short run along the next axis, as a channel
  // vector does against a blocked [N, C/b, H, W, b] tensor: kernels/blocked_layout.h): the
  // two innermost axes become one long row, and each such operand is read from a buffer
  // holding its run repeated (filled once per row), so the code runs over long spans.
  uint64_t periodic = 0;
  int64_t period = 0;
  if (gathered == 0 && dims.size() >= 2 && dims[0] < kShortRow) {
    bool fits = true;
    for (int k = 0; k < n_in && fits; ++k) {
      const int64_t s0 = strides[k][0], s1 = strides[k][1];
      if (s0 == 1 && s1 == 0) periodic |= uint64_t{1} << k;
      else fits = (s0 == 0 && s1 == 0) || (s0 == 1 && s1 == dims[0]);
    }
    if (fits && periodic != 0) {
      period = dims[0];
      dims[0] *= dims[1];
      dims.erase(dims.begin() + 1);
      for (int k = 0; k < n_in; ++k) strides[k].erase(strides[k].begin() + 1);
    } else {
      periodic = 0;
    }
  }
  // A gathered input reaches the code as a contiguous run.
  uint64_t mask = 0;
  for (int k = 0; k < n_in; ++k)
    if ((strides[k][0] == 1 || (gathered >> k) & 1) && dims[0] > 1) mask |= uint64_t{1} << k;

  Fn fn = nullptr;
  if (native_) {
    auto f = NativeFor(mask);
    if (f.ok()) fn = *f;  // otherwise interpret: correct, only slower
  }
  const size_t item = ItemSize(program_.dtype);
  absl::InlinedVector<const char*, 8> base(n_in);
  for (int k = 0; k < n_in; ++k) base[k] = static_cast<const char*>(views[k].raw_data());
  char* o = static_cast<char*>(out.raw_data());
  const int64_t inner = dims[0];
  const int64_t rows = total / inner;
  // Element offset of input k at element `start` of row `row`.
  auto offset = [&](int k, int64_t row, int64_t start) {
    int64_t off = start * strides[k][0], r = row;
    for (size_t d = 1; d < dims.size(); ++d) {
      off += (r % dims[d]) * strides[k][d];
      r /= dims[d];
    }
    return off;
  };
  auto call = [&](int64_t row, int64_t start, int64_t len, const void* const* ptrs) {
    char* dst = o + (row * inner + start) * static_cast<int64_t>(item);
    if (fn) fn(dst, ptrs, len);
    else Interpret(dst, ptrs, mask, len);
  };
  // Large results are split across the cores: by rows, or within a single long row.
  constexpr int64_t kGrain = 1 << 16;
  if (gathered == 0) {
    // One contiguous span of `len` elements starting at element `start` of row `row`.
    auto span = [&](int64_t row, int64_t start, int64_t len) {
      absl::InlinedVector<const void*, 8> ptrs(n_in);
      if (periodic == 0) {
        for (int k = 0; k < n_in; ++k)
          ptrs[k] = base[k] + offset(k, row, start) * static_cast<int64_t>(item);
        call(row, start, len, ptrs.data());
        return;
      }
      // Chunks of whole periods, each periodic operand's run repeated from the phase of
      // `start` in this thread's buffer.
      const int64_t chunk =
          period * std::max<int64_t>(1, std::min(kPeriodicChunk, len + period - 1) / period);
      thread_local std::vector<char> repeated;
      const int n_periodic = __builtin_popcountll(periodic);
      const size_t bytes = static_cast<size_t>(chunk) * item;
      if (repeated.size() < n_periodic * bytes) repeated.resize(n_periodic * bytes);
      const int64_t phase = start % period;
      int slot = 0;
      for (int k = 0; k < n_in; ++k) {
        if (!((periodic >> k) & 1)) continue;
        char* buf = repeated.data() + slot++ * bytes;
        const char* run = base[k] + offset(k, row, 0) * static_cast<int64_t>(item);
        // The run from `phase`, then doubling copies of what is filled.
        std::memcpy(buf, run + phase * item, (period - phase) * item);
        std::memcpy(buf + (period - phase) * item, run, phase * item);
        for (size_t filled = period * item; filled < bytes; filled *= 2)
          std::memcpy(buf + filled, buf, std::min(filled, bytes - filled));
        ptrs[k] = buf;
      }
      for (int64_t at = start; at < start + len; at += chunk) {
        for (int k = 0; k < n_in; ++k)
          if (!((periodic >> k) & 1))
            ptrs[k] = base[k] + offset(k, row, at) * static_cast<int64_t>(item);
        call(row, at, std::min(chunk, start + len - at), ptrs.data());
      }
    };
    if (rows == 1) {
      ParallelFor(inner, kGrain, [&](int64_t b, int64_t e) { span(0, b, e - b); });
    } else {
      ParallelFor(rows, std::max<int64_t>(1, kGrain / inner), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) span(r, 0, inner);
      });
    }
    return out;
  }

  // Tiles of kTileRows rows by kTileCols elements. Each gathered input's tile is read column
  // by column across the rows (for a transposed view these reads are adjacent in memory) into
  // this thread's buffer, then the code runs row by row over the tile.
  constexpr int64_t kTileRows = 16, kTileCols = 256;
  const int64_t tile_rows = rows == 1 ? 1 : kTileRows;
  const int64_t tile_cols = rows == 1 ? kTileRows * kTileCols : kTileCols;
  const int n_gathered = __builtin_popcountll(gathered);
  auto tile = [&](int64_t row0, int64_t nrows, int64_t col0, int64_t ncols) {
    thread_local std::vector<char> scratch;
    const size_t need = static_cast<size_t>(n_gathered * kTileRows * kTileCols) * item;
    if (scratch.size() < need) scratch.resize(need);
    absl::InlinedVector<int64_t, kTileRows> row_off(nrows);
    absl::InlinedVector<char*, 8> buf(n_in, nullptr);
    int g = 0;
    for (int k = 0; k < n_in; ++k) {
      if (!((gathered >> k) & 1)) continue;
      buf[k] = scratch.data() + static_cast<size_t>(g++ * kTileRows * kTileCols) * item;
      for (int64_t i = 0; i < nrows; ++i) row_off[i] = offset(k, row0 + i, col0);
      const int64_t step = strides[k][0];
      auto gather = [&](auto* src, auto* dst) {
        for (int64_t c = 0; c < ncols; ++c)
          for (int64_t i = 0; i < nrows; ++i) dst[i * ncols + c] = src[row_off[i] + c * step];
      };
      if (program_.dtype == DType::kFloat32) {
        gather(reinterpret_cast<const float*>(base[k]), reinterpret_cast<float*>(buf[k]));
      } else {
        gather(reinterpret_cast<const double*>(base[k]), reinterpret_cast<double*>(buf[k]));
      }
    }
    absl::InlinedVector<const void*, 8> ptrs(n_in);
    for (int64_t i = 0; i < nrows; ++i) {
      for (int k = 0; k < n_in; ++k) {
        ptrs[k] = buf[k] != nullptr
                      ? static_cast<const void*>(buf[k] + i * ncols * static_cast<int64_t>(item))
                      : base[k] + offset(k, row0 + i, col0) * static_cast<int64_t>(item);
      }
      call(row0 + i, col0, ncols, ptrs.data());
    }
  };
  auto tiles_of_rows = [&](int64_t row0, int64_t nrows) {
    for (int64_t c = 0; c < inner; c += tile_cols)
      tile(row0, nrows, c, std::min(tile_cols, inner - c));
  };
  if (rows == 1) {
    ParallelFor(inner, kGrain, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; c += tile_cols) tile(0, 1, c, std::min(tile_cols, e - c));
    });
  } else {
    const int64_t blocks = (rows + tile_rows - 1) / tile_rows;
    ParallelFor(blocks, std::max<int64_t>(1, kGrain / (inner * tile_rows)),
                [&](int64_t b, int64_t e) {
                  for (int64_t blk = b; blk < e; ++blk) {
                    const int64_t r0 = blk * tile_rows;
                    tiles_of_rows(r0, std::min(tile_rows, rows - r0));
                  }
                });
  }
  return out;
}

}  // namespace pijit
