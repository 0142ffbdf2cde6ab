//===- Layout.cpp - Data movement on the GPU: host planning ---------------===//

#include "kernels/cuda/Layout.h"

namespace rp::kernels::cuda {

using base::invalidArgument;
using base::StatusOr;

StatusOr<CopyPlan> planStridedCopy(const char *op, int elementBytes, const Shape &shape,
                                   const Shape &srcStrides, int64_t srcBase,
                                   const Shape &dstStrides, int64_t dstBase) {
  if (elementBytes != 1 && elementBytes != 2 && elementBytes != 4 && elementBytes != 8)
    return invalidArgument(std::string(op) + ": element size " + std::to_string(elementBytes) +
                           " bytes; the copy kernel moves 1, 2, 4 or 8");
  if (srcStrides.size() != shape.size() || dstStrides.size() != shape.size())
    return invalidArgument(std::string(op) + ": stride lists do not match the rank of " +
                           formatShape(shape));
  RP_ASSIGN_OR_RETURN(StridedIter<2> iter,
                      makeIter<2>(op, shape, {srcStrides, dstStrides}, {srcBase, dstBase}));
  return CopyPlan{elementBytes, iter};
}

StatusOr<CopyPlan> planTranspose(int elementBytes, const Shape &x, const std::vector<int64_t> &perm,
                                 const Shape &out) {
  const size_t rank = x.size();
  std::vector<bool> seen(rank, false);
  if (perm.size() != rank)
    return invalidArgument("transpose: permutation of " + std::to_string(perm.size()) +
                           " entries for rank " + std::to_string(rank));
  Shape shape(rank), src(rank);
  const Shape own = contiguousStrides(x);
  for (size_t d = 0; d < rank; ++d) {
    if (perm[d] < 0 || perm[d] >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(perm[d])])
      return invalidArgument("transpose: " + formatShape(perm) + " is not a permutation");
    seen[static_cast<size_t>(perm[d])] = true;
    shape[d] = x[static_cast<size_t>(perm[d])];
    src[d] = own[static_cast<size_t>(perm[d])];
  }
  if (shape != out)
    return invalidArgument("transpose: result shape " + formatShape(out) + "; expected " +
                           formatShape(shape));
  return planStridedCopy("transpose", elementBytes, shape, src, 0, contiguousStrides(shape), 0);
}

StatusOr<CopyPlan> planExpand(int elementBytes, const Shape &x, const Shape &out) {
  RP_ASSIGN_OR_RETURN(Shape shape, broadcastShapes("expand", {x, out}));
  if (shape != out)
    return invalidArgument("expand: " + formatShape(x) + " does not expand to " + formatShape(out));
  return planStridedCopy("expand", elementBytes, out, broadcastStrides(x, out), 0,
                         contiguousStrides(out), 0);
}

namespace {

/// Checks that `piece` equals `whole` except along `axis`.
base::Status checkPiece(const char *op, const Shape &piece, const Shape &whole, size_t axis,
                           const std::string &what) {
  bool ok = piece.size() == whole.size();
  for (size_t d = 0; ok && d < whole.size(); ++d)
    ok = d == axis || piece[d] == whole[d];
  if (!ok)
    return invalidArgument(std::string(op) + ": " + what + " is " + formatShape(piece) +
                           "; expected " + formatShape(whole) + " except along axis " +
                           std::to_string(axis));
  return base::okStatus();
}

/// The copies between `whole` and its consecutive pieces along `axis`; `toWhole` copies the
/// pieces into the whole (concat), else the whole into the pieces (split).
StatusOr<std::vector<CopyPlan>> pieceCopies(const char *op, int elementBytes, const Shape &whole,
                                            const std::vector<Shape> &pieces, int64_t axis,
                                            bool toWhole) {
  if (axis < 0 || axis >= static_cast<int64_t>(whole.size()))
    return invalidArgument(std::string(op) + ": axis " + std::to_string(axis) +
                           " out of range for rank " + std::to_string(whole.size()));
  const size_t a = static_cast<size_t>(axis);
  const Shape wholeStrides = contiguousStrides(whole);
  std::vector<CopyPlan> plans;
  int64_t at = 0;
  for (size_t j = 0; j < pieces.size(); ++j) {
    RP_RETURN_IF_ERROR(
        checkPiece(op, pieces[j], whole, a,
                   std::string(toWhole ? "operand " : "result ") + std::to_string(j)));
    const int64_t base = at * wholeStrides[a];
    const Shape own = contiguousStrides(pieces[j]);
    RP_ASSIGN_OR_RETURN(
        CopyPlan p, toWhole
                        ? planStridedCopy(op, elementBytes, pieces[j], own, 0, wholeStrides, base)
                        : planStridedCopy(op, elementBytes, pieces[j], wholeStrides, base, own, 0));
    plans.push_back(p);
    at += pieces[j][a];
  }
  if (at != whole[a])
    return invalidArgument(std::string(op) + ": the pieces add up to " + std::to_string(at) +
                           " along axis " + std::to_string(axis) + "; expected " +
                           std::to_string(whole[a]));
  return plans;
}

} // namespace

StatusOr<std::vector<CopyPlan>> planConcat(int elementBytes, const std::vector<Shape> &inputs,
                                           int64_t axis, const Shape &out) {
  return pieceCopies("concat", elementBytes, out, inputs, axis, /*toWhole=*/true);
}

StatusOr<std::vector<CopyPlan>> planSplit(int elementBytes, const Shape &x, int64_t axis,
                                          const std::vector<Shape> &outs) {
  return pieceCopies("split", elementBytes, x, outs, axis, /*toWhole=*/false);
}

} // namespace rp::kernels::cuda
