//===- Checksum.cpp - File checksums (XXH3-64) ----------------------------===//

#include "base/Checksum.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <vector>

namespace rp {
inline namespace base {

namespace {
constexpr const char kPrefix[] = "xxh3-64:";
} // namespace

struct Checksummer::State {
  XXH3_state_t xxh;
};

Checksummer::Checksummer() : state_(std::make_unique<State>()) {
  XXH3_64bits_reset(&state_->xxh);
}
Checksummer::~Checksummer() = default;
Checksummer::Checksummer(Checksummer &&) noexcept = default;
Checksummer &Checksummer::operator=(Checksummer &&) noexcept = default;

void Checksummer::update(const void *data, size_t size) {
  if (size > 0)
    XXH3_64bits_update(&state_->xxh, data, size);
}

uint64_t Checksummer::digest() const { return XXH3_64bits_digest(&state_->xxh); }

uint64_t checksumBytes(const void *data, size_t size) { return XXH3_64bits(data, size); }

StatusOr<uint64_t> checksumFile(const std::string &path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const std::string message = "cannot open '" + path + "': " + std::strerror(errno);
    return errno == ENOENT ? notFound(message) : unavailable(message);
  }
  Checksummer sum;
  std::vector<char> block(size_t{1} << 20);
  for (;;) {
    const ssize_t n = ::read(fd, block.data(), block.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      const std::string message = "cannot read '" + path + "': " + std::strerror(errno);
      ::close(fd);
      return unavailable(message);
    }
    if (n == 0)
      break;
    sum.update(block.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return sum.digest();
}

std::string formatChecksum(uint64_t digest) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(digest));
  return std::string(kPrefix) + hex;
}

std::optional<uint64_t> parseChecksum(std::string_view text) {
  const size_t prefix = sizeof(kPrefix) - 1;
  if (text.size() != prefix + 16 || text.substr(0, prefix) != kPrefix)
    return std::nullopt;
  uint64_t digest = 0;
  for (char c : text.substr(prefix)) {
    int v;
    if (c >= '0' && c <= '9')
      v = c - '0';
    else if (c >= 'a' && c <= 'f')
      v = c - 'a' + 10;
    else
      return std::nullopt;
    digest = digest << 4 | static_cast<uint64_t>(v);
  }
  return digest;
}

} // namespace base
} // namespace rp
