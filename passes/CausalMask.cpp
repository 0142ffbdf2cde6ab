//===- CausalMask.cpp - recognising causal attention masks ----------------===//

#include "passes/CausalMask.h"

#include "passes/LazyElements.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Matchers.h"

#include <optional>
#include <vector>

namespace mlir::rp {

namespace {

using namespace graph;

/// Whether `type` is `[..., S, S]`: a stack of square masks. The leading dims are 1 or, in
/// torch.onnx's exports, the batch (one copy of the mask per sequence); the caller checks that
/// the mask broadcasts to the scores.
bool isSquareMaskShape(Type t, int64_t seq) {
  auto type = dyn_cast<RankedTensorType>(t);
  if (!type || !type.hasStaticShape())
    return false;
  ArrayRef<int64_t> s = type.getShape();
  return s.size() >= 2 && s[s.size() - 1] == seq && s[s.size() - 2] == seq;
}

/// Whether an additive mask's element at row i, column j is causal.
bool additiveCausalAt(double m, int64_t i, int64_t j) {
  return j <= i ? m == 0.0 : m <= kMaskedAt;
}

/// Whether a boolean mask's element (0 or 1) at row i, column j keeps exactly j <= i.
bool keepCausalAt(double keep, int64_t i, int64_t j) { return (keep != 0.0) == (j <= i); }

/// Whether every element of `values` (row-major `[..., S, S]`) satisfies `at`; stops at the
/// first that does not.
template <typename Range, typename At>
bool allCausal(Range values, int64_t seq, At at) {
  int64_t n = 0;
  for (auto value : values) {
    int64_t i = (n / seq) % seq, j = n % seq;
    ++n;
    if (!at(static_cast<double>(value), i, j))
      return false;
  }
  return true;
}

/// Whether `v` is a constant whose every element satisfies `at`; nullopt when `v` is not a
/// constant. Reads f32 and i1 masks in place (a 4096-token mask has 16 M elements).
template <typename At>
std::optional<bool> constantCausal(Value v, int64_t seq, At at) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  Type element = attr.getElementType();
  if (element.isF32())
    return allCausal(attr.getValues<float>(), seq, at);
  if (element.isInteger(1))
    return allCausal(attr.getValues<bool>(), seq, at);
  if (isa<FloatType>(element))
    return allCausal(llvm::map_range(attr.getValues<APFloat>(),
                                     [](const APFloat &f) { return f.convertToDouble(); }),
                     seq, at);
  return false;
}

/// Whether every element of `v` (computed from constants, `[..., S, S]`) satisfies `at`,
/// evaluated lazily row by row: all (i, j) for every index of the leading dims the mask
/// varies along.
template <typename At>
bool lazyCausal(Value v, int64_t seq, At at) {
  std::optional<LazyElements> lazy = LazyElements::build(v);
  if (!lazy)
    return false;
  ArrayRef<int64_t> shape = lazy->shape();
  size_t lead = shape.size() - 2;
  // The leading dims to visit: those the mask varies along; the others stay at 0.
  SmallVector<size_t> visit;
  int64_t count = seq * seq;
  for (size_t d = 0; d < lead; ++d)
    if (lazy->varyingDims().test(d)) {
      visit.push_back(d);
      count *= shape[d];
    }
  if (count > kMaxMaskEvaluations)
    return false;
  SmallVector<int64_t, 8> index(shape.size(), 0);
  std::vector<double> row(seq);
  while (true) {
    for (int64_t i = 0; i < seq; ++i) {
      index[lead] = i;
      lazy->row(index, row);
      for (int64_t j = 0; j < seq; ++j)
        if (!at(row[j], i, j))
          return false;
    }
    // The next index of the visited leading dims, last fastest.
    size_t k = visit.size();
    while (k > 0 && ++index[visit[k - 1]] == shape[visit[k - 1]])
      index[visit[--k]] = 0;
    if (k == 0)
      return true;
  }
}

/// The value of every element of constant `v` when they are all equal, or nullopt.
std::optional<double> uniformConstant(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !isa<FloatType>(attr.getElementType()) ||
      attr.getNumElements() == 0)
    return std::nullopt;
  auto values = attr.getValues<APFloat>();
  double first = (*values.begin()).convertToDouble();
  for (const APFloat &f : values)
    if (f.convertToDouble() != first)
      return std::nullopt;
  return first;
}

/// Whether every element of the float constant `v` is masked.
bool allMasked(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !isa<FloatType>(attr.getElementType()))
    return false;
  return llvm::all_of(attr.getValues<APFloat>(),
                      [](const APFloat &f) { return f.convertToDouble() <= kMaskedAt; });
}

} // namespace

bool CausalMaskRecognizer::isKeep(Value keep, int64_t seq) {
  auto key = std::pair(keep, static_cast<int>(Keep));
  if (auto it = known.find(key); it != known.end())
    return it->second;
  bool causal = false;
  if (isSquareMaskShape(keep.getType(), seq) &&
      cast<RankedTensorType>(keep.getType()).getElementType().isInteger(1)) {
    std::optional<bool> folded = constantCausal(keep, seq, keepCausalAt);
    causal = folded ? *folded : lazyCausal(keep, seq, keepCausalAt);
  }
  known[key] = causal;
  return causal;
}

bool CausalMaskRecognizer::isKeepWhere(Value keep, Value fill, int64_t seq) {
  return allMasked(fill) && isKeep(keep, seq);
}

bool CausalMaskRecognizer::isAdditive(Value mask, int64_t seq) {
  auto key = std::pair(mask, static_cast<int>(Additive));
  if (auto it = known.find(key); it != known.end())
    return it->second;
  bool causal = isSquareMaskShape(mask.getType(), seq) &&
                isa<FloatType>(cast<RankedTensorType>(mask.getType()).getElementType()) &&
                isAdditiveUncached(mask, seq);
  known[key] = causal;
  return causal;
}

bool CausalMaskRecognizer::isAdditiveUncached(Value mask, int64_t seq) {
  if (std::optional<bool> folded = constantCausal(mask, seq, additiveCausalAt))
    return *folded;
  // where(keep, 0, masked) with a `[..., S, S]` keep: the keep mask, which every layer's
  // additive mask usually shares, decides (and is remembered).
  if (auto where = mask.getDefiningOp<WhereOp>()) {
    std::optional<double> zero = uniformConstant(where.getOnTrue());
    if (zero && *zero == 0.0 && allMasked(where.getOnFalse()) &&
        isSquareMaskShape(where.getCondition().getType(), seq))
      return isKeep(where.getCondition(), seq);
  }
  return lazyCausal(mask, seq, additiveCausalAt);
}

void CausalMaskRecognizer::forget(Operation *op) {
  for (Value result : op->getResults())
    for (int form : {static_cast<int>(Additive), static_cast<int>(Keep)})
      known.erase(std::pair(result, form));
}

} // namespace mlir::rp
