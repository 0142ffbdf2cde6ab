//===- HfExport.h - A trained model out in the Hugging Face layout (rp-run) -*- C++ -*-===//
//
// `rp-run --export-hf DIR` writes the weights of a host arena (the fp32 master weights of the
// trainable params, the frozen params converted back to fp32) as transformers loads them
// (runtime/io/HfCheckpointWriter.h): the plan's param names are the state-dict names. A plan
// with LoRA adapters (rp-inject-lora: A [in, r] and B [r, out], named `<W>.lora_A` /
// `<W>.lora_B` for a weight read as x @ W, `<M>.lora_A.weight` / `<M>.lora_B.weight` for
// `<M>.weight` read as x @ W^T) exports the adapters in PEFT's layout, or with `merged` the
// full model with every adapted weight replaced by W + (alpha / r) * A @ B, or its transpose
// for x @ W^T (and no adapter tensors). The plan does not record LoRA alpha: the export takes
// it (`--lora-alpha`); the rank comes from the adapters' shapes.
//
// Used at the end of a training run (Trainer) and on its own (exportWeights: a plan with its
// weights, a Hugging Face checkpoint or an rp-run checkpoint converted without training).
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_TRAIN_HFEXPORT_H
#define RP_RUNTIME_TRAIN_HFEXPORT_H

#include "base/Status.h"
#include "runtime/io/HfCheckpointWriter.h"

#include <cstdio>
#include <map>
#include <optional>
#include <string>

namespace rp::plan {
class Plan;
} // namespace rp::plan

namespace rp::runtime {

class HostArena;

struct HfExportOptions {
  std::string dir; ///< Target directory ("" : no export).
  HfExportDType dtype = HfExportDType::F32;
  uint64_t maxShardBytes = kDefaultHfShardBytes;
  std::string configPath;           ///< config.json to copy (full-model exports only).
  bool merged = false;              ///< LoRA plans: the merged full model instead of adapters.
  std::optional<double> loraAlpha;  ///< LoRA plans: the alpha they were compiled with.
  std::string baseModel;            ///< LoRA adapters: base_model_name_or_path.
  bool force = false;               ///< Replace a non-empty DIR.
  /// Param name -> checkpoint name ("" : left out), e.g. a tied LM head
  /// (HfWriteOptions::aliases).
  std::map<std::string, std::string> aliases;
};

/// True when `plan` holds LoRA adapter params (names ending in ".lora_A" / ".lora_B", or in
/// ".lora_A.weight" / ".lora_B.weight").
bool hasLoraAdapters(const rp::plan::Plan &plan);

/// Checks `options` against `plan` before anything runs (nothing is written): the target
/// directory (checkExportDir), the config file, and the LoRA options: alpha required for a
/// plan with adapters, --export-merged, --lora-alpha and --base-model refused for one without,
/// --hf-config refused for an adapter export. Errors: InvalidArgument naming the flag.
Status checkHfExport(const HfExportOptions &options, const rp::plan::Plan &plan);

/// Writes the export of `host` to options.dir; returns a one-line summary ("N tensors, B bytes
/// in K files (dtype) to DIR"). Errors: the writer's; InvalidArgument for a non-float param or
/// an adapter whose W, A and B shapes do not fit together.
StatusOr<std::string> exportHf(HostArena &host, const HfExportOptions &options);

/// The export alone: loads `planPath` with `weightsPath` (as rp-run --weights) or, when
/// `resumeDir` is set, the checkpoint in it, and exports it. Prints the summary on `out`.
/// Errors: the loader's, the checkpoint's, checkHfExport's and exportHf's.
Status exportWeights(const std::string &planPath, const std::string &weightsPath,
                     bool allowExtraWeights, const std::string &resumeDir,
                     const HfExportOptions &options, std::FILE *out);

} // namespace rp::runtime

#endif // RP_RUNTIME_TRAIN_HFEXPORT_H
