//===- CudaTestUtil.h - Shared helpers of the CUDA kernel tests -*- C++ -*-===//
//
// For the tests of kernels/cuda (CudaCastTest, CudaGemmTest, CudaRowKernels*Test,
// CudaFused*Test):
//   - host tensors in the GPU's dtypes: element values as doubles with f16 / bf16 decoded
//     exactly, element writes and conversions that round once (16-bit floats to nearest even,
//     from double), and the ulp of the 16-bit formats; the other dtypes go through the CPU
//     kernel tests' KernelTestUtil.h (cpu::test::get / set);
//   - devices and device memory: haveDevice() (device tests call GTEST_SKIP() without one;
//     the fixture CudaStreamTest does and gives the test a stream), ASSERT_CUDA_OK /
//     EXPECT_CUDA_OK, DeviceBuffer (cudaMalloc'd, freed on destruction, optionally followed by
//     guard bytes), upload, poisonedOutput and download (which checks that the guard bytes
//     still hold the poison: no write past the output).
//
//===----------------------------------------------------------------------===//
#ifndef RP_TEST_UNIT_CUDATESTUTIL_H
#define RP_TEST_UNIT_CUDATESTUTIL_H

#include "base/DType.h"
#include "base/Float16.h"
#include "base/HostTensor.h"
#include "test/Unit/kernels/KernelTestUtil.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace rp::kernels::cuda::test {

using base::DType;
using base::HostTensor;
using Shape = std::vector<int64_t>;

//===--- host tensors in the GPU's dtypes ---------------------------------===//

inline bool is16Bit(DType d) { return d == DType::F16 || d == DType::BF16; }

/// Element i of t as a double (16-bit floats decoded exactly; the others as cpu::test::get).
inline double valueAt(const HostTensor &t, int64_t i) {
  if (t.dtype() == DType::F16)
    return base::halfToFloat(t.data<uint16_t>()[i]);
  if (t.dtype() == DType::BF16)
    return base::bf16ToFloat(t.data<uint16_t>()[i]);
  return cpu::test::get(t, i);
}

/// Sets element i of t to v rounded once to t's dtype: 16-bit floats to nearest even (from
/// double via round-to-odd: correctly rounded), the others as cpu::test::set.
inline void setValue(HostTensor &t, int64_t i, double v) {
  if (t.dtype() == DType::F16)
    t.data<uint16_t>()[i] = base::doubleToHalf(v);
  else if (t.dtype() == DType::BF16)
    t.data<uint16_t>()[i] = base::doubleToBf16(v);
  else
    cpu::test::set(t, i, v);
}

inline std::vector<double> valuesOf(const HostTensor &t) {
  std::vector<double> v(static_cast<size_t>(t.numElements()));
  for (int64_t i = 0; i < t.numElements(); ++i)
    v[static_cast<size_t>(i)] = valueAt(t, i);
  return v;
}

/// t (any float or integer dtype) converted to `to`, element by element (valueAt, setValue).
inline HostTensor convertTo(const HostTensor &t, DType to) {
  HostTensor out(to, t.shape());
  for (int64_t i = 0; i < t.numElements(); ++i)
    setValue(out, i, valueAt(t, i));
  return out;
}

/// One ulp of the 16-bit format `fmt` at |v| (the subnormal spacing below the normal range).
inline double ulp16(DType fmt, double v) {
  const int fracBits = fmt == DType::F16 ? 10 : 7;
  const int minExp = fmt == DType::F16 ? -14 : -126;
  const int e = v == 0 ? minExp : std::max(std::ilogb(std::fabs(v)), minExp);
  return std::ldexp(1.0, e - fracBits);
}

//===--- devices and device memory ----------------------------------------===//

#define ASSERT_CUDA_OK(expr)                                                                       \
  do {                                                                                             \
    const cudaError_t rp_err_ = (expr);                                                            \
    ASSERT_EQ(rp_err_, cudaSuccess) << #expr << ": " << cudaGetErrorString(rp_err_);               \
  } while (0)

