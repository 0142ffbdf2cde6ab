//===- WeightSource.cpp - Initial weights: one file or a sharded checkpoint -===//
//
// The index format is Hugging Face's (transformers' `load_sharded_checkpoint`,
// huggingface_hub's `split_torch_state_dict_into_shards`): a JSON object whose "weight_map"
// maps every tensor name to the file name of its shard, beside the index. The index is parsed
// with nlohmann-json without exceptions (allow_exceptions = false, then is_discarded()).
//
//===----------------------------------------------------------------------===//

#include "runtime/io/WeightSource.h"

#include "base/Float16.h"
#include "base/HostTensor.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sys/stat.h>

namespace rp::runtime {
namespace {

using json = nlohmann::json;

/// The file names Hugging Face gives a checkpoint in a directory (transformers'
/// SAFE_WEIGHTS_NAME and SAFE_WEIGHTS_INDEX_NAME).
constexpr const char *kSingleFile = "model.safetensors";
constexpr const char *kIndexFile = "model.safetensors.index.json";

enum class PathKind { Missing, File, Directory, Other };

PathKind kindOf(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return PathKind::Missing;
  if (S_ISDIR(st.st_mode))
    return PathKind::Directory;
  return S_ISREG(st.st_mode) ? PathKind::File : PathKind::Other;
}

bool endsWith(const std::string &s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix.data(), suffix.size()) == 0;
}

/// `dir` joined with `name` ("" for the current directory).
std::string joinPath(const std::string &dir, const std::string &name) {
  if (dir.empty())
    return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

/// The directory part of `path` with its trailing '/', or "" for a bare file name.
std::string directoryOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

/// The index's "weight_map" as (tensor, shard file name) pairs, in the index's order.
StatusOr<std::vector<std::pair<std::string, std::string>>>
readWeightMap(const std::string &indexPath) {
  const std::string where = "weights index '" + indexPath + "'";
  std::ifstream in(indexPath, std::ios::binary);
  if (!in) {
    std::string msg = "cannot open " + where + ": " + std::strerror(errno);
    return errno == ENOENT ? notFound(msg) : unavailable(msg);
  }
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0 || static_cast<uint64_t>(size) > kMaxSafetensorsHeaderBytes)
    return invalidArgument(where + " is larger than " + std::to_string(kMaxSafetensorsHeaderBytes) +
                           " bytes: not a checkpoint index");
  in.seekg(0);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  json index = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (index.is_discarded())
    return invalidArgument(where + " is not valid JSON");
  auto map = index.is_object() ? index.find("weight_map") : index.end();
  if (map == index.end() || !map->is_object())
    return invalidArgument(where + " has no \"weight_map\" object (a Hugging Face index maps "
                                   "each tensor name to the file name of its shard)");
  if (map->empty())
    return invalidArgument(where + ": \"weight_map\" is empty");
  std::vector<std::pair<std::string, std::string>> entries;
  for (auto it = map->begin(); it != map->end(); ++it) {
    const json &shard = it.value();
    if (!shard.is_string())
      return invalidArgument(where + ": \"weight_map\" entry '" + it.key() + "' is " +
                             shard.dump() + ", not the file name of a shard");
    const std::string &name = shard.get_ref<const std::string &>();
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
      return invalidArgument(where + ": \"weight_map\" entry '" + it.key() + "' names shard '" +
                             name + "': a shard must be a file name beside the index");
    entries.emplace_back(it.key(), name);
  }
  return entries;
}

} // namespace

