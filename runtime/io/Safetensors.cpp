//===- Safetensors.cpp - Reading and writing safetensors files ------------===//
//
// Format: https://github.com/huggingface/safetensors (README "Format", safetensors/src/
// tensor.rs). The header is parsed with nlohmann-json without exceptions
// (allow_exceptions = false, then is_discarded()).
//
//===----------------------------------------------------------------------===//

#include "runtime/io/Safetensors.h"

#include "base/AtomicFile.h"
#include "base/HostTensor.h"
#include "runtime/io/JsonNumbers.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <set>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rp::runtime {
namespace {

using json = nlohmann::json;

struct DTypeEntry {
  SafetensorsDType dtype;
  const char *name;
  size_t size;
};

constexpr DTypeEntry kDTypes[] = {
    {SafetensorsDType::BOOL, "BOOL", 1},       {SafetensorsDType::U8, "U8", 1},
    {SafetensorsDType::I8, "I8", 1},           {SafetensorsDType::F8_E5M2, "F8_E5M2", 1},
    {SafetensorsDType::F8_E4M3, "F8_E4M3", 1}, {SafetensorsDType::I16, "I16", 2},
    {SafetensorsDType::U16, "U16", 2},         {SafetensorsDType::F16, "F16", 2},
    {SafetensorsDType::BF16, "BF16", 2},       {SafetensorsDType::I32, "I32", 4},
    {SafetensorsDType::U32, "U32", 4},         {SafetensorsDType::F32, "F32", 4},
    {SafetensorsDType::F64, "F64", 8},         {SafetensorsDType::I64, "I64", 8},
    {SafetensorsDType::U64, "U64", 8},
};

const DTypeEntry &entryOf(SafetensorsDType dtype) {
  for (const DTypeEntry &e : kDTypes)
    if (e.dtype == dtype)
      return e;
  return kDTypes[0]; // unreachable for valid enumerators
}

std::string knownDTypeNames() {
  std::string s;
  for (const DTypeEntry &e : kDTypes) {
    if (!s.empty())
      s += ", ";
    s += e.name;
  }
  return s;
}

/// product(shape) * elementSize, or nullopt on a negative dimension or an overflow of int64.
std::optional<uint64_t> checkedByteSize(const std::vector<int64_t> &shape, size_t elementSize) {
  uint64_t bytes = elementSize;
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (int64_t d : shape) {
    if (d < 0)
      return std::nullopt;
    if (d != 0 && bytes > kMax / static_cast<uint64_t>(d))
      return std::nullopt;
    bytes *= static_cast<uint64_t>(d);
  }
  return bytes;
}

std::string sysError() { return std::strerror(errno); }

/// Reads exactly `size` bytes at `offset`; false on an error or a short file.
bool preadAll(int fd, void *buf, size_t size, off_t offset) {
  char *p = static_cast<char *>(buf);
  while (size > 0) {
    ssize_t n = ::pread(fd, p, size, offset);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= static_cast<size_t>(n);
    offset += n;
  }
  return true;
}

/// Closes a file descriptor when it goes out of scope.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// One tensor entry of a header, validated against the data buffer size.
StatusOr<SafetensorsTensorView> parseTensorEntry(const std::string &where, const std::string &name,
                                                 const json &entry, uint64_t dataSize) {
  std::string what = where + ": tensor '" + name + "'";
  if (!entry.is_object())
    return invalidArgument(what + ": the header entry is not an object");
  auto dtypeIt = entry.find("dtype");
  auto shapeIt = entry.find("shape");
  auto offsetsIt = entry.find("data_offsets");
  if (dtypeIt == entry.end() || !dtypeIt->is_string())
    return invalidArgument(what + ": missing or non-string \"dtype\"");
  if (shapeIt == entry.end() || !shapeIt->is_array())
    return invalidArgument(what + ": missing or non-array \"shape\"");
  if (offsetsIt == entry.end() || !offsetsIt->is_array() || offsetsIt->size() != 2)
    return invalidArgument(what + ": \"data_offsets\" must be an array [begin, end]");

  SafetensorsTensorView t{name, SafetensorsDType::F32, {}, nullptr, 0, 0};
  StatusOr<SafetensorsDType> dtype = parseSafetensorsDType(dtypeIt->get<std::string>());
  if (!dtype.ok())
    return invalidArgument(what + ": " + dtype.status().message());
  t.dtype = *dtype;
  for (const json &d : *shapeIt) {
    std::optional<int64_t> dim = jsonNonNegativeInt(d);
    if (!dim)
      return invalidArgument(what + ": shape " + shapeIt->dump() +
                             " has a dimension that is not a non-negative integer: " + d.dump());
    t.shape.push_back(*dim);
  }
  std::optional<int64_t> begin = jsonNonNegativeInt((*offsetsIt)[0]);
  std::optional<int64_t> end = jsonNonNegativeInt((*offsetsIt)[1]);
  if (!begin || !end || *begin > *end)
    return invalidArgument(what + ": data_offsets " + offsetsIt->dump() +
                           " must be non-negative integers with begin <= end");
  std::optional<uint64_t> bytes = checkedByteSize(t.shape, safetensorsDTypeSize(t.dtype));
  if (!bytes)
    return invalidArgument(what + ": the byte size of shape " + formatShape(t.shape) + " " +
                           safetensorsDTypeName(t.dtype) + " overflows");
  uint64_t rangeBytes = static_cast<uint64_t>(*end - *begin);
  if (*bytes != rangeBytes)
    return invalidArgument(what + ": shape " + formatShape(t.shape) + " " +
                           safetensorsDTypeName(t.dtype) + " needs " + std::to_string(*bytes) +
                           " bytes, but data_offsets " + offsetsIt->dump() + " hold " +
                           std::to_string(rangeBytes));
  if (static_cast<uint64_t>(*end) > dataSize)
    return dataLoss(what + ": data_offsets " + offsetsIt->dump() +
                    " run past the end of the data buffer (" + std::to_string(dataSize) +
                    " bytes): the file is truncated or corrupt");
  t.offset = static_cast<uint64_t>(*begin);
  t.size = static_cast<size_t>(rangeBytes);
  return t;
}

} // namespace

