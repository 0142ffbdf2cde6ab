//===- CausalMask.h - recognising causal attention masks --------*- C++ -*-===//
//
// Whether a value is the causal mask of attention scores `[..., S, S]` (query i may see key
// j exactly when j <= i), possibly with a sliding window w (j <= i and i - j < w, as
// transformers' sliding_window_causal masks: Mistral, Gemma-2/3, GPT-OSS's sliding layers),
// in either form the exporters write:
//   - additive: scores + m, m = 0 where kept and masked (<= -1e9: -inf, finfo.min, -1e9)
//     elsewhere; usually m = where(keep, 0, -inf);
//   - boolean: where(keep, scores, fill), keep true where kept, fill masked everywhere.
// The window is read off the last row of the first [S, S] matrix (its count of kept keys)
// and then every element is checked against the band it implies, so that a band that does
// not end at the diagonal, or a window off by one in any row, is no mask. A folded constant
// mask is read in place. A mask the importer left as runtime ops (at sequences past
// ImportOptions::foldLimit) is evaluated element by element through LazyElements: every
// (i, j), for every index of the leading dims along which the mask may vary, is checked,
// O(S^2) scalar evaluations and no S^2 allocation. A mask that depends on a graph input or a
// param is never causal: its value is unknown at compile time.
//
//===----------------------------------------------------------------------===//

#ifndef RP_PASSES_ANALYSIS_CAUSALMASK_H
#define RP_PASSES_ANALYSIS_CAUSALMASK_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <optional>
#include <utility>

namespace mlir::rp {

/// Masked scores at or below this count as -inf (PyTorch exports use -inf, finfo.min or
/// -1e9; exp(-1e9 - max) is 0 in f32 and f64 alike).
constexpr double kMaskedAt = -1e9;

/// The most element evaluations one unfolded mask may take (2^28: a 16 K-token [S, S] mask).
constexpr int64_t kMaxMaskEvaluations = int64_t{1} << 28;

/// Recognises causal masks and their sliding windows, and remembers its answers per value,
/// so that a boolean mask that every layer reads is evaluated once. A band is answered as its
/// window: 0 for a plain causal mask (also a window of at least S), w >= 1 for a sliding
/// window of w keys; nullopt when the value is not such a mask. Rewrites keep what a live
/// value means, so an answer stays true while its value lives; a rewrite that erases or
/// changes an op must call forget() on it (a new op may reuse the address of an erased one).
class CausalMaskRecognizer {
public:
  /// The band of `mask` as an additive mask for scores `[..., seq, seq]`.
  std::optional<int64_t> additiveBand(Value mask, int64_t seq);
  /// The band with which `where(keep, scores, fill)` masks scores `[..., seq, seq]`: `keep`
  /// true exactly in a causal band and every element of `fill` masked.
  std::optional<int64_t> keepWhereBand(Value keep, Value fill, int64_t seq);
  /// Drops what is known about the results of `op`.
  void forget(Operation *op);

private:
  enum Form { Additive, Keep };
  llvm::DenseMap<std::pair<Value, int>, std::optional<int64_t>> known;

  std::optional<int64_t> keepBand(Value keep, int64_t seq);
  std::optional<int64_t> additiveBandUncached(Value mask, int64_t seq);
};

} // namespace mlir::rp

#endif // RP_PASSES_ANALYSIS_CAUSALMASK_H
