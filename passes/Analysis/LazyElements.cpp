//===- LazyElements.cpp - on-demand elements of constant-derived values ---===//

#include "passes/Analysis/LazyElements.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

namespace mlir::rp {

using namespace graph;
using Kind = LazyElements::Kind;
using Node = LazyElements::Node;

/// Builds the node list of a LazyElements, operands first (a post-order walk of the DAG).
class LazyElementsBuilder {
public:
  LazyElements lazy;
  std::vector<Node> &nodes = lazy.nodes;

  /// The node of `v`, or nullopt when `v` is not supported.
  std::optional<unsigned> visit(Value v) {
    if (auto it = memo.find(v); it != memo.end())
      return it->second;
    auto type = dyn_cast<RankedTensorType>(v.getType());
    Operation *op = v.getDefiningOp();
    if (!type || !type.hasStaticShape() || type.getRank() > LazyElements::kMaxRank || !op ||
        nodes.size() >= LazyElements::kMaxNodes)
      return std::nullopt;
    Node node;
    node.shape.assign(type.getShape().begin(), type.getShape().end());
    std::optional<Node::Rounding> rounding = roundingOf(type.getElementType());
    if (!rounding)
      return std::nullopt;
    node.rounding = *rounding;
    if (auto f = dyn_cast<FloatType>(type.getElementType()))
      node.semantics = &f.getFloatSemantics();
    if (!describe(op, node))
      return std::nullopt;
    for (Value operand : operandsOf(op)) {
      std::optional<unsigned> n = visit(operand);
      if (!n)
        return std::nullopt;
      node.operands.push_back(*n);
    }
    node.varying = varyingOf(node);
    nodes.push_back(std::move(node));
    unsigned id = nodes.size() - 1;
    foldUniform(id);
    memo[v] = id;
    return id;
  }

private:
  llvm::DenseMap<Value, unsigned> memo;

  /// Replaces node `id` by its value when that is the same everywhere (no varying dim), so
  /// that evaluation stops there: torch.onnx's batch-index comparisons and all-true padding
  /// masks become one constant.
  void foldUniform(unsigned id) {
    Node &node = nodes[id];
    if (node.kind == Kind::Constant || node.varying.any())
      return;
    int64_t zeros[LazyElements::kMaxRank] = {};
    double value = lazy.eval(id, zeros);
    node.kind = Kind::Constant;
    node.operands.clear();
    node.values.assign(1, value);
  }

  static std::optional<Node::Rounding> roundingOf(Type t) {
    if (t.isInteger(1))
      return Node::Rounding::Bool;
    if (isa<IntegerType>(t))
      return Node::Rounding::Integer;
    if (t.isF32())
      return Node::Rounding::F32;
    if (t.isF64())
      return Node::Rounding::None;
    if (isa<FloatType>(t))
      return Node::Rounding::Narrow;
    return std::nullopt;
  }

  /// The operands the node reads (none for the leaves).
  static SmallVector<Value> operandsOf(Operation *op) {
    if (isa<ConstantOp, RangeOp>(op))
      return {};
    return SmallVector<Value>(op->getOperands());
  }

  /// Sets the node's kind and attributes from `op`; false when `op` is not supported.
  static bool describe(Operation *op, Node &node) {
    return llvm::TypeSwitch<Operation *, bool>(op)
        .Case([&](ConstantOp c) { return describeConstant(c, node); })
        .Case([&](RangeOp r) { return describeRange(r, node); })
        .Case([&](AddOp) { return set(node, Kind::Add); })
        .Case([&](SubOp) { return set(node, Kind::Sub); })
        .Case([&](MulOp) { return set(node, Kind::Mul); })
        .Case([&](DivOp d) {
          // Integer division would need a divide-by-zero rule; masks do not divide integers.
          return isa<FloatType>(d.getType().getElementType()) && set(node, Kind::Div);
        })
        .Case([&](NegOp) { return set(node, Kind::Neg); })
        .Case([&](CompareOp c) {
          node.predicate = static_cast<int>(c.getPredicate());
          return set(node, Kind::Compare);
        })
        .Case([&](LogicalAndOp) { return set(node, Kind::And); })
        .Case([&](LogicalOrOp) { return set(node, Kind::Or); })
        .Case([&](LogicalNotOp) { return set(node, Kind::Not); })
        .Case([&](WhereOp) { return set(node, Kind::Where); })
        .Case([&](CastOp c) {
          return roundingOf(c.getInput().getType().getElementType()).has_value() &&
                 set(node, Kind::Cast);
        })
        .Case([&](ExpandOp) { return set(node, Kind::Broadcast); })
        .Case([&](ReshapeOp) { return set(node, Kind::Reshape); })
        .Case([&](TransposeOp t) {
          node.perm.assign(t.getPermutation().begin(), t.getPermutation().end());
          return set(node, Kind::Transpose);
        })
        .Case([&](SliceOp s) { return describeSlice(s, node); })
        .Case([&](TriluOp t) {
          node.k = t.getK();
          node.upper = t.getUpper();
          return set(node, Kind::Trilu);
        })
        .Default([](Operation *) { return false; });
  }

