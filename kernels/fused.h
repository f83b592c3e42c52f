// Fused elementwise kernels: one pass over memory for a small expression program.
//
// A FusedProgram is straight-line SSA over the elements of N inputs, all of one floating dtype
// (float32 or float64). Instruction i computes #i from inputs ($k), earlier results (#j) and
// literal constants; the last instruction's value is the result. Text form (stable, parsed by
// FusedProgram::Parse):
//
//   mul($0, $1); mul($2, $3); add(#0, #1); mul($0, 0.5); sub(#2, #3)
//
// A FusedKernel runs a program over inputs broadcast to an output shape. With an AVX2 CPU
// (asmjit::CpuInfo) it generates machine code with asmjit (8 float32 / 4 float64 lanes per
// iteration, then one element per iteration for the tail); otherwise, or when asked, it
// interprets the program in C++. Generated code is specialised on each input's innermost
// stride (0: broadcast, 1: contiguous); inputs of other layouts are gathered tile by tile into
// a per-thread buffer.
//
// Accuracy: add, sub, mul, div, neg, relu, maximum, minimum (NumPy's: a NaN operand gives
// NaN; of equal operands the second), sqrt and rsqrt (correctly rounded sqrt, then division),
// the comparisons and where compute exactly what the eager kernels compute
// (the same IEEE operations in the same order, no contraction into FMA), so results are
// bit-identical. exp uses a vectorised approximation in generated code (range reduction by
// ln 2 in two parts, a degree-7 (float32) / degree-12 (float64) Taylor polynomial, scaling by
// 2^n in two steps so that subnormal results are right): max relative error against std::exp
// is kFusedExpRelTol for normal results; subnormal results are within the smallest normal
// number times that. log, likewise (kernels/cpu/fused_x86.cc, LogConsts: the exponent and a
// mantissa in [sqrt(1/2), sqrt(2)) from the bits, subnormal inputs scaled first, log of the
// mantissa by the atanh series), is within kFusedLogRelTol of std::log, with log(0) = -inf,
// log(inf) = inf and NaN for negative and NaN inputs exactly. tanh (kTanhTaylor: an odd
// series below |x| = 0.55, (1 - e) / (1 + e) with e = exp(-2|x|) above) is within
// kFusedTanhRelTol of std::tanh, with tanh(-0.0) = -0.0 and +-1 at large |x|. erf (erf's
// Taylor series below |x| = 0.75, above 1 - exp(-x^2) * g(x) with Pade approximants of
// g = erfc * exp(x^2); kernels/cpu/fused_x86.cc) is within kFusedErfRelTol of std::erf, with
// erf(-0.0) = -0.0 and +-1 at large |x|. sigmoid is 1 / (1 + e) for x >= 0 and e / (1 + e)
// below, e = exp(-|x|) by the generated exp (as the eager kernel's two branches, so that
// neither overflows), within kFusedSigmoidRelTol of the exact value. The interpreter uses
// std::exp, std::log, std::tanh and std::erf themselves.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kernels/tensor.h"

