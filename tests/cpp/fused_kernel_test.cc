// Fused kernels against the eager kernels, generated code and interpreter alike.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/fused.h"
#include "kernels/ops.h"
#include "kernels/cpu/fused_x86.h"

namespace pijit {
namespace {

template <typename T>
Tensor Random(absl::Span<const int64_t> shape, std::mt19937& rng, double lo = -3, double hi = 3) {
  Tensor t = Tensor::Empty(shape, DTypeOf<T>::value);
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(u(rng));
  return t;
}

// The program evaluated op by op with the eager kernels.
Tensor Eager(const FusedProgram& p, const std::vector<Tensor>& in) {
  std::vector<Tensor> temps;
  auto get = [&](const FusedOperand& o) -> Tensor {
    switch (o.kind) {
      case FusedOperand::kInput: return in[o.index];
      case FusedOperand::kTemp: return temps[o.index];
      case FusedOperand::kConst:
        return p.dtype == DType::kFloat32 ? Tensor::Scalar<float>(static_cast<float>(o.value))
                                          : Tensor::Scalar<double>(o.value);
    }
    return Tensor();
  };
  for (const FusedInst& inst : p.insts) {
    Tensor a = get(inst.a);
    absl::StatusOr<Tensor> r;
    switch (inst.op) {
      case FusedOpcode::kAdd: r = Binary(BinaryOp::kAdd, a, get(inst.b)); break;
      case FusedOpcode::kSub: r = Binary(BinaryOp::kSub, a, get(inst.b)); break;
      case FusedOpcode::kMul: r = Binary(BinaryOp::kMul, a, get(inst.b)); break;
      case FusedOpcode::kDiv: r = Binary(BinaryOp::kDiv, a, get(inst.b)); break;
      case FusedOpcode::kNeg: r = Unary(UnaryOp::kNeg, a); break;
      case FusedOpcode::kRelu: r = Unary(UnaryOp::kRelu, a); break;
      case FusedOpcode::kExp: r = Unary(UnaryOp::kExp, a); break;
      case FusedOpcode::kMaximum: r = Binary(BinaryOp::kMaximum, a, get(inst.b)); break;
      case FusedOpcode::kMinimum: r = Binary(BinaryOp::kMinimum, a, get(inst.b)); break;
      case FusedOpcode::kGreater: r = Binary(BinaryOp::kGreater, a, get(inst.b)); break;
      case FusedOpcode::kGreaterEqual: r = Binary(BinaryOp::kGreaterEqual, a, get(inst.b)); break;
      case FusedOpcode::kLess: r = Binary(BinaryOp::kLess, a, get(inst.b)); break;
      case FusedOpcode::kLessEqual: r = Binary(BinaryOp::kLessEqual, a, get(inst.b)); break;
      case FusedOpcode::kEqual: r = Binary(BinaryOp::kEqual, a, get(inst.b)); break;
      case FusedOpcode::kNotEqual: r = Binary(BinaryOp::kNotEqual, a, get(inst.b)); break;
      case FusedOpcode::kWhere: r = Where(a, get(inst.b), get(inst.c)); break;
      case FusedOpcode::kSqrt: r = Unary(UnaryOp::kSqrt, a); break;
      case FusedOpcode::kRsqrt: r = Unary(UnaryOp::kRsqrt, a); break;
      case FusedOpcode::kLog: r = Unary(UnaryOp::kLog, a); break;
      case FusedOpcode::kTanh: r = Unary(UnaryOp::kTanh, a); break;
      case FusedOpcode::kErf: r = Unary(UnaryOp::kErf, a); break;
      case FusedOpcode::kSigmoid: r = Unary(UnaryOp::kSigmoid, a); break;
    }
    EXPECT_TRUE(r.ok());
    temps.push_back(*r);
  }
  return temps.back();
}

// Runs `text` on `inputs` with `backend` and compares with Eager: bit-identical, or within
// kFusedExpRelTol where `rel_tol` says so.
template <typename T>
void ExpectMatchesEager(const std::string& text, const std::vector<Tensor>& inputs,
                        const Shape& shape, FusedBackend backend, double rel_tol) {
  auto p = FusedProgram::Parse(text, DTypeOf<T>::value, static_cast<int>(inputs.size()));
  ASSERT_TRUE(p.ok()) << p.status();
  std::vector<Shape> shapes;
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) shapes.push_back(t.shape()), ptrs.push_back(&t);
  auto k = FusedKernel::Create(*p, shapes, shape, backend);
  ASSERT_TRUE(k.ok()) << k.status();
  if (backend == FusedBackend::kInterpreter) {
    EXPECT_FALSE((*k)->native());
  }
  auto got = (*k)->Run(ptrs, shape);
  ASSERT_TRUE(got.ok()) << got.status();
  Tensor want = Eager(*p, inputs).Contiguous();
  ASSERT_EQ(got->shape(), want.shape());
  for (int64_t i = 0; i < want.numel(); ++i) {
    T a = want.data<T>()[i], b = got->template data<T>()[i];
    if (std::memcmp(&a, &b, sizeof(T)) == 0 || (std::isnan(a) && std::isnan(b))) continue;
    if (rel_tol > 0 && std::abs(a - b) <= rel_tol * std::abs(a)) continue;
    FAIL() << text << " shape " << ShapeToString(shape) << " element " << i << ": eager " << a
           << ", fused " << b;
  }
}

const char* kChain = "mul($0, $1); mul($2, $3); add(#0, #1); mul($0, 0.5); sub(#2, #3)";
const char* kAllOps = "div($0, $1); neg(#0); relu(#1); sub(#2, $0); mul(#3, #3); add(#4, 1.25)";
// exp feeds a mul, not an add: cancellation would magnify its (bounded) relative error.
const char* kWithExp = "mul($0, -1.5); exp(#0); mul(#1, $1); relu(#2)";
// log of a positive argument, then a product (which keeps log's relative error).
const char* kWithLog = "mul($0, $0); add(#0, 0.25); log(#1); mul(#2, $1)";
const char* kWithTanh = "mul($0, 0.3); tanh(#0); mul(#1, $1); tanh($1); mul(#3, #2)";
const char* kWithErf = "mul($0, 0.7); erf(#0); mul(#1, $1); erf($1); mul(#3, #2)";
// Every comparison, selecting between inputs, temps and literals.
const char* kSelect =
    "greater($0, 0); where(#0, $1, 0); less($0, $1); where(#2, #1, $2); "
    "greater_equal(#3, $2); equal($0, $1); where(#5, 7, #3); where(#4, #6, -0); "
    "not_equal($1, $2); where(#8, #7, $0); less_equal(#9, $0); where(#10, #9, $1)";
// sqrt and rsqrt of negative, zero (both signs), tiny and huge values: NaN, +-0, +-inf.
const char* kRoots = "sqrt($0); mul($0, $1); rsqrt(#1); add(#0, #2); mul($1, 1e-30); sqrt(#4); "
                     "rsqrt(#5); sub(#3, #6)";
const char* kMinMax = "maximum($0, $1); minimum(#0, 0.75); maximum(-1, #1); minimum($2, #2); "
                      "add(#3, $0)";

template <typename T>
void RunShapes(FusedBackend backend) {
  std::mt19937 rng(7);
  // Eager exp runs the generated vector exp where the CPU has AVX2 (kernels/cpu/unary.cc),
  // so generated code matches it exactly there, and the interpreter (std::exp) is within the
  // documented tolerance; without AVX2 both use std::exp.
  const bool eager_is_native = HostHasAvx2();
  const double exp_tol = (backend == FusedBackend::kInterpreter) == eager_is_native
                             ? kFusedExpRelTol<T> : 0;
  const double log_tol = (backend == FusedBackend::kInterpreter) == eager_is_native
                             ? kFusedLogRelTol<T> : 0;
  // Two tanh values multiplied: their errors add.
  const double tanh_tol = (backend == FusedBackend::kInterpreter) == eager_is_native
                              ? 2.5 * kFusedTanhRelTol<T> : 0;
  const double erf_tol = (backend == FusedBackend::kInterpreter) == eager_is_native
                             ? 2.5 * kFusedErfRelTol<T> : 0;
  for (int64_t n : {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1003}) {
    Shape s = {n};
    std::vector<Tensor> four = {Random<T>(s, rng), Random<T>(s, rng), Random<T>(s, rng),
                                Random<T>(s, rng)};
    ExpectMatchesEager<T>(kChain, four, s, backend, 0);
    ExpectMatchesEager<T>(kAllOps, {four[0], four[1]}, s, backend, 0);
    ExpectMatchesEager<T>(kWithExp, {four[0], four[1]}, s, backend, exp_tol);
    ExpectMatchesEager<T>(kWithLog, {four[0], four[1]}, s, backend, log_tol);
    ExpectMatchesEager<T>(kWithTanh, {four[0], four[1]}, s, backend, tanh_tol);
    ExpectMatchesEager<T>(kWithErf, {four[0], four[1]}, s, backend, erf_tol);
    ExpectMatchesEager<T>(kSelect, {four[0], four[1], four[2]}, s, backend, 0);
    ExpectMatchesEager<T>(kMinMax, {four[0], four[1], four[2]}, s, backend, 0);
    ExpectMatchesEager<T>(kRoots, {four[0], four[1]}, s, backend, 0);
    // Equal elements: equal/not_equal/less_equal take their other branch.
    ExpectMatchesEager<T>(kSelect, {four[0], four[0], four[2]}, s, backend, 0);
    ExpectMatchesEager<T>(kMinMax, {four[1], four[1], four[1]}, s, backend, 0);
  }
}

TEST(FusedKernelTest, Float32MatchesEagerForManySizes) { RunShapes<float>(FusedBackend::kAuto); }
TEST(FusedKernelTest, Float64MatchesEagerForManySizes) { RunShapes<double>(FusedBackend::kAuto); }
// AVX2 code on a host that would choose AVX-512 (the same results either way).
TEST(FusedKernelTest, Avx2Float32MatchesEager) { RunShapes<float>(FusedBackend::kAvx2); }
TEST(FusedKernelTest, Avx2Float64MatchesEager) { RunShapes<double>(FusedBackend::kAvx2); }
TEST(FusedKernelTest, InterpreterFloat32MatchesEagerExactly) {
  RunShapes<float>(FusedBackend::kInterpreter);
}
TEST(FusedKernelTest, InterpreterFloat64MatchesEagerExactly) {
  RunShapes<double>(FusedBackend::kInterpreter);
}

template <typename T>
void RunBroadcasts(FusedBackend backend) {
  std::mt19937 rng(11);
  const Shape out = {5, 13};
  // full, row vector (inner stride 1), column (inner stride 0), scalar, 1-d row
  std::vector<Tensor> ins = {Random<T>(out, rng), Random<T>({1, 13}, rng),
                             Random<T>({5, 1}, rng), Random<T>({}, rng)};
  ExpectMatchesEager<T>(kChain, ins, out, backend, 0);
  ExpectMatchesEager<T>(kChain, {ins[2], ins[1], ins[3], Random<T>({13}, rng)}, out, backend, 0);
  // Every input broadcast: the result is still the full shape.
  ExpectMatchesEager<T>("add($0, $1); mul(#0, $0)", {ins[1], ins[2]}, out, backend, 0);
  // A transposed (non-contiguous) input is gathered tile by tile.
  auto tr = Transpose(Random<T>({13, 5}, rng), {});
  ASSERT_TRUE(tr.ok());
  ExpectMatchesEager<T>("sub($0, $1); neg(#0)", {*tr, ins[0]}, out, backend, 0);
  // Size-1 inner axis with a strided outer axis.
  Tensor base = Random<T>({5, 2}, rng);
  Tensor col = Tensor::View(base.storage(), base.dtype(), {5, 1}, {2, 1}, 1);
  ExpectMatchesEager<T>("mul($0, $1)", {col, Random<T>({5, 1}, rng)}, {5, 1}, backend, 0);
  // Masks and min/max over broadcast inputs.
  ExpectMatchesEager<T>(kSelect, {ins[0], ins[1], ins[2]}, out, backend, 0);
  ExpectMatchesEager<T>(kSelect, {ins[2], ins[3], ins[1]}, out, backend, 0);
  ExpectMatchesEager<T>(kMinMax, {ins[3], ins[2], ins[1]}, out, backend, 0);
  // Empty tensors.
  ExpectMatchesEager<T>("add($0, $1)", {Random<T>({0, 3}, rng), Random<T>({3}, rng)}, {0, 3},
                        backend, 0);
}

// Inputs whose innermost stride is neither 0 nor 1, over shapes that leave partial tiles of
// rows and of columns, mixed with contiguous and broadcast inputs.
template <typename T>
void RunStrided(FusedBackend backend) {
  std::mt19937 rng(13);
  for (Shape s : {Shape{3, 7}, Shape{17, 5}, Shape{33, 300}, Shape{16, 256}, Shape{2, 600}}) {
    auto a = Transpose(Random<T>({s[1], s[0]}, rng), {});
    auto b = Transpose(Random<T>({s[1], s[0]}, rng), {});
    ASSERT_TRUE(a.ok() && b.ok());
    ExpectMatchesEager<T>(kChain, {*a, Random<T>(s, rng), *b, Random<T>({s[0], 1}, rng)}, s,
                          backend, 0);
    ExpectMatchesEager<T>(kSelect, {Random<T>({s[1]}, rng), *a, *b}, s, backend, 0);
  }
  // Every other element of a long vector (one row of many column tiles).
  Tensor wide = Random<T>({2 * 9000 + 1}, rng);
  Tensor every_other = Tensor::View(wide.storage(), wide.dtype(), {9000}, {2}, 1);
  ExpectMatchesEager<T>("mul($0, $1); add(#0, $0)", {every_other, Random<T>({9000}, rng)},
                        {9000}, backend, 0);
  // A 3-d permutation whose middle axes coalesce for the contiguous input only.
  auto p3 = Transpose(Random<T>({6, 4, 5}, rng), {2, 0, 1});
  ASSERT_TRUE(p3.ok());
  ExpectMatchesEager<T>("sub($0, $1); relu(#0)", {*p3, Random<T>({5, 6, 4}, rng)}, {5, 6, 4},
                        backend, 0);
  // Broadcast of a strided input along new leading axes.
  ExpectMatchesEager<T>("add($0, $1)", {*p3, Random<T>({3, 5, 6, 4}, rng)}, {3, 5, 6, 4},
                        backend, 0);
}

TEST(FusedKernelTest, StridedInputsFloat32) { RunStrided<float>(FusedBackend::kAuto); }
TEST(FusedKernelTest, StridedInputsFloat64) { RunStrided<double>(FusedBackend::kAuto); }
TEST(FusedKernelTest, StridedInputsAvx2) {
  RunStrided<float>(FusedBackend::kAvx2);
  RunStrided<double>(FusedBackend::kAvx2);
}
TEST(FusedKernelTest, StridedInputsInterpreter) {
  RunStrided<float>(FusedBackend::kInterpreter);
  RunStrided<double>(FusedBackend::kInterpreter);
}

// Strided inputs cost no tensor storage: a run allocates its result only.
TEST(FusedKernelTest, StridedInputsAllocateOnlyTheResult) {
  std::mt19937 rng(17);
  const Shape s = {40, 300};
  auto a = Transpose(Random<float>({300, 40}, rng), {});
  ASSERT_TRUE(a.ok());
  Tensor b = Random<float>(s, rng);
  auto p = FusedProgram::Parse("mul($0, 0.9); add(#0, $1)", DType::kFloat32, 2);
  ASSERT_TRUE(p.ok());
  auto k = FusedKernel::Create(*p, {a->shape(), b.shape()}, s, FusedBackend::kAuto);
  ASSERT_TRUE(k.ok());
  std::vector<const Tensor*> ins = {&*a, &b};
  ASSERT_TRUE((*k)->Run(ins, s).ok());  // the first run may size the per-thread buffer
  const uint64_t before = StorageAllocations();
  auto got = (*k)->Run(ins, s);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(StorageAllocations() - before, 1u);
}

TEST(FusedKernelTest, BroadcastInputsFloat32) { RunBroadcasts<float>(FusedBackend::kAuto); }
TEST(FusedKernelTest, BroadcastInputsFloat64) { RunBroadcasts<double>(FusedBackend::kAuto); }
TEST(FusedKernelTest, BroadcastInputsAvx2) {
  RunBroadcasts<float>(FusedBackend::kAvx2);
  RunBroadcasts<double>(FusedBackend::kAvx2);
}
TEST(FusedKernelTest, BroadcastInputsInterpreter) {
  RunBroadcasts<float>(FusedBackend::kInterpreter);
  RunBroadcasts<double>(FusedBackend::kInterpreter);
}

TEST(FusedKernelTest, SpecialValuesMatchEagerExactly) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Four copies of nine special values: 36 elements, so that they reach the vector loop of
  // every instruction set (16 float lanes with AVX-512) as well as its tail.
  const int64_t n = 36;
  Tensor a = Tensor::Empty({n}, DType::kFloat32), b = Tensor::Empty({n}, DType::kFloat32);
  const float av[] = {-0.0f, 0.0f, inf, -inf, nan, 1.0f, -1.0f, 1e-40f, -3.0f};
  const float bv[] = {0.0f, -0.0f, inf, 2.0f, 1.0f, 0.0f, -0.0f, 3.0f, nan};
  for (int64_t i = 0; i < n; ++i) {
    a.data<float>()[i] = av[(i + i / 9) % 9];  // shifted per copy: other pairings too
    b.data<float>()[i] = bv[i % 9];
  }
  for (auto backend : {FusedBackend::kAuto, FusedBackend::kAvx2, FusedBackend::kInterpreter}) {
    ExpectMatchesEager<float>("relu($0); add(#0, $1); div(#1, $1); neg(#2); relu($1); "
                              "sub(#3, #4)", {a, b}, {n}, backend, 0);
    // NaN operands of maximum/minimum give NaN; ties (-0 vs 0) give the second operand; NaN
    // compares false except by not_equal.
    ExpectMatchesEager<float>("maximum($0, $1); minimum($0, $1); maximum($1, $0); "
                              "minimum($1, $0); sub(#0, #1); sub(#2, #3); add(#4, #5)",
                              {a, b}, {n}, backend, 0);
    ExpectMatchesEager<float>("maximum($0, $1); minimum($1, $0); equal($0, $1); "
                              "where(#2, #0, #1); not_equal($0, $1); where(#4, #3, -7); "
                              "greater($0, $1); where(#6, #5, 3); less_equal($1, $0); "
                              "where(#8, #7, 5); greater_equal($0, #9); where(#10, #9, $0); "
                              "less(#11, $1); where(#12, #11, 9)",
                              {a, b}, {n}, backend, 0);
    // log: -inf at +-0, NaN below 0 and at NaN, inf at inf, subnormal 1e-40 finite.
    ExpectMatchesEager<float>("log($0); log($1); sub(#0, #1)", {a, b}, {n}, backend,
                              backend == FusedBackend::kInterpreter ? kFusedLogRelTol<float> : 0);
    // tanh: +-0 keep their sign, +-inf give +-1, NaN stays NaN.
    ExpectMatchesEager<float>("tanh($0); tanh($1); mul(#0, #1)", {a, b}, {n}, backend,
                              backend == FusedBackend::kInterpreter ? 2.5 * kFusedTanhRelTol<float> : 0);
    // erf: +-0 keep their sign, +-inf give +-1, NaN stays NaN.
    ExpectMatchesEager<float>("erf($0); erf($1); mul(#0, #1)", {a, b}, {n}, backend,
                              backend == FusedBackend::kInterpreter ? 2.5 * kFusedErfRelTol<float> : 0);
    // sqrt(-0.0) is -0.0, of a negative number NaN, of inf inf; rsqrt(+-0.0) is +-inf.
    ExpectMatchesEager<float>("sqrt($0); rsqrt($0); rsqrt($1); sub(#1, #2); mul(#0, #3)",
                              {a, b}, {n}, backend, 0);
  }
}

