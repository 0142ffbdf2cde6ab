//===- AtomicFile.h - all-or-nothing file writes ----------------*- C++ -*-===//
//
// Every output file of rpc's tools is written through writeFileAtomic: the bytes go to a
// temporary file beside the target, are flushed to disk (fsync), and the temporary is renamed
// over the target. A reader sees the old file or the complete new one, never a half-written
// file; on any error the temporary is removed and the target is untouched.
//
//===----------------------------------------------------------------------===//

#ifndef RP_BASE_ATOMICFILE_H
#define RP_BASE_ATOMICFILE_H

#include "base/Checksum.h"
#include "base/Status.h"

#include <cstddef>
#include <string>

namespace rp {
inline namespace base {

/// Writes `size` bytes at `data` to `path` atomically (temporary file, fsync, rename); with
/// `checksum`, stores the bytes' XXH3-64 there (base/Checksum.h). While it is written, the
/// temporary file is registered for removal by a second interrupt (base/AbortCleanup.h).
/// Errors: the directory is missing or not writable, the disk is full (Unavailable / Internal
/// with the path and the system's message).
Status writeFileAtomic(const std::string &path, const void *data, size_t size,
                       uint64_t *checksum = nullptr);

/// The same, in pieces: open() creates the temporary file, append() adds bytes, commit()
/// flushes and renames it over the target. Destroyed without a successful commit(), it
/// removes the temporary and leaves the target untouched. Movable. Errors as above.
class AtomicFileWriter {
public:
  static StatusOr<AtomicFileWriter> open(const std::string &path);
  AtomicFileWriter(AtomicFileWriter &&other) noexcept;
  AtomicFileWriter &operator=(AtomicFileWriter &&) = delete;
  AtomicFileWriter(const AtomicFileWriter &) = delete;
  ~AtomicFileWriter();

  Status append(const void *data, size_t size);
  Status commit();
  /// The XXH3-64 of the bytes appended so far (base/Checksum.h), computed as they are written.
  uint64_t checksum() const { return sum_.digest(); }

private:
  AtomicFileWriter(std::string path, std::string temp, int fd);
  /// Closes nothing; removes the temporary from the abort-cleanup table.
  void forgetTemporary();
  /// Closes and removes the temporary; Unavailable "<what> '<temp>': <errno text>".
  Status abandon(const char *what);

  std::string path_, temp_;
  int fd_ = -1;
  int cleanupSlot_ = -1; ///< The temporary's base/AbortCleanup.h slot.
  Checksummer sum_;
};

} // namespace base
} // namespace rp

#endif // RP_BASE_ATOMICFILE_H