  static bool set(Node &node, Kind kind) {
    node.kind = kind;
    return true;
  }

  static bool describeConstant(ConstantOp c, Node &node) {
    auto attr = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!attr || attr.getNumElements() > LazyElements::kMaxLeafElements)
      return false;
    node.kind = Kind::Constant;
    int64_t count = attr.isSplat() ? 1 : attr.getNumElements();
    node.values.reserve(count);
    Type element = attr.getElementType();
    if (isa<FloatType>(element)) {
      auto it = attr.value_begin<APFloat>();
      for (int64_t n = 0; n < count; ++n, ++it)
        node.values.push_back((*it).convertToDouble());
    } else if (element.isInteger(1)) {
      auto it = attr.value_begin<bool>();
      for (int64_t n = 0; n < count; ++n, ++it)
        node.values.push_back(*it ? 1.0 : 0.0);
    } else if (isa<IntegerType>(element)) {
      auto it = attr.value_begin<APInt>();
      for (int64_t n = 0; n < count; ++n, ++it)
        node.values.push_back(static_cast<double>((*it).getSExtValue()));
    } else {
      return false;
    }
    return true;
  }

  static bool describeRange(RangeOp r, Node &node) {
    auto number = [](Attribute a) {
      if (auto i = dyn_cast<IntegerAttr>(a))
        return static_cast<double>(i.getInt());
      return cast<FloatAttr>(a).getValueAsDouble();
    };
    node.kind = Kind::Range;
    node.start = number(r.getStart());
    node.delta = number(r.getDelta());
    return node.shape.size() == 1;
  }

  static bool describeSlice(SliceOp s, Node &node) {
    size_t rank = node.shape.size();
    node.kind = Kind::Slice;
    node.starts.assign(rank, 0);
    node.steps.assign(rank, 1);
    for (auto [axis, start, step] : llvm::zip(s.getAxes(), s.getStarts(), s.getSteps())) {
      if (axis < 0 || static_cast<size_t>(axis) >= rank)
        return false;
      node.starts[axis] = start;
      node.steps[axis] = step;
    }
    return true;
  }

  /// The dims of an operand of shape `from` broadcast to `to` that carry `varying`.
  static llvm::SmallBitVector broadcastVarying(ArrayRef<int64_t> from, ArrayRef<int64_t> to,
                                               const llvm::SmallBitVector &varying) {
    llvm::SmallBitVector out(to.size());
    size_t offset = to.size() - from.size();
    for (size_t d = 0; d < from.size(); ++d)
      if (varying.test(d) && from[d] != 1)
        out.set(d + offset);
    return out;
  }

  /// Which dims of `node` (operands built) its elements may change along.
  llvm::SmallBitVector varyingOf(const Node &node) const {
    size_t rank = node.shape.size();
    llvm::SmallBitVector out(rank);
    switch (node.kind) {
    case Kind::Constant:
      return constantVarying(node);
    case Kind::Range:
      if (node.shape[0] > 1)
        out.set(0);
      return out;
    case Kind::Transpose: {
      const Node &in = nodes[node.operands[0]];
      for (size_t d = 0; d < rank; ++d)
        if (in.varying.test(node.perm[d]))
          out.set(d);
      return out;
    }
    case Kind::Reshape:
      return reshapeVarying(nodes[node.operands[0]], node.shape);
    case Kind::Slice:
      return nodes[node.operands[0]].varying;
    case Kind::Trilu:
      out = nodes[node.operands[0]].varying;
      out.set(rank - 2);
      out.set(rank - 1);
      return out;
    default: // elementwise ops and expand: numpy broadcasting
      for (unsigned o : node.operands)
        out |= broadcastVarying(nodes[o].shape, node.shape, nodes[o].varying);
      return out;
    }
  }

  /// A reshape that only inserts or drops unit dims keeps each varying dim (in order); any
  /// other reshape may vary along every non-unit dim of its result.
  static llvm::SmallBitVector reshapeVarying(const Node &in, ArrayRef<int64_t> to) {
    llvm::SmallBitVector out(to.size());
    SmallVector<int64_t> fromDims, toDims;
    for (size_t d = 0; d < in.shape.size(); ++d)
      if (in.shape[d] != 1)
        fromDims.push_back(d);
    for (size_t d = 0; d < to.size(); ++d)
      if (to[d] != 1)
        toDims.push_back(d);
    bool unitOnly = fromDims.size() == toDims.size() &&
                    llvm::all_of(llvm::zip(fromDims, toDims), [&](auto p) {
                      return in.shape[std::get<0>(p)] == to[std::get<1>(p)];
                    });
    for (size_t n = 0; n < toDims.size(); ++n)
      if (!unitOnly ? in.varying.any() : in.varying.test(fromDims[n]))
        out.set(toDims[n]);
    return out;
  }

