// Storage: the cache of freed huge-page buffers; planned slots.
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

TEST(PlannedSlotTest, FirstAllocationOfItsSizeTakesTheSlot) {
  auto slot = Storage::Allocate(4096);
  const uint64_t before = StorageAllocations();
  {
    PlannedSlot planned(slot);
    Tensor other = Tensor::Empty({10}, DType::kFloat32);  // another size: fresh memory
    EXPECT_FALSE(planned.taken());
    Tensor mine = Tensor::Empty({1024}, DType::kFloat32);
    EXPECT_TRUE(planned.taken());
    EXPECT_EQ(mine.storage(), slot);
    Tensor again = Tensor::Empty({1024}, DType::kFloat32);  // the slot is taken once
    EXPECT_NE(again.storage(), slot);
  }
  EXPECT_EQ(StorageAllocations() - before, 2u);
  Tensor after = Tensor::Empty({1024}, DType::kFloat32);  // closed: fresh memory
  EXPECT_NE(after.storage(), slot);
}

TEST(PlannedSlotTest, ABarrierHidesTheEnclosingSlotUntilItCloses) {
  auto slot = Storage::Allocate(4096);
  PlannedSlot planned(slot);
  {
    PlannedSlot barrier;
    Tensor t = Tensor::Empty({1024}, DType::kFloat32);
    EXPECT_NE(t.storage(), slot);
  }
  EXPECT_FALSE(planned.taken());
  Tensor t = Tensor::Empty({1024}, DType::kFloat32);
  EXPECT_EQ(t.storage(), slot);
}

TEST(DeviceTest, HostStoragesAndTensorsAreOnTheCpu) {
  EXPECT_EQ(Storage::Allocate(64)->device(), Device::kCPU);
  float x = 1;
  EXPECT_EQ(Storage::Wrap(&x, sizeof(x), [] {})->device(), Device::kCPU);
  EXPECT_EQ(Tensor::Empty({2, 3}, DType::kFloat32).device(), Device::kCPU);
  EXPECT_EQ(Tensor().device(), Device::kCPU);  // undefined: the host
  EXPECT_STREQ(DeviceName(Device::kCPU), "CPU");
  EXPECT_STREQ(DeviceName(Device::kCUDA), "GPU");
}

}  // namespace
}  // namespace pijit
