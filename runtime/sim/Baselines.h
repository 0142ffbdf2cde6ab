//===- Baselines.h - Task graphs of pipeline schedules ----------*- C++ -*-===//
//
// Generators that turn a layer profile (runtime/partition/Profile.h), N GPUs and M
// micro-batches into the task graph (runtime/sim/ScheduleSim.h) of one pipeline schedule.
// docs/SIMULATOR.md describes each model; the classic schedules and RoundPipe follow the
// authors' simulator (ITcarrot/RoundPipe-artifact pp-simulate/simulator.py), which the
// replay test checks within 1.5 bubble points.
//
// Costs of a stage, a layer range [b, e), per micro-batch (L layers, layer L-1 the tail):
//   forward    F = sum fwd_ms
//   backward   B = sum recompute_ms over the non-tail layers + sum bwd_ms (full
//                  recomputation; the tail's activations are kept, as in the artifact)
//   zb-h1      B = recompute + (1 - w) sum bwd_ms,  W = w sum bwd_ms  (w: zbWeightGradFraction)
//   RoundPipe fused tail = sum (fwd_ms + bwd_ms) of [t, L), no recomputation.
// Every hop between stages on different GPUs goes through host memory: a device-to-host copy
// on the producer's Download queue, then a host-to-device copy on the consumer's
// ActivationUpload queue, each comm_ms / 2 when the profile gives comm_ms (the artifact's
// per-hop time), else act_bytes / link bandwidth. Weights (param_bytes) and weight gradients
// (trainable_bytes) move at link bandwidth.
//
// Task labels (tests and traces rely on them): compute "F<s> mb<m>", "B<s> mb<m>",
// "W<s> mb<m>", RoundPipe recomputation "R<j> mb<m>" (the lead of "B<j> mb<m>"); stage
// indices are virtual stages (classic) or dispatch indices F_j / B_j (RoundPipe, B0 = fused
// tail); transfers "<task> in" / "<task> out", "<stage> weights", "<stage> grads".
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_SIM_BASELINES_H
#define RP_RUNTIME_SIM_BASELINES_H

#include "base/Status.h"
#include "runtime/partition/Profile.h"
#include "runtime/sim/Compare.h"
#include "runtime/sim/ScheduleSim.h"

#include <string>
#include <vector>

namespace rp::sim {

/// A contiguous range of layers [begin, end) (empty when begin == end).
struct LayerRange {
  int begin = 0;
  int end = 0;
  int size() const { return end - begin; }
};

/// A generated schedule: its task graph and a one-line description of its stages.
struct BuiltSchedule {
  TaskGraph graph;
  std::string description;
};

/// The artifact's layer units for splitting a model over statically bound stages: a layer's
/// work (F + B above; the tail: fwd + bwd) divided by the median work of the non-tail layers,
/// rounded; the tail counts at least 1 (docs/SIMULATOR.md "Layer split"). Uniform blocks are 1
/// unit each; Qwen3-1.7B's tail is 2 units, Llama-3.1-8B's 1.
std::vector<int> layerUnits(const partition::Profile &profile);

/// Splits the layers into `numStages` contiguous stages with U / numStages units each, the
/// U mod numStages stages nearest the tail holding one more; filled from the tail down, so
/// leading stages may stay empty when units run out (the artifact's published splits:
/// 1F1B Qwen3-1.7B 3,3,4,4,4,4,4,2+tail; Llama-3.1-8B 4 x 8 with the tail on the last).
std::vector<LayerRange> splitLayers(const partition::Profile &profile, int numStages);

/// v when CompareOptions::chunks is 0: max(1, floor(U / N)).
int defaultChunks(const partition::Profile &profile, int gpus);

/// GPipe: stage r on GPU r, all forwards then all backwards (micro-batches ascending).
base::StatusOr<BuiltSchedule> buildGpipe(const partition::Profile &profile,
                                            const CompareOptions &options);
/// 1F1B (PyTorch Schedule1F1B): N - r forwards, then alternately one backward and one forward.
base::StatusOr<BuiltSchedule> buildOneFOneB(const partition::Profile &profile,
                                               const CompareOptions &options);
/// Interleaved 1F1B (PyTorch ScheduleInterleaved1F1B): N x v virtual stages, stage s on GPU
/// s mod N, rounds of M / max(1, M / N) micro-batches. Error when M is not a multiple of the
/// number of rounds.
base::StatusOr<BuiltSchedule> buildInterleaved(const partition::Profile &profile,
                                                  const CompareOptions &options);
/// Looped-BFS (PyTorch ScheduleLoopedBFS): each GPU runs its v stages' forwards for all
/// micro-batches in stage order, then their backwards in reverse (micro-batches descending).
base::StatusOr<BuiltSchedule> buildLoopedBfs(const partition::Profile &profile,
                                                const CompareOptions &options);
/// ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, section 2.1): the 1F1B
/// order with each backward split into B and W; GPU r defers W by r micro-batches (W of m
/// right after B of m + r, the rest at the end), so every GPU holds N micro-batches in flight.
base::StatusOr<BuiltSchedule> buildZbH1(const partition::Profile &profile,
                                           const CompareOptions &options);
/// Mobius-like static binding with CPU offload (Feng et al., ASPLOS 2023): the Looped-BFS
/// stages and order; each stage's weights are uploaded from the host before each of its jobs
/// (prefetched while the previous job runs: two weight slots per GPU), its weight gradients
/// downloaded after its backward job, and AdamW runs on the host.
base::StatusOr<BuiltSchedule> buildMobius(const partition::Profile &profile,
                                             const CompareOptions &options);

/// RoundPipe (docs/SIMULATOR.md "RoundPipe"): forward stages `forwardSizes` (layers, from
/// layer 0), backward stages `backwardSizes` in dispatch order (the fused tail first, holding
/// the tail). Rounds of CompareOptions::roundMicroBatches micro-batches (0: min(M, N)); in a
/// round, job k runs on GPU (g0 + k) mod N, g0 = 0 for the first round and the GPU that
/// becomes free first for the next (the artifact's rule). Weights prefetched into two slots per
/// GPU, gradients downloaded per job, and when `syncOptimizer` AdamW per layer on the host.
/// Errors (InvalidArgument): sizes that are not positive (the fused tail: >= 1) or do not
/// cover the layers.
base::StatusOr<BuiltSchedule> buildRoundPipe(const partition::Profile &profile,
                                                const CompareOptions &options,
                                                const std::vector<int> &forwardSizes,
                                                const std::vector<int> &backwardSizes,
                                                bool syncOptimizer);

} // namespace rp::sim

#endif // RP_RUNTIME_SIM_BASELINES_H
