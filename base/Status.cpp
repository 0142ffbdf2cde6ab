//===- Status.cpp - Status values for the runtime world -------------------===//

#include "base/Status.h"

#include <cstdio>
#include <cstdlib>

namespace rp {
inline namespace base {

const char *statusCodeName(StatusCode code) {
  switch (code) {
  case StatusCode::Ok:
    return "OK";
  case StatusCode::InvalidArgument:
    return "INVALID_ARGUMENT";
  case StatusCode::NotFound:
    return "NOT_FOUND";
  case StatusCode::OutOfRange:
    return "OUT_OF_RANGE";
  case StatusCode::DataLoss:
    return "DATA_LOSS";
  case StatusCode::ResourceExhausted:
    return "RESOURCE_EXHAUSTED";
  case StatusCode::Unimplemented:
    return "UNIMPLEMENTED";
  case StatusCode::Internal:
    return "INTERNAL";
  case StatusCode::Unavailable:
    return "UNAVAILABLE";
  }
  return "UNKNOWN";
}

std::string Status::toString() const {
  if (ok())
    return "OK";
  std::string s = statusCodeName(code_);
  s += ": ";
  s += message_;
  return s;
}

namespace detail {
void fatalStatus(const char *what, const Status &status) {
  std::fprintf(stderr, "rp fatal: %s: %s\n", what, status.toString().c_str());
  std::fflush(stderr);
  std::abort();
}
} // namespace detail

} // namespace base
} // namespace rp