  /// The dims along which a constant's values differ from those at index 0 of that dim.
  static llvm::SmallBitVector constantVarying(const Node &node) {
    size_t rank = node.shape.size();
    llvm::SmallBitVector out(rank);
    if (node.values.size() <= 1)
      return out;
    SmallVector<int64_t, 4> strides(rank, 1);
    for (size_t d = rank; d-- > 1;)
      strides[d - 1] = strides[d] * node.shape[d];
    for (size_t n = 0; n < node.values.size(); ++n)
      for (size_t d = 0; d < rank; ++d) {
        int64_t i = (static_cast<int64_t>(n) / strides[d]) % node.shape[d];
        if (i > 0 && !out.test(d) && node.values[n] != node.values[n - i * strides[d]])
          out.set(d);
      }
    return out;
  }
};

std::optional<LazyElements> LazyElements::build(Value root) {
  LazyElementsBuilder builder;
  if (!builder.visit(root))
    return std::nullopt;
  return std::move(builder.lazy);
}

ArrayRef<int64_t> LazyElements::shape() const { return nodes.back().shape; }

const llvm::SmallBitVector &LazyElements::varyingDims() const { return nodes.back().varying; }

double LazyElements::at(ArrayRef<int64_t> index) const {
  return eval(nodes.size() - 1, index.data());
}

namespace {

double roundAs(const Node &node, double x) {
  switch (node.rounding) {
  case Node::Rounding::F32:
    return static_cast<double>(static_cast<float>(x));
  case Node::Rounding::Narrow: {
    APFloat f(x);
    bool lost = false;
    f.convert(*node.semantics, APFloat::rmNearestTiesToEven, &lost);
    return f.convertToDouble();
  }
  case Node::Rounding::Integer:
    return std::trunc(x);
  case Node::Rounding::Bool:
    return x != 0.0 ? 1.0 : 0.0;
  case Node::Rounding::None:
    return x;
  }
  return x;
}

bool compare(int predicate, double a, double b) {
  switch (static_cast<CompareKind>(predicate)) {
  case CompareKind::eq:
    return a == b;
  case CompareKind::lt:
    return a < b;
  case CompareKind::le:
    return a <= b;
  case CompareKind::gt:
    return a > b;
  case CompareKind::ge:
    return a >= b;
  }
  return false;
}

/// `index` of a result of shape `to` mapped onto an operand of shape `from` broadcast to it.
void broadcastIndex(ArrayRef<int64_t> from, size_t toRank, const int64_t *index, int64_t *out) {
  size_t offset = toRank - from.size();
  for (size_t d = 0; d < from.size(); ++d)
    out[d] = from[d] == 1 ? 0 : index[d + offset];
}

/// The row-major offset of `index` in `shape`.
int64_t linearize(ArrayRef<int64_t> shape, const int64_t *index) {
  int64_t n = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    n = n * shape[d] + index[d];
  return n;
}

void delinearize(ArrayRef<int64_t> shape, int64_t n, int64_t *index) {
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = n % shape[d];
    n /= shape[d];
  }
}


/// The value of an elementwise node (or expand) from its operands' values `x` at one index.
double combine(const Node &node, const double *x) {
  double r = 0.0;
  switch (node.kind) {
  case Kind::Add:
    r = x[0] + x[1];
    break;
  case Kind::Sub:
    r = x[0] - x[1];
    break;
  case Kind::Mul:
    r = x[0] * x[1];
    break;
  case Kind::Div:
    r = x[0] / x[1];
    break;
  case Kind::Neg:
    r = -x[0];
    break;
  case Kind::Compare:
    r = compare(node.predicate, x[0], x[1]) ? 1.0 : 0.0;
    break;
  case Kind::And:
    r = x[0] != 0.0 && x[1] != 0.0;
    break;
  case Kind::Or:
    r = x[0] != 0.0 || x[1] != 0.0;
    break;
  case Kind::Not:
    r = x[0] == 0.0;
    break;
  case Kind::Where:
    r = x[0] != 0.0 ? x[1] : x[2];
    break;
  default: // Cast, Broadcast
    r = x[0];
    break;
  }
  return roundAs(node, r);
}

/// Whether a lower (upper: upper) triangle with diagonal offset k keeps row i, column j.
bool triluKeeps(const Node &node, int64_t i, int64_t j) {
  return node.upper ? j - i >= node.k : j - i <= node.k;
}

} // namespace