const char *safetensorsDTypeName(SafetensorsDType dtype) { return entryOf(dtype).name; }

size_t safetensorsDTypeSize(SafetensorsDType dtype) { return entryOf(dtype).size; }

StatusOr<SafetensorsDType> parseSafetensorsDType(std::string_view name) {
  for (const DTypeEntry &e : kDTypes)
    if (name == e.name)
      return e.dtype;
  return invalidArgument("unknown safetensors dtype '" + std::string(name) + "': expected one of " +
                         knownDTypeNames());
}

std::optional<DType> toRuntimeDType(SafetensorsDType dtype) {
  switch (dtype) {
  case SafetensorsDType::F32:
    return DType::F32;
  case SafetensorsDType::F16:
    return DType::F16;
  case SafetensorsDType::BF16:
    return DType::BF16;
  case SafetensorsDType::F64:
    return DType::F64;
  case SafetensorsDType::I64:
    return DType::I64;
  case SafetensorsDType::I32:
    return DType::I32;
  case SafetensorsDType::BOOL:
    return DType::I1;
  case SafetensorsDType::U8:
    return DType::U8;
  default:
    return std::nullopt;
  }
}

SafetensorsDType fromRuntimeDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return SafetensorsDType::F32;
  case DType::F16:
    return SafetensorsDType::F16;
  case DType::BF16:
    return SafetensorsDType::BF16;
  case DType::F64:
    return SafetensorsDType::F64;
  case DType::I64:
    return SafetensorsDType::I64;
  case DType::I32:
    return SafetensorsDType::I32;
  case DType::I1:
    return SafetensorsDType::BOOL;
  case DType::U8:
    return SafetensorsDType::U8;
  }
  return SafetensorsDType::F32; // unreachable for valid enumerators
}

