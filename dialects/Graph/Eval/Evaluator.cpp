//===- Evaluator.cpp - evaluate graph ops on the CPU reference kernels ----===//

#include "dialects/Graph/Eval/Evaluator.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "kernels/cpu/AttentionGrad.h"
#include "kernels/cpu/Cast.h"
#include "kernels/cpu/CrossEntropy.h"
#include "kernels/cpu/CumSum.h"
#include "kernels/cpu/LinearCrossEntropy.h"
#include "kernels/cpu/Elementwise.h"
#include "kernels/cpu/Fused.h"
#include "kernels/cpu/Gather.h"
#include "kernels/cpu/Generators.h"
#include "kernels/cpu/MatMul.h"
#include "kernels/cpu/Norm.h"
#include "kernels/cpu/Reduce.h"
#include "kernels/cpu/Scatter.h"
#include "kernels/cpu/Shape.h"
#include "kernels/cpu/Softmax.h"
#include "kernels/cpu/TopK.h"
#include "kernels/cpu/ExpertRouting.h"
#include "kernels/cpu/GroupedMatMul.h"
#include "kernels/cpu/Quantize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

using ::rp::base::DType;
using ::rp::base::HostTensor;
using ::rp::base::Status;
namespace cpu = ::rp::kernels::cpu;

