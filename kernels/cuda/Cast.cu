//===- Cast.cu - Float format conversion kernels on the GPU ---------------===//
//
// One grid-stride kernel template for the four casts. The vector variant
// moves 8 elements per step (8 x 16-bit = one 16-byte access, 8 x 32-bit =
// two) when both pointers are 16-byte aligned; the last n % 8 elements and
// misaligned buffers take the scalar path. The element conversion is the
// __host__ __device__ code of base/Float16.h, so results match the
// CPU bit for bit. The kernels are memory bound: the few integer ops per
// element are free next to the DRAM traffic.
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/Cast.cuh"

#include "base/Float16.h"

#include <algorithm>

namespace rp::kernels::cuda {
namespace {

constexpr int kBlockSize = 256;
/// Elements per vector step.
constexpr int kPack = 8;
/// Grid cap: enough resident threads to saturate HBM on any sm_80+ part; the
/// grid-stride loops cover larger n.
constexpr int64_t kMaxBlocks = 8192;

/// 8 elements, 16-byte aligned, so loads and stores compile to ld/st.v4.
template <typename T> struct alignas(16) Pack8 { T v[kPack]; };
static_assert(sizeof(Pack8<uint16_t>) == 16 && sizeof(Pack8<float>) == 32, "pack layout");

struct F32ToBf16 {
  __device__ uint16_t operator()(float x) const { return base::floatToBf16(x); }
};
struct Bf16ToF32 {
  __device__ float operator()(uint16_t x) const { return base::bf16ToFloat(x); }
};
struct F32ToF16 {
  __device__ uint16_t operator()(float x) const { return base::floatToHalf(x); }
};
struct F16ToF32 {
  __device__ float operator()(uint16_t x) const { return base::halfToFloat(x); }
};

/// dst[i] = op(src[i]) for i in [0, n). kVector requires src and dst 16-byte aligned.
template <typename In, typename Out, typename Op, bool kVector>
__global__ void castKernel(const In *__restrict__ src, Out *__restrict__ dst, int64_t n, Op op) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t scalarBegin = 0;
  if constexpr (kVector) {
    const int64_t packs = n / kPack;
    const auto *in = reinterpret_cast<const Pack8<In> *>(src);
    auto *out = reinterpret_cast<Pack8<Out> *>(dst);
    for (int64_t p = tid; p < packs; p += stride) {
      const Pack8<In> a = in[p];
      Pack8<Out> b;
#pragma unroll
      for (int k = 0; k < kPack; ++k)
        b.v[k] = op(a.v[k]);
      out[p] = b;
    }
    scalarBegin = packs * kPack;
  }
  for (int64_t i = scalarBegin + tid; i < n; i += stride)
    dst[i] = op(src[i]);
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool isAligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename Op, typename In, typename Out>
cudaError_t launchCast(const In *src, Out *dst, int64_t n, cudaStream_t stream) {
  if (n < 0 || (n > 0 && (src == nullptr || dst == nullptr)))
    return cudaErrorInvalidValue;
  if (reinterpret_cast<uintptr_t>(src) % alignof(In) ||
      reinterpret_cast<uintptr_t>(dst) % alignof(Out))
    return cudaErrorInvalidValue; // element accesses would fault
  if (n == 0)
    return cudaSuccess;
  const bool vector = isAligned16(src) && isAligned16(dst);
  const int64_t work = vector ? ceilDiv(n, kPack) : n;
  const auto blocks = static_cast<unsigned>(std::min(ceilDiv(work, kBlockSize), kMaxBlocks));
  if (vector)
    castKernel<In, Out, Op, true><<<blocks, kBlockSize, 0, stream>>>(src, dst, n, Op{});
  else
    castKernel<In, Out, Op, false><<<blocks, kBlockSize, 0, stream>>>(src, dst, n, Op{});
  return cudaGetLastError();
}

} // namespace

cudaError_t castF32ToBf16(const float *src, uint16_t *dst, int64_t n, cudaStream_t stream) {
  return launchCast<F32ToBf16>(src, dst, n, stream);
}

cudaError_t castBf16ToF32(const uint16_t *src, float *dst, int64_t n, cudaStream_t stream) {
  return launchCast<Bf16ToF32>(src, dst, n, stream);
}

cudaError_t castF32ToF16(const float *src, uint16_t *dst, int64_t n, cudaStream_t stream) {
  return launchCast<F32ToF16>(src, dst, n, stream);
}

cudaError_t castF16ToF32(const uint16_t *src, float *dst, int64_t n, cudaStream_t stream) {
  return launchCast<F16ToF32>(src, dst, n, stream);
}

} // namespace rp::kernels::cuda
