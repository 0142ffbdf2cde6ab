//===- Checksum.h - File checksums (XXH3-64) --------------------*- C++ -*-===//
//
// The checksum rpc records for the files it must be able to trust later (checkpoints): the
// 64-bit XXH3 hash of the file's bytes (Yann Collet's xxHash, https://xxhash.com; Debian's
// libxxhash-dev, used header-only so nothing links it), written as "xxh3-64:<16 hex digits>".
// It detects accidental damage (a flipped bit, a truncated or swapped file) at memory speed;
// it is not a cryptographic signature.
//
//   Checksummer sum;                      // while writing
//   sum.update(bytes, n);
//   std::string text = formatChecksum(sum.digest());
//   StatusOr<uint64_t> again = checksumFile(path);   // when reading back
//
//===----------------------------------------------------------------------===//
#ifndef RP_BASE_CHECKSUM_H
#define RP_BASE_CHECKSUM_H

#include "base/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace rp {
inline namespace base {

/// A running XXH3-64 over the bytes given to update(), in order.
class Checksummer {
public:
  Checksummer();
  ~Checksummer();
  Checksummer(Checksummer &&) noexcept;
  Checksummer &operator=(Checksummer &&) noexcept;
  Checksummer(const Checksummer &) = delete;
  Checksummer &operator=(const Checksummer &) = delete;

  void update(const void *data, size_t size);
  /// The hash of every byte given so far (update may continue afterwards).
  uint64_t digest() const;

private:
  struct State;
  std::unique_ptr<State> state_;
};

/// The XXH3-64 of `size` bytes at `data`.
uint64_t checksumBytes(const void *data, size_t size);

/// The XXH3-64 of the file at `path`, read in blocks. Errors: NotFound (no such file),
/// Unavailable (cannot open or read it), each naming the path.
StatusOr<uint64_t> checksumFile(const std::string &path);

/// "xxh3-64:" followed by the 16 lower-case hex digits of `digest`.
std::string formatChecksum(uint64_t digest);

/// The digest of a formatChecksum string; nullopt for anything else (another algorithm, a
/// wrong length, a non-hex digit).
std::optional<uint64_t> parseChecksum(std::string_view text);

} // namespace base
} // namespace rp

#endif // RP_BASE_CHECKSUM_H
