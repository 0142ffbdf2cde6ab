//===- Profile.cpp - Layer profiles and target descriptions ---------------===//

#include "runtime/partition/Profile.h"

#include "base/FormatBytes.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace rp::partition {

using json = nlohmann::json;
using base::formatNumber;
using base::invalidArgument;
using base::notFound;

namespace {

/// "<source>: " or "<source>: layer <i>: ".
std::string where(std::string_view source, int layer = -1) {
  std::string s(source);
  s += ": ";
  if (layer >= 0)
    s += "layer " + std::to_string(layer) + ": ";
  return s;
}

/// A short description of a JSON value's type for messages.
const char *typeName(const json &v) {
  if (v.is_string())
    return "a string";
  if (v.is_boolean())
    return "a boolean";
  if (v.is_null())
    return "null";
  if (v.is_array())
    return "an array";
  if (v.is_object())
    return "an object";
  return "a number";
}

Status checkTime(double v, const std::string &prefix, const char *field) {
  if (!std::isfinite(v) || v < 0)
    return invalidArgument(prefix + "'" + field + "' must be a non-negative time in ms, got " +
                           formatNumber(v));
  return Status();
}

/// Reads a required (or optional, when `required` is false and the key is absent) time field.
/// Finds the number `field` of `obj`: sets `it` to it, or to obj.end() when it is absent and
/// not `required`. Errors: a missing required field, a value that is not a number.
Status findNumber(const json &obj, const char *field, const std::string &prefix, bool required,
                  json::const_iterator &it) {
  it = obj.find(field);
  if (it == obj.end())
    return required ? invalidArgument(prefix + "missing '" + field + "'") : Status();
  if (!it->is_number())
    return invalidArgument(prefix + "'" + field + "' must be a number, got " + typeName(*it));
  return Status();
}

Status readTime(const json &obj, const char *field, const std::string &prefix, bool required,
                std::optional<double> &out) {
  json::const_iterator it;
  RP_RETURN_IF_ERROR(findNumber(obj, field, prefix, required, it));
  out.reset();
  if (it == obj.end())
    return Status();
  double v = it->get<double>();
  RP_RETURN_IF_ERROR(checkTime(v, prefix, field));
  out = v;
  return Status();
}

Status checkByteValue(double v, const std::string &prefix, const char *field, uint64_t &out) {
  // 2^64 is exactly representable; anything at or above it does not fit.
  if (!std::isfinite(v) || v < 0 || v != std::floor(v) || v >= 18446744073709551616.0)
    return invalidArgument(prefix + "'" + field +
                           "' must be a non-negative integer byte count, got " + formatNumber(v));
  out = static_cast<uint64_t>(v);
  return Status();
}

Status readBytes(const json &obj, const char *field, const std::string &prefix, bool required,
                 std::optional<uint64_t> &out) {
  json::const_iterator it;
  RP_RETURN_IF_ERROR(findNumber(obj, field, prefix, required, it));
  out.reset();
  if (it == obj.end())
    return Status();
  uint64_t v = 0;
  if (it->is_number_unsigned()) {
    v = it->get<uint64_t>();
  } else if (it->is_number_integer()) {
    return invalidArgument(prefix + "'" + field +
                           "' must be a non-negative integer byte count, got " +
                           std::to_string(it->get<int64_t>()));
  } else {
    RP_RETURN_IF_ERROR(checkByteValue(it->get<double>(), prefix, field, v));
  }
  out = v;
  return Status();
}

Status readName(const json &obj, const std::string &prefix, std::string &out) {
  auto it = obj.find("name");
  if (it == obj.end())
    return invalidArgument(prefix + "missing 'name'");
  if (!it->is_string())
    return invalidArgument(prefix + "'name' must be a string, got " + typeName(*it));
  out = it->get<std::string>();
  if (out.empty())
    return invalidArgument(prefix + "'name' must not be empty");
  return Status();
}

Status rejectUnknown(const json &obj, const std::string &prefix,
                     std::initializer_list<const char *> known) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char *k : known)
      ok = ok || it.key() == k;
    if (!ok) {
      std::string list;
      for (const char *k : known)
        list += (list.empty() ? "" : ", ") + std::string(k);
      return invalidArgument(prefix + "unknown field '" + it.key() + "' (expected " + list + ")");
    }
  }
  return Status();
}

StatusOr<std::string> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return notFound(path + ": cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    return notFound(path + ": read error");
  return ss.str();
}

StatusOr<json> parseJsonObject(std::string_view text, std::string_view source) {
  json doc = json::parse(text.begin(), text.end(), /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return invalidArgument(where(source) + "malformed JSON");
  if (!doc.is_object())
    return invalidArgument(where(source) + "expected a JSON object at the top level, got " +
                           typeName(doc));
  return doc;
}

} // namespace

