//===- OnnxModel.h - loading ONNX models and tensors ------------*- C++ -*-===//
//
// Reads an ONNX model from a binary `.onnx` file (protobuf ModelProto, with external data files
// beside it as PyTorch writes them for large models) or from a textual `.onnxtext` file
// (onnx::OnnxParser syntax), and converts TensorProtos to and from host tensors.
//
// Errors are returned as llvm::Error with a one-line message naming the file and, where it
// applies, the tensor.
//
//===----------------------------------------------------------------------===//

#ifndef RP_FRONTENDS_ONNX_ONNXMODEL_H
#define RP_FRONTENDS_ONNX_ONNXMODEL_H

#include "base/DType.h"
#include "base/HostTensor.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <optional>
#include <string>

namespace onnx {
class ModelProto;
class TensorProto;
} // namespace onnx

namespace mlir::rp::onnx {

/// A loaded ONNX model and the directory its external data is resolved against.
struct OnnxModel {
  std::unique_ptr<::onnx::ModelProto> proto;
  /// Directory of the model file; external data locations are relative to it.
  std::string directory;
  /// The path the model was read from (for messages and locations).
  std::string path;

  OnnxModel();
  ~OnnxModel();
  OnnxModel(OnnxModel &&);
  OnnxModel &operator=(OnnxModel &&);
};

/// The value of the model's metadata property `key` (ModelProto.metadata_props), or nullopt.
std::optional<std::string> metadataValue(const OnnxModel &model, llvm::StringRef key);

/// Parses ONNX text (onnx::OnnxParser syntax) from memory; `name` is used in messages and
/// gives the directory external data is resolved against.
llvm::Expected<OnnxModel> parseOnnxText(llvm::StringRef text, llvm::StringRef name);

/// Loads `path`: `.onnxtext` files are parsed as ONNX text, anything else as a binary
/// ModelProto. Fails on unreadable, truncated or malformed files.
llvm::Expected<OnnxModel> loadOnnxModel(llvm::StringRef path);

/// Parses a ModelProto from memory (binary protobuf). `name` is used in messages.
llvm::Expected<OnnxModel> parseOnnxModel(llvm::StringRef bytes, llvm::StringRef name);

/// Refuses a model whose initializers declare more bytes than the machine has
/// (base/SystemMemory.h), before any tensor is read: the sizes come from the dims, not
/// from the data present. For tools that read every initializer (rp-ref); rpc-compile reads
/// only the small constants and the weights one at a time. Error: "<path>: the model's
/// initializers need X (the largest, 'w', Y); this machine has Z".
llvm::Error checkInitializersFitInMemory(const OnnxModel &model);

/// Maps an ONNX TensorProto data type to our dtype; fails for types rpc does not handle.
llvm::Expected<::rp::base::DType> dtypeFromOnnx(int onnxType);

/// The ONNX TensorProto data type of a dtype.
int onnxFromDType(::rp::base::DType dtype);

/// Name of an ONNX data type ("FLOAT", "DOUBLE", ...), for messages.
std::string onnxTypeName(int onnxType);

/// Decodes a TensorProto (typed fields, raw_data, or external data resolved against
/// `directory`, which external locations may not escape). Sizes are checked against the data
/// present before any allocation.
llvm::Expected<::rp::base::HostTensor> readTensor(const ::onnx::TensorProto &tensor,
                                                     llvm::StringRef directory);

/// Where a tensor's external data lies: a regular file inside the model's directory (its real,
/// absolute path) and a byte range of exactly the tensor's size.
struct ExternalRange {
  std::string path;
  int64_t offset = 0, length = 0;
};

/// The external data range of `tensor` (checked as checkExternalData does), or nullopt for
/// a tensor stored inline.
llvm::Expected<std::optional<ExternalRange>>
externalDataRange(const ::onnx::TensorProto &tensor, llvm::StringRef directory);

/// Checks a tensor's external data (location inside `directory`, file present, byte range
/// within it) without reading it; success for tensors stored inline.
llvm::Error checkExternalData(const ::onnx::TensorProto &tensor, llvm::StringRef directory);

/// Reads a serialized TensorProto file (`input_0.pb`).
llvm::Expected<::rp::base::HostTensor> readTensorFile(llvm::StringRef path);

/// Writes `tensor` as a serialized TensorProto named `name` to `path`, atomically (temporary
/// file + rename).
llvm::Error writeTensorFile(const ::rp::base::HostTensor &tensor, llvm::StringRef name,
                            llvm::StringRef path);

} // namespace mlir::rp::onnx

#endif // RP_FRONTENDS_ONNX_ONNXMODEL_H
