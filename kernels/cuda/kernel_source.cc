// Rendering of CUDA C++ kernel sources (kernels/cuda/kernel_source.h).
#include "kernels/cuda/kernel_source.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "kernels/errors.h"

namespace pijit::cuda {
namespace {

// Math for the float-function table's expressions: `std::` in them is renamed `pj::`, whose
// overloads call CUDA's device math library for float and double.
constexpr const char* kMathPreamble = R"(
#define M_SQRT1_2 0.70710678118654752440
#define M_2_SQRTPI 1.12837916709551257390
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
namespace pj {
#define PJ_UNARY(name, f32, f64) \
  __device__ __forceinline__ float name(float x) { return ::f32(x); } \
  __device__ __forceinline__ double name(double x) { return ::f64(x); }
PJ_UNARY(exp, expf, exp) PJ_UNARY(log, logf, log) PJ_UNARY(sqrt, sqrtf, sqrt)
PJ_UNARY(sin, sinf, sin) PJ_UNARY(cos, cosf, cos) PJ_UNARY(tan, tanf, tan)
PJ_UNARY(tanh, tanhf, tanh) PJ_UNARY(erf, erff, erf) PJ_UNARY(erfc, erfcf, erfc)
PJ_UNARY(log1p, log1pf, log1p) PJ_UNARY(expm1, expm1f, expm1) PJ_UNARY(log2, log2f, log2)
PJ_UNARY(log10, log10f, log10) PJ_UNARY(exp2, exp2f, exp2) PJ_UNARY(asin, asinf, asin)
PJ_UNARY(acos, acosf, acos) PJ_UNARY(atan, atanf, atan) PJ_UNARY(sinh, sinhf, sinh)
PJ_UNARY(cosh, coshf, cosh) PJ_UNARY(asinh, asinhf, asinh) PJ_UNARY(acosh, acoshf, acosh)
PJ_UNARY(atanh, atanhf, atanh) PJ_UNARY(floor, floorf, floor) PJ_UNARY(ceil, ceilf, ceil)
PJ_UNARY(trunc, truncf, trunc) PJ_UNARY(nearbyint, nearbyintf, nearbyint)
PJ_UNARY(abs, fabsf, fabs)
#undef PJ_UNARY
template <typename T> __device__ __forceinline__ T max(T a, T b) { return a < b ? b : a; }
#define PJ_BINARY(name, f32, f64) \
  __device__ __forceinline__ float name(float a, float b) { return ::f32(a, b); } \
  __device__ __forceinline__ double name(double a, double b) { return ::f64(a, b); }
PJ_BINARY(pow, powf, pow) PJ_BINARY(fmod, fmodf, fmod) PJ_BINARY(copysign, copysignf, copysign)
#undef PJ_BINARY
}  // namespace pj
// Python's (NumPy's) modulo and floor division: the result takes the divisor's sign.
template <typename T> __device__ __forceinline__ T FloatMod(T a, T b) {
  if (b == T(0)) return pj::fmod(a, b);
  T mod = pj::fmod(a, b);
  if (mod != T(0)) {
    if ((b < T(0)) != (mod < T(0))) mod += b;
  } else {
    mod = pj::copysign(T(0), b);
  }
  return mod;
}
template <typename T> __device__ __forceinline__ T FloatFloorDiv(T a, T b) {
  if (b == T(0)) return a / b;
  T mod = pj::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
  if (div == T(0)) return pj::copysign(T(0), a / b);
  T floordiv = pj::floor(div);
  if (div - floordiv > T(0.5)) floordiv += T(1);
  return floordiv;
}
// Integers wrap as NumPy's do: the products are taken unsigned.
template <typename T> __device__ __forceinline__ T IntFloorDiv(T a, T b) {
  if (b == T(0)) return T(0);
  if (b == T(-1)) return T(0ULL - (unsigned long long)a);
  T q = a / b;
  if ((a % b != T(0)) && ((a < T(0)) != (b < T(0)))) --q;
  return q;
}
template <typename T> __device__ __forceinline__ T BitwiseNot(T x) { return T(~x); }
template <> __device__ __forceinline__ bool BitwiseNot(bool x) { return !x; }
template <typename T> __device__ __forceinline__ T IntMod(T a, T b) {
  if (b == T(0) || b == T(-1)) return T(0);
  T r = a % b;
  if (r != T(0) && ((r < T(0)) != (b < T(0)))) r += b;
  return r;
}
template <typename T> __device__ __forceinline__ T Sigmoid(T x) {
  if (x >= T(0)) return T(1) / (T(1) + pj::exp(-x));
  T e = pj::exp(x);
  return e / (T(1) + e);
}
template <typename T> __device__ __forceinline__ T Maximum(T a, T b) {
  return (a > b || a != a) ? a : b;
}
template <typename T> __device__ __forceinline__ T Minimum(T a, T b) {
  return (a < b || a != a) ? a : b;
}
template <typename T> __device__ __forceinline__ T Relu(T x) {
  return x > T(0) ? x : (x != x ? x : T(0));
}
)";

#define PIJIT_TEXT(...) PIJIT_TEXT_OF(__VA_ARGS__)
#define PIJIT_TEXT_OF(...) #__VA_ARGS__
constexpr const char* kArgs =
    "\n#define PJ_MAX_DIMS 8\n#define PJ_MAX_INPUTS 16\n"
    "struct ElementwiseArgs {\n  "
    PIJIT_TEXT(PIJIT_ELEMENTWISE_ARGS_FIELDS(PJ_MAX_INPUTS, PJ_MAX_DIMS)) "\n};\n"
    "struct ReduceArgs {\n  " PIJIT_TEXT(PIJIT_REDUCE_ARGS_FIELDS(PJ_MAX_DIMS)) "\n};\n"
    "struct SoftmaxArgs {\n  " PIJIT_TEXT(PIJIT_SOFTMAX_ARGS_FIELDS(PJ_MAX_DIMS)) "\n};\n"
    R"(// The offset of linear index `i` of a row-major `shape` in a tensor of `stride`, in index
// type I: unsigned 32-bit where every index and offset fits (its division is several times
// cheaper than 64-bit's; a negative stride wraps and the sum comes out right modulo 2^32).
template <typename I>
__device__ __forceinline__ long long pj_offset(long long i, int ndim, const long long* shape,
                                               const long long* stride) {
  I rem = (I)i, off = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    const I c = rem % (I)shape[d];
    rem /= (I)shape[d];
    off += c * (I)stride[d];
  }
  return (long long)off;
}
)";
#undef PIJIT_TEXT_OF
#undef PIJIT_TEXT

