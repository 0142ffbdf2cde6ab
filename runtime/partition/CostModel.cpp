//===- CostModel.cpp - Stage costs for the RoundPipe partitioner ----------===//

#include "runtime/partition/CostModel.h"

#include <algorithm>
#include <cmath>

namespace rp::partition {

using base::invalidArgument;

const char *stageKindName(StageKind kind) {
  switch (kind) {
  case StageKind::Forward:
    return "forward";
  case StageKind::Backward:
    return "backward";
  case StageKind::FusedTail:
    return "fused_tail";
  }
  return "<invalid stage kind>";
}

StatusOr<CostModel> CostModel::create(const Profile &profile, double pcieGbps,
                                      int numMicroBatches, ResidualLifetime residuals) {
  RP_RETURN_IF_ERROR(validateProfile(profile, "profile"));
  if (!std::isfinite(pcieGbps) || pcieGbps <= 0)
    return invalidArgument("cost model: PCIe bandwidth must be a positive number of GB/s, got " +
                           std::to_string(pcieGbps));
  if (numMicroBatches < 1)
    return invalidArgument("cost model: the number of micro-batches must be at least 1, got " +
                           std::to_string(numMicroBatches));
  CostModel m;
  m.layers_ = profile.layers;
  m.commMs_ = profile.commMs;
  m.pcieGbps_ = pcieGbps;
  m.numMicroBatches_ = numMicroBatches;
  m.residuals_ = residuals;
  size_t n = m.layers_.size();
  m.fwd_.assign(n + 1, 0);
  m.bwdRe_.assign(n + 1, 0);
  m.fused_.assign(n + 1, 0);
  m.param_.assign(n + 1, 0);
  m.trainable_.assign(n + 1, 0);
  m.saved_.assign(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    const LayerProfile &l = m.layers_[i];
    m.fwd_[i + 1] = m.fwd_[i] + l.fwdMs;
    m.bwdRe_[i + 1] = m.bwdRe_[i] + l.recomputeMs + l.bwdMs;
    m.fused_[i + 1] = m.fused_[i] + l.fwdMs + l.bwdMs;
    m.param_[i + 1] = m.param_[i] + l.paramBytes;
    m.trainable_[i + 1] = m.trainable_[i] + l.trainableBytes;
    m.saved_[i + 1] = m.saved_[i] + l.savedBytes.value_or(0);
  }
  return m;
}

double CostModel::layerBackwardMs(int i) const {
  const LayerProfile &l = layers_[static_cast<size_t>(i)];
  if (i == numLayers() - 1)
    return l.fwdMs + l.bwdMs;
  return l.recomputeMs + l.bwdMs;
}

double CostModel::hopMs(int i) const {
  if (i < 0)
    return 0;
  if (commMs_)
    return *commMs_;
  return bytesToMs(static_cast<double>(layers_[static_cast<size_t>(i)].actBytes));
}

double CostModel::computeMs(StageKind kind, int begin, int end) const {
  size_t b = static_cast<size_t>(begin), e = static_cast<size_t>(end);
  switch (kind) {
  case StageKind::Forward:
    return fwd_[e] - fwd_[b];
  case StageKind::Backward:
    return bwdRe_[e] - bwdRe_[b];
  case StageKind::FusedTail:
    return fused_[e] - fused_[b];
  }
  return 0;
}

uint64_t CostModel::memoryBytes(StageKind kind, int begin, int end) const {
  size_t b = static_cast<size_t>(begin), e = static_cast<size_t>(end);
  uint64_t bytes = param_[e] - param_[b];
  if (kind != StageKind::Forward)
    bytes += trainable_[e] - trainable_[b];
  // The layers of a stage run one after another: the working set is the largest one's.
  uint64_t work = 0;
  for (size_t i = b; i < e; ++i)
    work = std::max(work, layers_[i].workBytes);
  return bytes + work + residualBytes(kind, begin, end);
}

uint64_t CostModel::residualBytes(StageKind kind, int begin, int end) const {
  size_t b = static_cast<size_t>(begin), e = static_cast<size_t>(end);
  switch (kind) {
  case StageKind::Forward:
    return 0;
  case StageKind::Backward:
    if (residuals_ == ResidualLifetime::Layer) {
      uint64_t largest = 0;
      for (size_t i = b; i < e; ++i)
        largest = std::max(largest, layers_[i].savedBytes.value_or(0));
      return kLiveMicroBatches * largest;
    }
    return kLiveMicroBatches * (saved_[e] - saved_[b]);
  case StageKind::FusedTail:
    return kLiveMicroBatches * (saved_[e] - saved_[b]);
  }
  return 0;
}

StageCost CostModel::cost(StageKind kind, int begin, int end) const {
  size_t b = static_cast<size_t>(begin), e = static_cast<size_t>(end);
  const double m = static_cast<double>(numMicroBatches_);
  StageCost c;
  c.computeMs = computeMs(kind, begin, end);
  c.memoryBytes = memoryBytes(kind, begin, end);
  double weightsIn = bytesToMs(static_cast<double>(param_[e] - param_[b])) / m;
  double gradsOut = bytesToMs(static_cast<double>(trainable_[e] - trainable_[b])) / m;
  double in = hopMs(begin - 1);
  switch (kind) {
  case StageKind::Forward:
    c.h2dMs = weightsIn + in;
    c.d2hMs = hopMs(end - 1);
    break;
  case StageKind::Backward:
    c.h2dMs = weightsIn + in + hopMs(end - 1);
    c.d2hMs = gradsOut + in;
    break;
  case StageKind::FusedTail:
    c.h2dMs = weightsIn + in;
    c.d2hMs = gradsOut + in;
    break;
  }
  c.timeMs = std::max({c.computeMs, c.h2dMs, c.d2hMs});
  return c;
}

} // namespace rp::partition
