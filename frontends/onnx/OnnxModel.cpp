//===- OnnxModel.cpp - loading ONNX models and tensors --------------------===//

#include "frontends/onnx/OnnxModel.h"

#include "base/AtomicFile.h"
#include "base/FormatBytes.h"
#include "base/SystemMemory.h"

#include "onnx/defs/parser.h"
#include "onnx/onnx_pb.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>

using ::rp::base::DType;
using ::rp::base::HostTensor;

namespace mlir::rp::onnx {

OnnxModel::OnnxModel() = default;
OnnxModel::~OnnxModel() = default;
OnnxModel::OnnxModel(OnnxModel &&) = default;
OnnxModel &OnnxModel::operator=(OnnxModel &&) = default;

namespace {

template <typename... Ts>
llvm::Error fail(const char *fmt, Ts &&...args) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 llvm::formatv(fmt, std::forward<Ts>(args)...).str());
}

/// Parses a binary protobuf message with a size limit above the 64 MiB default (a model's
/// graph may be large even with external data).
template <typename Message>
bool parseBinary(Message &message, llvm::StringRef bytes) {
  google::protobuf::io::CodedInputStream stream(
      reinterpret_cast<const uint8_t *>(bytes.data()), static_cast<int>(bytes.size()));
  stream.SetTotalBytesLimit(std::numeric_limits<int>::max());
  return message.ParseFromCodedStream(&stream) && stream.ConsumedEntireMessage();
}

/// The bytes the initializers' dims declare, and the largest initializer.
struct InitializerBytes {
  uint64_t total = 0, largest = 0;
  std::string largestName;
};

InitializerBytes initializerBytes(const ::onnx::GraphProto &graph) {
  InitializerBytes out;
  for (const ::onnx::TensorProto &t : graph.initializer()) {
    llvm::Expected<DType> dtype = dtypeFromOnnx(t.data_type());
    if (!dtype) {
      llvm::consumeError(dtype.takeError()); // readTensor reports it, naming the tensor
      continue;
    }
    // Saturating: each factor is clamped so that a hostile shape cannot wrap around.
    constexpr uint64_t kCap = uint64_t(1) << 62;
    uint64_t bytes = ::rp::base::dtypeSize(*dtype);
    for (int64_t d : t.dims())
      bytes = d <= 0 ? 0 : (static_cast<uint64_t>(d) >= kCap / std::max<uint64_t>(bytes, 1)
                                ? kCap
                                : bytes * static_cast<uint64_t>(d));
    out.total = std::min(kCap, out.total + bytes);
    if (bytes > out.largest) {
      out.largest = bytes;
      out.largestName = t.name();
    }
  }
  return out;
}

} // namespace

llvm::Error checkInitializersFitInMemory(const OnnxModel &model) {
  const ::onnx::ModelProto &proto = *model.proto;
  llvm::StringRef name = model.path;
  const uint64_t limit = ::rp::base::physicalMemoryBytes();
  if (limit == 0)
    return llvm::Error::success();
  InitializerBytes sizes = initializerBytes(proto.graph());
  if (sizes.total <= limit)
    return llvm::Error::success();
  using ::rp::base::formatBytes;
  return fail("{0}: the model's initializers need {1} (the largest, '{2}', {3}); this machine "
              "has {4}",
              name, formatBytes(sizes.total), sizes.largestName, formatBytes(sizes.largest),
              formatBytes(limit));
}

llvm::Expected<OnnxModel> parseOnnxModel(llvm::StringRef bytes, llvm::StringRef name) {
  OnnxModel model;
  model.proto = std::make_unique<::onnx::ModelProto>();
  model.path = name.str();
  model.directory = llvm::sys::path::parent_path(name).str();
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return fail("{0}: the model file is larger than 2 GiB; store the weights as external data",
                name);
  if (!parseBinary(*model.proto, bytes))
    return fail("{0}: not a valid ONNX model (malformed or truncated protobuf)", name);
  if (!model.proto->has_graph())
    return fail("{0}: the model has no graph", name);
  return model;
}

