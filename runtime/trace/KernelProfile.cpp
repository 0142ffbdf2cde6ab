//===- KernelProfile.cpp - Per-instruction time of a run ---------------===//

#include "runtime/trace/KernelProfile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <vector>

namespace rp::runtime {
namespace {

/// Pointers to the map's entries, largest `seconds` first (ties: key order).
template <typename Map, typename Seconds>
std::vector<const typename Map::value_type *> largestFirst(const Map &map, Seconds seconds) {
  std::vector<const typename Map::value_type *> out;
  out.reserve(map.size());
  for (const auto &entry : map)
    out.push_back(&entry);
  std::stable_sort(out.begin(), out.end(),
                   [&](const auto *a, const auto *b) { return seconds(*a) > seconds(*b); });
  return out;
}

double fraction(double part, double total) { return total > 0 ? part / total : 0.0; }

} // namespace

void KernelProfile::add(const ProfiledInstruction &instr, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  Sum &k = byKernel_[instr.kernel];
  ++k.count;
  k.seconds += seconds;
  Sum &sig = bySignature_[{instr.kernel, instr.signature}];
  ++sig.count;
  sig.seconds += seconds;
  auto [it, fresh] = byInstruction_.try_emplace({instr.function, instr.index});
  if (fresh)
    it->second.instr = instr;
  ++it->second.sum.count;
  it->second.sum.seconds += seconds;
  total_ += seconds;
}

double KernelProfile::totalSeconds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return total_;
}

std::string KernelProfile::json() const {
  std::lock_guard<std::mutex> lock(mutex_);
  nlohmann::json doc;
  doc["total_s"] = total_;
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto *e : largestFirst(byKernel_, [](const auto &e) { return e.second.seconds; }))
    kernels.push_back({{"kernel", e->first},
                       {"count", e->second.count},
                       {"seconds", e->second.seconds},
                       {"fraction", fraction(e->second.seconds, total_)}});
  doc["by_kernel"] = std::move(kernels);
  nlohmann::json signatures = nlohmann::json::array();
  for (const auto *e : largestFirst(bySignature_, [](const auto &e) { return e.second.seconds; }))
    signatures.push_back({{"kernel", e->first.first},
                          {"signature", e->first.second},
                          {"count", e->second.count},
                          {"seconds", e->second.seconds},
                          {"fraction", fraction(e->second.seconds, total_)}});
  doc["by_signature"] = std::move(signatures);
  nlohmann::json instrs = nlohmann::json::array();
  for (const auto *e :
       largestFirst(byInstruction_, [](const auto &e) { return e.second.sum.seconds; })) {
    const ProfiledInstruction &i = e->second.instr;
    instrs.push_back({{"function", i.function},
                      {"index", i.index},
                      {"kernel", i.kernel},
                      {"location", i.location},
                      {"signature", i.signature},
                      {"count", e->second.sum.count},
                      {"seconds", e->second.sum.seconds},
                      {"fraction", fraction(e->second.sum.seconds, total_)}});
  }
  doc["by_instruction"] = std::move(instrs);
  return doc.dump(1) + "\n";
}

Status KernelProfile::write(const std::string &path) const {
  const std::string text = json();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !out.write(text.data(), static_cast<std::streamsize>(text.size())) || !out.flush())
    return internal("cannot write the kernel profile to " + path);
  return okStatus();
}

std::string KernelProfile::table(int top) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "kernel profile: %.3f s in %zu instructions\n", total_,
                byInstruction_.size());
  out += line;
  out += "  by kernel:\n";
  int n = 0;
  for (const auto *e : largestFirst(byKernel_, [](const auto &e) { return e.second.seconds; })) {
    if (n++ == top)
      break;
    std::snprintf(line, sizeof line, "    %-22s %9.3f s %5.1f%%  %8lld runs\n", e->first.c_str(),
                  e->second.seconds, 100 * fraction(e->second.seconds, total_),
                  static_cast<long long>(e->second.count));
    out += line;
  }
  out += "  by kernel and types:\n";
  n = 0;
  for (const auto *e : largestFirst(bySignature_, [](const auto &e) { return e.second.seconds; })) {
    if (n++ == top)
      break;
    std::snprintf(line, sizeof line, "    %9.3f s %5.1f%%  %8lld runs  %s %s\n", e->second.seconds,
                  100 * fraction(e->second.seconds, total_),
                  static_cast<long long>(e->second.count), e->first.first.c_str(),
                  e->first.second.c_str());
    out += line;
  }
  out += "  by instruction:\n";
  n = 0;
  for (const auto *e :
       largestFirst(byInstruction_, [](const auto &e) { return e.second.sum.seconds; })) {
    if (n++ == top)
      break;
    const ProfiledInstruction &i = e->second.instr;
    std::snprintf(line, sizeof line, "    %9.3f s %5.1f%%  %s #%d %s %s\n", e->second.sum.seconds,
                  100 * fraction(e->second.sum.seconds, total_), i.function.c_str(), i.index,
                  i.kernel.c_str(), i.signature.c_str());
    out += line;
  }
  return out;
}

} // namespace rp::runtime
