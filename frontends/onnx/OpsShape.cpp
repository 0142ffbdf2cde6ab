//===- OpsShape.cpp - ONNX shape and data-movement ops -> graph -----------===//
//
// Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Expand, Concat, Slice, Split, Gather,
// GatherElements, ScatterElements (reductions none and add), Shape and Size. Operands that
// define shapes (Reshape's shape, Slice's bounds, ...) must be constants known at import
// time; Shape and Size fold to constants.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/IR/ShapeInference.h"
#include "frontends/onnx/ImportContext.h"

#include <algorithm>
#include <numeric>

using namespace mlir;
using namespace mlir::rp;
using namespace mlir::rp::onnx;

namespace {

std::string shapeText(ArrayRef<int64_t> s) { return graph::formatShape(s); }

LogicalResult reshape(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  FailureOr<SmallVector<int64_t>> target = c.constInts(1, "shape");
  if (failed(x) || failed(target))
    return failure();
  ArrayRef<int64_t> in = c.inputType(0).getShape();
  bool allowZero = c.attrInt("allowzero", 0) != 0;
  SmallVector<int64_t> shape(*target);
  int64_t inferred = -1, known = 1;
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (d == 0 && !allowZero) {
      if (i >= in.size())
        return c.fail("Reshape shape " + shapeText(*target) + " copies dimension " +
                      llvm::Twine(i) + " that the input " + shapeText(in) + " does not have");
      d = in[i];
    }
    if (d == -1) {
      if (inferred >= 0)
        return c.fail("Reshape shape " + shapeText(*target) + " has more than one -1");
      inferred = i;
      continue;
    }
    if (d < 0)
      return c.fail("Reshape shape " + shapeText(*target) + " has a negative dimension");
    if (__builtin_mul_overflow(known, d, &known) || known > graph::kMaxElements)
      return c.fail("Reshape shape " + shapeText(*target) + " has too many elements");
  }
  int64_t count = graph::numElements(in);
  if (inferred >= 0) {
    if (known == 0 || count % known != 0)
      return c.fail("Reshape cannot infer the -1 in " + shapeText(*target) + " for input " +
                    shapeText(in));
    shape[inferred] = count / known;
  } else if (known != count) {
    return c.fail("Reshape to " + shapeText(shape) + " (" + llvm::Twine(known) +
                  " elements) of input " + shapeText(in) + " (" + llvm::Twine(count) +
                  " elements)");
  }
  c.setOutput(0, c.reshape(*x, shape));
  return success();
}

LogicalResult flatten(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> in = c.inputType(0).getShape();
  int64_t rank = in.size();
  int64_t a = c.attrInt("axis", 1);
  if (a < -rank || a > rank)
    return c.fail("Flatten axis " + llvm::Twine(a) + " is out of range for rank " +
                  llvm::Twine(rank));
  if (a < 0)
    a += rank;
  int64_t outer = graph::numElements(in.take_front(a));
  int64_t inner = graph::numElements(in.drop_front(a));
  c.setOutput(0, c.reshape(*x, {outer, inner}));
  return success();
}

/// Axes from the `axes` input (opset 13+) or attribute.
FailureOr<SmallVector<int64_t>> axesOf(NodeContext &c, int input) {
  if (c.hasInput(input))
    return c.constInts(input, "axes");
  SmallVector<int64_t> axes;
  if (auto a = c.attrInts("axes"))
    axes.assign(a->begin(), a->end());
  return axes;
}

LogicalResult squeeze(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  FailureOr<SmallVector<int64_t>> axes = axesOf(c, 1);
  if (failed(x) || failed(axes))
    return failure();
  ArrayRef<int64_t> in = c.inputType(0).getShape();
  SmallVector<bool> drop(in.size(), false);
  if (axes->empty()) {
    for (auto [i, d] : llvm::enumerate(in))
      drop[i] = d == 1;
  }
  for (int64_t a : *axes) {
    FailureOr<int64_t> ax = c.axis(a, in.size());
    if (failed(ax))
      return failure();
    if (in[*ax] != 1)
      return c.fail("Squeeze of dimension " + llvm::Twine(*ax) + " of size " +
                    llvm::Twine(in[*ax]) + " (expected 1)");
    drop[*ax] = true;
  }
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(in))
    if (!drop[i])
      shape.push_back(d);
  c.setOutput(0, c.reshape(*x, shape));
  return success();
}

