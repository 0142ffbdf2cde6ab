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
// A plan compiled from a model whose weights are ONNX external data has no weights file: its
// tensors are byte ranges of the model's data files (Plan.external_weights), opened with
// fromExternal and read one tensor at a time (pread into one tensor's buffer).
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

#include "base/Status.h"
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

/// A tensor stored as raw little-endian bytes in a file (ONNX external data).
struct ExternalTensor {
  std::string name;
  std::string file; ///< the data file's path
  int64_t offset = 0, bytes = 0;
  SafetensorsDType dtype = SafetensorsDType::F32;
  std::vector<int64_t> shape;
};

/// The tensors of one safetensors file, of a sharded checkpoint, or of external data ranges.
/// Movable.
class WeightSource {
public:
  /// The tensors `tensors` (any order; names unique) read in place. Checks every range
  /// without reading it. Errors, naming the tensor and the file: NotFound for a missing
  /// file; InvalidArgument for a path that is not a regular file, a byte count that is not
  /// the shape's (product(shape) x element size), a negative offset, a duplicate name;
  /// DataLoss for a range past the end of the file (the file changed since compilation).
  static StatusOr<WeightSource> fromExternal(std::vector<ExternalTensor> tensors);

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
  /// True for a source made by fromExternal.
  bool external() const { return external_; }
  /// "weights file P" (one file), "weights index P" (sharded) or "external weights in P"
  /// (the first data file; "... and N more files"): the start of an error message about the
  /// whole source.
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
  struct Range {
    int64_t offset, bytes;
  };
  bool external_ = false;
  std::vector<Range> ranges_; ///< fromExternal: tensors_[i]'s bytes in shards_[shard]
  /// readTensors for an external source: each tensor read into one buffer, in file order.
  Status readExternal(const std::function<Status(const SafetensorsTensorView &)> &fn) const;
};

/// True for the dtypes a floating-point param loads from: F32, F16 and BF16 (each converts to
/// fp32 exactly).
bool isFloat32Convertible(SafetensorsDType dtype);

/// Converts the F32, F16 or BF16 tensor `t` (little-endian, any alignment) to fp32 in `out`
/// (product(t.shape) floats), exactly: base/Float16.h's halfToFloat and bf16ToFloat.
/// Errors: InvalidArgument naming the tensor for another dtype.
Status convertToFloat32(const SafetensorsTensorView &t, float *out);

} // namespace rp::runtime

#endif // RP_RUNTIME_IO_WEIGHTSOURCE_H
