// Shared by the NCHW layer kernels: window geometry (output size and resolved padding) and
// the oneDNN engine and stream.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/ops.h"

namespace pijit {

// A window resolved against an input size: output size and explicit padding per side.
struct Geometry2D {
  int64_t out[2];
  int64_t pad[4];  // top, bottom, left, right; bottom/right grow for ceil_mode
  int64_t pad_given[4];  // the padding before ceil_mode extension (avg divisor bounds)
};

// `kernel` is the window's size (conv2d: the weight's); errors name `op` and the shapes.
absl::StatusOr<Geometry2D> ResolveWindow(const char* op, const Shape& x, const int64_t kernel[2],
                                         const Window2D& win, bool pooling);

inline dnnl::engine& DnnlEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}
inline dnnl::stream& DnnlStream() {
  static thread_local dnnl::stream stream(DnnlEngine());
  return stream;
}

// Bounds a primitive cache: entries are cheap to rebuild.
template <typename Map>
void TrimCache(Map& cache) {
  if (cache.size() > 512) cache.clear();
}

}  // namespace pijit
