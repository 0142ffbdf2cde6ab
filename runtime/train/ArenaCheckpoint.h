//===- ArenaCheckpoint.h - A host arena's state as a checkpoint (rp-run) -*- C++ -*-===//
//
// What rp-run saves and restores (runtime/train/Checkpoint.h holds the files): the model
// tensors (trainable params as their fp32 master weights, frozen ones in their stored dtype)
// and the optimizer tensors ("m.<param>", "v.<param>" AdamW moments; with async updates also
// "weights.<param>", the compute weights the next iteration uses, one step behind the master),
// with rp-run's metadata (producer, update mode, seed, micro_batches, compute_dtype).
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_TRAIN_ARENACHECKPOINT_H
#define RP_RUNTIME_TRAIN_ARENACHECKPOINT_H

#include "base/Status.h"
#include "runtime/exec/HostArena.h"
#include "runtime/train/Checkpoint.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace rp::runtime {

/// Tensors of a checkpoint: views of the arena, and owning copies (`scratch`) where the arena
/// holds another dtype than the checkpoint stores.
struct CheckpointTensors {
  std::vector<std::vector<uint8_t>> scratch;
  CheckpointData data;
};

/// The checkpoint of `host` after `step` steps of a run sampling with `seed`. Frozen float
/// params are converted from the compute dtype back to their stored dtype. Errors: the cast's.
StatusOr<std::unique_ptr<CheckpointTensors>> checkpointOf(HostArena &host, int64_t step,
                                                          uint64_t seed);

/// Loads `ckpt` into `host`: master weights, moments, the compute weights (async: the saved
/// ones; sync: written from the master) and frozen params. Errors (InvalidArgument): a
/// checkpoint of the other update mode, a missing tensor or one of another dtype or shape.
Status restoreCheckpoint(HostArena &host, const LoadedCheckpoint &ckpt);

} // namespace rp::runtime

#endif // RP_RUNTIME_TRAIN_ARENACHECKPOINT_H
