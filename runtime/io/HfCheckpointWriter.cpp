//===- HfCheckpointWriter.cpp - Checkpoints in the Hugging Face layout ----===//

#include "runtime/io/HfCheckpointWriter.h"

#include "base/AtomicFile.h"
#include "base/Float16.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace rp::runtime {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

StatusOr<HfExportDType> parseHfExportDType(std::string_view text) {
  if (text == "f32" || text == "fp32" || text == "float32")
    return HfExportDType::F32;
  if (text == "bf16" || text == "bfloat16")
    return HfExportDType::BF16;
  if (text == "f16" || text == "fp16" || text == "float16")
    return HfExportDType::F16;
  return invalidArgument("unknown export dtype '" + std::string(text) +
                         "' (expected f32, bf16 or f16)");
}

SafetensorsDType safetensorsDTypeOf(HfExportDType dtype) {
  switch (dtype) {
  case HfExportDType::BF16:
    return SafetensorsDType::BF16;
  case HfExportDType::F16:
    return SafetensorsDType::F16;
  case HfExportDType::F32:
    break;
  }
  return SafetensorsDType::F32;
}

StatusOr<uint64_t> parseByteSize(std::string_view text) {
  const std::string s(text);
  size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits])))
    ++digits;
  const std::string unit = s.substr(digits);
  static const std::pair<const char *, uint64_t> kUnits[] = {
      {"", 1},           {"B", 1},          {"KB", 1000ull},    {"MB", 1000'000ull},
      {"GB", 1000'000'000ull}, {"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30}};
  const auto bad = [&](const std::string &why) {
    return invalidArgument("bad size '" + s + "': " + why +
                           " (a byte count, or a number with KB, MB, GB, KiB, MiB or GiB)");
  };
  if (digits == 0 || digits > 18)
    return bad(digits == 0 ? "no number" : "too large");
  for (const auto &[name, scale] : kUnits) {
    if (unit != name)
      continue;
    const uint64_t n = std::strtoull(s.substr(0, digits).c_str(), nullptr, 10);
    if (n == 0)
      return bad("must be positive");
    if (n > (uint64_t(1) << 62) / scale)
      return bad("too large");
    return n * scale;
  }
  return bad("unknown unit '" + unit + "'");
}

namespace {

size_t elementsOf(const std::vector<int64_t> &shape) {
  size_t n = 1;
  for (int64_t d : shape)
    n *= static_cast<size_t>(d);
  return n;
}

/// `n` fp32 values as little-endian bytes of `dtype` (round to nearest even).
std::vector<uint8_t> convert(const float *data, size_t n, HfExportDType dtype) {
  const size_t width = safetensorsDTypeSize(safetensorsDTypeOf(dtype));
  std::vector<uint8_t> out(n * width);
  if (dtype == HfExportDType::F32) {
    if (n)
      std::memcpy(out.data(), data, n * 4);
    return out;
  }
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = dtype == HfExportDType::BF16 ? floatToBf16(data[i]) : floatToHalf(data[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

/// A temporary directory beside the target, removed on destruction unless committed.
class StagingDir {
public:
  static StatusOr<StagingDir> create(const std::string &dir) {
    fs::path target = fs::path(dir).lexically_normal();
    if (target.filename().empty())
      target = target.parent_path();
    fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
    std::string templ = (parent / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
    if (!::mkdtemp(templ.data()))
      return unavailable("cannot create a temporary directory beside " + dir + ": " +
                         std::strerror(errno));
    // mkdtemp makes the directory 0700; give it the mode mkdir would (0777 less the umask).
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::chmod(templ.c_str(), 0777 & ~mask);
    StagingDir s;
    s.path_ = templ;
    s.target_ = target.string();
    return s;
  }
  StagingDir() = default;
  StagingDir(StagingDir &&o) noexcept : path_(std::move(o.path_)), target_(std::move(o.target_)) {
    o.path_.clear();
  }
  StagingDir &operator=(StagingDir &&) = delete;
  ~StagingDir() {
    if (!path_.empty()) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  std::string file(const std::string &name) const { return (fs::path(path_) / name).string(); }

  /// Renames the staging directory to the target; an existing target (empty, or any with
  /// `force`) is moved aside first and removed once the new one is in place.
  Status commit(bool force) {
    std::error_code ec;
    std::string aside;
    if (fs::exists(target_, ec)) {
      if (!force && !fs::is_empty(target_, ec))
        return invalidArgument("cannot export to " + target_ + ": it exists and is not empty");
      aside = path_ + ".old";
      fs::rename(target_, aside, ec);
      if (ec)
        return unavailable("cannot move " + target_ + " aside: " + ec.message());
    }
    fs::rename(path_, target_, ec);
    if (ec) {
      if (!aside.empty())
        fs::rename(aside, target_, ec);
      return unavailable("cannot rename " + path_ + " to " + target_ + ": " + ec.message());
    }
    path_.clear();
    if (!aside.empty())
      fs::remove_all(aside, ec);
    return okStatus();
  }

private:
  std::string path_, target_;
};

/// Reads `path` whole. Errors: InvalidArgument naming the file.
StatusOr<std::string> readWholeFile(const std::string &path, const std::string &flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return invalidArgument(flag + " " + path + ": cannot open it");
  std::ostringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof())
    return invalidArgument(flag + " " + path + ": cannot read it");
  return text.str();
}

Status writeText(const std::string &path, const std::string &text) {
  return writeFileAtomic(path, text.data(), text.size());
}

/// The distinct tensors of `tensors` after `aliases`, in first-seen order; copies of a name
/// must agree bit for bit.
StatusOr<std::vector<HfTensor>> distinctTensors(const std::vector<HfTensor> &tensors,
                                                const std::map<std::string, std::string> &aliases) {
  std::vector<HfTensor> out;
  std::map<std::string, size_t> seen;
  for (const HfTensor &t : tensors) {
    for (int64_t d : t.shape)
      if (d < 0)
        return invalidArgument("tensor '" + t.name + "' has a negative dimension");
    auto alias = aliases.find(t.name);
    const std::string name = alias == aliases.end() ? t.name : alias->second;
    if (name.empty())
      continue;
    auto [it, inserted] = seen.emplace(name, out.size());
    if (inserted) {
      out.push_back(HfTensor{name, t.shape, t.data});
      continue;
    }
    const HfTensor &first = out[it->second];
    if (first.shape != t.shape ||
        (elementsOf(t.shape) &&
         std::memcmp(first.data, t.data, elementsOf(t.shape) * sizeof(float)) != 0))
      return invalidArgument("two tensors are exported as '" + name +
                             "' but hold different values (a shared param must be equal in "
                             "every layer that reads it)");
  }
  if (out.empty())
    return invalidArgument("nothing to export: no tensors");
  return out;
}

/// Greedy shards in order: indices into `tensors` per shard.
std::vector<std::vector<size_t>> shardTensors(const std::vector<HfTensor> &tensors, size_t width,
                                              uint64_t maxBytes) {
  std::vector<std::vector<size_t>> shards(1);
  uint64_t used = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const uint64_t bytes = elementsOf(tensors[i].shape) * width;
    if (!shards.back().empty() && used + bytes > maxBytes) {
      shards.emplace_back();
      used = 0;
    }
    shards.back().push_back(i);
    used += bytes;
  }
  return shards;
}

std::string shardName(size_t k, size_t n) {
  char name[64];
  std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", k + 1, n);
  return name;
}

const std::map<std::string, std::string> kPtMetadata = {{"format", "pt"}};

/// Writes `tensors` (indices `which`) converted to `dtype` as safetensors file `path`.
Status writeConverted(const std::string &path, const std::vector<HfTensor> &tensors,
                      const std::vector<size_t> &which, HfExportDType dtype) {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<SafetensorsTensor> out;
  bytes.reserve(which.size());
  for (size_t i : which) {
    const HfTensor &t = tensors[i];
    bytes.push_back(convert(t.data, elementsOf(t.shape), dtype));
    out.push_back(SafetensorsTensor{t.name, safetensorsDTypeOf(dtype), t.shape,
                                    bytes.back().data(), bytes.back().size()});
  }
  return writeSafetensors(path, out, kPtMetadata);
}

} // namespace

Status checkExportDir(const std::string &dir, bool force, const std::string &flag) {
  const auto refuse = [&](const std::string &why) {
    return invalidArgument("cannot export to " + dir + " (" + flag + "): " + why);
  };
  if (dir.empty())
    return refuse("empty path");
  std::error_code ec;
  fs::path target = fs::path(dir).lexically_normal();
  if (target.filename().empty())
    target = target.parent_path();
  fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  if (!fs::is_directory(parent, ec))
    return refuse("directory " + parent.string() + " does not exist");
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    return refuse("directory " + parent.string() + " is not writable");
  if (fs::exists(target, ec)) {
    if (!fs::is_directory(target, ec))
      return refuse("it is a file, not a directory");
    if (!force && !fs::is_empty(target, ec))
      return refuse("it exists and is not empty (--export-force replaces it)");
  }
  return okStatus();
}

Status checkJsonObjectFile(const std::string &path, const std::string &flag) {
  RP_ASSIGN_OR_RETURN(std::string text, readWholeFile(path, flag));
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded())
    return invalidArgument(flag + " " + path + ": not valid JSON");
  if (!parsed.is_object())
    return invalidArgument(flag + " " + path + ": not a JSON object");
  return okStatus();
}

StatusOr<HfWriteResult> writeHfCheckpoint(const std::string &dir,
                                          const std::vector<HfTensor> &tensors,
                                          const HfWriteOptions &options) {
  RP_RETURN_IF_ERROR(checkExportDir(dir, options.force, "export"));
  if (!options.configPath.empty())
    RP_RETURN_IF_ERROR(checkJsonObjectFile(options.configPath, "config"));
  RP_ASSIGN_OR_RETURN(std::vector<HfTensor> unique, distinctTensors(tensors, options.aliases));
  const size_t width = safetensorsDTypeSize(safetensorsDTypeOf(options.dtype));
  const std::vector<std::vector<size_t>> shards =
      shardTensors(unique, width, options.maxShardBytes);

  RP_ASSIGN_OR_RETURN(StagingDir staging, StagingDir::create(dir));
  HfWriteResult result;
  result.tensors = unique.size();
  json weightMap = json::object();
  uint64_t elements = 0;
  for (size_t k = 0; k < shards.size(); ++k) {
    const std::string name = shards.size() == 1 ? "model.safetensors" : shardName(k, shards.size());
    RP_RETURN_IF_ERROR(writeConverted(staging.file(name), unique, shards[k], options.dtype));
    result.files.push_back(name);
    for (size_t i : shards[k]) {
      weightMap[unique[i].name] = name;
      elements += elementsOf(unique[i].shape);
    }
  }
  result.bytes = elements * width;
  if (shards.size() > 1) {
    json index = {{"metadata", {{"total_size", result.bytes}, {"total_parameters", elements}}},
                  {"weight_map", weightMap}};
    RP_RETURN_IF_ERROR(writeText(staging.file("model.safetensors.index.json"), index.dump(2) + "\n"));
  }
  if (!options.configPath.empty()) {
    RP_ASSIGN_OR_RETURN(std::string config, readWholeFile(options.configPath, "config"));
    RP_RETURN_IF_ERROR(writeText(staging.file("config.json"), config));
  }
  RP_RETURN_IF_ERROR(staging.commit(options.force));
  return result;
}

namespace {

/// A [rows, cols] row-major matrix transposed.
std::vector<float> transposed(const float *m, int64_t rows, int64_t cols) {
  std::vector<float> t(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      t[static_cast<size_t>(c * rows + r)] = m[r * cols + c];
  return t;
}

std::string lastComponent(const std::string &module) {
  const size_t dot = module.rfind('.');
  return dot == std::string::npos ? module : module.substr(dot + 1);
}

/// adapter_config.json as peft 0.21's LoraConfig.save_pretrained writes it (the fields a
/// plain LoRA uses; peft fills the others with their defaults on load).
json peftConfig(const std::vector<LoraAdapter> &adapters, const PeftWriteOptions &options) {
  std::set<std::string> targets, parameters;
  for (const LoraAdapter &a : adapters)
    if (a.experts > 0)
      parameters.insert(lastComponent(a.module) + "." + a.parameter);
    else
      targets.insert(lastComponent(a.module));
  json config = json::object();
  config["base_model_name_or_path"] =
      options.baseModel.empty() ? json(nullptr) : json(options.baseModel);
  config["bias"] = "none";
  config["fan_in_fan_out"] = false;
  config["inference_mode"] = true;
  config["init_lora_weights"] = true;
  if (options.alpha == std::floor(options.alpha) && options.alpha < 1e15)
    config["lora_alpha"] = static_cast<int64_t>(options.alpha); // as peft writes an int alpha
  else
    config["lora_alpha"] = options.alpha;
  config["lora_dropout"] = 0.0;
  config["modules_to_save"] = nullptr;
  config["peft_type"] = "LORA";
  config["r"] = adapters.front().rank;
  config["target_modules"] = json(std::vector<std::string>(targets.begin(), targets.end()));
  if (!parameters.empty())
    config["target_parameters"] =
        json(std::vector<std::string>(parameters.begin(), parameters.end()));
  config["task_type"] = "CAUSAL_LM";
  config["use_dora"] = false;
  config["use_rslora"] = false;
  return config;
}

} // namespace

StatusOr<HfWriteResult> writePeftAdapter(const std::string &dir,
                                         const std::vector<LoraAdapter> &adapters,
                                         const PeftWriteOptions &options) {
  RP_RETURN_IF_ERROR(checkExportDir(dir, options.force, "export"));
  if (adapters.empty())
    return invalidArgument("nothing to export: no LoRA adapters");
  if (!(std::isfinite(options.alpha) && options.alpha > 0))
    return invalidArgument("LoRA alpha must be a positive finite number");
  const int64_t rank = adapters.front().rank;
  for (const LoraAdapter &a : adapters)
    if (a.rank <= 0 || a.rank != rank)
      return invalidArgument("LoRA adapter of '" + a.module + "' has rank " +
                             std::to_string(a.rank) + "; PEFT's layout needs one positive "
                             "rank for all (the first has " + std::to_string(rank) + ")");
  // PEFT's nn.Linear layout: lora_A.weight [r, in] = A^T, lora_B.weight [out, r] = B^T.
  std::vector<std::vector<float>> values;
  std::vector<HfTensor> tensors;
  values.reserve(2 * adapters.size());
  std::map<std::string, int> nested; // expert adapters still to come per module
  for (const LoraAdapter &a : adapters)
    if (a.experts > 0)
      ++nested[a.module];
  for (const LoraAdapter &a : adapters) {
    std::string key = "base_model.model." + a.module;
    if (a.experts > 0) {
      for (int k = --nested[a.module]; k > 0; --k)
        key += ".base_layer";
      const int64_t e = a.experts, r = a.rank;
      values.emplace_back(a.a, a.a + e * r * a.in); // [E, r, in] is [E r, in] row for row
      tensors.push_back(HfTensor{key + ".lora_A.weight", {e * r, a.in}, values.back().data()});
      std::vector<float> b(static_cast<size_t>(a.out * r * e));
      for (int64_t x = 0; x < e; ++x)
        for (int64_t o = 0; o < a.out; ++o)
          for (int64_t j = 0; j < r; ++j)
            b[(o * r + j) * e + x] = a.b[(x * a.out + o) * r + j];
      values.push_back(std::move(b));
      tensors.push_back(HfTensor{key + ".lora_B.weight", {a.out, r * e}, values.back().data()});
      continue;
    }
    values.push_back(transposed(a.a, a.in, a.rank));
    tensors.push_back(HfTensor{key + ".lora_A.weight", {a.rank, a.in}, values.back().data()});
    values.push_back(transposed(a.b, a.rank, a.out));
    tensors.push_back(HfTensor{key + ".lora_B.weight", {a.out, a.rank}, values.back().data()});
  }
  RP_ASSIGN_OR_RETURN(std::vector<HfTensor> unique, distinctTensors(tensors, {}));
  std::vector<size_t> all(unique.size());
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = i;

  RP_ASSIGN_OR_RETURN(StagingDir staging, StagingDir::create(dir));
  RP_RETURN_IF_ERROR(
      writeConverted(staging.file("adapter_model.safetensors"), unique, all, options.dtype));
  RP_RETURN_IF_ERROR(
      writeText(staging.file("adapter_config.json"), peftConfig(adapters, options).dump(2) + "\n"));
  RP_RETURN_IF_ERROR(staging.commit(options.force));
  HfWriteResult result;
  result.files = {"adapter_model.safetensors"};
  result.tensors = unique.size();
  for (const HfTensor &t : unique)
    result.bytes += elementsOf(t.shape) * safetensorsDTypeSize(safetensorsDTypeOf(options.dtype));
  return result;
}

} // namespace rp::runtime
