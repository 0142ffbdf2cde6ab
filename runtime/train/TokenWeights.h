//===- TokenWeights.h - Token-weighted losses and backward seeds -*- C++ -*-===//
//
// The loss of a training step is the mean over the step's trained (unmasked) labels across all
// M micro-batches, not the mean of the micro-batch means. Micro-batch m's graph loss is the
// mean over its own n_m trained labels (cross-entropy `mean`), so with N = sum_m n_m
//   step loss      = sum_m n_m * loss_m / N                 (micro-batches with n_m = 0 skipped)
//   step gradient  = sum_m (n_m / N) * grad loss_m
// The fused tail's backward takes its seed as an argument (the plan's LOSS_SEED buffer), and
// the trainer fills seed_m = S * M * n_m / N (S: the loss scale, 1 without one); the host keeps
// its gradient scale 1 / (M * S) (Executor.cpp), so the optimizer sees
// sum_m (S M n_m / N) grad loss_m / (M S) = the step gradient above. With equal n_m (unmasked
// data) seed_m is exactly S, so the arithmetic of unmasked runs is that of a constant seed.
// rp-run and rp-ref --train both call these functions, so they stay bit-identical.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_TRAIN_TOKENWEIGHTS_H
#define RP_RUNTIME_TRAIN_TOKENWEIGHTS_H

#include <cstdint>
#include <vector>

namespace rp::runtime {

/// seed_m = float(scale * M * n_m / N) for the M = trained.size() micro-batches (computed in
/// double, rounded once); every seed is 0 when N = 0 (no trained label in the step: zero
/// gradients, not NaN). `trained` holds n_m >= 0.
std::vector<float> lossSeeds(const std::vector<int64_t> &trained, double scale = 1.0);

/// sum_m n_m * loss_m / N in double over the micro-batches with n_m > 0 (their loss is NaN when
/// no label is trained, and is skipped); 0 when N = 0. losses.size() == trained.size().
double tokenWeightedLoss(const std::vector<float> &losses, const std::vector<int64_t> &trained);

} // namespace rp::runtime

#endif // RP_RUNTIME_TRAIN_TOKENWEIGHTS_H