//===----------------------------------------------------------------------===//
// SafetensorsFile
//===----------------------------------------------------------------------===//

SafetensorsFile::SafetensorsFile(SafetensorsFile &&other) noexcept { *this = std::move(other); }

SafetensorsFile &SafetensorsFile::operator=(SafetensorsFile &&other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    tensors_ = std::move(other.tensors_);
    byName_ = std::move(other.byName_);
    metadata_ = std::move(other.metadata_);
    map_ = other.map_;
    mapSize_ = other.mapSize_;
    other.map_ = nullptr;
    other.mapSize_ = 0;
    other.tensors_.clear();
    other.byName_.clear();
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() { unmap(); }

void SafetensorsFile::unmap() {
  if (map_)
    ::munmap(map_, mapSize_);
  map_ = nullptr;
  mapSize_ = 0;
}

void SafetensorsFile::releasePages(const SafetensorsTensorView &t) const {
  if (!map_ || t.size == 0)
    return;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(t.data) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(t.data) + t.size) / page * page;
  if (begin < end)
    (void)::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
}

const SafetensorsTensorView *SafetensorsFile::find(std::string_view name) const {
  auto it = byName_.find(std::string(name));
  return it == byName_.end() ? nullptr : &tensors_[it->second];
}

StatusOr<SafetensorsFile> readSafetensors(const std::string &path) {
  const std::string where = "safetensors file '" + path + "'";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::string msg = "cannot open " + where + ": " + sysError();
    return errno == ENOENT ? notFound(msg) : unavailable(msg);
  }
  FdCloser closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return unavailable("cannot stat " + where + ": " + sysError());
  if (!S_ISREG(st.st_mode))
    return invalidArgument(where + " is not a regular file");
  const uint64_t fileSize = static_cast<uint64_t>(st.st_size);

  // The header length, then the header: both checked before anything is allocated.
  if (fileSize < 8)
    return dataLoss(where + " is " + std::to_string(fileSize) +
                    " bytes, shorter than the 8-byte header length: not a safetensors file, or "
                    "truncated");
  uint8_t lengthBytes[8];
  if (!preadAll(fd, lengthBytes, 8, 0))
    return unavailable("cannot read " + where + ": " + sysError());
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = (headerSize << 8) | lengthBytes[i];
  if (headerSize > kMaxSafetensorsHeaderBytes)
    return invalidArgument(where + ": header length " + std::to_string(headerSize) +
                           " exceeds the limit of " + std::to_string(kMaxSafetensorsHeaderBytes) +
                           " bytes: not a safetensors file, or corrupt");
  if (headerSize > fileSize - 8)
    return dataLoss(where + ": header length " + std::to_string(headerSize) +
                    " runs past the end of the file (" + std::to_string(fileSize) +
                    " bytes): not a safetensors file, or truncated");
  std::string headerText(static_cast<size_t>(headerSize), '\0');
  if (headerSize > 0 && !preadAll(fd, headerText.data(), headerText.size(), 8))
    return unavailable("cannot read the header of " + where + ": " + sysError());
  const uint64_t dataSize = fileSize - 8 - headerSize;

  // Parse; the callback records duplicate top-level keys (nlohmann keeps the last silently).
  std::set<std::string> keys;
  std::string duplicate;
  json::parser_callback_t onEvent = [&](int depth, json::parse_event_t event, json &parsed) {
    if (event == json::parse_event_t::key && depth == 1 && parsed.is_string()) {
      const std::string &key = parsed.get_ref<const std::string &>();
      if (!keys.insert(key).second && duplicate.empty())
        duplicate = key;
    }
    return true;
  };
  json header = json::parse(headerText, onEvent, /*allow_exceptions=*/false);
  if (header.is_discarded())
    return invalidArgument(where + ": the header is not valid JSON");
  if (!header.is_object())
    return invalidArgument(where + ": the header is not a JSON object");
  if (!duplicate.empty())
    return invalidArgument(where + ": the header names '" + duplicate + "' twice");

  SafetensorsFile file;
  file.path_ = path;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object())
        return invalidArgument(where + ": \"__metadata__\" is not an object");
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        if (!m.value().is_string())
          return invalidArgument(where + ": \"__metadata__\" entry '" + m.key() +
                                 "' is not a string");
        file.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    RP_ASSIGN_OR_RETURN(SafetensorsTensorView t,
                        parseTensorEntry(where, it.key(), it.value(), dataSize));
    file.tensors_.push_back(std::move(t));
  }

  // Data-buffer order; then no two non-empty ranges may overlap.
  std::sort(file.tensors_.begin(), file.tensors_.end(),
            [](const SafetensorsTensorView &a, const SafetensorsTensorView &b) {
              return a.offset != b.offset ? a.offset < b.offset : a.name < b.name;
            });
  const SafetensorsTensorView *last = nullptr; // the non-empty tensor ending last so far
  for (const SafetensorsTensorView &t : file.tensors_) {
    if (t.size == 0)
      continue;
    if (last && t.offset < last->offset + last->size)
      return invalidArgument(
          where + ": the data of tensor '" + t.name + "' [" + std::to_string(t.offset) + ", " +
          std::to_string(t.offset + t.size) + ") overlaps tensor '" + last->name + "' [" +
          std::to_string(last->offset) + ", " + std::to_string(last->offset + last->size) + ")");
    if (!last || t.offset + t.size > last->offset + last->size)
      last = &t;
  }

  // Map the file; the views point into the data buffer.
  void *map = ::mmap(nullptr, static_cast<size_t>(fileSize), PROT_READ, MAP_PRIVATE, fd, 0);
  if (map == MAP_FAILED)
    return unavailable("cannot map " + where + ": " + sysError());
  file.map_ = map;
  file.mapSize_ = static_cast<size_t>(fileSize);
  const uint8_t *data = static_cast<const uint8_t *>(map) + 8 + headerSize;
  for (size_t i = 0; i < file.tensors_.size(); ++i) {
    SafetensorsTensorView &t = file.tensors_[i];
    t.data = t.size == 0 ? nullptr : data + t.offset;
    file.byName_.emplace(t.name, i);
  }
  return file;
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