double LazyElements::eval(unsigned id, const int64_t *index) const {
  const Node &node = nodes[id];
  int64_t sub[kMaxRank];
  size_t rank = node.shape.size();
  switch (node.kind) {
  case Kind::Constant:
    return node.values.size() == 1 ? node.values[0] : node.values[linearize(node.shape, index)];
  case Kind::Range:
    return roundAs(node, node.start + static_cast<double>(index[0]) * node.delta);
  case Kind::Reshape:
    delinearize(nodes[node.operands[0]].shape, linearize(node.shape, index), sub);
    return eval(node.operands[0], sub);
  case Kind::Transpose:
    for (size_t d = 0; d < rank; ++d)
      sub[node.perm[d]] = index[d];
    return eval(node.operands[0], sub);
  case Kind::Slice:
    for (size_t d = 0; d < rank; ++d)
      sub[d] = node.starts[d] + index[d] * node.steps[d];
    return eval(node.operands[0], sub);
  case Kind::Trilu:
    return triluKeeps(node, index[rank - 2], index[rank - 1]) ? eval(node.operands[0], index)
                                                              : 0.0;
  default:
    break;
  }
  double x[3] = {0.0, 0.0, 0.0};
  for (size_t o = 0; o < node.operands.size(); ++o) {
    broadcastIndex(nodes[node.operands[o]].shape, rank, index, sub);
    x[o] = eval(node.operands[o], sub);
  }
  return combine(node, x);
}

void LazyElements::row(ArrayRef<int64_t> index, MutableArrayRef<double> out) const {
  evalRow(nodes.size() - 1, index.data(), out.data());
}

void LazyElements::evalRow(unsigned id, const int64_t *index, double *out) const {
  const Node &node = nodes[id];
  size_t rank = node.shape.size(), last = rank - 1;
  int64_t n = node.shape[last];
  int64_t sub[kMaxRank];
  std::copy(index, index + rank, sub);
  sub[last] = 0;
  // A row that is not a row of the operand: element by element.
  auto elementwise = [&] {
    for (int64_t j = 0; j < n; ++j) {
      sub[last] = j;
      out[j] = eval(id, sub);
    }
  };
  switch (node.kind) {
  case Kind::Constant:
    if (node.values.size() == 1)
      std::fill(out, out + n, node.values[0]);
    else
      std::copy_n(node.values.data() + linearize(node.shape, sub), n, out);
    return;
  case Kind::Range:
    for (int64_t j = 0; j < n; ++j)
      out[j] = roundAs(node, node.start + static_cast<double>(j) * node.delta);
    return;
  case Kind::Reshape: {
    const Node &in = nodes[node.operands[0]];
    if (in.shape.empty() || in.shape.back() != n)
      return elementwise();
    int64_t inSub[kMaxRank];
    delinearize(in.shape, linearize(node.shape, sub), inSub);
    return evalRow(node.operands[0], inSub, out);
  }
  case Kind::Transpose: {
    if (node.perm[last] != static_cast<int64_t>(last))
      return elementwise();
    int64_t inSub[kMaxRank];
    for (size_t d = 0; d < rank; ++d)
      inSub[node.perm[d]] = sub[d];
    return evalRow(node.operands[0], inSub, out);
  }
  case Kind::Slice:
    if (node.starts[last] != 0 || node.steps[last] != 1 ||
        nodes[node.operands[0]].shape[last] != n)
      return elementwise();
    for (size_t d = 0; d < last; ++d)
      sub[d] = node.starts[d] + index[d] * node.steps[d];
    return evalRow(node.operands[0], sub, out);
  case Kind::Trilu:
    evalRow(node.operands[0], sub, out);
    for (int64_t j = 0; j < n; ++j)
      if (!triluKeeps(node, index[rank - 2], j))
        out[j] = 0.0;
    return;
  default:
    break;
  }
  evalElementwiseRow(node, sub, out);
}

void LazyElements::evalElementwiseRow(const Node &node, const int64_t *index, double *out) const {
  size_t rank = node.shape.size();
  int64_t n = node.shape[rank - 1];
  // Each operand's row, or its one value where it broadcasts along the last dim.
  std::vector<double> rows[3];
  double x[3] = {0.0, 0.0, 0.0};
  int64_t sub[kMaxRank];
  for (size_t o = 0; o < node.operands.size(); ++o) {
    const Node &in = nodes[node.operands[o]];
    broadcastIndex(in.shape, rank, index, sub);
    if (in.shape.empty() || in.shape.back() == 1) {
      x[o] = eval(node.operands[o], sub);
      continue;
    }
    rows[o].resize(n);
    evalRow(node.operands[o], sub, rows[o].data());
  }
  for (int64_t j = 0; j < n; ++j) {
    for (size_t o = 0; o < node.operands.size(); ++o)
      if (!rows[o].empty())
        x[o] = rows[o][j];
    out[j] = combine(node, x);
  }
}

} // namespace mlir::rp
