// Training batch norm's forward and gradients over activations held in a blocked layout (kernels/
// blocked_layout.h): x and dy as [N, C/b, S, b], rows of b channels. Where the NCHW kernels
// (batch_norm_grad.cc) walk one channel's runs, these walk rows and keep b sums side by side,
// so the inner loops run along the channels in a row and vectorise for any b (8, 16 or all C).
// Tasks take (sample, channel block) pairs; each writes its partial sums, added in double once
// all are done, and each adds its rows in float in runs of kRun rows, then into double.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/batch_norm_blocked.h"

#include "kernels/blocked_layout.h"
#include "kernels/cpu/loops.h"
#include "kernels/cpu/reduce_vec.h"  // ActiveIsa
#include "kernels/errors.h"
#include "kernels/thread_pool.h"

#define PIJIT_AVX2 __attribute__((target("avx2")))

namespace pijit {
namespace {

// x viewed as [n, blocks, s, b].
struct Dims {
  int64_t n, blocks, s, b;
  int64_t c() const { return blocks * b; }
  int64_t count() const { return n * s; }
  int64_t tasks() const { return n * blocks; }
};
Dims DimsOf(const Shape& blocked) {
  return {blocked[0], blocked[1], blocked[2] * blocked[3], blocked[4]};
}

// Rows added in float before the run's sums go into double.
constexpr int64_t kRun = 64;

// For task t (sample t / blocks, block t % blocks), the sums over its s rows of `terms`
// functions of (offset of the value, channel in the block), into out[k * b + j] (double).
template <int kTerms, typename F>
__attribute__((always_inline)) inline void TaskSums(const Dims& d, int64_t t, double* out, F f) {
  std::vector<float> run(static_cast<size_t>(kTerms * d.b));
  std::fill(out, out + kTerms * d.b, 0.0);
  const int64_t base = t * d.s * d.b;
  for (int64_t i0 = 0; i0 < d.s; i0 += kRun) {
    std::fill(run.begin(), run.end(), 0.0f);
    float* acc = run.data();
    for (int64_t i = i0; i < std::min(d.s, i0 + kRun); ++i) {
      const int64_t row = base + i * d.b;
      for (int64_t j = 0; j < d.b; ++j) f(acc, row + j, j);
    }
    for (int64_t k = 0; k < kTerms * d.b; ++k) out[k] += acc[k];
  }
}

// Σx per task and lane.
void SumXTasks(const float* x, const Dims& d, double* partial, int64_t lo, int64_t hi) {
  for (int64_t t = lo; t < hi; ++t) {
    TaskSums<1>(d, t, partial + t * d.b, [&](float* acc, int64_t at, int64_t j) { acc[j] += x[at]; });
  }
}
PIJIT_AVX2 void SumXTasksAvx2(const float* x, const Dims& d, double* partial, int64_t lo, int64_t hi) {
  for (int64_t t = lo; t < hi; ++t) {
    TaskSums<1>(d, t, partial + t * d.b, [&](float* acc, int64_t at, int64_t j) { acc[j] += x[at]; });
  }
}

// Σ(x - μ)², Σdy and Σ dy (x - μ) per task and lane (μ per channel, in float as the NCHW kernel
// subtracts it).
__attribute__((always_inline)) inline void CentredTask(const float* x, const float* dy,
                                                       const float* mu, const Dims& d, int64_t t,
                                                       double* out) {
  const float* m = mu + (t % d.blocks) * d.b;
  const int64_t b = d.b;
  TaskSums<3>(d, t, out, [&](float* acc, int64_t at, int64_t j) {
    const float xc = x[at] - m[j];
    acc[j] += xc * xc;
    acc[b + j] += dy[at];
    acc[2 * b + j] += dy[at] * xc;
  });
}
void CentredTasks(const float* x, const float* dy, const float* mu, const Dims& d,
                  double* partial, int64_t lo, int64_t hi) {
  for (int64_t t = lo; t < hi; ++t) CentredTask(x, dy, mu, d, t, partial + t * 3 * d.b);
}
PIJIT_AVX2 void CentredTasksAvx2(const float* x, const float* dy, const float* mu, const Dims& d,
                                 double* partial, int64_t lo, int64_t hi) {
  for (int64_t t = lo; t < hi; ++t) CentredTask(x, dy, mu, d, t, partial + t * 3 * d.b);
}

// Σ(x - μ)² per task and lane.
__attribute__((always_inline)) inline void SquaresTask(const float* x, const float* mu,
                                                       const Dims& d, int64_t t, double* out) {
  const float* m = mu + (t % d.blocks) * d.b;
  TaskSums<1>(d, t, out, [&](float* acc, int64_t at, int64_t j) {
    const float xc = x[at] - m[j];
    acc[j] += xc * xc;
  });
}
void SquaresTasks(const float* x, const float* mu, const Dims& d, double* partial, int64_t lo,
                  int64_t hi) {
  for (int64_t t = lo; t < hi; ++t) SquaresTask(x, mu, d, t, partial + t * d.b);
}
PIJIT_AVX2 void SquaresTasksAvx2(const float* x, const float* mu, const Dims& d, double* partial,
                                 int64_t lo, int64_t hi) {
  for (int64_t t = lo; t < hi; ++t) SquaresTask(x, mu, d, t, partial + t * d.b);
}

// The per-channel vectors of the normalisation y = (x - mean) scale + beta: centring first
// keeps y accurate where the mean is large against the deviation (x scale + shift would lose
// it to cancellation).
struct Normalisation {
  const float* mean;
  const float* scale;
  const float* beta;
};

// y = (x - mean) scale + beta per channel (then relu where kRelu), over rows [lo, hi).
template <bool kRelu>
__attribute__((always_inline)) inline void NormaliseRows(const float* x, float* y,
                                                         const Normalisation& q, const Dims& d,
                                                         int64_t lo, int64_t hi) {
  for (int64_t r = lo; r < hi; ++r) {
    const int64_t first = ((r / d.s) % d.blocks) * d.b;
    const float* m = q.mean + first;
    const float* a = q.scale + first;
    const float* b = q.beta + first;
    const int64_t at = r * d.b;
    for (int64_t j = 0; j < d.b; ++j) {
      const float v = (x[at + j] - m[j]) * a[j] + b[j];
      y[at + j] = kRelu ? loops::Relu(v) : v;
    }
  }
}
template <bool kRelu>
void NormaliseBaseline(const float* x, float* y, const Normalisation& q, const Dims& d,
                       int64_t lo, int64_t hi) {
  NormaliseRows<kRelu>(x, y, q, d, lo, hi);
}
template <bool kRelu>
PIJIT_AVX2 void NormaliseAvx2(const float* x, float* y, const Normalisation& q, const Dims& d,
                              int64_t lo, int64_t hi) {
  NormaliseRows<kRelu>(x, y, q, d, lo, hi);
}

// Adds the tasks' partial sums (`terms` rows of b per task) per channel: total[k * C + c].
std::vector<double> Combine(const std::vector<double>& partial, const Dims& d, int terms) {
  std::vector<double> total(static_cast<size_t>(terms * d.c()), 0.0);
  for (int64_t t = 0; t < d.tasks(); ++t) {
    const int64_t first = (t % d.blocks) * d.b;
    for (int k = 0; k < terms; ++k)
      for (int64_t j = 0; j < d.b; ++j)
        total[k * d.c() + first + j] += partial[(t * terms + k) * d.b + j];
  }
  return total;
}

// Tasks per parallel chunk: about 32K values.
int64_t Grain(const Dims& d) {
  return std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(1, d.s * d.b));
}

// dx = a (dy - mean_dy) + k (x - μ) per channel, over rows [lo, hi) of all n * blocks * s.
struct InputCoefficients {
  std::vector<float> a, mean_dy, k, mu;
};
__attribute__((always_inline)) inline void InputRows(const float* x, const float* dy, float* dx,
                                                     const InputCoefficients& q, const Dims& d,
                                                     int64_t lo, int64_t hi) {
  for (int64_t r = lo; r < hi; ++r) {
    const int64_t first = ((r / d.s) % d.blocks) * d.b;
    const float* a = q.a.data() + first;
    const float* md = q.mean_dy.data() + first;
    const float* k = q.k.data() + first;
    const float* mu = q.mu.data() + first;
    const int64_t at = r * d.b;
    for (int64_t j = 0; j < d.b; ++j) dx[at + j] = a[j] * (dy[at + j] - md[j]) + k[j] * (x[at + j] - mu[j]);
  }
}
void InputRowsBaseline(const float* x, const float* dy, float* dx, const InputCoefficients& q,
                       const Dims& d, int64_t lo, int64_t hi) {
  InputRows(x, dy, dx, q, d, lo, hi);
}
PIJIT_AVX2 void InputRowsAvx2(const float* x, const float* dy, float* dx,
                              const InputCoefficients& q, const Dims& d, int64_t lo, int64_t hi) {
  InputRows(x, dy, dx, q, d, lo, hi);
}

absl::Status CheckSameMeta(const char* op, const TensorMeta& x, const TensorMeta& dy) {
  if (!(dy == x)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the output gradient (%s %s) must have the input's blocked shape and dtype (%s %s)",
        op, DTypeName(dy.dtype), ShapeToString(dy.shape), DTypeName(x.dtype),
        ShapeToString(x.shape)));
  }
  return absl::OkStatus();
}

