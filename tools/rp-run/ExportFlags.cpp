//===- ExportFlags.cpp - The --export-hf group (train, export) ------------===//

#include "tools/rp-run/ExportFlags.h"

#include "runtime/io/HfCheckpointWriter.h"
#include "tools/rp-run/Flags.h"

namespace rp::rprun {

ExportFlags::ExportFlags(CLI::App &app, runtime::HfExportOptions &options, bool required)
    : options_(options) {
  auto *group = app.add_option_group(
      "export", required ? "The weights in the Hugging Face layout (LoRA plans: PEFT "
                           "adapters): the plan's --weights or the --resume checkpoint"
                         : "After training: the trained weights in the Hugging Face layout "
                           "(LoRA plans: PEFT adapters)");
  CLI::Option *dir = group->add_option(
      "--export-hf", options.dir,
      "Write the weights to DIR as transformers' from_pretrained loads them (LoRA plans: PEFT "
      "adapters)");
  if (required)
    dir->required();
  const auto needsDir = [&](CLI::Option *option) { return required ? option : option->needs(dir); };
  needsDir(group->add_option("--export-dtype", dtype_,
                             "f32 (default: the fp32 master weights exactly) | bf16 | f16"));
  shardSizeOption_ = needsDir(group->add_option(
      "--export-shard-size", shardSize_,
      "Largest shard: bytes or 5GB, 500MB, 2GiB, ... (default 50GB, as transformers); larger "
      "models are written as model-0000k-of-0000n shards with model.safetensors.index.json"));
  needsDir(group->add_option("--hf-config", options.configPath,
                             "A config.json to copy into the export"));
  needsDir(group->add_flag("--export-merged", options.merged,
                           "LoRA plans: write the merged full model (W + alpha/r B A) instead "
                           "of the PEFT adapters"));
  loraAlphaOption_ = needsDir(group
                                  ->add_option("--lora-alpha", loraAlpha_,
                                               "LoRA plans: the alpha the plan was compiled with")
                                  ->check(finiteNumber(true)));
  needsDir(group->add_option("--base-model", options.baseModel,
                             "LoRA adapters: base_model_name_or_path in adapter_config.json"));
  needsDir(group->add_flag("--export-force", options.force,
                           "Replace a non-empty --export-hf directory"));
}

Status ExportFlags::resolve() const {
  if (options_.dir.empty())
    return okStatus();
  StatusOr<runtime::HfExportDType> dtype = runtime::parseHfExportDType(dtype_);
  if (!dtype.ok())
    return invalidArgument("--export-dtype: " + dtype.status().message());
  options_.dtype = dtype.value();
  if (shardSizeOption_->count()) {
    StatusOr<uint64_t> bytes = runtime::parseByteSize(shardSize_);
    if (!bytes.ok())
      return invalidArgument("--export-shard-size: " + bytes.status().message());
    options_.maxShardBytes = bytes.value();
  }
  if (loraAlphaOption_->count())
    options_.loraAlpha = loraAlpha_;
  return okStatus();
}

} // namespace rp::rprun
