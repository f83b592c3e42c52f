// Creation kernels: full, arange, linspace, eye, and the seeded random generator.
#include <atomic>
#include <cmath>
#include <cstring>

#include "kernels/errors.h"
#include "kernels/ops.h"

namespace pijit {

absl::StatusOr<TensorMeta> InferFull(absl::Span<const int64_t> shape, DType dtype) {
  PIJIT_RETURN_IF_ERROR(CheckShape("full", shape));
  return TensorMeta{dtype, Shape(shape.begin(), shape.end())};
}

absl::StatusOr<Tensor> Full(absl::Span<const int64_t> shape, DType dtype, const Tensor& value) {
  PIJIT_RETURN_IF_ERROR(CheckShape("full", shape));
  if (value.numel() != 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "full: the fill value must have one element, got a tensor of shape %s",
        ShapeToString(value.shape())));
  }
  Tensor out = Tensor::Empty(shape, dtype);
  const int64_t n = out.numel();
  if (n == 0) return out;
  // The value is converted into the first element (as a cast would), then repeated.
  CopyInto(value, Tensor::View(out.storage(), dtype, value.shape(),
                               Shape(value.shape().size(), 1), out.offset()));
  auto repeat = [&](auto tag) {
    using T = decltype(tag);
    T* p = out.data<T>();
    const T x = p[0];
    for (int64_t i = 1; i < n; ++i) p[i] = x;
  };
  if (IsComplex(dtype)) DispatchComplex(dtype, repeat);
  else DispatchDType(dtype, repeat);
  return out;
}

absl::StatusOr<int64_t> ArangeLength(const char* op, double start, double stop, double step) {
  if (step == 0) return absl::InvalidArgumentError(absl::StrFormat("%s: step must not be zero", op));
  if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: start, end and step must be finite numbers", op));
  }
  const double n = std::ceil((stop - start) / step);
  if (n > 9.0e15) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: the range has too many elements (%g)", op, n));
  }
  return n > 0 ? static_cast<int64_t>(n) : 0;
}

absl::StatusOr<Tensor> Arange(int64_t n, DType dtype, const Tensor& params) {
  if (params.numel() != 2 || n < 0) return absl::InternalError("arange: malformed parameters");
  Tensor out = Tensor::Empty({n}, dtype);
  DispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = out.data<T>();
    if (params.dtype() == DType::kInt64) {
      const int64_t start = params.data<int64_t>()[0], step = params.data<int64_t>()[1];
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(start + i * step);
    } else {
      const double start = params.data<double>()[0], step = params.data<double>()[1];
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(start + static_cast<double>(i) * step);
    }
  });
  return out;
}

absl::StatusOr<Tensor> Linspace(double start, double stop, int64_t num, DType dtype) {
  if (num < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("linspace: number of samples, %d, must be non-negative", num));
  }
  PIJIT_RETURN_IF_ERROR(CheckShape("linspace", {num}));
  Tensor out = Tensor::Empty({num}, dtype);
  // NumPy's formula: start + i * step, with the last value exactly `stop`.
  const double step = num > 1 ? (stop - start) / static_cast<double>(num - 1) : 0.0;
  DispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = out.data<T>();
    for (int64_t i = 0; i < num; ++i) p[i] = static_cast<T>(start + static_cast<double>(i) * step);
    if (num > 1) p[num - 1] = static_cast<T>(stop);
  });
  return out;
}

absl::StatusOr<Tensor> Eye(int64_t n, int64_t m, int64_t k, DType dtype) {
  if (n < 0 || m < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("eye: negative dimensions are not allowed, got n=%d, m=%d", n, m));
  }
  PIJIT_RETURN_IF_ERROR(CheckShape("eye", {n, m}));
  Tensor out = Tensor::Empty({n, m}, dtype);
  std::memset(out.raw_data(), 0, static_cast<size_t>(n * m) * out.itemsize());
  DispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = out.data<T>();
    for (int64_t i = std::max<int64_t>(0, -k); i < n && i + k < m; ++i) p[i * m + i + k] = T(1);
  });
  return out;
}

// ---- random -----------------------------------------------------------------------------------
// Counter-based: element i of a draw is a hash of (seed, counter + i), so a draw is
// reproducible from the seed and the number of values drawn before it, and needs no lock.

namespace {
std::atomic<uint64_t> g_seed{0};
std::atomic<uint64_t> g_counter{0};

// A double in [0, 1) from 53 random bits.
inline double Uniform01(uint64_t key, uint64_t i) {
  return static_cast<double>(RandomMix(key ^ RandomMix(i)) >> 11) * 0x1.0p-53;
}
}  // namespace

RandomDraw ReserveRandom(uint64_t values, int64_t seed) {
  if (seed >= 0) return {RandomMix(static_cast<uint64_t>(seed)), 0};
  return {RandomMix(g_seed.load()), g_counter.fetch_add(values)};
}

void SetSeed(uint64_t seed) {
  g_seed.store(seed);
  g_counter.store(0);
}
uint64_t GetSeed() { return g_seed.load(); }

absl::StatusOr<TensorMeta> InferRandom(Distribution d, absl::Span<const int64_t> shape,
                                       DType dtype) {
  const char* name = d == Distribution::kUniform ? "uniform" : "normal";
  PIJIT_RETURN_IF_ERROR(CheckShape(name, shape));
  if (!IsFloating(dtype)) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: unsupported dtype %s, expected a floating dtype (Float16, BFloat16, Float32 or Float64)", name, DTypeName(dtype)));
  }
  return TensorMeta{dtype, Shape(shape.begin(), shape.end())};
}

absl::StatusOr<Tensor> Random(Distribution d, absl::Span<const int64_t> shape, DType dtype,
                              double a, double b, int64_t seed) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferRandom(d, shape, dtype));
  Tensor out = Tensor::Empty(meta.shape, dtype);
  const uint64_t n = static_cast<uint64_t>(out.numel());
  // Normal values use two uniforms each (Box-Muller).
  const uint64_t draws = d == Distribution::kNormal ? 2 * n : n;
  const RandomDraw draw = ReserveRandom(draws, seed);
  const uint64_t key = draw.key, base = draw.base;
  DispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsFloat<T>) {
      T* p = out.data<T>();
      if (d == Distribution::kUniform) {
        for (uint64_t i = 0; i < n; ++i) {
          T v = static_cast<T>(a + (b - a) * Uniform01(key, base + i));
          // Rounding to float32 can reach the upper bound: keep the interval half-open.
          p[i] = v < static_cast<T>(b) || a == b ? v : static_cast<T>(a);
        }
      } else {
        for (uint64_t i = 0; i < n; ++i) {
          const double u1 = 1.0 - Uniform01(key, base + 2 * i);  // (0, 1]: log is finite
          const double u2 = Uniform01(key, base + 2 * i + 1);
          const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
          p[i] = static_cast<T>(a + b * z);
        }
      }
    }
  });
  return out;
}

}  // namespace pijit