StatusOr<WeightSource> WeightSource::open(const std::string &path) {
  WeightSource source;
  source.path_ = path;
  std::string file = path;
  PathKind kind = kindOf(path);
  if (kind == PathKind::Directory) {
    if (kindOf(joinPath(path, kSingleFile)) == PathKind::File) {
      file = joinPath(path, kSingleFile);
    } else if (kindOf(joinPath(path, kIndexFile)) == PathKind::File) {
      file = joinPath(path, kIndexFile);
    } else {
      return notFound("weights directory '" + path + "' holds neither " + kSingleFile + " nor " +
                      kIndexFile + " (a Hugging Face checkpoint)");
    }
  }

  if (!endsWith(file, ".json")) {
    // One safetensors file (readSafetensors reports a missing or unreadable one).
    RP_ASSIGN_OR_RETURN(SafetensorsFile single, readSafetensors(file));
    source.shards_.push_back(file);
    for (const SafetensorsTensorView &t : single.tensors()) {
      source.byName_.emplace(t.name, source.tensors_.size());
      source.tensors_.push_back({t.name, t.dtype, t.shape, 0});
    }
    return source;
  }

  // A sharded checkpoint: the index, then every shard's header against it.
  source.indexPath_ = file;
  RP_ASSIGN_OR_RETURN(auto weightMap, readWeightMap(file));
  const std::string where = "weights index '" + file + "'";
  std::map<std::string, std::map<std::string, bool>> byShard; // shard -> tensor -> seen
  for (const auto &[tensor, shard] : weightMap)
    byShard[shard].emplace(tensor, false);
  std::vector<std::map<std::string, bool>> shardTensors;
  for (auto &[shard, tensors] : byShard) {
    source.shards_.push_back(directoryOf(file) + shard);
    shardTensors.push_back(std::move(tensors));
  }
  for (size_t s = 0; s < source.shards_.size(); ++s) {
    const std::string &shardPath = source.shards_[s];
    if (kindOf(shardPath) == PathKind::Missing)
      return notFound(where + " names shard '" + shardPath + "' (for tensor '" +
                      shardTensors[s].begin()->first + "'), which does not exist");
    RP_ASSIGN_OR_RETURN(SafetensorsFile shard, readSafetensors(shardPath));
    for (const SafetensorsTensorView &t : shard.tensors()) {
      auto mapped = shardTensors[s].find(t.name);
      if (mapped == shardTensors[s].end())
        return invalidArgument(where + ": shard '" + shardPath + "' holds tensor '" + t.name +
                               "', which the index does not map to that shard");
      mapped->second = true;
      source.byName_.emplace(t.name, source.tensors_.size());
      source.tensors_.push_back({t.name, t.dtype, t.shape, s});
    }
    for (const auto &[tensor, seen] : shardTensors[s])
      if (!seen)
        return invalidArgument(where + " maps tensor '" + tensor + "' to shard '" + shardPath +
                               "', which does not hold it");
  }
  return source;
}

const WeightEntry *WeightSource::find(std::string_view name) const {
  auto it = byName_.find(std::string(name));
  return it == byName_.end() ? nullptr : &tensors_[it->second];
}

StatusOr<WeightSource> WeightSource::fromExternal(std::vector<ExternalTensor> tensors) {
  WeightSource source;
  source.external_ = true;
  std::map<std::string, uint64_t> fileSizes; // sorted: the shard order
  for (const ExternalTensor &t : tensors) {
    const std::string where = "external weights: tensor '" + t.name + "' in '" + t.file + "'";
    if (fileSizes.count(t.file))
      continue;
    struct stat st;
    if (::stat(t.file.c_str(), &st) != 0)
      return notFound(where + ": cannot open the file: " + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
      return invalidArgument(where + ": not a regular file");
    fileSizes[t.file] = static_cast<uint64_t>(st.st_size);
  }
  std::map<std::string, size_t> shardOf;
  for (const auto &[file, size] : fileSizes) {
    (void)size;
    shardOf[file] = source.shards_.size();
    source.shards_.push_back(file);
  }
  std::sort(tensors.begin(), tensors.end(), [&](const ExternalTensor &a, const ExternalTensor &b) {
    return std::make_pair(shardOf[a.file], a.offset) < std::make_pair(shardOf[b.file], b.offset);
  });
  for (const ExternalTensor &t : tensors) {
    const std::string where = "external weights: tensor '" + t.name + "' in '" + t.file + "'";
    uint64_t elements = 1;
    for (int64_t d : t.shape)
      elements *= d < 0 ? 0 : static_cast<uint64_t>(d);
    const uint64_t want = elements * safetensorsDTypeSize(t.dtype);
    if (t.offset < 0 || t.bytes < 0 || static_cast<uint64_t>(t.bytes) != want)
      return invalidArgument(where + ": " + std::to_string(t.bytes) + " bytes at offset " +
                             std::to_string(t.offset) + ", but " +
                             safetensorsDTypeName(t.dtype) + formatShape(t.shape) + " needs " +
                             std::to_string(want));
    const uint64_t size = fileSizes[t.file];
    if (static_cast<uint64_t>(t.offset) + want > size)
      return dataLoss(where + ": bytes [" + std::to_string(t.offset) + ", " +
                      std::to_string(t.offset + t.bytes) + ") run past the end of the file (" +
                      std::to_string(size) + " bytes); the file changed since the plan was "
                      "compiled");
    if (!source.byName_.emplace(t.name, source.tensors_.size()).second)
      return invalidArgument(where + ": a second range for the same tensor");
    source.tensors_.push_back({t.name, t.dtype, t.shape, shardOf[t.file]});
    source.ranges_.push_back({t.offset, t.bytes});
  }
  source.path_ = source.shards_.empty() ? std::string() : source.shards_.front();
  return source;
}

Status WeightSource::readExternal(
    const std::function<Status(const SafetensorsTensorView &)> &fn) const {
  // tensors_ is in file order (by shard, then offset): one pass, each file opened once.
  std::vector<uint8_t> buffer;
  std::ifstream in;
  size_t open = shards_.size();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const WeightEntry &e = tensors_[i];
    const std::string &file = shards_[e.shard];
    if (e.shard != open) {
      in = std::ifstream(file, std::ios::binary);
      if (!in)
        return notFound("external weights: cannot open '" + file + "': " + std::strerror(errno));
      open = e.shard;
    }
    const Range &r = ranges_[i];
    buffer.resize(static_cast<size_t>(r.bytes));
    in.seekg(r.offset);
    if (r.bytes > 0 && !in.read(reinterpret_cast<char *>(buffer.data()), r.bytes))
      return dataLoss("external weights: tensor '" + e.name + "' in '" + file +
                      "': cannot read bytes [" + std::to_string(r.offset) + ", " +
                      std::to_string(r.offset + r.bytes) +
                      ") (the file changed since the plan was compiled?)");
    const SafetensorsTensorView view{e.name, e.dtype, e.shape,
                                     r.bytes > 0 ? buffer.data() : nullptr,
                                     static_cast<size_t>(r.bytes), static_cast<uint64_t>(r.offset)};
    RP_RETURN_IF_ERROR(fn(view));
  }
  return okStatus();
}