const char* FusedOperator(FusedOpcode op) {
  switch (op) {
    case FusedOpcode::kAdd: return "+";
    case FusedOpcode::kSub: return "-";
    case FusedOpcode::kMul: return "*";
    case FusedOpcode::kDiv: return "/";
    case FusedOpcode::kGreater: return ">";
    case FusedOpcode::kGreaterEqual: return ">=";
    case FusedOpcode::kLess: return "<";
    case FusedOpcode::kLessEqual: return "<=";
    case FusedOpcode::kEqual: return "==";
    case FusedOpcode::kNotEqual: return "!=";
    default: return nullptr;
  }
}

// A constant of the program's type: infinities and NaN have no C++ literal, so they are
// written as bit patterns.
std::string Literal(double v, const char* type) {
  const bool f32 = std::string(type) == "float";
  if (std::isnan(v)) return f32 ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000LL)";
  if (std::isinf(v)) {
    const char* inf = f32 ? "__int_as_float(0x7f800000)" : "__longlong_as_double(0x7ff0000000000000LL)";
    return v > 0 ? std::string(inf) : absl::StrCat("(-", inf, ")");
  }
  return absl::StrFormat("%s(%.17g)", type, v);
}

std::string Operand(const FusedOperand& o, const char* type) {
  switch (o.kind) {
    case FusedOperand::kInput: return absl::StrCat("x", o.index);
    case FusedOperand::kTemp: return absl::StrCat("t", o.index);
    case FusedOperand::kConst: return Literal(o.value, type);
  }
  return "";
}

