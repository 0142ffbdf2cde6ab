//===- ParamInit.h - Initial values of params without stored weights -*- C++ -*-===//
//
// A `graph.param` that has no tensor in the weight file (the LoRA adapters rp-inject-lora
// adds) says how it starts with `init zeros` or `init kaiming_uniform`. This fills a host
// tensor accordingly, deterministically: the values depend only on the param's name, its
// dtype and its shape (not on the machine, the compiler or the standard library), so every
// run, every backend and a checkpoint-free restart see the same adapters.
//
//   HostTensor a(DType::F32, {4096, 8});                 // [in, rank]
//   RP_RETURN_IF_ERROR(initParam(ParamInit::KaimingUniform, "q_proj.lora_A", a));
//
// kaiming_uniform: i.i.d. uniform in [-b, b] with b = 1 / sqrt(fan_in), fan_in = shape[0].
// Our LoRA A is [in, rank] (rpc computes x @ W); PEFT's lora_A is an nn.Linear(in, rank) whose
// weight is [rank, in], initialised with torch.nn.init.kaiming_uniform_(w, a=sqrt(5)):
// gain = sqrt(2 / (1 + a^2)) = sqrt(1/3), bound = gain * sqrt(3 / fan_in) = 1 / sqrt(fan_in)
// with fan_in = in = w.shape[1]. Our A is that weight transposed, so shape[0] is the same fan_in
// and the distribution is PEFT's exactly; the values themselves differ (another generator).
// A rank-3 tensor is a mixture of experts' stacked A [E, r, in] (one [r, in] per expert, as
// PEFT's expert adapters reshape their nn.Linear(in, r E) weight): fan_in = in = shape[2].
//
// Generator: the state of xoshiro256** (Blackman and Vigna, 2018) is filled by splitmix64
// (Steele, Lea and Flood, 2014) from the 64-bit FNV-1a hash of the name's bytes. Element i (in
// row-major order) takes the i-th output r: u = (r >> 11) * 2^-53 in [0, 1), v = b * (2u - 1)
// in binary64, then rounded once to the tensor's dtype (nearest even; so |value| <= b rounded
// to the dtype). No std:: distribution is used: those differ between standard libraries.
//
//===----------------------------------------------------------------------===//
#ifndef RP_BASE_PARAMINIT_H
#define RP_BASE_PARAMINIT_H

#include "base/HostTensor.h"
#include "base/Status.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace rp {
inline namespace base {

/// How a param without a stored value starts (the `init` of `graph.param`).
enum class ParamInit {
  Zeros,          ///< All elements 0.
  KaimingUniform, ///< Uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)], fan_in = shape[0]
                  ///< (shape[2] for a rank-3 [E, r, in]).
};

/// The IR spelling: "zeros", "kaiming_uniform".
const char *paramInitName(ParamInit kind);

/// Parses the IR spelling. Errors: InvalidArgument naming the text and the accepted names.
StatusOr<ParamInit> parseParamInit(std::string_view name);

/// 64-bit FNV-1a of `bytes` (offset basis 0xcbf29ce484222325, prime 0x100000001b3).
uint64_t fnv1a64(std::string_view bytes);

/// xoshiro256** seeded through splitmix64: the generator behind initParam.
class ParamInitRng {
public:
  /// The four state words are the first four outputs of splitmix64 started at `seed`.
  explicit ParamInitRng(uint64_t seed);
  /// The next 64-bit output.
  uint64_t next();
  /// The next output as a binary64 in [0, 1): (next() >> 11) * 2^-53.
  double nextUnit();

private:
  uint64_t s_[4];
};

/// Fills `out` (every element, whatever it held) as `kind` says, seeded by `name` (the param's
/// symbol name, e.g. "model.layers.0.self_attn.q_proj.weight.lora_A").
/// Dtypes: F32, F64, BF16, F16. KaimingUniform needs rank 1 or 2 (fan_in = shape[0]) or 3
/// (fan_in = shape[2]); an empty tensor is left empty.
/// Errors: InvalidArgument naming the param and the tensor's type for another dtype, or for
/// KaimingUniform on a tensor of rank 0 or above 3; `out` is unchanged then.
Status initParam(ParamInit kind, const std::string &name, HostTensor &out);

} // namespace base
} // namespace rp

#endif // RP_BASE_PARAMINIT_H