namespace {

/// The first 8 + N bytes of a safetensors file: the header's length and the header, which
/// lists `tensors` back to back in the given order. `needData`: a tensor with bytes must have
/// data. Errors: writeSafetensors'.
StatusOr<std::string> safetensorsPrefix(const std::string &where,
                                        const std::vector<SafetensorsTensor> &tensors,
                                        const std::map<std::string, std::string> &metadata,
                                        bool needData) {
  auto isUtf8 = [](const std::string &s) {
    try {
      (void)json(s).dump();
      return true;
    } catch (const json::exception &) {
      return false;
    }
  };

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto &[key, value] : metadata) {
      if (!isUtf8(key) || !isUtf8(value))
        return invalidArgument("writing " + where + ": metadata entry is not valid UTF-8");
      meta[key] = value;
    }
    header["__metadata__"] = std::move(meta);
  }
  std::set<std::string> names;
  uint64_t dataSize = 0;
  for (const SafetensorsTensor &t : tensors) {
    std::string what = "writing " + where + ": tensor '" + t.name + "'";
    if (t.name.empty() || t.name == "__metadata__" || !isUtf8(t.name))
      return invalidArgument(what + ": the name must be non-empty valid UTF-8 other than "
                                    "\"__metadata__\"");
    if (!names.insert(t.name).second)
      return invalidArgument(what + " is given twice");
    std::optional<uint64_t> bytes = checkedByteSize(t.shape, safetensorsDTypeSize(t.dtype));
    if (!bytes)
      return invalidArgument(what + ": shape " + formatShape(t.shape) +
                             " has a negative dimension or its byte size overflows");
    if (*bytes != t.size)
      return invalidArgument(what + ": shape " + formatShape(t.shape) + " " +
                             safetensorsDTypeName(t.dtype) + " needs " + std::to_string(*bytes) +
                             " bytes, but " + std::to_string(t.size) + " were given");
    if (needData && t.size > 0 && !t.data)
      return invalidArgument(what + ": null data for " + std::to_string(t.size) + " bytes");
    if (dataSize > std::numeric_limits<uint64_t>::max() / 2 - t.size)
      return invalidArgument("writing " + where + ": the data buffer size overflows");
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["dtype"] = safetensorsDTypeName(t.dtype);
    entry["shape"] = t.shape;
    entry["data_offsets"] = {dataSize, dataSize + t.size};
    header[t.name] = std::move(entry);
    dataSize += t.size;
  }

  std::string headerText = header.dump();
  headerText.append((8 - headerText.size() % 8) % 8, ' ');
  const uint64_t headerSize = headerText.size();
  std::string bytes;
  for (int i = 0; i < 8; ++i)
    bytes.push_back(static_cast<char>((headerSize >> (8 * i)) & 0xff));
  return bytes + headerText;
}

} // namespace