// One fused instruction's right-hand side.
std::string FusedExpression(const FusedInst& inst, const char* t) {
  const std::string a = Operand(inst.a, t), b = Operand(inst.b, t), c = Operand(inst.c, t);
  if (const char* op = FusedOperator(inst.op)) return absl::StrCat("(", a, " ", op, " ", b, ")");
  switch (inst.op) {
    case FusedOpcode::kNeg: return absl::StrCat("(-", a, ")");
    case FusedOpcode::kRelu: return absl::StrCat("Relu(", a, ")");
    case FusedOpcode::kMaximum: return absl::StrCat("Maximum(", a, ", ", b, ")");
    case FusedOpcode::kMinimum: return absl::StrCat("Minimum(", a, ", ", b, ")");
    case FusedOpcode::kWhere: return absl::StrCat("(", a, " ? ", b, " : ", c, ")");
    case FusedOpcode::kExp: return absl::StrCat("pj::exp(", a, ")");
    case FusedOpcode::kLog: return absl::StrCat("pj::log(", a, ")");
    case FusedOpcode::kTanh: return absl::StrCat("pj::tanh(", a, ")");
    case FusedOpcode::kErf: return absl::StrCat("pj::erf(", a, ")");
    case FusedOpcode::kSigmoid: return absl::StrCat("Sigmoid(", a, ")");
    case FusedOpcode::kSqrt: return absl::StrCat("pj::sqrt(", a, ")");
    case FusedOpcode::kRsqrt: return absl::StrCat("(", t, "(1) / pj::sqrt(", a, "))");
    default: return "";
  }
}

std::string ReadInput(int k, Access access, const std::string& type) {
  const std::string ptr = absl::StrFormat("static_cast<const %s*>(a.in[%d])", type, k);
  switch (access) {
    case Access::kContiguous: return absl::StrCat(ptr, "[i]");
    case Access::kScalar: return absl::StrCat(ptr, "[0]");
    case Access::kStrided:  // the output's coordinates, computed once, dotted with the strides
      return absl::StrFormat("%s[pj_dot%d(co, a.strides[%d])]", ptr, k, k);
  }
  return "";
}

}  // namespace

const char* ArgsDeclarations() { return kArgs; }

absl::StatusOr<std::string> DeviceType(DType d) {
  switch (d) {
    case DType::kBool: return std::string("bool");
    case DType::kUInt8: return std::string("unsigned char");
    case DType::kInt8: return std::string("signed char");
    case DType::kInt16: return std::string("short");
    case DType::kInt32: return std::string("int");
    case DType::kInt64: return std::string("long long");
    case DType::kFloat32: return std::string("float");
    case DType::kFloat64: return std::string("double");
    default:
      return absl::UnimplementedError(absl::StrFormat(
          "the CUDA backend does not run %s tensors yet (float32, float64, integers, bool)",
          DTypeName(d)));
  }
}

