//===- BatchSampler.h - Causal-LM batches from a token sequence -*- C++ -*-===//
//
// Draws [batch, seq] token / label micro-batches for causal-LM training from the tokens of one
// data file (TokenFile.h). A window is seq + 1 consecutive tokens; tokens = window[0:seq],
// labels = window[1:seq+1] (labels shifted by one, as llm.c's DataLoader and nanoGPT's
// get_batch). With a loss mask (TokenData::lossMask, a masked token file), a label whose token
// the mask leaves out (mask 0: a prompt token of supervised fine-tuning data) is written as the
// loss's ignore_index (setIgnoreIndex; -100 by default, PyTorch's), so the loss skips it; the
// fill functions report how many labels are trained.
//
// Split: the last floor(evalFraction * N) of the N tokens (default 10%) are held out for
// evaluation when the training part holds at least one window (seq + 1 tokens) and the eval
// part at least one eval batch (batch * seq + 1 tokens, see fillEval); otherwise there is no
// eval split (evalTokens() == evalBatches() == 0) and training uses every token.
//
// Training draw (fillTrain), a counter-based draw: the window start of row r of micro-batch
// `microBatch` of step `step` is a pure function of (seed, step, microBatch, r), so a run
// resumed at step k draws exactly what an uninterrupted run draws, for any pool size:
//   mix64(x)  = splitmix64 finaliser (Steele, Lea, Flood 2014; Vigna's splitmix64.c):
//               z = x + 0x9E3779B97F4A7C15;
//               z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
//               z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
//               return z ^ (z >> 31)                      (all uint64, wrapping)
//   h         = mix64(mix64(mix64(mix64(seed) ^ step) ^ microBatch) ^ r)
//   start     = (h * range) >> 64  (128-bit product: Lemire's multiply-shift, no rejection;
//               bias <= range / 2^64), range = trainTokens - seq (the number of window starts)
// Row r then covers tokens [start, start + seq] of the training part [0, trainTokens).
//
// Eval windows (fillEval): eval window w (w = index * batch + r) starts at
// trainTokens + w * seq: consecutive windows overlap by one token, so the labels tile the eval
// split and every eval token but the first is a label exactly once (llm.c's layout of rows).
// evalBatches() counts the full batches; a tail shorter than a batch is not evaluated.
//
// Packed data (TokenData::packed(), a packed token file): the file's rows of S tokens hold
// whole documents, so a window is a row and seq must equal S. The eval part is the file's eval
// rows (prepare_sft.py's held-out examples), or, in a file that records none, the last
// floor(evalFraction * rows) rows under the rules above (at least one batch of eval rows and
// one training row). The training draw picks row (h * trainRows) >> 64 with h as above; eval
// batch `index` holds eval rows index * batch + r. Within a row, label t is token t + 1 when
// that token continues the same document (its position is not 0) and the loss mask keeps it,
// else the ignore_index; the row's last label is always the ignore_index (the next token
// belongs to another row). So no document is trained to predict another one's tokens.
// Positions (the optional output of fillTrain / fillEval, a plan's `position_ids` input): a
// packed row's per-token positions; for other data 0..seq-1 in every window (a window is read
// as one document, as a model without a `position_ids` input reads it).
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_DATA_BATCHSAMPLER_H
#define RP_RUNTIME_DATA_BATCHSAMPLER_H

#include "base/DType.h"
#include "base/Status.h"
#include "runtime/data/TokenFile.h"

#include <cstdint>

namespace rp::runtime {

/// The splitmix64 finaliser (mix64 above).
uint64_t splitmix64(uint64_t x);

/// Draws training and eval micro-batches (file comment). Holds a pointer to the TokenData it
/// was created from and copies no tokens: that TokenData must outlive the sampler and must not
/// change. Copyable and movable (copies share the data).
class BatchSampler {
public:
  /// A sampler over `data` for micro-batches of `batch` rows of `seq` tokens.
  /// Errors: InvalidArgument when batch or seq < 1, evalFraction is outside [0, 1), the
  /// data is shorter than one window: "FILE holds N tokens; one window of --seq S needs S+1"
  /// (S+1 written as a number), packed data whose rows are not seq tokens long, or whose rows
  /// are all held out for evaluation.
  static StatusOr<BatchSampler> create(const TokenData &data, int64_t batch, int64_t seq,
                                       uint64_t seed, double evalFraction = 0.1);

