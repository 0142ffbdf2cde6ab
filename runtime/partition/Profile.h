//===- Profile.h - Layer profiles and target descriptions -------*- C++ -*-===//
//
// The inputs of the stage partitioner (docs/ARCHITECTURE.md, "The partitioner"): one
// measured cost record per layer, and a description of the GPU the plan is for.
//
// Layer profile (JSON; times per micro-batch in milliseconds, sizes in bytes):
//
//   {
//     "layers": [
//       {"name": "block_0", "fwd_ms": 7.43, "bwd_ms": 15.83, "param_bytes": 100663296,
//        "trainable_bytes": 100663296, "act_bytes": 33554432},
//       ...
//       {"name": "tail", "fwd_ms": 22.07, "bwd_ms": 43.71, ...}
//     ],
//     "comm_ms": 1.6                                     (optional)
//   }
//
//  - Layers are in model order; the last one is the tail (final norm, LM head, loss), which
//    the partitioner always places in the fused tail stage.
//  - fwd_ms: forward time of the layer for one micro-batch.
//  - bwd_ms: backward time for one micro-batch, excluding recomputation (the library's "bwd"
//    timer, roundpipe/timer.py; the planner adds the recomputation itself).
//  - recompute_ms (optional, an rpc extension): the time of recomputing the layer's forward in
//    a backward stage; defaults to fwd_ms (full recomputation, the library's only mode).
//  - param_bytes: bytes uploaded to the GPU to run the layer (compute-dtype weights + buffers).
//  - trainable_bytes: bytes of weight gradients the layer produces (0 for a frozen layer; the
//    LoRA adapters only under LoRA). Backward stages hold them on the GPU and download them.
//  - act_bytes: bytes of the layer's output activation for one micro-batch: what crosses the
//    host when a stage boundary falls right after this layer (and, in backward, the size of the
//    gradient w.r.t. it).
//  - saved_bytes (optional, an rpc extension): bytes the layer's forward keeps for its backward
//    for one micro-batch (the residuals of rp-split-gradient and the inputs the backward reads:
//    PyTorch autograd's saved tensors). A backward stage and the fused tail hold them for each
//    of their layers from the layer's forward to its backward (CostModel.h). Absent: rpc
//    estimates it from the layer function (passes/Schedule/LayerCosts.h).
//  - comm_ms (optional): a measured time of one boundary-activation transfer (one direction,
//    one micro-batch), as in the artifact's pp-simulate inputs ("comm per hop"). When present
//    it replaces act_bytes / pcie bandwidth in the cost model.
//
// Target (JSON or a flag "key=value,key=value"):
//
//   {"name": "rtx4090", "peak_tflops": 330, "hbm_gbps": 1008, "pcie_gbps": 32,
//    "memory_bytes": 25757220864}
//
//  - pcie_gbps: host<->device bandwidth per direction, GB/s with 1 GB = 1e9 bytes (the
//    artifact's 32 GB/s for PCIe 4.0 x16). Required, > 0.
//  - memory_bytes: device memory in bytes. Required, > 0.
//  - peak_tflops, hbm_gbps: optional (0 = unknown); recorded for roofline checks (the
//    simulator's), not used by the partitioner, which works from measured times.
//
// Parsing never throws: every error is a Status whose message names the source (file name),
// the layer index (0-based, as in the JSON array) and the field:
//   "profile.json: layer 3: missing 'bwd_ms'".
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_PARTITION_PROFILE_H
#define RP_RUNTIME_PARTITION_PROFILE_H

#include "base/FormatBytes.h"
#include "base/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rp::partition {

using base::Status;
using base::StatusOr;

