//===- FusedOps.cpp - graph dialect fused ops: verifiers ------------------===//
//
// The ops of the "Fused ops" section of Ops.td (formed by the rp-fuse-* passes). Messages are
// lower case and state what was expected and what was found.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/ShapeInference.h"

#include "mlir/IR/Diagnostics.h"

#include <cmath>
#include <optional>

using namespace mlir;
using namespace mlir::rp::graph;

//===----------------------------------------------------------------------===//
// RopeOp
//===----------------------------------------------------------------------===//

/// graph.rope's checks, shared with graph.rope_vjp (whose `grad` takes the input's place).
template <typename OpTy>
static LogicalResult verifyRope(OpTy op, RankedTensorType x, StringRef input) {
  RankedTensorType cos = op.getCos().getType(), sin = op.getSin().getType();
  if (x.getRank() < 1)
    return op.emitOpError("expected ") << input << " of rank >= 1, got rank 0";
  int64_t d = x.getShape().back();
  if (d % 2 != 0)
    return op.emitOpError("expected an even last dimension of ") << input << ", got " << d;
  if (cos != sin)
    return op.emitOpError("expected cos and sin of the same type, got ") << cos << " and " << sin;
  if (cos.getElementType() != x.getElementType())
    return op.emitOpError("expected cos element type ")
           << x.getElementType() << ", got " << cos.getElementType();
  if (cos.getRank() < 1 || cos.getShape().back() != d)
    return op.emitOpError("expected cos and sin with a last dimension of ")
           << d << ", got " << formatShape(cos.getShape());
  if (llvm::Error e = checkBroadcastsTo(cos.getShape(), x.getShape())) {
    llvm::consumeError(std::move(e));
    return op.emitOpError("expected cos and sin to broadcast to the shape of ")
           << input << " " << formatShape(x.getShape()) << ", got " << formatShape(cos.getShape());
  }
  if (op.getType() != x)
    return op.emitOpError("expected result type ") << x << ", got " << op.getType();
  return success();
}

LogicalResult RopeOp::verify() { return verifyRope(*this, getInput().getType(), "the input"); }

LogicalResult RopeVjpOp::verify() { return verifyRope(*this, getGrad().getType(), "grad"); }

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

