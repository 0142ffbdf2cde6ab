//===- ShapeInference.h - shape rules of the graph ops ----------*- C++ -*-===//
//
// The shape rules of the `graph` ops as plain functions on static shapes, so that the ops'
// type inference, their verifiers and the ONNX importer share one implementation and one set
// of messages. Each rule returns the result shape, or an error whose message is lower case and
// states what was expected and what was found.
//
//===----------------------------------------------------------------------===//

#ifndef RP_DIALECTS_GRAPH_IR_SHAPEINFERENCE_H
#define RP_DIALECTS_GRAPH_IR_SHAPEINFERENCE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace mlir::rp::graph {

using Shape = llvm::SmallVector<int64_t, 6>;

/// Formats a shape for diagnostics: `[2, 8, 64]`.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// numpy/ONNX multidirectional broadcasting: shapes align at their trailing dimensions, and
/// each pair of dimensions is equal or one of them is 1.
llvm::Expected<Shape> broadcastShapes(llvm::ArrayRef<llvm::ArrayRef<int64_t>> shapes);

/// Whether `from` broadcasts to exactly `to` (ONNX Expand with a known result shape).
llvm::Error checkBroadcastsTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to);

/// numpy.matmul / ONNX MatMul: `[..., M, K] x [..., K, N] -> [..., M, N]`, batch dims broadcast,
/// a 1-D lhs is `[1, K]` and a 1-D rhs is `[K, 1]` with that unit dimension dropped.
/// `transposeA` / `transposeB` (graph.matmul's flags) read that operand with its last two
/// dimensions swapped; a transposed operand must have rank >= 2.
llvm::Expected<Shape> matmulShape(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs,
                                  bool transposeA = false, bool transposeB = false);

/// Checks that `axes` is non-empty, strictly increasing and within `[0, rank)`.
llvm::Error checkAxes(llvm::ArrayRef<int64_t> axes, int64_t rank);

/// Reduction over `axes`; reduced dimensions become 1 with `keepdims`, else are removed.
llvm::Expected<Shape> reduceShape(llvm::ArrayRef<int64_t> input, llvm::ArrayRef<int64_t> axes,
                                  bool keepdims);

/// `result[i] = input[permutation[i]]`; the permutation covers `[0, rank)` once.
llvm::Expected<Shape> transposeShape(llvm::ArrayRef<int64_t> input,
                                     llvm::ArrayRef<int64_t> permutation);

/// Concatenation along `axis`: same rank, equal non-axis dimensions.
llvm::Expected<Shape> concatShape(llvm::ArrayRef<llvm::ArrayRef<int64_t>> inputs, int64_t axis);

/// ONNX Slice with normalised static bounds (see `graph.slice`).
llvm::Expected<Shape> sliceShape(llvm::ArrayRef<int64_t> input, llvm::ArrayRef<int64_t> axes,
                                 llvm::ArrayRef<int64_t> starts, llvm::ArrayRef<int64_t> ends,
                                 llvm::ArrayRef<int64_t> steps);

/// Split along `axis` into pieces of `sizes` (positive, summing to the dimension).
llvm::Expected<llvm::SmallVector<Shape>> splitShapes(llvm::ArrayRef<int64_t> input, int64_t axis,
                                                     llvm::ArrayRef<int64_t> sizes);

/// ONNX Gather: `data.shape[:axis] + indices.shape + data.shape[axis+1:]`.
llvm::Expected<Shape> gatherShape(llvm::ArrayRef<int64_t> data, llvm::ArrayRef<int64_t> indices,
                                  int64_t axis);

/// ONNX TopK (graph.top_k): the input's shape with `k` along `axis`; 1 <= k <= input[axis].
llvm::Expected<Shape> topKShape(llvm::ArrayRef<int64_t> input, int64_t k, int64_t axis);

/// ONNX GatherElements: the indices' shape; same rank, non-axis dims at most data's.
llvm::Expected<Shape> gatherElementsShape(llvm::ArrayRef<int64_t> data,
                                          llvm::ArrayRef<int64_t> indices, int64_t axis);

/// Softmax cross-entropy: logits `[N, C, d1..dk]`, labels `[N, d1..dk]`, result `[]`.
llvm::Expected<Shape> crossEntropyShape(llvm::ArrayRef<int64_t> logits,
                                        llvm::ArrayRef<int64_t> labels);

/// Normalisation parameters over `[axis, rank)`: `param` must have shape `input[axis:]`.
llvm::Error checkNormParam(llvm::ArrayRef<int64_t> input, int64_t axis,
                           llvm::ArrayRef<int64_t> param, llvm::StringRef name);

/// Number of elements of a static shape; saturates at INT64_MAX instead of overflowing (a
/// hostile model can declare any dims).
int64_t numElements(llvm::ArrayRef<int64_t> shape);

/// The most elements a tensor of rpc may have (2^48, the plan's byte limit, kMaxPlanBytes).
constexpr int64_t kMaxElements = int64_t(1) << 48;

/// Whether every dim of `shape` is >= 0 and it has at most kMaxElements elements.
bool isSupportedShape(llvm::ArrayRef<int64_t> shape);

/// graph.dequantize's rule: the bytes of a weight of `shape` held in `format` (a
/// kernels::QuantFormat as int: nf4, nf4-fp32-absmax, int8, fp8), `axis` its input axis (int8,
/// fp8). Errors: the format's refusal ("... its last dimension 100 is not a multiple of the
/// nf4 block size 64").
llvm::Expected<int64_t> quantizedBytes(int format, llvm::ArrayRef<int64_t> shape, int64_t axis);

} // namespace mlir::rp::graph

#endif // RP_DIALECTS_GRAPH_IR_SHAPEINFERENCE_H
