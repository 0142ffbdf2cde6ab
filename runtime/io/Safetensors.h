//===- Safetensors.h - Reading and writing safetensors files ----*- C++ -*-===//
//
// Weights and checkpoints are safetensors files (https://github.com/huggingface/safetensors),
// loadable by PyTorch and Hugging Face as they are. Layout:
//
//   [8 bytes: N, little-endian u64][N bytes: JSON header][data buffer]
//
// The header is a JSON object: one entry per tensor,
//   "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}
// with byte offsets relative to the start of the data buffer, and an optional
// "__metadata__": {"key": "value", ...} of strings.
//
// Reading validates the whole header before it maps any data: header length within the file
// and at most 100 MB, the JSON parses, every dtype is known, every dimension is a non-negative
// integer, shape product * element size == end - begin (overflow-checked), every range lies in
// the data buffer, and no two ranges overlap. Gaps between ranges and unused bytes at the end
// are allowed (the reference reader rejects them; we accept any file it writes). The file is
// mapped read-only (mmap); tensors are views into the mapping, valid while the
// SafetensorsFile lives (the file must not be truncated in place meanwhile: reading a mapped
// page past the new end raises SIGBUS; writeSafetensors replaces files by rename, which is
// safe). The data buffer starts 8 + N bytes into the file, so a view's address is only as
// aligned as the writer made it: copy out with memcpy.
//
//   RP_ASSIGN_OR_RETURN(SafetensorsFile weights, readSafetensors("model.safetensors"));
//   if (const SafetensorsTensorView *t = weights.find("lm_head.weight")) ...
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_IO_SAFETENSORS_H
#define RP_RUNTIME_IO_SAFETENSORS_H

#include "base/DType.h"
#include "base/Status.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace rp::runtime {

/// The element types of the safetensors format with whole-byte elements (the reference's
/// `Dtype`): BOOL is one byte holding 0 or 1; F8_* are the OCP 8-bit floats.
enum class SafetensorsDType {
  BOOL,
  U8,
  I8,
  F8_E5M2,
  F8_E4M3,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  F64,
  I64,
  U64,
};

/// The header spelling: "F32", "BOOL", ...
const char *safetensorsDTypeName(SafetensorsDType dtype);
/// Bytes per element (1, 2, 4 or 8).
size_t safetensorsDTypeSize(SafetensorsDType dtype);
/// Parses a header spelling. Errors: InvalidArgument naming the text and the known names.
StatusOr<SafetensorsDType> parseSafetensorsDType(std::string_view name);
/// The runtime dtype with the same storage (F32, F16, BF16, F64, I64, I32; BOOL -> I1), or
/// nullopt for the types the runtime does not compute with (U8, I8, I16, U16, U32, U64, F8_*).
std::optional<DType> toRuntimeDType(SafetensorsDType dtype);
/// The safetensors spelling of a runtime dtype (I1 -> BOOL).
SafetensorsDType fromRuntimeDType(DType dtype);

/// A tensor of a file read by readSafetensors: a view into the file's mapping.
struct SafetensorsTensorView {
  std::string name;
  SafetensorsDType dtype;
  std::vector<int64_t> shape; ///< [] for a 0-D tensor.
  const uint8_t *data;        ///< The first byte (null when size is 0); not aligned in general.
  size_t size;                ///< Bytes: product(shape) * element size.
  uint64_t offset;            ///< Of the first byte, from the start of the data buffer.
};

/// A safetensors file, mapped read-only. Movable, not copyable.
class SafetensorsFile {
public:
  SafetensorsFile() = default;
  SafetensorsFile(SafetensorsFile &&other) noexcept;
  SafetensorsFile &operator=(SafetensorsFile &&other) noexcept;
  SafetensorsFile(const SafetensorsFile &) = delete;
  SafetensorsFile &operator=(const SafetensorsFile &) = delete;
  ~SafetensorsFile();