  int64_t batch() const { return batch_; }
  int64_t seq() const { return seq_; }
  /// Tokens of the training part: [0, trainTokens()).
  int64_t trainTokens() const { return trainTokens_; }
  /// Tokens of the eval part: [trainTokens(), trainTokens() + evalTokens()); 0 when none.
  int64_t evalTokens() const { return evalTokens_; }

  /// Fills training micro-batch `microBatch` (>= 0) of step `step` (>= 0) with the counter-based
  /// draw of the file comment. `tokenDType` and `labelDType` are each I64 or I32 (the plan's
  /// input dtypes, which may differ); `tokens` and `labels` each receive batch * seq elements
  /// of their dtype, row-major [batch, seq]. Token ids are converted with static_cast (check
  /// the vocabulary first: checkVocabulary).
  /// Errors: InvalidArgument for another dtype, a null pointer, or a negative step or
  /// micro-batch.
  /// `trained` (optional) receives the number of labels the loss mask keeps (batch * seq
  /// without a mask). `positions` (optional, `positionDType` I64 or I32) receives batch * seq
  /// positions (file comment).
  Status fillTrain(int64_t step, int64_t microBatch, DType tokenDType, void *tokens,
                   DType labelDType, void *labels, int64_t *trained = nullptr,
                   DType positionDType = DType::I64, void *positions = nullptr) const;
  /// fillTrain with one dtype for both.
  Status fillTrain(int64_t step, int64_t microBatch, DType dtype, void *tokens,
                   void *labels) const {
    return fillTrain(step, microBatch, dtype, tokens, dtype, labels);
  }

  /// Number of eval batches: floor(W / batch) for the W = floor((evalTokens - 1) / seq) eval
  /// windows, or the W = evalTokens / seq eval rows of packed data (0 when there is no eval
  /// split).
  int64_t evalBatches() const;

  /// The label written for a masked-out position: the plan's cross-entropy ignore_index
  /// (PlanInputs.h). Default -100.
  void setIgnoreIndex(int64_t ignoreIndex) { ignoreIndex_ = ignoreIndex; }

  /// Fills eval batch `index` (0 <= index < evalBatches()): row r holds eval window
  /// index * batch + r (file comment). Same dtypes and layout as fillTrain.
  /// Errors: OutOfRange for a bad index; InvalidArgument as fillTrain.
  Status fillEval(int64_t index, DType tokenDType, void *tokens, DType labelDType,
                  void *labels, int64_t *trained = nullptr, DType positionDType = DType::I64,
                  void *positions = nullptr) const;
  /// fillEval with one dtype for both.
  Status fillEval(int64_t index, DType dtype, void *tokens, void *labels) const {
    return fillEval(index, dtype, tokens, dtype, labels);
  }

private:
  /// create() for packed data (file comment).
  static StatusOr<BatchSampler> createPacked(const TokenData &data, int64_t batch, int64_t seq,
                                             uint64_t seed, double evalFraction);
  BatchSampler(const TokenData *data, int64_t batch, int64_t seq, uint64_t seed,
               int64_t trainTokens, int64_t evalTokens)
      : data_(data), batch_(batch), seq_(seq), seed_(seed), trainTokens_(trainTokens),
        evalTokens_(evalTokens) {}

  /// Copies row `row`: window tokens [start, start + seq) into `tokens` and
  /// [start + 1, start + seq] into `labels` (masked-out labels and, packed, labels across a
  /// document boundary: ignoreIndex_), and the positions when `positions` is set; returns the
  /// number of trained labels.
  int64_t fillRow(int64_t row, int64_t start, DType tokenDType, void *tokens, DType labelDType,
                  void *labels, DType positionDType, void *positions) const;

  const TokenData *data_;
  int64_t batch_;
  int64_t seq_;
  uint64_t seed_;
  int64_t trainTokens_;
  int64_t evalTokens_;
  int64_t ignoreIndex_ = -100;
};

/// The model input fed with positions (the export contract's optional int64 [B, S]
/// `position_ids` of packed training).
inline constexpr const char *kPositionIdsInput = "position_ids";

/// Checks that a model can be fed `data` in windows of `seq` tokens: packed data needs a
/// `position_ids` input (`hasPositionInput`), else every document would attend to the ones
/// before it in its row; with a position table of `positionTableSize` entries (0: unknown),
/// every position fed (a packed file's, or 0..seq-1) must be below it.
/// Errors: InvalidArgument naming the file and what is missing.
Status checkPositionFeed(const TokenData &data, bool hasPositionInput,
                         int64_t positionTableSize, int64_t seq);

} // namespace rp::runtime

#endif // RP_RUNTIME_DATA_BATCHSAMPLER_H