std::string WeightSource::describe() const {
  if (external())
    return "external weights in " + (shards_.empty() ? std::string("no file") : shards_.front()) +
           (shards_.size() > 1 ? " and " + std::to_string(shards_.size() - 1) + " more files"
                               : std::string());
  if (!indexPath_.empty())
    return "weights index " + indexPath_;
  return "weights file " + (shards_.empty() ? path_ : shards_.front());
}

Status
WeightSource::readTensors(const std::function<Status(const SafetensorsTensorView &)> &fn) const {
  if (external())
    return readExternal(fn);
  size_t next = 0;
  for (size_t s = 0; s < shards_.size(); ++s) {
    RP_ASSIGN_OR_RETURN(SafetensorsFile shard, readSafetensors(shards_[s]));
    for (; next < tensors_.size() && tensors_[next].shard == s; ++next) {
      const WeightEntry &e = tensors_[next];
      const SafetensorsTensorView *t = shard.find(e.name);
      if (!t || t->dtype != e.dtype || t->shape != e.shape)
        return dataLoss("weights file " + shards_[s] + ": tensor '" + e.name +
                        "' changed while the weights were read (was " +
                        safetensorsDTypeName(e.dtype) + formatShape(e.shape) + ")");
      Status status = fn(*t);
      shard.releasePages(*t);
      RP_RETURN_IF_ERROR(status);
    }
  }
  return okStatus();
}

bool isFloat32Convertible(SafetensorsDType dtype) {
  return dtype == SafetensorsDType::F32 || dtype == SafetensorsDType::F16 ||
         dtype == SafetensorsDType::BF16;
}

Status convertToFloat32(const SafetensorsTensorView &t, float *out) {
  const size_t n = t.size / safetensorsDTypeSize(t.dtype);
  switch (t.dtype) {
  case SafetensorsDType::F32:
    if (n)
      std::memcpy(out, t.data, t.size);
    return okStatus();
  case SafetensorsDType::F16:
  case SafetensorsDType::BF16: {
    const bool half = t.dtype == SafetensorsDType::F16;
    for (size_t i = 0; i < n; ++i) {
      uint16_t bits;
      std::memcpy(&bits, t.data + 2 * i, 2);
      out[i] = half ? halfToFloat(bits) : bf16ToFloat(bits);
    }
    return okStatus();
  }
  default:
    return invalidArgument("tensor '" + t.name + "' has dtype " + safetensorsDTypeName(t.dtype) +
                           ", which does not convert to f32 exactly (F32, F16 or BF16)");
  }
}

} // namespace rp::runtime
