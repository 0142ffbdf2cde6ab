//===- ShapeInference.cpp - shape rules of the graph ops ------------------===//

#include "dialects/Graph/IR/ShapeInference.h"

#include "kernels/Quantization.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <limits>

using llvm::ArrayRef;
using llvm::Error;
using llvm::Expected;

namespace mlir::rp::graph {

namespace {
template <typename... Ts>
Error fail(const char *fmt, Ts &&...args) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 llvm::formatv(fmt, std::forward<Ts>(args)...).str());
}
} // namespace

std::string formatShape(ArrayRef<int64_t> shape) {
  std::string out = "[";
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (i)
      out += ", ";
    out += std::to_string(d);
  }
  return out + "]";
}

int64_t numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      return std::numeric_limits<int64_t>::max();
  return n;
}

bool isSupportedShape(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxElements)
      return false;
  return true;
}

Expected<Shape> broadcastShapes(ArrayRef<ArrayRef<int64_t>> shapes) {
  size_t rank = 0;
  for (ArrayRef<int64_t> s : shapes)
    rank = std::max(rank, s.size());
  Shape result(rank, 1);
  for (ArrayRef<int64_t> s : shapes) {
    size_t offset = rank - s.size();
    for (auto [i, d] : llvm::enumerate(s)) {
      int64_t &r = result[offset + i];
      if (d == r || d == 1)
        continue;
      if (r != 1) {
        std::string all;
        for (auto [k, t] : llvm::enumerate(shapes))
          all += (k ? " and " : "") + formatShape(t);
        return fail("shapes {0} are not broadcast-compatible: dimension {1} from the end is {2} "
                    "in one and {3} in another",
                    all, rank - (offset + i), r, d);
      }
      r = d;
    }
  }
  return result;
}

Error checkBroadcastsTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return fail("expected the input rank ({0}) to be at most the result rank ({1})", from.size(),
                to.size());
  size_t offset = to.size() - from.size();
  for (auto [i, d] : llvm::enumerate(from))
    if (d != 1 && d != to[offset + i])
      return fail("input shape {0} does not broadcast to {1}: dimension {2} is {3}, expected 1 "
                  "or {4}",
                  formatShape(from), formatShape(to), i, d, to[offset + i]);
  return Error::success();
}

Expected<Shape> matmulShape(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs, bool transposeA,
                            bool transposeB) {
  if (lhs.empty() || rhs.empty())
    return fail("expected operands of rank >= 1, got lhs {0} and rhs {1}", formatShape(lhs),
                formatShape(rhs));
  if ((transposeA && lhs.size() < 2) || (transposeB && rhs.size() < 2))
    return fail("expected a transposed operand of rank >= 2, got lhs {0}{1} and rhs {2}{3}",
                formatShape(lhs), transposeA ? " (transposed)" : "", formatShape(rhs),
                transposeB ? " (transposed)" : "");
  Shape a(lhs.begin(), lhs.end()), b(rhs.begin(), rhs.end());
  if (transposeA)
    std::swap(a[a.size() - 1], a[a.size() - 2]);
  if (transposeB)
    std::swap(b[b.size() - 1], b[b.size() - 2]);
  bool lhsVector = a.size() == 1, rhsVector = b.size() == 1;
  if (lhsVector)
    a.insert(a.begin(), 1);
  if (rhsVector)
    b.push_back(1);
  int64_t m = a[a.size() - 2], k = a.back(), k2 = b[b.size() - 2], n = b.back();
  if (k != k2)
    return fail("contraction dimensions differ: lhs {0} has {1}, rhs {2} has {3}",
                formatShape(lhs), k, formatShape(rhs), k2);
  ArrayRef<int64_t> batchA = ArrayRef<int64_t>(a).drop_back(2);
  ArrayRef<int64_t> batchB = ArrayRef<int64_t>(b).drop_back(2);
  Expected<Shape> batch = broadcastShapes({batchA, batchB});
  if (!batch)
    return fail("batch dimensions: {0}", llvm::toString(batch.takeError()));
  Shape result = std::move(*batch);
  if (!lhsVector)
    result.push_back(m);
  if (!rhsVector)
    result.push_back(n);
  return result;
}