// The generated exp against std::exp over the whole float range, subnormal results included.
template <typename T>
void CheckExpAccuracy(double lo, double hi) {
  if (!HostHasAvx2()) GTEST_SKIP() << "no AVX2: exp is std::exp";
  const int64_t n = 200003;
  Tensor x = Tensor::Empty({n + 5}, DTypeOf<T>::value);
  for (int64_t i = 0; i < n; ++i) x.data<T>()[i] = static_cast<T>(lo + (hi - lo) * i / (n - 1));
  const T specials[] = {std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(),
                        std::numeric_limits<T>::quiet_NaN(), T(0), -T(0)};
  for (int i = 0; i < 5; ++i) x.data<T>()[n + i] = specials[i];
  auto p = FusedProgram::Parse("exp($0); add(#0, -0)", DTypeOf<T>::value, 1);
  ASSERT_TRUE(p.ok());
  auto k = FusedKernel::Create(*p, {x.shape()}, x.shape());
  ASSERT_TRUE(k.ok());
  ASSERT_TRUE((*k)->native());
  const Tensor* args[] = {&x};
  auto got = (*k)->Run(args, x.shape());
  ASSERT_TRUE(got.ok());
  double worst = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    T want = std::exp(x.data<T>()[i]), have = got->template data<T>()[i];
    if (std::isnan(want) || std::isinf(want)) {
      EXPECT_TRUE(std::isnan(want) ? std::isnan(have) : have == want) << x.data<T>()[i];
      continue;
    }
    double err = std::abs(double(have) - double(want));
    if (want >= std::numeric_limits<T>::min()) {
      worst = std::max(worst, err / want);
    } else {
      EXPECT_LE(err, kFusedExpRelTol<T> * std::numeric_limits<T>::min()) << x.data<T>()[i];
    }
  }
  EXPECT_LE(worst, kFusedExpRelTol<T>);
  std::printf("max relative error of fused exp (%s): %.3g\n", DTypeName(DTypeOf<T>::value), worst);
}

