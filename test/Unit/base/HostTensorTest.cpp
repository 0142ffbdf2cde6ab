//===- HostTensorTest.cpp - base::HostTensor ---------------------------===//

#include "base/HostTensor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace rp::runtime {
namespace {

// A new tensor is zero-initialised, 64-byte aligned, and reports its geometry.
TEST(HostTensor, ConstructsZeroedAndAligned) {
  HostTensor t(DType::F32, {2, 8, 64});
  EXPECT_EQ(t.dtype(), DType::F32);
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{2, 8, 64}));
  EXPECT_EQ(t.rank(), 3);
  EXPECT_EQ(t.dim(1), 8);
  EXPECT_EQ(t.numElements(), 1024);
  EXPECT_EQ(t.byteSize(), 4096u);
  ASSERT_NE(t.raw(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % HostTensor::kAlignment, 0u);
  for (int64_t i = 0; i < t.numElements(); ++i)
    ASSERT_EQ(t.data<float>()[i], 0.0f);
}

// Odd byte sizes are still aligned and zeroed; i1 is one byte per element.
TEST(HostTensor, OddSizesAndBool) {
  HostTensor t(DType::I1, {3, 7});
  EXPECT_EQ(t.byteSize(), 21u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
  for (int64_t i = 0; i < 21; ++i)
    EXPECT_EQ(t.data<uint8_t>()[i], 0);
}

// A 0-D tensor holds one element; a shape with a 0 holds none and no buffer.
TEST(HostTensor, ScalarAndEmpty) {
  HostTensor s(DType::F64, {});
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.numElements(), 1);
  EXPECT_EQ(s.byteSize(), 8u);
  EXPECT_EQ(s.data<double>()[0], 0.0);
  HostTensor e(DType::I64, {4, 0, 3});
  EXPECT_EQ(e.numElements(), 0);
  EXPECT_EQ(e.byteSize(), 0u);
  EXPECT_EQ(e.raw(), nullptr);
}

// The default tensor is an empty f32 [0].
TEST(HostTensor, DefaultIsEmpty) {
  HostTensor t;
  EXPECT_EQ(t.dtype(), DType::F32);
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{0}));
  EXPECT_EQ(t.numElements(), 0);
}

// formatShape and typeString spell shapes as "[2, 8, 64]".
TEST(HostTensor, Formatting) {
  EXPECT_EQ(formatShape({2, 8, 64}), "[2, 8, 64]");
  EXPECT_EQ(formatShape({}), "[]");
  EXPECT_EQ(formatShape({5}), "[5]");
  EXPECT_EQ(HostTensor(DType::BF16, {3, 1}).typeString(), "bf16[3, 1]");
}

// Moving transfers the buffer and leaves an empty tensor behind.
TEST(HostTensor, Move) {
  HostTensor a(DType::I32, {4});
  a.data<int32_t>()[2] = 7;
  const void *buffer = a.raw();
  HostTensor b(std::move(a));
  EXPECT_EQ(b.raw(), buffer);
  EXPECT_EQ(b.data<int32_t>()[2], 7);
  EXPECT_EQ(a.numElements(), 0); // NOLINT(bugprone-use-after-move): documented state
  EXPECT_EQ(a.raw(), nullptr);
  HostTensor c;
  c = std::move(b);
  EXPECT_EQ(c.raw(), buffer);
  EXPECT_EQ(c.shape(), (std::vector<int64_t>{4}));
}

// clone() copies the bytes into a new buffer.
TEST(HostTensor, CloneIsDeep) {
  HostTensor a(DType::F64, {2, 2});
  a.data<double>()[3] = 1.5;
  HostTensor b = a.clone();
  EXPECT_NE(b.raw(), a.raw());
  EXPECT_EQ(b.typeString(), "f64[2, 2]");
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.byteSize()), 0);
  b.data<double>()[3] = 2.5;
  EXPECT_EQ(a.data<double>()[3], 1.5);
}

