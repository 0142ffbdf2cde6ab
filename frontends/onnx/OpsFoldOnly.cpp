//===- OpsFoldOnly.cpp - ONNX ops folded on constants, and index tuples ---===//
//
// Cos and Sin appear in exported causal LMs in the rotary embedding tables (cos/sin of
// inv_freq x positions, with `rp.buffers` making inv_freq a constant). Where the positions
// are known at compile time (0..S-1 once the dimensions are bound) the importer computes the
// tables here, in float64 and rounded to the result type once, and emits a graph.constant;
// where they are a graph input (packed sequences: `position_ids` restarting at each
// document) it emits graph.cos / graph.sin, computed at run time. The index-tuple ops live
// here too: GatherND (Hugging Face's
// packed-sequence bookkeeping, which folds; Falcon's split of its fused query-key-value
// projection; a mixture of experts' `weights[expert_ids]`) becomes a graph.gather of rows
// (gatherND, gatherNDComputed), and ScatterND (in-place slice assignment) a graph.scatter of
// rows (scatterND).
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/Eval/Evaluator.h"
#include "dialects/Graph/IR/ShapeInference.h"
#include "frontends/onnx/ImportContext.h"
#include "kernels/cpu/Cast.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::rp;
using namespace mlir::rp::onnx;
using ::rp::base::DType;
using ::rp::base::HostTensor;

