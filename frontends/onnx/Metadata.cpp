//===- Metadata.cpp - metadata_props of ONNX nodes and value infos --------===//

#include "frontends/onnx/Metadata.h"

#include "onnx/onnx_pb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

namespace mlir::rp::onnx {

namespace {

/// The value of entry `key` of the repeated StringStringEntryProto field `field` of `message`,
/// read from its wire format; "" when absent.
std::string wireMetadata(const google::protobuf::MessageLite &message, uint32_t field,
                         llvm::StringRef key) {
  using google::protobuf::internal::WireFormatLite;
  const std::string bytes = message.SerializeAsString();
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t *>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  for (uint32_t tag = in.ReadTag(); tag != 0; tag = in.ReadTag()) {
    if (tag >> 3 != field ||
        WireFormatLite::GetTagWireType(tag) != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      if (!WireFormatLite::SkipField(&in, tag))
        return "";
      continue;
    }
    std::string entry;
    uint32_t length = 0;
    if (!in.ReadVarint32(&length) || !in.ReadString(&entry, static_cast<int>(length)))
      return "";
    ::onnx::StringStringEntryProto kv;
    if (kv.ParseFromString(entry) && kv.key() == key)
      return kv.value();
  }
  return "";
}

} // namespace

std::string nodeMetadata(const ::onnx::NodeProto &node, llvm::StringRef key) {
  constexpr uint32_t kNodeMetadataProps = 9;
  return wireMetadata(node, kNodeMetadataProps, key);
}

std::string valueInfoMetadata(const ::onnx::ValueInfoProto &info, llvm::StringRef key) {
  constexpr uint32_t kValueInfoMetadataProps = 4;
  return wireMetadata(info, kValueInfoMetadataProps, key);
}

} // namespace mlir::rp::onnx