Status validateProfile(const Profile &profile, std::string_view source) {
  if (profile.layers.empty())
    return invalidArgument(where(source) + "no layers (a profile needs at least the tail layer)");
  for (size_t i = 0; i < profile.layers.size(); ++i) {
    const LayerProfile &l = profile.layers[i];
    std::string prefix = where(source, static_cast<int>(i));
    if (l.name.empty())
      return invalidArgument(prefix + "'name' must not be empty");
    RP_RETURN_IF_ERROR(checkTime(l.fwdMs, prefix, "fwd_ms"));
    RP_RETURN_IF_ERROR(checkTime(l.bwdMs, prefix, "bwd_ms"));
    RP_RETURN_IF_ERROR(checkTime(l.recomputeMs, prefix, "recompute_ms"));
  }
  if (profile.commMs && (!std::isfinite(*profile.commMs) || *profile.commMs < 0))
    return invalidArgument(where(source) + "'comm_ms' must be a non-negative time in ms, got " +
                           formatNumber(*profile.commMs));
  return Status();
}

StatusOr<Profile> parseProfile(std::string_view text, std::string_view source) {
  RP_ASSIGN_OR_RETURN(json doc, parseJsonObject(text, source));
  const std::string top = where(source);
  RP_RETURN_IF_ERROR(rejectUnknown(doc, top, {"layers", "comm_ms"}));
  auto layersIt = doc.find("layers");
  if (layersIt == doc.end())
    return invalidArgument(top + "missing 'layers'");
  if (!layersIt->is_array())
    return invalidArgument(top + "'layers' must be an array, got " + typeName(*layersIt));
  if (layersIt->empty())
    return invalidArgument(top + "'layers' is empty: a profile needs at least the tail layer");

  Profile profile;
  std::optional<double> comm;
  RP_RETURN_IF_ERROR(readTime(doc, "comm_ms", top, /*required=*/false, comm));
  profile.commMs = comm;

  int index = 0;
  for (const json &entry : *layersIt) {
    std::string prefix = where(source, index);
    if (!entry.is_object())
      return invalidArgument(prefix + "expected an object, got " + typeName(entry));
    RP_RETURN_IF_ERROR(rejectUnknown(entry, prefix,
                                     {"name", "fwd_ms", "bwd_ms", "recompute_ms", "param_bytes",
                                      "trainable_bytes", "act_bytes", "work_bytes",
                                      "saved_bytes"}));
    LayerProfile layer;
    RP_RETURN_IF_ERROR(readName(entry, prefix, layer.name));
    std::optional<double> fwd, bwd, re;
    RP_RETURN_IF_ERROR(readTime(entry, "fwd_ms", prefix, true, fwd));
    RP_RETURN_IF_ERROR(readTime(entry, "bwd_ms", prefix, true, bwd));
    RP_RETURN_IF_ERROR(readTime(entry, "recompute_ms", prefix, false, re));
    std::optional<uint64_t> param, trainable, act, work, saved;
    RP_RETURN_IF_ERROR(readBytes(entry, "param_bytes", prefix, true, param));
    RP_RETURN_IF_ERROR(readBytes(entry, "trainable_bytes", prefix, true, trainable));
    RP_RETURN_IF_ERROR(readBytes(entry, "act_bytes", prefix, true, act));
    RP_RETURN_IF_ERROR(readBytes(entry, "work_bytes", prefix, false, work));
    RP_RETURN_IF_ERROR(readBytes(entry, "saved_bytes", prefix, false, saved));
    layer.fwdMs = *fwd;
    layer.bwdMs = *bwd;
    layer.recomputeMs = re ? *re : *fwd;
    layer.paramBytes = *param;
    layer.trainableBytes = *trainable;
    layer.actBytes = *act;
    layer.workBytes = work ? *work : 0;
    layer.savedBytes = saved;
    profile.layers.push_back(std::move(layer));
    ++index;
  }
  return profile;
}

StatusOr<Profile> loadProfile(const std::string &path) {
  RP_ASSIGN_OR_RETURN(std::string text, readFile(path));
  return parseProfile(text, path);
}

StatusOr<TargetSpec> makeTarget(std::string name, double peakTflops, double hbmGbps,
                                double pcieGbps, uint64_t memoryBytes) {
  std::string prefix = "target '" + name + "': ";
  if (name.empty())
    return invalidArgument("target: 'name' must not be empty");
  if (!std::isfinite(peakTflops) || peakTflops < 0)
    return invalidArgument(prefix + "'peak_tflops' must be a non-negative number, got " +
                           formatNumber(peakTflops));
  if (!std::isfinite(hbmGbps) || hbmGbps < 0)
    return invalidArgument(prefix + "'hbm_gbps' must be a non-negative number, got " +
                           formatNumber(hbmGbps));
  if (!std::isfinite(pcieGbps) || pcieGbps <= 0)
    return invalidArgument(prefix + "'pcie_gbps' must be a positive number (GB/s per " +
                           "direction), got " + formatNumber(pcieGbps));
  if (memoryBytes == 0)
    return invalidArgument(prefix + "'memory_bytes' must be positive");
  TargetSpec t;
  t.name = std::move(name);
  t.peakTflops = peakTflops;
  t.hbmGbps = hbmGbps;
  t.pcieGbps = pcieGbps;
  t.memoryBytes = memoryBytes;
  return t;
}

