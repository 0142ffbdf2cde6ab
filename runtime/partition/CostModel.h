//===- CostModel.h - Stage costs for the RoundPipe partitioner --*- C++ -*-===//
//
// Turns a layer profile (Profile.h) into the cost of any candidate stage, a contiguous layer
// range [begin, end), in O(1) through prefix sums. Three kinds of stage (docs/ARCHITECTURE.md):
//
//   forward     [b, e), e < L:  runs fwd of each layer.
//   backward    [b, e), e < L:  recomputes the forward from the saved stage input, then runs
//                               the backward: sum(recompute_ms + bwd_ms).
//   fused tail  [b, L):         forward + loss + backward in one stage with no recomputation:
//                               sum(fwd_ms + bwd_ms) (the library's fused tail).
//
// All times are per micro-batch, in ms. A job runs one stage for all M micro-batches after a
// single weight upload, so per micro-batch the weight traffic is amortised by M.
//
// Transfer model (the library's placement and stream layout; docs/ARCHITECTURE.md):
// every hop between stages goes through host memory; PCIe is full duplex, so the host-to-device
// (H2D) and device-to-host (D2H) directions are separate resources, each overlapped with compute
// by the runtime's stream layout (H2D(m+1) || compute(m) || D2H(m-1)). Per micro-batch:
//
//   hop(l)  = comm_ms when the profile gives it, else act_bytes[l] / pcie   (boundary after l)
//   W(b,e)  = sum param_bytes / pcie / M         (weights in, once per job)
//   G(b,e)  = sum trainable_bytes / pcie / M     (weight gradients out, once per job)
//
//   forward  : H2D = W + hop(b-1)               D2H = hop(e-1)
//   backward : H2D = W + hop(b-1) + hop(e-1)     D2H = G + hop(b-1)
//              (saved stage input and output gradient in; input gradient out)
//   fused    : H2D = W + hop(b-1)               D2H = G + hop(b-1)
//   (hop(-1) = 0: the token inputs and labels of layer 0 are negligible.)
//
//   stage time = max(compute, H2D, D2H)
//
// pcie is the target's per-direction bandwidth, 1 GB/s = 1e6 bytes/ms. Simplifications, stated:
// (1) the weights of a job are prefetched during the previous job on the same GPU, so the rule
// assumes steady state with jobs of similar length; (2) the forward pass's download of the
// recomputation checkpoints that fall inside a forward stage is not charged (it couples the two
// partitions; it is one activation per backward stage, small next to the weights); (3) host
// bandwidth sharing between GPUs is not modelled.
//
// Memory of a stage on the GPU (what the partitioner bounds by half the model memory limit,
// because of the prefetch double buffer): forward = sum param_bytes; backward and fused =
// sum(param_bytes + trainable_bytes) (gradient buffers), as `layer_size` / `layer_bwd_size` in
// the library's ModelExecutePlan.auto; each plus the largest work_bytes of its layers. A
// backward stage and the fused tail also hold residuals (saved_bytes): each layer's saving
// forward runs bottom-up and its backward top-down, so every layer's residuals of a micro-batch
// are live at once, and the executor keeps two micro-batches' activation sets on a device
// (runtime/exec/Executor.h: set m's parity; rp-plan-memory's 2 x activations):
//
//   backward, fused : + kLiveMicroBatches x sum saved_bytes
//   backward, ResidualLifetime::Layer (rpc-compile --recompute layer: each layer's forward
//   runs right before its backward) : + kLiveMicroBatches x max saved_bytes
//
// Forward stages keep no residuals (their boundary outputs go to the host).
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_PARTITION_COSTMODEL_H
#define RP_RUNTIME_PARTITION_COSTMODEL_H

#include "runtime/partition/Profile.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rp::partition {

/// What a stage runs.
enum class StageKind {
  Forward,   ///< Forward of [b, e), e < L.
  Backward,  ///< Recompute + backward of [b, e), e < L.
  FusedTail, ///< Forward + loss + backward of [b, L), no recomputation.
};

/// "forward", "backward", "fused_tail".
const char *stageKindName(StageKind kind);

/// How long a backward stage keeps its layers' residuals (the lowering's recomputation grain;
/// the fused tail always keeps them all).
enum class ResidualLifetime {
  Stage, ///< Every saving forward bottom-up, then every backward: all live at once.
  Layer, ///< Each layer's saving forward right before its backward: one layer's at a time.
};

