// Test inputs for graphs: uniform values in [-bound, bound], with exact -0.0, 0 and 1 mixed
// in (each one draw in `one_in`), so that sign and identity rules are exercised too.
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

}  // namespace pijit