// The largest relative error of the generated `op` (program "op($0); add(#0, -0)", on
// `backend`'s code) over `xs` against the same function in wider precision L. Where std's own
// result in T is NaN, infinite or zero, the generated one must be the same (sign included);
// subnormal results must be within one subnormal step.
template <typename T, typename L>
double MaxRelError(const char* op, const std::vector<T>& xs, FusedBackend backend,
                   T (*in_t)(T), L (*in_l)(L)) {
  Tensor x = Tensor::Empty({static_cast<int64_t>(xs.size())}, DTypeOf<T>::value);
  std::copy(xs.begin(), xs.end(), x.data<T>());
  auto p = FusedProgram::Parse(absl::StrCat(op, "($0); add(#0, -0)"), DTypeOf<T>::value, 1);
  EXPECT_TRUE(p.ok());
  auto k = FusedKernel::Create(*p, {x.shape()}, x.shape(), backend);
  EXPECT_TRUE(k.ok() && (*k)->native());
  const Tensor* args[] = {&x};
  auto got = (*k)->Run(args, x.shape());
  EXPECT_TRUE(got.ok());
  if (!got.ok()) return 1;
  double worst = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const T v = x.data<T>()[i], have = got->template data<T>()[i], want = in_t(v);
    if (std::isnan(want) || std::isinf(want) || want == 0) {
      EXPECT_TRUE(std::isnan(want) ? std::isnan(have)
                                   : have == want && std::signbit(have) == std::signbit(want))
          << op << "(" << v << ") gives " << have << ", std gives " << want;
      continue;
    }
    const L exact = in_l(static_cast<L>(v));
    if (std::abs(exact) < std::numeric_limits<T>::min()) {
      EXPECT_LE(std::abs(static_cast<L>(have) - exact), std::numeric_limits<T>::denorm_min()) << v;
      continue;
    }
    worst = std::max(worst, static_cast<double>(std::abs((static_cast<L>(have) - exact) / exact)));
  }
  std::printf("max relative error of fused %s (%s): %.3g\n", op, DTypeName(DTypeOf<T>::value),
              worst);
  return worst;
}

