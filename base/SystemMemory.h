//===- SystemMemory.h - How much memory this machine has ---------*- C++ -*-===//
//
// Tools refuse inputs that claim more memory than the machine has, up front and with the sizes
// (docs/FUZZING.md, "Limits"): plans (runtime/plan/PlanMemoryCheck.h) and ONNX models
// (frontends/onnx/OnnxModel.h).
//
//===----------------------------------------------------------------------===//
#ifndef RP_BASE_SYSTEMMEMORY_H
#define RP_BASE_SYSTEMMEMORY_H

#include <cstdint>

namespace rp {
inline namespace base {

/// Bytes of physical memory of this machine (sysconf _SC_PHYS_PAGES x _SC_PAGE_SIZE); 0 when
/// unknown. A decimal RP_MEMORY_LIMIT_BYTES in the environment overrides it (tests; containers
/// whose limit is below the machine's memory).
uint64_t physicalMemoryBytes();

} // namespace base
} // namespace rp

#endif // RP_BASE_SYSTEMMEMORY_H
