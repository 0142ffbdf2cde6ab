//===- HfExport.cpp - A trained model out in the Hugging Face layout (rp-run) -===//

#include "runtime/train/HfExport.h"

#include "kernels/cpu/Cast.h"
#include "runtime/exec/HostArena.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/plan/PlanValidator.h"
#include "runtime/train/ArenaCheckpoint.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/InputGuards.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>

namespace rp::runtime {

namespace pb = rp::plan;

namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// What an adapter param's name says (rp-inject-lora's names): `<W>.lora_A` / `<W>.lora_B`
/// adapt x @ W; `<M>.lora_A.weight` / `<M>.lora_B.weight` adapt x @ W^T with W `<M>.weight`
/// (or `<M>`).
struct AdapterName {
  std::string prefix; ///< W (x @ W) or M (x @ W^T).
  bool isA = false;
  bool transposed = false;
};

std::optional<AdapterName> adapterName(const std::string &name) {
  for (bool transposed : {true, false})
    for (bool isA : {true, false}) {
      const std::string suffix =
          std::string(isA ? ".lora_A" : ".lora_B") + (transposed ? ".weight" : "");
      if (endsWith(name, suffix))
        return AdapterName{name.substr(0, name.size() - suffix.size()), isA, transposed};
    }
  return std::nullopt;
}

/// The fp32 values of every distinct param of `host`, by name, in plan order: views of the
/// master weights for trainable params (no copy), owned fp32 copies of the frozen ones
/// (converted from the compute dtype) and of the weights a merge changes.
struct ParamValues {
  std::vector<std::string> order;
  std::map<std::string, std::vector<int64_t>> shapes;
  std::map<std::string, const float *> data;
  std::map<std::string, std::vector<float>> owned;