llvm::Expected<OnnxModel> parseOnnxText(llvm::StringRef text, llvm::StringRef name) {
  OnnxModel model;
  model.proto = std::make_unique<::onnx::ModelProto>();
  model.path = name.str();
  model.directory = llvm::sys::path::parent_path(name).str();
  // OnnxParser reads a NUL-terminated string: a copy guarantees the terminator.
  const std::string terminated = text.str();
  ::onnx::Common::Status status;
  // ONNX's parser reports most errors as a Status but lets std::stoll & co. throw on
  // malformed numbers (found by fuzzing: test/fuzz-corpus/onnxtext/).
  try {
    ::onnx::OnnxParser parser(terminated.c_str());
    status = parser.Parse(*model.proto);
  } catch (const std::exception &e) {
    return fail("{0}: cannot parse ONNX text: malformed literal ({1})", name, e.what());
  }
  if (!status.IsOK())
    return fail("{0}: cannot parse ONNX text: {1}", name, status.ErrorMessage());
  return model;
}

std::optional<std::string> metadataValue(const OnnxModel &model, llvm::StringRef key) {
  for (const auto &prop : model.proto->metadata_props())
    if (prop.key() == key)
      return prop.value();
  return std::nullopt;
}

llvm::Expected<OnnxModel> loadOnnxModel(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/true);
  if (!buffer)
    return fail("{0}: cannot read the model: {1}", path, buffer.getError().message());
  if (path.ends_with(".onnxtext"))
    return parseOnnxText((*buffer)->getBuffer(), path);
  llvm::Expected<OnnxModel> model = parseOnnxModel((*buffer)->getBuffer(), path);
  if (model)
    model->directory = llvm::sys::path::parent_path(path).str();
  return model;
}

llvm::Expected<DType> dtypeFromOnnx(int onnxType) {
  switch (onnxType) {
  case ::onnx::TensorProto::FLOAT:
    return DType::F32;
  case ::onnx::TensorProto::FLOAT16:
    return DType::F16;
  case ::onnx::TensorProto::BFLOAT16:
    return DType::BF16;
  case ::onnx::TensorProto::DOUBLE:
    return DType::F64;
  case ::onnx::TensorProto::INT64:
    return DType::I64;
  case ::onnx::TensorProto::INT32:
    return DType::I32;
  case ::onnx::TensorProto::BOOL:
    return DType::I1;
  default:
    return fail("unsupported element type '{0}'", onnxTypeName(onnxType));
  }
}

int onnxFromDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return ::onnx::TensorProto::FLOAT;
  case DType::F16:
    return ::onnx::TensorProto::FLOAT16;
  case DType::BF16:
    return ::onnx::TensorProto::BFLOAT16;
  case DType::F64:
    return ::onnx::TensorProto::DOUBLE;
  case DType::I64:
    return ::onnx::TensorProto::INT64;
  case DType::I32:
    return ::onnx::TensorProto::INT32;
  case DType::I1:
    return ::onnx::TensorProto::BOOL;
  case DType::U8:
    return ::onnx::TensorProto::UINT8;
  }
  return ::onnx::TensorProto::UNDEFINED;
}

std::string onnxTypeName(int onnxType) {
  if (::onnx::TensorProto::DataType_IsValid(onnxType))
    return ::onnx::TensorProto::DataType_Name(
        static_cast<::onnx::TensorProto::DataType>(onnxType));
  return "type " + std::to_string(onnxType);
}