// Wider precision for T: double for float, long double for double.
template <typename T>
using Wider = std::conditional_t<std::is_same_v<T, float>, double, long double>;

template <typename T>
std::vector<T> SpecialValues() {
  const T inf = std::numeric_limits<T>::infinity();
  return {T(0), -T(0), inf, -inf, std::numeric_limits<T>::quiet_NaN(), T(-1),
          std::numeric_limits<T>::denorm_min(), -std::numeric_limits<T>::min(),
          std::numeric_limits<T>::min(), std::numeric_limits<T>::max()};
}

// `count` values evenly spaced over [lo, hi], then the ulp-neighbourhoods of `edges`.
template <typename T>
std::vector<T> Sweep(double lo, double hi, std::initializer_list<T> edges) {
  std::vector<T> xs;
  const int64_t n = 200003;
  for (int64_t i = 0; i < n; ++i) xs.push_back(static_cast<T>(lo + (hi - lo) * i / (n - 1)));
  for (T edge : edges) {
    T v = edge;
    for (int k = 0; k < 32; ++k) v = std::nextafter(v, T(0));
    for (int k = 0; k < 64; ++k, v = std::nextafter(v, std::numeric_limits<T>::max()))
      xs.push_back(v);
  }
  for (T v : SpecialValues<T>()) xs.push_back(v);
  return xs;
}

