//===- CausalMask.cpp - recognising causal attention masks ----------------===//

#include "passes/Analysis/CausalMask.h"

#include "passes/Analysis/LazyElements.h"

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

/// A mask element's verdict: kept (1), masked (0), or neither (-1: not a mask).
int additiveVerdict(double m) { return m == 0.0 ? 1 : m <= kMaskedAt ? 0 : -1; }
int keepVerdict(double keep) { return keep != 0.0 ? 1 : 0; }

/// Whether the band of `window` (0: none) keeps row i, column j: j <= i and i - j < window.
bool bandKeeps(int64_t i, int64_t j, int64_t window) {
  return j <= i && (window == 0 || i - j < window);
}

/// The window that the last row of a `[S, S]` mask (its elements `row`, in key order) shows:
/// the count of kept elements, 0 (plain causal) when it is S; nullopt when an element is
/// neither kept nor masked or none is kept. The full check then confirms the band.
template <typename Range, typename Verdict>
std::optional<int64_t> lastRowWindow(Range row, int64_t seq, Verdict verdict) {
  int64_t kept = 0;
  for (auto value : row) {
    int v = verdict(static_cast<double>(value));
    if (v < 0)
      return std::nullopt;
    kept += v;
  }
  if (kept == 0)
    return std::nullopt;
  return kept >= seq ? 0 : kept;
}

/// Whether every element of `values` (row-major `[..., S, S]`) is kept exactly in the band of
/// `window`; stops at the first that is not.
template <typename Range, typename Verdict>
bool allInBand(Range values, int64_t seq, int64_t window, Verdict verdict) {
  int64_t n = 0;
  for (auto value : values) {
    int64_t i = (n / seq) % seq, j = n % seq;
    ++n;
    if (verdict(static_cast<double>(value)) != static_cast<int>(bandKeeps(i, j, window)))
      return false;
  }
  return true;
}

/// The window of a mask of elements `values` (random access, row-major `[..., S, S]`): read
/// from the first matrix's last row, then checked on every element.
template <typename Range, typename Verdict>
std::optional<int64_t> bandOf(Range values, int64_t seq, Verdict verdict) {
  if (seq <= 0)
    return std::nullopt;
  auto last = values.begin() + (seq - 1) * seq;
  std::optional<int64_t> window =
      lastRowWindow(llvm::make_range(last, last + seq), seq, verdict);
  if (!window || !allInBand(values, seq, *window, verdict))
    return std::nullopt;
  return window;
}

/// The window of constant `v` as a mask (nullopt: not a band); not set when `v` is not a
/// constant. Reads f32 and i1 masks in place (a 4096-token mask has 16 M elements).
template <typename Verdict>
std::optional<std::optional<int64_t>> constantBand(Value v, int64_t seq, Verdict verdict) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  Type element = attr.getElementType();
  if (element.isF32())
    return bandOf(attr.getValues<float>(), seq, verdict);
  if (element.isInteger(1))
    return bandOf(attr.getValues<bool>(), seq, verdict);
  if (isa<FloatType>(element))
    return bandOf(llvm::map_range(attr.getValues<APFloat>(),
                                  [](const APFloat &f) { return f.convertToDouble(); }),
                  seq, verdict);
  return std::optional<int64_t>();
}

/// The window of `v` (computed from constants, `[..., S, S]`) as a mask, evaluated lazily row
/// by row: the last row of the first matrix gives the window, then all (i, j) for every index
/// of the leading dims the mask varies along are checked. Nullopt when not a band.
template <typename Verdict>
std::optional<int64_t> lazyBand(Value v, int64_t seq, Verdict verdict) {
  if (seq <= 0)
    return std::nullopt;
  std::optional<LazyElements> lazy = LazyElements::build(v);
  if (!lazy)
    return std::nullopt;
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
    return std::nullopt;
  SmallVector<int64_t, 8> index(shape.size(), 0);
  std::vector<double> row(seq);
  index[lead] = seq - 1;
  lazy->row(index, row);
  std::optional<int64_t> window = lastRowWindow(row, seq, verdict);
  if (!window)
    return std::nullopt;
  while (true) {
    for (int64_t i = 0; i < seq; ++i) {
      index[lead] = i;
      lazy->row(index, row);
      for (int64_t j = 0; j < seq; ++j)
        if (verdict(row[j]) != static_cast<int>(bandKeeps(i, j, *window)))
          return std::nullopt;
    }
    // The next index of the visited leading dims, last fastest.
    size_t k = visit.size();
    while (k > 0 && ++index[visit[k - 1]] == shape[visit[k - 1]])
      index[visit[--k]] = 0;
    if (k == 0)
      return window;
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

std::optional<int64_t> CausalMaskRecognizer::keepBand(Value keep, int64_t seq) {
  auto key = std::pair(keep, static_cast<int>(Keep));
  if (auto it = known.find(key); it != known.end())
    return it->second;
  std::optional<int64_t> band;
  if (isSquareMaskShape(keep.getType(), seq) &&
      cast<RankedTensorType>(keep.getType()).getElementType().isInteger(1)) {
    std::optional<std::optional<int64_t>> folded = constantBand(keep, seq, keepVerdict);
    band = folded ? *folded : lazyBand(keep, seq, keepVerdict);
  }
  known[key] = band;
  return band;
}

std::optional<int64_t> CausalMaskRecognizer::keepWhereBand(Value keep, Value fill, int64_t seq) {
  if (!allMasked(fill))
    return std::nullopt;
  return keepBand(keep, seq);
}

std::optional<int64_t> CausalMaskRecognizer::additiveBand(Value mask, int64_t seq) {
  auto key = std::pair(mask, static_cast<int>(Additive));
  if (auto it = known.find(key); it != known.end())
    return it->second;
  std::optional<int64_t> band;
  if (isSquareMaskShape(mask.getType(), seq) &&
      isa<FloatType>(cast<RankedTensorType>(mask.getType()).getElementType()))
    band = additiveBandUncached(mask, seq);
  known[key] = band;
  return band;
}

std::optional<int64_t> CausalMaskRecognizer::additiveBandUncached(Value mask, int64_t seq) {
  if (std::optional<std::optional<int64_t>> folded = constantBand(mask, seq, additiveVerdict))
    return *folded;
  // where(keep, 0, masked) with a `[..., S, S]` keep: the keep mask, which every layer's
  // additive mask usually shares, decides (and is remembered).
  if (auto where = mask.getDefiningOp<WhereOp>()) {
    std::optional<double> zero = uniformConstant(where.getOnTrue());
    if (zero && *zero == 0.0 && allMasked(where.getOnFalse()) &&
        isSquareMaskShape(where.getCondition().getType(), seq))
      return keepBand(where.getCondition(), seq);
  }
  return lazyBand(mask, seq, additiveVerdict);
}

void CausalMaskRecognizer::forget(Operation *op) {
  for (Value result : op->getResults())
    for (int form : {static_cast<int>(Additive), static_cast<int>(Keep)})
      known.erase(std::pair(result, form));
}

} // namespace mlir::rp
