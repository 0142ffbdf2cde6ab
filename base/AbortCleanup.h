//===- AbortCleanup.h - Files to remove when a process is killed -*- C++ -*-===//
//
// A process that a second interrupt ends at once (rp-run: the first SIGINT / SIGTERM stops a
// run cleanly, the second exits immediately) must not leave half-written files behind. The
// files being written register here (AtomicFileWriter's temporaries; a checkpoint's tensor
// files until its checkpoint.json commits them), and the signal handler calls
// removeAbortCleanupFiles(), which is async-signal-safe: a fixed table of paths, lock-free
// atomics and unlink(2).
//
//===----------------------------------------------------------------------===//
#ifndef RP_BASE_ABORTCLEANUP_H
#define RP_BASE_ABORTCLEANUP_H

#include <string>

namespace rp {
inline namespace base {

/// Registers `path` for removal by removeAbortCleanupFiles(); returns its slot, or -1 when the
/// table (64 paths) is full or the path is too long (4095 bytes): such a file is then not
/// removed on an abort, which is the behaviour without this table.
int registerAbortCleanup(const std::string &path);
/// Unregisters `slot` (a registerAbortCleanup result; -1 does nothing).
void unregisterAbortCleanup(int slot);
/// Unlinks every registered path. Async-signal-safe; for a signal handler that then _exits.
void removeAbortCleanupFiles();

} // namespace base
} // namespace rp

#endif // RP_BASE_ABORTCLEANUP_H
