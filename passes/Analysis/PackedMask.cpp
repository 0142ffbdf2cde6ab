//===- PackedMask.cpp - recognising block-diagonal causal masks -----------===//

#include "passes/Analysis/PackedMask.h"

#include "passes/Analysis/CausalMask.h"

#include "dialects/Graph/Eval/Evaluator.h"
#include "dialects/Graph/IR/GraphOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <functional>
#include <random>
#include <string>
#include <vector>

namespace mlir::rp {

namespace {

using ::rp::base::DType;
using ::rp::base::HostTensor;

/// The ops computing `mask`, in an order where every operand comes first, and the one
/// function argument they read (integer `[B, S]`); failure when the mask reads anything else
/// (a param, another argument, an op with regions) or has more than kMaxPackedMaskOps ops.
LogicalResult sliceOf(Value mask, int64_t seq, SmallVectorImpl<Operation *> &ops,
                      Value &positions) {
  llvm::SetVector<Operation *> seen;
  std::function<LogicalResult(Value)> visit = [&](Value v) -> LogicalResult {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type || type.getRank() != 2 || type.getDimSize(1) != seq ||
          !isa<IntegerType>(type.getElementType()) || type.getElementType().isInteger(1) ||
          (positions && positions != v))
        return failure();
      positions = v;
      return success();
    }
    Operation *op = v.getDefiningOp();
    if (seen.contains(op))
      return success();
    if (op->getNumRegions() != 0 || isa<graph::ParamOp, graph::LoadParamOp>(op) ||
        op->getDialect() != mask.getDefiningOp()->getDialect() ||
        static_cast<int>(seen.size()) >= kMaxPackedMaskOps)
      return failure();
    for (Value operand : op->getOperands())
      if (failed(visit(operand)))
        return failure();
    seen.insert(op); // after its operands: a topological order
    return success();
  };
  if (!mask.getDefiningOp() || failed(visit(mask)) || !positions)
    return failure();
  ops.assign(seen.begin(), seen.end());
  return success();
}

/// The mask's value for position ids `pos` (the argument's dtype), or nullopt when an op
/// cannot be evaluated.
std::optional<HostTensor> evaluate(ArrayRef<Operation *> ops, Value positions,
                                   HostTensor pos, Value mask) {
  llvm::DenseMap<Value, HostTensor> values;
  values.try_emplace(positions, std::move(pos));
  for (Operation *op : ops) {
    SmallVector<const HostTensor *> operands;
    for (Value operand : op->getOperands())
      operands.push_back(&values.find(operand)->second);
    std::string error;
    FailureOr<SmallVector<HostTensor>> results =
        graph::evaluateOp(op, operands, graph::EvalPrecision::F32, error);
    if (failed(results))
      return std::nullopt;
    for (auto [result, value] : llvm::zip(op->getResults(), *results))
      values.try_emplace(result, std::move(value));
  }
  return std::move(values.find(mask)->second);
}

/// Element k of `t` (any dtype the mask has: i1, floats in storage form) as a double.
double elementAt(const HostTensor &t, int64_t k) {
  switch (t.dtype()) {
  case DType::I1:
    return t.data<uint8_t>()[k] != 0 ? 1.0 : 0.0;
  case DType::F32:
    return t.data<float>()[k];
  case DType::F64:
    return t.data<double>()[k];
  default:
    return 0.5; // neither kept nor masked in either form
  }
}

/// Position probes `[B, S]` (row-major): see PackedMask.h.
std::vector<std::vector<int64_t>> probes(int64_t batch, int64_t seq) {
  std::vector<std::vector<int64_t>> out;
  std::vector<int64_t> p(static_cast<size_t>(batch * seq));
  for (int64_t k = 0; k < batch * seq; ++k)
    p[static_cast<size_t>(k)] = k % seq;
  out.push_back(p); // one document per row
  out.push_back(std::vector<int64_t>(p.size(), 0)); // every token its own document
  std::mt19937 rng(20240607);
  for (bool offset : {false, true})
    for (int repeat = 0; repeat < 2; ++repeat) {
      for (int64_t b = 0; b < batch; ++b) {
        int64_t t = 0;
        while (t < seq) {
          int64_t len = 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(
                                                    std::max<int64_t>(1, seq / 3)));
          int64_t start = offset ? static_cast<int64_t>(rng() % 7u) : 0;
          for (int64_t i = 0; i < len && t < seq; ++i, ++t)
            p[static_cast<size_t>(b * seq + t)] = start + i;
        }
      }
      out.push_back(p);
    }
  return out;
}

