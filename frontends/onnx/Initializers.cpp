//===- Initializers.cpp - which ONNX initializers are trainable params ----===//

#include "frontends/onnx/Initializers.h"

#include "frontends/onnx/Metadata.h"

#include "onnx/onnx_pb.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::rp::onnx {

namespace {

constexpr const char *kInputSpecKind = "pkg.torch.export.graph_signature.InputSpec.kind";

bool isFloat(const ::onnx::TensorProto &init) {
  return init.data_type() == ::onnx::TensorProto::FLOAT ||
         init.data_type() == ::onnx::TensorProto::FLOAT16 ||
         init.data_type() == ::onnx::TensorProto::BFLOAT16;
}

/// Whether `init` holds more than one element (computed without overflow: dims are untrusted).
bool holdsSeveral(const ::onnx::TensorProto &init) {
  bool several = false;
  for (int64_t d : init.dims()) {
    if (d <= 0)
      return false;
    several |= d > 1;
  }
  return several;
}

/// The module buffers the export script lists in the metadata `rp.buffers`.
llvm::StringSet<> listedBuffers(const ::onnx::ModelProto &model) {
  llvm::StringSet<> buffers;
  for (const auto &prop : model.metadata_props())
    if (prop.key() == "rp.buffers") {
      llvm::SmallVector<llvm::StringRef> names;
      llvm::StringRef(prop.value()).split(names, ',', -1, /*KeepEmpty=*/false);
      for (llvm::StringRef n : names)
        buffers.insert(n.trim());
    }
  return buffers;
}

/// The dynamo exporter's InputSpec kind of each annotated value (PARAMETER, BUFFER,
/// CONSTANT_TENSOR, USER_INPUT).
llvm::StringMap<std::string> inputSpecKinds(const ::onnx::GraphProto &graph) {
  llvm::StringMap<std::string> kinds;
  auto scan = [&](const auto &infos) {
    for (const ::onnx::ValueInfoProto &info : infos) {
      std::string kind = valueInfoMetadata(info, kInputSpecKind);
      if (!kind.empty())
        kinds[info.name()] = std::move(kind);
    }
  };
  scan(graph.input());
  scan(graph.value_info());
  return kinds;
}

/// TorchScript's names for values it created: node outputs `onnx::<Op>_<n>` (constant
/// folding) and `/<scope>/<Op>_output_<n>`.
bool isTorchScriptValueName(llvm::StringRef name) {
  return name.starts_with("onnx::") || name.starts_with("/");
}

} // namespace

llvm::StringSet<> parameterInitializers(const ::onnx::ModelProto &model) {
  const llvm::StringSet<> buffers = listedBuffers(model);
  const llvm::StringMap<std::string> kinds = inputSpecKinds(model.graph());
  const bool annotated = !kinds.empty();
  llvm::StringSet<> params;
  for (const ::onnx::TensorProto &init : model.graph().initializer()) {
    if (!isFloat(init) || buffers.contains(init.name()))
      continue;
    auto kind = kinds.find(init.name());
    if (kind != kinds.end()) {
      if (kind->second == "PARAMETER")
        params.insert(init.name());
      continue;
    }
    const bool exporterNamed = annotated || isTorchScriptValueName(init.name());
    if (!exporterNamed || holdsSeveral(init))
      params.insert(init.name());
  }
  return params;
}

} // namespace mlir::rp::onnx
