// Fused reductions (kernels/fused_reduce.h) against reducing the materialised program result
// with the eager Reduce: bit-identical on every path the tests can force (generated AVX2 code,
// the host's code, the interpreter; scalar, AVX2 and AVX-512 reduction leaves), for lengths
// around the chunk and parallel boundaries, special values, row and column reductions and the
// fallback layouts.
#include "kernels/fused_reduce.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/cpu/reduce_vec.h"

namespace pijit {
namespace {

using rvec::kChunk;
using rvec::kParallelMin;

constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin};
constexpr FusedBackend kBackends[] = {FusedBackend::kAuto, FusedBackend::kAvx2,
                                      FusedBackend::kInterpreter};

// rvec's leaves on a forced instruction set: 0 the host's choice, 1 scalar, 2 AVX2,
// 3 AVX-512 (a set the host lacks leaves the host's choice).
constexpr int kLeafIsas[] = {0, 1, 2, 3};
struct LeafIsa {
  explicit LeafIsa(int isa) { rvec::ForceIsaForTesting(isa); }
  ~LeafIsa() { rvec::ForceIsaForTesting(0); }
};

// Mostly values in [-3, 3]; with `special`, also NaN, +-inf, -0.0 and 0.0 now and then.
template <typename T>
Tensor Random(absl::Span<const int64_t> shape, std::mt19937& rng, bool special = false) {
  Tensor t = Tensor::Empty(shape, DTypeOf<T>::value);
  std::uniform_real_distribution<double> u(-3, 3);
  std::uniform_int_distribution<int> pick(0, 999);
  const T kSpecial[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(), T(-0.0), T(0.0)};
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int p = pick(rng);
    t.data<T>()[i] = special && p < 5 ? kSpecial[p] : static_cast<T>(u(rng));
  }
  return t;
}

std::shared_ptr<const FusedKernel> Kernel(const char* text, DType dtype, int num_inputs,
                                          FusedBackend backend) {
  auto p = FusedProgram::Parse(text, dtype, num_inputs);
  EXPECT_TRUE(p.ok()) << p.status();
  auto k = FusedKernel::Create(*p, {}, {}, backend);
  EXPECT_TRUE(k.ok()) << k.status();
  return *k;
}

// Bitwise equality of two tensors of one meta.
void ExpectIdentical(const Tensor& want, const Tensor& got, const std::string& what) {
  ASSERT_TRUE(MetaOf(want) == MetaOf(got)) << what;
  Tensor a = want.Contiguous(), b = got.Contiguous();
  const size_t item = a.itemsize();
  for (int64_t i = 0; i < a.numel(); ++i) {
    const char* x = static_cast<const char*>(a.raw_data()) + i * item;
    const char* y = static_cast<const char*>(b.raw_data()) + i * item;
    if (std::memcmp(x, y, item) == 0) continue;
    const double vx = item == 4 ? *reinterpret_cast<const float*>(x) : *reinterpret_cast<const double*>(x);
    const double vy = item == 4 ? *reinterpret_cast<const float*>(y) : *reinterpret_cast<const double*>(y);
    ADD_FAILURE() << what << ": element " << i << " is " << vy << ", materialised gives " << vx;
    return;
  }
}

// FusedReduce against Reduce(Run(...)) for every op; `shape` is the inputs' broadcast shape.
void ExpectMatchesMaterialised(const FusedKernel& k, const std::vector<Tensor>& in,
                               const Shape& shape, const Shape& axes, bool keepdims,
                               const std::string& what) {
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : in) ptrs.push_back(&t);
  auto full = k.Run(ptrs, shape);
  ASSERT_TRUE(full.ok()) << full.status();
  for (ReduceOp op : kOps) {
    const std::string name = what + " " + ReduceOpName(op) + " axes=" + ShapeToString(axes) +
                             (keepdims ? " keepdims" : "");
    auto want = Reduce(op, *full, axes, keepdims, 0);
    auto got = FusedReduce(k, op, ptrs, shape, axes, keepdims);
    ASSERT_EQ(want.ok(), got.ok()) << name << ": " << want.status() << " / " << got.status();
    if (!want.ok()) continue;  // max/min of nothing: an error either way
    ExpectIdentical(*want, *got, name);
  }
}

const std::vector<int64_t> kLengths = {
    0, 1, 2, 7, 15, 16, 17, 31, 33, 255, 256, 257, 1000, kChunk - 1, kChunk, kChunk + 1,
    3 * kChunk + 5, kParallelMin - 1, kParallelMin, kParallelMin + kChunk + 7};

