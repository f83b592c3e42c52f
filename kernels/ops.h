// Eager tensor operations. Every op has a shape/dtype inference function (Infer*) that
// reports bad input exactly as the op itself does; graph capture calls the inference
// functions, so a jitted call and an eager call fail with the same error.
//
// Error messages start with the op's name and name the shapes/dtypes involved (the status
// codes map to Python exceptions as kernels/errors.h describes).
#pragma once
#include <optional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/tensor.h"

namespace pijit {

struct TensorMeta {
  DType dtype;
  Shape shape;
  bool operator==(const TensorMeta& o) const { return dtype == o.dtype && shape == o.shape; }
};
inline TensorMeta MetaOf(const Tensor& t) { return {t.dtype(), t.shape()}; }

// ---- elementwise ----------------------------------------------------------------------------

// X(enumerator, name). Arithmetic ops compute in NumPy's promoted dtype; comparisons compute
// in it and give Bool; logical ops read their inputs as truth values and give Bool.
#define PIJIT_BINARY_OPS(X)                                                                    \
  X(kAdd, "add") X(kSub, "sub") X(kMul, "mul") X(kDiv, "div") X(kPow, "pow")                  \
  X(kMaximum, "maximum") X(kMinimum, "minimum") X(kFloorDiv, "floor_divide") X(kMod, "mod")   \
  X(kEqual, "equal") X(kNotEqual, "not_equal") X(kLess, "less") X(kLessEqual, "less_equal")   \
  X(kGreater, "greater") X(kGreaterEqual, "greater_equal")                                    \
  X(kLogicalAnd, "logical_and") X(kLogicalOr, "logical_or") X(kLogicalXor, "logical_xor")     \
  X(kBitwiseAnd, "bitwise_and") X(kBitwiseOr, "bitwise_or") X(kBitwiseXor, "bitwise_xor")
// The float functions: unary elementwise ops whose kernel is one expression of `x` (of the
// compute type C: float32 for the 16-bit floats, else the dtype) and whose gradient is one
// expression of the graph builder `b`, the input X, the output Y and the output gradient G
// (graph/autodiff.cc). Integer inputs compute in Float64, as NumPy does. This row is the
// op's whole declaration: the kernel (kernels/cpu/unary.cc), the IR op (graph/ops.def), its
// VJP rule (graph/autodiff.cc) and its Python surfaces (interop/pyops.def: a pijit.ops
// function, and a Tensor method where the surface is kBoth) are generated from it.
// ROW(enumerator, name, Python surface, kernel, vjp). (The rows name the input X, so the
// list's parameter is ROW.)
#define PIJIT_FLOAT_FUNCTIONS(ROW)                                                               \
  ROW(kExp, "exp", kBoth, std::exp(x), b.Mul(G, Y))                                             \
  ROW(kLog, "log", kBoth, std::log(x), b.Div(G, X))                                             \
  ROW(kRsqrt, "rsqrt", kBoth, C(1) / std::sqrt(x),                                              \
    b.Mul(G, b.Scale(b.Mul(Y, b.Mul(Y, Y)), -0.5)))                                           \
  ROW(kSin, "sin", kBoth, std::sin(x), b.Mul(G, b.Unary(Op::kCos, X)))                          \
  ROW(kCos, "cos", kBoth, std::cos(x), b.Neg(b.Mul(G, b.Unary(Op::kSin, X))))                   \
  ROW(kTanh, "tanh", kBoth, std::tanh(x), b.Mul(G, OneMinus(b, b.Mul(Y, Y))))                   \
  ROW(kSigmoid, "sigmoid", kBoth, Sigmoid<C>(x), b.Mul(G, b.Mul(Y, OneMinus(b, Y))))            \
  /* x Phi(x) = x erfc(-x / sqrt2) / 2: erfc keeps its precision where 1 + erf cancels */    \
  ROW(kGelu, "gelu", kFunction, C(0.5) * x * std::erfc(-x * C(M_SQRT1_2)),                      \
    b.Mul(G, GeluDerivative(b, X)))                                                           \
  /* log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|) */                              \
  ROW(kSoftplus, "softplus", kFunction, std::max(x, C(0)) + std::log1p(std::exp(-std::abs(x))), \
    b.Mul(G, b.Unary(Op::kSigmoid, X)))                                                       \
  ROW(kErf, "erf", kBoth, std::erf(x),                                                          \
    b.Mul(G, b.Scale(b.Unary(Op::kExp, b.Neg(b.Mul(X, X))), M_2_SQRTPI)))                    \
  ROW(kLog1p, "log1p", kBoth, std::log1p(x), b.Div(G, b.Add(X, b.ScalarLike(1, X))))          \
  ROW(kExpm1, "expm1", kBoth, std::expm1(x), b.Mul(G, b.Add(Y, b.ScalarLike(1, Y))))          \
  ROW(kLog2, "log2", kBoth, std::log2(x), b.Div(G, b.Scale(X, M_LN2)))                          \
  ROW(kLog10, "log10", kBoth, std::log10(x), b.Div(G, b.Scale(X, M_LN10)))                      \
  ROW(kExp2, "exp2", kBoth, std::exp2(x), b.Mul(G, b.Scale(Y, M_LN2)))                          \
  ROW(kReciprocal, "reciprocal", kBoth, C(1) / x, b.Neg(b.Mul(G, b.Mul(Y, Y))))                 \
  ROW(kTan, "tan", kBoth, std::tan(x), b.Mul(G, b.Add(b.Mul(Y, Y), b.ScalarLike(1, Y))))       \
  ROW(kAsin, "asin", kBoth, std::asin(x),                                                       \
    b.Div(G, b.Unary(Op::kSqrt, OneMinus(b, b.Mul(X, X)))))                                   \
  ROW(kAcos, "acos", kBoth, std::acos(x),                                                       \
    b.Neg(b.Div(G, b.Unary(Op::kSqrt, OneMinus(b, b.Mul(X, X))))))                            \
  ROW(kAtan, "atan", kBoth, std::atan(x), b.Div(G, b.Add(b.Mul(X, X), b.ScalarLike(1, X))))   \
  ROW(kSinh, "sinh", kBoth, std::sinh(x), b.Mul(G, b.Unary(Op::kCosh, X)))                      \
  ROW(kCosh, "cosh", kBoth, std::cosh(x), b.Mul(G, b.Unary(Op::kSinh, X)))                      \
  ROW(kAsinh, "asinh", kBoth, std::asinh(x),                                                    \
    b.Div(G, b.Unary(Op::kSqrt, b.Add(b.Mul(X, X), b.ScalarLike(1, X)))))                     \
  ROW(kAcosh, "acosh", kBoth, std::acosh(x),                                                    \
    b.Div(G, b.Unary(Op::kSqrt, b.Sub(b.Mul(X, X), b.ScalarLike(1, X)))))                     \
  ROW(kAtanh, "atanh", kBoth, std::atanh(x), b.Div(G, OneMinus(b, b.Mul(X, X))))               \
  /* piecewise constant: no gradient flows (round: half to even, as MindSpore and NumPy) */   \
  ROW(kFloor, "floor", kBoth, std::floor(x), kNil)                                              \
  ROW(kCeil, "ceil", kBoth, std::ceil(x), kNil)                                                 \
  ROW(kTrunc, "trunc", kBoth, std::trunc(x), kNil)                                              \
  ROW(kRound, "round", kBoth, std::nearbyint(x), kNil)

// X(enumerator, name, ...): the float functions' rows pass more arguments.
#define PIJIT_UNARY_OPS(X)                                                                     \
  X(kNeg, "neg") PIJIT_FLOAT_FUNCTIONS(X) X(kRelu, "relu") X(kAbs, "abs") X(kSign, "sign")    \
  X(kSquare, "square") X(kSqrt, "sqrt") X(kLogicalNot, "logical_not")                         \
  X(kBitwiseNot, "bitwise_not")

enum class BinaryOp : uint8_t {
#define PIJIT_OP_ENUM(e, n, ...) e,
  PIJIT_BINARY_OPS(PIJIT_OP_ENUM)
};
enum class UnaryOp : uint8_t { PIJIT_UNARY_OPS(PIJIT_OP_ENUM) };
#undef PIJIT_OP_ENUM
const char* BinaryOpName(BinaryOp op);  // "add"
const char* UnaryOpName(UnaryOp op);

absl::StatusOr<Shape> BroadcastShapes(const char* op, absl::Span<const int64_t> a,
                                      absl::Span<const int64_t> b);

// Integer pow with a negative exponent fails at run time, as in NumPy.
absl::StatusOr<TensorMeta> InferBinary(BinaryOp op, const TensorMeta& a, const TensorMeta& b);
absl::StatusOr<Tensor> Binary(BinaryOp op, const Tensor& a, const Tensor& b);

absl::StatusOr<TensorMeta> InferUnary(UnaryOp op, const TensorMeta& a);
absl::StatusOr<Tensor> Unary(UnaryOp op, const Tensor& a);

// where(cond, x, y): x where cond is true, else y; cond of any dtype is read as truth values.
absl::StatusOr<TensorMeta> InferWhere(const TensorMeta& cond, const TensorMeta& x,
                                      const TensorMeta& y);
absl::StatusOr<Tensor> Where(const Tensor& cond, const Tensor& x, const Tensor& y);

// clip(x, lo, hi) = minimum(maximum(x, lo), hi) with either bound absent (null), as NumPy's
// clip: the result dtype promotes every given operand, shapes broadcast, NaN propagates.
absl::StatusOr<TensorMeta> InferClip(const TensorMeta& x, const TensorMeta* lo,
                                     const TensorMeta* hi);
absl::StatusOr<Tensor> Clip(const Tensor& x, const Tensor* lo, const Tensor* hi);

// ---- reductions -----------------------------------------------------------------------------

// sum/prod: integers accumulate in Int64; mean/var/std: integers give Float64; max/min keep
// the dtype and fail on an empty reduction; all/any give Bool.
// X(enumerator, name): each is the graph op of the same enumerator and name (graph/ops.def).
#define PIJIT_REDUCE_OPS(X)                                                                     \
  X(kSum, "sum") X(kMean, "mean") X(kProd, "prod") X(kMax, "max") X(kMin, "min") X(kAll, "all") \
  X(kAny, "any") X(kVar, "var") X(kStd, "std")
enum class ReduceOp : uint8_t {
#define PIJIT_REDUCE_ENUM(e, name) e,
  PIJIT_REDUCE_OPS(PIJIT_REDUCE_ENUM)
#undef PIJIT_REDUCE_ENUM
};
const char* ReduceOpName(ReduceOp op);

// `axes` empty means every axis. Negative axes count from the end. `ddof` is used by var/std
// (divisor n - ddof, as NumPy).
absl::StatusOr<TensorMeta> InferReduce(ReduceOp op, const TensorMeta& a,
                                       absl::Span<const int64_t> axes, bool keepdims);
absl::StatusOr<Tensor> Reduce(ReduceOp op, const Tensor& a, absl::Span<const int64_t> axes,
                              bool keepdims, int64_t ddof = 0);

// argmax/argmin over one axis (`axis` empty: over the flattened tensor); Int64 indices, the
// first occurrence wins, NaN counts as the extreme (NumPy).
absl::StatusOr<TensorMeta> InferArgReduce(bool is_max, const TensorMeta& a,
                                          absl::Span<const int64_t> axis, bool keepdims);
absl::StatusOr<Tensor> ArgReduce(bool is_max, const Tensor& a, absl::Span<const int64_t> axis,
                                 bool keepdims);

// Numerically stable softmax / log_softmax along `axis`; integers compute in Float64.
absl::StatusOr<TensorMeta> InferSoftmax(bool log, const TensorMeta& a, int64_t axis);
absl::StatusOr<Tensor> Softmax(bool log, const Tensor& a, int64_t axis);

// NumPy matmul semantics: 1-D operands are promoted and the added axis removed; leading
// (batch) axes broadcast. float32 runs on oneDNN, float64 on BLAS.
absl::StatusOr<TensorMeta> InferMatMul(const TensorMeta& a, const TensorMeta& b);
absl::StatusOr<Tensor> MatMul(const Tensor& a, const Tensor& b);

// A matrix product with an epilogue (the graph's fused_matmul, graph/passes/matmul_epilogue.h):
// MatMul(a, b) followed by `post`, in order. kBias and kAdd add the next of `operands`, kMul
// multiplies by it; operands must broadcast to the product's shape and have its dtype (kBias:
// a vector along the last axis, only first); the others apply that activation (as Unary). The
// product is floating. (kMul comes last in the numbering so that stored codes keep meaning.)
enum class MatMulPost : int64_t {
  kBias = 0, kAdd = 1, kRelu = 2, kGelu = 3, kTanh = 4, kSigmoid = 5, kMul = 6
};
inline constexpr int64_t kNumMatMulPosts = 7;
const char* MatMulPostName(MatMulPost p);
// Whether post-op `p` (a MatMulPost code) reads an operand: a bias, an add or a mul.
inline bool MatMulPostTakesOperand(int64_t p) {
  return p == static_cast<int64_t>(MatMulPost::kBias) || p == static_cast<int64_t>(MatMulPost::kAdd) ||
         p == static_cast<int64_t>(MatMulPost::kMul);
}
// Whether post-op `p` is an activation that oneDNN computes approximately (gelu, tanh,
// sigmoid).
inline bool MatMulPostIsApproximated(int64_t p) {
  return p == static_cast<int64_t>(MatMulPost::kGelu) || p == static_cast<int64_t>(MatMulPost::kTanh) ||
         p == static_cast<int64_t>(MatMulPost::kSigmoid);
}
// The ops of `post` on `r`, one at a time, bias and add reading `operands` in order: what the
// fused matmul and convolution kernels are defined (and tested) to equal.
absl::StatusOr<Tensor> ApplyPostOpsOneByOne(Tensor r, absl::Span<const int64_t> post,
                                            absl::Span<const Tensor* const> operands);
// Whether `m` runs along the channels of an NCHW result with `c` channels: [C, 1, 1] or
// [1, C, 1, 1] (a convolution's bias post-op).
inline bool IsConvChannelVector(const TensorMeta& m, int64_t c) {
  const Shape& s = m.shape;
  if (s.size() == 3) return s[0] == c && s[1] == 1 && s[2] == 1;
  return s.size() == 4 && s[0] == 1 && s[1] == c && s[2] == 1 && s[3] == 1;
}
absl::StatusOr<TensorMeta> InferMatMulEpilogue(const TensorMeta& a, const TensorMeta& b,
                                               absl::Span<const int64_t> post,
                                               absl::Span<const TensorMeta* const> operands);
// Whether MatMulEpilogue runs this problem as one oneDNN primitive (float32; `b` a matrix, `a`
// a matrix or a stack of rows; operands rows of the product's width or its full shape; relu
// only last, applied in place right after the primitive because oneDNN's relu turns NaN into
// 0); other problems run the ops one after the other, as eager does.
bool MatMulEpilogueIsOnePrimitive(const TensorMeta& a, const TensorMeta& b,
                                  absl::Span<const int64_t> post,
                                  absl::Span<const TensorMeta* const> operands);
// Results equal MatMul and the ops of `post` run one by one, except the activations other
// than relu, which oneDNN computes within kMatMulEpilogueRelTol (relative, or absolute below 1).
inline constexpr double kMatMulEpilogueRelTol = 1e-5;
absl::StatusOr<Tensor> MatMulEpilogue(const Tensor& a, const Tensor& b,
                                      absl::Span<const int64_t> post,
                                      absl::Span<const Tensor* const> operands);

// ---- shapes (views where the layout allows) ------------------------------------------------

// One -1 entry is inferred. A view when the input is contiguous, a copy otherwise.
absl::StatusOr<TensorMeta> InferReshape(const TensorMeta& a, absl::Span<const int64_t> shape);
absl::StatusOr<Tensor> Reshape(const Tensor& a, absl::Span<const int64_t> shape);

// `perm` empty reverses the axes. Always a view.
absl::StatusOr<TensorMeta> InferTranspose(const TensorMeta& a, absl::Span<const int64_t> perm);
absl::StatusOr<Tensor> Transpose(const Tensor& a, absl::Span<const int64_t> perm);

absl::StatusOr<Tensor> Cast(const Tensor& a, DType dtype);

// A view of `a` broadcast to `shape` (stride 0 on broadcast axes). In the Infer form a -1
// entry keeps the input's size (MindSpore's broadcast_to).
absl::StatusOr<TensorMeta> InferBroadcastTo(const TensorMeta& a, absl::Span<const int64_t> shape);
absl::StatusOr<Tensor> BroadcastTo(const Tensor& a, absl::Span<const int64_t> shape);

// Removes the given size-1 axes (`axes` empty: every size-1 axis). A view.
absl::StatusOr<TensorMeta> InferSqueeze(const TensorMeta& a, absl::Span<const int64_t> axes);
absl::StatusOr<Tensor> Squeeze(const Tensor& a, absl::Span<const int64_t> axes);
// Inserts a size-1 axis at `axis` in [-ndim-1, ndim]. A view.
absl::StatusOr<TensorMeta> InferUnsqueeze(const TensorMeta& a, int64_t axis);
absl::StatusOr<Tensor> Unsqueeze(const Tensor& a, int64_t axis);
// Merges axes start..end (inclusive); a 0-d tensor becomes shape (1,). Reshape's layout rule.
absl::StatusOr<TensorMeta> InferFlatten(const TensorMeta& a, int64_t start, int64_t end);
absl::StatusOr<Tensor> Flatten(const Tensor& a, int64_t start, int64_t end);

// concat joins along an existing axis, stack along a new one; dtypes promote (NumPy).
absl::StatusOr<TensorMeta> InferConcat(bool stack, absl::Span<const TensorMeta* const> in,
                                       int64_t axis);
absl::StatusOr<Tensor> Concat(bool stack, absl::Span<const Tensor* const> in, int64_t axis);

// Basic (NumPy) indexing: a list of items, each an int, a slice, a new axis or an ellipsis.
// Always a view. An out-of-range integer is a NotFound status (IndexError).
// kArray items (advanced indexing, below) name an index tensor by its position in `start`.
struct IndexItem {
  enum Kind : uint8_t { kInt, kSlice, kNewAxis, kEllipsis, kArray };
  static constexpr int64_t kNone = INT64_MIN;  // an omitted slice bound
  Kind kind;
  int64_t start = kNone, stop = kNone, step = 1;  // kInt: the index in `start`
};
// Items travel in graph attributes as 4 ints each: kind, start, stop, step.
Shape EncodeIndex(absl::Span<const IndexItem> items);
absl::StatusOr<TensorMeta> InferIndex(const TensorMeta& a, absl::Span<const int64_t> encoded);
absl::StatusOr<Tensor> Index(const Tensor& a, absl::Span<const int64_t> encoded);
// The adjoint of Index (its gradient): a fresh zero tensor of `shape` in which the elements
// Index(·, encoded) would select hold `grad` (whose shape must be the selection's).
absl::StatusOr<TensorMeta> InferIndexGrad(const TensorMeta& grad, absl::Span<const int64_t> shape,
                                          absl::Span<const int64_t> encoded);
absl::StatusOr<Tensor> IndexGrad(const Tensor& grad, absl::Span<const int64_t> shape,
                                 absl::Span<const int64_t> encoded);

// Advanced (NumPy) indexing: basic items plus kArray items, each an index tensor from
// `arrays` (integer: indices, negative ones from the end; bool: a mask over as many axes as it
// has, selecting where it is true). With any array present, integer items count as 0-d
// arrays. The arrays broadcast together; their block of result axes takes the place of the
// indexed axes when the advanced items are adjacent, and comes first otherwise. Always a copy.
// Errors: an index out of range, a mask whose shape differs from the axes it indexes, arrays
// that do not broadcast or are not integer/bool are NotFound (IndexError).
absl::StatusOr<TensorMeta> InferAdvancedIndex(const TensorMeta& a,
                                              absl::Span<const TensorMeta* const> arrays,
                                              absl::Span<const int64_t> encoded);
absl::StatusOr<Tensor> AdvancedIndex(const Tensor& a, absl::Span<const Tensor* const> arrays,
                                     absl::Span<const int64_t> encoded);
// Replaces each boolean mask of rank >= 1 in an advanced index by the Int64 arrays of its true
// positions (one per mask axis): the same selection with a shape known from the arrays.
// `arrays` are renumbered in item order.
absl::Status ExpandBooleanMasks(Shape* encoded, std::vector<Tensor>* arrays);
// Writes `value` into `dst`'s storage at the elements the index selects (any index: basic
// items only write through views too). `value` broadcasts to the selection's shape (after
// dropping leading size-1 axes, as NumPy does) and is cast to dst's dtype; it may overlap
// dst. With `accumulate`, adds instead, so that repeated indices add up (scatter-add).
// A value that does not broadcast is InvalidArgument (ValueError).
absl::Status IndexPut(const Tensor& dst, absl::Span<const Tensor* const> arrays,
                      absl::Span<const int64_t> encoded, const Tensor& value, bool accumulate);
// The adjoint of AdvancedIndex: zeros of `shape` (grad's dtype) into which `grad` is added at
// the selected elements.
absl::StatusOr<TensorMeta> InferAdvancedIndexGrad(const TensorMeta& grad,
                                                  absl::Span<const TensorMeta* const> arrays,
                                                  absl::Span<const int64_t> shape,
                                                  absl::Span<const int64_t> encoded);
absl::StatusOr<Tensor> AdvancedIndexGrad(const Tensor& grad, absl::Span<const Tensor* const> arrays,
                                         absl::Span<const int64_t> shape,
                                         absl::Span<const int64_t> encoded);

// ---- creation -------------------------------------------------------------------------------

// A tensor of `shape` filled with `value` (a 0-d tensor of any dtype, converted to `dtype`).
absl::StatusOr<TensorMeta> InferFull(absl::Span<const int64_t> shape, DType dtype);
absl::StatusOr<Tensor> Full(absl::Span<const int64_t> shape, DType dtype, const Tensor& value);
// start + i * step for i < n; `params` is a 2-element Int64 or Float64 tensor {start, step}.
absl::StatusOr<Tensor> Arange(int64_t n, DType dtype, const Tensor& params);
// Number of elements of arange(start, stop, step); error for step 0 (names `op`).
absl::StatusOr<int64_t> ArangeLength(const char* op, double start, double stop, double step);
// `num` evenly spaced values from start to stop inclusive (NumPy's linspace).
absl::StatusOr<Tensor> Linspace(double start, double stop, int64_t num, DType dtype);
// n x m with ones on diagonal k.
absl::StatusOr<Tensor> Eye(int64_t n, int64_t m, int64_t k, DType dtype);

// Random numbers from a counter-based generator: the same seed gives the same values.
// `seed` < 0 draws from the global generator (seeded by SetSeed) and advances it.
enum class Distribution : uint8_t { kUniform, kNormal };
void SetSeed(uint64_t seed);
uint64_t GetSeed();
absl::StatusOr<TensorMeta> InferRandom(Distribution d, absl::Span<const int64_t> shape,
                                       DType dtype);
// Where a draw of `values` random numbers reads the generator: the key of its seed and the
// counter of its first value. With `seed` < 0 the global generator's counter advances by
// `values`. Value i of the draw is a hash of (key, base + i): the CPU and the GPU compute
// the same numbers (kernels/cuda/device_random.cc).
struct RandomDraw {
  uint64_t key, base;
};
RandomDraw ReserveRandom(uint64_t values, int64_t seed);
// The hash: SplitMix64's finaliser, a bijective mix of 64 bits.
inline uint64_t RandomMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
// kUniform: [a, b); kNormal: mean a, standard deviation b (Box-Muller: two values each).
absl::StatusOr<Tensor> Random(Distribution d, absl::Span<const int64_t> shape, DType dtype,
                              double a, double b, int64_t seed);

// ---- neural-network layers (kernels/cpu/conv.cc, pool.cc, norm.cc, nn_misc.cc) ---------------

// The window of conv2d and the 2-D poolings over NCHW data. float32 runs on oneDNN
// (primitives cached by shape and attributes), float64 on plain loops.
struct Window2D {
  bool same = false;              // MindSpore pad_mode 'same': padding from the input size
  int64_t kernel[2] = {1, 1};     // pooling (conv2d takes it from the weight)
  int64_t stride[2] = {1, 1};
  int64_t pad[4] = {0, 0, 0, 0};  // top, bottom, left, right (pad_mode 'pad')
  int64_t dilation[2] = {1, 1};
  bool ceil_mode = false;         // pooling: output size rounds up
  bool count_include_pad = true;  // avg pooling: padding counts in the divisor
  int64_t groups = 1;             // conv2d
};
// A window travels in graph attributes as kWindowInts ints.
inline constexpr size_t kWindowInts = 14;
Shape EncodeWindow(const Window2D& w);
absl::StatusOr<Window2D> DecodeWindow(const char* op, absl::Span<const int64_t> ints);

// conv2d(x[N,C,H,W], w[O,C/groups,KH,KW], bias[O] or null) -> [N,O,OH,OW]; `relu` applies
// relu to the result (as Unary(kRelu) would) while it is written (compiled graphs' epilogue).
absl::StatusOr<TensorMeta> InferConv2D(const TensorMeta& x, const TensorMeta& w,
                                       const TensorMeta* bias, const Window2D& win);
absl::StatusOr<Tensor> Conv2D(const Tensor& x, const Tensor& w, const Tensor* bias,
                              const Window2D& win, bool relu = false);

// A convolution with an epilogue (the graph's fused_conv2d, graph/passes/conv_epilogue.h):
// Conv2D(x, w, bias, win) followed by `post` (MatMulPost codes), in order. kBias adds the next
// of `operands`, a vector along the channels of shape [O, 1, 1] or [1, O, 1, 1], and only
// first and only when `bias` is null; kAdd adds the next operand and kMul multiplies by it
// (operands broadcast to the result's shape and have its dtype); the others apply that
// activation (as Unary).
absl::StatusOr<TensorMeta> InferConv2DEpilogue(const TensorMeta& x, const TensorMeta& w,
                                               const TensorMeta* bias, const Window2D& win,
                                               absl::Span<const int64_t> post,
                                               absl::Span<const TensorMeta* const> operands);
// Whether Conv2DEpilogue runs this problem as one kernel (float32, a non-empty problem, kAdd
// and kMul operands of the result's full shape or channel vectors (those only where oneDNN
// applies them fast: many channels, and not 1x1 kernels without AVX-512), relu only last): oneDNN's convolution with bias and
// post-ops, or the direct kernels (conv_direct.h) with the epilogue applied to the result
// while it is in cache. Other problems run Conv2D and the ops one after the other.
bool Conv2DEpilogueIsOnePrimitive(const TensorMeta& x, const TensorMeta& w,
                                  const TensorMeta* bias, const Window2D& win,
                                  absl::Span<const int64_t> post,
                                  absl::Span<const TensorMeta* const> operands);
// Results equal Conv2D and the ops of `post` run one by one, bit for bit with bias, add and
// relu (oneDNN's relu, which turns NaN into 0, is not used: relu runs on the result right
// after the primitive); gelu, tanh and sigmoid within kMatMulEpilogueRelTol (relative, or
// absolute below 1) when oneDNN computes them.
absl::StatusOr<Tensor> Conv2DEpilogue(const Tensor& x, const Tensor& w, const Tensor* bias,
                                      const Window2D& win, absl::Span<const int64_t> post,
                                      absl::Span<const Tensor* const> operands);

// max/avg pooling over H and W of x[N,C,H,W]; padding is -inf for max. 'same' avg pooling
// leaves padding out of the divisor (MindSpore's AvgPool).
enum class PoolKind : uint8_t { kMax, kAvg };
absl::StatusOr<TensorMeta> InferPool2D(PoolKind kind, const TensorMeta& x, const Window2D& win);
absl::StatusOr<Tensor> Pool2D(PoolKind kind, const Tensor& x, const Window2D& win);

// The gradients of conv2d (kernels/cpu/conv_grad.cc): with respect to its input x (of shape
// `x_shape`) given the output gradient `dout` and the weight, and with respect to its weight
// (of shape `w_shape`) given x and `dout`. The bias's gradient is dout summed over N, H, W.
absl::StatusOr<TensorMeta> InferConv2DGradInput(const TensorMeta& dout, const TensorMeta& w,
                                                absl::Span<const int64_t> x_shape,
                                                const Window2D& win);
absl::StatusOr<Tensor> Conv2DGradInput(const Tensor& dout, const Tensor& w,
                                       absl::Span<const int64_t> x_shape, const Window2D& win);
absl::StatusOr<TensorMeta> InferConv2DGradWeight(const TensorMeta& x, const TensorMeta& dout,
                                                 absl::Span<const int64_t> w_shape,
                                                 const Window2D& win);
absl::StatusOr<Tensor> Conv2DGradWeight(const Tensor& x, const Tensor& dout,
                                        absl::Span<const int64_t> w_shape, const Window2D& win);
// conv2d_transpose(x[N,C,H,W], w[C,O/groups,KH,KW], bias[O] or null) -> [N,O,OH,OW]
// (kernels/cpu/conv_transpose.cc): the gradient of conv2d with respect to its input, as
// MindSpore's Conv2dTranspose. OH by pad mode: 'same' H*stride; 'valid' H*stride +
// max(dilation*(KH-1)+1-stride, 0); 'pad' (H-1)*stride - top - bottom + dilation*(KH-1) + 1 +
// output_padding[0], where 0 <= output_padding < stride. Likewise OW. 'valid' and 'pad' with
// no padding differ when the kernel's extent is below the stride, hence the flag.
struct ConvTransposeShape {
  int64_t output_padding[2] = {0, 0};
  bool valid = false;
};
// It travels in graph attributes as kConvTransposeInts ints after the window.
inline constexpr size_t kConvTransposeInts = 3;
absl::StatusOr<TensorMeta> InferConv2DTranspose(const TensorMeta& x, const TensorMeta& w,
                                                const TensorMeta* bias, const Window2D& win,
                                                const ConvTransposeShape& out);
absl::StatusOr<Tensor> Conv2DTranspose(const Tensor& x, const Tensor& w, const Tensor* bias,
                                       const Window2D& win, const ConvTransposeShape& out);

// The gradient of max/avg pooling with respect to its input x, given the output gradient
// (kernels/cpu/pool_grad.cc): max sends it to the window's first maximum. `positive_only`
// then keeps the gradient only where x > 0, as where(x > 0, dx, 0) would (compiled graphs
// fold relu's gradient mask into it when x is relu's output).
absl::StatusOr<TensorMeta> InferPool2DGrad(PoolKind kind, const TensorMeta& x,
                                           const TensorMeta& dout, const Window2D& win);
absl::StatusOr<Tensor> Pool2DGrad(PoolKind kind, const Tensor& x, const Tensor& dout,
                                  const Window2D& win, bool positive_only = false);

// Batch normalisation over axis 1 of x[N,C,...] with per-channel mean, var, gamma, beta [C]:
// y = (x - mean) / sqrt(var + eps) * gamma + beta. BatchNormTrain normalises with the batch's
// statistics (biased variance) and updates `mean` and `var` in place:
// running = (1 - momentum) * running + momentum * batch (var: the unbiased batch variance).
absl::StatusOr<TensorMeta> InferBatchNorm(const TensorMeta& x, const TensorMeta& mean,
                                          const TensorMeta& var, const TensorMeta& gamma,
                                          const TensorMeta& beta, bool training = false);
absl::StatusOr<Tensor> BatchNorm(const Tensor& x, const Tensor& mean, const Tensor& var,
                                 const Tensor& gamma, const Tensor& beta, double eps);
absl::StatusOr<Tensor> BatchNormTrain(const Tensor& x, const Tensor& mean, const Tensor& var,
                                      const Tensor& gamma, const Tensor& beta, double eps,
                                      double momentum);

// Layer normalisation over the trailing axes `normalized_shape` of x, with optional gamma
// and beta of that shape.
absl::StatusOr<TensorMeta> InferLayerNorm(const TensorMeta& x,
                                          absl::Span<const int64_t> normalized_shape,
                                          const TensorMeta* gamma, const TensorMeta* beta);
absl::StatusOr<Tensor> LayerNorm(const Tensor& x, absl::Span<const int64_t> normalized_shape,
                                 const Tensor* gamma, const Tensor* beta, double eps);

// Group normalisation of x (N, C, ...): each sample's channels in `groups` groups (C divisible
// by groups), each group normalised over its channels and the remaining axes (mean and biased
// variance), then y = x̂ gamma[c] + beta[c] per channel c (gamma, beta of shape [C]).
absl::StatusOr<TensorMeta> InferGroupNorm(const TensorMeta& x, int64_t groups,
                                          const TensorMeta& gamma, const TensorMeta& beta);
absl::StatusOr<Tensor> GroupNorm(const Tensor& x, int64_t groups, const Tensor& gamma,
                                 const Tensor& beta, double eps);

// The gradient of layer_norm(x, [gamma], beta) with respect to x, given the output's gradient
// dy (x's shape and dtype): with the statistics of x over the trailing axes recomputed,
// x̂ = (x - μ) r, r = 1/sqrt(σ² + eps) and dx̂ = dy·gamma (dy without gamma),
// dx = r (dx̂ - mean(dx̂) - x̂ mean(dx̂ x̂)). beta does not enter.
absl::StatusOr<TensorMeta> InferLayerNormGrad(const TensorMeta& x, const TensorMeta& dy,
                                              absl::Span<const int64_t> normalized_shape,
                                              const TensorMeta* gamma);
absl::StatusOr<Tensor> LayerNormGrad(const Tensor& x, const Tensor& dy,
                                     absl::Span<const int64_t> normalized_shape,
                                     const Tensor* gamma, double eps);

// Training batch norm's gradients over x[N,C,...] (float32 or float64; kernels/cpu/
// batch_norm_grad.cc), the statistics those of x itself (mean, biased variance per channel
// over the M = N * (spatial size) values): x̂ = (x - μ) r, r = 1/sqrt(σ² + eps).
// BatchNormGradSums(x, dy) is [4, C]: rows μ, r, Σ dy (beta's gradient) and Σ dy x̂ (gamma's),
// one channel at a time, so each channel's values are read from memory once.
// BatchNormGradInput(x, dy, sums, gamma) is dx = gamma r (dy - Σdy / M - x̂ Σ(dy x̂) / M) in
// one pass.
inline constexpr int64_t kBatchNormSumsRows = 4;
absl::StatusOr<TensorMeta> InferBatchNormGradSums(const TensorMeta& x, const TensorMeta& dy);
absl::StatusOr<Tensor> BatchNormGradSums(const Tensor& x, const Tensor& dy, double eps);
absl::StatusOr<TensorMeta> InferBatchNormGradInput(const TensorMeta& x, const TensorMeta& dy,
                                                   const TensorMeta& sums, const TensorMeta& gamma);
absl::StatusOr<Tensor> BatchNormGradInput(const Tensor& x, const Tensor& dy, const Tensor& sums,
                                          const Tensor& gamma);

// one_hot(indices) of integer indices: a new axis of size `depth` at `axis`, `on` where the
// index matches and `off` elsewhere (indices outside [0, depth) give a row of `off`).
absl::StatusOr<TensorMeta> InferOneHot(const TensorMeta& indices, int64_t depth, int64_t axis,
                                       DType dtype);
absl::StatusOr<Tensor> OneHot(const Tensor& indices, int64_t depth, int64_t axis, DType dtype,
                              double on, double off);

// Writes `value` (broadcast to the variable's shape, converted to its dtype) into the
// storage of `variable`, which must be contiguous, and returns `variable`.
absl::StatusOr<TensorMeta> InferAssign(const TensorMeta& variable, const TensorMeta& value);
absl::StatusOr<Tensor> Assign(const Tensor& variable, const Tensor& value);

// Resolves one axis against `ndim`; error names the op.
absl::StatusOr<int64_t> NormalizeAxis(const char* op, int64_t axis, int64_t ndim);
// Checks that every size is >= 0; error names the op.
absl::Status CheckShape(const char* op, absl::Span<const int64_t> shape);

}  // namespace pijit