namespace {

/// Reads an optional or required non-negative number of a target object.
Status readTargetNumber(const json &obj, const char *field, const std::string &prefix,
                        bool required, double &out) {
  auto it = obj.find(field);
  if (it == obj.end()) {
    if (required)
      return invalidArgument(prefix + "missing '" + field + "'");
    return Status();
  }
  if (!it->is_number())
    return invalidArgument(prefix + "'" + field + "' must be a number, got " + typeName(*it));
  out = it->get<double>();
  return Status();
}

} // namespace

StatusOr<TargetSpec> parseTarget(std::string_view text, std::string_view source) {
  RP_ASSIGN_OR_RETURN(json doc, parseJsonObject(text, source));
  const std::string prefix = where(source);
  RP_RETURN_IF_ERROR(rejectUnknown(
      doc, prefix, {"name", "peak_tflops", "hbm_gbps", "pcie_gbps", "memory_bytes"}));
  std::string name;
  RP_RETURN_IF_ERROR(readName(doc, prefix, name));
  double peak = 0, hbm = 0, pcie = 0;
  RP_RETURN_IF_ERROR(readTargetNumber(doc, "peak_tflops", prefix, false, peak));
  RP_RETURN_IF_ERROR(readTargetNumber(doc, "hbm_gbps", prefix, false, hbm));
  RP_RETURN_IF_ERROR(readTargetNumber(doc, "pcie_gbps", prefix, true, pcie));
  std::optional<uint64_t> mem;
  RP_RETURN_IF_ERROR(readBytes(doc, "memory_bytes", prefix, true, mem));
  StatusOr<TargetSpec> t = makeTarget(name, peak, hbm, pcie, *mem);
  if (!t.ok())
    return invalidArgument(std::string(source) + ": " + t.status().message());
  return t;
}

StatusOr<TargetSpec> loadTarget(const std::string &path) {
  RP_ASSIGN_OR_RETURN(std::string text, readFile(path));
  return parseTarget(text, path);
}

std::optional<TargetSpec> targetPreset(std::string_view name) {
  constexpr uint64_t kGiB = uint64_t(1) << 30;
  if (name == "rtx4090")
    return makeTarget("rtx4090", 165, 1008, 25, 24 * kGiB).value();
  if (name == "rtx5090")
    return makeTarget("rtx5090", 209.5, 1792, 50, 32 * kGiB).value();
  if (name == "h100")
    return makeTarget("h100", 989, 3350, 50, 80 * kGiB).value();
  return std::nullopt;
}

StatusOr<TargetSpec> parseTargetFlag(std::string_view flag) {
  if (std::optional<TargetSpec> preset = targetPreset(flag))
    return *preset;
  const std::string prefix = "target flag '" + std::string(flag) + "': ";
  std::optional<std::string> name;
  std::optional<double> peak, hbm, pcie, mem;
  size_t pos = 0;
  while (pos <= flag.size()) {
    size_t comma = flag.find(',', pos);
    if (comma == std::string_view::npos)
      comma = flag.size();
    std::string_view item = flag.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty())
      return invalidArgument(prefix + "empty item; expected key=value pairs separated by ','");
    size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return invalidArgument(prefix + "'" + std::string(item) +
                             "' is not key=value (nor a preset: rtx4090, rtx5090, h100)");
    std::string key(item.substr(0, eq)), value(item.substr(eq + 1));
    if (key == "name") {
      name = value;
      continue;
    }
    std::optional<double> *slot = key == "peak_tflops"    ? &peak
                                  : key == "hbm_gbps"     ? &hbm
                                  : key == "pcie_gbps"    ? &pcie
                                  : key == "memory_bytes" ? &mem
                                                          : nullptr;
    if (!slot)
      return invalidArgument(prefix + "unknown key '" + key +
                             "' (expected name, peak_tflops, hbm_gbps, pcie_gbps, memory_bytes)");
    char *end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size())
      return invalidArgument(prefix + "'" + key + "' must be a number, got '" + value + "'");
    *slot = v;
  }
  if (!name)
    return invalidArgument(prefix + "missing 'name'");
  if (!pcie)
    return invalidArgument(prefix + "missing 'pcie_gbps'");
  if (!mem)
    return invalidArgument(prefix + "missing 'memory_bytes'");
  uint64_t memBytes = 0;
  RP_RETURN_IF_ERROR(checkByteValue(*mem, prefix, "memory_bytes", memBytes));
  return makeTarget(*name, peak.value_or(0), hbm.value_or(0), *pcie, memBytes);
}

} // namespace rp::partition