// (a - b) * (a - b) * s for full a, b and a single-element s: an MSE-like chain.
template <typename T>
void FullReductions(FusedBackend backend, int leaf_isa, bool special) {
  LeafIsa leaves(leaf_isa);
  const DType dt = DTypeOf<T>::value;
  auto k = Kernel("sub($0, $1); mul(#0, #0); mul(#1, $2)", dt, 3, backend);
  std::mt19937 rng(7);
  for (int64_t n : kLengths) {
    std::vector<Tensor> in = {Random<T>({n}, rng, special), Random<T>({n}, rng, special),
                              Random<T>({1}, rng)};
    const std::string what = absl::StrCat("n=", n, " leaf isa ", leaf_isa, special ? " special" : "");
    ExpectMatchesMaterialised(*k, in, {n}, {}, false, what);
    ExpectMatchesMaterialised(*k, in, {n}, {0}, true, what);
  }
}

TEST(FusedReduceTest, FullReductionsMatchMaterialisedOnEveryPath) {
  for (FusedBackend backend : kBackends) {
    for (int isa : kLeafIsas) {
      FullReductions<float>(backend, isa, false);
      FullReductions<double>(backend, isa, false);
    }
  }
}

TEST(FusedReduceTest, SpecialValuesMatchMaterialised) {
  for (FusedBackend backend : kBackends) {
    for (int isa : kLeafIsas) {
      FullReductions<float>(backend, isa, true);
      FullReductions<double>(backend, isa, true);
    }
  }
}

// Zeros of both signs only: which zero max/min return depends on the chunk structure, which
// the fused kernel must reproduce (serial and parallel alike).
template <typename T>
void SignedZeros(FusedBackend backend) {
  auto k = Kernel("mul($0, $1)", DTypeOf<T>::value, 2, backend);
  std::mt19937 rng(11);
  for (int64_t n : {int64_t{40}, kChunk + 3, 2 * kChunk, kParallelMin + 9}) {
    Tensor a = Tensor::Empty({n}, DTypeOf<T>::value);
    for (int64_t i = 0; i < n; ++i) a.data<T>()[i] = rng() & 1 ? T(-0.0) : T(0.0);
    Tensor one = Tensor::Empty({1}, DTypeOf<T>::value);
    one.data<T>()[0] = T(1);
    ExpectMatchesMaterialised(*k, {a, one}, {n}, {}, false, absl::StrCat("zeros n=", n));
  }
}

TEST(FusedReduceTest, SignedZerosMatchMaterialised) {
  for (FusedBackend backend : kBackends) {
    for (int isa : kLeafIsas) {
      LeafIsa leaves(isa);
      SignedZeros<float>(backend);
      SignedZeros<double>(backend);
    }
  }
}

// exp in generated code is an approximation, but the same one materialised or not.
TEST(FusedReduceTest, ExpProgramsMatchMaterialised) {
  std::mt19937 rng(5);
  for (FusedBackend backend : kBackends) {
    auto kf = Kernel("sub($0, $1); exp(#0)", DType::kFloat32, 2, backend);
    auto kd = Kernel("sub($0, $1); exp(#0)", DType::kFloat64, 2, backend);
    for (int64_t n : {int64_t{1}, int64_t{37}, kChunk + 1, kParallelMin + 3}) {
      ExpectMatchesMaterialised(*kf, {Random<float>({n}, rng), Random<float>({}, rng)}, {n}, {},
                                false, absl::StrCat("exp f32 n=", n));
      ExpectMatchesMaterialised(*kd, {Random<double>({n}, rng), Random<double>({}, rng)}, {n},
                                {}, false, absl::StrCat("exp f64 n=", n));
    }
  }
}

// Trailing axes: each row reduced as the eager row path reduces it (few long rows split into
// chunks, many short rows spread over threads).
template <typename T>
void RowReductions(FusedBackend backend) {
  auto k = Kernel("sub($0, $1); mul(#0, #0); add(#1, $2)", DTypeOf<T>::value, 3, backend);
  std::mt19937 rng(9);
  const std::vector<Shape> shapes = {{3, 1}, {2, 17}, {5, kChunk + 3}, {1, kParallelMin + 1},
                                     {300, 33}, {64, 2500}, {2, 3, 40}, {4, 0}, {0, 5}};
  for (const Shape& s : shapes) {
    std::vector<Tensor> in = {Random<T>(s, rng, true), Random<T>(s, rng), Random<T>({}, rng)};
    const std::string what = absl::StrCat("shape=", ShapeToString(s));
    ExpectMatchesMaterialised(*k, in, s, {-1}, false, what);
    ExpectMatchesMaterialised(*k, in, s, {static_cast<int64_t>(s.size()) - 1}, true, what);
    if (s.size() == 3) ExpectMatchesMaterialised(*k, in, s, {1, 2}, false, what);
  }
}

TEST(FusedReduceTest, RowReductionsMatchMaterialised) {
  for (FusedBackend backend : kBackends) {
    RowReductions<float>(backend);
    RowReductions<double>(backend);
  }
}

