//===- Checkpoint.h - Crash-safe training checkpoint directories -*- C++ -*-===//
//
// A training checkpoint is a directory DIR holding, for the step K it was saved at:
//
//   model-step<K>.safetensors      the model tensors the caller gives (e.g. the fp32 master
//                                  weights keyed by param name), loadable by safetensors /
//                                  PyTorch as they are (`safetensors.torch.load_file`)
//   optimizer-step<K>.safetensors  the optimizer tensors ("m.<name>", "v.<name>", ...)
//   checkpoint.json                the commit point:
//     {"format": "rpc-checkpoint", "version": 2, "step": K,
//      "model": "model-stepK.safetensors", "optimizer": "optimizer-stepK.safetensors",
//      "metadata": {"plan_hash": "...", "seed": "...", ...},
//      "checksums": {"model-stepK.safetensors": "xxh3-64:<hex>", "optimizer-...": "..."},
//      "manifest_checksum": "xxh3-64:<hex>"}
//
// Every file proves it is whole: "checksums" holds each tensor file's XXH3-64
// (base/Checksum.h), computed while it was written, and "manifest_checksum", the last member,
// the XXH3-64 of checkpoint.json's bytes before the `,` that precedes it. loadCheckpoint
// checks all three before it trusts anything, so one flipped byte in any file is refused
// (DataLoss, naming the file). Version 1 checkpoints (without checksums) still load.
//
// saveCheckpoint writes the two tensor files (each atomically: temporary file, fsync, rename),
// then checkpoint.json atomically, and only then removes the tensor files of other steps. A
// save interrupted at any point (crash, full disk, kill -9) leaves the previous checkpoint.json
// and the files it names intact, so loadCheckpoint returns the previous checkpoint. A save
// that fails removes the files of its own generation it had written, and until checkpoint.json
// commits them they are registered for removal by a second interrupt (base/AbortCleanup.h); a
// stray newer model-step file left by a crash is ignored (and removed by the next save).
//
// Tensor files are byte-reproducible: the tensors are written sorted by name, and the files
// carry no timestamps, so the same data saved twice gives identical bytes (tests compare
// checkpoints with `cmp`). Their "__metadata__" is {"format": "pt", "step": "<K>"} ("format":
// "pt" is what Hugging Face transformers expects of a PyTorch safetensors file).
//
//   RP_RETURN_IF_ERROR(checkCheckpointDir(dir));           // before training starts
//   ...
//   CheckpointData data{step, {{"plan_hash", hash}}, modelTensors, optimizerTensors};
//   RP_RETURN_IF_ERROR(saveCheckpoint(dir, data));
//   ...
//   RP_ASSIGN_OR_RETURN(LoadedCheckpoint ckpt, loadCheckpoint(dir));
//   const SafetensorsTensorView *w = ckpt.model.find("layers.0.w");
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_TRAIN_CHECKPOINT_H
#define RP_RUNTIME_TRAIN_CHECKPOINT_H

#include "base/Status.h"
#include "runtime/io/Safetensors.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace rp::runtime {

/// The "format" and "version" of checkpoint.json this build writes and reads.
inline constexpr const char *kCheckpointFormat = "rpc-checkpoint";
inline constexpr int64_t kCheckpointVersion = 2;
/// The commit file's name inside a checkpoint directory.
inline constexpr const char *kCheckpointManifestName = "checkpoint.json";

/// The text checkpoint.json holds for `text`, a manifest object serialised with an indent of
/// 2 ("{\n  ...\n}"): the same members plus a last one, "manifest_checksum", the XXH3-64 of
/// the bytes before its `,` (saveCheckpoint's; for tests that write a manifest by hand).
std::string sealCheckpointManifest(const std::string &text);

/// "model-step<step>.safetensors"; generation 1: "model-step<step>-1.safetensors" (the names
/// a save of the step the directory's committed checkpoint already holds uses).
std::string checkpointModelFileName(int64_t step, int generation = 0);
/// "optimizer-step<step>.safetensors"; generation 1: "optimizer-step<step>-1.safetensors".
std::string checkpointOptimizerFileName(int64_t step, int generation = 0);

/// What saveCheckpoint writes. The tensors are non-owning views (SafetensorsTensor): their
/// data must stay valid while saveCheckpoint runs.
struct CheckpointData {
  int64_t step = 0;                            ///< Training steps completed (>= 0).
  std::map<std::string, std::string> metadata; ///< The caller's: plan hash, seed, update mode...
  std::vector<SafetensorsTensor> model;        ///< Written sorted by name.
  std::vector<SafetensorsTensor> optimizer;    ///< Written sorted by name.
};

/// Saves `data` into `dir` as described in the file comment: creates `dir` (and its missing
/// parents), writes model-step<K>.safetensors and optimizer-step<K>.safetensors, then
/// checkpoint.json (each atomically), flushes the directory, then removes the tensor files of
/// other steps (model-step<N>.safetensors / optimizer-step<N>.safetensors, N != K, and the
/// temporary files an interrupted save left). Saving the step the directory's checkpoint
/// already holds writes its files under the other generation's names (`-1` or not), never
/// over the committed ones, then removes those.
/// Peak extra memory: the larger tensor file's size (runtime/io/Safetensors.h).
/// Errors: InvalidArgument for a negative step, a bad tensor (empty or duplicate name, size
/// that does not match the shape; naming the tensor) or metadata that is not valid UTF-8;
/// Unavailable when a directory or file cannot be created or written (with the path and the
/// system's message). On an error the previous checkpoint stays loadable.
Status saveCheckpoint(const std::string &dir, const CheckpointData &data);

/// Checks before training starts that `dir` can hold checkpoints: creates it (and its missing
/// parents) if missing, then creates and removes a probe file in it. Leaves no file behind,
/// and on failure removes the directories it created.
/// Errors: InvalidArgument "cannot write checkpoints to DIR: <reason>" (an empty path, a path
/// through or at a regular file, a read-only file system, no permission, ...).
Status checkCheckpointDir(const std::string &dir);

/// A checkpoint read by loadCheckpoint. The tensors are views into the two mapped files
/// (runtime/io/Safetensors.h), valid while this object lives.
struct LoadedCheckpoint {
  int64_t step = 0;
  std::map<std::string, std::string> metadata;
  SafetensorsFile model;
  SafetensorsFile optimizer;
};

/// Reads DIR/checkpoint.json and the two tensor files it names (plain file names inside DIR:
/// names with '/', "." or ".." are refused).
/// Errors: NotFound "DIR holds no checkpoint (checkpoint.json missing)"; DataLoss when
/// checkpoint.json is not valid JSON, a checksum does not match (naming the damaged file), or
/// a tensor file it names is missing or truncated; InvalidArgument when checkpoint.json is not
/// an object, has another "format", a "version" other than 1 or 2, or a missing or ill-typed
/// field (naming the field); Unavailable when a file cannot be read. Messages name the file.
StatusOr<LoadedCheckpoint> loadCheckpoint(const std::string &dir);

} // namespace rp::runtime

#endif // RP_RUNTIME_TRAIN_CHECKPOINT_H
