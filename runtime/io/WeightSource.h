//===- WeightSource.h - Initial weights: one file or a sharded checkpoint -*- C++ -*-===//
//
// Where rp-run's initial weights come from (`--weights PATH`): a Hugging Face checkpoint as
// published, or the plan's own weights file. PATH is
//
//   - a safetensors file (`model.safetensors`, rpc-compile's MODEL.safetensors, a checkpoint's
//     model-stepN.safetensors);
//   - a sharded checkpoint's index (a file whose name ends in ".json", as
//     `model.safetensors.index.json`): {"metadata": {...}, "weight_map": {"tensor": "shard
//     file name", ...}}; the shards lie beside the index;
//   - a directory holding `model.safetensors`, or else `model.safetensors.index.json` (the
//     order Hugging Face transformers looks for them in).
//
// Opening reads and validates every header (readSafetensors) and keeps a table of the tensors
// (name, dtype, shape, shard); it maps no data. readTensors then maps one shard at a time and
// hands out its tensors in data-buffer order, dropping each tensor's pages once it is read:
// the memory a load needs is one tensor (its converted copy) plus what the caller fills, not
// the checkpoint (docs/DECISIONS.md, "Training and checkpoints").
//
//   RP_ASSIGN_OR_RETURN(WeightSource weights, WeightSource::open("ckpt/"));
//   RP_RETURN_IF_ERROR(weights.readTensors([&](const SafetensorsTensorView &t) { ... }));
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_IO_WEIGHTSOURCE_H
#define RP_RUNTIME_IO_WEIGHTSOURCE_H

#include "runtime/core/Status.h"
#include "runtime/io/Safetensors.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace rp::runtime {

/// A tensor of a weight source: its header entry and the shard that holds it.
struct WeightEntry {
  std::string name;
  SafetensorsDType dtype;
  std::vector<int64_t> shape; ///< [] for a 0-D tensor.
  size_t shard;               ///< Index into WeightSource::shards().
};

/// The tensors of one safetensors file or of a sharded checkpoint. Movable.
class WeightSource {
public:
  /// Opens `path` (see the file comment) and reads every shard's header.
  /// Errors, each naming the file (and the tensor): readSafetensors' for a file or shard
  /// (NotFound for a missing file); NotFound for a directory with neither model.safetensors
  /// nor model.safetensors.index.json, and for a shard the index names that does not exist;
  /// InvalidArgument for a malformed index (not JSON, no "weight_map" object, a value that is
  /// not a file name beside the index, an empty map), a tensor the index maps to a shard that
  /// does not hold it, and a tensor a shard holds that the index does not map to that shard.
  static StatusOr<WeightSource> open(const std::string &path);

  /// The path as given to open().
  const std::string &path() const { return path_; }
  /// The safetensors files read: one, or the shards the index names, sorted by file name.
  const std::vector<std::string> &shards() const { return shards_; }
  /// The index file of a sharded checkpoint ("" for a single file).
  const std::string &indexPath() const { return indexPath_; }
  /// Every tensor, by shard, then in data-buffer order.
  const std::vector<WeightEntry> &tensors() const { return tensors_; }
  /// The tensor called `name`, or null.
  const WeightEntry *find(std::string_view name) const;
  /// "weights file P" (one file) or "weights index P" (sharded): the start of an error message
  /// about the whole source.
  std::string describe() const;

  /// Calls `fn` for every tensor, shard by shard (each shard mapped only while its tensors are
  /// read), in tensors() order; the view is valid during the call only. Stops at the first
  /// error `fn` returns. Errors: readSafetensors' for a shard; DataLoss naming the shard and
  /// the tensor when a shard changed since open() (a tensor gone, or another dtype or shape).
  Status readTensors(const std::function<Status(const SafetensorsTensorView &)> &fn) const;

private:
  std::string path_;
  std::string indexPath_;
  std::vector<std::string> shards_;
  std::vector<WeightEntry> tensors_;
  std::unordered_map<std::string, size_t> byName_;
};

/// True for the dtypes a floating-point param loads from: F32, F16 and BF16 (each converts to
/// fp32 exactly).
bool isFloat32Convertible(SafetensorsDType dtype);

/// Converts the F32, F16 or BF16 tensor `t` (little-endian, any alignment) to fp32 in `out`
/// (product(t.shape) floats), exactly: runtime/core/Float16.h's halfToFloat and bf16ToFloat.
/// Errors: InvalidArgument naming the tensor for another dtype.
Status convertToFloat32(const SafetensorsTensorView &t, float *out);

} // namespace rp::runtime

#endif // RP_RUNTIME_IO_WEIGHTSOURCE_H
