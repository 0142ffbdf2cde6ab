//===- PackedMask.h - recognising block-diagonal causal masks ---*- C++ -*-===//
//
// Whether a mask of attention scores `[B or 1, 1..., S, S]` is the block-diagonal causal mask
// that transformers builds for packed rows (several documents per row) from the position ids
// `pos` `[B, S]`, a function argument: documents are the runs of +1 position steps
// (transformers' find_packed_sequence_indices: doc[b, t] counts the steps t' <= t with
// pos[b, t'] - pos[b, t' - 1] != 1), and query i sees key j exactly when
//   doc[b, i] == doc[b, j], j <= i, and (window == 0 or i - j < window)
// (transformers remaps the causal and sliding-window conditions to the positions; inside one
// document pos[i] - pos[j] = i - j, so the conditions are the ones above). The mask is in the
// additive or the boolean form of CausalMask.h.
//
// The mask is a function of the positions, computed by graph ops from constants and `pos`;
// it is recognised by evaluating it on the reference interpreter (dialects/Graph/Eval) for
// probe positions and comparing every element with the definition. The probes: one document
// per row (positions 0..S-1, which gives the window: the count of keys the last query keeps);
// every token its own document (all positions 0); seeded documents of random lengths starting
// at position 0; the same starting at random positions (documents are told apart by their
// steps, not by a restart at 0); and, with B > 1, different documents in every row. A mask
// that matches the definition on every probe is taken. This is evidence, not proof: a mask that
// differed only on position patterns no probe shows would be taken too; the probes cover the
// boundary cases (documents of one token, a document at either end of a row, adjacent
// documents whose positions happen to continue).
//
//===----------------------------------------------------------------------===//

#ifndef RP_PASSES_ANALYSIS_PACKEDMASK_H
#define RP_PASSES_ANALYSIS_PACKEDMASK_H

#include "mlir/IR/Value.h"

#include <cstdint>
#include <optional>

namespace mlir::rp {

/// A block-diagonal causal mask: the position ids it is built from (a function argument,
/// integer `[B, S]`) and its window (0: none, w >= 1: each query keeps its last w keys).
struct PackedMask {
  Value positions;
  int64_t window = 0;
};

/// The most ops one mask's computation may have for the analysis to evaluate it.
constexpr int kMaxPackedMaskOps = 512;

/// `mask` as the boolean keep mask of scores `[..., seq, seq]` (true: kept), or nullopt.
std::optional<PackedMask> packedKeepMask(Value mask, int64_t seq);
/// `mask` as an additive mask of scores `[..., seq, seq]` (0: kept, <= -1e9: masked), or
/// nullopt.
std::optional<PackedMask> packedAdditiveMask(Value mask, int64_t seq);

} // namespace mlir::rp

#endif // RP_PASSES_ANALYSIS_PACKEDMASK_H