LogicalResult unsqueeze(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  FailureOr<SmallVector<int64_t>> axes = axesOf(c, 1);
  if (failed(x) || failed(axes))
    return failure();
  ArrayRef<int64_t> in = c.inputType(0).getShape();
  int64_t rank = in.size() + axes->size();
  SmallVector<bool> inserted(rank, false);
  for (int64_t a : *axes) {
    FailureOr<int64_t> ax = c.axis(a, rank);
    if (failed(ax))
      return failure();
    if (inserted[*ax])
      return c.fail("Unsqueeze axis " + llvm::Twine(*ax) + " is repeated");
    inserted[*ax] = true;
  }
  SmallVector<int64_t> shape;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    shape.push_back(inserted[i] ? 1 : in[next++]);
  c.setOutput(0, c.reshape(*x, shape));
  return success();
}

LogicalResult transpose(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  if (failed(x))
    return failure();
  int64_t rank = c.inputType(0).getRank();
  SmallVector<int64_t> perm;
  if (auto p = c.attrInts("perm")) {
    for (int64_t v : *p) {
      FailureOr<int64_t> ax = c.axis(v, rank, "perm entry");
      if (failed(ax))
        return failure();
      perm.push_back(*ax);
    }
  } else {
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  }
  if (auto shape = graph::transposeShape(c.inputType(0).getShape(), perm); !shape)
    return c.fail(llvm::toString(shape.takeError()));
  c.setOutput(0, graph::TransposeOp::create(c.b, c.loc, *x, c.b.getDenseI64ArrayAttr(perm)));
  return success();
}

LogicalResult expand(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  FailureOr<SmallVector<int64_t>> target = c.constInts(1, "shape");
  if (failed(x) || failed(target))
    return failure();
  auto shape = graph::broadcastShapes({c.inputType(0).getShape(), *target});
  if (!shape)
    return c.fail("Expand: " + llvm::toString(shape.takeError()));
  auto type = c.inputType(0).clone(*shape);
  Value v = *x;
  if (type != c.inputType(0))
    v = graph::ExpandOp::create(c.b, c.loc, type, *x);
  c.setOutput(0, v);
  return success();
}

/// Tile(x, repeats) (ONNX Tile-13; torch.Tensor.repeat) with constant repeats:
/// out[..., j, ...] = x[..., j mod d, ...] along each dimension of size d repeated r times.
/// Imported as reshape(x -> [1, d0, 1, d1, ...]), expand to [r0, d0, r1, d1, ...], reshape to
/// [r0 * d0, r1 * d1, ...]: the expand's VJP sums the copies' gradients.
LogicalResult tile(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  FailureOr<SmallVector<int64_t>> repeats = c.constInts(1, "repeats");
  if (failed(x) || failed(repeats))
    return failure();
  ArrayRef<int64_t> in = c.inputType(0).getShape();
  if (repeats->size() != in.size())
    return c.fail("Tile: repeats has " + llvm::Twine(repeats->size()) +
                  " entries, expected one per input dimension (" + llvm::Twine(in.size()) + ")");
  SmallVector<int64_t> split, wide, out;
  int64_t total = 1;
  for (auto [d, r] : llvm::zip(in, *repeats)) {
    if (r < 0)
      return c.fail("Tile: repeats must be non-negative, got " + llvm::Twine(r));
    int64_t n = 0;
    if (__builtin_mul_overflow(r, d, &n) || __builtin_mul_overflow(total, n, &total) ||
        total > graph::kMaxElements)
      return c.fail("Tile: the result would have more than 2^48 elements");
    split.append({1, d});
    wide.append({r, d});
    out.push_back(n);
  }
  if (ArrayRef<int64_t>(out) == in) {
    c.setOutput(0, *x);
    return success();
  }
  Value v = c.reshape(*x, split);
  v = graph::ExpandOp::create(c.b, c.loc, c.inputType(0).clone(wide), v);
  c.setOutput(0, c.reshape(v, out));
  return success();
}

