//===- TiedWeights.cpp - Hugging Face names of tied embeddings ------------===//

#include "frontends/onnx/TiedWeights.h"

#include "frontends/onnx/Metadata.h"

#include "onnx/onnx_pb.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::rp::onnx {

std::string embeddingModulePath(const ::onnx::NodeProto &node) {
  // Dynamo: "name: type/name: type/...", outermost first; the innermost Embedding module.
  const std::string scope = nodeMetadata(node, "namespace");
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(scope).split(parts, '/', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef part : llvm::reverse(parts)) {
    auto [path, type] = part.split(": ");
    if (type.trim().ends_with("Embedding") && !path.trim().empty())
      return path.trim().str();
  }
  // TorchScript: "/model/embed_tokens/Gather" -> "model.embed_tokens".
  llvm::StringRef name = node.name();
  if (!name.consume_front("/"))
    return "";
  llvm::SmallVector<llvm::StringRef> components;
  name.split(components, '/', -1, /*KeepEmpty=*/false);
  if (components.size() < 2)
    return "";
  components.pop_back(); // the node itself
  std::string path;
  for (llvm::StringRef c : components)
    path += (path.empty() ? "" : ".") + c.str();
  return path;
}

llvm::StringMap<std::string> tiedEmbeddingNames(const ::onnx::GraphProto &graph) {
  llvm::StringSet<> initializers;
  for (const auto &init : graph.initializer())
    initializers.insert(init.name());
  llvm::StringMap<int> readers; // nodes reading each initializer
  for (const auto &node : graph.node())
    for (const std::string &input : node.input())
      if (initializers.contains(input))
        ++readers[input];
  llvm::StringMap<std::string> names;
  for (const auto &node : graph.node()) {
    if (node.op_type() != "Gather" || node.input_size() < 1)
      continue;
    const std::string &table = node.input(0);
    if (!initializers.contains(table) || readers.lookup(table) < 2 || names.count(table))
      continue;
    const std::string path = embeddingModulePath(node);
    if (path.empty())
      continue;
    const std::string name = path + ".weight";
    if (name != table && !initializers.contains(name))
      names[table] = name;
  }
  return names;
}

} // namespace mlir::rp::onnx