// reshape keeps the data; a different element count is an error that leaves
// the tensor unchanged.
TEST(HostTensor, Reshape) {
  HostTensor t(DType::F32, {2, 3});
  t.data<float>()[5] = 4.0f;
  ASSERT_TRUE(t.reshape({3, 1, 2}).ok());
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(t.data<float>()[5], 4.0f);
  Status bad = t.reshape({4, 2});
  EXPECT_EQ(bad.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(bad.message(),
            "reshape: cannot reshape f32[3, 1, 2] (6 elements) to [4, 2] (8 elements)");
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(t.reshape({-6}).code(), StatusCode::InvalidArgument);

  const void *buffer = t.raw();
  StatusOr<HostTensor> r = reshaped(std::move(t), {6});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->raw(), buffer);
  EXPECT_EQ(r->shape(), (std::vector<int64_t>{6}));
  EXPECT_FALSE(reshaped(HostTensor(DType::F32, {2}), {3}).ok());
}

// create() reports bad shapes as values.
TEST(HostTensor, CreateValidates) {
  StatusOr<HostTensor> neg = HostTensor::create(DType::F32, {2, -1});
  ASSERT_FALSE(neg.ok());
  EXPECT_EQ(neg.status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(neg.status().message(), "invalid tensor shape [2, -1]: dimensions must be >= 0");
  StatusOr<HostTensor> huge = HostTensor::create(DType::F64, {int64_t(1) << 40, int64_t(1) << 40});
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::InvalidArgument);
  StatusOr<HostTensor> ok = HostTensor::create(DType::I64, {3});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->numElements(), 3);
}

// view() borrows the caller's bytes (any element-aligned address): writes go through both
// ways, clone() owns a copy, and destroying or moving the view frees nothing (a free of this
// stack buffer would abort).
TEST(HostTensor, ViewBorrowsCallerMemory) {
  alignas(64) unsigned char arena[64 + 4 + 6 * sizeof(float)] = {};
  float *base = reinterpret_cast<float *>(arena + 68); // 4-byte aligned, not 64
  {
    HostTensor v = HostTensor::view(DType::F32, {2, 3}, base);
    EXPECT_FALSE(v.ownsData());
    EXPECT_EQ(v.raw(), static_cast<void *>(base));
    EXPECT_EQ(v.typeString(), "f32[2, 3]");
    EXPECT_EQ(v.byteSize(), 24u);
    v.data<float>()[4] = 2.5f; // writes the arena
    EXPECT_EQ(base[4], 2.5f);
    base[1] = -1.0f; // the view sees the arena's writes
    EXPECT_EQ(v.data<float>()[1], -1.0f);

    HostTensor c = v.clone();
    EXPECT_TRUE(c.ownsData());
    EXPECT_NE(c.raw(), v.raw());
    EXPECT_EQ(c.data<float>()[4], 2.5f);
    c.data<float>()[4] = 7.0f;
    EXPECT_EQ(base[4], 2.5f);

    ASSERT_TRUE(v.reshape({6}).ok()); // still the same borrowed bytes
    EXPECT_EQ(v.raw(), static_cast<void *>(base));
    EXPECT_FALSE(v.ownsData());

    HostTensor moved = std::move(v); // the moved-to tensor borrows, the moved-from is empty
    EXPECT_FALSE(moved.ownsData());
    EXPECT_EQ(moved.raw(), static_cast<void *>(base));
    HostTensor owner(DType::I32, {3});
    owner = HostTensor::view(DType::I32, {1}, arena); // frees owner's buffer, borrows arena
    EXPECT_FALSE(owner.ownsData());
    EXPECT_EQ(owner.raw(), static_cast<void *>(arena));
  } // the views die here without freeing
  EXPECT_EQ(base[4], 2.5f);

  // A view of zero elements may have a null pointer.
  HostTensor empty = HostTensor::view(DType::I64, {0, 3}, nullptr);
  EXPECT_EQ(empty.numElements(), 0);
  EXPECT_FALSE(empty.ownsData());
}

// A view with an invalid shape is a programmer error that aborts.
TEST(HostTensorDeathTest, ViewWithBadShapeAborts) {
  float x = 0;
  EXPECT_DEATH((void)HostTensor::view(DType::F32, {-1}, &x), "HostTensor::view");
}

// Reading elements of the wrong size is a programmer error that aborts.
TEST(HostTensorDeathTest, DataWithWrongElementSizeAborts) {
  HostTensor t(DType::F32, {2});
  EXPECT_DEATH((void)t.data<double>(), "element type of size 8 bytes requested from a f32");
}

} // namespace
} // namespace rp::runtime
