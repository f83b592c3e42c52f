// Basic indexing resolved against a shape and strides: the view it selects. Shared by basic
// indexing (kernels/index.cc) and advanced indexing (kernels/advanced_index.cc), which
// resolves its basic items the same way.
#pragma once
#include "absl/status/statusor.h"
#include "kernels/tensor.h"

namespace pijit {

struct IndexView {
  Shape shape, strides;
  int64_t offset = 0;  // added to the input's offset
};

// `encoded` holds basic items only (EncodeIndex); errors as Index's.
absl::StatusOr<IndexView> ResolveIndex(absl::Span<const int64_t> shape,
                                       absl::Span<const int64_t> strides,
                                       absl::Span<const int64_t> encoded);

}  // namespace pijit