  /// An owned copy of `name`'s values (made on first use), to modify.
  std::vector<float> &own(const std::string &name) {
    auto it = owned.find(name);
    if (it != owned.end())
      return it->second;
    size_t n = 1;
    for (int64_t d : shapes.at(name))
      n *= static_cast<size_t>(d);
    std::vector<float> &v = owned[name];
    v.assign(data.at(name), data.at(name) + n);
    data[name] = v.data();
    return v;
  }
};

/// Every param's name, shape and f32 values; with `withFrozen` false the frozen params' values
/// are left out (names and shapes kept): an adapters-only export reads no frozen weight, so it
/// makes no f32 copy of the base model (at 1.7 B parameters that copy is 6.9 GB).
StatusOr<ParamValues> paramValues(HostArena &host, bool withFrozen) {
  const pb::Plan &plan = host.plan();
  ParamValues out;
  for (int i = 0; i < plan.params_size(); ++i) {
    const pb::Param &p = plan.params(i);
    if (out.data.count(p.name()))
      continue; // a param read by several layers: the first entry's value
    const DType stored = fromPlanDType(p.type().dtype()).value_or(DType::F32);
    if (!isFloat(stored))
      return invalidArgument("param '" + p.name() + "' holds " + dtypeName(stored) +
                             "; a Hugging Face export writes floating-point params only");
    out.order.push_back(p.name());
    out.shapes[p.name()] = std::vector<int64_t>(p.type().shape().begin(), p.type().shape().end());
    if (p.trainable()) {
      out.data[p.name()] = host.master() + p.state_offset() / 4;
      continue;
    }
    if (!withFrozen)
      continue;
    // Frozen: the compute weights in f32, a quantized base weight dequantized.
    std::vector<float> &v = out.owned[p.name()];
    v.resize(static_cast<size_t>(host.paramElements(i)));
    RP_RETURN_IF_ERROR(host.frozenWeightsF32(i, v.data()));
    out.data[p.name()] = v.data();
  }
  return out;
}

/// The LoRA adapters of one weight W: its A [in, r] and B [r, out] params and how W is read;
/// or, for a mixture of experts' stacked W (`experts` > 0), A [E, r, in] and B [E, out, r]
/// with W [E, out, in] read as W_e x (`transposed`, like x @ W^T) or W [E, in, out] read as
/// x W_e.
struct AdapterPair {
  std::string a, b;
  std::string module;       ///< PEFT's module name: W without ".weight".
  bool transposed = false;  ///< x @ W^T (W [out, in]) rather than x @ W (W [in, out]).
  int64_t experts = 0;      ///< E for stacked expert adapters, 0 for a dense W.
};

/// Checks a stacked expert pair's shapes (A [E, r, in], B [E, out, r], W [E, out, in] or
/// [E, in, out] as `transposed` says) and sets `experts`.
Status checkExpertPair(const std::string &w, AdapterPair &pair, const ParamValues &values) {
  const auto &sa = values.shapes.at(pair.a), &sb = values.shapes.at(pair.b);
  if (sa.size() != 3 || sb.size() != 3 || sa[0] != sb[0] || sa[1] != sb[2])
    return invalidArgument("LoRA params of '" + w + "' are " + formatShape(sa) + " and " +
                           formatShape(sb) + "; expected A [E, r, in] and B [E, out, r]");
  pair.experts = sa[0];
  const std::vector<int64_t> want = pair.transposed ? std::vector<int64_t>{sa[0], sb[1], sa[2]}
                                                    : std::vector<int64_t>{sa[0], sa[2], sb[1]};
  auto sw = values.shapes.find(w);
  if (sw != values.shapes.end() && sw->second != want)
    return invalidArgument("LoRA weight '" + w + "' is " + formatShape(sw->second) +
                           "; its adapters make " + formatShape(want) +
                           (pair.transposed ? " (W_e x: W [E, out, in])" : " (x W_e: W [E, in, out])"));
  return okStatus();
}

/// The adapters of `values`, by W's name, with their shapes checked.
StatusOr<std::map<std::string, AdapterPair>> adaptersOf(const ParamValues &values) {
  std::map<std::string, AdapterPair> out;
  for (const std::string &name : values.order) {
    std::optional<AdapterName> n = adapterName(name);
    if (!n)
      continue;
    std::string w = n->prefix;
    if (n->transposed && values.shapes.count(n->prefix + ".weight"))
      w = n->prefix + ".weight";
    AdapterPair &pair = out[w];
    (n->isA ? pair.a : pair.b) = name;
    pair.transposed = n->transposed;
    pair.module = endsWith(w, ".weight") ? w.substr(0, w.size() - 7) : w;
  }
  for (auto &[w, pair] : out) {
    if (pair.a.empty() || pair.b.empty())
      return invalidArgument("LoRA weight '" + w + "' has " +
                             (pair.a.empty() ? "no lora_A" : "no lora_B") + " param");
    const auto &sa = values.shapes.at(pair.a), &sb = values.shapes.at(pair.b);
    if (sa.size() == 3) {
      RP_RETURN_IF_ERROR(checkExpertPair(w, pair, values));
      continue;
    }
    if (sa.size() != 2 || sb.size() != 2 || sa[1] != sb[0])
      return invalidArgument("LoRA params of '" + w + "' are " + formatShape(sa) + " and " +
                             formatShape(sb) + "; expected A [in, r] and B [r, out]");
    const std::vector<int64_t> want =
        pair.transposed ? std::vector<int64_t>{sb[1], sa[0]} : std::vector<int64_t>{sa[0], sb[1]};
    auto sw = values.shapes.find(w);
    if (sw != values.shapes.end() && sw->second != want)
      return invalidArgument("LoRA weight '" + w + "' is " + formatShape(sw->second) +
                             "; its adapters make " + formatShape(want) +
                             (pair.transposed ? " (x @ W^T: W [out, in])" : " (x @ W: W [in, out])"));
  }
  return out;
}

const char *dtypeLabel(HfExportDType d) {
  return d == HfExportDType::F32 ? "f32" : d == HfExportDType::BF16 ? "bf16" : "f16";
}

std::string summaryOf(const HfWriteResult &r, HfExportDType dtype, const std::string &what,
                      const std::string &dir) {
  return std::to_string(r.tensors) + " tensors (" + what + ", " + dtypeLabel(dtype) + ", " +
         std::to_string(r.bytes) + " bytes) in " + std::to_string(r.files.size()) +
         (r.files.size() == 1 ? " file" : " files") + " to " + dir;
}

/// W += scale * A @ B (W [in, out]), or W += scale * (A @ B)^T (`transposed`: W [out, in]),
/// with A [in, r] and B [r, out], accumulated in double.
void mergeInto(std::vector<float> &w, const float *a, const float *b, int64_t in, int64_t r,
               int64_t out, double scale, bool transposed) {
  for (int64_t i = 0; i < in; ++i)
    for (int64_t o = 0; o < out; ++o) {
      double sum = 0;
      for (int64_t k = 0; k < r; ++k)
        sum += static_cast<double>(a[i * r + k]) * static_cast<double>(b[k * out + o]);
      float &x = transposed ? w[o * in + i] : w[i * out + o];
      x = static_cast<float>(static_cast<double>(x) + scale * sum);
    }
}

/// Stacked experts: W_e += scale * B_e A_e (`transposed`: W [E, out, in]) or its transpose
/// (W [E, in, out]), with A [E, r, in] and B [E, out, r], accumulated in double.
void mergeExperts(std::vector<float> &w, const float *a, const float *b, int64_t experts,
                  int64_t r, int64_t in, int64_t out, double scale, bool transposed) {
  for (int64_t e = 0; e < experts; ++e)
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) {
        double sum = 0;
        for (int64_t k = 0; k < r; ++k)
          sum += static_cast<double>(b[(e * out + o) * r + k]) *
                 static_cast<double>(a[(e * r + k) * in + i]);
        float &x = transposed ? w[(e * out + o) * in + i] : w[(e * in + i) * out + o];
        x = static_cast<float>(static_cast<double>(x) + scale * sum);
      }
}

