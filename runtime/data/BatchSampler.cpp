//===- BatchSampler.cpp - Causal-LM batches from a token sequence ---------===//

#include "runtime/data/BatchSampler.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace rp::runtime {
namespace {

Status checkOutputs(DType tokenDType, const void *tokens, DType labelDType, const void *labels,
                    DType positionDType) {
  const std::pair<const char *, DType> outputs[] = {
      {"token", tokenDType}, {"label", labelDType}, {"position", positionDType}};
  for (const auto &[what, dtype] : outputs)
    if (dtype != DType::I64 && dtype != DType::I32)
      return invalidArgument(std::string("batch sampler: ") + what + " dtype " +
                             dtypeName(dtype) + " is not i64 or i32");
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

/// Writes `value` as `dtype` (I64 or I32) to element `at` of `dst`.
void writeId(int64_t value, DType dtype, void *dst, int64_t at) {
  if (dtype == DType::I64)
    static_cast<int64_t *>(dst)[at] = value;
  else
    static_cast<int32_t *>(dst)[at] = static_cast<int32_t>(value);
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
  if (data.packed())
    return createPacked(data, batch, seq, seed, evalFraction);
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

StatusOr<BatchSampler> BatchSampler::createPacked(const TokenData &data, int64_t batch,
                                                  int64_t seq, uint64_t seed,
                                                  double evalFraction) {
  const int64_t n = static_cast<int64_t>(data.tokens.size());
  if (seq != data.rowLength)
    return invalidArgument(data.path + " is packed into rows of " +
                           std::to_string(data.rowLength) + " tokens, but the plan's sequence "
                           "is " + std::to_string(seq) + " (prepare the data with --seq " +
                           std::to_string(seq) + ")");
  if (data.lossMask.size() != data.tokens.size() || data.positions.size() != data.tokens.size())
    return invalidArgument(data.path + ": a packed file needs a loss mask and a position per "
                                       "token");
  const int64_t rows = n / seq;
  int64_t evalRows = data.evalRows;
  if (evalRows == 0) {
    evalRows = static_cast<int64_t>(std::floor(static_cast<double>(rows) * evalFraction));
    if (evalRows < batch || rows - evalRows < 1)
      evalRows = 0;
  }
  if (rows - evalRows < 1)
    return invalidArgument(data.path + ": all " + std::to_string(rows) +
                           " rows are held out for evaluation; none is left to train on");
  return BatchSampler(&data, batch, seq, seed, (rows - evalRows) * seq, evalRows * seq);
}

int64_t BatchSampler::fillRow(int64_t row, int64_t start, DType tokenDType, void *tokens,
                              DType labelDType, void *labels, DType positionDType,
                              void *positions) const {
  const bool packed = data_->packed();
  const uint32_t *w = data_->tokens.data() + start;
  writeIds(w, seq_, tokenDType, tokens, row * seq_);
  if (positions) {
    if (packed)
      writeIds(data_->positions.data() + start, seq_, positionDType, positions, row * seq_);
    else
      for (int64_t t = 0; t < seq_; ++t)
        writeId(t, positionDType, positions, row * seq_ + t);
  }
  // A packed row's last label would be the next row's first token.
  const int64_t labelsInRow = packed ? seq_ - 1 : seq_;
  writeIds(w + 1, labelsInRow, labelDType, labels, row * seq_);
  if (packed)
    writeId(ignoreIndex_, labelDType, labels, row * seq_ + seq_ - 1);
  if (data_->lossMask.empty())
    return seq_;
  // Labels whose token the mask leaves out, or that start another document, become the loss's
  // ignore_index.
  const uint8_t *mask = data_->lossMask.data() + start + 1;
  const uint32_t *next = packed ? data_->positions.data() + start + 1 : nullptr;
  int64_t trained = 0;
  for (int64_t t = 0; t < labelsInRow; ++t) {
    if (mask[t] && (!next || next[t] != 0))
      ++trained;
    else
      writeId(ignoreIndex_, labelDType, labels, row * seq_ + t);
  }
  return trained;
}

Status BatchSampler::fillTrain(int64_t step, int64_t microBatch, DType tokenDType, void *tokens,
                               DType labelDType, void *labels, int64_t *trained,
                               DType positionDType, void *positions) const {
  RP_RETURN_IF_ERROR(checkOutputs(tokenDType, tokens, labelDType, labels, positionDType));
  if (step < 0 || microBatch < 0)
    return invalidArgument("batch sampler: step " + std::to_string(step) + " and micro-batch " +
                           std::to_string(microBatch) + " must not be negative");
  // Window starts, or (packed) training rows.
  const bool packed = data_->packed();
  const uint64_t range = static_cast<uint64_t>(packed ? trainTokens_ / seq_ : trainTokens_ - seq_);
  const uint64_t key = splitmix64(splitmix64(splitmix64(seed_) ^ static_cast<uint64_t>(step)) ^
                                  static_cast<uint64_t>(microBatch));
  int64_t count = 0;
  for (int64_t r = 0; r < batch_; ++r) {
    const uint64_t h = splitmix64(key ^ static_cast<uint64_t>(r));
    const int64_t drawn = static_cast<int64_t>(mapToRange(h, range));
    count += fillRow(r, packed ? drawn * seq_ : drawn, tokenDType, tokens, labelDType, labels,
                     positionDType, positions);
  }
  if (trained)
    *trained = count;
  return okStatus();
}

int64_t BatchSampler::evalBatches() const {
  if (evalTokens_ == 0)
    return 0;
  if (data_->packed())
    return evalTokens_ / seq_ / batch_;
  return (evalTokens_ - 1) / seq_ / batch_;
}

Status BatchSampler::fillEval(int64_t index, DType tokenDType, void *tokens, DType labelDType,
                              void *labels, int64_t *trained, DType positionDType,
                              void *positions) const {
  RP_RETURN_IF_ERROR(checkOutputs(tokenDType, tokens, labelDType, labels, positionDType));
  if (index < 0 || index >= evalBatches())
    return outOfRange(data_->path + ": eval batch " + std::to_string(index) +
                      " is outside [0, " + std::to_string(evalBatches()) + ")");
  int64_t count = 0;
  for (int64_t r = 0; r < batch_; ++r)
    count += fillRow(r, trainTokens_ + (index * batch_ + r) * seq_, tokenDType, tokens,
                     labelDType, labels, positionDType, positions);
  if (trained)
    *trained = count;
  return okStatus();
}

Status checkPositionFeed(const TokenData &data, bool hasPositionInput,
                         int64_t positionTableSize, int64_t seq) {
  if (data.packed() && !hasPositionInput)
    return invalidArgument(data.path + " packs several documents into each row of " +
                           std::to_string(data.rowLength) +
                           " tokens, but the model has no `position_ids` input: each document "
                           "would attend to the ones before it in its row (export the model "
                           "with position_ids, or prepare the data without --seq)");
  if (!hasPositionInput || positionTableSize <= 0)
    return okStatus();
  int64_t longest = seq;
  if (data.packed()) {
    longest = 0;
    for (uint32_t p : data.positions)
      longest = std::max<int64_t>(longest, static_cast<int64_t>(p) + 1);
  }
  if (longest > positionTableSize)
    return invalidArgument(data.path + ": a document of " + std::to_string(longest) +
                           " positions, but the model's position table holds " +
                           std::to_string(positionTableSize));
  return okStatus();
}

} // namespace rp::runtime