// The batch's mean of blocked x per channel (float, as the statistics are kept).
std::vector<float> BatchMean(const float* x, const Dims& d, bool avx2) {
  std::vector<double> partial(static_cast<size_t>(d.tasks() * d.b));
  ParallelFor(d.tasks(), Grain(d), [&](int64_t lo, int64_t hi) {
    if (avx2) SumXTasksAvx2(x, d, partial.data(), lo, hi);
    else SumXTasks(x, d, partial.data(), lo, hi);
  });
  const std::vector<double> sum = Combine(partial, d, 1);
  std::vector<float> mu(static_cast<size_t>(d.c()));
  for (int64_t c = 0; c < d.c(); ++c) mu[c] = static_cast<float>(sum[c] / static_cast<double>(d.count()));
  return mu;
}

}  // namespace

absl::Status BatchNormTrainBlockedF32(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                      double eps, bool relu, Tensor& y, Tensor& batch_mean,
                                      Tensor& batch_var) {
  const Dims d = DimsOf(x.shape());
  const Tensor cx = x.Contiguous(), cg = gamma.Contiguous(), cb = beta.Contiguous();
  const float* px = cx.data<float>();
  const bool avx2 = rvec::ActiveIsa() >= 2;
  // Two passes for the statistics (the mean, then the squares about it: no cancellation),
  // one for y.
  const std::vector<float> mu = BatchMean(px, d, avx2);
  std::vector<double> partial(static_cast<size_t>(d.tasks() * d.b));
  ParallelFor(d.tasks(), Grain(d), [&](int64_t lo, int64_t hi) {
    if (avx2) SquaresTasksAvx2(px, mu.data(), d, partial.data(), lo, hi);
    else SquaresTasks(px, mu.data(), d, partial.data(), lo, hi);
  });
  const std::vector<double> squares = Combine(partial, d, 1);
  const int64_t c = d.c();
  std::vector<float> scale(c);
  for (int64_t ch = 0; ch < c; ++ch) {
    const double var = squares[ch] / static_cast<double>(d.count());
    scale[ch] = static_cast<float>(cg.data<float>()[ch] / std::sqrt(var + eps));
    batch_mean.data<float>()[ch] = mu[ch];
    batch_var.data<float>()[ch] = static_cast<float>(var);
  }
  const Normalisation q{mu.data(), scale.data(), cb.data<float>()};
  const int64_t rows = d.n * d.blocks * d.s;
  float* py = y.data<float>();
  ParallelFor(rows, std::max<int64_t>(1, (1 << 14) / d.b), [&](int64_t lo, int64_t hi) {
    if (avx2) {
      if (relu) NormaliseAvx2<true>(px, py, q, d, lo, hi);
      else NormaliseAvx2<false>(px, py, q, d, lo, hi);
    } else if (relu) {
      NormaliseBaseline<true>(px, py, q, d, lo, hi);
    } else {
      NormaliseBaseline<false>(px, py, q, d, lo, hi);
    }
  });
  return absl::OkStatus();
}

