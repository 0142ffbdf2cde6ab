//===- Cast.cpp - Element-type conversion on the CPU ----------------------===//
//
// One templated loop per (source, destination) pair: load the source element
// into its natural C++ value type (f16/bf16 widen exactly to float), then
// convert that value to the destination with the rules in Cast.h.
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/Cast.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace rp::kernels::cpu {
namespace {

using base::DType;

/// Below this many elements a serial loop beats waking the OpenMP team (the
/// loop runs at roughly 1 element/ns; a parallel region costs a few us).
constexpr int64_t kParallelMinElements = int64_t(1) << 16;

//===--- loading: storage -> value ----------------------------------------===//

template <DType D>
struct Load;
template <>
struct Load<DType::F32> {
  using Storage = float;
  static float value(float v) { return v; }
};
template <>
struct Load<DType::F16> {
  using Storage = uint16_t;
  static float value(uint16_t v) { return base::halfToFloat(v); }
};
template <>
struct Load<DType::BF16> {
  using Storage = uint16_t;
  static float value(uint16_t v) { return base::bf16ToFloat(v); }
};
template <>
struct Load<DType::F64> {
  using Storage = double;
  static double value(double v) { return v; }
};
template <>
struct Load<DType::I64> {
  using Storage = int64_t;
  static int64_t value(int64_t v) { return v; }
};
template <>
struct Load<DType::I32> {
  using Storage = int32_t;
  static int32_t value(int32_t v) { return v; }
};
template <>
struct Load<DType::I1> {
  using Storage = uint8_t;
  static bool value(uint8_t v) { return v != 0; }
};

//===--- storing: value -> storage ----------------------------------------===//

/// Float -> integer: truncate toward zero; NaN -> 0; saturate out of range.
template <typename Int, typename F>
Int truncSaturate(F x) {
  if (x != x)
    return 0;
  // -2^(bits-1) and 2^(bits-1) are exact in both float and double.
  constexpr F lo = static_cast<F>(std::numeric_limits<Int>::min());
  if (x >= -lo)
    return std::numeric_limits<Int>::max();
  if (x <= lo)
    return std::numeric_limits<Int>::min();
  return static_cast<Int>(x);
}

/// Integer -> binary32 rounded to odd (keep 24 significant bits, OR the
/// dropped bits into the last one), so that a following RNE rounding to
/// f16/bf16 is the correctly rounded result (see Float16.h).
float int64ToFloatRoundToOdd(int64_t v) {
  const uint64_t mag = v < 0 ? uint64_t(0) - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  if (mag < (uint64_t(1) << 24))
    return static_cast<float>(v); // exact
  const int shift = (64 - __builtin_clzll(mag)) - 24;
  uint64_t top = mag >> shift;
  if (mag & ((uint64_t(1) << shift) - 1))
    top |= 1;
  const float f = std::ldexp(static_cast<float>(top), shift); // exact: top < 2^24
  return v < 0 ? -f : f;
}

template <DType D>
struct Store;
template <>
struct Store<DType::F32> {
  template <typename V>
  static float from(V v) {
    return static_cast<float>(v); // RNE from double / int64
  }
};
template <>
struct Store<DType::F64> {
  template <typename V>
  static double from(V v) {
    return static_cast<double>(v); // exact except int64 beyond 2^53 (RNE)
  }
};
template <>
struct Store<DType::F16> {
  static uint16_t from(float v) { return base::floatToHalf(v); }
  static uint16_t from(double v) { return base::doubleToHalf(v); }
  static uint16_t from(int64_t v) { return base::floatToHalf(int64ToFloatRoundToOdd(v)); }
  static uint16_t from(int32_t v) { return from(static_cast<int64_t>(v)); }
  static uint16_t from(bool v) { return v ? 0x3C00 : 0; }
};
template <>
struct Store<DType::BF16> {
  static uint16_t from(float v) { return base::floatToBf16(v); }
  static uint16_t from(double v) { return base::doubleToBf16(v); }
  static uint16_t from(int64_t v) { return base::floatToBf16(int64ToFloatRoundToOdd(v)); }
  static uint16_t from(int32_t v) { return from(static_cast<int64_t>(v)); }
  static uint16_t from(bool v) { return v ? 0x3F80 : 0; }
};
template <>
struct Store<DType::I64> {
  static int64_t from(float v) { return truncSaturate<int64_t>(v); }
  static int64_t from(double v) { return truncSaturate<int64_t>(v); }
  static int64_t from(int64_t v) { return v; }
  static int64_t from(int32_t v) { return v; }
  static int64_t from(bool v) { return v; }
};
template <>
struct Store<DType::I32> {
  static int32_t from(float v) { return truncSaturate<int32_t>(v); }
  static int32_t from(double v) { return truncSaturate<int32_t>(v); }
  static int32_t from(int64_t v) { // keep the low 32 bits (two's complement)
    return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
  }
  static int32_t from(int32_t v) { return v; }
  static int32_t from(bool v) { return v; }
};
template <>
struct Store<DType::I1> {
  template <typename V>
  static uint8_t from(V v) {
    return v != 0 ? 1 : 0; // NaN != 0
  }
};

//===--- the loop and its dispatch ----------------------------------------===//

using CastFn = void (*)(const void *, void *, int64_t);

/// Elements are read and written with memcpy, so any alignment is fine (the
/// compiler turns it into plain loads and stores). Element i is read before it
/// is written, which makes equal-size in-place casts safe.
template <DType S, DType D>
void castLoop(const void *src, void *dst, int64_t n) {
  using In = typename Load<S>::Storage;
  const auto *in = static_cast<const unsigned char *>(src);
  auto *out = static_cast<unsigned char *>(dst);
#pragma omp parallel for schedule(static) if (n >= kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) {
    In x;
    std::memcpy(&x, in + i * sizeof(In), sizeof(In));
    const auto y = Store<D>::from(Load<S>::value(x));
    std::memcpy(out + i * sizeof(y), &y, sizeof(y));
  }
}

template <DType S>
CastFn pickDst(DType d) {
  switch (d) {
  case DType::F32:
    return &castLoop<S, DType::F32>;
  case DType::F16:
    return &castLoop<S, DType::F16>;
  case DType::BF16:
    return &castLoop<S, DType::BF16>;
  case DType::F64:
    return &castLoop<S, DType::F64>;
  case DType::I64:
    return &castLoop<S, DType::I64>;
  case DType::I32:
    return &castLoop<S, DType::I32>;
  case DType::I1:
    return &castLoop<S, DType::I1>;
  case DType::U8: // quantized storage: graph.dequantize, not a cast
    break;
  }
  return nullptr;
}

CastFn pick(DType s, DType d) {
  switch (s) {
  case DType::F32:
    return pickDst<DType::F32>(d);
  case DType::F16:
    return pickDst<DType::F16>(d);
  case DType::BF16:
    return pickDst<DType::BF16>(d);
  case DType::F64:
    return pickDst<DType::F64>(d);
  case DType::I64:
    return pickDst<DType::I64>(d);
  case DType::I32:
    return pickDst<DType::I32>(d);
  case DType::I1:
    return pickDst<DType::I1>(d);
  case DType::U8:
    break;
  }
  return nullptr;
}

} // namespace

