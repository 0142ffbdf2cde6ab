//===- OnnxImporter.h - ONNX ModelProto -> graph dialect --------*- C++ -*-===//
//
// Imports an ONNX model (opsets 13-23 of the default domain) into the `graph` dialect:
//
//   module {
//     graph.param @"<initializer>" trainable : tensor<...> initializer "<initializer>"
//     func.func @forward(<graph inputs>) -> (<graph outputs>) { ... }
//   }
//
// Every symbolic dimension is bound to a number (ImportOptions::dims or ::inputShapes), so all
// tensors are statically shaped. Shape-computation subgraphs (Shape, Gather on shapes, Concat,
// Range, ConstantOfShape, Equal/Where on constants, ...) are folded to constants during import
// by evaluating them on the CPU reference kernels. Errors are reported as MLIR diagnostics at
// the node's location (NameLoc of the ONNX node name inside the file location), e.g.
//   error: unsupported ONNX op 'Foo' (opset 17) at node 'foo_0'
//
//===----------------------------------------------------------------------===//

#ifndef RP_FRONTENDS_ONNX_ONNXIMPORTER_H
#define RP_FRONTENDS_ONNX_ONNXIMPORTER_H

#include "frontends/onnx/OnnxModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/ADT/StringMap.h"

#include <map>
#include <string>
#include <vector>

namespace mlir::rp::onnx {

/// The default-domain opsets the importer accepts.
constexpr int64_t kMinOpset = 13;
constexpr int64_t kMaxOpset = 23;

struct ImportOptions {
  /// Values of symbolic dimensions by name (`--dim batch=4`).
  std::map<std::string, int64_t> dims;
  /// Whole shapes of graph inputs by name (`--input-shape input_ids=4x128`); they win over
  /// `dims` and over the shapes stored in the model.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Graph inputs whose values are known at import time: they become constants (and fold).
  std::map<std::string, ::rp::base::HostTensor> constantInputs;
  /// Name of the imported function.
  std::string functionName = "forward";
  /// Results with at most this many elements are folded to constants when all operands are.
  int64_t foldLimit = 1 << 16;
};

/// Imports `model` into a new module; returns null after emitting diagnostics on failure.
OwningOpRef<ModuleOp> importOnnxModel(MLIRContext &context, const OnnxModel &model,
                                      const ImportOptions &options);

/// Registers the dialects the importer creates (graph, func).
void registerImporterDialects(MLIRContext &context);

/// The ONNX ops (op_type, since_version) the importer has a handler for, sorted.
std::vector<std::pair<std::string, int>> supportedOps();

/// Whether some opset of `opType` is supported.
bool isSupportedOp(llvm::StringRef opType);

} // namespace mlir::rp::onnx

namespace mlir::rp::graph {
class ParamOp;
} // namespace mlir::rp::graph

namespace mlir::rp::onnx {

/// The initial values of an imported model's params: each `graph.param` names the initializer
/// that holds its value.
class InitializerTable {
public:
  explicit InitializerTable(const OnnxModel &model);
  /// Reads the value of `param` (external data resolved against the model's directory);
  /// emits an error at the param and fails when it is missing or unreadable.
  FailureOr<::rp::base::HostTensor> load(graph::ParamOp param) const;

  /// Where the stored value of `param` lies when it is ONNX external data: the range and the
  /// stored dtype; nullopt when it is stored inline or has no initializer (load() reports
  /// that). Emits an error at the param and fails for invalid external data.
  struct External {
    ExternalRange range;
    ::rp::base::DType dtype;
  };
  FailureOr<std::optional<External>> external(graph::ParamOp param) const;

private:
  const OnnxModel &model;
  llvm::StringMap<const ::onnx::TensorProto *> byName;
};

/// Parses `name=N` (`--dim batch=4`) into `options.dims`.
llvm::Error parseDimBinding(llvm::StringRef text, ImportOptions &options);
/// Parses `name=AxBxC` (`--input-shape input_ids=4x128`; `name=` is a scalar) into
/// `options.inputShapes`.
llvm::Error parseInputShape(llvm::StringRef text, ImportOptions &options);
} // namespace mlir::rp::onnx

#endif // RP_FRONTENDS_ONNX_ONNXIMPORTER_H
