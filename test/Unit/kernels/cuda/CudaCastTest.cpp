//===- CudaCastTest.cpp - CUDA cast launchers against the CPU conversions -===//
//
// Device tests compare the GPU output bit for bit with the scalar conversions
// of base/Float16.h on random bit patterns (NaN, inf, subnormals
// included) and on all 65536 16-bit patterns, through the vector path
// (16-byte aligned) and the scalar path (offset by one element), with the
// output poisoned before each launch and guard elements past n checked. They
// call GTEST_SKIP() when no CUDA device is present; the argument checks need
// no device and always run.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/Cast.cuh"
#include "base/Float16.h"
#include "test/Unit/kernels/cuda/CudaTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace rp::kernels::cuda {
namespace {

using test::DeviceBuffer;
using test::haveDevice;

/// Random binary32 bit patterns with NaNs, infinities, zeros, subnormals and
/// exact f16/bf16 ties mixed in.
std::vector<float> randomFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  const float specials[] = {0.0f,
                            -0.0f,
                            INFINITY,
                            -INFINITY,
                            std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::max(),
                            0x1p-25f,
                            0x1.8p-24f,
                            65520.0f,
                            1.0f + 0x1p-8f,
                            1.0f + 0x1p-11f,
                            0x1.FFp127f};
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t u = rng();
    if (i % 7 == 0) {
      v[i] = specials[u % std::size(specials)];
    } else {
      std::memcpy(&v[i], &u, 4);
      if (i % 7 == 1) { // a subnormal
        const uint32_t s = u & 0x807FFFFFu;
        std::memcpy(&v[i], &s, 4);
      } else if (i % 7 == 2) { // a signalling NaN
        const uint32_t s = (u & 0x803FFFFFu) | 0x7F800001u;
        std::memcpy(&v[i], &s, 4);
      }
    }
  }
  return v;
}

using F32To16 = cudaError_t (*)(const float *, uint16_t *, int64_t, cudaStream_t);
using F16To32 = cudaError_t (*)(const uint16_t *, float *, int64_t, cudaStream_t);

/// Runs `launch` on `in` at element offset `offset` (0: vector path, 1: scalar
/// path) and returns the n outputs; checks that the guard elements past the
/// end keep the poison byte.
template <typename In, typename Out, typename Launch>
void runOnDevice(Launch launch, const std::vector<In> &in, size_t offset, unsigned char poison,
                 std::vector<Out> *out) {
  const size_t n = in.size(), guard = 9;
  DeviceBuffer dIn((offset + n) * sizeof(In)), dOut((offset + n + guard) * sizeof(Out));
  ASSERT_CUDA_OK(dIn.status());
  ASSERT_CUDA_OK(dOut.status());
  cudaStream_t stream;
  ASSERT_CUDA_OK(cudaStreamCreate(&stream));
  ASSERT_CUDA_OK(
      cudaMemcpy(dIn.as<In>() + offset, in.data(), n * sizeof(In), cudaMemcpyHostToDevice));
  ASSERT_CUDA_OK(cudaMemset(dOut.as<void>(), poison, dOut.bytes()));
  ASSERT_CUDA_OK(
      launch(dIn.as<In>() + offset, dOut.as<Out>() + offset, static_cast<int64_t>(n), stream));
  ASSERT_CUDA_OK(cudaStreamSynchronize(stream));
  ASSERT_CUDA_OK(cudaStreamDestroy(stream));
  std::vector<unsigned char> all(dOut.bytes());
  ASSERT_CUDA_OK(cudaMemcpy(all.data(), dOut.as<void>(), all.size(), cudaMemcpyDeviceToHost));
  for (size_t b = 0; b < offset * sizeof(Out); ++b)
    ASSERT_EQ(all[b], poison) << "write before the output at byte " << b;
  for (size_t b = (offset + n) * sizeof(Out); b < all.size(); ++b)
    ASSERT_EQ(all[b], poison) << "write past the output at byte " << b;
  out->resize(n);
  std::memcpy(out->data(), all.data() + offset * sizeof(Out), n * sizeof(Out));
}

class CudaCastTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!haveDevice())
      GTEST_SKIP() << "no CUDA device";
  }
};

void checkF32To16(F32To16 launch, uint16_t (*cpu)(float)) {
  // Sizes: empty tail, every tail length, and a multi-wave grid.
  for (size_t n : {size_t(1), size_t(8), size_t(13), size_t(1000), (size_t(1) << 22) + 5}) {
    const std::vector<float> in = randomFloats(n, static_cast<uint32_t>(n));
    for (size_t offset : {0, 1})
      for (unsigned char poison : {0xA5, 0x5A}) {
        std::vector<uint16_t> got;
        runOnDevice<float, uint16_t>(launch, in, offset, poison, &got);
        if (::testing::Test::HasFatalFailure())
          return;
        for (size_t i = 0; i < n; ++i) {
          uint32_t bits;
          std::memcpy(&bits, &in[i], 4);
          ASSERT_EQ(got[i], cpu(in[i]))
              << std::hex << "n=" << n << " offset=" << offset << " i=" << i << " input 0x" << bits;
        }
      }
  }
}

void checkAll16To32(F16To32 launch, float (*cpu)(uint16_t)) {
  std::vector<uint16_t> in(65536 + 3);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<uint16_t>(i * 40503u); // all patterns (40503 is odd), then 3 more
  for (size_t offset : {0, 1})
    for (unsigned char poison : {0xA5, 0x5A}) {
      std::vector<float> got;
      runOnDevice<uint16_t, float>(launch, in, offset, poison, &got);
      if (::testing::Test::HasFatalFailure())
        return;
      for (size_t i = 0; i < in.size(); ++i) {
        const float want = cpu(in[i]);
        ASSERT_EQ(std::memcmp(&got[i], &want, 4), 0)
            << std::hex << "offset=" << offset << " input 0x" << in[i];
      }
    }
}

TEST_F(CudaCastTest, F32ToBf16MatchesCpu) { checkF32To16(castF32ToBf16, base::floatToBf16); }
TEST_F(CudaCastTest, F32ToF16MatchesCpu) { checkF32To16(castF32ToF16, base::floatToHalf); }
TEST_F(CudaCastTest, Bf16ToF32AllPatterns) { checkAll16To32(castBf16ToF32, base::bf16ToFloat); }
TEST_F(CudaCastTest, F16ToF32AllPatterns) { checkAll16To32(castF16ToF32, base::halfToFloat); }

// The launchers check their arguments before touching the device: no GPU needed.
TEST(CudaCastArgsTest, RejectsBadArguments) {
  float f = 0;
  uint16_t h = 0;
  EXPECT_EQ(castF32ToBf16(&f, &h, -1, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(castF32ToF16(nullptr, &h, 1, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(castBf16ToF32(&h, nullptr, 1, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(castF16ToF32(&h, &f, -5, nullptr), cudaErrorInvalidValue);
  alignas(8) unsigned char raw[16] = {};
  EXPECT_EQ(castF32ToF16(reinterpret_cast<const float *>(raw + 2), &h, 1, nullptr),
            cudaErrorInvalidValue); // misaligned float
  EXPECT_EQ(castF16ToF32(reinterpret_cast<const uint16_t *>(raw + 1), &f, 1, nullptr),
            cudaErrorInvalidValue);                                    // misaligned uint16_t
  EXPECT_EQ(castF32ToBf16(nullptr, nullptr, 0, nullptr), cudaSuccess); // nothing to launch
  EXPECT_EQ(castF16ToF32(nullptr, nullptr, 0, nullptr), cudaSuccess);
}

} // namespace
} // namespace rp::kernels::cuda
