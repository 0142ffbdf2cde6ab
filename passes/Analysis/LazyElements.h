//===- LazyElements.h - on-demand elements of constant-derived values -*- C++ -*-===//
//
// The elements of a tensor that the graph computes from constants only, evaluated one at a
// time without materialising the tensor. The ONNX importer folds a result only up to
// ImportOptions::foldLimit elements, so at long sequences an attention mask stays a chain of
// runtime ops over small index constants: `compare le, range[1, S], range[S, 1]` broadcast to
// `[B, 1, S, S]`, combined with `logical_and`, turned into `where(mask, 0, -inf)`. A
// LazyElements of such a value answers "what is element (b, h, i, j)?" by mapping the index
// through the broadcasts, reshapes and transposes down to the leaves, in O(depth) scalar work
// and O(size of the leaves) memory, so that rp-fuse-attention can check a [S, S] mask at any S.
// row() gives a whole last-dimension row at once (one loop per op over the row wherever the
// shape ops keep the last dimension), which is how the mask check reads it. Nodes whose value
// is the same at every index are folded to that value when the evaluator is built.
//
// Supported ops: graph.constant (at most kMaxLeafElements elements), graph.range,
// elementwise add/sub/mul/neg, float div, compare, logical_and/or/not, where, cast, and the
// shape ops expand, reshape, transpose, slice and trilu, all with numpy broadcasting. Element
// types: i1, integers (exact below 2^53), floats (computed in double and rounded to the
// element type after each op, as a kernel computing in that type rounds). Anything else (a
// graph input, a param, another op) makes build() return nullopt.
//
//===----------------------------------------------------------------------===//

#ifndef RP_PASSES_ANALYSIS_LAZYELEMENTS_H
#define RP_PASSES_ANALYSIS_LAZYELEMENTS_H

#include "mlir/IR/Value.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace mlir::rp {

class LazyElements {
public:
  /// The largest rank of any value in the evaluated DAG.
  static constexpr int kMaxRank = 8;
  /// The largest constant leaf copied (elements); larger constants make build() fail.
  static constexpr int64_t kMaxLeafElements = int64_t{1} << 22;
  /// The most ops in the evaluated DAG.
  static constexpr int kMaxNodes = 256;

  /// An evaluator of `root`, or nullopt when `root` is not computed from constants by the
  /// supported ops (see the file comment).
  static std::optional<LazyElements> build(Value root);

  /// The shape of the root value.
  llvm::ArrayRef<int64_t> shape() const;
  /// The root's dimensions along which its elements may change: on any other dimension the
  /// element equals the one at index 0 (a conservative superset).
  const llvm::SmallBitVector &varyingDims() const;
  /// The root's element at `index` (its rank, in bounds): i1 as 0 or 1, integers and floats
  /// as their value.
  double at(llvm::ArrayRef<int64_t> index) const;
  /// The root's elements along its last dimension at `index` (its rank, at least 1; the last
  /// component is ignored) into `out` (the last dimension's size): the same values as at(),
  /// in O(depth x row) work with one pass per op over the row.
  void row(llvm::ArrayRef<int64_t> index, llvm::MutableArrayRef<double> out) const;

  enum class Kind;
  struct Node;

private:
  std::vector<Node> nodes; // operands before users; the root last
  double eval(unsigned node, const int64_t *index) const;
  void evalRow(unsigned node, const int64_t *index, double *out) const;
  void evalElementwiseRow(const Node &node, const int64_t *index, double *out) const;
  friend class LazyElementsBuilder;
};

enum class LazyElements::Kind {
  Constant, Range, Add, Sub, Mul, Div, Neg, Compare, And, Or, Not, Where, Cast,
  Broadcast, Reshape, Transpose, Slice, Trilu
};

struct LazyElements::Node {
  Kind kind;
  llvm::SmallVector<int64_t, 4> shape;
  llvm::SmallVector<unsigned, 3> operands;
  /// How results round: f32 to float, other narrow floats (f16, bf16) to `semantics`,
  /// integers toward zero, i1 to 0/1, f64 not at all.
  enum class Rounding { None, F32, Narrow, Integer, Bool } rounding = Rounding::None;
  const llvm::fltSemantics *semantics = nullptr; ///< Narrow

  llvm::SmallBitVector varying;
  int predicate = 0;                      ///< Compare: graph::CompareKind
  std::vector<double> values;             ///< Constant: row-major (one value when splat)
  double start = 0, delta = 0;            ///< Range
  llvm::SmallVector<int64_t, 4> perm;     ///< Transpose
  llvm::SmallVector<int64_t, 4> starts;   ///< Slice: per dimension (0 when unlisted)
  llvm::SmallVector<int64_t, 4> steps;    ///< Slice: per dimension (1 when unlisted)
  int64_t k = 0;                          ///< Trilu
  bool upper = false;                     ///< Trilu
};

} // namespace mlir::rp

#endif // RP_PASSES_ANALYSIS_LAZYELEMENTS_H
