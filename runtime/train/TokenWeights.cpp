//===- TokenWeights.cpp - Token-weighted losses and backward seeds --------===//

#include "runtime/train/TokenWeights.h"

#include <cstddef>

namespace rp::runtime {

namespace {

int64_t totalOf(const std::vector<int64_t> &trained) {
  int64_t total = 0;
  for (int64_t n : trained)
    total += n;
  return total;
}

} // namespace

std::vector<float> lossSeeds(const std::vector<int64_t> &trained, double scale) {
  const int64_t total = totalOf(trained);
  const double m = static_cast<double>(trained.size());
  std::vector<float> seeds;
  seeds.reserve(trained.size());
  for (int64_t n : trained)
    seeds.push_back(total > 0 ? static_cast<float>(scale * (m * static_cast<double>(n)) /
                                                   static_cast<double>(total))
                              : 0.0f);
  return seeds;
}

double tokenWeightedLoss(const std::vector<float> &losses, const std::vector<int64_t> &trained) {
  const int64_t total = totalOf(trained);
  if (total <= 0)
    return 0;
  double sum = 0;
  for (size_t m = 0; m < losses.size() && m < trained.size(); ++m)
    if (trained[m] > 0)
      sum += static_cast<double>(trained[m]) * static_cast<double>(losses[m]);
  return sum / static_cast<double>(total);
}

} // namespace rp::runtime