  /// The path the file was read from.
  const std::string &path() const { return path_; }
  /// Every tensor, in data-buffer order (ascending offset, then name).
  const std::vector<SafetensorsTensorView> &tensors() const { return tensors_; }
  /// The tensor called `name`, or null.
  const SafetensorsTensorView *find(std::string_view name) const;
  /// The "__metadata__" entries (empty when the header has none).
  const std::map<std::string, std::string> &metadata() const { return metadata_; }
  /// Bytes of the whole file.
  size_t fileSize() const { return mapSize_; }
  /// Tells the kernel the whole pages inside `t`'s bytes are not needed again (madvise
  /// MADV_DONTNEED): a reader going through a large file tensor by tensor keeps only the
  /// pages of the tensor it reads. The view stays valid: a later access reads the pages from
  /// the file again.
  void releasePages(const SafetensorsTensorView &t) const;

private:
  friend StatusOr<SafetensorsFile> readSafetensors(const std::string &path);
  void unmap();

  std::string path_;
  std::vector<SafetensorsTensorView> tensors_;
  std::unordered_map<std::string, size_t> byName_;
  std::map<std::string, std::string> metadata_;
  void *map_ = nullptr; ///< mmap of the whole file; null for an empty mapping.
  size_t mapSize_ = 0;
};

/// The largest header readSafetensors accepts, in bytes (the reference's MAX_HEADER_SIZE).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

/// Reads and validates `path` (see the file comment).
/// Errors: NotFound (no such file), Unavailable (cannot open, read or map it), DataLoss
/// (shorter than its header says, a range past the data buffer) and InvalidArgument (bad
/// JSON, unknown dtype, bad shape, size mismatch, overlapping ranges, duplicate names), each
/// naming the file and the tensor.
StatusOr<SafetensorsFile> readSafetensors(const std::string &path);

/// A tensor to write: non-owning; `data` must hold `size` bytes while writeSafetensors runs.
struct SafetensorsTensor {
  std::string name;
  SafetensorsDType dtype;
  std::vector<int64_t> shape;
  const void *data; ///< May be null when size is 0.
  size_t size;      ///< Must equal product(shape) * element size.
};

/// Writes `tensors` and `metadata` ("__metadata__", omitted when empty) to `path` atomically
/// (base/AtomicFile.h: a reader sees the old file or the complete new one). The data
/// buffer holds the tensors back to back in the given order (the reference writer sorts them
/// by dtype alignment, then name; we keep the caller's order, which readers do not depend on,
/// and the header lists them in that order too). The header is compact JSON padded with spaces
/// to a multiple of 8 bytes, as the reference writer pads it, so the data buffer starts
/// 8-byte aligned in the file. The tensors are written from their buffers as they are (no copy
/// of the file in memory). With `checksum`, stores the file's XXH3-64 (base/Checksum.h),
/// computed while writing.
/// Errors: InvalidArgument for an empty, duplicate, non-UTF-8 or "__metadata__" name, a
/// negative dimension or a size that is not product(shape) * element size (naming the
/// tensor); Unavailable when the file cannot be written.
Status writeSafetensors(const std::string &path, const std::vector<SafetensorsTensor> &tensors,
                        const std::map<std::string, std::string> &metadata = {},
                        uint64_t *checksum = nullptr);

/// Produces tensor `index`'s bytes by calling `append` (any number of times, exactly the
/// tensor's size in total); returns the first error.
using SafetensorsFill = std::function<Status(
    size_t index, const std::function<Status(const void *data, size_t size)> &append)>;

/// writeSafetensors with the data produced one tensor at a time (`tensors[i].data` is not
/// read): the header first, then `fill(i, append)` for each tensor in order, straight to the
/// temporary file. Peak memory is what `fill` holds, not the file. Atomic as
/// writeSafetensors, and `checksum` as there. Errors: writeSafetensors', fill's, and
/// InvalidArgument naming the tensor when `fill` gives more or fewer bytes than its size.
Status writeSafetensorsStreamed(const std::string &path,
                                const std::vector<SafetensorsTensor> &tensors,
                                const std::map<std::string, std::string> &metadata,
                                const SafetensorsFill &fill, uint64_t *checksum = nullptr);

} // namespace rp::runtime

#endif // RP_RUNTIME_IO_SAFETENSORS_H
