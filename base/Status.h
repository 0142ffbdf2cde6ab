//===- Status.h - Status values for the runtime world -----------*- C++ -*-===//
//
// The runtime (plan loading, executor, backends, kernels) reports failures as
// values, never by exceptions or exit(): every fallible function returns a
// `Status` or a `StatusOr<T>`, and the caller decides (rp-run maps a failed
// Status to a message and a non-zero exit code). Modelled on absl::Status and
// iree_status_t (IREE runtime/src/iree/base/status.h); the codes are the
// subset of the canonical gRPC/absl codes the runtime needs.
//
//   StatusOr<Plan> loadPlan(const std::string &path);
//   Status run(...) {
//     RP_ASSIGN_OR_RETURN(Plan plan, loadPlan(path));
//     RP_RETURN_IF_ERROR(validate(plan));
//     return okStatus();
//   }
//
//===----------------------------------------------------------------------===//
#ifndef RP_BASE_STATUS_H
#define RP_BASE_STATUS_H

#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace rp {
inline namespace base {

/// Error classes (meaning as in absl::StatusCode).
enum class StatusCode {
  Ok = 0,            ///< Success.
  InvalidArgument,   ///< The caller passed a bad value (null pointer, bad shape, bad dtype).
  NotFound,          ///< A named thing (file, tensor, stage) does not exist.
  OutOfRange,        ///< An index or offset lies outside a valid range.
  DataLoss,          ///< A file or buffer is truncated or corrupt (bad hash, short read).
  ResourceExhausted, ///< Out of memory (host or device) or another quota.
  Unimplemented,     ///< A valid request this build does not support (yet).
  Internal,          ///< An invariant of the runtime itself was broken.
  Unavailable,       ///< A resource is not present now (no GPU, driver missing).
};

/// Stable upper-case name of a code ("OK", "INVALID_ARGUMENT", ...), as absl spells them.
const char *statusCodeName(StatusCode code);

/// A success or an error code with a human-readable message. The message says
/// what failed, where (file, tensor, stage) and what was expected.
class [[nodiscard]] Status {
public:
  using Code = StatusCode;

  /// Success.
  Status() = default;
  /// `code` with `message`; an Ok code drops the message.
  Status(StatusCode code, std::string message)
      : code_(code), message_(code == StatusCode::Ok ? std::string() : std::move(message)) {}

  bool ok() const { return code_ == StatusCode::Ok; }
  StatusCode code() const { return code_; }
  const std::string &message() const { return message_; }

  /// "OK", or "<CODE_NAME>: <message>".
  std::string toString() const;

  friend bool operator==(const Status &a, const Status &b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }
  friend bool operator!=(const Status &a, const Status &b) { return !(a == b); }

private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

/// Factory helpers, one per code.
inline Status okStatus() { return Status(); }
inline Status invalidArgument(std::string msg) {
  return Status(StatusCode::InvalidArgument, std::move(msg));
}
inline Status notFound(std::string msg) { return Status(StatusCode::NotFound, std::move(msg)); }
inline Status outOfRange(std::string msg) {
  return Status(StatusCode::OutOfRange, std::move(msg));
}
inline Status dataLoss(std::string msg) { return Status(StatusCode::DataLoss, std::move(msg)); }
inline Status resourceExhausted(std::string msg) {
  return Status(StatusCode::ResourceExhausted, std::move(msg));
}
inline Status unimplemented(std::string msg) {
  return Status(StatusCode::Unimplemented, std::move(msg));
}
inline Status internal(std::string msg) { return Status(StatusCode::Internal, std::move(msg)); }
inline Status unavailable(std::string msg) {
  return Status(StatusCode::Unavailable, std::move(msg));
}

namespace detail {
/// Prints "<what>: <status>" to stderr and aborts. Used for programmer errors
/// only (reading the value of an error StatusOr), never for bad input.
[[noreturn]] void fatalStatus(const char *what, const Status &status);
} // namespace detail

/// Either a value of type T or an error Status (never both, never neither).
/// Reading the value of an error is a programmer error: it aborts with the
/// status message (checked in every build type).
template <typename T>
class [[nodiscard]] StatusOr {
  static_assert(!std::is_reference_v<T>, "StatusOr<T&> is not supported");
  static_assert(!std::is_same_v<std::decay_t<T>, Status>, "StatusOr<Status> is not allowed");

public:
  /// An error. An Ok status carries no value, so it becomes an Internal error.
  StatusOr(Status status) : status_(std::move(status)) { // NOLINT: implicit by design
    if (status_.ok())
      status_ = internal("StatusOr constructed from an ok Status without a value");
  }
  /// A value.
  StatusOr(T value) : value_(std::move(value)) {} // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  /// Ok when this holds a value.
  const Status &status() const { return status_; }

  /// The value; aborts with the status message when this holds an error.
  T &value() & {
    check();
    return *value_;
  }
  const T &value() const & {
    check();
    return *value_;
  }
  T &&value() && {
    check();
    return std::move(*value_);
  }

  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T &&operator*() && { return std::move(*this).value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

  /// The value, or `fallback` when this holds an error.
  T valueOr(T fallback) const & { return ok() ? *value_ : std::move(fallback); }

private:
  void check() const {
    if (!status_.ok())
      detail::fatalStatus("StatusOr::value() called on an error", status_);
  }

  Status status_;
  std::optional<T> value_;
};

namespace detail {
inline const Status &toStatus(const Status &s) { return s; }
template <typename T>
const Status &toStatus(const StatusOr<T> &s) {
  return s.status();
}
} // namespace detail

} // namespace base
} // namespace rp

#define RP_STATUS_CONCAT_INNER_(a, b) a##b
#define RP_STATUS_CONCAT_(a, b) RP_STATUS_CONCAT_INNER_(a, b)

/// Evaluates `expr` (a Status or StatusOr) once; returns its Status from the
/// enclosing function (which returns Status or StatusOr<U>) when it is an error.
#define RP_RETURN_IF_ERROR(expr)                                                                   \
  do {                                                                                             \
    ::rp::base::Status rp_status_tmp_ = ::rp::base::detail::toStatus(expr);                 \
    if (!rp_status_tmp_.ok())                                                                      \
      return rp_status_tmp_;                                                                       \
  } while (0)

/// `RP_ASSIGN_OR_RETURN(T x, makeX());` evaluates the StatusOr `rexpr`; on an
/// error returns its Status, otherwise moves the value into `lhs`.
#define RP_ASSIGN_OR_RETURN(lhs, rexpr)                                                            \
  RP_ASSIGN_OR_RETURN_IMPL_(RP_STATUS_CONCAT_(rp_statusor_tmp_, __LINE__), lhs, rexpr)
#define RP_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr)                                                 \
  auto tmp = (rexpr);                                                                              \
  if (!tmp.ok())                                                                                   \
    return tmp.status();                                                                           \
  lhs = std::move(tmp).value()

#endif // RP_BASE_STATUS_H