// log: log-spaced inputs over the whole positive range (subnormals included), inputs next to
// 1, and the special values (log(+-0) = -inf, NaN below 0).
template <typename T>
void CheckLogAccuracy(FusedBackend backend) {
  if (!HostHasAvx2()) GTEST_SKIP() << "no AVX2: log is std::log";
  using L = Wider<T>;
  const L llo = std::log(static_cast<L>(std::numeric_limits<T>::denorm_min()));
  const L lhi = std::log(static_cast<L>(std::numeric_limits<T>::max()));
  std::vector<T> xs;
  const int64_t n = 200003;
  for (int64_t i = 0; i < n; ++i) xs.push_back(static_cast<T>(std::exp(llo + (lhi - llo) * i / (n - 1))));
  for (int64_t i = -2000; i <= 2000; ++i) xs.push_back(T(1) + T(i) * std::numeric_limits<T>::epsilon());
  for (T v : SpecialValues<T>()) xs.push_back(v);
  const double worst = MaxRelError<T, L>("log", xs, backend, std::log, std::log);
  EXPECT_LE(worst, kFusedLogRelTol<T>);
}

// tanh and erf: evenly spaced inputs, tiny ones of both signs down to the subnormals, both
// sides of the series' bounds (and of float64 erf's Pade split), and the special values.
template <typename T>
std::vector<T> OddFunctionInputs(double range, std::initializer_list<T> edges) {
  std::vector<T> xs = Sweep<T>(-range, range, edges);
  for (int i = 0; i < 2000; ++i) {
    const T v = static_cast<T>(std::exp(-0.05 * i) * 0.8);
    xs.push_back(v);
    xs.push_back(-v);
  }
  return xs;
}