#define EXPECT_CUDA_OK(expr)                                                                       \
  do {                                                                                             \
    const cudaError_t rp_err_ = (expr);                                                            \
    EXPECT_EQ(rp_err_, cudaSuccess) << #expr << ": " << cudaGetErrorString(rp_err_);               \
  } while (0)

inline bool haveDevice() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

/// The fixture of a device test: skips it (GTEST_SKIP) when no CUDA device is present,
/// otherwise gives it a stream (stream_), destroyed after the test.
class CudaStreamTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!haveDevice())
      GTEST_SKIP() << "no CUDA device";
    ASSERT_CUDA_OK(cudaStreamCreate(&stream_));
  }
  void TearDown() override {
    if (stream_)
      cudaStreamDestroy(stream_);
  }
  cudaStream_t stream_ = nullptr;
};

/// A device allocation (cudaMalloc: 256-byte aligned) of `bytes` bytes followed by `guard`
/// guard bytes, freed on destruction; at least 1 byte in all, so that the pointer is never
/// null.
class DeviceBuffer {
public:
  explicit DeviceBuffer(size_t bytes, size_t guard = 0) : bytes_(bytes), guard_(guard) {
    status_ = cudaMalloc(&ptr_, std::max<size_t>(bytes + guard, 1));
  }
  ~DeviceBuffer() {
    if (ptr_)
      cudaFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  cudaError_t status() const { return status_; }
  void *get() const { return ptr_; }
  template <typename T> T *as() const { return static_cast<T *>(ptr_); }
  /// The bytes before the guard.
  size_t bytes() const { return bytes_; }
  size_t guard() const { return guard_; }

private:
  void *ptr_ = nullptr;
  size_t bytes_, guard_;
  cudaError_t status_;
};

/// A device copy of `t`.
inline std::unique_ptr<DeviceBuffer> upload(const HostTensor &t) {
  auto buffer = std::make_unique<DeviceBuffer>(t.byteSize());
  EXPECT_CUDA_OK(buffer->status());
  if (buffer->status() == cudaSuccess && t.byteSize() > 0)
    EXPECT_CUDA_OK(cudaMemcpy(buffer->get(), t.raw(), t.byteSize(), cudaMemcpyHostToDevice));
  return buffer;
}

/// A device output of `bytes` bytes and `guard` guard bytes after them, every byte `poison`.
inline std::unique_ptr<DeviceBuffer> poisonedOutput(size_t bytes, unsigned char poison,
                                                    size_t guard = 0) {
  auto buffer = std::make_unique<DeviceBuffer>(bytes, guard);
  EXPECT_CUDA_OK(buffer->status());
  if (buffer->status() == cudaSuccess)
    EXPECT_CUDA_OK(cudaMemset(buffer->get(), poison, std::max<size_t>(bytes + guard, 1)));
  return buffer;
}

/// Copies the bytes of `buffer` back into a tensor of `dtype` and `shape` (of at most
/// buffer.bytes() bytes) and fails the test when a guard byte no longer holds `poison`, the
/// byte poisonedOutput filled it with (a write past the output). Does not synchronize: the
/// caller waits for the kernels first.
inline HostTensor download(const DeviceBuffer &buffer, DType dtype, const Shape &shape,
                           unsigned char poison) {
  HostTensor t(dtype, shape);
  std::vector<unsigned char> all(buffer.bytes() + buffer.guard());
  if (!all.empty())
    EXPECT_CUDA_OK(cudaMemcpy(all.data(), buffer.get(), all.size(), cudaMemcpyDeviceToHost));
  for (size_t b = buffer.bytes(); b < all.size(); ++b)
    if (all[b] != poison) {
      ADD_FAILURE() << "write past the output at byte " << b;
      break;
    }
  if (t.byteSize() > 0)
    std::memcpy(t.raw(), all.data(), std::min(t.byteSize(), buffer.bytes()));
  return t;
}

} // namespace rp::kernels::cuda::test

#endif // RP_TEST_UNIT_CUDATESTUTIL_H