absl::StatusOr<TensorMeta> InferBatchNormGradSumsBlocked(const TensorMeta& x, const TensorMeta& dy,
                                                         int64_t block) {
  constexpr const char* op = "batch_norm_grad_sums";
  PIJIT_ASSIGN_OR_RETURN(TensorMeta plain, PlainMetaOfBlocked(op, "the input", x, block));
  PIJIT_RETURN_IF_ERROR(CheckSameMeta(op, x, dy));
  return TensorMeta{x.dtype, {kBatchNormSumsRows, plain.shape[1]}};
}

absl::StatusOr<Tensor> BatchNormGradSumsBlocked(const Tensor& x, const Tensor& dy, double eps,
                                                int64_t block) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferBatchNormGradSumsBlocked(MetaOf(x), MetaOf(dy), block));
  Tensor sums = Tensor::Empty(meta.shape, meta.dtype);
  float* out = sums.data<float>();
  const Dims d = DimsOf(x.shape());
  if (d.count() == 0) {  // no values: zero sums, and the statistics of nothing
    std::fill(out, out + sums.numel(), 0.0f);
    return sums;
  }
  const Tensor cx = x.Contiguous(), cdy = dy.Contiguous();
  const float* px = cx.data<float>();
  const float* pdy = cdy.data<float>();
  const bool avx2 = rvec::ActiveIsa() >= 2;
  const double m = static_cast<double>(d.count());
  const std::vector<float> mu = BatchMean(px, d, avx2);
  std::vector<double> partial(static_cast<size_t>(d.tasks() * 3 * d.b));
  ParallelFor(d.tasks(), Grain(d), [&](int64_t lo, int64_t hi) {
    if (avx2) CentredTasksAvx2(px, pdy, mu.data(), d, partial.data(), lo, hi);
    else CentredTasks(px, pdy, mu.data(), d, partial.data(), lo, hi);
  });
  const std::vector<double> t = Combine(partial, d, 3);
  const int64_t c = d.c();
  for (int64_t ch = 0; ch < c; ++ch) {
    const double r = 1.0 / std::sqrt(t[ch] / m + eps);
    out[ch] = mu[ch];
    out[c + ch] = static_cast<float>(r);
    out[2 * c + ch] = static_cast<float>(t[c + ch]);
    out[3 * c + ch] = static_cast<float>(t[2 * c + ch] * r);
  }
  return sums;
}

