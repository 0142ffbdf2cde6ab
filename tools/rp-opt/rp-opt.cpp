//===- rp-opt.cpp - run rpc passes on any IR ------------------------------===//
//
// MlirOptMain with rpc's dialects and passes registered (compiler/InitAll.h), plus the upstream
// dialects our IR uses (builtin, func, arith) and the generic transforms (canonicalize, cse, ...).
// Used by the lit tests and to reproduce any step of rpc-compile.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::rp::registerAllDialects(registry);
  mlir::rp::registerAllPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "rp-opt: the rpc (RoundPipe compiler) optimizer driver\n", registry));
}