LogicalResult concat(NodeContext &c) {
  SmallVector<Value> inputs;
  SmallVector<ArrayRef<int64_t>> shapes;
  for (int i = 0; i < c.numInputs(); ++i) {
    FailureOr<Value> v = c.input(i);
    if (failed(v))
      return failure();
    inputs.push_back(*v);
    shapes.push_back(c.inputType(i).getShape());
  }
  if (inputs.empty())
    return c.fail("Concat needs at least one input");
  FailureOr<int64_t> ax = c.axis(c.attrInt("axis", 0), shapes.front().size());
  if (failed(ax))
    return failure();
  for (Value v : inputs)
    if (cast<RankedTensorType>(v.getType()).getElementType() !=
        cast<RankedTensorType>(inputs.front().getType()).getElementType())
      return c.fail("Concat inputs have different element types");
  if (auto shape = graph::concatShape(shapes, *ax); !shape)
    return c.fail(llvm::toString(shape.takeError()));
  c.setOutput(0, graph::ConcatOp::create(c.b, c.loc, inputs, c.b.getI64IntegerAttr(*ax)));
  return success();
}

LogicalResult slice(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  FailureOr<SmallVector<int64_t>> starts = c.constInts(1, "starts");
  FailureOr<SmallVector<int64_t>> ends = c.constInts(2, "ends");
  if (failed(x) || failed(starts) || failed(ends))
    return failure();
  ArrayRef<int64_t> in = c.inputType(0).getShape();
  int64_t rank = in.size();
  size_t n = starts->size();
  SmallVector<int64_t> axes, steps(n, 1);
  if (c.hasInput(3)) {
    FailureOr<SmallVector<int64_t>> a = c.constInts(3, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  } else {
    for (size_t i = 0; i < n; ++i)
      axes.push_back(i);
  }
  if (c.hasInput(4)) {
    FailureOr<SmallVector<int64_t>> s = c.constInts(4, "steps");
    if (failed(s))
      return failure();
    steps = *s;
  }
  if (ends->size() != n || axes.size() != n || steps.size() != n)
    return c.fail("Slice starts, ends, axes and steps have different lengths");
  // Normalise as the ONNX specification does, then sort by axis.
  struct Bound { int64_t axis, start, end, step; };
  SmallVector<Bound> bounds;
  for (size_t i = 0; i < n; ++i) {
    FailureOr<int64_t> ax = c.axis(axes[i], rank);
    if (failed(ax))
      return failure();
    int64_t dim = in[*ax], step = steps[i];
    if (step == 0)
      return c.fail("Slice step on axis " + llvm::Twine(*ax) + " is 0");
    int64_t start = (*starts)[i], end = (*ends)[i];
    if (start < 0)
      start += dim;
    if (end < 0)
      end += dim;
    if (dim == 0) {
      start = end = 0; // an empty dimension stays empty
      step = 1;
    } else if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::max(std::clamp<int64_t>(end, 0, dim), start);
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::min(std::clamp<int64_t>(end, -1, dim - 1), start);
    }
    bounds.push_back({*ax, start, end, step});
  }
  llvm::sort(bounds, [](const Bound &a, const Bound &b) { return a.axis < b.axis; });
  SmallVector<int64_t> ax, st, en, sp;
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (i && bounds[i].axis == bounds[i - 1].axis)
      return c.fail("Slice axis " + llvm::Twine(bounds[i].axis) + " is repeated");
    ax.push_back(bounds[i].axis);
    st.push_back(bounds[i].start);
    en.push_back(bounds[i].end);
    sp.push_back(bounds[i].step);
  }
  if (ax.empty()) {
    c.setOutput(0, *x);
    return success();
  }
  if (auto shape = graph::sliceShape(in, ax, st, en, sp); !shape)
    return c.fail(llvm::toString(shape.takeError()));
  c.setOutput(0, graph::SliceOp::create(c.b, c.loc, *x, c.b.getDenseI64ArrayAttr(ax),
                                        c.b.getDenseI64ArrayAttr(st), c.b.getDenseI64ArrayAttr(en),
                                        c.b.getDenseI64ArrayAttr(sp)));
  return success();
}

/// Sizes of pieces of `chunk` along a dimension of `dim`, the last one smaller (Split-18's
/// num_outputs, SplitToSequence's scalar split).
SmallVector<int64_t> chunkSizes(int64_t dim, int64_t chunk) {
  SmallVector<int64_t> sizes;
  for (int64_t left = dim; left > 0; left -= chunk)
    sizes.push_back(std::min(chunk, left));
  return sizes;
}