template <typename T>
void CheckTanhAccuracy(FusedBackend backend) {
  if (!HostHasAvx2()) GTEST_SKIP() << "no AVX2: tanh is std::tanh";
  const double worst = MaxRelError<T, Wider<T>>("tanh", OddFunctionInputs<T>(25, {T(0.55)}),
                                                backend, std::tanh, std::tanh);
  EXPECT_LE(worst, kFusedTanhRelTol<T>);
}

template <typename T>
void CheckErfAccuracy(FusedBackend backend) {
  if (!HostHasAvx2()) GTEST_SKIP() << "no AVX2: erf is std::erf";
  const double worst = MaxRelError<T, Wider<T>>(
      "erf", OddFunctionInputs<T>(7, {T(0.75), T(2.5)}), backend, std::erf, std::erf);
  EXPECT_LE(worst, kFusedErfRelTol<T>);
}

template <typename T>
T SigmoidOf(T x) {
  return x >= T(0) ? T(1) / (T(1) + std::exp(-x)) : std::exp(x) / (T(1) + std::exp(x));
}

// Both branches, the switch at 0 and NaN; results stay normal numbers (below about -87 in
// float32 they are subnormal, where the generated exp is held to an absolute bound).
template <typename T>
void CheckSigmoidAccuracy(FusedBackend backend) {
  if (!HostHasAvx2()) GTEST_SKIP() << "no AVX2: sigmoid is the interpreter's";
  const double range = std::is_same_v<T, float> ? 80 : 700;
  const double worst = MaxRelError<T, Wider<T>>("sigmoid", OddFunctionInputs<T>(range, {T(0)}),
                                                backend, SigmoidOf<T>, SigmoidOf<Wider<T>>);
  EXPECT_LE(worst, kFusedSigmoidRelTol<T>);
}

