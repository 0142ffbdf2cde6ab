//===- AtomicFile.cpp - all-or-nothing file writes ------------------------===//

#include "base/AtomicFile.h"

#include "base/AbortCleanup.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rp {
inline namespace base {

StatusOr<AtomicFileWriter> AtomicFileWriter::open(const std::string &path) {
  std::string temp = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(temp.data());
  if (fd < 0)
    return unavailable("cannot create a temporary file for '" + path + "': " +
                       std::strerror(errno));
  return AtomicFileWriter(path, std::move(temp), fd);
}

AtomicFileWriter::AtomicFileWriter(std::string path, std::string temp, int fd)
    : path_(std::move(path)), temp_(std::move(temp)), fd_(fd),
      cleanupSlot_(registerAbortCleanup(temp_)) {}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter &&other) noexcept
    : path_(std::move(other.path_)), temp_(std::move(other.temp_)), fd_(other.fd_),
      cleanupSlot_(other.cleanupSlot_), sum_(std::move(other.sum_)) {
  other.fd_ = -1;
  other.cleanupSlot_ = -1;
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_.c_str());
  }
  forgetTemporary();
}

void AtomicFileWriter::forgetTemporary() {
  unregisterAbortCleanup(cleanupSlot_);
  cleanupSlot_ = -1;
}

Status AtomicFileWriter::abandon(const char *what) {
  std::string message = std::string(what) + " '" + temp_ + "': " + std::strerror(errno);
  ::close(fd_);
  ::unlink(temp_.c_str());
  fd_ = -1;
  forgetTemporary();
  return unavailable(message);
}

Status AtomicFileWriter::append(const void *data, size_t size) {
  if (fd_ < 0)
    return unavailable("writing '" + path_ + "': the file was already committed or abandoned");
  const char *bytes = static_cast<const char *>(data);
  size_t written = 0;
  while (written < size) {
    ssize_t n = ::write(fd_, bytes + written, size - written);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return abandon("cannot write");
    }
    written += static_cast<size_t>(n);
  }
  sum_.update(data, size);
  return okStatus();
}

Status AtomicFileWriter::commit() {
  if (fd_ < 0)
    return unavailable("writing '" + path_ + "': the file was already committed or abandoned");
  if (::fchmod(fd_, 0644) != 0)
    return abandon("cannot set permissions of");
  if (::fsync(fd_) != 0)
    return abandon("cannot flush");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    ::unlink(temp_.c_str());
    forgetTemporary();
    return unavailable("cannot close '" + temp_ + "': " + std::strerror(errno));
  }
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    std::string message =
        "cannot rename '" + temp_ + "' to '" + path_ + "': " + std::strerror(errno);
    ::unlink(temp_.c_str());
    forgetTemporary();
    return unavailable(message);
  }
  forgetTemporary();
  return okStatus();
}

Status writeFileAtomic(const std::string &path, const void *data, size_t size,
                       uint64_t *checksum) {
  RP_ASSIGN_OR_RETURN(AtomicFileWriter file, AtomicFileWriter::open(path));
  RP_RETURN_IF_ERROR(file.append(data, size));
  RP_RETURN_IF_ERROR(file.commit());
  if (checksum)
    *checksum = file.checksum();
  return okStatus();
}

} // namespace base
} // namespace rp
