//===- TiedWeights.cpp - Hugging Face names of tied embeddings ------------===//

#include "frontends/onnx/TiedWeights.h"

#include "onnx/onnx_pb.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

namespace mlir::rp::onnx {

namespace {

/// The node's `namespace` metadata entry (NodeProto field 9, metadata_props, ONNX >= 1.16),
/// read from the wire format so that an ONNX library that predates the field still finds it.
std::string nodeNamespace(const ::onnx::NodeProto &node) {
  const std::string bytes = node.SerializeAsString();
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t *>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  constexpr uint32_t kMetadataProps = 9;
  for (uint32_t tag = in.ReadTag(); tag != 0; tag = in.ReadTag()) {
    if (tag >> 3 != kMetadataProps ||
        google::protobuf::internal::WireFormatLite::GetTagWireType(tag) !=
            google::protobuf::internal::WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      if (!google::protobuf::internal::WireFormatLite::SkipField(&in, tag))
        return "";
      continue;
    }
    std::string entry;
    uint32_t length = 0;
    if (!in.ReadVarint32(&length) || !in.ReadString(&entry, static_cast<int>(length)))
      return "";
    ::onnx::StringStringEntryProto kv;
    if (kv.ParseFromString(entry) && kv.key() == "namespace")
      return kv.value();
  }
  return "";
}

} // namespace

std::string embeddingModulePath(const ::onnx::NodeProto &node) {
  // Dynamo: "name: type/name: type/...", outermost first; the innermost Embedding module.
  const std::string scope = nodeNamespace(node);
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