/// graph.split of `x` along `axis` into `sizes` (checked against the shape).
FailureOr<graph::SplitOp> createSplit(NodeContext &c, Value x, int64_t axis,
                                      ArrayRef<int64_t> sizes) {
  auto shapes = graph::splitShapes(cast<RankedTensorType>(x.getType()).getShape(), axis, sizes);
  if (!shapes)
    return c.fail(llvm::toString(shapes.takeError()));
  return graph::SplitOp::create(c.b, c.loc, x, c.b.getI64IntegerAttr(axis),
                                c.b.getDenseI64ArrayAttr(sizes));
}

LogicalResult split(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> in = c.inputType(0).getShape();
  FailureOr<int64_t> ax = c.axis(c.attrInt("axis", 0), in.size());
  if (failed(ax))
    return failure();
  int64_t dim = in[*ax];
  SmallVector<int64_t> sizes;
  if (c.hasInput(1)) {
    FailureOr<SmallVector<int64_t>> s = c.constInts(1, "split");
    if (failed(s))
      return failure();
    sizes = *s;
  } else if (auto s = c.attrInts("split")) {
    sizes.assign(s->begin(), s->end());
  } else {
    int64_t parts = c.attrInt("num_outputs", c.numOutputs());
    if (parts <= 0)
      return c.fail("Split into " + llvm::Twine(parts) + " outputs");
    if (c.attr("num_outputs")) {
      // Opset 18: chunks of ceil(dim / parts), the last one smaller.
      sizes = chunkSizes(dim, (dim + parts - 1) / parts);
    } else {
      if (dim % parts != 0)
        return c.fail("Split of dimension " + llvm::Twine(dim) + " into " + llvm::Twine(parts) +
                      " equal parts");
      sizes.assign(parts, dim / parts);
    }
  }
  if (static_cast<int>(sizes.size()) != c.numOutputs())
    return c.fail("Split makes " + llvm::Twine(sizes.size()) + " pieces for " +
                  llvm::Twine(c.numOutputs()) + " outputs");
  FailureOr<graph::SplitOp> op = createSplit(c, *x, *ax, sizes);
  if (failed(op))
    return failure();
  for (int i = 0; i < c.numOutputs(); ++i)
    c.setOutput(i, op->getResult(i));
  return success();
}

/// Constant indices are normalised to [0, dim) (negative ones count from the end).
FailureOr<Value> normalisedIndices(NodeContext &c, Value indices, int64_t dim) {
  std::optional<DenseElementsAttr> k = NodeContext::constantOf(indices);
  if (!k)
    return indices;
  SmallVector<APInt> values;
  bool changed = false;
  for (APInt v : k->getValues<APInt>()) {
    int64_t i = v.getSExtValue();
    if (i < -dim || i >= dim)
      return c.fail("index " + llvm::Twine(i) + " is out of range for a dimension of size " +
                    llvm::Twine(dim));
    if (i < 0) {
      changed = true;
      v = APInt(v.getBitWidth(), i + dim, true);
    }
    values.push_back(v);
  }
  if (!changed)
    return indices;
  return c.constant(DenseElementsAttr::get(k->getType(), values));
}

LogicalResult gather(NodeContext &c) {
  FailureOr<Value> data = c.input(0), idx = c.input(1);
  if (failed(data) || failed(idx))
    return failure();
  FailureOr<int64_t> ax = c.axis(c.attrInt("axis", 0), c.inputType(0).getRank());
  if (failed(ax))
    return failure();
  if (!c.inputType(1).getElementType().isInteger(64) &&
      !c.inputType(1).getElementType().isInteger(32))
    return c.fail("Gather indices must be int64 or int32");
  FailureOr<Value> indices = normalisedIndices(c, *idx, c.inputType(0).getDimSize(*ax));
  if (failed(indices))
    return failure();
  c.setOutput(0, graph::GatherOp::create(c.b, c.loc, *data, *indices, c.b.getI64IntegerAttr(*ax)));
  return success();
}

