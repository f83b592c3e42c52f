// The float32/float64 elementwise kernels on every instruction set the host runs (AVX-512,
// AVX2 and the baseline loops, forced with isa_loops::ForceIsaForTesting): each result, bit
// for bit, against the operation computed here element by element, over lengths around the
// vector widths, broadcast and strided layouts, and NaNs, signed zeros, infinities and
// subnormals.
#include "kernels/cpu/isa_loops.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/ops.h"

namespace pijit {
namespace {

struct IsaScope {
  explicit IsaScope(int isa) { isa_loops::ForceIsaForTesting(isa); }
  ~IsaScope() { isa_loops::ForceIsaForTesting(0); }
};

// The instruction sets this host runs, the baseline first.
std::vector<int> HostIsas() {
  std::vector<int> isas;
  for (int isa = 1; isa <= 3; ++isa) {
    IsaScope scope(isa);
    if (isa_loops::ActiveIsa() == isa) isas.push_back(isa);
  }
  return isas;
}

TEST(IsaLoops, TheHostsVectorLoopsAreChosenAndCanBeForcedOff) {
  const int host = isa_loops::ActiveIsa();
#if defined(__x86_64__)
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  EXPECT_EQ(host, avx512 ? 3 : __builtin_cpu_supports("avx2") ? 2 : 1);
#endif
  EXPECT_EQ(HostIsas().back(), host);
  EXPECT_EQ(isa_loops::ArithmeticRun<float>(BinaryOp::kAdd) != nullptr, host >= 2);
  EXPECT_EQ(isa_loops::CompareRun<double>(BinaryOp::kLess) != nullptr, host >= 2);
  EXPECT_EQ(isa_loops::UnaryRun<float>(UnaryOp::kSqrt) != nullptr, host >= 2);
  EXPECT_EQ(isa_loops::ArithmeticRun<float>(BinaryOp::kPow), nullptr);
  EXPECT_EQ(isa_loops::UnaryRun<double>(UnaryOp::kExp), nullptr);
  IsaScope scope(1);
  EXPECT_EQ(isa_loops::ActiveIsa(), 1);
  EXPECT_EQ(isa_loops::ArithmeticRun<float>(BinaryOp::kAdd), nullptr);
}

template <typename T>
uint64_t Bits(T v) {
  if constexpr (sizeof(T) == 4) {
    uint32_t b;
    std::memcpy(&b, &v, sizeof b);
    return b;
  } else {
    uint64_t b;
    std::memcpy(&b, &v, sizeof b);
    return b;
  }
}

// n values: mostly normal ones, with NaN, zeros of both signs, infinities, subnormals, and
// (for comparisons) values equal to the other operand's. Every NaN is the same quiet NaN, so
// an operation on two NaNs has one right answer whichever operand the hardware propagates.
template <typename T>
std::vector<T> Values(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> normal(0.0, 4.0);
  std::vector<T> x(n);
  for (auto& v : x) {
    switch (gen() % 12) {
      case 0: v = std::numeric_limits<T>::quiet_NaN(); break;
      case 1: v = T(0); break;
      case 2: v = -T(0); break;
      case 3: v = (gen() % 2 ? 1 : -1) * std::numeric_limits<T>::infinity(); break;
      case 4: v = std::numeric_limits<T>::denorm_min() * T(gen() % 1000); break;
      case 5: v = T(1); break;  // equal across operands often enough to test ==
      default: v = static_cast<T>(normal(gen)); break;
    }
  }
  return x;
}

template <typename T>
Tensor FromValues(const std::vector<T>& v, Shape shape) {
  Tensor t = Tensor::Empty(shape, DTypeOf<T>::value);
  std::memcpy(t.data<T>(), v.data(), v.size() * sizeof(T));
  return t;
}

// The element at flat (row-major) index i of a view.
template <typename T>
T At(const Tensor& t, int64_t i) {
  int64_t off = 0;
  for (int64_t d = t.ndim() - 1; d >= 0; --d) {
    off += (i % t.shape()[d]) * t.strides()[d];
    i /= t.shape()[d];
  }
  return t.data<T>()[off];
}

const BinaryOp kArithmetic[] = {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul,
                                BinaryOp::kDiv, BinaryOp::kMaximum, BinaryOp::kMinimum};
const BinaryOp kCompare[] = {BinaryOp::kEqual, BinaryOp::kNotEqual, BinaryOp::kLess,
                             BinaryOp::kLessEqual, BinaryOp::kGreater, BinaryOp::kGreaterEqual};

// The operations as NumPy defines them on floats (maximum/minimum propagate NaN and, of two
// equal operands such as +0.0 and -0.0, give the second).
template <typename T>
T RefArithmetic(BinaryOp op, T x, T y) {
  switch (op) {
    case BinaryOp::kAdd: return x + y;
    case BinaryOp::kSub: return x - y;
    case BinaryOp::kMul: return x * y;
    case BinaryOp::kDiv: return x / y;
    case BinaryOp::kMaximum: return x != x ? x : y != y ? y : x > y ? x : y;
    default: return x != x ? x : y != y ? y : x < y ? x : y;
  }
}
template <typename T>
bool RefCompare(BinaryOp op, T x, T y) {
  switch (op) {
    case BinaryOp::kEqual: return x == y;
    case BinaryOp::kNotEqual: return x != y;
    case BinaryOp::kLess: return x < y;
    case BinaryOp::kLessEqual: return x <= y;
    case BinaryOp::kGreater: return x > y;
    default: return x >= y;
  }
}

// Operand layouts: both contiguous; one broadcast from a single value (either side); a row
// broadcast down a matrix; a column broadcast across it (stride 0 inside each row); a
// transposed, strided operand (the baseline loops on every instruction set).
struct Layout {
  std::string name;
  Tensor a, b;
};
template <typename T>
std::vector<Layout> Layouts(int64_t n, uint32_t seed) {
  std::vector<Layout> out;
  const std::vector<T> va = Values<T>(n, seed), vb = Values<T>(n, seed + 1);
  out.push_back({"contiguous", FromValues(va, {n}), FromValues(vb, {n})});
  const std::vector<T> one = Values<T>(1, seed + 2);
  out.push_back({"tensor-scalar", FromValues(va, {n}), FromValues(one, {})});
  out.push_back({"scalar-tensor", FromValues(one, {1}), FromValues(vb, {n})});
  const int64_t rows = 3;
  const std::vector<T> m = Values<T>(rows * n, seed + 3), col = Values<T>(rows, seed + 4);
  out.push_back({"matrix-row", FromValues(m, {rows, n}), FromValues(vb, {n})});
  out.push_back({"column-matrix", FromValues(col, {rows, 1}), FromValues(m, {rows, n})});
  auto t = Transpose(FromValues(m, {n, rows}), {1, 0});
  if (t.ok()) out.push_back({"transposed", *t, FromValues(m, {rows, n})});
  return out;
}

const std::vector<int64_t> kLengths = {1,  2,  3,  7,  8,  9,   15,  16,  17,  31,  32,  33,
                                       63, 64, 65, 127, 128, 129, 255, 256, 257, 1000, 4099};

template <typename T>
void CheckBinaryEveryIsa() {
  for (int64_t n : kLengths) {
    for (const Layout& l : Layouts<T>(n, static_cast<uint32_t>(n))) {
      for (int isa : HostIsas()) {
        IsaScope scope(isa);
        const std::string where =
            l.name + " n " + std::to_string(n) + " isa " + std::to_string(isa);
        for (BinaryOp op : kArithmetic) {
          auto got = Binary(op, l.a, l.b);
          ASSERT_TRUE(got.ok()) << got.status();
          ASSERT_EQ(got->dtype(), DTypeOf<T>::value);
          auto ta = BroadcastTo(l.a, got->shape()), tb = BroadcastTo(l.b, got->shape());
          ASSERT_TRUE(ta.ok() && tb.ok());
          for (int64_t i = 0; i < got->numel(); ++i) {
            const T x = At<T>(*ta, i), y = At<T>(*tb, i), want = RefArithmetic(op, x, y);
            const T have = got->data<T>()[i];
            ASSERT_EQ(Bits(have), Bits(want)) << BinaryOpName(op) << " " << where << " at " << i
                                              << ": " << x << ", " << y << " gave " << have;
          }
        }
        for (BinaryOp op : kCompare) {
          auto got = Binary(op, l.a, l.b);
          ASSERT_TRUE(got.ok()) << got.status();
          ASSERT_EQ(got->dtype(), DType::kBool);
          auto ta = BroadcastTo(l.a, got->shape()), tb = BroadcastTo(l.b, got->shape());
          ASSERT_TRUE(ta.ok() && tb.ok());
          for (int64_t i = 0; i < got->numel(); ++i) {
            const T x = At<T>(*ta, i), y = At<T>(*tb, i);
            // The byte itself: a bool holds 0 or 1, nothing else.
            uint8_t byte;
            std::memcpy(&byte, got->data<bool>() + i, 1);
            ASSERT_EQ(byte, RefCompare(op, x, y) ? 1 : 0)
                << BinaryOpName(op) << " " << where << " at " << i << ": " << x << ", " << y;
          }
        }
      }
    }
  }
}

TEST(IsaLoops, Float32BinaryOpsGiveTheReferenceBitsOnEveryIsa) { CheckBinaryEveryIsa<float>(); }
TEST(IsaLoops, Float64BinaryOpsGiveTheReferenceBitsOnEveryIsa) { CheckBinaryEveryIsa<double>(); }

template <typename T>
T RefUnary(UnaryOp op, T x) {
  switch (op) {
    case UnaryOp::kNeg: return -x;
    case UnaryOp::kAbs: return std::abs(x);
    case UnaryOp::kRelu: return x != x ? x : x > T(0) ? x : T(0);  // np.maximum(x, 0): -0 -> +0
    case UnaryOp::kSqrt: return std::sqrt(x);
    case UnaryOp::kSquare: return x * x;
    default: return x != x ? x : x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0);  // np.sign: +0
  }
}

template <typename T>
void CheckUnaryEveryIsa() {
  const UnaryOp ops[] = {UnaryOp::kNeg, UnaryOp::kAbs, UnaryOp::kRelu,
                         UnaryOp::kSqrt, UnaryOp::kSquare, UnaryOp::kSign};
  for (int64_t n : kLengths) {
    const std::vector<T> v = Values<T>(3 * n, static_cast<uint32_t>(n));
    std::vector<Tensor> inputs = {FromValues(v, {3 * n}), FromValues(v, {3, n})};
    auto t = Transpose(inputs[1], {1, 0});
    ASSERT_TRUE(t.ok());
    inputs.push_back(*t);  // strided: the baseline loop on every instruction set
    for (const Tensor& a : inputs) {
      for (int isa : HostIsas()) {
        IsaScope scope(isa);
        for (UnaryOp op : ops) {
          auto got = Unary(op, a);
          ASSERT_TRUE(got.ok()) << got.status();
          for (int64_t i = 0; i < got->numel(); ++i) {
            const T x = At<T>(a, i), have = got->data<T>()[i], want = RefUnary(op, x);
            ASSERT_EQ(Bits(have), Bits(want)) << UnaryOpName(op) << " n " << n << " isa " << isa
                                              << " at " << i << ": " << x << " gave " << have;
          }
        }
      }
    }
  }
}

TEST(IsaLoops, Float32UnaryOpsGiveTheReferenceBitsOnEveryIsa) { CheckUnaryEveryIsa<float>(); }
TEST(IsaLoops, Float64UnaryOpsGiveTheReferenceBitsOnEveryIsa) { CheckUnaryEveryIsa<double>(); }

TEST(IsaLoops, EmptyInputsGiveEmptyResults) {
  for (int isa : HostIsas()) {
    IsaScope scope(isa);
    Tensor e = Tensor::Empty(Shape{0}, DType::kFloat32);
    auto s = Binary(BinaryOp::kAdd, e, e);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->numel(), 0);
    auto c = Binary(BinaryOp::kLess, e, Tensor::Scalar<float>(1.0f));
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->numel(), 0);
    auto u = Unary(UnaryOp::kSqrt, e);
    ASSERT_TRUE(u.ok());
    EXPECT_EQ(u->numel(), 0);
  }
}

}  // namespace
}  // namespace pijit
