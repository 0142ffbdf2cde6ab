//===- Metadata.h - metadata_props of ONNX nodes and value infos -*- C++ -*-===//
//
// ONNX 1.16 added `metadata_props` (string key/value entries) to NodeProto (field 9) and
// ValueInfoProto (field 4). The exporters write there what rpc needs to know about a model:
// the dynamo exporter a node's module scope (`namespace`, TiedWeights.h) and what each lifted
// initializer was in the PyTorch program (`pkg.torch.export.graph_signature.InputSpec.kind`,
// Initializers.h). The entries are read from the wire format, so that an ONNX library that
// predates the fields (Debian's 1.12 parses them as unknown fields) still finds them.
//
//===----------------------------------------------------------------------===//
#ifndef RP_FRONTENDS_ONNX_METADATA_H
#define RP_FRONTENDS_ONNX_METADATA_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace onnx {
class NodeProto;
class ValueInfoProto;
} // namespace onnx

namespace mlir::rp::onnx {

/// The value of the node's metadata entry `key`; "" when it has none.
std::string nodeMetadata(const ::onnx::NodeProto &node, llvm::StringRef key);

/// The value of the value info's metadata entry `key`; "" when it has none.
std::string valueInfoMetadata(const ::onnx::ValueInfoProto &info, llvm::StringRef key);

} // namespace mlir::rp::onnx

#endif // RP_FRONTENDS_ONNX_METADATA_H
