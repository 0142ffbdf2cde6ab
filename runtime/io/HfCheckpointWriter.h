//===- HfCheckpointWriter.h - Checkpoints in the Hugging Face layout -*- C++ -*-===//
//
// Writes a model's params as Hugging Face transformers' `from_pretrained` loads them, and a
// LoRA run's adapters as PEFT's `PeftModel.from_pretrained` loads them:
//
//   full model (writeHfCheckpoint):
//     DIR/model.safetensors                                   when it fits in one shard, else
//     DIR/model-0000k-of-0000n.safetensors + DIR/model.safetensors.index.json
//         {"metadata": {"total_size": <bytes of tensor data>, "total_parameters": <elements>},
//          "weight_map": {"<name>": "<shard file>", ...}}
//     DIR/config.json                                         copied when given
//   LoRA adapters (writePeftAdapter, peft 0.21's save_pretrained layout):
//     DIR/adapter_model.safetensors   "base_model.model.<module>.lora_A.weight" [r, in] and
//                                     "base_model.model.<module>.lora_B.weight" [out, r]
//                                     (mixture-of-experts adapters: see writePeftAdapter)
//     DIR/adapter_config.json         r, lora_alpha, target_modules, peft_type "LORA",
//                                     task_type "CAUSAL_LM", base_model_name_or_path, ...
//
// Every safetensors file carries the metadata {"format": "pt"} (transformers refuses files
// without it). Tensors are written in the given order, shards filled greedily in that order
// (transformers' own rule: a new shard starts when the next tensor would pass the maximum; a
// tensor larger than the maximum gets a shard of its own). The source values are fp32 (the
// master weights) and are converted to the export dtype with round-to-nearest-even.
//
// Writes are all or nothing: everything goes to a temporary directory beside DIR, which is
// renamed to DIR at the end. An existing DIR must be empty unless `force` (then the old DIR is
// replaced only once the new one is complete); on any error DIR is left as it was and the
// temporary directory is removed.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_IO_HFCHECKPOINTWRITER_H
#define RP_RUNTIME_IO_HFCHECKPOINTWRITER_H

#include "base/Status.h"
#include "runtime/io/Safetensors.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace rp::runtime {

/// The element types an export writes: f32 (default: the fp32 master weights exactly), bf16
/// or f16 (rounded to nearest even; half the size).
enum class HfExportDType { F32, BF16, F16 };

/// Parses "f32" | "fp32" | "float32", "bf16" | "bfloat16", "f16" | "fp16" | "float16".
/// Errors: InvalidArgument naming the text and the accepted names.
StatusOr<HfExportDType> parseHfExportDType(std::string_view text);
/// The safetensors dtype of `dtype` (F32, BF16, F16).
SafetensorsDType safetensorsDTypeOf(HfExportDType dtype);

/// Parses a shard size as transformers' max_shard_size spells it: a byte count, or a number
/// with a unit KB, MB, GB (powers of 1000) or KiB, MiB, GiB (powers of 1024), e.g. "5GB",
/// "500MiB", "1048576". Errors: InvalidArgument for anything else, for 0 and for sizes beyond
/// 2^62 bytes.
StatusOr<uint64_t> parseByteSize(std::string_view text);

/// transformers 5's default max_shard_size: 50 GB.
inline constexpr uint64_t kDefaultHfShardBytes = 50'000'000'000ull;

/// A tensor to export: fp32 values (non-owning; valid while the writer runs).
struct HfTensor {
  std::string name;           ///< The state-dict name (the plan's param name).
  std::vector<int64_t> shape; ///< [] for a 0-D tensor.
  const float *data;          ///< product(shape) floats.
};

struct HfWriteOptions {
  HfExportDType dtype = HfExportDType::F32;
  uint64_t maxShardBytes = kDefaultHfShardBytes;
  /// A config.json to copy into DIR ("" : none). Must be a JSON object.
  std::string configPath;
  /// Renames before writing: name -> checkpoint name, or -> "" to leave the tensor out (e.g.
  /// {"lm_head.weight", ""} for tied embeddings, whose checkpoints keep only the input
  /// embedding). Names not in the map keep their own.
  std::map<std::string, std::string> aliases;
  /// Replace a non-empty DIR (default: refuse it).
  bool force = false;
};