/// Micro-batches whose activation sets a device holds at once (the executor's two sets).
constexpr uint64_t kLiveMicroBatches = 2;

/// The estimated cost of one stage, per micro-batch.
struct StageCost {
  double computeMs = 0; ///< Kernel time.
  double h2dMs = 0;     ///< Host-to-device transfer time (weights amortised over M).
  double d2hMs = 0;     ///< Device-to-host transfer time (gradients amortised over M).
  double timeMs = 0;    ///< max(computeMs, h2dMs, d2hMs).
  uint64_t memoryBytes = 0; ///< Weights (+ gradient buffers and residuals in backward) + the
                            ///< largest working set of its layers, on the GPU.
};

/// Stage costs of one profile on one target with M micro-batches per job.
class CostModel {
public:
  /// Errors (InvalidArgument): an invalid profile (validateProfile), pcieGbps not > 0,
  /// numMicroBatches < 1. A layer without saved_bytes counts 0.
  static StatusOr<CostModel> create(const Profile &profile, double pcieGbps, int numMicroBatches,
                                    ResidualLifetime residuals = ResidualLifetime::Stage);

  int numLayers() const { return static_cast<int>(layers_.size()); }
  const LayerProfile &layer(int i) const { return layers_[static_cast<size_t>(i)]; }
  int numMicroBatches() const { return numMicroBatches_; }
  double pcieGbps() const { return pcieGbps_; }

  /// Compute time of a stage, ms per micro-batch. Requires 0 <= begin < end <= L; a FusedTail
  /// stage ends at L (not checked: the partitioner only asks for valid ranges).
  double computeMs(StageKind kind, int begin, int end) const;
  /// GPU memory of a stage, bytes.
  uint64_t memoryBytes(StageKind kind, int begin, int end) const;
  /// The full cost, transfers included.
  StageCost cost(StageKind kind, int begin, int end) const;
  /// The stage's time with transfers (cost().timeMs), or compute only.
  double timeMs(StageKind kind, int begin, int end, bool withTransfer) const {
    return withTransfer ? cost(kind, begin, end).timeMs : computeMs(kind, begin, end);
  }

  /// The library's per-layer planning inputs: forward work fwd_ms; backward work
  /// recompute_ms + bwd_ms (fwd_ms + bwd_ms for the tail layer, which is never recomputed).
  double layerForwardMs(int i) const { return layers_[static_cast<size_t>(i)].fwdMs; }
  double layerBackwardMs(int i) const;
  /// Forward + backward without recomputation: a layer's work inside the fused tail.
  double layerFusedMs(int i) const {
    return layers_[static_cast<size_t>(i)].fwdMs + layers_[static_cast<size_t>(i)].bwdMs;
  }
  /// param_bytes (forward stages) and param_bytes + trainable_bytes (backward stages).
  uint64_t layerForwardBytes(int i) const { return layers_[static_cast<size_t>(i)].paramBytes; }
  uint64_t layerBackwardBytes(int i) const {
    return layers_[static_cast<size_t>(i)].paramBytes +
           layers_[static_cast<size_t>(i)].trainableBytes;
  }
  /// Residual bytes a backward stage or the fused tail [begin, end) holds at once on the GPU
  /// (0 for a forward stage; see the file comment).
  uint64_t residualBytes(StageKind kind, int begin, int end) const;
  ResidualLifetime residualLifetime() const { return residuals_; }
  /// Per-micro-batch time of the boundary transfer after layer i (0 for i < 0).
  double hopMs(int i) const;

private:
  CostModel() = default;
  double bytesToMs(double bytes) const { return bytes / (pcieGbps_ * 1e6); }

  std::vector<LayerProfile> layers_;
  std::optional<double> commMs_;
  double pcieGbps_ = 0;
  int numMicroBatches_ = 1;
  ResidualLifetime residuals_ = ResidualLifetime::Stage;
  // Prefix sums, size L + 1.
  std::vector<double> fwd_, bwdRe_, fused_;
  std::vector<uint64_t> param_, trainable_, saved_;
};

} // namespace rp::partition

#endif // RP_RUNTIME_PARTITION_COSTMODEL_H