absl::StatusOr<TensorMeta> InferBatchNormGradInputBlocked(const TensorMeta& x,
                                                          const TensorMeta& dy,
                                                          const TensorMeta& sums,
                                                          const TensorMeta& gamma, int64_t block) {
  constexpr const char* op = "batch_norm_grad_input";
  PIJIT_ASSIGN_OR_RETURN(TensorMeta plain, PlainMetaOfBlocked(op, "the input", x, block));
  PIJIT_RETURN_IF_ERROR(CheckSameMeta(op, x, dy));
  PIJIT_RETURN_IF_ERROR(InferBatchNormGradInput(plain, plain, sums, gamma).status());
  return x;
}

absl::StatusOr<Tensor> BatchNormGradInputBlocked(const Tensor& x, const Tensor& dy,
                                                 const Tensor& sums, const Tensor& gamma,
                                                 int64_t block) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferBatchNormGradInputBlocked(
                                              MetaOf(x), MetaOf(dy), MetaOf(sums), MetaOf(gamma), block));
  Tensor dx = Tensor::Empty(meta.shape, meta.dtype);
  if (dx.numel() == 0) return dx;
  const Dims d = DimsOf(x.shape());
  const Tensor cx = x.Contiguous(), cdy = dy.Contiguous(), cs = sums.Contiguous();
  const Tensor cg = gamma.Contiguous();
  const float* s = cs.data<float>();
  const float* g = cg.data<float>();
  // The NCHW kernel's coefficients (batch_norm_grad.cc InputChannels), rounded alike.
  const int64_t c = d.c();
  const double m = static_cast<double>(d.count());
  InputCoefficients q{std::vector<float>(c), std::vector<float>(c), std::vector<float>(c),
                      std::vector<float>(c)};
  for (int64_t ch = 0; ch < c; ++ch) {
    const double r = s[c + ch];
    q.mu[ch] = s[ch];
    q.a[ch] = static_cast<float>(g[ch] * r);
    q.mean_dy[ch] = static_cast<float>(s[2 * c + ch] / m);
    q.k[ch] = static_cast<float>(-static_cast<double>(g[ch]) * r * r * s[3 * c + ch] / m);
  }
  const bool avx2 = rvec::ActiveIsa() >= 2;
  const int64_t rows = d.n * d.blocks * d.s;
  ParallelFor(rows, std::max<int64_t>(1, (1 << 14) / d.b), [&](int64_t lo, int64_t hi) {
    if (avx2) InputRowsAvx2(cx.data<float>(), cdy.data<float>(), dx.data<float>(), q, d, lo, hi);
    else InputRowsBaseline(cx.data<float>(), cdy.data<float>(), dx.data<float>(), q, d, lo, hi);
  });
  return dx;
}

}  // namespace pijit
