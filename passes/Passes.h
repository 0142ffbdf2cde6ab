//===- Passes.h - rpc passes ------------------------------------*- C++ -*-===//
//
// The public entry of passes/: every pass of the graph kind (Graph/Passes.h) and the schedule
// kind (Schedule/Passes.h), and registerRPPasses, which registers them all.
//
//===----------------------------------------------------------------------===//

#ifndef RP_PASSES_PASSES_H
#define RP_PASSES_PASSES_H

#include "passes/Graph/Passes.h"
#include "passes/Schedule/Passes.h"

namespace mlir::rp {

/// Registers every pass of passes/ with the pass registry (rp-opt's command line).
inline void registerRPPasses() {
  registerRPGraphPasses();
  registerRPSchedulePasses();
}

} // namespace mlir::rp

#endif // RP_PASSES_PASSES_H
