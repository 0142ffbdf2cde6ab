//===- AbortCleanup.cpp - Files to remove when a process is killed --------===//

#include "base/AbortCleanup.h"

#include <atomic>
#include <cstring>
#include <unistd.h>

namespace rp {
inline namespace base {

namespace {

constexpr int kSlots = 64;
constexpr size_t kPathBytes = 4096;
enum SlotState : int { kFree = 0, kFilling = 1, kReady = 2 };

struct Slot {
  std::atomic<int> state{kFree};
  char path[kPathBytes];
};

Slot slots[kSlots];

static_assert(std::atomic<int>::is_always_lock_free, "a signal handler reads the slots");

} // namespace

int registerAbortCleanup(const std::string &path) {
  if (path.empty() || path.size() >= kPathBytes)
    return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!slots[i].state.compare_exchange_strong(expected, kFilling))
      continue;
    std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
    slots[i].state.store(kReady);
    return i;
  }
  return -1;
}

void unregisterAbortCleanup(int slot) {
  if (slot >= 0 && slot < kSlots)
    slots[slot].state.store(kFree);
}

void removeAbortCleanupFiles() {
  for (Slot &s : slots)
    if (s.state.load() == kReady)
      ::unlink(s.path);
}

} // namespace base
} // namespace rp