StatusOr<std::string> exportFull(ParamValues &values,
                                 const std::map<std::string, AdapterPair> &adapters,
                                 const HfExportOptions &options, bool quantizedBase) {
  for (const auto &[w, pair] : adapters) {
    const auto &sa = values.shapes.at(pair.a), &sb = values.shapes.at(pair.b);
    if (!values.data.count(w))
      return invalidArgument("LoRA weight '" + w + "' is no param of the plan; cannot merge");
    if (pair.experts > 0) {
      mergeExperts(values.own(w), values.data.at(pair.a), values.data.at(pair.b), pair.experts,
                   sa[1], sa[2], sb[1], *options.loraAlpha / static_cast<double>(sa[1]),
                   pair.transposed);
      continue;
    }
    mergeInto(values.own(w), values.data.at(pair.a), values.data.at(pair.b), sa[0], sa[1],
              sb[1], *options.loraAlpha / static_cast<double>(sa[1]), pair.transposed);
  }
  std::vector<HfTensor> tensors;
  for (const std::string &name : values.order)
    if (!adapterName(name))
      tensors.push_back(HfTensor{name, values.shapes.at(name), values.data.at(name)});
  HfWriteOptions w{options.dtype, options.maxShardBytes, options.configPath, options.aliases,
                   options.force};
  RP_ASSIGN_OR_RETURN(HfWriteResult r, writeHfCheckpoint(options.dir, tensors, w));
  // A quantized base (rpc-compile --base-weights) is merged as the GEMMs read it: dequantized.
  return summaryOf(r, options.dtype,
                   adapters.empty()  ? "full model"
                   : quantizedBase ? "LoRA merged into the dequantized base"
                                   : "LoRA merged",
                   options.dir);
}

} // namespace

bool hasLoraAdapters(const pb::Plan &plan) {
  for (const pb::Param &p : plan.params())
    if (adapterName(p.name()))
      return true;
  return false;
}

Status checkHfExport(const HfExportOptions &options, const pb::Plan &plan) {
  if (options.dir.empty())
    return okStatus();
  RP_RETURN_IF_ERROR(checkExportDir(options.dir, options.force, "--export-hf"));
  if (hasLoraAdapters(plan)) {
    if (!options.loraAlpha)
      return invalidArgument("the plan has LoRA adapters: --export-hf needs --lora-alpha A, "
                             "the alpha it was compiled with (rpc-compile --lora-alpha)");
    if (!options.merged && !options.configPath.empty())
      return invalidArgument("--hf-config is for full-model exports; a LoRA adapter export "
                             "writes adapter_config.json (add --export-merged for the merged "
                             "model)");
  } else {
    for (auto [set, flag] : {std::pair{options.merged, "--export-merged"},
                             std::pair{options.loraAlpha.has_value(), "--lora-alpha"},
                             std::pair{!options.baseModel.empty(), "--base-model"}})
      if (set)
        return invalidArgument(std::string(flag) +
                               " is for plans with LoRA adapters; this plan has none");
  }
  if (!options.configPath.empty())
    RP_RETURN_IF_ERROR(checkJsonObjectFile(options.configPath, "--hf-config"));
  return okStatus();
}

