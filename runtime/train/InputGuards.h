//===- InputGuards.h - What a run must not start from or write over -*- C++ -*-===//
//
// Two checks rp-run makes before it trains or exports, so that a run neither trains silently
// from weights that are not the model's nor writes its output over its own inputs:
//
//  - Placeholder weights: a model exported from a checkpoint's config without its weights
//    (examples/export/export_model.py --model-dir or --weightless) holds placeholders, zeros
//    or a random init, and says so in its ONNX metadata (rp.placeholder_weights,
//    rp.checkpoint), which rpc-compile copies into the plan (plan.proto placeholder_weights,
//    checkpoint_dir). Training or exporting such a plan needs --weights (or --resume);
//    random placeholders may be trained with --from-scratch.
//  - Exports over inputs: --export-hf DIR must not be, lie inside or contain the --weights
//    checkpoint directory (or the directory of its index) or the --resume checkpoint, and
//    must not contain any other input file (plan, data, --hf-config): an export replaces DIR
//    whole.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_TRAIN_INPUTGUARDS_H
#define RP_RUNTIME_TRAIN_INPUTGUARDS_H

#include "base/Status.h"
#include "runtime/plan/plan.pb.h"

#include <optional>
#include <string>
#include <vector>

namespace rp::runtime {

/// What a run that starts from `plan`'s own weights would start from, when they are
/// placeholders: "PLAN holds placeholder weights (zeros) of the model in HF_DIR, not its
/// weights"; nullopt when they are the model's.
std::optional<std::string> placeholderWeightsNote(const rp::plan::Plan &plan,
                                                  const std::string &planPath);

/// Refuses to train (or export) `plan` from its own placeholder weights: ok when the plan's
/// weights are the model's, when `weightsGiven` (--weights or --resume), or for random
/// placeholders with `fromScratch`. `fromScratchFlag`: the flag that allows it ("" : none).
/// Errors: InvalidArgument naming the plan, the checkpoint directory and the flag to pass.
Status checkInitialWeights(const rp::plan::Plan &plan, const std::string &planPath,
                           bool weightsGiven, bool fromScratch,
                           const std::string &fromScratchFlag);

/// The inputs an export must not write over (file comment).
struct RunInputs {
  std::string weights;   ///< --weights: a file, an index or a checkpoint directory ("" : none).
  std::string resumeDir; ///< --resume's checkpoint directory ("" : none).
  std::vector<std::string> files; ///< Other input files: plan, data, --hf-config.
};

/// Refuses an export directory `dir` (of `flag`) that is, lies inside or contains an input
/// directory of `inputs`, or contains one of its files. Errors: InvalidArgument naming both.
Status checkExportOutsideInputs(const std::string &dir, const std::string &flag,
                                const RunInputs &inputs);

} // namespace rp::runtime

#endif // RP_RUNTIME_TRAIN_INPUTGUARDS_H