/// The measured costs of one layer, per micro-batch (see the file comment).
struct LayerProfile {
  std::string name;
  double fwdMs = 0;             ///< Forward time, ms.
  double bwdMs = 0;             ///< Backward time without recomputation, ms.
  double recomputeMs = 0;       ///< Recomputation time in a backward stage, ms (= fwdMs by default).
  uint64_t paramBytes = 0;      ///< Weights + buffers uploaded to run the layer, bytes.
  uint64_t trainableBytes = 0;  ///< Weight-gradient bytes produced in backward.
  uint64_t actBytes = 0;        ///< Output activation of one micro-batch, bytes.
  uint64_t workBytes = 0;       ///< Peak working memory of one micro-batch (the activations
                                ///< live at once while the layer runs), bytes; 0 = unknown.
  /// Bytes the layer's forward keeps for its backward, one micro-batch (its residuals and the
  /// inputs its backward reads); held by a backward stage or the fused tail from the layer's
  /// saving forward to its backward. nullopt = not measured: rpc fills in its estimate
  /// (passes/Schedule/LayerCosts.h), the cost model alone counts 0.
  std::optional<uint64_t> savedBytes = std::nullopt;
};

/// A whole model's profile: layers in model order, the last one being the tail.
struct Profile {
  std::vector<LayerProfile> layers;
  /// Measured time of one boundary-activation transfer (ms, one direction, one micro-batch).
  std::optional<double> commMs;
};

/// The GPU a plan is made for.
struct TargetSpec {
  std::string name;
  double peakTflops = 0;     ///< Peak dense compute, TFLOP/s (0 = unknown).
  double hbmGbps = 0;        ///< Device memory bandwidth, GB/s (0 = unknown).
  double pcieGbps = 0;       ///< Host<->device bandwidth per direction, GB/s (1e9 B/s).
  uint64_t memoryBytes = 0;  ///< Device memory, bytes.
};

/// Parses a profile from JSON `text`; `source` names it in messages (usually the file name).
/// Errors (InvalidArgument): malformed JSON, a missing or empty "layers" array, a layer that is
/// not an object, a missing field, a non-number, a negative or non-finite time, a byte count
/// that is not a non-negative integer, an unknown field, a negative comm_ms.
StatusOr<Profile> parseProfile(std::string_view text, std::string_view source);

/// Reads and parses a profile file. Errors: NotFound when the file cannot be read, otherwise
/// as parseProfile with the path as the source.
StatusOr<Profile> loadProfile(const std::string &path);

/// Validates an in-memory profile (the checks of parseProfile on values built in C++).
Status validateProfile(const Profile &profile, std::string_view source);

/// Builds a target from values (for command-line flags). Errors (InvalidArgument): empty name,
/// pcie_gbps or memory_bytes not > 0, a negative or non-finite value.
StatusOr<TargetSpec> makeTarget(std::string name, double peakTflops, double hbmGbps,
                                double pcieGbps, uint64_t memoryBytes);

/// Parses a target from JSON `text` (see the file comment); `source` names it in messages.
StatusOr<TargetSpec> parseTarget(std::string_view text, std::string_view source);

/// Reads and parses a target file. Errors: NotFound when unreadable, otherwise as parseTarget.
StatusOr<TargetSpec> loadTarget(const std::string &path);

/// The GPUs of the paper and of our benchmark by name, as `--target NAME` takes them (dense
/// bf16 tensor TFLOP/s with fp32 accumulation, memory bandwidth, effective host link per
/// direction, memory): "rtx4090" (165, 1008 GB/s, PCIe 4.0 x16 25 GB/s, 24 GiB: the paper's
/// 8x RTX 4090 server), "rtx5090" (209.5, 1792 GB/s, PCIe 5.0 x16 50 GB/s, 32 GiB), "h100"
/// (SXM: 989, 3350 GB/s, PCIe 5.0 x16 50 GB/s, 80 GiB). Sources: NVIDIA's Ada and Blackwell
/// GeForce architecture whitepapers and the H100 datasheet; the PCIe figures are what a copy
/// engine sustains, not the link's raw rate. nullopt for another name.
std::optional<TargetSpec> targetPreset(std::string_view name);

/// Parses the flag form "name=rtx4090,pcie_gbps=32,memory_bytes=24e9[,peak_tflops=..]
/// [,hbm_gbps=..]" (same fields and checks as the JSON form; numbers in C locale notation).
StatusOr<TargetSpec> parseTargetFlag(std::string_view flag);

/// "1.5 GiB", "300.0 MiB", "12.0 KiB", "17 B" (base/FormatBytes.h).
using ::rp::base::formatBytes;

} // namespace rp::partition

#endif // RP_RUNTIME_PARTITION_PROFILE_H