// Leading and middle axes: the eager column schedule (whole-row chunks for short rows, blocks
// of columns otherwise), with rows computed a buffer at a time.
template <typename T>
void ColumnReductions(FusedBackend backend) {
  auto k = Kernel("sub($0, $1); mul(#0, #0); add(#1, $2)", DTypeOf<T>::value, 3, backend);
  std::mt19937 rng(19);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{8000, 37}, {0}},        // short rows, many of them: chunks of whole rows
      {{300, 600}, {0}},        // blocks of 256 columns, rows fetched 128 at a time
      {{40, 5000}, {0}},        // rows longer than kRowChunkCols, a partial last block
      {{2, 140000, 2}, {1}},    // a middle axis, outer 2, whole-row chunks
      {{6, 50, 4}, {1}},        // a middle axis, blocks
      {{5, 7, 9}, {0, 1}},      // two leading axes
      {{1, 9, 1, 300}, {0, 1}},  // size-1 axes on both sides
      {{0, 5}, {0}}, {{5, 0}, {0}}};
  for (const auto& [s, axes] : cases) {
    std::vector<Tensor> in = {Random<T>(s, rng, true), Random<T>(s, rng), Random<T>({}, rng)};
    const std::string what = absl::StrCat("shape=", ShapeToString(s));
    ExpectMatchesMaterialised(*k, in, s, axes, false, what);
    ExpectMatchesMaterialised(*k, in, s, axes, true, what);
  }
}

TEST(FusedReduceTest, ColumnReductionsMatchMaterialised) {
  for (FusedBackend backend : kBackends) {
    for (int isa : {0, 1}) {
      LeafIsa leaves(isa);
      ColumnReductions<float>(backend);
      ColumnReductions<double>(backend);
    }
  }
}

// Layouts the kernel cannot read directly materialise the program first: the same results.
template <typename T>
void Fallbacks(FusedBackend backend) {
  auto k = Kernel("mul($0, $1); add(#0, $0)", DTypeOf<T>::value, 2, backend);
  std::mt19937 rng(13);
  Tensor a = Random<T>({40, 300}, rng, true);
  Tensor row = Random<T>({1, 300}, rng);  // broadcast along axis 0
  Tensor col = Random<T>({40, 1}, rng);   // broadcast along axis 1
  auto t = Transpose(Random<T>({300, 40}, rng), {1, 0});  // a strided view
  ASSERT_TRUE(t.ok());
  for (const Shape& axes : {Shape{}, Shape{-1}, Shape{0}, Shape{1, 0}}) {
    ExpectMatchesMaterialised(*k, {a, row}, {40, 300}, axes, false, "broadcast row");
    ExpectMatchesMaterialised(*k, {col, a}, {40, 300}, axes, false, "broadcast column");
    ExpectMatchesMaterialised(*k, {*t, a}, {40, 300}, axes, true, "transposed");
    ExpectMatchesMaterialised(*k, {a, a}, {40, 300}, axes, false, "contiguous");
  }
  // A leading broadcast axis: [3] against [2, 3].
  ExpectMatchesMaterialised(*k, {Random<T>({3}, rng), Random<T>({2, 3}, rng)}, {2, 3}, {}, false,
                            "leading broadcast");
}

TEST(FusedReduceTest, FallbackLayoutsMatchMaterialised) {
  for (FusedBackend backend : kBackends) {
    Fallbacks<float>(backend);
    Fallbacks<double>(backend);
  }
}

TEST(FusedReduceTest, BadInputIsAnErrorNotACrash) {
  auto k = Kernel("mul($0, $1)", DType::kFloat32, 2, FusedBackend::kAuto);
  std::mt19937 rng(1);
  Tensor a = Random<float>({4}, rng), b = Random<float>({3}, rng);
  Tensor d = Tensor::Empty({4}, DType::kFloat64);
  Tensor e = Tensor::Empty({0}, DType::kFloat32);
  const Tensor* ab[] = {&a, &b};
  const Tensor* aa[] = {&a, &a};
  const Tensor* ad[] = {&a, &d};
  const Tensor* ee[] = {&e, &e};
  EXPECT_FALSE(FusedReduce(*k, ReduceOp::kSum, ab, {4}, {}, false).ok());  // shapes
  EXPECT_FALSE(FusedReduce(*k, ReduceOp::kSum, ad, {4}, {}, false).ok());  // dtype
  EXPECT_FALSE(FusedReduce(*k, ReduceOp::kSum, {&a}, {4}, {}, false).ok());  // count
  EXPECT_FALSE(FusedReduce(*k, ReduceOp::kProd, aa, {4}, {}, false).ok());
  EXPECT_FALSE(FusedReduce(*k, ReduceOp::kSum, aa, {4}, {1}, false).ok());   // axis
  EXPECT_FALSE(FusedReduce(*k, ReduceOp::kMax, ee, {0}, {}, false).ok());    // empty max
  auto s = FusedReduce(*k, ReduceOp::kSum, ee, {0}, {}, false);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->data<float>()[0], 0.0f);
  auto m = FusedReduce(*k, ReduceOp::kMean, ee, {0}, {}, false);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(std::isnan(m->data<float>()[0]));
}

}  // namespace
}  // namespace pijit
