//===- ParamInit.cpp - Initial values of params without stored weights ----===//

#include "base/ParamInit.h"

#include "base/Float16.h"

#include <cmath>
#include <cstring>

namespace rp {
inline namespace base {

const char *paramInitName(ParamInit kind) {
  switch (kind) {
  case ParamInit::Zeros:
    return "zeros";
  case ParamInit::KaimingUniform:
    return "kaiming_uniform";
  }
  return "<invalid param init>";
}

StatusOr<ParamInit> parseParamInit(std::string_view name) {
  if (name == "zeros")
    return ParamInit::Zeros;
  if (name == "kaiming_uniform")
    return ParamInit::KaimingUniform;
  return invalidArgument("unknown param init '" + std::string(name) +
                         "': expected zeros or kaiming_uniform");
}

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

namespace {

uint64_t splitmix64(uint64_t &x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/// Fills `count` elements of `data` with `value(i)` converted to the dtype (one rounding).
template <typename ValueFn>
void fill(DType dtype, void *data, int64_t count, ValueFn value) {
  switch (dtype) {
  case DType::F64: {
    auto *p = static_cast<double *>(data);
    for (int64_t i = 0; i < count; ++i)
      p[i] = value();
    return;
  }
  case DType::F32: {
    auto *p = static_cast<float *>(data);
    for (int64_t i = 0; i < count; ++i)
      p[i] = static_cast<float>(value());
    return;
  }
  case DType::BF16: {
    auto *p = static_cast<uint16_t *>(data);
    for (int64_t i = 0; i < count; ++i)
      p[i] = doubleToBf16(value());
    return;
  }
  case DType::F16: {
    auto *p = static_cast<uint16_t *>(data);
    for (int64_t i = 0; i < count; ++i)
      p[i] = doubleToHalf(value());
    return;
  }
  default:
    return; // initParam checked the dtype.
  }
}

} // namespace

ParamInitRng::ParamInitRng(uint64_t seed) {
  uint64_t x = seed;
  for (uint64_t &word : s_)
    word = splitmix64(x);
}

uint64_t ParamInitRng::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double ParamInitRng::nextUnit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

Status initParam(ParamInit kind, const std::string &name, HostTensor &out) {
  if (!isFloat(out.dtype()))
    return invalidArgument("cannot initialise param '" + name + "' (" + paramInitName(kind) +
                           "): expected an f32, f64, bf16 or f16 tensor, got " + out.typeString());
  switch (kind) {
  case ParamInit::Zeros:
    if (out.byteSize() > 0)
      std::memset(out.raw(), 0, out.byteSize()); // +0.0 in every float format.
    return okStatus();
  case ParamInit::KaimingUniform: {
    if (out.rank() < 1 || out.rank() > 3)
      return invalidArgument("cannot initialise param '" + name +
                             "' (kaiming_uniform): expected rank 1 or 2 (fan_in = shape[0]) or 3 "
                             "(stacked [E, r, in]: fan_in = shape[2]), got " +
                             out.typeString());
    if (out.numElements() == 0)
      return okStatus();
    const int64_t fanIn = out.rank() == 3 ? out.dim(2) : out.dim(0);
    const double bound = 1.0 / std::sqrt(static_cast<double>(fanIn));
    ParamInitRng rng(fnv1a64(name));
    fill(out.dtype(), out.raw(), out.numElements(),
         [&] { return bound * (2.0 * rng.nextUnit() - 1.0); });
    return okStatus();
  }
  }
  return invalidArgument("cannot initialise param '" + name + "': invalid ParamInit value " +
                         std::to_string(static_cast<int>(kind)));
}

} // namespace base
} // namespace rp