namespace {

/// The constant value of input `i` as an f64 tensor, or a failure naming why.
FailureOr<HostTensor> constantInput(NodeContext &c, int i) {
  FailureOr<Value> v = c.input(i);
  if (failed(v))
    return failure();
  std::optional<DenseElementsAttr> attr = NodeContext::constantOf(*v);
  if (!attr)
    return c.fail("'" + c.node.op_type() +
                  "' is supported only on compile-time constant inputs (rotary tables, "
                  "position ids); input " + std::to_string(i) +
                  " depends on the model's inputs or trainable parameters");
  // Float constants come in f64 storage; integer and boolean ones keep theirs: widen them (exact
  // for the indices and counts these ops see, |v| < 2^53).
  HostTensor t = graph::tensorFromAttr(*attr, graph::EvalPrecision::F64);
  if (t.dtype() == DType::F64)
    return t;
  HostTensor wide(DType::F64, t.shape());
  ::rp::base::Status s = ::rp::kernels::cpu::cast(t, wide);
  if (!s.ok())
    return c.fail(s.message());
  return wide;
}

/// Emits `values` (f64, in row-major order) as a constant of `type` (f32 or i64), converted as
/// graph.cast converts (kernels/cpu/Cast.h).
Value emit(NodeContext &c, RankedTensorType type, const HostTensor &values) {
  HostTensor out(isa<IntegerType>(type.getElementType()) ? DType::I64 : DType::F32,
                 std::vector<int64_t>(type.getShape().begin(), type.getShape().end()));
  // Same shape and valid dtypes: the cast cannot fail.
  (void)::rp::kernels::cpu::cast(values, out);
  return c.constant(toAttr(c.b.getContext(), out));
}

/// Cos or Sin: folded in float64 on a constant input (f32 only), else the graph op `OpTy` on
/// the run-time value (any float type).
template <double (*Fn)(double), typename OpTy>
LogicalResult trig(NodeContext &c) {
  FailureOr<Value> input = c.input(0);
  if (failed(input))
    return failure();
  RankedTensorType type = c.inputType(0);
  if (!isa<FloatType>(type.getElementType()))
    return c.fail("'" + c.node.op_type() + "' of a non-float tensor is not supported");
  if (!NodeContext::constantOf(*input)) {
    c.setOutput(0, OpTy::create(c.b, c.loc, *input));
    return success();
  }
  if (!type.getElementType().isF32())
    return c.fail("'" + c.node.op_type() + "' of a non-f32 constant is not supported");
  FailureOr<HostTensor> x = constantInput(c, 0);
  if (failed(x))
    return failure();
  double *p = x->data<double>();
  for (int64_t k = 0; k < x->numElements(); ++k)
    p[k] = Fn(p[k]);
  c.setOutput(0, emit(c, type, *x));
  return success();
}

double cosFn(double v) { return std::cos(v); }
double sinFn(double v) { return std::sin(v); }

/// GatherND's shapes (ONNX GatherND-13): data `[batch..., D_b .. D_{b+k-1}, slice...]`,
/// indices `[batch..., tuple..., k]`, result `indices.shape[:-1] + data.shape[b + k:]`.
/// ScatterND's are GatherND's with b = 0, its updates of the result's shape.
struct GatherNDLayout {
  SmallVector<int64_t> shape;  // the result's
  int64_t b = 0, k = 0;        // batch_dims, the index tuples' length
  int64_t batches = 1, tuples = 1, slice = 1;
  int64_t indexed = 1;         // D_b * ... * D_{b+k-1}: the slices of one batch entry
};

/// Checks GatherND's (or ScatterND's) attributes and shapes; the layout, or a failure naming
/// why (and the op).
FailureOr<GatherNDLayout> gatherNDLayout(NodeContext &c) {
  ArrayRef<int64_t> ds = c.inputType(0).getShape(), is = c.inputType(1).getShape();
  GatherNDLayout l;
  l.b = c.attrInt("batch_dims", 0);
  int64_t r = static_cast<int64_t>(ds.size()), q = static_cast<int64_t>(is.size());
  if (q < 1 || l.b < 0 || l.b >= std::min(r, q))
    return c.fail(c.node.op_type() +
                  ": batch_dims must be in [0, min(rank(data), rank(indices)))");
  l.k = is.back();
  if (l.k < 1 || l.b + l.k > r)
    return c.fail(c.node.op_type() + ": indices.shape[-1] must be in [1, rank(data) - batch_dims]");
  for (int64_t d = 0; d < l.b; ++d)
    if (ds[d] != is[d])
      return c.fail(c.node.op_type() + ": the batch dimensions of data and indices differ");
  l.shape.assign(is.begin(), is.end() - 1);
  l.shape.append(ds.begin() + l.b + l.k, ds.end());
  for (int64_t d = 0; d < l.b; ++d)
    l.batches *= ds[d];
  for (int64_t d = l.b; d < q - 1; ++d)
    l.tuples *= is[d];
  for (int64_t d = l.b; d < l.b + l.k; ++d)
    l.indexed *= ds[d];
  for (int64_t d = l.b + l.k; d < r; ++d)
    l.slice *= ds[d];
  return l;
}

/// The row of each index tuple in data viewed as `[batches * indexed, slice...]`, negative
/// indices counted from the end; a failure naming an out-of-range index.
FailureOr<SmallVector<int64_t>> gatherNDRows(NodeContext &c, const GatherNDLayout &l,
                                             const HostTensor &indices) {
  ArrayRef<int64_t> ds = c.inputType(0).getShape();
  const double *idx = indices.data<double>();
  SmallVector<int64_t> rows;
  for (int64_t bi = 0; bi < l.batches; ++bi)
    for (int64_t t = 0; t < l.tuples; ++t) {
      const double *tuple = idx + (bi * l.tuples + t) * l.k;
      int64_t offset = 0;
      for (int64_t j = 0; j < l.k; ++j) {
        int64_t dim = ds[l.b + j];
        int64_t v = static_cast<int64_t>(tuple[j]);
        if (v < 0)
          v += dim;
        if (v < 0 || v >= dim)
          return c.fail(c.node.op_type() + ": index " +
                        std::to_string(static_cast<int64_t>(tuple[j])) +
                        " is out of range for a dimension of size " + std::to_string(dim));
        offset = offset * dim + v;
      }
      rows.push_back(bi * l.indexed + offset);
    }
  return rows;
}

/// GatherND with indices computed at run time (a mixture of experts' `weights[expert_ids]`,
/// the ids from a TopK): supported for index tuples of one element and batch_dims 0, where it
/// is exactly `graph.gather(data, indices[..., 0], axis 0)` (the gather's kernels check each
/// index against data.shape[0], negative ones counting from the end; its VJP scatter-adds into
/// the data's gradient in a fixed order). Longer tuples would need each coordinate checked
/// against its own dimension before they are combined into one row: not supported.
LogicalResult gatherNDComputed(NodeContext &c, Value data, Value indices) {
  FailureOr<GatherNDLayout> l = gatherNDLayout(c);
  if (failed(l))
    return failure();
  if (l->k != 1 || l->b != 0)
    return c.fail("GatherND with indices computed at run time is supported only for index "
                  "tuples of one element (indices.shape[-1] = 1) and batch_dims 0; got " +
                  std::to_string(l->k) + " and " + std::to_string(l->b));
  ArrayRef<int64_t> is = c.inputType(1).getShape();
  Value rows = c.reshape(indices, is.drop_back());
  c.setOutput(0, graph::GatherOp::create(c.b, c.loc, data, rows, c.b.getI64IntegerAttr(0)));
  return success();
}

/// GatherND(data, indices) with `batch_dims` (ONNX GatherND-13): out[b..., i...] =
/// data[b..., indices[b..., i..., :]...], negative indices counted from the end. The indices
/// must be constant. Constant data (position bookkeeping) folds; other data (Falcon's split
/// of its fused query-key-value projection, `qkv[..., :-2, :]` exported as a lifted index
/// list) becomes `reshape(gather(reshape(data -> [batches * indexed, slice...]), rows, axis
/// 0) -> result)`: graph.gather has kernels and a VJP.
LogicalResult gatherND(NodeContext &c) {
  FailureOr<Value> dataValue = c.input(0), indexValue = c.input(1);
  if (failed(dataValue) || failed(indexValue))
    return failure();
  if (!NodeContext::constantOf(*indexValue))
    return gatherNDComputed(c, *dataValue, *indexValue);
  FailureOr<HostTensor> indices = constantInput(c, 1);
  if (failed(indices))
    return failure();
  FailureOr<GatherNDLayout> l = gatherNDLayout(c);
  if (failed(l))
    return failure();
  FailureOr<SmallVector<int64_t>> rows = gatherNDRows(c, *l, *indices);
  if (failed(rows))
    return failure();
  RankedTensorType dataType = c.inputType(0);
  ArrayRef<int64_t> ds = dataType.getShape();
  Type element = dataType.getElementType();
  if (!NodeContext::constantOf(*dataValue)) {
    SmallVector<int64_t> flat{l->batches * l->indexed};
    flat.append(ds.begin() + l->b + l->k, ds.end());
    auto rowType = RankedTensorType::get({static_cast<int64_t>(rows->size())}, c.b.getI64Type());
    Value rowIds = c.constant(DenseElementsAttr::get(rowType, ArrayRef<int64_t>(*rows)));
    Value gathered = graph::GatherOp::create(c.b, c.loc, c.reshape(*dataValue, flat), rowIds,
                                             c.b.getI64IntegerAttr(0));
    c.setOutput(0, c.reshape(gathered, l->shape));
    return success();
  }
  if (!element.isF32() && !element.isInteger(64))
    return c.fail("GatherND of this element type is not supported (f32, i64)");
  FailureOr<HostTensor> data = constantInput(c, 0);
  if (failed(data))
    return failure();
  HostTensor out(::rp::base::DType::F64, std::vector<int64_t>(l->shape.begin(), l->shape.end()));
  for (auto [n, row] : llvm::enumerate(*rows))
    std::copy_n(data->data<double>() + row * l->slice, l->slice, out.data<double>() + n * l->slice);
  c.setOutput(0, emit(c, RankedTensorType::get(l->shape, element), out));
  return success();
}

/// ScatterND(data, indices, updates) (ONNX ScatterND-13/16/18) with reduction none or add:
/// data [d0, ..., d(r-1)], indices [..., k], updates indices.shape[:-1] + data.shape[k:]. The
/// data viewed as rows [d0 * ... * d(k-1), d(k), ...] has one row per index tuple, so the
/// scatter is a graph.scatter (none: in-place slice assignment, `k[..., :r] = k_rot`; a
/// repeated row keeps its last update) or data + graph.scatter_add (add) of the updates viewed
/// as [tuples, d(k), ...] on axis 0 of the rows. Constant indices are checked and combined into
/// rows here; indices computed at run time are taken for tuples of one element (k = 1: the
/// indices are the rows, which the kernels check), as GatherND's. The reductions "mul", "max"
/// and "min" are not supported.
LogicalResult scatterND(NodeContext &c) {
  FailureOr<Value> data = c.input(0), indexValue = c.input(1), updates = c.input(2);
  if (failed(data) || failed(indexValue) || failed(updates))
    return failure();
  FailureOr<bool> adds = scatterAdds(c);
  if (failed(adds))
    return failure();
  RankedTensorType dataType = c.inputType(0);
  FailureOr<GatherNDLayout> l = gatherNDLayout(c);
  if (failed(l))
    return failure();
  if (c.inputType(2).getShape() != ArrayRef<int64_t>(l->shape))
    return c.fail("ScatterND: updates have shape " +
                  graph::formatShape(c.inputType(2).getShape()) + ", expected " +
                  graph::formatShape(l->shape) +
                  " (indices.shape[:-1] + data.shape[indices.shape[-1]:])");
  Value rows;
  if (NodeContext::constantOf(*indexValue)) {
    FailureOr<HostTensor> indices = constantInput(c, 1);
    if (failed(indices))
      return failure();
    FailureOr<SmallVector<int64_t>> r = gatherNDRows(c, *l, *indices);
    if (failed(r))
      return failure();
    auto rowType = RankedTensorType::get({l->tuples}, c.b.getI64Type());
    rows = c.constant(DenseElementsAttr::get(rowType, ArrayRef<int64_t>(*r)));
  } else {
    if (l->k != 1)
      return c.fail("ScatterND with indices computed at run time is supported only for index "
                    "tuples of one element (indices.shape[-1] = 1); got " +
                    std::to_string(l->k));
    rows = c.reshape(*indexValue, {l->tuples});
  }
  ArrayRef<int64_t> ds = dataType.getShape();
  SmallVector<int64_t> flatData{l->indexed}, flatUpdates{l->tuples};
  flatData.append(ds.begin() + l->k, ds.end());
  flatUpdates.append(ds.begin() + l->k, ds.end());
  Value target = c.reshape(*data, flatData), source = c.reshape(*updates, flatUpdates);
  IntegerAttr axis = c.b.getI64IntegerAttr(0);
  Value result;
  if (!*adds) {
    result = graph::ScatterOp::create(c.b, c.loc, target, rows, source, axis);
  } else {
    Value sum = graph::ScatterAddOp::create(c.b, c.loc, target.getType(), source, rows, axis);
    result = graph::AddOp::create(c.b, c.loc, target, sum);
  }
  c.setOutput(0, c.reshape(result, ds));
  return success();
}

const OpEntry kOps[] = {
    {"Cos", 7, trig<cosFn, graph::CosOp>},
    {"Sin", 7, trig<sinFn, graph::SinOp>},
    {"GatherND", 13, gatherND},
    {"ScatterND", 13, scatterND},
    {"ScatterND", 16, scatterND},
    {"ScatterND", 18, scatterND},
};

} // namespace

llvm::ArrayRef<OpEntry> mlir::rp::onnx::foldOnlyOps() { return kOps; }
