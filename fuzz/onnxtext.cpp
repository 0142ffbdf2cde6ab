//===- onnxtext.cpp - Fuzz target: ONNX text -> graph IR -> verifier -------===//
//
// The input is an .onnxtext file (onnx::OnnxParser syntax), parsed, imported and verified
// (ImportAndVerify.h). Seeds: the .onnxtext lit tests under test/ (scripts/fuzz.sh).

#include "fuzz/FuzzScratch.h"
#include "fuzz/ImportAndVerify.h"

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  rp::fuzz::quietProtobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string name = rp::fuzz::scratch().dir() + "/model.onnxtext";
  rp::fuzz::importAndVerify(mlir::rp::onnx::parseOnnxText(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), name));
  return 0;
}