/// What a write produced (for the caller's summary).
struct HfWriteResult {
  std::vector<std::string> files; ///< The tensor files written, in shard order (bare names).
  size_t tensors = 0;             ///< Distinct tensors written.
  uint64_t bytes = 0;             ///< Bytes of tensor data.
};

/// Writes `tensors` to `dir` in the full-model layout (see the file comment). A name given
/// more than once (after aliases) is written once; all its copies must hold the same shape
/// and bit-identical values (a param shared by several layers).
/// Errors (nothing written): InvalidArgument for an empty tensor list, a name whose copies
/// differ (naming it), a negative dimension, a non-empty `dir` without `force`, `dir` naming a
/// file, a missing parent directory, an unreadable config or one that is not a JSON object;
/// Unavailable when a file cannot be written.
StatusOr<HfWriteResult> writeHfCheckpoint(const std::string &dir,
                                          const std::vector<HfTensor> &tensors,
                                          const HfWriteOptions &options);

/// One LoRA adapter of a weight W, in rp-inject-lora's layout: the adapted product is
/// x @ A @ B * (alpha / rank) with A [in, rank] and B [rank, out] (runtime order, row-major).
/// Stacked expert adapters (`experts` > 0; a mixture of experts' W [E, ...], rp-inject-lora's
/// per-expert layout): the update of expert e is B_e A_e x * (alpha / rank) with A
/// [experts, rank, in] and B [experts, out, rank]; `module` is then the experts module
/// (W's name without its last component) and `parameter` W's last component.
struct LoraAdapter {
  std::string module; ///< The adapted module's name: W's name without ".weight".
  int64_t in = 0, out = 0, rank = 0;
  const float *a = nullptr; ///< [in, rank]; experts: [experts, rank, in]
  const float *b = nullptr; ///< [rank, out]; experts: [experts, out, rank]
  int64_t experts = 0;      ///< > 0: stacked expert adapters (PEFT's target_parameters)
  std::string parameter;    ///< experts: the adapted parameter of `module` ("gate_up_proj")
};

struct PeftWriteOptions {
  double alpha = 0;               ///< lora_alpha (the scale is alpha / rank).
  std::string baseModel;          ///< base_model_name_or_path ("" : null).
  HfExportDType dtype = HfExportDType::F32;
  bool force = false;             ///< As HfWriteOptions::force.
};

/// Writes `adapters` to `dir` in PEFT's layout (see the file comment): lora_A.weight is A
/// transposed ([rank, in], PEFT's nn.Linear layout), lora_B.weight is B transposed ([out,
/// rank]); target_modules are the modules' last name components, sorted and distinct.
/// Stacked expert adapters go out as peft 0.21's `target_parameters` adapters (ParamWrapper):
/// lora_A.weight [experts * rank, in] (row e * rank + j = A[e, j, :]) and lora_B.weight
/// [out, rank * experts] (column j * experts + e = B[e, :, j]) under the experts module, the
/// k-th of n adapted parameters of one module (in `adapters` order, which must be the
/// module's parameter order) nested n - 1 - k times under ".base_layer", as peft wraps them;
/// target_parameters lists "<module's last component>.<parameter>".
/// Errors (nothing written): InvalidArgument for no adapters, adapters of different ranks,
/// a non-positive rank, alpha not finite or not positive, a non-empty `dir` without `force`
/// or a missing parent; Unavailable when a file cannot be written.
StatusOr<HfWriteResult> writePeftAdapter(const std::string &dir,
                                         const std::vector<LoraAdapter> &adapters,
                                         const PeftWriteOptions &options);

/// Checks before a run that `dir` can receive an export: its parent exists and is a writable
/// directory, and `dir` is missing, an empty directory, or (with `force`) any directory.
/// Errors: InvalidArgument "cannot export to DIR: <reason>" (`flag` names the option).
Status checkExportDir(const std::string &dir, bool force, const std::string &flag);

/// Checks that `path` is a readable JSON object (a config.json). Errors: InvalidArgument
/// naming the file and the reason.
Status checkJsonObjectFile(const std::string &path, const std::string &flag);

} // namespace rp::runtime

#endif // RP_RUNTIME_IO_HFCHECKPOINTWRITER_H
