//===- ImportAndVerify.cpp - Shared body of the ONNX fuzz targets ---------===//

#include "fuzz/ImportAndVerify.h"

#include "frontends/onnx/OnnxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <google/protobuf/stubs/logging.h>

#include <cstdio>
#include <cstdlib>

namespace rp::fuzz {

void quietProtobuf() { google::protobuf::SetLogHandler(nullptr); }

void importAndVerify(llvm::Expected<mlir::rp::onnx::OnnxModel> model) {
  if (!model) {
    llvm::consumeError(model.takeError());
    return;
  }
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  mlir::rp::onnx::registerImporterDialects(context);
  // Rejections are expected; their messages would only slow the fuzzer down.
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) { return mlir::success(); });
  mlir::rp::onnx::ImportOptions options;
  options.dims = {{"batch", 2}, {"seq", 16}};
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::rp::onnx::importOnnxModel(context, *model, options);
  if (module && mlir::failed(mlir::verify(*module))) {
    std::fprintf(stderr, "rp-fuzz: the importer returned a module that does not verify\n");
    std::abort();
  }
}

} // namespace rp::fuzz