LogicalResult gatherElements(NodeContext &c) {
  FailureOr<Value> data = c.input(0), idx = c.input(1);
  if (failed(data) || failed(idx))
    return failure();
  FailureOr<int64_t> ax = c.axis(c.attrInt("axis", 0), c.inputType(0).getRank());
  if (failed(ax))
    return failure();
  if (auto shape = graph::gatherElementsShape(c.inputType(0).getShape(),
                                              c.inputType(1).getShape(), *ax);
      !shape)
    return c.fail(llvm::toString(shape.takeError()));
  FailureOr<Value> indices = normalisedIndices(c, *idx, c.inputType(0).getDimSize(*ax));
  if (failed(indices))
    return failure();
  c.setOutput(0, graph::GatherElementsOp::create(c.b, c.loc, *data, *indices,
                                                 c.b.getI64IntegerAttr(*ax)));
  return success();
}

/// A type as MLIR prints it (`tensor<4xf32>`), for messages.
std::string formatType(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

} // namespace

FailureOr<bool> mlir::rp::onnx::scatterAdds(NodeContext &c) {
  std::string reduction = c.attrString("reduction", "none");
  if (reduction != "none" && reduction != "add")
    return c.fail(c.node.op_type() + ": reduction '" + reduction +
                  "' is not supported (only 'none' and 'add')");
  if (reduction == "add" && !isa<FloatType>(c.inputType(0).getElementType()))
    return c.fail(c.node.op_type() + ": reduction 'add' takes float data only, got " +
                  formatType(c.inputType(0)));
  return reduction == "add";
}

