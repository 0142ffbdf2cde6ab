//===- OneProcess.h - The jobs that refuse an MPI launch of several -*- C++ -*-===//
//
// Only training is data-parallel (docs/MULTI_NODE.md): check, simulate and export run in one
// process. Shared by the driver's files; not part of its interface (Driver.h).
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_DRIVER_ONEPROCESS_H
#define RP_RUNTIME_DRIVER_ONEPROCESS_H

#include "base/Status.h"

#include <string>

namespace rp::runtime {

/// OK unless rp-run was started by an MPI launcher with several processes (World.h,
/// detectMpiLaunch); then InvalidArgument "JOB runs in one process, not under an MPI launch of
/// R (VARIABLE); only training is data-parallel".
Status checkOneProcess(const std::string &job);

} // namespace rp::runtime

#endif // RP_RUNTIME_DRIVER_ONEPROCESS_H
