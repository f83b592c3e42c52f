// Deterministic, smoothly varying test inputs for the normalisation kernels' tests: element i
// is 2 sin(1.3 i + phase) + offset, so rows differ, no two neighbours are equal and the values
// are the same on every run and machine.
#pragma once
#include <cmath>
#include <type_traits>

#include "kernels/ops.h"
#include "kernels/tensor.h"

namespace pijit {

inline Tensor Wave(Shape shape, DType dt, double phase, double offset = 0) {
  Tensor t = Tensor::Empty(shape, dt);
  DispatchDType(dt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      for (int64_t i = 0; i < t.numel(); ++i)
        t.data<T>()[i] = static_cast<T>(std::sin(static_cast<double>(i) * 1.3 + phase) * 2 + offset);
    }
  });
  return t;
}

}  // namespace pijit