namespace {

/// The checks graph.attention and graph.attention_vjp share: q [B, Hq, S, D], k and v of one
/// type [B, Hkv, S, D] with Hkv dividing Hq, a positive finite scale.
LogicalResult verifyAttentionOperands(Operation *op, RankedTensorType q, RankedTensorType k,
                                      RankedTensorType v, double scale) {
  if (q.getRank() != 4)
    return op->emitOpError("expected a query of rank 4 [B, Hq, S, D], got rank ") << q.getRank();
  if (k.getElementType() != q.getElementType() || v.getElementType() != q.getElementType())
    return op->emitOpError("expected key and value element type ")
           << q.getElementType() << ", got " << k.getElementType() << " and "
           << v.getElementType();
  ArrayRef<int64_t> qs = q.getShape(), ks = k.getShape(), vs = v.getShape();
  if (k.getRank() != 4 || ks[0] != qs[0] || ks[2] != qs[2] || ks[3] != qs[3])
    return op->emitOpError("expected a key of shape [")
           << qs[0] << ", Hkv, " << qs[2] << ", " << qs[3] << "], got " << formatShape(ks);
  if (v.getRank() != 4 || vs.take_front(3) != ks.take_front(3))
    return op->emitOpError("expected a value of shape [")
           << ks[0] << ", " << ks[1] << ", " << ks[2] << ", Dv] (the key's batch, heads and "
           << "positions), got " << formatShape(vs);
  if (ks[1] == 0 || qs[1] % ks[1] != 0)
    return op->emitOpError("expected the query heads (") << qs[1] << ") to be a multiple of the "
           << "key/value heads (" << ks[1] << ")";
  if (!(scale > 0.0) || !std::isfinite(scale))
    return op->emitOpError("expected a positive finite scale, got ") << scale;
  return success();
}

/// Attention sinks, when present, are [Hq] of the query's element type.
LogicalResult verifySinks(Operation *op, RankedTensorType q, Value sinks) {
  if (!sinks)
    return success();
  auto type = cast<RankedTensorType>(sinks.getType());
  if (type.getRank() != 1 || type.getDimSize(0) != q.getDimSize(1) ||
      type.getElementType() != q.getElementType())
    return op->emitOpError("expected sinks of type ")
           << RankedTensorType::get({q.getDimSize(1)}, q.getElementType())
           << " (one per query head), got " << type;
  return success();
}

/// A sliding window, when present, is >= 1 and comes with `causal`.
LogicalResult verifyWindow(Operation *op, std::optional<int64_t> window, bool causal) {
  if (!window)
    return success();
  if (*window < 1)
    return op->emitOpError("expected a window of at least 1, got ") << *window;
  if (!causal)
    return op->emitOpError("expected `causal` with a sliding window");
  return success();
}

/// The result type of attention of `q` [B, Hq, S, D] and `v` [B, Hkv, S, Dv]: [B, Hq, S, Dv].
RankedTensorType attentionResultType(RankedTensorType q, RankedTensorType v) {
  SmallVector<int64_t> shape(q.getShape());
  shape.back() = v.getShape().back();
  return q.clone(shape);
}

/// A soft-cap, when present, is positive and finite.
LogicalResult verifySoftcap(Operation *op, std::optional<APFloat> softcap) {
  if (!softcap)
    return success();
  const double c = softcap->convertToDouble();
  if (!(c > 0.0) || !std::isfinite(c))
    return op->emitOpError("expected a positive finite softcap, got ") << c;
  return success();
}

} // namespace

LogicalResult AttentionOp::verify() {
  RankedTensorType q = getQuery().getType();
  if (failed(verifyAttentionOperands(*this, q, getKey().getType(), getValue().getType(),
                                     getScale().convertToDouble())) ||
      failed(verifySinks(*this, q, getSinks())) ||
      failed(verifyWindow(*this, getWindow(), getCausal())) ||
      failed(verifySoftcap(*this, getSoftcap())))
    return failure();
  RankedTensorType result = attentionResultType(q, getValue().getType());
  if (getType() != result)
    return emitOpError("expected result type ") << result << ", got " << getType();
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionVjpOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionVjpOp::verify() {
  RankedTensorType q = getQuery().getType(), k = getKey().getType();
  if (failed(verifyAttentionOperands(*this, q, k, getValue().getType(),
                                     getScale().convertToDouble())) ||
      failed(verifySinks(*this, q, getSinks())) ||
      failed(verifyWindow(*this, getWindow(), getCausal())) ||
      failed(verifySoftcap(*this, getSoftcap())))
    return failure();
  if (!getSinks() != !getDsinks())
    return emitOpError("expected a dsinks result exactly when there are sinks");
  if (getSinks() && getDsinks().getType() != getSinks().getType())
    return emitOpError("expected dsinks of the sinks' type ")
           << getSinks().getType() << ", got " << getDsinks().getType();
  RankedTensorType v = getValue().getType(), out = attentionResultType(q, v);
  if (getOut().getType() != out)
    return emitOpError("expected out of the forward result's type ")
           << out << ", got " << getOut().getType();
  if (getDout().getType() != out)
    return emitOpError("expected dout of the forward result's type ")
           << out << ", got " << getDout().getType();
  if (getDquery().getType() != q)
    return emitOpError("expected dquery of the query's type ")
           << q << ", got " << getDquery().getType();
  if (getDkey().getType() != k || getDvalue().getType() != v)
    return emitOpError("expected dkey of the key's type ")
           << k << " and dvalue of the value's type " << v << ", got " << getDkey().getType()
           << " and " << getDvalue().getType();
  return success();
}
