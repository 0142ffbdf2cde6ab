//===- AtomicFile.cpp - all-or-nothing file writes ------------------------===//

#include "runtime/core/AtomicFile.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rp::runtime {

Status writeFileAtomic(const std::string &path, const void *data, size_t size) {
  std::string temp = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(temp.data());
  if (fd < 0)
    return unavailable("cannot create a temporary file for '" + path + "': " +
                       std::strerror(errno));
  auto failWith = [&](const char *what) {
    std::string message = std::string(what) + " '" + temp + "': " + std::strerror(errno);
    ::close(fd);
    ::unlink(temp.c_str());
    return unavailable(message);
  };
  const char *bytes = static_cast<const char *>(data);
  size_t written = 0;
  while (written < size) {
    ssize_t n = ::write(fd, bytes + written, size - written);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return failWith("cannot write");
    }
    written += static_cast<size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0)
    return failWith("cannot set permissions of");
  if (::fsync(fd) != 0)
    return failWith("cannot flush");
  if (::close(fd) != 0) {
    ::unlink(temp.c_str());
    return unavailable("cannot close '" + temp + "': " + std::strerror(errno));
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    std::string message = "cannot rename '" + temp + "' to '" + path + "': " + std::strerror(errno);
    ::unlink(temp.c_str());
    return unavailable(message);
  }
  return okStatus();
}

} // namespace rp::runtime