namespace mlir::rp::graph {

DType storageDType(Type type, EvalPrecision precision) {
  if (isa<FloatType>(type))
    return precision == EvalPrecision::F64 ? DType::F64 : DType::F32;
  if (type.isInteger(64))
    return DType::I64;
  if (type.isInteger(32))
    return DType::I32;
  if (type.isUnsignedInteger(8))
    return DType::U8; // quantized storage (graph.dequantize)
  return DType::I1;
}

DType irDType(Type type) {
  if (type.isF32())
    return DType::F32;
  if (type.isF16())
    return DType::F16;
  if (type.isBF16())
    return DType::BF16;
  if (type.isF64())
    return DType::F64;
  return storageDType(type, EvalPrecision::F32);
}

namespace {

HostTensor castTo(const HostTensor &t, DType dtype) {
  if (t.dtype() == dtype)
    return t.clone();
  HostTensor out(dtype, t.shape());
  Status s = cpu::cast(t.raw(), t.dtype(), out.raw(), dtype, t.numElements());
  (void)s; // every pair of our dtypes is supported
  return out;
}

/// Rounds f16/bf16-typed values held in f32/f64 storage to their type.
void roundToType(HostTensor &t, Type element) {
  if (!element.isBF16() && !element.isF16())
    return;
  HostTensor narrow = castTo(t, irDType(element));
  t = castTo(narrow, t.dtype());
}

HostTensor allocate(Value v, EvalPrecision precision) {
  auto type = cast<RankedTensorType>(v.getType());
  return HostTensor(storageDType(type.getElementType(), precision),
                    std::vector<int64_t>(type.getShape().begin(), type.getShape().end()));
}

std::vector<int64_t> vec(ArrayRef<int64_t> a) { return std::vector<int64_t>(a.begin(), a.end()); }

std::optional<cpu::UnaryKind> unaryKind(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<cpu::UnaryKind>>(op)
      .Case<SqrtOp>([](auto) { return cpu::UnaryKind::Sqrt; })
      .Case<ReciprocalOp>([](auto) { return cpu::UnaryKind::Reciprocal; })
      .Case<ExpOp>([](auto) { return cpu::UnaryKind::Exp; })
      .Case<LogOp>([](auto) { return cpu::UnaryKind::Log; })
      .Case<TanhOp>([](auto) { return cpu::UnaryKind::Tanh; })
      .Case<SigmoidOp>([](auto) { return cpu::UnaryKind::Sigmoid; })
      .Case<ErfOp>([](auto) { return cpu::UnaryKind::Erf; })
      .Case<SiluOp>([](auto) { return cpu::UnaryKind::Silu; })
      .Case<SoftplusOp>([](auto) { return cpu::UnaryKind::Softplus; })
      .Case<FloorOp>([](auto) { return cpu::UnaryKind::Floor; })
      .Case<CosOp>([](auto) { return cpu::UnaryKind::Cos; })
      .Case<SinOp>([](auto) { return cpu::UnaryKind::Sin; })
      .Case<NegOp>([](auto) { return cpu::UnaryKind::Neg; })
      .Case<ReluOp>([](auto) { return cpu::UnaryKind::Relu; })
      .Case<LogicalNotOp>([](auto) { return cpu::UnaryKind::LogicalNot; })
      .Case<GeluOp>([](GeluOp g) {
        return g.getApproximate() == GeluApproximation::tanh ? cpu::UnaryKind::GeluTanh
                                                             : cpu::UnaryKind::GeluExact;
      })
      .Default([](Operation *) { return std::nullopt; });
}

std::optional<cpu::BinaryKind> binaryKind(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<cpu::BinaryKind>>(op)
      .Case<AddOp>([](auto) { return cpu::BinaryKind::Add; })
      .Case<SubOp>([](auto) { return cpu::BinaryKind::Sub; })
      .Case<MulOp>([](auto) { return cpu::BinaryKind::Mul; })
      .Case<DivOp>([](auto) { return cpu::BinaryKind::Div; })
      .Case<PowOp>([](auto) { return cpu::BinaryKind::Pow; })
      .Case<ModOp>([](ModOp m) {
        return m.getFmod() ? cpu::BinaryKind::Fmod : cpu::BinaryKind::Mod;
      })
      .Case<LogicalAndOp>([](auto) { return cpu::BinaryKind::And; })
      .Case<LogicalOrOp>([](auto) { return cpu::BinaryKind::Or; })
      .Case<CompareOp>([](CompareOp c) {
        switch (c.getPredicate()) {
        case CompareKind::eq:
          return cpu::BinaryKind::Eq;
        case CompareKind::lt:
          return cpu::BinaryKind::Lt;
        case CompareKind::le:
          return cpu::BinaryKind::Le;
        case CompareKind::gt:
          return cpu::BinaryKind::Gt;
        case CompareKind::ge:
          return cpu::BinaryKind::Ge;
        }
        return cpu::BinaryKind::Eq;
      })
      .Default([](Operation *) { return std::nullopt; });
}

double rangeValue(Attribute a) {
  if (auto i = dyn_cast<IntegerAttr>(a))
    return static_cast<double>(i.getInt());
  return cast<FloatAttr>(a).getValueAsDouble();
}

} // namespace

HostTensor tensorFromAttr(ElementsAttr attr, EvalPrecision precision) {
  auto type = cast<RankedTensorType>(attr.getType());
  Type element = type.getElementType();
  HostTensor out(storageDType(element, precision), vec(type.getShape()));
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return out; // dense_resource blobs are not produced by the importer
  int64_t i = 0;
  if (isa<FloatType>(element)) {
    for (const APFloat &v : dense.getValues<APFloat>()) {
      double d = v.convertToDouble();
      if (out.dtype() == DType::F64)
        out.data<double>()[i++] = d;
      else
        out.data<float>()[i++] = static_cast<float>(d);
    }
  } else if (element.isInteger(1)) {
    for (bool v : dense.getValues<bool>())
      out.data<uint8_t>()[i++] = v;
  } else {
    for (const APInt &v : dense.getValues<APInt>()) {
      if (out.dtype() == DType::I64)
        out.data<int64_t>()[i++] = v.getSExtValue();
      else
        out.data<int32_t>()[i++] = static_cast<int32_t>(v.getSExtValue());
    }
  }
  return out;
}

DenseElementsAttr attrFromTensor(const HostTensor &tensor, RankedTensorType type) {
  Type element = type.getElementType();
  if (element.isInteger(1)) {
    SmallVector<bool> bits(tensor.data<uint8_t>(), tensor.data<uint8_t>() + tensor.numElements());
    return DenseElementsAttr::get(type, ArrayRef<bool>(bits));
  }
  HostTensor own = castTo(tensor, irDType(element));
  return DenseElementsAttr::getFromRawBuffer(
      type, ArrayRef<char>(static_cast<const char *>(own.raw()), own.byteSize()));
}

HostTensor tensorInIRType(const HostTensor &tensor, RankedTensorType type) {
  return castTo(tensor, irDType(type.getElementType()));
}

HostTensor tensorToStorage(const HostTensor &tensor, RankedTensorType type,
                           EvalPrecision precision) {
  return castTo(tensor, storageDType(type.getElementType(), precision));
}

namespace {
/// The kernels' reduction enum for the op's.
cpu::LossReduction lossReduction(LossReduction r) {
  return r == LossReduction::mean ? cpu::LossReduction::Mean : cpu::LossReduction::Sum;
}

/// An attention op's softcap, 0 when it has none (the kernels' convention).
template <typename AttentionLike> double softcapOf(AttentionLike op) {
  std::optional<APFloat> c = op.getSoftcap();
  return c ? c->convertToDouble() : 0.0;
}
} // namespace

FailureOr<SmallVector<HostTensor>> evaluateOp(Operation *op, ArrayRef<const HostTensor *> in,
                                              EvalPrecision precision, std::string &error) {
  SmallVector<HostTensor> out;
  for (Value r : op->getResults())
    out.push_back(allocate(r, precision));
  auto operand = [&](unsigned i) -> const HostTensor & { return *in[i]; };
  Status status;

  if (auto kind = unaryKind(op)) {
    status = cpu::unary(*kind, operand(0), out[0]);
  } else if (auto kind = binaryKind(op)) {
    status = cpu::binary(*kind, operand(0), operand(1), out[0]);
  } else if (auto c = dyn_cast<ConstantOp>(op)) {
    out[0] = tensorFromAttr(c.getValue(), precision);
  } else if (isa<WhereOp>(op)) {
    status = cpu::where(operand(0), operand(1), operand(2), out[0]);
  } else if (isa<CastOp>(op)) {
    status = cpu::cast(operand(0), out[0]);
  } else if (auto mm = dyn_cast<MatMulOp>(op)) {
    status = cpu::matmul(operand(0), operand(1), mm.getTransposeA(), mm.getTransposeB(), out[0]);
  } else if (auto r = dyn_cast<ReduceSumOp>(op)) {
    status = cpu::reduce(cpu::ReduceKind::Sum, operand(0), vec(r.getAxes()), r.getKeepdims(), out[0]);
  } else if (auto r = dyn_cast<ReduceMeanOp>(op)) {
    status = cpu::reduce(cpu::ReduceKind::Mean, operand(0), vec(r.getAxes()), r.getKeepdims(), out[0]);
  } else if (auto r = dyn_cast<ReduceMaxOp>(op)) {
    status = cpu::reduce(cpu::ReduceKind::Max, operand(0), vec(r.getAxes()), r.getKeepdims(), out[0]);
  } else if (auto s = dyn_cast<SoftmaxOp>(op)) {
    status = cpu::softmax(operand(0), s.getAxisAttr().getInt(), /*log=*/false, out[0]);
  } else if (auto s = dyn_cast<LogSoftmaxOp>(op)) {
    status = cpu::softmax(operand(0), s.getAxisAttr().getInt(), /*log=*/true, out[0]);
  } else if (auto c = dyn_cast<CumSumOp>(op)) {
    status = cpu::cumsum(operand(0), c.getAxisAttr().getInt(), c.getExclusive(), c.getReverse(),
                         out[0]);
  } else if (auto n = dyn_cast<LayerNormOp>(op)) {
    status = cpu::layerNorm(operand(0), operand(1), n.getBias() ? in[2] : nullptr,
                            n.getAxisAttr().getInt(), n.getEpsilon().convertToDouble(), out[0]);
  } else if (auto n = dyn_cast<RmsNormOp>(op)) {
    status = cpu::rmsNorm(operand(0), operand(1), n.getAxisAttr().getInt(),
                          n.getEpsilon().convertToDouble(), out[0]);
  } else if (auto n = dyn_cast<RmsNormVjpOp>(op)) {
    status = cpu::rmsNormVjp(operand(0), operand(1), operand(2), n.getAxisAttr().getInt(),
                             n.getEpsilon().convertToDouble(), out[0], out[1]);
  } else if (auto ce = dyn_cast<CrossEntropyOp>(op)) {
    status = cpu::crossEntropy(operand(0), operand(1), ce.getIgnoreIndexAttr().getInt(),
                               ce.getReduction() == LossReduction::mean ? cpu::LossReduction::Mean
                                                                        : cpu::LossReduction::Sum,
                               out[0]);
  } else if (auto lce = dyn_cast<LinearCrossEntropyOp>(op)) {
    status = cpu::linearCrossEntropy(operand(0), operand(1), operand(2),
                                     lce.getIgnoreIndexAttr().getInt(),
                                     lossReduction(lce.getReduction()),
                                     lce.getChunkRows().value_or(0), out[0],
                                     lce.getBias() ? &operand(3) : nullptr);
  } else if (auto lce = dyn_cast<LinearCrossEntropyVjpOp>(op)) {
    const bool bias = static_cast<bool>(lce.getBias());
    status = cpu::linearCrossEntropyVjp(operand(0), operand(1), operand(2), operand(3),
                                        lce.getIgnoreIndexAttr().getInt(),
                                        lossReduction(lce.getReduction()),
                                        lce.getChunkRows().value_or(0), out[0], out[1], out[2],
                                        bias ? &operand(4) : nullptr, bias ? &out[3] : nullptr);
  } else if (isa<SwigluOp>(op)) {
    status = cpu::swiglu(operand(0), operand(1), out[0]);
  } else if (isa<SwigluVjpOp>(op)) {
    status = cpu::swigluVjp(operand(0), operand(1), operand(2), out[0], out[1]);
  } else if (auto r = dyn_cast<RopeOp>(op)) {
    status = cpu::rope(operand(0), operand(1), operand(2), out[0], r.getInterleaved());
  } else if (auto r = dyn_cast<RopeVjpOp>(op)) {
    status = cpu::ropeVjp(operand(0), operand(1), operand(2), out[0], r.getInterleaved());
  } else if (auto a = dyn_cast<AttentionOp>(op)) {
    status = cpu::attention(operand(0), operand(1), operand(2), a.getScale().convertToDouble(),
                            a.getCausal(), out[0], a.getSinks() ? &operand(3) : nullptr,
                            a.getWindow().value_or(0), softcapOf(a));
  } else if (auto a = dyn_cast<AttentionVjpOp>(op)) {
    const bool sinks = static_cast<bool>(a.getSinks());
    status = cpu::attentionVjp(operand(0), operand(1), operand(2), operand(3), operand(4),
                               a.getScale().convertToDouble(), a.getCausal(), out[0], out[1],
                               out[2], sinks ? &operand(5) : nullptr, sinks ? &out[3] : nullptr,
                               a.getWindow().value_or(0), softcapOf(a));
  } else if (isa<ReshapeOp>(op)) {
    status = cpu::copyInto(operand(0), out[0]);
  } else if (auto t = dyn_cast<TransposeOp>(op)) {
    status = cpu::transpose(operand(0), vec(t.getPermutation()), out[0]);
  } else if (isa<ExpandOp>(op)) {
    status = cpu::expand(operand(0), out[0]);
  } else if (auto c = dyn_cast<ConcatOp>(op)) {
    std::vector<const HostTensor *> inputs(in.begin(), in.end());
    status = cpu::concat(inputs, c.getAxisAttr().getInt(), out[0]);
  } else if (auto s = dyn_cast<SliceOp>(op)) {
    status = cpu::slice(operand(0), vec(s.getAxes()), vec(s.getStarts()), vec(s.getEnds()),
                        vec(s.getSteps()), out[0]);
  } else if (auto s = dyn_cast<SplitOp>(op)) {
    std::vector<HostTensor *> outs;
    for (HostTensor &t : out)
      outs.push_back(&t);
    status = cpu::split(operand(0), s.getAxisAttr().getInt(), outs);
  } else if (auto g = dyn_cast<GatherOp>(op)) {
    status = cpu::gather(operand(0), operand(1), g.getAxisAttr().getInt(), out[0]);
  } else if (auto g = dyn_cast<GatherElementsOp>(op)) {
    status = cpu::gatherElements(operand(0), operand(1), g.getAxisAttr().getInt(), out[0]);
  } else if (auto dq = dyn_cast<DequantizeOp>(op)) {
    status = cpu::dequantize(operand(0), static_cast<::rp::kernels::QuantFormat>(dq.getFormat()),
                             dq.getAxis().value_or(0), out[0]);
  } else if (auto t = dyn_cast<TopKOp>(op)) {
    status = cpu::topK(operand(0), t.getK(), t.getAxisAttr().getInt(), !t.getSmallest(), out[0]);
  } else if (isa<MoeSortOp>(op)) {
    status = cpu::moeSort(operand(0), out[0], out[1]);
  } else if (isa<MoeDispatchOp>(op)) {
    status = cpu::moeDispatch(operand(0), operand(1), out[0]);
  } else if (isa<MoeCombineOp>(op)) {
    status = cpu::moeCombine(operand(0), operand(1), operand(2), out[0]);
  } else if (auto g = dyn_cast<GroupedMatMulOp>(op)) {
    status = cpu::groupedMatmul(operand(0), operand(1), operand(2), g.getTransposeB(), out[0]);
  } else if (isa<GroupedMatMulWgradOp>(op)) {
    status = cpu::groupedMatmulWgrad(operand(0), operand(1), operand(2), out[0]);
  } else if (auto sc = dyn_cast<ScatterAddOp>(op)) {
    status = cpu::scatterAdd(operand(0), operand(1), sc.getAxisAttr().getInt(), out[0]);
  } else if (auto sc = dyn_cast<ScatterElementsAddOp>(op)) {
    status = cpu::scatterElementsAdd(operand(0), operand(1), sc.getAxisAttr().getInt(), out[0]);
  } else if (auto sc = dyn_cast<ScatterOp>(op)) {
    status = cpu::scatter(operand(0), operand(1), operand(2), sc.getAxisAttr().getInt(), out[0]);
  } else if (auto sc = dyn_cast<ScatterElementsOp>(op)) {
    status = cpu::scatterElements(operand(0), operand(1), operand(2), sc.getAxisAttr().getInt(),
                                  out[0]);
  } else if (auto sc = dyn_cast<SliceScatterOp>(op)) {
    status = cpu::sliceScatter(operand(0), vec(sc.getAxes()), vec(sc.getStarts()),
                               vec(sc.getEnds()), vec(sc.getSteps()), out[0]);
  } else if (auto r = dyn_cast<RangeOp>(op)) {
    if (isa<IntegerAttr>(r.getStartAttr()) && isa<IntegerAttr>(r.getDeltaAttr()) &&
        out[0].dtype() != DType::F32 && out[0].dtype() != DType::F64)
      status = cpu::rangeInt(cast<IntegerAttr>(r.getStartAttr()).getInt(),
                             cast<IntegerAttr>(r.getDeltaAttr()).getInt(), out[0]);
    else
      status = cpu::range(rangeValue(r.getStartAttr()), rangeValue(r.getLimitAttr()),
                          rangeValue(r.getDeltaAttr()), out[0]);
  } else if (auto t = dyn_cast<TriluOp>(op)) {
    status = cpu::trilu(operand(0), t.getKAttr().getInt(), t.getUpper(), out[0]);
  } else {
    error = "no CPU kernel for '" + op->getName().getStringRef().str() + "'";
    return failure();
  }
  if (!status.ok()) {
    error = status.message();
    return failure();
  }
  for (auto [t, r] : llvm::zip(out, op->getResults()))
    roundToType(t, cast<RankedTensorType>(r.getType()).getElementType());
  return out;
}

FailureOr<SmallVector<HostTensor>>
runFunction(func::FuncOp func, ArrayRef<HostTensor> args,
            llvm::function_ref<FailureOr<HostTensor>(ParamOp)> loadParam,
            EvalPrecision precision) {
  Block &body = func.getBody().front();
  if (args.size() != body.getNumArguments()) {
    func.emitError() << "expected " << body.getNumArguments() << " inputs, got " << args.size();
    return failure();
  }
  llvm::DenseMap<Value, HostTensor> env;
  llvm::DenseMap<Value, unsigned> remainingUses;
  for (auto [arg, tensor] : llvm::zip(body.getArguments(), args)) {
    auto type = cast<RankedTensorType>(arg.getType());
    if (ArrayRef<int64_t>(tensor.shape()) != type.getShape()) {
      func.emitError() << "input " << arg.getArgNumber() << " has shape "
                       << ::rp::base::formatShape(tensor.shape()) << ", expected "
                       << type;
      return failure();
    }
    env[arg] = tensorToStorage(tensor, type, precision);
  }
  for (Operation &op : body)
    for (Value v : op.getOperands())
      ++remainingUses[v];

  for (Operation &op : body) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      SmallVector<HostTensor> results;
      for (Value v : ret.getOperands())
        results.push_back(env[v].clone());
      return results;
    }
    SmallVector<HostTensor> results;
    if (auto load = dyn_cast<LoadParamOp>(op)) {
      auto param = SymbolTable::lookupNearestSymbolFrom<ParamOp>(&op, load.getParamAttr());
      if (!param) {
        op.emitError() << "unknown param " << load.getParamAttr();
        return failure();
      }
      FailureOr<HostTensor> value = loadParam(param);
      if (failed(value))
        return failure();
      results.push_back(tensorToStorage(*value, load.getType(), precision));
    } else {
      SmallVector<const HostTensor *> operands;
      for (Value v : op.getOperands())
        operands.push_back(&env[v]);
      std::string error;
      auto out = evaluateOp(&op, operands, precision, error);
      if (failed(out)) {
        op.emitError() << error;
        return failure();
      }
      results = std::move(*out);
    }
    for (Value v : op.getOperands())
      if (--remainingUses[v] == 0)
        env.erase(v);
    for (auto [r, t] : llvm::zip(op.getResults(), results))
      env[r] = std::move(t);
  }
  func.emitError() << "function has no return";
  return failure();
}

} // namespace mlir::rp::graph
