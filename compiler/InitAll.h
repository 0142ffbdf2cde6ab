//===- InitAll.h - registration of rpc's dialects and passes --------------===//
//
// One place that knows every dialect and pass of the compiler side, used by rp-opt and
// rpc-compile so both see the same world.
//
//===----------------------------------------------------------------------===//

#ifndef RP_COMPILER_INITALL_H
#define RP_COMPILER_INITALL_H

namespace mlir {
class DialectRegistry;
namespace rp {

/// Adds rpc's dialects (graph) and the upstream dialects rpc IR uses (builtin, func, arith).
void registerAllDialects(DialectRegistry &registry);

/// Registers rpc's passes (passes/, and compiler/'s rp-export-plan), its pipelines and the
/// upstream generic transforms (canonicalize, cse, symbol-dce, inline) with the global pass
/// registry. Idempotent.
void registerAllPasses();

} // namespace rp
} // namespace mlir

#endif // RP_COMPILER_INITALL_H