namespace {

/// writeSafetensorsStreamed; `needData`: the tensors' buffers must be given (safetensorsPrefix).
Status writeSafetensorsFilled(const std::string &path,
                              const std::vector<SafetensorsTensor> &tensors,
                              const std::map<std::string, std::string> &metadata,
                              const SafetensorsFill &fill, uint64_t *checksum, bool needData) {
  const std::string where = "safetensors file '" + path + "'";
  RP_ASSIGN_OR_RETURN(std::string prefix, safetensorsPrefix(where, tensors, metadata, needData));
  RP_ASSIGN_OR_RETURN(AtomicFileWriter file, AtomicFileWriter::open(path));
  RP_RETURN_IF_ERROR(file.append(prefix.data(), prefix.size()));
  for (size_t i = 0; i < tensors.size(); ++i) {
    size_t given = 0;
    RP_RETURN_IF_ERROR(fill(i, [&](const void *data, size_t size) -> Status {
      if (given + size > tensors[i].size)
        return invalidArgument("writing " + where + ": tensor '" + tensors[i].name +
                               "': more than its " + std::to_string(tensors[i].size) +
                               " bytes were given");
      given += size;
      return file.append(data, size);
    }));
    if (given != tensors[i].size)
      return invalidArgument("writing " + where + ": tensor '" + tensors[i].name + "': " +
                             std::to_string(given) + " of its " +
                             std::to_string(tensors[i].size) + " bytes were given");
  }
  RP_RETURN_IF_ERROR(file.commit());
  if (checksum)
    *checksum = file.checksum();
  return okStatus();
}

} // namespace

Status writeSafetensors(const std::string &path, const std::vector<SafetensorsTensor> &tensors,
                        const std::map<std::string, std::string> &metadata, uint64_t *checksum) {
  return writeSafetensorsFilled(
      path, tensors, metadata,
      [&](size_t i, const std::function<Status(const void *, size_t)> &append) {
        return tensors[i].size > 0 ? append(tensors[i].data, tensors[i].size) : okStatus();
      },
      checksum, /*needData=*/true);
}

Status writeSafetensorsStreamed(const std::string &path,
                                const std::vector<SafetensorsTensor> &tensors,
                                const std::map<std::string, std::string> &metadata,
                                const SafetensorsFill &fill, uint64_t *checksum) {
  return writeSafetensorsFilled(path, tensors, metadata, fill, checksum, /*needData=*/false);
}

} // namespace rp::runtime
