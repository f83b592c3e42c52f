// Matrix products with an epilogue (bias, activations, residual adds): float32 products of a
// matrix (or a stack of rows) by a matrix run as one oneDNN matmul whose bias and post-ops
// apply the epilogue while each block of the result is still in registers; every other
// problem runs MatMul and the epilogue's ops one after the other.
//
// relu is the exception: oneDNN's relu (like its clip and binary max) turns NaN into 0, where
// eager relu keeps it, so a final relu runs on the result right after the primitive, while
// the result is still in cache.
#include <memory>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "kernels/cpu/dnnl_threads.h"
#include "kernels/cpu/loops.h"
#include "kernels/cpu/window.h"
#include "kernels/errors.h"
#include "kernels/ops.h"
#include "kernels/thread_pool.h"

namespace pijit {
namespace {

// Whether `m` is a row of `n` values ([n], [1, n], [1, 1, n], ...).
bool IsRow(const TensorMeta& m, int64_t n) {
  if (m.shape.empty() || m.shape.back() != n) return false;
  for (size_t i = 0; i + 1 < m.shape.size(); ++i)
    if (m.shape[i] != 1) return false;
  return true;
}

// The problem as oneDNN sees it: m, n, k, the strides of a and b, then per post-op its code
// and, for operands, whether it is a row (1) or the full result (0).
using EpilogueKey = absl::InlinedVector<int64_t, 16>;

struct EpiloguePrimitive {
  dnnl::memory::desc a, b, c, bias;
  std::vector<dnnl::memory::desc> binary;  // per kAdd and kMul, in order
  std::vector<int> binary_index;           // its position in the post-op chain
  dnnl::matmul prim;
};

// The primitive for `key`, or null when oneDNN cannot build it (then the ops run one by one;
// the failure is cached too).
const EpiloguePrimitive* GetEpilogue(const EpilogueKey& key) {
  return CachedPrimitive(key, [&] {
    using dnnl::memory;
    const auto f32 = memory::data_type::f32;
    const int64_t m = key[0], n = key[1], k = key[2];
    auto p = std::make_unique<EpiloguePrimitive>();
    p->a = memory::desc({m, k}, f32, memory::dims{key[3], key[4]});
    p->b = memory::desc({k, n}, f32, memory::dims{key[5], key[6]});
    p->c = memory::desc({m, n}, f32, memory::format_tag::ab);
    dnnl::post_ops ops;
    int index = 0;
    for (size_t i = 7; i < key.size(); ++i) {
      const auto post = static_cast<MatMulPost>(key[i]);
      if (post == MatMulPost::kBias) {
        p->bias = memory::desc({1, n}, f32, memory::format_tag::ab);
        ++i;  // the row flag
        continue;
      }
      if (post == MatMulPost::kAdd || post == MatMulPost::kMul) {
        const bool row = key[++i] != 0;
        p->binary.push_back(memory::desc({row ? 1 : m, n}, f32, memory::format_tag::ab));
        p->binary_index.push_back(index++);
        ops.append_binary(post == MatMulPost::kMul ? dnnl::algorithm::binary_mul
                                                   : dnnl::algorithm::binary_add,
                          p->binary.back());
        continue;
      }
      ops.append_eltwise(EltwiseAlgorithm(post), 0.f, 0.f);
      ++index;
    }
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    try {
      const auto pd =
          p->bias.is_zero()
              ? dnnl::matmul::primitive_desc(DnnlEngine(), p->a, p->b, p->c, attr)
              : dnnl::matmul::primitive_desc(DnnlEngine(), p->a, p->b, p->bias, p->c, attr);
      // oneDNN's reference kernel takes post-ops its fast ones do not: the ops one by one
      // are faster.
      if (IsReferenceKernel(pd)) throw dnnl::error(dnnl_unimplemented, "reference kernel");
      p->prim = dnnl::matmul(pd);
    } catch (const dnnl::error&) {
      p.reset();
    }
    return p;
  });
}

// The op-by-op evaluation (also the definition the fused one is tested against).
absl::StatusOr<Tensor> RunOneByOne(const Tensor& a, const Tensor& b, absl::Span<const int64_t> post,
                                   absl::Span<const Tensor* const> operands) {
  PIJIT_ASSIGN_OR_RETURN(Tensor r, MatMul(a, b));
  return ApplyPostOpsOneByOne(std::move(r), post, operands);
}

}  // namespace

absl::StatusOr<Tensor> ApplyPostOpsOneByOne(Tensor r, absl::Span<const int64_t> post,
                                            absl::Span<const Tensor* const> operands) {
  size_t next = 0;
  for (int64_t p : post) {
    if (MatMulPostTakesOperand(p)) {
      const BinaryOp op = p == static_cast<int64_t>(MatMulPost::kMul) ? BinaryOp::kMul : BinaryOp::kAdd;
      PIJIT_ASSIGN_OR_RETURN(r, Binary(op, r, *operands[next++]));
      continue;
    }
    const UnaryOp op = p == static_cast<int64_t>(MatMulPost::kGelu)   ? UnaryOp::kGelu
                       : p == static_cast<int64_t>(MatMulPost::kTanh) ? UnaryOp::kTanh
                       : p == static_cast<int64_t>(MatMulPost::kSigmoid) ? UnaryOp::kSigmoid
                                                                          : UnaryOp::kRelu;
    PIJIT_ASSIGN_OR_RETURN(r, Unary(op, r));
  }
  return r;
}

const char* MatMulPostName(MatMulPost p) {
  switch (p) {
    case MatMulPost::kBias: return "bias";
    case MatMulPost::kAdd: return "add";
    case MatMulPost::kRelu: return "relu";
    case MatMulPost::kGelu: return "gelu";
    case MatMulPost::kTanh: return "tanh";
    case MatMulPost::kSigmoid: return "sigmoid";
    case MatMulPost::kMul: return "mul";
  }
  return "?";
}

absl::StatusOr<TensorMeta> InferMatMulEpilogue(const TensorMeta& a, const TensorMeta& b,
                                               absl::Span<const int64_t> post,
                                               absl::Span<const TensorMeta* const> operands) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta out, InferMatMul(a, b));
  if (!IsFloating(out.dtype)) {
    return absl::UnimplementedError(absl::StrFormat(
        "fused_matmul: unsupported dtype %s, expected a floating dtype", DTypeName(out.dtype)));
  }
  static constexpr PostOpRules kRules{
      "fused_matmul", "the product", "the product's", "bias must be the first post-op",
      "run along the last axis of", [](const TensorMeta& o, const TensorMeta& out) {
        return !out.shape.empty() && IsRow(o, out.shape.back());
      }};
  PIJIT_RETURN_IF_ERROR(CheckPostOps(kRules, out, false, post, operands));
  return out;
}

