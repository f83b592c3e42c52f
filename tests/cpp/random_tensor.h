// Random test inputs: for graphs, uniform values in [-bound, bound] with exact -0.0, 0 and 1
// mixed in (each one draw in `one_in`), so that sign and identity rules are exercised too; for
// the float32 kernels, plain uniform values in [-1, 1] from a seed, and their float64 copy
// for the float64 reference loops.
#pragma once
#include <random>
#include <type_traits>

#include "kernels/ops.h"
#include "kernels/tensor.h"

namespace pijit {

inline Tensor RandomTensor(const TensorMeta& m, std::mt19937& rng, double bound, int one_in) {
  Tensor t = Tensor::Empty(m.shape, m.dtype);
  std::uniform_real_distribution<double> u(-bound, bound);
  std::uniform_int_distribution<int> pick(0, one_in - 1);
  DispatchDType(m.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < t.numel(); ++i) {
      const int p = pick(rng);
      const double v = p == 0 ? -0.0 : p == 1 ? 0.0 : p == 2 ? 1.0 : u(rng);
      if constexpr (std::is_same_v<T, bool>) t.data<T>()[i] = v > 0;
      else t.data<T>()[i] = static_cast<T>(v);
    }
  });
  return t;
}

inline Tensor UniformFloat32(Shape shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Tensor t = Tensor::Empty(shape, DType::kFloat32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

inline Tensor AsFloat64(const Tensor& t) { return *Cast(t, DType::kFloat64); }

}  // namespace pijit
