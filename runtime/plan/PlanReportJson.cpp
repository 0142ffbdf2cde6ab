//===- PlanReportJson.cpp - The plan report as JSON -----------------------===//

#include "runtime/plan/PlanMemoryCheck.h"
#include "runtime/plan/PlanReport.h"

#include <nlohmann/json.hpp>

#include <cstdint>

namespace rp::runtime {

namespace {

using ordered_json = nlohmann::ordered_json;

/// A FLOP or element count (an integer-valued double, exact up to 2^53) as a JSON integer; a
/// number beyond int64 (only a fuzzed plan's) stays a JSON double.
ordered_json count(double v) {
  if (v >= 0 && v < 9.2e18)
    return static_cast<int64_t>(v);
  return v;
}

ordered_json stageJson(const StageReport &s) {
  ordered_json j;
  j["name"] = s.name;
  j["kind"] = s.kind;
  j["layers"] = {s.begin, s.end};
  j["calls_per_micro_batch"] = s.calls;
  j["flops_per_micro_batch"] = {{"forward", count(s.flops.forward)},
                                {"recompute", count(s.flops.recompute)},
                                {"backward", count(s.flops.backward)}};
  j["paper_flops_per_micro_batch"] = count(s.paperFlops);
  j["executed_over_paper"] = s.executedOverPaper();
  j["activation_upload_bytes_per_micro_batch"] = s.activationUpload;
  j["activation_download_bytes_per_micro_batch"] = s.activationDownload;
  j["weight_upload_bytes"] = s.weightUpload;
  j["grad_download_bytes"] = s.gradDownload;
  j["peak_bytes"] = s.peakBytes;
  return j;
}

} // namespace

std::string formatPlanReportJson(const PlanReport &r, const rp::plan::Plan &plan) {
  ordered_json j;
  j["micro_batches"] = r.microBatches;
  j["gpus"] = r.gpus;
  j["stages"] = ordered_json::array();
  for (const StageReport &s : r.stages)
    j["stages"].push_back(stageJson(s));
  const double model = r.modelFlops();
  j["step"] = {{"executed_flops", count(r.executedFlops())},
               {"paper_flops", count(r.paperFlops())},
               {"executed_over_paper", r.paperFlops() > 0
                                           ? ordered_json(r.executedFlops() / r.paperFlops())
                                           : ordered_json(nullptr)},
               {"model_flops", count(model)},
               {"executed_over_model", model > 0 ? ordered_json(r.executedFlops() / model)
                                                 : ordered_json(nullptr)},
               {"tokens", count(static_cast<double>(r.tokensPerMicroBatch) *
                                static_cast<double>(r.microBatches))},
               {"params", count(r.params)},
               {"non_embedding_params", count(r.nonEmbeddingParams)},
               {"model_attention_flops", count(r.modelAttentionFlops)},
               {"upload_bytes", r.uploadBytes()},
               {"download_bytes", r.downloadBytes()}};
  const rp::plan::HostArena &h = plan.host_arena();
  j["host_arena"] = {{"bytes", hostArenaBytes(plan)},
                     {"weights", h.weights()},
                     {"state", h.state()},
                     {"grads", h.grads()},
                     {"activations", h.activations()}};
  j["host_weights_by_dtype"] = r.hostWeightsByDType;
  j["weight_upload_bytes_by_dtype"] = r.weightUploadByDType;
  const rp::plan::DeviceArena &d = plan.device_arena();
  j["device_arena"] = {{"bytes", deviceArenaBytes(plan)},
                       {"constants", d.constants()},
                       {"slot", d.slot()},
                       {"activations", d.activations()},
                       {"workspace", d.workspace()}};
  j["largest_buffers"] = ordered_json::array();
  for (const BufferReport &b : r.largestBuffers)
    j["largest_buffers"].push_back({{"bytes", b.bytes},
                                    {"type", b.type},
                                    {"space", b.space},
                                    {"function", b.function},
                                    {"kernel", b.kernel},
                                    {"location", b.location}});
  j["functions"] = ordered_json::array();
  for (const FunctionFlops &f : r.functions)
    j["functions"].push_back({{"name", f.name},
                              {"flops", count(f.total())},
                              {"instruction_flops", formatInstructionFlops(f.instructions)}});
  return j.dump(1) + "\n";
}

} // namespace rp::runtime
