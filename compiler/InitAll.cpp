//===- InitAll.cpp - registration of rpc's dialects and passes ------------===//

#include "compiler/InitAll.h"

#include "dialects/Graph/IR/GraphDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void mlir::rp::registerAllDialects(DialectRegistry &registry) {
  registry.insert<graph::GraphDialect, func::FuncDialect, arith::ArithDialect>();
}

void mlir::rp::registerAllPasses() {
  static bool registered = [] {
    registerCanonicalizerPass();
    registerCSEPass();
    registerSymbolDCEPass();
    registerInlinerPass();
    return true;
  }();
  (void)registered;
}
