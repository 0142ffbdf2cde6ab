//===- InitAll.cpp - registration of rpc's dialects and passes ------------===//

#include "compiler/InitAll.h"

#include "dialects/Graph/IR/GraphDialect.h"
#include "dialects/Schedule/IR/ScheduleDialect.h"
#include "compiler/ExportPasses.h"
#include "compiler/Pipeline.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void mlir::rp::registerAllDialects(DialectRegistry &registry) {
  registry.insert<graph::GraphDialect, schedule::ScheduleDialect, func::FuncDialect, arith::ArithDialect>();
}

void mlir::rp::registerAllPasses() {
  static bool registered = [] {
    registerCanonicalizerPass();
    registerCSEPass();
    registerSymbolDCEPass();
    registerInlinerPass();
    registerRPPasses();
    registerRPExportPasses();
    registerPipelines();
    return true;
  }();
  (void)registered;
}
