//===- BatchSampler.cpp - Causal-LM batches from a token sequence ---------===//

#include "runtime/data/BatchSampler.h"

#include <cmath>

namespace rp::runtime {
namespace {

Status checkOutputs(DType tokenDType, const void *tokens, DType labelDType, const void *labels) {
  for (DType dtype : {tokenDType, labelDType})
    if (dtype != DType::I64 && dtype != DType::I32)
      return invalidArgument(std::string("batch sampler: token dtype ") + dtypeName(dtype) +
                             " is not i64 or i32");
  if (!tokens || !labels)
    return invalidArgument("batch sampler: null token or label buffer");
  return okStatus();
}

/// Writes `n` ids from `src` as `dtype` (I64 or I32) to elements [at, at + n) of `dst`.
void writeIds(const uint32_t *src, int64_t n, DType dtype, void *dst, int64_t at) {
  if (dtype == DType::I64) {
    int64_t *d = static_cast<int64_t *>(dst) + at;
    for (int64_t j = 0; j < n; ++j)
      d[j] = static_cast<int64_t>(src[j]);
  } else {
    int32_t *d = static_cast<int32_t *>(dst) + at;
    for (int64_t j = 0; j < n; ++j)
      d[j] = static_cast<int32_t>(src[j]);
  }
}

/// Lemire's multiply-shift: floor(h * range / 2^64), in [0, range) for range >= 1.
uint64_t mapToRange(uint64_t h, uint64_t range) {
  __extension__ typedef unsigned __int128 U128;
  return static_cast<uint64_t>((static_cast<U128>(h) * range) >> 64);
}

} // namespace

uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

StatusOr<BatchSampler> BatchSampler::create(const TokenData &data, int64_t batch, int64_t seq,
                                            uint64_t seed, double evalFraction) {
  if (batch < 1 || seq < 1)
    return invalidArgument(data.path + ": batch " + std::to_string(batch) + " and seq " +
                           std::to_string(seq) + " must both be at least 1");
  if (!(evalFraction >= 0.0 && evalFraction < 1.0))
    return invalidArgument(data.path + ": eval fraction " + std::to_string(evalFraction) +
                           " is outside [0, 1)");
  const int64_t n = static_cast<int64_t>(data.tokens.size());
  if (seq >= n) // also keeps seq + 1 and batch * seq below overflow in the checks below
    return invalidArgument(data.path + " holds " + std::to_string(n) +
                           " tokens; one window of --seq " + std::to_string(seq) + " needs " +
                           std::to_string(seq + 1));
  int64_t evalTokens = static_cast<int64_t>(std::floor(static_cast<double>(n) * evalFraction));
  const bool evalHoldsBatch = batch <= (evalTokens - 1) / seq; // batch * seq + 1 <= evalTokens
  if (evalTokens < 1 || !evalHoldsBatch || n - evalTokens < seq + 1)
    evalTokens = 0;
  if (!data.lossMask.empty() && data.lossMask.size() != data.tokens.size())
    return invalidArgument(data.path + ": the loss mask has " +
                           std::to_string(data.lossMask.size()) + " entries for " +
                           std::to_string(n) + " tokens");
  return BatchSampler(&data, batch, seq, seed, n - evalTokens, evalTokens);
}

int64_t BatchSampler::fillRow(int64_t row, int64_t start, DType tokenDType, void *tokens,
                              DType labelDType, void *labels) const {
  const uint32_t *w = data_->tokens.data() + start;
  writeIds(w, seq_, tokenDType, tokens, row * seq_);
  writeIds(w + 1, seq_, labelDType, labels, row * seq_);
  if (data_->lossMask.empty())
    return seq_;
  // Labels whose token the mask leaves out become the loss's ignore_index.
  const uint8_t *mask = data_->lossMask.data() + start + 1;
  int64_t trained = 0;
  for (int64_t t = 0; t < seq_; ++t) {
    if (mask[t]) {
      ++trained;
    } else if (labelDType == DType::I64) {
      static_cast<int64_t *>(labels)[row * seq_ + t] = ignoreIndex_;
    } else {
      static_cast<int32_t *>(labels)[row * seq_ + t] = static_cast<int32_t>(ignoreIndex_);
    }
  }
  return trained;
}

Status BatchSampler::fillTrain(int64_t step, int64_t microBatch, DType tokenDType, void *tokens,
                               DType labelDType, void *labels, int64_t *trained) const {
  RP_RETURN_IF_ERROR(checkOutputs(tokenDType, tokens, labelDType, labels));
  if (step < 0 || microBatch < 0)
    return invalidArgument("batch sampler: step " + std::to_string(step) + " and micro-batch " +
                           std::to_string(microBatch) + " must not be negative");
  const uint64_t range = static_cast<uint64_t>(trainTokens_ - seq_);
  const uint64_t key = splitmix64(splitmix64(splitmix64(seed_) ^ static_cast<uint64_t>(step)) ^
                                  static_cast<uint64_t>(microBatch));
  int64_t count = 0;
  for (int64_t r = 0; r < batch_; ++r) {
    const uint64_t h = splitmix64(key ^ static_cast<uint64_t>(r));
    count += fillRow(r, static_cast<int64_t>(mapToRange(h, range)), tokenDType, tokens,
                     labelDType, labels);
  }
  if (trained)
    *trained = count;
  return okStatus();
}

int64_t BatchSampler::evalBatches() const {
  if (evalTokens_ == 0)
    return 0;
  return (evalTokens_ - 1) / seq_ / batch_;
}

Status BatchSampler::fillEval(int64_t index, DType tokenDType, void *tokens, DType labelDType,
                              void *labels, int64_t *trained) const {
  RP_RETURN_IF_ERROR(checkOutputs(tokenDType, tokens, labelDType, labels));
  if (index < 0 || index >= evalBatches())
    return outOfRange(data_->path + ": eval batch " + std::to_string(index) +
                      " is outside [0, " + std::to_string(evalBatches()) + ")");
  int64_t count = 0;
  for (int64_t r = 0; r < batch_; ++r)
    count += fillRow(r, trainTokens_ + (index * batch_ + r) * seq_, tokenDType, tokens,
                     labelDType, labels);
  if (trained)
    *trained = count;
  return okStatus();
}

} // namespace rp::runtime