bool MatMulEpilogueIsOnePrimitive(const TensorMeta& a, const TensorMeta& b,
                                  absl::Span<const int64_t> post,
                                  absl::Span<const TensorMeta* const> operands) {
  auto out = InferMatMulEpilogue(a, b, post, operands);
  if (!out.ok() || out->dtype != DType::kFloat32 || a.dtype != DType::kFloat32 ||
      b.dtype != DType::kFloat32 || a.shape.size() < 2 || b.shape.size() != 2 ||
      NumElements(out->shape) == 0 || b.shape[0] == 0) {
    return false;
  }
  for (const TensorMeta* o : operands)
    if (!IsRow(*o, b.shape[1]) && o->shape != out->shape) return false;
  for (size_t i = 0; i + 1 < post.size(); ++i)
    if (post[i] == static_cast<int64_t>(MatMulPost::kRelu)) return false;  // only last
  return true;
}

absl::StatusOr<Tensor> MatMulEpilogue(const Tensor& a, const Tensor& b,
                                      absl::Span<const int64_t> post,
                                      absl::Span<const Tensor* const> operands) {
  const OperandMetas metas(operands);
  const TensorMeta ma = MetaOf(a), mb = MetaOf(b);
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferMatMulEpilogue(ma, mb, post, metas.ptrs));
  if (!MatMulEpilogueIsOnePrimitive(ma, mb, post, metas.ptrs)) {
    return RunOneByOne(a, b, post, operands);
  }
  const int64_t k = b.shape()[0], n = b.shape()[1];
  const int64_t m = NumElements(meta.shape) / n;
  Tensor a2 = a;
  if (a.ndim() > 2) { PIJIT_ASSIGN_OR_RETURN(a2, Reshape(a, {m, k})); }
  if (a2.strides()[0] <= 0 || a2.strides()[1] <= 0) a2 = a2.Contiguous();
  Tensor b2 = b;
  if (b2.strides()[0] <= 0 || b2.strides()[1] <= 0) b2 = b2.Contiguous();
  EpilogueKey key{m, n, k, a2.strides()[0], a2.strides()[1], b2.strides()[0], b2.strides()[1]};
  const absl::Span<const int64_t> post_all = post;
  const bool relu_after = !post.empty() && post.back() == static_cast<int64_t>(MatMulPost::kRelu);
  if (relu_after) post.remove_suffix(1);
  absl::InlinedVector<Tensor, 4> dense;  // the operands, contiguous
  for (size_t i = 0; i < post.size(); ++i) {
    key.push_back(post[i]);
    if (!MatMulPostTakesOperand(post[i])) continue;
    const Tensor& o = *operands[dense.size()];
    key.push_back(IsRow(MetaOf(o), n) ? 1 : 0);
    dense.push_back(o.Contiguous());
  }
  const SmallProblemThreads threads(2.0 * static_cast<double>(m) * n * k);
  const EpiloguePrimitive* prim = GetEpilogue(key);
  if (prim == nullptr) return RunOneByOne(a, b, post_all, operands);
  const EpiloguePrimitive& p = *prim;
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);
  using dnnl::memory;
  auto& e = DnnlEngine();
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(p.a, e, a2.raw_data())},
                                       {DNNL_ARG_WEIGHTS, memory(p.b, e, b2.raw_data())},
                                       {DNNL_ARG_DST, memory(p.c, e, out.raw_data())}};
  size_t next = 0, binary = 0;
  for (int64_t q : post) {
    if (!MatMulPostTakesOperand(q)) continue;
    void* data = dense[next++].raw_data();
    if (q == static_cast<int64_t>(MatMulPost::kBias)) {
      args.emplace(DNNL_ARG_BIAS, memory(p.bias, e, data));
    } else {
      args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(p.binary_index[binary]) | DNNL_ARG_SRC_1,
                   memory(p.binary[binary], e, data));
      ++binary;
    }
  }
  p.prim.execute(DnnlStream(), args);
  DnnlStream().wait();
  if (relu_after) {
    float* y = out.data<float>();  // as Unary's relu
    ParallelFor(out.numel(), 1 << 16, [y](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) y[i] = loops::Relu(y[i]);
    });
  }
  return out;
}

}  // namespace pijit