namespace pijit {

// Documented bound of the generated exp's relative error (tests check it).
template <typename T> inline constexpr double kFusedExpRelTol = 0;
template <> inline constexpr double kFusedExpRelTol<float> = 4e-7;     // ~3 ulp
template <> inline constexpr double kFusedExpRelTol<double> = 1e-15;   // ~5 ulp
// The same for the generated log (measured: 0.81 ulp float32, 1 ulp float64).
template <typename T> inline constexpr double kFusedLogRelTol = 0;
template <> inline constexpr double kFusedLogRelTol<float> = 2e-7;     // ~2 ulp
template <> inline constexpr double kFusedLogRelTol<double> = 5e-16;   // ~2 ulp
// And for the generated tanh (measured: 1.5e-7 float32, 2.6e-16 float64).
template <typename T> inline constexpr double kFusedTanhRelTol = 0;
template <> inline constexpr double kFusedTanhRelTol<float> = 4e-7;    // ~3 ulp
template <> inline constexpr double kFusedTanhRelTol<double> = 1e-15;  // ~5 ulp
// And for the generated erf (measured: 4.2e-7 float32, 7.2e-16 float64).
template <typename T> inline constexpr double kFusedSigmoidRelTol = 0;
template <> inline constexpr double kFusedSigmoidRelTol<float> = 4e-7;     // ~3 ulp
template <> inline constexpr double kFusedSigmoidRelTol<double> = 1e-15;   // ~5 ulp

template <typename T> inline constexpr double kFusedErfRelTol = 0;
template <> inline constexpr double kFusedErfRelTol<float> = 6e-7;     // ~5 ulp
template <> inline constexpr double kFusedErfRelTol<double> = 1.5e-15; // ~7 ulp

// The instructions of fused programs: X(enumerator, text name, arity). Each is the graph op
// of the same enumerator and name (graph/ops.def), which the fusion pass turns into it
// (graph/passes/fusion.cc maps them through this table), so a row added here is fused
// wherever its op appears once the code generators have its case. The comparisons stay
// together (FusedOpcodeIsCompare); rsqrt(x) = 1 / sqrt(x), as the eager kernel computes it.
#define PIJIT_FUSED_OPCODES(X)                                                                  \
  X(kAdd, "add", 2) X(kSub, "sub", 2) X(kMul, "mul", 2) X(kDiv, "div", 2) X(kNeg, "neg", 1)      \
  X(kRelu, "relu", 1) X(kExp, "exp", 1) X(kMaximum, "maximum", 2) X(kMinimum, "minimum", 2)     \
  X(kGreater, "greater", 2) X(kGreaterEqual, "greater_equal", 2) X(kLess, "less", 2)            \
  X(kLessEqual, "less_equal", 2) X(kEqual, "equal", 2) X(kNotEqual, "not_equal", 2)            \
  X(kWhere, "where", 3) X(kSqrt, "sqrt", 1) X(kRsqrt, "rsqrt", 1) X(kLog, "log", 1)              \
  X(kTanh, "tanh", 1) X(kErf, "erf", 1) X(kSigmoid, "sigmoid", 1)

enum class FusedOpcode : uint8_t {
#define PIJIT_FUSED_ENUM(e, name, arity) e,
  PIJIT_FUSED_OPCODES(PIJIT_FUSED_ENUM)
#undef PIJIT_FUSED_ENUM
};
const char* FusedOpcodeName(FusedOpcode op);
int FusedOpcodeArity(FusedOpcode op);
// The comparisons: their value is a mask, read only by where.
inline bool FusedOpcodeIsCompare(FusedOpcode op) {
  return op >= FusedOpcode::kGreater && op <= FusedOpcode::kNotEqual;
}

struct FusedOperand {
  enum Kind : uint8_t { kInput, kTemp, kConst };
  Kind kind = kInput;
  int32_t index = 0;  // kInput: input number; kTemp: instruction number
  double value = 0;   // kConst: exactly representable in the program's dtype
  bool operator==(const FusedOperand& o) const;
};

struct FusedInst {
  FusedOpcode op;
  FusedOperand a, b, c;  // b is unused by unary opcodes, c by all but where
};

// The dtypes fused kernels compute in: float32 and float64 (lanes of AVX2 registers). The
// fusion pass leaves everything else, the 16-bit floats included, unfused.
inline bool FusedKernelSupports(DType d) { return d == DType::kFloat32 || d == DType::kFloat64; }

struct FusedProgram {
  DType dtype = DType::kFloat32;
  int num_inputs = 0;
  std::vector<FusedInst> insts;

  std::string ToText() const;
  static absl::StatusOr<FusedProgram> Parse(absl::string_view text, DType dtype, int num_inputs);
  // Floating dtype, at least one instruction, operands in range, temps refer backwards,
  // every input used, masks read only as where's first operand (which must be a mask).
  absl::Status Validate() const;
};

enum class FusedBackend : uint8_t {
  kAuto,         // generated code for the host (AVX-512 or AVX2), else the interpreter
  kInterpreter,  // always interpret (tests; CPUs without AVX2)
  kAvx2,         // generated AVX2 code even on an AVX-512 CPU (tests)
};

class FusedKernel {
 public:
  using Fn = void (*)(void* out, const void* const* inputs, int64_t n);

  // Validates `program`. With kAuto on an AVX2 CPU, generates code for contiguous inputs of
  // `input_shapes` broadcast to `out_shape` right away (compile time, not first run).
  static absl::StatusOr<std::shared_ptr<const FusedKernel>> Create(
      FusedProgram program, absl::Span<const Shape> input_shapes, const Shape& out_shape,
      FusedBackend backend = FusedBackend::kAuto);
  ~FusedKernel();
  FusedKernel(const FusedKernel&) = delete;
  FusedKernel& operator=(const FusedKernel&) = delete;

  const FusedProgram& program() const { return program_; }
  bool native() const { return native_; }

  // Inputs in program order, each of the program's dtype and broadcastable to `shape`.
  absl::StatusOr<Tensor> Run(absl::Span<const Tensor* const> inputs,
                             absl::Span<const int64_t> shape) const;

  // The generated code for raw spans (bit k of stride_mask set: input k is contiguous, else
  // read at its one address), for kernels that run a program row by row; nullptr when the
  // kernel interprets. Look it up once per call: the lookup takes a lock.
  Fn NativeFn(uint64_t stride_mask) const;
  // n elements of the result into `out`, inputs as raw spans (stride_mask as for NativeFn),
  // with `fn` (what NativeFn(stride_mask) gave) or, when it is null, the interpreter: the
  // values Run computes for those elements.
  void RunSpan(Fn fn, void* out, const void* const* inputs, uint64_t stride_mask,
               int64_t n) const;

 private:
  FusedKernel() = default;
  // Generated code for one inner-stride pattern (bit k set: input k has stride 1).
  absl::StatusOr<Fn> NativeFor(uint64_t stride_mask) const;
  void Interpret(void* out, const void* const* inputs, uint64_t stride_mask, int64_t n) const;

  FusedProgram program_;
  bool native_ = false;
  bool avx512_ = false;
  mutable std::mutex mu_;
  mutable std::vector<std::pair<uint64_t, Fn>> fns_;
};

}  // namespace pijit