namespace {

/// Validates the external data of `tensor` (a relative location inside `directory`, a file
/// that exists, a byte range of `expectedBytes` within it) without reading it.
llvm::Expected<ExternalRange> locateExternal(const ::onnx::TensorProto &tensor,
                                             llvm::StringRef directory, size_t expectedBytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &entry : tensor.external_data()) {
    if (entry.key() == "location")
      location = entry.value();
    else if (entry.key() == "offset" || entry.key() == "length") {
      char *end = nullptr;
      long long v = std::strtoll(entry.value().c_str(), &end, 10);
      if (entry.value().empty() || *end != '\0' || v < 0)
        return fail("tensor '{0}': invalid external data {1} '{2}'", tensor.name(), entry.key(),
                    entry.value());
      (entry.key() == "offset" ? offset : length) = v;
    }
  }
  if (location.empty())
    return fail("tensor '{0}': external data without a location", tensor.name());
  llvm::SmallString<256> native(location);
  if (llvm::sys::path::is_absolute(native) ||
      llvm::any_of(llvm::make_range(llvm::sys::path::begin(native), llvm::sys::path::end(native)),
                   [](llvm::StringRef part) { return part == ".."; }))
    return fail("tensor '{0}': external data location '{1}' must be a relative path inside the "
                "model's directory",
                tensor.name(), location);
  llvm::SmallString<256> full(directory);
  llvm::sys::path::append(full, native);
  // A symbolic link inside the directory may still point outside it: compare real paths
  // (before anything else is looked at through the link).
  llvm::SmallString<256> realFile, realDir;
  if (std::error_code ec = llvm::sys::fs::real_path(full, realFile))
    return fail("tensor '{0}': missing external data file '{1}': {2}", tensor.name(),
                full.str(), ec.message());
  if (std::error_code ec = llvm::sys::fs::real_path(directory.empty() ? "." : directory, realDir))
    return fail("tensor '{0}': cannot resolve the model's directory '{1}': {2}", tensor.name(),
                directory, ec.message());
  if (!realDir.ends_with("/"))
    realDir += "/";
  if (!llvm::StringRef(realFile).starts_with(realDir))
    return fail("tensor '{0}': external data location '{1}' resolves to '{2}', outside the "
                "model's directory",
                tensor.name(), location, realFile.str());
  uint64_t fileSize = 0;
  if (!llvm::sys::fs::is_regular_file(realFile))
    return fail("tensor '{0}': external data '{1}' is not a regular file", tensor.name(),
                full.str());
  if (std::error_code ec = llvm::sys::fs::file_size(realFile, fileSize))
    return fail("tensor '{0}': cannot read external data file '{1}': {2}", tensor.name(),
                full.str(), ec.message());
  if (length < 0)
    length = static_cast<int64_t>(expectedBytes);
  if (static_cast<uint64_t>(length) != expectedBytes)
    return fail("tensor '{0}': external data holds {1} bytes, the shape needs {2}",
                tensor.name(), length, expectedBytes);
  if (static_cast<uint64_t>(offset) + static_cast<uint64_t>(length) > fileSize)
    return fail("tensor '{0}': external data [{1}, {2}) runs past the end of '{3}' ({4} bytes)",
                tensor.name(), offset, offset + length, full.str(), fileSize);
  // Read through the resolved path: a link swapped after the check changes nothing.
  return ExternalRange{realFile.str().str(), offset, length};
}

/// Reads the external data of `tensor` after validating it.
llvm::Expected<std::string> readExternal(const ::onnx::TensorProto &tensor,
                                         llvm::StringRef directory, size_t expectedBytes) {
  llvm::Expected<ExternalRange> range = locateExternal(tensor, directory, expectedBytes);
  if (!range)
    return range.takeError();
  std::ifstream in(range->path, std::ios::binary);
  std::string bytes(static_cast<size_t>(range->length), '\0');
  in.seekg(range->offset);
  if (!in.read(bytes.data(), range->length))
    return fail("tensor '{0}': cannot read external data from '{1}'", tensor.name(),
                range->path);
  return bytes;
}

/// Copies a typed repeated field into `out`, converting each element.
template <typename Out, typename Field>
void copyField(const Field &field, Out *out) {
  int64_t i = 0;
  for (auto v : field)
    out[i++] = static_cast<Out>(v);
}

} // namespace

