// Matrix products with NumPy's matmul semantics. float32 GEMMs run on oneDNN, float64 on
// BLAS, integer and boolean products on a plain loop.
#include <cblas.h>

#include <array>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>

#include "absl/container/flat_hash_map.h"
#include "kernels/cpu/dnnl_threads.h"
#include "kernels/errors.h"
#include "kernels/ops.h"

namespace pijit {
namespace {

dnnl::engine& CpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// A oneDNN matmul primitive with its memory descriptors, cached by problem shape and strides
// (creating a primitive descriptor costs far more than a small product).
// Its memory objects are made once too and pointed at each call's data (set_data_handle):
// making three per call cost about as much as a 2x2 product itself. The cache is per thread,
// so a call never shares them.
struct MatMulPrimitive {
  dnnl::memory::desc a, b, c;
  dnnl::matmul prim;
  dnnl::memory am, bm, cm;
};
using MatMulKey = std::array<int64_t, 7>;

MatMulPrimitive& GetMatMul(const MatMulKey& key) {
  static thread_local absl::flat_hash_map<MatMulKey, std::unique_ptr<MatMulPrimitive>> cache;
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  using dnnl::memory;
  const auto [m, n, k, sa0, sa1, sb0, sb1] = key;
  auto p = std::make_unique<MatMulPrimitive>();
  p->a = memory::desc({m, k}, memory::data_type::f32, memory::dims{sa0, sa1});
  p->b = memory::desc({k, n}, memory::data_type::f32, memory::dims{sb0, sb1});
  p->c = memory::desc({m, n}, memory::data_type::f32, memory::format_tag::ab);
  p->prim = dnnl::matmul(dnnl::matmul::primitive_desc(CpuEngine(), p->a, p->b, p->c));
  p->am = memory(p->a, CpuEngine(), DNNL_MEMORY_NONE);
  p->bm = memory(p->b, CpuEngine(), DNNL_MEMORY_NONE);
  p->cm = memory(p->c, CpuEngine(), DNNL_MEMORY_NONE);
  if (cache.size() > 1024) cache.clear();  // bound the cache; entries are cheap to rebuild
  return *cache.emplace(key, std::move(p)).first->second;
}

// C[m,n] = A[m,k] * B[k,n]; A and B with arbitrary positive element strides, C contiguous.
void GemmF32(const float* a, int64_t sa0, int64_t sa1, const float* b, int64_t sb0, int64_t sb1,
             float* c, int64_t m, int64_t n, int64_t k) {
  const SmallProblemThreads threads(2.0 * static_cast<double>(m) * n * k);
  MatMulPrimitive& p = GetMatMul({m, n, k, sa0, sa1, sb0, sb1});
  static thread_local dnnl::stream stream(CpuEngine());
  p.am.set_data_handle(const_cast<float*>(a));
  p.bm.set_data_handle(const_cast<float*>(b));
  p.cm.set_data_handle(c);
  p.prim.execute(stream, {{DNNL_ARG_SRC, p.am}, {DNNL_ARG_WEIGHTS, p.bm}, {DNNL_ARG_DST, p.cm}});
  stream.wait();
}

// BLAS needs one unit stride per operand: pass it as a row- or column-major matrix.
bool BlasLayout(int64_t s0, int64_t s1, int64_t rows, int64_t cols, CBLAS_TRANSPOSE* trans,
                int64_t* ld) {
  if (s1 == 1 && s0 >= std::max<int64_t>(1, cols)) { *trans = CblasNoTrans; *ld = s0; return true; }
  if (s0 == 1 && s1 >= std::max<int64_t>(1, rows)) { *trans = CblasTrans; *ld = s1; return true; }
  return false;
}

void GemmF64(const Tensor& a, const Tensor& b, double* c, int64_t m, int64_t n, int64_t k) {
  Tensor ca = a, cb = b;
  CBLAS_TRANSPOSE ta, tb;
  int64_t lda, ldb;
  if (!BlasLayout(a.strides()[0], a.strides()[1], m, k, &ta, &lda)) {
    ca = a.Contiguous();
    ta = CblasNoTrans;
    lda = std::max<int64_t>(1, k);
  }
  if (!BlasLayout(b.strides()[0], b.strides()[1], k, n, &tb, &ldb)) {
    cb = b.Contiguous();
    tb = CblasNoTrans;
    ldb = std::max<int64_t>(1, n);
  }
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, ca.data<double>(), lda, cb.data<double>(), ldb,
              0.0, c, std::max<int64_t>(1, n));
}

template <typename T>
void GemmNaive(const Tensor& a, const Tensor& b, T* c, int64_t m, int64_t n, int64_t k) {
  using Acc = std::conditional_t<std::is_same_v<T, bool>, int64_t, ComputeType<T>>;
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  const int64_t a0 = a.strides()[0], a1 = a.strides()[1], b0 = b.strides()[0], b1 = b.strides()[1];
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      Acc acc = 0;
      // Integers wrap as NumPy's: the sum of products modulo 2^bits is the same in any width.
      for (int64_t p = 0; p < k; ++p) acc += static_cast<Acc>(pa[i * a0 + p * a1] * pb[p * b0 + j * b1]);
      c[i * n + j] = static_cast<T>(acc);
    }
}