std::string RenderElementwise(const ElementwiseSpec& spec) {
  const std::string out_type = *DeviceType(spec.out_dtype);
  std::string src = absl::StrCat(kMathPreamble, kArgs);
  bool strided = spec.strided_out;
  for (Access a : spec.access) strided |= a == Access::kStrided;
  const int nd = std::max(spec.ndim, 1);
  const char* idx = spec.wide_index ? "long long" : "unsigned int";
  if (strided) {
    // The number of axes is fixed in the source, so the coordinates stay in registers.
    absl::StrAppendFormat(&src, "typedef %s IDX;\n#define PJ_ND %d\n", idx, nd);
    for (size_t k = 0; k < spec.access.size(); ++k) {
      absl::StrAppendFormat(&src,
                            "__device__ __forceinline__ IDX pj_dot%d(const IDX* co, const long long* s) {\n"
                            "  IDX off = 0;\n#pragma unroll\n  for (int d = 0; d < PJ_ND; ++d) off += co[d] * (IDX)s[d];\n"
                            "  return off;\n}\n", k);
    }
  }
  absl::StrAppend(&src, "extern \"C\" __global__ void pijit_elementwise(ElementwiseArgs a) {\n",
                  "  typedef ", spec.compute_type, " T;\n",
                  "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < a.n;\n",
                  "       i += (long long)gridDim.x * blockDim.x) {\n");
  if (strided) {
    absl::StrAppend(&src, "    IDX co[PJ_ND];\n    {\n      IDX rem = (IDX)i;\n#pragma unroll\n",
                    "      for (int d = PJ_ND - 1; d >= 0; --d) {\n",
                    "        co[d] = rem % (IDX)a.shape[d];\n        rem /= (IDX)a.shape[d];\n      }\n    }\n");
  }
  for (size_t k = 0; k < spec.input_dtypes.size(); ++k) {
    const std::string type = *DeviceType(spec.input_dtypes[k]);
    absl::StrAppendFormat(&src, "    const %s x%d = %s;\n", type, k,
                          ReadInput(static_cast<int>(k), spec.access[k], type));
  }
  const char* where = spec.strided_out ? "[pj_dot_out(co, a.out_strides)]" : "[i]";
  if (spec.strided_out) {
    // Defined after use would not compile: insert the output's dot product before the kernel.
    const size_t at = src.find("extern \"C\" __global__ void pijit_elementwise");
    src.insert(at, "__device__ __forceinline__ IDX pj_dot_out(const IDX* co, const long long* s) {\n"
                   "  IDX off = 0;\n#pragma unroll\n  for (int d = 0; d < PJ_ND; ++d) off += co[d] * (IDX)s[d];\n"
                   "  return off;\n}\n");
  }
  absl::StrAppend(&src, "    T r;\n", spec.body, "\n    static_cast<", out_type, "*>(a.out)",
                  where, " = static_cast<", out_type, ">(r);\n  }\n}\n");
  return src;
}

absl::StatusOr<std::string> FusedProgramBody(const FusedProgram& program) {
  if (absl::Status s = program.Validate(); !s.ok()) return s;
  const char* t = program.dtype == DType::kFloat64 ? "double" : "float";
  std::string body;
  for (size_t i = 0; i < program.insts.size(); ++i) {
    const FusedInst& inst = program.insts[i];
    const std::string rhs = FusedExpression(inst, t);
    if (rhs.empty()) {
      return absl::UnimplementedError(absl::StrFormat(
          "fused opcode %s has no CUDA rendering", FusedOpcodeName(inst.op)));
    }
    absl::StrAppendFormat(&body, "    const %s t%d = %s;\n",
                          FusedOpcodeIsCompare(inst.op) ? "bool" : t, i, rhs);
  }
  absl::StrAppendFormat(&body, "    r = t%d;", program.insts.size() - 1);
  return body;
}

// The C++ operator that computes `op` on operands of type T, or null when none does.
const char* InfixOperator(BinaryOp op, bool floating) {
  switch (op) {
    case BinaryOp::kAdd: return "+";
    case BinaryOp::kSub: return "-";
    case BinaryOp::kMul: return "*";
    case BinaryOp::kDiv: return floating ? "/" : nullptr;
    case BinaryOp::kEqual: return "==";
    case BinaryOp::kNotEqual: return "!=";
    case BinaryOp::kLess: return "<";
    case BinaryOp::kLessEqual: return "<=";
    case BinaryOp::kGreater: return ">";
    case BinaryOp::kGreaterEqual: return ">=";
    case BinaryOp::kBitwiseAnd: return floating ? nullptr : "&";
    case BinaryOp::kBitwiseOr: return floating ? nullptr : "|";
    case BinaryOp::kBitwiseXor: return floating ? nullptr : "^";
    default: return nullptr;
  }
}

