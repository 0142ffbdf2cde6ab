//===- PlanReport.cpp - FLOPs, transfers and device memory of a plan ------===//

#include "runtime/plan/PlanReport.h"

#include "base/FormatBytes.h"
#include "kernels/Quantization.h"
#include "runtime/plan/Instruction.h"
#include "runtime/plan/PaperFlops.h"
#include "runtime/plan/PlanMemoryCheck.h"
#include "runtime/plan/PlanValidator.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>
#include <tuple>

namespace rp::runtime {

namespace pb = rp::plan;

namespace {

/// a + b and a * b, saturating at INT64_MAX: a validated plan bounds each buffer, not the
/// sum over a body that names one many times.
int64_t addSat(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}
int64_t mulSat(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}

/// The FLOPs of every instruction of `f`, in body order (instructionFlops).
std::vector<double> instructionFlopsOf(const pb::Function &f) {
  std::vector<double> flops;
  flops.reserve(static_cast<size_t>(f.body_size()));
  for (const pb::Instruction &ins : f.body())
    flops.push_back(instructionFlops(ins));
  return flops;
}

/// The FLOPs of `ins` with a causal (or sliding-window) attention counted over every
/// (query, key) pair, as the model FLOPs do.
double nonCausalFlops(const pb::Instruction &ins) {
  FlopQuery q = flopQuery(ins);
  q.causal = false;
  q.window = 0;
  return q.flops();
}

/// The non-causal FLOPs of the attention products of forward function `f` (the model FLOPs'
/// convention): fused attention instructions, and matmuls of two batched operands (rank >= 3
/// each: QK^T and PV of an unfused attention; a projection multiplies by a 2-D weight).
double denseAttentionFlops(const pb::Function &f) {
  double flops = 0;
  for (const pb::Instruction &ins : f.body()) {
    const bool batchedMatmul = ins.kernel() == "matmul" && ins.operands_size() == 2 &&
                               shapeOf(ins.operands(0).type()).size() >= 3 &&
                               shapeOf(ins.operands(1).type()).size() >= 3;
    if (ins.kernel() == "attention" || batchedMatmul)
      flops += nonCausalFlops(ins);
  }
  return flops;
}

bool readsParam(const pb::BufferRef &r, int param) {
  return r.space() == pb::BufferRef::PARAM && r.index() == param;
}

/// True when every reader of param entry `param` in `f` gathers rows of it (an embedding), and
/// there is at least one. `tokens` gets the index elements of such a gather.
bool isEmbedding(const pb::Function &f, int param, int64_t &tokens) {
  bool read = false;
  for (const pb::Instruction &ins : f.body())
    for (int i = 0; i < ins.operands_size(); ++i) {
      if (!readsParam(ins.operands(i), param))
        continue;
      if (ins.kernel() != "gather" || i != 0 || ins.operands_size() != 2)
        return false;
      read = true;
      tokens = static_cast<int64_t>(elementCount(ins.operands(1).type()));
    }
  return read;
}

/// The routed rows R and experts E when param entry `param` is read in `f` as the weights
/// (operand 1) of a grouped_matmul: then each token uses R / (E x tokens) of it.
bool routedExperts(const pb::Function &f, int param, double &rows, double &experts) {
  for (const pb::Instruction &ins : f.body()) {
    if (ins.kernel() != "grouped_matmul" || ins.operands_size() != 3 ||
        !readsParam(ins.operands(1), param))
      continue;
    const kernels::Shape lhs = shapeOf(ins.operands(0).type());
    const kernels::Shape weights = shapeOf(ins.operands(1).type());
    if (lhs.size() == 2 && weights.size() == 3) {
      rows = static_cast<double>(lhs[0]);
      experts = static_cast<double>(weights[0]);
      return experts > 0;
    }
  }
  return false;
}

/// The params, N, the tokens and the model attention FLOPs of one micro-batch.
void countModel(const pb::Plan &plan, PlanReport &r) {
  double routedShare = 0, routedWhole = 0; // routed expert entries: elements x R / E, elements
  for (int p = 0; p < plan.params_size(); ++p) {
    const pb::Param &param = plan.params(p);
    const double n = elementCount(param.type());
    if (!param.has_primary()) // a copy of a shared param is one param
      r.params += n;
    const pb::Function &forward = plan.functions(plan.layers(param.layer()).forward());
    int64_t tokens = 0;
    if (isEmbedding(forward, p, tokens)) {
      if (r.tokensPerMicroBatch == 0)
        r.tokensPerMicroBatch = tokens;
      continue;
    }
    double rows = 0, experts = 0;
    if (routedExperts(forward, p, rows, experts)) {
      routedShare += n * rows / experts;
      routedWhole += n;
      continue;
    }
    r.nonEmbeddingParams += n;
  }
  // Each of T tokens uses R / (E T) of a routed expert entry (k of E experts); without an
  // embedding (no T) the entries count whole.
  r.nonEmbeddingParams += r.tokensPerMicroBatch > 0
                              ? routedShare / static_cast<double>(r.tokensPerMicroBatch)
                              : routedWhole;
  for (const pb::Layer &layer : plan.layers())
    r.modelAttentionFlops += denseAttentionFlops(plan.functions(layer.forward()));
  r.modelAttentionFlops *= static_cast<double>(r.microBatches);
}

/// One stage's calls and transfers; `forwardOf` maps a layer's forward and saving functions
/// to the layer, `seenForward` holds the layers whose forward earlier calls ran.
StageReport reportStage(const pb::Plan &plan, const pb::Stage &st,
                        const std::vector<double> &flops, const std::vector<int> &forwardOf,
                        std::set<int> &seenForward) {
  StageReport s;
  s.name = st.name();
  s.kind = stageKindName(st.kind());
  s.begin = st.begin();
  s.end = st.end();
  s.weightUpload = st.weight_bytes();
  s.gradDownload = st.kind() == pb::FORWARD ? 0 : st.grad_bytes();
  s.peakBytes = st.peak_bytes();
  for (const pb::Step &step : st.body()) {
    if (step.has_upload())
      s.activationUpload =
          addSat(s.activationUpload, byteCount(plan.host_buffers(step.upload().buffer()).type()));
    if (step.has_download())
      s.activationDownload = addSat(
          s.activationDownload, byteCount(plan.host_buffers(step.download().buffer()).type()));
    if (!step.has_call())
      continue;
    const int f = step.call().function();
    ++s.calls;
    const int layer = forwardOf[static_cast<size_t>(f)];
    if (layer < 0)
      s.flops.backward += flops[static_cast<size_t>(f)];
    else if (seenForward.insert(layer).second)
      s.flops.forward += flops[static_cast<size_t>(f)];
    else
      s.flops.recompute += flops[static_cast<size_t>(f)];
  }
  return s;
}

/// The `largest` biggest values the called functions write (workspace or function results).
/// A value written where an earlier one of the same size lies (a reshape's view, a reused
/// slot) is that buffer again: the first writer names it.
std::vector<BufferReport> largestBuffers(const pb::Plan &plan, int largest) {
  std::set<int> called;
  for (const pb::Stage &st : plan.stages())
    for (const pb::Step &step : st.body())
      if (step.has_call())
        called.insert(step.call().function());
  std::vector<BufferReport> all;
  for (int fi : called) {
    const pb::Function &f = plan.functions(fi);
    std::set<std::tuple<int, int64_t, int64_t>> seen; // space, index or offset, bytes
    for (const pb::Instruction &ins : f.body())
      for (const pb::BufferRef &r : ins.results()) {
        if (r.space() != pb::BufferRef::WORKSPACE && r.space() != pb::BufferRef::RESULT)
          continue;
        const bool workspace = r.space() == pb::BufferRef::WORKSPACE;
        const int64_t where = workspace ? r.offset() : r.index();
        if (!seen.insert({r.space(), where, byteCount(r.type())}).second)
          continue;
        all.push_back({byteCount(r.type()), typeText(r.type()),
                       workspace ? "workspace" : "activation", f.name(), ins.kernel(),
                       ins.location()});
      }
  }
  std::stable_sort(all.begin(), all.end(), [](const BufferReport &a, const BufferReport &b) {
    return a.bytes > b.bytes;
  });
  if (all.size() > static_cast<size_t>(std::max(largest, 0)))
    all.resize(static_cast<size_t>(std::max(largest, 0)));
  return all;
}

} // namespace

double FunctionFlops::total() const {
  double flops = 0;
  for (double f : instructions)
    flops += f;
  return flops;
}

std::string formatInstructionFlops(const std::vector<double> &flops) {
  std::string out;
  for (size_t i = 0; i < flops.size(); ++i) {
    if (flops[i] == 0)
      continue;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%zu:%.0f", out.empty() ? "" : " ", i, flops[i]);
    out += buf;
  }
  return out;
}

double PlanReport::executedFlops() const {
  double flops = 0;
  for (const StageReport &s : stages)
    flops += s.flops.total();
  return flops * static_cast<double>(microBatches);
}

double PlanReport::paperFlops() const {
  double flops = 0;
  for (const StageReport &s : stages)
    flops += s.paperFlops;
  return flops * static_cast<double>(microBatches);
}

double PlanReport::modelFlops() const {
  if (tokensPerMicroBatch == 0)
    return 0;
  const double tokens =
      static_cast<double>(tokensPerMicroBatch) * static_cast<double>(microBatches);
  return 6 * nonEmbeddingParams * tokens + 3 * modelAttentionFlops;
}

int64_t PlanReport::uploadBytes() const {
  int64_t bytes = 0;
  for (const StageReport &s : stages)
    bytes = addSat(bytes, addSat(s.weightUpload, mulSat(microBatches, s.activationUpload)));
  return bytes;
}

int64_t PlanReport::downloadBytes() const {
  int64_t bytes = 0;
  for (const StageReport &s : stages)
    bytes = addSat(bytes, addSat(s.gradDownload, mulSat(microBatches, s.activationDownload)));
  return bytes;
}

namespace {

/// How param `p` is held in the host weights and its bytes there.
std::pair<std::string, int64_t> heldAs(const pb::Plan &plan, const pb::Param &p) {
  if (p.has_quant())
    return {kernels::quantFormatName(static_cast<kernels::QuantFormat>(p.quant().format() - 1)),
            p.quant().bytes()};
  const int64_t n = static_cast<int64_t>(elementCount(p.type()));
  const int dtype = isPlanFloat(p.type().dtype()) ? plan.config().compute_dtype() : p.type().dtype();
  const std::optional<DType> d = fromPlanDType(dtype);
  return {d ? dtypeName(*d) : "?", d ? mulSat(n, static_cast<int64_t>(dtypeSize(*d))) : 0};
}

/// PlanReport::hostWeightsByDType and weightUploadByDType.
void countWeightsByDType(const pb::Plan &plan, PlanReport &r) {
  std::vector<std::map<std::string, int64_t>> byLayer(static_cast<size_t>(plan.layers_size()));
  int64_t held = 0;
  for (const pb::Param &p : plan.params()) {
    auto [key, bytes] = heldAs(plan, p);
    r.hostWeightsByDType[key] = addSat(r.hostWeightsByDType[key], bytes);
    byLayer[static_cast<size_t>(p.layer())][key] += bytes;
    held = addSat(held, bytes);
  }
  if (plan.host_arena().weights() > held)
    r.hostWeightsByDType["padding"] = plan.host_arena().weights() - held;
  for (const pb::Stage &st : plan.stages()) {
    int64_t stageHeld = 0;
    for (int l = st.begin(); l < st.end(); ++l)
      for (const auto &[key, bytes] : byLayer[static_cast<size_t>(l)]) {
        r.weightUploadByDType[key] = addSat(r.weightUploadByDType[key], bytes);
        stageHeld = addSat(stageHeld, bytes);
      }
    if (st.weight_bytes() > stageHeld)
      r.weightUploadByDType["padding"] =
          addSat(r.weightUploadByDType["padding"], st.weight_bytes() - stageHeld);
  }
}

} // namespace

PlanReport computePlanReport(const pb::Plan &plan, int largest) {
  PlanReport r;
  r.microBatches = plan.config().micro_batches();
  r.gpus = plan.config().gpus();
  countModel(plan, r);
  std::vector<double> flops;
  for (const pb::Function &f : plan.functions()) {
    r.functions.push_back({f.name(), instructionFlopsOf(f)});
    flops.push_back(r.functions.back().total());
  }
  std::vector<int> forwardOf(static_cast<size_t>(plan.functions_size()), -1);
  for (int l = 0; l < plan.layers_size(); ++l) {
    forwardOf[static_cast<size_t>(plan.layers(l).forward())] = l;
    if (plan.layers(l).has_saving())
      forwardOf[static_cast<size_t>(plan.layers(l).saving())] = l;
  }
  std::set<int> seenForward;
  const std::vector<double> paper = paperStageFlops(plan);
  for (int s = 0; s < plan.stages_size(); ++s) {
    r.stages.push_back(reportStage(plan, plan.stages(s), flops, forwardOf, seenForward));
    r.stages.back().paperFlops = paper[static_cast<size_t>(s)];
  }
  r.largestBuffers = largestBuffers(plan, largest);
  countWeightsByDType(plan, r);
  return r;
}

namespace {

/// "1.23 GFLOP": two decimals in the largest unit not above the value (whole FLOPs below 1000).
std::string humanFlops(double flops) {
  static const char *units[] = {"FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP"};
  int u = 0;
  while (flops >= 1000.0 && u < 6) {
    flops /= 1000.0;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", flops, units[u]);
  return buf;
}

/// "1234 (1.23 KFLOP)": the exact count, then the human form.
std::string flopsText(double flops) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.0f (%s)", flops, humanFlops(flops).c_str());
  return buf;
}

std::string bytesText(int64_t bytes) {
  return std::to_string(bytes) + " (" + formatBytes(static_cast<uint64_t>(bytes)) + ")";
}

void appendf(std::string &out, const char *format, ...) __attribute__((format(printf, 2, 3)));
/// printf into the end of `out`, at any length (locations and names are not bounded).
void appendf(std::string &out, const char *format, ...) {
  va_list args, copy;
  va_start(args, format);
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  if (n > 0) {
    const size_t at = out.size();
    out.resize(at + static_cast<size_t>(n) + 1);
    std::vsnprintf(&out[at], static_cast<size_t>(n) + 1, format, args);
    out.resize(at + static_cast<size_t>(n));
  }
  va_end(args);
}

/// The stage table: per micro-batch FLOPs and activation bytes, per step weights and grads.
void appendStages(std::string &out, const PlanReport &r) {
  appendf(out, "%-8s %-10s %-7s %5s %16s %16s %16s %16s %7s %12s %12s %12s %12s %12s\n",
          "stage", "kind", "layers", "calls", "fwd FLOP/mb", "recomp FLOP/mb", "bwd FLOP/mb",
          "paper FLOP/mb", "ratio", "act up/mb", "act down/mb", "weights up", "grads down",
          "peak");
  for (const StageReport &s : r.stages) {
    const std::string layers = std::to_string(s.begin) + "-" + std::to_string(s.end - 1);
    appendf(out,
            "%-8s %-10s %-7s %5d %16.0f %16.0f %16.0f %16.0f %7.4f %12lld %12lld %12lld %12lld "
            "%12lld\n",
            s.name.c_str(), s.kind.c_str(), layers.c_str(), s.calls, s.flops.forward,
            s.flops.recompute, s.flops.backward, s.paperFlops, s.executedOverPaper(),
            static_cast<long long>(s.activationUpload),
            static_cast<long long>(s.activationDownload), static_cast<long long>(s.weightUpload),
            static_cast<long long>(s.gradDownload), static_cast<long long>(s.peakBytes));
  }
}

/// Executed and model FLOPs per step, and their ratio.
void appendFlops(std::string &out, const PlanReport &r) {
  CallFlops step;
  for (const StageReport &s : r.stages) {
    step.forward += s.flops.forward;
    step.recompute += s.flops.recompute;
    step.backward += s.flops.backward;
  }
  appendf(out, "executed FLOPs per step: %s = M x (forward %.0f + recompute %.0f + backward %.0f)\n",
          flopsText(r.executedFlops()).c_str(), step.forward, step.recompute, step.backward);
  appendf(out, "  per micro-batch: forward %s, recompute %s, backward %s\n",
          humanFlops(step.forward).c_str(), humanFlops(step.recompute).c_str(),
          humanFlops(step.backward).c_str());
  appendf(out, "paper schedule FLOPs per step: %s (each layer's forward once per pass, backward "
          "once; runtime/plan/PaperFlops.h), executed / paper: %.4f\n",
          flopsText(r.paperFlops()).c_str(),
          r.paperFlops() > 0 ? r.executedFlops() / r.paperFlops() : 0.0);
  appendf(out, "params: %.0f, N (excluding embeddings) = %.0f\n", r.params, r.nonEmbeddingParams);
  if (r.tokensPerMicroBatch == 0) {
    out += "model FLOPs per step: unknown (no embedding gather: tokens per micro-batch unknown)\n";
    return;
  }
  const long long tokens = static_cast<long long>(mulSat(r.tokensPerMicroBatch, r.microBatches));
  appendf(out, "tokens per step: T = %lld (M = %lld x %lld)\n", tokens,
          static_cast<long long>(r.microBatches), static_cast<long long>(r.tokensPerMicroBatch));
  appendf(out, "model FLOPs per step: %s = 6 N T %.0f + 3 A %.0f (PaLM: 6N + 12 L H Q T per "
          "token; A = one non-causal forward pass of the attention)\n",
          flopsText(r.modelFlops()).c_str(), 6 * r.nonEmbeddingParams * static_cast<double>(tokens),
          3 * r.modelAttentionFlops);
  appendf(out, "executed / model FLOPs: %.4f\n", r.executedFlops() / r.modelFlops());
}

/// Bytes moved per step, by direction and kind.
void appendTransfers(std::string &out, const PlanReport &r) {
  int64_t weights = 0, grads = 0, up = 0, down = 0;
  for (const StageReport &s : r.stages) {
    weights = addSat(weights, s.weightUpload);
    grads = addSat(grads, s.gradDownload);
    up = addSat(up, s.activationUpload);
    down = addSat(down, s.activationDownload);
  }
  appendf(out, "uploaded per step: %s = weights %lld + M x activations %lld\n",
          bytesText(r.uploadBytes()).c_str(), static_cast<long long>(weights),
          static_cast<long long>(up));
  appendf(out, "downloaded per step: %s = grads %lld + M x activations %lld\n",
          bytesText(r.downloadBytes()).c_str(), static_cast<long long>(grads),
          static_cast<long long>(down));
  auto byDType = [&](const char *what, const std::map<std::string, int64_t> &m) {
    appendf(out, "%s:", what);
    const char *sep = " ";
    for (const auto &[key, bytes] : m) {
      appendf(out, "%s%s %s", sep, key.c_str(), bytesText(bytes).c_str());
      sep = ", ";
    }
    appendf(out, "\n");
  };
  byDType("host weights by dtype", r.hostWeightsByDType);
  byDType("weights uploaded per step by dtype", r.weightUploadByDType);
}

/// The host arena (what a run holds in host memory), the device arena and the largest values
/// the functions write.
void appendMemory(std::string &out, const PlanReport &r, const pb::Plan &plan) {
  const pb::HostArena &h = plan.host_arena();
  appendf(out, "host arena: %s = compute-dtype weights %lld + 3 x fp32 state (master, AdamW "
          "moments) %lld + fp32 grads %lld + 2 x activations %lld (page-locked by --backend "
          "cuda; the CPU backend adds a device arena per worker)\n",
          bytesText(static_cast<int64_t>(hostArenaBytes(plan))).c_str(),
          static_cast<long long>(h.weights()), static_cast<long long>(h.state()),
          static_cast<long long>(h.grads()), static_cast<long long>(h.activations()));
  const pb::DeviceArena &d = plan.device_arena();
  appendf(out, "device arena: %s = constants %lld + 2 x slot %lld + 2 x activations %lld + "
          "workspace %lld\n",
          bytesText(static_cast<int64_t>(deviceArenaBytes(plan))).c_str(),
          static_cast<long long>(d.constants()), static_cast<long long>(d.slot()),
          static_cast<long long>(d.activations()), static_cast<long long>(d.workspace()));
  appendf(out, "largest device buffers:\n");
  for (size_t i = 0; i < r.largestBuffers.size(); ++i) {
    const BufferReport &b = r.largestBuffers[i];
    appendf(out, "  %zu. %s %s %s of %s in %s at %s\n", i + 1, bytesText(b.bytes).c_str(),
            b.type.c_str(), b.space.c_str(), b.kernel.c_str(), b.function.c_str(),
            b.location.empty() ? "?" : b.location.c_str());
  }
}

} // namespace

std::string formatPlanReport(const PlanReport &report, const pb::Plan &plan) {
  std::string out;
  appendf(out, "plan report: M = %lld micro-batches, partitioned for N = %lld workers\n",
          static_cast<long long>(report.microBatches), static_cast<long long>(report.gpus));
  appendStages(out, report);
  appendFlops(out, report);
  appendTransfers(out, report);
  appendMemory(out, report, plan);
  return out;
}

} // namespace rp::runtime