/// The documents of position ids `p` `[B, S]` (find_packed_sequence_indices).
std::vector<int64_t> documents(const std::vector<int64_t> &p, int64_t batch, int64_t seq) {
  std::vector<int64_t> doc(p.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < seq; ++t) {
      size_t k = static_cast<size_t>(b * seq + t);
      doc[k] = t == 0 ? 0 : doc[k - 1] + (p[k] - p[k - 1] != 1 ? 1 : 0);
    }
  return doc;
}

/// The packed mask `mask` is, with `verdict` reading an element (1 kept, 0 masked, -1
/// neither).
std::optional<PackedMask> recognise(Value mask, int64_t seq, int (*verdict)(double)) {
  auto type = dyn_cast<RankedTensorType>(mask.getType());
  if (!type || !type.hasStaticShape() || type.getRank() < 3 || seq <= 1)
    return std::nullopt;
  ArrayRef<int64_t> shape = type.getShape();
  const size_t rank = shape.size();
  if (shape[rank - 1] != seq || shape[rank - 2] != seq)
    return std::nullopt;
  for (size_t d = 1; d + 2 < rank; ++d)
    if (shape[d] != 1)
      return std::nullopt;
  SmallVector<Operation *> ops;
  Value positions;
  if (failed(sliceOf(mask, seq, ops, positions)))
    return std::nullopt;
  auto posType = cast<RankedTensorType>(positions.getType());
  const int64_t batch = posType.getDimSize(0);
  if (shape[0] != batch && shape[0] != 1)
    return std::nullopt;
  if (batch * seq * seq > kMaxMaskEvaluations)
    return std::nullopt;
  std::optional<int64_t> window;
  for (const std::vector<int64_t> &p : probes(batch, seq)) {
    HostTensor pos(posType.getElementType().isInteger(32) ? DType::I32 : DType::I64,
                   std::vector<int64_t>{batch, seq});
    for (size_t k = 0; k < p.size(); ++k) {
      if (pos.dtype() == DType::I32)
        pos.data<int32_t>()[k] = static_cast<int32_t>(p[k]);
      else
        pos.data<int64_t>()[k] = p[k];
    }
    std::optional<HostTensor> value = evaluate(ops, positions, std::move(pos), mask);
    if (!value)
      return std::nullopt;
    if (!window) {
      // One document per row: the last query's kept keys give the window.
      int64_t kept = 0;
      for (int64_t j = 0; j < seq; ++j) {
        int v = verdict(elementAt(*value, (seq - 1) * seq + j));
        if (v < 0)
          return std::nullopt;
        kept += v;
      }
      if (kept == 0)
        return std::nullopt;
      window = kept >= seq ? 0 : kept;
    }
    std::vector<int64_t> doc = documents(p, batch, seq);
    const int64_t rows = shape[0];
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < seq; ++i)
        for (int64_t j = 0; j < seq; ++j) {
          bool keep = doc[static_cast<size_t>(b * seq + i)] ==
                          doc[static_cast<size_t>(b * seq + j)] &&
                      j <= i && (*window == 0 || i - j < *window);
          int64_t k = ((rows == 1 ? 0 : b) * seq + i) * seq + j;
          if (verdict(elementAt(*value, k)) != static_cast<int>(keep))
            return std::nullopt;
        }
  }
  return PackedMask{positions, *window};
}

int keepVerdict(double v) { return v != 0.0 ? 1 : 0; }
int additiveVerdict(double m) { return m == 0.0 ? 1 : m <= kMaskedAt ? 0 : -1; }

} // namespace

std::optional<PackedMask> packedKeepMask(Value mask, int64_t seq) {
  auto type = dyn_cast<RankedTensorType>(mask.getType());
  if (!type || !type.getElementType().isInteger(1))
    return std::nullopt;
  return recognise(mask, seq, keepVerdict);
}

std::optional<PackedMask> packedAdditiveMask(Value mask, int64_t seq) {
  auto type = dyn_cast<RankedTensorType>(mask.getType());
  if (!type || !isa<FloatType>(type.getElementType()))
    return std::nullopt;
  return recognise(mask, seq, additiveVerdict);
}

} // namespace mlir::rp
