//===- ImportAndVerify.h - Shared body of the ONNX fuzz targets -*- C++ -*-===//
//
// The two ONNX targets (binary ModelProto, ONNX text) parse their input their own way, then
// share this: import into the graph dialect (with the dims the committed dynamic exports use)
// in a fresh MLIRContext, and run the verifier on whatever was imported. A rejected model must
// come back as an error or diagnostics; a crash, a sanitizer report, a verifier failure of a
// module the importer returned, or a hang is a finding.
//
//===----------------------------------------------------------------------===//
#ifndef RP_FUZZ_IMPORTANDVERIFY_H
#define RP_FUZZ_IMPORTANDVERIFY_H

#include "frontends/onnx/OnnxModel.h"

namespace rp::fuzz {

/// Imports `model` (when it parsed) and verifies the module; aborts when the importer returns
/// a module the verifier rejects. Consumes the error of a model that did not parse.
void importAndVerify(llvm::Expected<mlir::rp::onnx::OnnxModel> model);

/// Silences protobuf's log (invalid UTF-8 in string fields is logged, then rejected).
void quietProtobuf();

} // namespace rp::fuzz

#endif // RP_FUZZ_IMPORTANDVERIFY_H