// The device function of two T operands that computes `op`, or null when none does.
const char* DeviceFunction(BinaryOp op, bool floating) {
  switch (op) {
    case BinaryOp::kMaximum: return "Maximum";
    case BinaryOp::kMinimum: return "Minimum";
    // Integer pow stays on the CPU: a negative exponent is an error there, which a kernel
    // could only report through a wait for the device.
    case BinaryOp::kPow: return floating ? "pj::pow" : nullptr;
    case BinaryOp::kFloorDiv: return floating ? "FloatFloorDiv" : "IntFloorDiv";
    case BinaryOp::kMod: return floating ? "FloatMod" : "IntMod";
    default: return nullptr;
  }
}

// The logical operator that `op` applies to the operands' truth values, or null.
const char* LogicalOperator(BinaryOp op) {
  switch (op) {
    case BinaryOp::kLogicalAnd: return "&&";
    case BinaryOp::kLogicalOr: return "||";
    case BinaryOp::kLogicalXor: return "!=";
    default: return nullptr;
  }
}

absl::StatusOr<std::string> BinaryBody(BinaryOp op, bool floating) {
  if (const char* o = InfixOperator(op, floating))
    return absl::StrCat("    r = T(x0) ", o, " T(x1);");
  if (const char* f = DeviceFunction(op, floating))
    return absl::StrCat("    r = ", f, "(T(x0), T(x1));");
  if (const char* o = LogicalOperator(op))
    return absl::StrCat("    r = (x0 != 0) ", o, " (x1 != 0);");
  return absl::UnimplementedError(absl::StrFormat(
      "the CUDA backend has no kernel for %s%s yet", BinaryOpName(op),
      floating ? "" : " of integers"));
}

const char* FloatFunctionExpression(UnaryOp op) {
  switch (op) {
#define PIJIT_FLOAT_EXPRESSION(e, name, surfaces, expr, ...) \
  case UnaryOp::e: return #expr;
    PIJIT_FLOAT_FUNCTIONS(PIJIT_FLOAT_EXPRESSION)
#undef PIJIT_FLOAT_EXPRESSION
    default: return nullptr;
  }
}

absl::StatusOr<std::string> UnaryBody(UnaryOp op, bool floating) {
  if (const char* expr = FloatFunctionExpression(op)) {
    if (!floating) {
      return absl::UnimplementedError(absl::StrFormat(
          "%s of an integer tensor: cast it to a float dtype first on the GPU", UnaryOpName(op)));
    }
    // The row's expression reads `x` in the compute type `C`.
    const std::string device_expr = absl::StrReplaceAll(expr, {{"std::", "pj::"}});
    return absl::StrCat("    typedef T C;\n    const T x = T(x0);\n    r = ", device_expr, ";");
  }
  switch (op) {
    case UnaryOp::kNeg: return std::string("    r = -T(x0);");
    case UnaryOp::kRelu: return std::string("    r = Relu(T(x0));");
    case UnaryOp::kAbs:
      return std::string(floating ? "    r = pj::abs(T(x0));" : "    r = x0 < T(0) ? T(-x0) : T(x0);");
    case UnaryOp::kSquare: return std::string("    r = T(x0) * T(x0);");
    case UnaryOp::kSign:
      // As the CPU's (NumPy's): NaN maps to itself, either zero to +0.
      return std::string("    r = x0 > T(0) ? T(1) : (x0 < T(0) ? T(-1) : (x0 == T(0) ? T(0) : T(x0)));");
    case UnaryOp::kSqrt:
      if (floating) return std::string("    r = pj::sqrt(T(x0));");
      break;
    case UnaryOp::kLogicalNot: return std::string("    r = !(x0 != 0);");
    case UnaryOp::kBitwiseNot:
      if (!floating) return std::string("    r = BitwiseNot(T(x0));");
      break;
    default: break;
  }
  return absl::UnimplementedError(absl::StrFormat("the CUDA backend has no kernel for %s yet",
                                                  UnaryOpName(op)));
}

}  // namespace pijit::cuda