TEST(FusedKernelTest, SigmoidWithinDocumentedTolerance) {
  CheckSigmoidAccuracy<float>(FusedBackend::kAuto);
  CheckSigmoidAccuracy<float>(FusedBackend::kAvx2);
  CheckSigmoidAccuracy<double>(FusedBackend::kAuto);
  CheckSigmoidAccuracy<double>(FusedBackend::kAvx2);
}

TEST(FusedKernelTest, LogFloat32WithinDocumentedTolerance) {
  CheckLogAccuracy<float>(FusedBackend::kAuto);
  CheckLogAccuracy<float>(FusedBackend::kAvx2);
}
TEST(FusedKernelTest, LogFloat64WithinDocumentedTolerance) {
  CheckLogAccuracy<double>(FusedBackend::kAuto);
  CheckLogAccuracy<double>(FusedBackend::kAvx2);
}
TEST(FusedKernelTest, TanhFloat32WithinDocumentedTolerance) {
  CheckTanhAccuracy<float>(FusedBackend::kAuto);
  CheckTanhAccuracy<float>(FusedBackend::kAvx2);
}
TEST(FusedKernelTest, TanhFloat64WithinDocumentedTolerance) {
  CheckTanhAccuracy<double>(FusedBackend::kAuto);
  CheckTanhAccuracy<double>(FusedBackend::kAvx2);
}
TEST(FusedKernelTest, ErfFloat32WithinDocumentedTolerance) {
  CheckErfAccuracy<float>(FusedBackend::kAuto);
  CheckErfAccuracy<float>(FusedBackend::kAvx2);
}
TEST(FusedKernelTest, ErfFloat64WithinDocumentedTolerance) {
  CheckErfAccuracy<double>(FusedBackend::kAuto);
  CheckErfAccuracy<double>(FusedBackend::kAvx2);
}