Error checkAxes(ArrayRef<int64_t> axes, int64_t rank) {
  if (axes.empty())
    return fail("expected at least one axis");
  for (auto [i, a] : llvm::enumerate(axes)) {
    if (a < 0 || a >= rank)
      return fail("expected axis in [0, {0}), got {1}", rank, a);
    if (i > 0 && a <= axes[i - 1])
      return fail("expected strictly increasing axes, got {0} after {1}", a, axes[i - 1]);
  }
  return Error::success();
}

Expected<Shape> reduceShape(ArrayRef<int64_t> input, ArrayRef<int64_t> axes, bool keepdims) {
  if (Error e = checkAxes(axes, input.size()))
    return e;
  Shape result;
  for (auto [i, d] : llvm::enumerate(input)) {
    bool reduced = llvm::is_contained(axes, static_cast<int64_t>(i));
    if (!reduced)
      result.push_back(d);
    else if (keepdims)
      result.push_back(1);
  }
  return result;
}

Expected<Shape> transposeShape(ArrayRef<int64_t> input, ArrayRef<int64_t> permutation) {
  if (permutation.size() != input.size())
    return fail("expected a permutation of {0} dimensions, got {1} entries", input.size(),
                permutation.size());
  llvm::SmallVector<bool, 6> seen(input.size(), false);
  Shape result;
  for (int64_t p : permutation) {
    if (p < 0 || p >= static_cast<int64_t>(input.size()) || seen[p])
      return fail("expected a permutation of [0, {0}), got {1}", input.size(),
                  formatShape(permutation));
    seen[p] = true;
    result.push_back(input[p]);
  }
  return result;
}

Expected<Shape> concatShape(ArrayRef<ArrayRef<int64_t>> inputs, int64_t axis) {
  if (inputs.empty())
    return fail("expected at least one operand");
  ArrayRef<int64_t> first = inputs.front();
  if (axis >= static_cast<int64_t>(first.size()))
    return fail("expected axis in [0, {0}), got {1}", first.size(), axis);
  Shape result(first.begin(), first.end());
  for (auto [i, s] : llvm::enumerate(inputs.drop_front())) {
    if (s.size() != first.size())
      return fail("expected operand {0} to have rank {1}, got {2}", i + 1, first.size(),
                  s.size());
    for (size_t d = 0; d < s.size(); ++d)
      if (static_cast<int64_t>(d) != axis && s[d] != first[d])
        return fail("expected operand {0} to match operand 0 in dimension {1} ({2}), got {3}",
                    i + 1, d, first[d], s[d]);
    result[axis] += s[axis];
  }
  return result;
}

Expected<Shape> sliceShape(ArrayRef<int64_t> input, ArrayRef<int64_t> axes,
                           ArrayRef<int64_t> starts, ArrayRef<int64_t> ends,
                           ArrayRef<int64_t> steps) {
  if (starts.size() != axes.size() || ends.size() != axes.size() || steps.size() != axes.size())
    return fail("expected starts, ends and steps with one entry per axis ({0}), got {1}, {2} and "
                "{3}",
                axes.size(), starts.size(), ends.size(), steps.size());
  if (Error e = checkAxes(axes, input.size()))
    return e;
  Shape result(input.begin(), input.end());
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t dim = input[axes[i]], start = starts[i], end = ends[i], step = steps[i];
    if (step == 0)
      return fail("expected a non-zero step on axis {0}", axes[i]);
    if (step > 0) {
      if (start < 0 || start > end || end > dim)
        return fail("expected 0 <= start <= end <= {0} on axis {1} (step {2}), got start {3} "
                    "and end {4}",
                    dim, axes[i], step, start, end);
      result[axes[i]] = (end - start + step - 1) / step;
    } else {
      if (end < -1 || end > start || start >= dim)
        return fail("expected -1 <= end <= start < {0} on axis {1} (step {2}), got start {3} "
                    "and end {4}",
                    dim, axes[i], step, start, end);
      result[axes[i]] = (start - end + (-step) - 1) / (-step);
    }
  }
  return result;
}