llvm::Expected<HostTensor> readTensor(const ::onnx::TensorProto &tensor,
                                      llvm::StringRef directory) {
  llvm::Expected<DType> dtype = dtypeFromOnnx(tensor.data_type());
  if (!dtype)
    return fail("tensor '{0}': {1}", tensor.name(), llvm::toString(dtype.takeError()));
  std::vector<int64_t> shape;
  uint64_t count = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0)
      return fail("tensor '{0}': negative dimension {1}", tensor.name(), d);
    shape.push_back(d);
    if (d != 0 && count > (uint64_t(1) << 48) / static_cast<uint64_t>(d))
      return fail("tensor '{0}': the shape has too many elements", tensor.name());
    count *= static_cast<uint64_t>(d);
  }
  size_t elementBytes = ::rp::base::dtypeSize(*dtype);
  size_t bytes = count * elementBytes;

  // Locate the data and check its size before allocating anything.
  std::string external;
  llvm::StringRef raw;
  bool isExternal = tensor.data_location() == ::onnx::TensorProto::EXTERNAL;
  if (isExternal) {
    llvm::Expected<std::string> data = readExternal(tensor, directory, bytes);
    if (!data)
      return data.takeError();
    external = std::move(*data);
    raw = external;
  } else if (tensor.has_raw_data()) {
    raw = tensor.raw_data();
    if (raw.size() != bytes)
      return fail("tensor '{0}': raw_data holds {1} bytes, the shape {2} of {3} needs {4}",
                  tensor.name(), raw.size(), ::rp::base::formatShape(shape),
                  ::rp::base::dtypeName(*dtype), bytes);
  } else {
    uint64_t present = 0;
    switch (*dtype) {
    case DType::F32:
      present = tensor.float_data_size();
      break;
    case DType::F64:
      present = tensor.double_data_size();
      break;
    case DType::I64:
      present = tensor.int64_data_size();
      break;
    case DType::I32:
    case DType::I1:
    case DType::U8:
    case DType::F16:
    case DType::BF16:
      present = tensor.int32_data_size();
      break;
    }
    if (present != count)
      return fail("tensor '{0}': {1} values stored, the shape {2} needs {3}", tensor.name(),
                  present, ::rp::base::formatShape(shape), count);
  }

  HostTensor out(*dtype, shape);
  if (!raw.empty() || isExternal || tensor.has_raw_data()) {
    if (bytes)
      std::memcpy(out.raw(), raw.data(), bytes);
    if (*dtype == DType::I1) // normalise bool bytes to 0/1
      for (uint64_t i = 0; i < count; ++i)
        out.data<uint8_t>()[i] = out.data<uint8_t>()[i] != 0;
    return out;
  }
  switch (*dtype) {
  case DType::F32:
    copyField(tensor.float_data(), out.data<float>());
    break;
  case DType::F64:
    copyField(tensor.double_data(), out.data<double>());
    break;
  case DType::I64:
    copyField(tensor.int64_data(), out.data<int64_t>());
    break;
  case DType::I32:
    copyField(tensor.int32_data(), out.data<int32_t>());
    break;
  case DType::I1: {
    uint8_t *p = out.data<uint8_t>();
    for (int64_t i = 0; i < tensor.int32_data_size(); ++i)
      p[i] = tensor.int32_data(i) != 0;
    break;
  }
  case DType::U8: {
    uint8_t *p = out.data<uint8_t>();
    for (int64_t i = 0; i < tensor.int32_data_size(); ++i)
      p[i] = static_cast<uint8_t>(tensor.int32_data(i));
    break;
  }
  case DType::F16:
  case DType::BF16:
    copyField(tensor.int32_data(), out.data<uint16_t>());
    break;
  }
  return out;
}

llvm::Expected<std::optional<ExternalRange>>
externalDataRange(const ::onnx::TensorProto &tensor, llvm::StringRef directory) {
  if (tensor.data_location() != ::onnx::TensorProto::EXTERNAL)
    return std::nullopt;
  llvm::Expected<DType> dtype = dtypeFromOnnx(tensor.data_type());
  if (!dtype)
    return fail("tensor '{0}': {1}", tensor.name(), llvm::toString(dtype.takeError()));
  uint64_t count = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0 || (d != 0 && count > (uint64_t(1) << 48) / static_cast<uint64_t>(d)))
      return fail("tensor '{0}': invalid shape", tensor.name());
    count *= static_cast<uint64_t>(d);
  }
  llvm::Expected<ExternalRange> range =
      locateExternal(tensor, directory, count * ::rp::base::dtypeSize(*dtype));
  if (!range)
    return range.takeError();
  return std::optional<ExternalRange>(std::move(*range));
}

llvm::Error checkExternalData(const ::onnx::TensorProto &tensor, llvm::StringRef directory) {
  llvm::Expected<std::optional<ExternalRange>> range = externalDataRange(tensor, directory);
  return range ? llvm::Error::success() : range.takeError();
}

llvm::Expected<HostTensor> readTensorFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail("{0}: cannot read: {1}", path, buffer.getError().message());
  ::onnx::TensorProto tensor;
  if (!parseBinary(tensor, (*buffer)->getBuffer()))
    return fail("{0}: not a valid ONNX TensorProto", path);
  llvm::Expected<HostTensor> result = readTensor(tensor, llvm::sys::path::parent_path(path));
  if (!result)
    return fail("{0}: {1}", path, llvm::toString(result.takeError()));
  return result;
}

llvm::Error writeTensorFile(const HostTensor &tensor, llvm::StringRef name,
                            llvm::StringRef path) {
  ::onnx::TensorProto proto;
  proto.set_name(name.str());
  proto.set_data_type(onnxFromDType(tensor.dtype()));
  for (int64_t d : tensor.shape())
    proto.add_dims(d);
  proto.set_raw_data(tensor.raw(), tensor.byteSize());
  std::string bytes;
  if (!proto.SerializeToString(&bytes))
    return fail("{0}: cannot serialize tensor '{1}'", path, name);
  ::rp::base::Status status = ::rp::base::writeFileAtomic(path.str(), bytes.data(), bytes.size());
  if (!status.ok())
    return fail("{0}", status.message());
  return llvm::Error::success();
}

} // namespace mlir::rp::onnx