TEST(FusedKernelTest, ExpFloat32WithinDocumentedTolerance) { CheckExpAccuracy<float>(-110, 95); }
TEST(FusedKernelTest, ExpFloat64WithinDocumentedTolerance) { CheckExpAccuracy<double>(-750, 712); }

TEST(FusedProgramTest, TextRoundTrips) {
  auto p = FusedProgram::Parse(kChain, DType::kFloat32, 4);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->ToText(), kChain);
  p = FusedProgram::Parse(kSelect, DType::kFloat64, 3);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->ToText(), kSelect);
}

TEST(FusedProgramTest, RejectsBadPrograms) {
  EXPECT_EQ(FusedProgram::Parse("add($0, #1)", DType::kFloat32, 1).status().message(),
            "fused program: #0 reads #1, which is not before it");
  EXPECT_EQ(FusedProgram::Parse("add($0, $1)", DType::kFloat32, 3).status().message(),
            "fused program: $2 is unused");
  EXPECT_EQ(FusedProgram::Parse("sin($0)", DType::kFloat32, 1).status().message(),
            "fused program, instruction #0 'sin($0)': unknown opcode");
  EXPECT_EQ(FusedProgram::Parse("greater($0, 0); add(#0, $0)", DType::kFloat32, 1)
                .status().message(),
            "fused program: #1 operand 0 reads a comparison's mask");
  EXPECT_EQ(FusedProgram::Parse("where($0, $0, 0)", DType::kFloat32, 1).status().message(),
            "fused program: #0 operand 0 must be a comparison's result");
  EXPECT_EQ(FusedProgram::Parse("neg($0); less(#0, 1)", DType::kFloat32, 1).status().message(),
            "fused program: the result is a mask");
  EXPECT_EQ(FusedProgram::Parse("add($0, 0.1)", DType::kInt32, 1).status().message(),
            "fused program: dtype Int32 is not float32 or float64");
}

}  // namespace
}  // namespace pijit
