// Storage: the cache of freed huge-page buffers.
#include "gtest/gtest.h"
#include "kernels/tensor.h"

namespace pijit {
namespace {

constexpr int64_t kBig = int64_t{3} << 20;  // float32 elements: 12 MB, a huge-page buffer

TEST(StorageTest, FreedLargeBufferIsReusedBySameSize) {
  void* first;
  {
    Tensor a = Tensor::Empty({kBig}, DType::kFloat32);
    first = a.raw_data();
  }
  Tensor b = Tensor::Empty({kBig}, DType::kFloat32);
  EXPECT_EQ(b.raw_data(), first);
}

TEST(StorageTest, LiveLargeBuffersAreDistinct) {
  Tensor a = Tensor::Empty({kBig}, DType::kFloat32);
  Tensor b = Tensor::Empty({kBig}, DType::kFloat32);
  EXPECT_NE(a.raw_data(), b.raw_data());
  a.data<float>()[0] = 1.f;
  b.data<float>()[0] = 2.f;
  EXPECT_EQ(a.data<float>()[0], 1.f);
}

}  // namespace
}  // namespace pijit
