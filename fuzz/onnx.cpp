//===- onnx.cpp - Fuzz target: ONNX ModelProto bytes -> graph IR -> verifier ===//
//
// The input is a binary .onnx file: parsed as a ModelProto (external data resolved against the
// scratch directory, which holds no data files), imported and verified (ImportAndVerify.h).
// Seeds: every .onnx file under test/ and examples/ (scripts/fuzz.sh).

#include "fuzz/FuzzScratch.h"
#include "fuzz/ImportAndVerify.h"

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  rp::fuzz::quietProtobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string name = rp::fuzz::scratch().dir() + "/model.onnx";
  rp::fuzz::importAndVerify(mlir::rp::onnx::parseOnnxModel(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), name));
  return 0;
}