namespace {

/// ScatterElements(data, indices, updates) (ONNX ScatterElements-13/16/18). Without a
/// reduction (`torch.Tensor.scatter`: a router's top-k weights scattered into a dense
/// [tokens, experts] mask) it is graph.scatter_elements: any element type, a repeated target
/// keeps the later update of its line. With reduction "add" (a mixture of experts'
/// load-balancing loss counts each expert's routed tokens with `zeros(E).scatter_add_(0,
/// expert_ids, mask)`): `data + graph.scatter_elements_add(updates, indices, axis)`, or the
/// scatter alone when data is a constant of zeros; float data; repeated indices accumulate in
/// the row-major order of updates. The reductions "mul", "max" and "min" are not supported.
LogicalResult scatterElements(NodeContext &c) {
  FailureOr<Value> data = c.input(0), idx = c.input(1), updates = c.input(2);
  if (failed(data) || failed(idx) || failed(updates))
    return failure();
  FailureOr<bool> adds = scatterAdds(c);
  if (failed(adds))
    return failure();
  RankedTensorType dataType = c.inputType(0);
  FailureOr<int64_t> ax = c.axis(c.attrInt("axis", 0), dataType.getRank());
  if (failed(ax))
    return failure();
  ArrayRef<int64_t> indexShape = c.inputType(1).getShape();
  if (indexShape != c.inputType(2).getShape())
    return c.fail("ScatterElements: indices " + formatType(c.inputType(1)) +
                  " and updates " + formatType(c.inputType(2)) + " must have the same shape");
  if (auto shape = graph::gatherElementsShape(dataType.getShape(), indexShape, *ax); !shape)
    return c.fail("ScatterElements: " + llvm::toString(shape.takeError()));
  FailureOr<Value> indices = normalisedIndices(c, *idx, dataType.getDimSize(*ax));
  if (failed(indices))
    return failure();
  IntegerAttr axis = c.b.getI64IntegerAttr(*ax);
  if (!*adds) {
    c.setOutput(0, graph::ScatterElementsOp::create(c.b, c.loc, *data, *indices, *updates, axis));
    return success();
  }
  Value sum = graph::ScatterElementsAddOp::create(c.b, c.loc, dataType, *updates, *indices, axis);
  std::optional<DenseElementsAttr> k = NodeContext::constantOf(*data);
  bool zeros = k && k->isSplat() && k->getSplatValue<APFloat>().isZero();
  c.setOutput(0, zeros ? sum : graph::AddOp::create(c.b, c.loc, *data, sum).getResult());
  return success();
}

LogicalResult shape(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> in = c.inputType(0).getShape();
  int64_t rank = in.size();
  int64_t start = c.attrInt("start", 0), end = c.attrInt("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  SmallVector<int64_t> dims(in.begin() + start, in.begin() + std::max(start, end));
  auto type = RankedTensorType::get({static_cast<int64_t>(dims.size())}, c.b.getI64Type());
  c.setOutput(0, c.constant(DenseElementsAttr::get(type, ArrayRef<int64_t>(dims))));
  return success();
}

LogicalResult size(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  if (failed(x))
    return failure();
  c.setOutput(0, c.scalar(c.b.getI64Type(),
                          static_cast<double>(c.inputType(0).getNumElements())));
  return success();
}

/// SplitToSequence(x[, split]) (ONNX SplitToSequence-11): pieces along `axis` of the sizes
/// `split` gives (a scalar: equal chunks, the last one smaller; a 1-D tensor: the sizes), or of
/// size 1 without `split`, squeezed unless keepdims. The pieces are kept as a sequence for
/// SequenceAt.
LogicalResult splitToSequence(NodeContext &c) {
  FailureOr<Value> x = c.input(0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> in = c.inputType(0).getShape();
  FailureOr<int64_t> ax = c.axis(c.attrInt("axis", 0), in.size());
  if (failed(ax))
    return failure();
  int64_t dim = in[*ax];
  SmallVector<int64_t> sizes;
  bool squeeze = false;
  if (c.hasInput(1)) {
    FailureOr<SmallVector<int64_t>> s = c.constInts(1, "split");
    if (failed(s))
      return failure();
    if (c.inputType(1).getRank() == 0) {
      int64_t chunk = (*s)[0];
      if (chunk <= 0)
        return c.fail("SplitToSequence with a chunk size of " + llvm::Twine(chunk));
      sizes = chunkSizes(dim, chunk);
    } else {
      sizes = *s;
    }
  } else {
    sizes.assign(dim, 1);
    squeeze = c.attrInt("keepdims", 1) == 0;
  }
  FailureOr<graph::SplitOp> op = createSplit(c, *x, *ax, sizes);
  if (failed(op))
    return failure();
  SmallVector<Value> pieces(op->getResults().begin(), op->getResults().end());
  if (squeeze) {
    SmallVector<int64_t> shape(in.begin(), in.end());
    shape.erase(shape.begin() + *ax);
    for (Value &p : pieces)
      p = c.reshape(p, shape);
  }
  c.setSequenceOutput(0, std::move(pieces));
  return success();
}

/// SequenceAt(sequence, position) with a constant position (negative: from the end).
LogicalResult sequenceAt(NodeContext &c) {
  FailureOr<SmallVector<Value>> seq = c.sequenceInput(0);
  if (failed(seq))
    return failure();
  FailureOr<int64_t> position = c.constInt(1, "position");
  if (failed(position))
    return failure();
  int64_t n = static_cast<int64_t>(seq->size());
  int64_t p = *position;
  if (p < -n || p >= n)
    return c.fail("SequenceAt position " + llvm::Twine(p) + " is out of range for a sequence of " +
                  llvm::Twine(n));
  c.setOutput(0, (*seq)[p < 0 ? p + n : p]);
  return success();
}

const OpEntry kOps[] = {
    {"SplitToSequence", 11, splitToSequence},
    {"SequenceAt", 11, sequenceAt},
    {"Reshape", 13, reshape},     {"Reshape", 14, reshape},     {"Reshape", 19, reshape},
    {"Reshape", 21, reshape},     {"Reshape", 23, reshape},     {"Flatten", 13, flatten},
    {"Flatten", 21, flatten},     {"Flatten", 23, flatten},     {"Squeeze", 13, squeeze},
    {"Squeeze", 21, squeeze},     {"Squeeze", 23, squeeze},     {"Unsqueeze", 13, unsqueeze},
    {"Unsqueeze", 21, unsqueeze}, {"Unsqueeze", 23, unsqueeze}, {"Transpose", 13, transpose},
    {"Transpose", 21, transpose}, {"Transpose", 23, transpose}, {"Expand", 13, expand},
    {"Tile", 13, tile},           {"Concat", 13, concat},       {"Slice", 13, slice},         {"Split", 13, split},
    {"Split", 18, split},         {"Gather", 13, gather},       {"GatherElements", 13, gatherElements},
    {"ScatterElements", 13, scatterElements}, {"ScatterElements", 16, scatterElements},
    {"ScatterElements", 18, scatterElements},
    {"Shape", 13, shape},         {"Shape", 15, shape},         {"Shape", 19, shape},
    {"Shape", 21, shape},         {"Shape", 23, shape},         {"Size", 13, size},
    {"Size", 19, size},           {"Size", 21, size},           {"Size", 23, size},
};

} // namespace

llvm::ArrayRef<OpEntry> mlir::rp::onnx::shapeOps() { return kOps; }
