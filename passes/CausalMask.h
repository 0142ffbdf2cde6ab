//===- CausalMask.h - recognising causal attention masks --------*- C++ -*-===//
//
// Whether a value is the causal mask of attention scores `[..., S, S]` (query i may see key
// j exactly when j <= i), in either form the exporters write:
//   - additive: scores + m, m = 0 for j <= i and masked (<= -1e9: -inf, finfo.min, -1e9)
//     above; usually m = where(keep, 0, -inf);
//   - boolean: where(keep, scores, fill), keep = (j <= i), fill masked everywhere.
// A folded constant mask is read in place. A mask the importer left as runtime ops (at
// sequences past ImportOptions::foldLimit) is evaluated element by element through
// LazyElements: every (i, j), for every index of the leading dims along which the mask may
// vary, is checked, O(S^2) scalar evaluations and no S^2 allocation. A mask that depends on
// a graph input or a param is never causal: its value is unknown at compile time.
//
//===----------------------------------------------------------------------===//

#ifndef RP_PASSES_CAUSALMASK_H
#define RP_PASSES_CAUSALMASK_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <utility>

namespace mlir::rp {

/// Masked scores at or below this count as -inf (PyTorch exports use -inf, finfo.min or
/// -1e9; exp(-1e9 - max) is 0 in f32 and f64 alike).
constexpr double kMaskedAt = -1e9;

/// The most element evaluations one unfolded mask may take (2^28: a 16 K-token [S, S] mask).
constexpr int64_t kMaxMaskEvaluations = int64_t{1} << 28;

/// Recognises causal masks and remembers its answers per value, so that a boolean mask that
/// every layer reads is evaluated once. Rewrites keep what a live value means, so an answer
/// stays true while its value lives; a rewrite that erases or changes an op must call
/// forget() on it (a new op may reuse the address of an erased one).
class CausalMaskRecognizer {
public:
  /// Whether `mask` is an additive causal mask for scores `[..., seq, seq]`.
  bool isAdditive(Value mask, int64_t seq);
  /// Whether `where(keep, scores, fill)` masks scores `[..., seq, seq]` causally: `keep` a
  /// lower triangle (true for j <= i) and every element of `fill` masked.
  bool isKeepWhere(Value keep, Value fill, int64_t seq);
  /// Drops what is known about the results of `op`.
  void forget(Operation *op);

private:
  enum Form { Additive, Keep };
  llvm::DenseMap<std::pair<Value, int>, bool> known;

  bool isKeep(Value keep, int64_t seq);
  bool isAdditiveUncached(Value mask, int64_t seq);
};

} // namespace mlir::rp

#endif // RP_PASSES_CAUSALMASK_H