StatusOr<std::string> exportHf(HostArena &host, const HfExportOptions &options) {
  // A full or merged export writes the frozen weights too; the adapters-only one (a LoRA plan
  // without --export-merged) reads the adapters alone.
  const bool adaptersOnly = hasLoraAdapters(host.plan()) && !options.merged;
  RP_ASSIGN_OR_RETURN(ParamValues values, paramValues(host, /*withFrozen=*/!adaptersOnly));
  RP_ASSIGN_OR_RETURN(auto adapters, adaptersOf(values));
  if (adapters.empty() && adaptersOnly) { // no adapter pairs after all: a full export
    RP_ASSIGN_OR_RETURN(values, paramValues(host, /*withFrozen=*/true));
  }
  if (!adapters.empty() && !options.loraAlpha)
    return invalidArgument("the plan has LoRA adapters: the export needs their alpha");
  if (adapters.empty() || options.merged) {
    const bool quantizedBase =
        std::any_of(host.plan().params().begin(), host.plan().params().end(),
                    [](const pb::Param &p) { return p.has_quant(); });
    return exportFull(values, adapters, options, quantizedBase);
  }
  std::vector<LoraAdapter> list;
  for (const auto &[w, pair] : adapters) {
    const auto &sa = values.shapes.at(pair.a), &sb = values.shapes.at(pair.b);
    if (pair.experts == 0) {
      list.push_back(LoraAdapter{pair.module, sa[0], sb[1], sa[1], values.data.at(pair.a),
                                 values.data.at(pair.b), 0, ""});
      continue;
    }
    // peft nests a module's adapted parameters in the order of its parameters (the plan's).
    size_t dot = w.rfind('.');
    LoraAdapter e{w.substr(0, dot), sa[2], sb[1], sa[1], values.data.at(pair.a),
                  values.data.at(pair.b), pair.experts, w.substr(dot + 1)};
    auto pos = std::find(values.order.begin(), values.order.end(), w);
    auto before = std::find_if(list.begin(), list.end(), [&](const LoraAdapter &x) {
      return x.experts > 0 && x.module == e.module &&
             std::find(values.order.begin(), values.order.end(), x.module + "." + x.parameter) >
                 pos;
    });
    list.insert(before, e);
  }
  PeftWriteOptions p{*options.loraAlpha, options.baseModel, options.dtype, options.force};
  RP_ASSIGN_OR_RETURN(HfWriteResult r, writePeftAdapter(options.dir, list, p));
  return summaryOf(r, options.dtype, "LoRA adapters", options.dir);
}

Status exportWeights(const std::string &planPath, const std::string &weightsPath,
                     bool allowExtraWeights, const std::string &resumeDir,
                     const HfExportOptions &options, std::FILE *out) {
  RP_ASSIGN_OR_RETURN(LoadedPlan loaded, loadPlan(planPath, weightsPath, allowExtraWeights));
  RP_RETURN_IF_ERROR(checkInitialWeights(loaded.plan, planPath,
                                         !weightsPath.empty() || !resumeDir.empty(),
                                         /*fromScratch=*/false, ""));
  RP_RETURN_IF_ERROR(checkHfExport(options, loaded.plan));
  RP_RETURN_IF_ERROR(checkExportOutsideInputs(
      options.dir, "--export-hf", {weightsPath, resumeDir, {planPath, options.configPath}}));
  std::optional<LoadedCheckpoint> ckpt;
  if (!resumeDir.empty()) {
    RP_ASSIGN_OR_RETURN(ckpt, loadCheckpoint(resumeDir));
  }
  RP_ASSIGN_OR_RETURN(HostArena host, HostArena::create(loaded.plan));
  if (ckpt)
    RP_RETURN_IF_ERROR(restoreCheckpoint(host, *ckpt));
  else
    RP_RETURN_IF_ERROR(host.loadWeights(loaded.weights));
  RP_ASSIGN_OR_RETURN(std::string summary, exportHf(host, options));
  std::fprintf(out, "rp-run: exported %s\n", summary.c_str());
  return okStatus();
}

} // namespace rp::runtime