// One 2-D product into `c` (contiguous m x n).
void Gemm2D(const Tensor& a, const Tensor& b, void* c, int64_t m, int64_t n, int64_t k) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    DispatchDType(a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      std::fill(static_cast<T*>(c), static_cast<T*>(c) + m * n, T(0));
    });
    return;
  }
  switch (a.dtype()) {
    case DType::kFloat32:
      if (a.strides()[0] <= 0 || a.strides()[1] <= 0 || b.strides()[0] <= 0 || b.strides()[1] <= 0) {
        Gemm2D(a.Contiguous(), b.Contiguous(), c, m, n, k);  // oneDNN needs positive strides
        return;
      }
      GemmF32(a.data<float>(), a.strides()[0], a.strides()[1], b.data<float>(), b.strides()[0],
              b.strides()[1], static_cast<float*>(c), m, n, k);
      return;
    case DType::kFloat64:
      GemmF64(a, b, static_cast<double*>(c), m, n, k);
      return;
    default:
      DispatchDType(a.dtype(), [&](auto tag) {
        using T = decltype(tag);
        GemmNaive<T>(a, b, static_cast<T*>(c), m, n, k);
      });
  }
}

Tensor Slice2D(const Tensor& t, int64_t batch_offset) {
  const int64_t nd = t.ndim();
  return Tensor::View(t.storage(), t.dtype(), Shape{t.shape()[nd - 2], t.shape()[nd - 1]},
                      Shape{t.strides()[nd - 2], t.strides()[nd - 1]}, t.offset() + batch_offset);
}

}  // namespace

absl::StatusOr<TensorMeta> InferMatMul(const TensorMeta& a, const TensorMeta& b) {
  if (a.shape.empty() || b.shape.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "matmul: input operand %d does not have enough dimensions (has 0, needs at least 1)",
        a.shape.empty() ? 0 : 1));
  }
  Shape sa = a.shape, sb = b.shape;
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  const int64_t k = sa.back(), k2 = sb[sb.size() - 2];
  if (k != k2) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "matmul: shapes %s and %s are not aligned: %d (dim %d) != %d (dim %d)",
        ShapeToString(a.shape), ShapeToString(b.shape), k, a.shape.size() - 1, k2,
        b.shape.size() == 1 ? 0 : b.shape.size() - 2));
  }
  PIJIT_ASSIGN_OR_RETURN(
      Shape batch,
      BroadcastShapes("matmul", absl::MakeSpan(sa).subspan(0, sa.size() - 2),
                      absl::MakeSpan(sb).subspan(0, sb.size() - 2)));
  Shape out = batch;
  if (a.shape.size() > 1) out.push_back(sa[sa.size() - 2]);
  if (b.shape.size() > 1) out.push_back(sb.back());
  PIJIT_ASSIGN_OR_RETURN(DType dt, PromoteOrError("matmul", a.dtype, b.dtype));
  return TensorMeta{dt, std::move(out)};
}

absl::StatusOr<Tensor> MatMul(const Tensor& a, const Tensor& b) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferMatMul(MetaOf(a), MetaOf(b)));
  if (IsHalfFloat(meta.dtype)) {
    // float16/bfloat16 products accumulate in float32 (oneDNN) and round once at the end.
    PIJIT_ASSIGN_OR_RETURN(Tensor wa, Cast(a, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor wb, Cast(b, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor r, MatMul(wa, wb));
    return Cast(r, meta.dtype);
  }
  PIJIT_ASSIGN_OR_RETURN(Tensor ca, Cast(a, meta.dtype));
  PIJIT_ASSIGN_OR_RETURN(Tensor cb, Cast(b, meta.dtype));
  if (ca.ndim() == 1) { PIJIT_ASSIGN_OR_RETURN(ca, Reshape(ca, {1, ca.shape()[0]})); }
  if (cb.ndim() == 1) { PIJIT_ASSIGN_OR_RETURN(cb, Reshape(cb, {cb.shape()[0], 1})); }
  const int64_t m = ca.shape()[ca.ndim() - 2], k = ca.shape().back(), n = cb.shape().back();
  Shape batch(meta.shape.begin(), meta.shape.end() - (a.ndim() > 1) - (b.ndim() > 1));
  Shape full_a = batch, full_b = batch;
  full_a.insert(full_a.end(), {m, k});
  full_b.insert(full_b.end(), {k, n});
  PIJIT_ASSIGN_OR_RETURN(Tensor va, BroadcastTo(ca, full_a));
  PIJIT_ASSIGN_OR_RETURN(Tensor vb, BroadcastTo(cb, full_b));
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);
  const int64_t nb = NumElements(batch);
  const size_t item = out.itemsize();
  Shape idx(batch.size(), 0);
  for (int64_t i = 0; i < nb; ++i) {
    int64_t oa = 0, ob = 0;
    for (size_t d = 0; d < batch.size(); ++d) {
      oa += idx[d] * va.strides()[d];
      ob += idx[d] * vb.strides()[d];
    }
    Gemm2D(Slice2D(va, oa), Slice2D(vb, ob), static_cast<char*>(out.raw_data()) + i * m * n * item,
           m, n, k);
    for (size_t d = batch.size(); d-- > 0;) {
      if (++idx[d] < batch[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

}  // namespace pijit