base::Status cast(const void *src, DType srcType, void *dst, DType dstType, int64_t n) {
  if (n < 0)
    return base::invalidArgument("cast: element count must be >= 0, got " +
                                    std::to_string(n));
  const CastFn fn = pick(srcType, dstType);
  if (!fn)
    return base::invalidArgument("cast: invalid dtype enumerator (src " +
                                    std::to_string(static_cast<int>(srcType)) + ", dst " +
                                    std::to_string(static_cast<int>(dstType)) + ")");
  if (n == 0)
    return base::okStatus();
  if (!src || !dst)
    return base::invalidArgument(std::string("cast ") + base::dtypeName(srcType) + " -> " +
                                    base::dtypeName(dstType) + ": null " +
                                    (!src ? "source" : "destination") + " pointer with n = " +
                                    std::to_string(n));
  if (srcType == dstType && srcType != DType::I1) { // plain copy (I1 is normalised to 0/1)
    if (src != dst)
      std::memcpy(dst, src, static_cast<size_t>(n) * base::dtypeSize(srcType));
    return base::okStatus();
  }
  fn(src, dst, n);
  return base::okStatus();
}

base::Status cast(const base::HostTensor &x, base::HostTensor &out) {
  if (out.shape() != x.shape())
    return base::invalidArgument("cast: out is " + out.typeString() + ", expected shape " +
                                    base::formatShape(x.shape()) + " (x is " + x.typeString() +
                                    ")");
  return cast(x.raw(), x.dtype(), out.raw(), out.dtype(), x.numElements());
}

} // namespace rp::kernels::cpu