Expected<llvm::SmallVector<Shape>> splitShapes(ArrayRef<int64_t> input, int64_t axis,
                                               ArrayRef<int64_t> sizes) {
  if (axis >= static_cast<int64_t>(input.size()))
    return fail("expected axis in [0, {0}), got {1}", input.size(), axis);
  if (sizes.empty())
    return fail("expected at least one size");
  int64_t total = 0;
  llvm::SmallVector<Shape> results;
  for (int64_t s : sizes) {
    if (s <= 0)
      return fail("expected positive sizes, got {0}", formatShape(sizes));
    total += s;
    Shape piece(input.begin(), input.end());
    piece[axis] = s;
    results.push_back(std::move(piece));
  }
  if (total != input[axis])
    return fail("expected sizes {0} to sum to dimension {1} ({2}), got {3}", formatShape(sizes),
                axis, input[axis], total);
  return results;
}

Expected<Shape> gatherShape(ArrayRef<int64_t> data, ArrayRef<int64_t> indices, int64_t axis) {
  if (axis >= static_cast<int64_t>(data.size()))
    return fail("expected axis in [0, {0}), got {1}", data.size(), axis);
  Shape result(data.begin(), data.begin() + axis);
  result.append(indices.begin(), indices.end());
  result.append(data.begin() + axis + 1, data.end());
  return result;
}

Expected<Shape> gatherElementsShape(ArrayRef<int64_t> data, ArrayRef<int64_t> indices,
                                    int64_t axis) {
  if (indices.size() != data.size())
    return fail("expected indices of the data's rank ({0}), got rank {1}", data.size(),
                indices.size());
  if (axis >= static_cast<int64_t>(data.size()))
    return fail("expected axis in [0, {0}), got {1}", data.size(), axis);
  for (size_t d = 0; d < data.size(); ++d)
    if (static_cast<int64_t>(d) != axis && indices[d] > data[d])
      return fail("expected indices dimension {0} to be at most the data's ({1}), got {2}", d,
                  data[d], indices[d]);
  return Shape(indices.begin(), indices.end());
}

Expected<Shape> topKShape(ArrayRef<int64_t> input, int64_t k, int64_t axis) {
  if (axis >= static_cast<int64_t>(input.size()))
    return fail("expected axis in [0, {0}), got {1}", input.size(), axis);
  if (k < 1 || k > input[axis])
    return fail("expected k in [1, {0}] (the input's dimension {1}), got {2}", input[axis], axis,
                k);
  Shape result(input.begin(), input.end());
  result[axis] = k;
  return result;
}

Expected<Shape> crossEntropyShape(ArrayRef<int64_t> logits, ArrayRef<int64_t> labels) {
  if (logits.size() < 2)
    return fail("expected logits of rank >= 2 ([N, C, ...]), got {0}", formatShape(logits));
  Shape expected{logits[0]};
  expected.append(logits.begin() + 2, logits.end());
  if (ArrayRef<int64_t>(expected) != labels)
    return fail("expected labels of shape {0} for logits {1}, got {2}", formatShape(expected),
                formatShape(logits), formatShape(labels));
  return Shape{};
}

Error checkNormParam(ArrayRef<int64_t> input, int64_t axis, ArrayRef<int64_t> param,
                     llvm::StringRef name) {
  if (axis >= static_cast<int64_t>(input.size()))
    return fail("expected axis in [0, {0}), got {1}", input.size(), axis);
  ArrayRef<int64_t> expected = input.drop_front(axis);
  if (expected != param)
    return fail("expected {0} of shape {1} (input dimensions from axis {2}), got {3}", name,
                formatShape(expected), axis, formatShape(param));
  return Error::success();
}

llvm::Expected<int64_t> quantizedBytes(int format, llvm::ArrayRef<int64_t> shape, int64_t axis) {
  ::rp::base::StatusOr<::rp::kernels::QuantLayout> layout = ::rp::kernels::quantLayout(
      static_cast<::rp::kernels::QuantFormat>(format), std::vector<int64_t>(shape.begin(), shape.end()),
      axis, "a weight");
  if (!layout.ok())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), layout.status().message());
  return layout->bytes;
}

} // namespace mlir::rp::graph
