//===- PlanExport.cpp - schedule IR -> rp::plan::Plan ---------------------===//
//
// See PlanExport.h for the mapping. The exporter walks the plan once in this order: config and
// arenas; layers (numbering params and functions); the functions (kernels, buffer references,
// constants); host buffers; stages (their micro-batch bodies); optimizer steps.
//
//===----------------------------------------------------------------------===//

#include "compiler/PlanExport.h"

#include "dialects/Graph/IR/GraphDialect.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Schedule/IR/ScheduleOps.h"
#include "kernels/Registry.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace mlir::rp {
namespace {

namespace pb = ::rp::plan;
using ::rp::kernels::AttrKind;
using ::rp::kernels::AttrSpec;
using ::rp::kernels::KernelInfo;

/// The discardable attributes rp-plan-memory writes into layer functions.
constexpr llvm::StringLiteral kWorkspaceBytesAttr = "schedule.workspace_bytes";
constexpr llvm::StringLiteral kOffsetsAttr = "schedule.offsets";
constexpr llvm::StringLiteral kOffsetAttr = "schedule.offset";

/// The plan dtype of an element type, or nullopt for a type the plan cannot hold.
std::optional<pb::DType> planDType(Type type) {
  if (type.isF32())
    return pb::F32;
  if (type.isF16())
    return pb::F16;
  if (type.isBF16())
    return pb::BF16;
  if (type.isSignlessInteger(64))
    return pb::I64;
  if (type.isSignlessInteger(32))
    return pb::I32;
  if (type.isSignlessInteger(1))
    return pb::I1;
  if (type.isUnsignedInteger(8))
    return pb::U8;
  return std::nullopt;
}

/// Bytes of one element of `dtype` (I1: one byte).
int64_t dtypeBytes(pb::DType dtype) {
  switch (dtype) {
  case pb::F32:
  case pb::I32:
    return 4;
  case pb::F16:
  case pb::BF16:
    return 2;
  case pb::I64:
    return 8;
  case pb::I1:
  case pb::U8:
    return 1;
  default:
    return 0;
  }
}

/// Bytes of a tensor of `type` (static shape).
int64_t tensorBytes(const pb::TensorType &type) {
  int64_t n = dtypeBytes(type.dtype());
  for (int64_t d : type.shape())
    n *= d;
  return n;
}

/// "/model/layers.0/MatMul" for a NameLoc, "model.mlir:12:3" for a file location (the file's
/// name without its directory), the parts of a fused location joined by "; ".
std::string shortLocation(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (llvm::sys::path::filename(file.getFilename().getValue()) + ":" +
            Twine(file.getLine()) + ":" + Twine(file.getColumn()))
        .str();
  if (auto callSite = dyn_cast<CallSiteLoc>(loc))
    return shortLocation(callSite.getCallee());
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    std::string text;
    for (Location part : fused.getLocations()) {
      std::string s = shortLocation(part);
      if (s.empty())
        continue;
      if (!text.empty())
        text += "; ";
      text += s;
    }
    return text;
  }
  return "";
}

/// "f32", "bf16", "i64": how a TypeAttr is written into a plan attribute.
std::string typeName(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

/// The keyword of a graph enum attribute (`predicate` of graph.compare, `approximate` of
/// graph.gelu, `reduction` of graph.cross_entropy and graph.linear_cross_entropy(_vjp)), or nullopt when `name` is none of them.
std::optional<std::string> enumKeyword(Operation *op, StringRef name) {
  if (auto compare = dyn_cast<graph::CompareOp>(op);
      compare && name == compare.getPredicateAttrName().getValue())
    return graph::stringifyCompareKind(compare.getPredicate()).str();
  if (auto gelu = dyn_cast<graph::GeluOp>(op);
      gelu && name == gelu.getApproximateAttrName().getValue())
    return graph::stringifyGeluApproximation(gelu.getApproximate()).str();
  if (auto loss = dyn_cast<graph::CrossEntropyOp>(op);
      loss && name == loss.getReductionAttrName().getValue())
    return graph::stringifyLossReduction(loss.getReduction()).str();
  if (auto loss = dyn_cast<graph::LinearCrossEntropyOp>(op);
      loss && name == loss.getReductionAttrName().getValue())
    return graph::stringifyLossReduction(loss.getReduction()).str();
  if (auto loss = dyn_cast<graph::LinearCrossEntropyVjpOp>(op);
      loss && name == loss.getReductionAttrName().getValue())
    return graph::stringifyLossReduction(loss.getReduction()).str();
  if (auto dq = dyn_cast<graph::DequantizeOp>(op);
      dq && name == dq.getFormatAttrName().getValue())
    return graph::stringifyQuantFormat(dq.getFormat()).str();
  return std::nullopt;
}

/// The registry kind a converted attribute has.
AttrKind kindOf(const pb::Attribute &attr) {
  switch (attr.value_case()) {
  case pb::Attribute::kI:
    return AttrKind::Int;
  case pb::Attribute::kF:
    return AttrKind::Float;
  case pb::Attribute::kS:
    return AttrKind::String;
  case pb::Attribute::kInts:
    return AttrKind::Ints;
  default:
    return AttrKind::Bool;
  }
}

bool kindAccepts(AttrKind expected, AttrKind actual) {
  if (expected == AttrKind::IntOrFloat)
    return actual == AttrKind::Int || actual == AttrKind::Float;
  return expected == actual;
}

/// Appends the little-endian bytes of `value` (a whole number of bytes wide) to `data`.
void appendLittleEndian(const APInt &value, std::string &data) {
  unsigned bytes = value.getBitWidth() / 8;
  for (unsigned i = 0; i < bytes; ++i)
    data.push_back(static_cast<char>(value.extractBitsAsZExtValue(8, 8 * i)));
}

class Exporter {
public:
  Exporter(ModuleOp module, schedule::PlanOp plan, pb::Plan &out)
      : module(module), plan(plan), out(out), moduleSymbols(module) {}

  LogicalResult run() {
    if (failed(exportConfig()) || failed(exportArenas()) || failed(exportLayers()) ||
        failed(exportFunctions()) || failed(exportHostBuffers()) || failed(exportStages()) ||
        failed(exportOptimizerSteps()))
      return failure();
    return success();
  }

private:
  // ---- helpers ----

  /// Sets `out` to the dtype and shape of `type`; errors at `loc` for a type without a plan
  /// dtype or a dynamic shape. `what` names the value in the message.
  LogicalResult setTensorType(Location loc, Type type, const Twine &what, pb::TensorType *out) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    std::optional<pb::DType> dtype = tensor ? planDType(tensor.getElementType()) : std::nullopt;
    if (!tensor || !tensor.hasStaticShape() || !dtype)
      return emitError(loc) << what << " has type " << type
                            << "; a plan holds statically shaped tensors of f32, f16, bf16, "
                               "i64, i32 or i1";
    out->set_dtype(*dtype);
    for (int64_t d : tensor.getShape())
      out->add_shape(d);
    return success();
  }

  /// A required integer attribute written by rp-plan-memory.
  static FailureOr<int64_t> requiredI64(Operation *op, IntegerAttr attr, StringRef name) {
    if (!attr)
      return op->emitError() << "'" << op->getName() << "' has no '" << name
                             << "'; run rp-plan-memory first";
    return attr.getInt();
  }

  // ---- config and arenas ----

  LogicalResult exportConfig() {
    pb::Config *config = out.mutable_config();
    config->set_micro_batches(static_cast<int64_t>(plan.getMicroBatches()));
    config->set_gpus(static_cast<int64_t>(plan.getGpus()));
    config->set_update(plan.getUpdate() == schedule::UpdateMode::sync ? pb::SYNC : pb::ASYNC);
    config->set_recompute(plan.getRecompute() == schedule::RecomputeGrain::stage ? pb::STAGE
                                                                                 : pb::LAYER);
    config->set_dispatch(plan.getDispatch().str());
    Type dtype = plan.getDtype();
    if (dtype.isF32())
      config->set_compute_dtype(pb::F32);
    else if (dtype.isF16())
      config->set_compute_dtype(pb::F16);
    else if (dtype.isBF16())
      config->set_compute_dtype(pb::BF16);
    else
      return plan.emitError() << "compute dtype " << dtype
                              << " has no plan equivalent; expected f32, f16 or bf16";
    schedule::AdamWAttr adamw = plan.getOptimizer();
    pb::AdamW *opt = config->mutable_optimizer();
    opt->set_lr(adamw.getLr().convertToDouble());
    opt->set_beta1(adamw.getBeta1().convertToDouble());
    opt->set_beta2(adamw.getBeta2().convertToDouble());
    opt->set_eps(adamw.getEps().convertToDouble());
    opt->set_weight_decay(adamw.getWeightDecay().convertToDouble());
    opt->set_grad_clip(adamw.getGradClip().convertToDouble());
    return success();
  }

  LogicalResult exportArenas() {
    std::optional<schedule::DeviceArenaAttr> device = plan.getDeviceArena();
    if (!device)
      return plan.emitError() << "'schedule.plan' has no 'device_arena'; run rp-plan-memory first";
    std::optional<schedule::HostArenaAttr> host = plan.getHostArena();
    if (!host)
      return plan.emitError() << "'schedule.plan' has no 'host_arena'; run rp-plan-memory first";
    int64_t microBatches = static_cast<int64_t>(plan.getMicroBatches());
    if (host->getActivations() % microBatches != 0)
      return plan.emitError() << "host activation region of " << host->getActivations()
                              << " bytes is not a multiple of micro_batches (" << microBatches
                              << ")";
    pb::HostArena *h = out.mutable_host_arena();
    h->set_weights(host->getWeights());
    h->set_state(host->getState());
    h->set_grads(host->getGrads());
    h->set_activations(host->getActivations());
    h->set_record(host->getActivations() / microBatches);
    pb::DeviceArena *d = out.mutable_device_arena();
    d->set_constants(device->getConstants());
    d->set_slot(device->getSlot());
    d->set_activations(device->getActivations());
    d->set_workspace(device->getWorkspace());
    return success();
  }

  // ---- layers, params, function numbering ----

  /// The Plan.functions index of `name` (numbering it on first sight) for layer `layer`.
  FailureOr<int32_t> functionFor(schedule::LayerOp layerOp, int32_t layer, StringRef name) {
    auto func = moduleSymbols.lookup<func::FuncOp>(name);
    if (!func)
      return layerOp.emitError() << "layer @" << layerOp.getSymName() << " names @" << name
                                 << ", which is not a func.func of the module";
    auto it = functionIndex.find(name);
    if (it != functionIndex.end()) {
      int32_t index = it->second;
      if (functionLayer[index] != layer)
        return layerOp.emitError()
               << "function @" << name << " is named by layers @"
               << layers[functionLayer[index]].getSymName() << " and @" << layerOp.getSymName()
               << "; each plan function belongs to one layer";
      return index;
    }
    int32_t index = static_cast<int32_t>(functions.size());
    functionIndex[name] = index;
    functions.push_back(func);
    functionLayer.push_back(layer);
    return index;
  }

  LogicalResult exportLayers() {
    for (schedule::LayerOp layerOp : plan.getLayers()) {
      int32_t layer = static_cast<int32_t>(layers.size());
      layers.push_back(layerOp);
      layerIndex[layerOp.getSymName()] = layer;
      pb::Layer *l = out.add_layers();
      l->set_name(layerOp.getSymName().str());

      FailureOr<int32_t> forward = functionFor(layerOp, layer, layerOp.getForward());
      if (failed(forward))
        return failure();
      FailureOr<int32_t> backward = functionFor(layerOp, layer, layerOp.getBackward());
      if (failed(backward))
        return failure();
      l->set_forward(*forward);
      l->set_backward(*backward);
      if (FlatSymbolRefAttr saving = layerOp.getSavingAttr()) {
        FailureOr<int32_t> index = functionFor(layerOp, layer, saving.getValue());
        if (failed(index))
          return failure();
        l->set_saving(*index);
      }

      ArrayAttr params = layerOp.getParams();
      std::optional<ArrayRef<int64_t>> weightOffsets = layerOp.getWeightOffsets();
      std::optional<ArrayRef<int64_t>> stateOffsets = layerOp.getStateOffsets();
      std::optional<ArrayRef<int64_t>> gradOffsets = layerOp.getGradOffsets();
      if (!weightOffsets || !stateOffsets || !gradOffsets)
        return layerOp.emitError() << "layer @" << layerOp.getSymName() << " has no '"
                                   << (!weightOffsets  ? "weight_offsets"
                                       : !stateOffsets ? "state_offsets"
                                                       : "grad_offsets")
                                   << "'; run rp-plan-memory first";
      if (weightOffsets->size() != params.size() || stateOffsets->size() != params.size() ||
          gradOffsets->size() != params.size())
        return layerOp.emitError()
               << "layer @" << layerOp.getSymName() << " has " << params.size()
               << " params but " << weightOffsets->size() << " weight offsets, "
               << stateOffsets->size() << " state offsets and " << gradOffsets->size()
               << " grad offsets";

      llvm::StringMap<int32_t> &byName = layerParams.emplace_back();
      for (auto [k, ref] : llvm::enumerate(params.getAsRange<FlatSymbolRefAttr>())) {
        auto param = moduleSymbols.lookup<graph::ParamOp>(ref.getValue());
        if (!param)
          return layerOp.emitError() << "layer @" << layerOp.getSymName() << " names @"
                                     << ref.getValue()
                                     << ", which is not a graph.param of the module";
        bool trainable = param.getTrainable();
        int64_t weightOffset = (*weightOffsets)[k], stateOffset = (*stateOffsets)[k];
        int64_t gradOffset = (*gradOffsets)[k];
        if (weightOffset < 0 || (trainable ? stateOffset < 0 || gradOffset < 0
                                           : stateOffset != -1 || gradOffset != -1))
          return layerOp.emitError()
                 << "param @" << ref.getValue() << " of layer @" << layerOp.getSymName()
                 << " has weight offset " << weightOffset << ", state offset " << stateOffset
                 << " and grad offset " << gradOffset
                 << "; expected a weight offset >= 0 and state and grad offsets "
                 << (trainable ? ">= 0 (trainable)" : "of -1 (frozen)");
        if (byName.count(ref.getValue()))
          return layerOp.emitError() << "layer @" << layerOp.getSymName() << " names param @"
                                     << ref.getValue() << " twice";
        int32_t index = static_cast<int32_t>(out.params_size());
        byName[ref.getValue()] = index;
        l->add_params(index);

        pb::Param *p = out.add_params();
        p->set_name(ref.getValue().str());
        // A quantized param: the weights file holds its stored (float) type; the host arena
        // and the slot its storage (Param.quant).
        if (failed(setTensorType(param.getLoc(), param.getStoredTensorType(),
                                 "param @" + ref.getValue(), p->mutable_type())))
          return failure();
        // The weights file stores every floating-point param as f32 (WeightsExport.h).
        if (isa<FloatType>(param.getStoredTensorType().getElementType()))
          p->mutable_type()->set_dtype(pb::F32);
        if (std::optional<graph::QuantFormat> quant = param.getQuant()) {
          pb::Quantization *q = p->mutable_quant();
          q->set_format(static_cast<pb::QuantFormat>(static_cast<int>(*quant) + 1));
          q->set_axis(static_cast<int32_t>(param.getQuantAxis().value_or(0)));
          q->set_bytes(param.getTensorType().getNumElements());
        }
        p->set_trainable(trainable);
        p->set_layer(layer);
        p->set_weight_offset(weightOffset);
        p->set_state_offset(stateOffset);
        p->set_grad_offset(gradOffset);
        // A later reader of a trainable param holds a copy of the owner's (first) entry.
        if (trainable) {
          auto [owner, first] = trainableEntry.try_emplace(ref.getValue(), index);
          if (!first)
            p->set_primary(owner->second);
        }
        // LoRA adapters have no stored value: the runtime may start them itself.
        if (std::optional<graph::ParamInit> init = param.getInit())
          p->set_init(*init == graph::ParamInit::zeros ? pb::PARAM_INIT_ZEROS
                                                       : pb::PARAM_INIT_KAIMING_UNIFORM);
      }
    }
    if (layers.empty())
      return plan.emitError() << "'schedule.plan' has no layers";
    return success();
  }

  // ---- functions ----

  LogicalResult exportFunctions() {
    for (auto [index, func] : llvm::enumerate(functions))
      if (failed(exportFunction(func, functionLayer[index], out.add_functions())))
        return failure();
    return success();
  }

  LogicalResult exportFunction(func::FuncOp func, int32_t layer, pb::Function *f) {
    f->set_name(func.getSymName().str());
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return func.emitError() << "layer function @" << func.getSymName()
                              << " must have a body of one block";
    FunctionType type = func.getFunctionType();
    for (auto [i, t] : llvm::enumerate(type.getInputs()))
      if (failed(setTensorType(func.getLoc(), t, "argument #" + Twine(i) + " of @" +
                                                     func.getSymName(),
                               f->add_args())))
        return failure();
    for (auto [i, t] : llvm::enumerate(type.getResults()))
      if (failed(setTensorType(func.getLoc(), t, "result #" + Twine(i) + " of @" +
                                                     func.getSymName(),
                               f->add_results())))
        return failure();
    auto workspaceAttr = func->getAttrOfType<IntegerAttr>(kWorkspaceBytesAttr);
    if (!workspaceAttr)
      return func.emitError() << "layer function @" << func.getSymName() << " has no '"
                              << kWorkspaceBytesAttr << "'; run rp-plan-memory first";
    int64_t workspaceBytes = workspaceAttr.getInt();
    f->set_workspace_bytes(workspaceBytes);

    Block &block = func.front();
    auto ret = dyn_cast<func::ReturnOp>(block.getTerminator());
    if (!ret)
      return func.emitError() << "layer function @" << func.getSymName()
                              << " must end with func.return";

    // Where each value lives. An op result returned at position j is written straight into
    // result j (its first position); every other returned value is copied at the end.
    llvm::DenseMap<Value, pb::BufferRef> refs;
    llvm::DenseMap<Value, int32_t> resultPosition;
    SmallVector<std::pair<int32_t, Value>> copies;
    for (auto [j, value] : llvm::enumerate(ret.getOperands())) {
      Operation *def = value.getDefiningOp();
      if (def && !isa<graph::LoadParamOp, graph::ConstantOp>(def) &&
          !resultPosition.count(value))
        resultPosition[value] = static_cast<int32_t>(j);
      else
        copies.push_back({static_cast<int32_t>(j), value});
    }
    for (BlockArgument arg : block.getArguments()) {
      pb::BufferRef &ref = refs[arg];
      ref.set_space(pb::BufferRef::ARG);
      ref.set_index(arg.getArgNumber());
      *ref.mutable_type() = f->args(arg.getArgNumber());
    }

    for (Operation &op : block.without_terminator()) {
      if (auto load = dyn_cast<graph::LoadParamOp>(op)) {
        auto it = layerParams[layer].find(load.getParam());
        if (it == layerParams[layer].end())
          return load.emitError() << "param @" << load.getParam() << " is not a param of layer @"
                                  << layers[layer].getSymName() << ", whose function @"
                                  << func.getSymName() << " reads it";
        // The weight slot holds floating-point params in the compute dtype.
        Type element = load.getType().getElementType();
        if (isa<FloatType>(element) && element != plan.getDtype())
          return load.emitError() << "param @" << load.getParam() << " is loaded as " << element
                                  << ", but the weight slot holds floating-point params in the "
                                     "compute dtype "
                                  << plan.getDtype();
        pb::BufferRef &ref = refs[load.getResult()];
        ref.set_space(pb::BufferRef::PARAM);
        ref.set_index(it->second);
        if (failed(setTensorType(load.getLoc(), load.getType(), "the loaded param",
                                 ref.mutable_type())))
          return failure();
        continue;
      }
      if (auto constant = dyn_cast<graph::ConstantOp>(op)) {
        FailureOr<int32_t> index = exportConstant(constant);
        if (failed(index))
          return failure();
        pb::BufferRef &ref = refs[constant.getResult()];
        ref.set_space(pb::BufferRef::CONSTANT);
        ref.set_index(*index);
        *ref.mutable_type() = out.constants(*index).type();
        continue;
      }
      if (failed(exportInstruction(op, workspaceBytes, resultPosition, refs, f->add_body())))
        return failure();
    }

    for (auto [j, value] : copies) {
      auto it = refs.find(value);
      if (it == refs.end())
        return ret.emitError() << "result #" << j << " of @" << func.getSymName()
                               << " is not defined in the function's body";
      pb::Instruction *copy = f->add_body();
      copy->set_kernel("copy");
      *copy->add_operands() = it->second;
      pb::BufferRef *result = copy->add_results();
      result->set_space(pb::BufferRef::RESULT);
      result->set_index(j);
      *result->mutable_type() = f->results(j);
      copy->set_location(shortLocation(ret.getLoc()));
    }
    return success();
  }

  LogicalResult exportInstruction(Operation &op, int64_t workspaceBytes,
                                  const llvm::DenseMap<Value, int32_t> &resultPosition,
                                  llvm::DenseMap<Value, pb::BufferRef> &refs,
                                  pb::Instruction *inst) {
    if (!isa<graph::GraphDialect>(op.getDialect()) || op.getNumRegions() != 0)
      return op.emitError() << "'" << op.getName()
                            << "' cannot be exported: a layer function holds graph ops only";
    StringRef kernelId = op.getName().getStringRef();
    kernelId.consume_front("graph.");
    const KernelInfo *kernel =
        ::rp::kernels::findKernel(std::string_view(kernelId.data(), kernelId.size()));
    if (!kernel)
      return op.emitError() << "no kernel for '" << op.getName() << "' in the kernel registry";
    int numOperands = static_cast<int>(op.getNumOperands());
    int numResults = static_cast<int>(op.getNumResults());
    if (!kernel->acceptsOperands(numOperands) || !kernel->acceptsResults(numResults))
      return op.emitError() << "kernel '" << kernelId << "' of the kernel registry does not take "
                            << numOperands << " operands and " << numResults << " results";
    inst->set_kernel(kernelId.str());
    inst->set_location(shortLocation(op.getLoc()));
    if (failed(exportAttributes(op, *kernel, inst)))
      return failure();

    for (Value operand : op.getOperands()) {
      auto it = refs.find(operand);
      if (it == refs.end())
        return op.emitError() << "an operand of '" << op.getName()
                              << "' is not defined in the function's body";
      *inst->add_operands() = it->second;
    }

    auto offsets = op.getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttr);
    for (OpResult result : op.getResults()) {
      pb::BufferRef &ref = refs[result];
      unsigned i = result.getResultNumber();
      if (failed(setTensorType(op.getLoc(), result.getType(), "result #" + Twine(i),
                               ref.mutable_type())))
        return failure();
      if (auto it = resultPosition.find(result); it != resultPosition.end()) {
        ref.set_space(pb::BufferRef::RESULT);
        ref.set_index(it->second);
      } else {
        if (!offsets)
          return op.emitError() << "'" << op.getName() << "' has no '" << kOffsetsAttr
                                << "'; run rp-plan-memory first";
        if (offsets.size() != op.getNumResults())
          return op.emitError() << "'" << kOffsetsAttr << "' has " << offsets.size()
                                << " entries; expected one per result (" << op.getNumResults()
                                << ")";
        int64_t offset = offsets[i];
        int64_t bytes = tensorBytes(ref.type());
        if (offset < 0 || offset + bytes > workspaceBytes)
          return op.emitError() << "result #" << i << " (" << bytes
                                << " bytes) has workspace offset " << offset
                                << "; expected an offset in [0, " << workspaceBytes
                                << " - size] (the function's workspace)";
        ref.set_space(pb::BufferRef::WORKSPACE);
        ref.set_offset(offset);
      }
      *inst->add_results() = ref;
    }
    return success();
  }

  /// Converts the inherent attributes of `op` and checks them against `kernel`.
  LogicalResult exportAttributes(Operation &op, const KernelInfo &kernel, pb::Instruction *inst) {
    std::optional<RegisteredOperationName> info = op.getRegisteredInfo();
    for (StringAttr nameAttr : info->getAttributeNames()) {
      std::optional<Attribute> maybe = op.getInherentAttr(nameAttr.getValue());
      if (!maybe || !*maybe)
        continue;
      StringRef name = nameAttr.getValue();
      Attribute attr = *maybe;
      pb::Attribute value;
      if (isa<UnitAttr>(attr)) {
        value.set_b(true);
      } else if (auto b = dyn_cast<BoolAttr>(attr)) {
        value.set_b(b.getValue());
      } else if (auto i = dyn_cast<IntegerAttr>(attr)) {
        if (std::optional<std::string> keyword = enumKeyword(&op, name))
          value.set_s(*keyword);
        else if (i.getType().isSignlessInteger(32))
          return op.emitError() << "attribute '" << name << "' of '" << op.getName()
                                << "' is an i32 enum the plan exporter does not know";
        else
          value.set_i(i.getValue().getSExtValue());
      } else if (auto f = dyn_cast<FloatAttr>(attr)) {
        value.set_f(f.getValueAsDouble());
      } else if (auto s = dyn_cast<StringAttr>(attr)) {
        value.set_s(s.getValue().str());
      } else if (auto ints = dyn_cast<DenseI64ArrayAttr>(attr)) {
        for (int64_t v : ints.asArrayRef())
          value.mutable_ints()->add_values(v);
      } else if (auto array = dyn_cast<ArrayAttr>(attr);
                 array && llvm::all_of(array, [](Attribute a) { return isa<IntegerAttr>(a); })) {
        for (Attribute a : array)
          value.mutable_ints()->add_values(cast<IntegerAttr>(a).getValue().getSExtValue());
      } else if (auto t = dyn_cast<TypeAttr>(attr)) {
        Type element = getElementTypeOrSelf(t.getValue());
        value.set_s(typeName(element));
      } else {
        return op.emitError() << "attribute '" << name << "' of '" << op.getName() << "' ("
                              << attr << ") has a kind a plan cannot hold";
      }

      const AttrSpec *spec = kernel.findAttr(std::string_view(name.data(), name.size()));
      if (!spec)
        return op.emitError() << "kernel '" << StringRef(kernel.id.data(), kernel.id.size())
                              << "' of the kernel registry takes no attribute '" << name << "'";
      if (!kindAccepts(spec->kind, kindOf(value)))
        return op.emitError() << "attribute '" << name << "' of '" << op.getName() << "' is "
                              << ::rp::kernels::attrKindName(kindOf(value))
                              << "; kernel '" << StringRef(kernel.id.data(), kernel.id.size())
                              << "' of the kernel registry takes "
                              << ::rp::kernels::attrKindName(spec->kind);
      (*inst->mutable_attrs())[name.str()] = std::move(value);
    }
    for (const AttrSpec &spec : kernel.attrs)
      if (spec.required && !inst->attrs().count(std::string(spec.name)))
        return op.emitError() << "'" << op.getName() << "' has no attribute '"
                              << StringRef(spec.name.data(), spec.name.size())
                              << "', which kernel '"
                              << StringRef(kernel.id.data(), kernel.id.size())
                              << "' of the kernel registry requires";
    return success();
  }

  // ---- constants ----

  /// The Plan.constants index of `constant` (one entry per distinct offset).
  FailureOr<int32_t> exportConstant(graph::ConstantOp constant) {
    FailureOr<int64_t> offset = requiredI64(
        constant, constant->getAttrOfType<IntegerAttr>(kOffsetAttr), kOffsetAttr);
    if (failed(offset))
      return failure();
    Attribute value = constant.getValue();
    if (auto it = constantsByOffset.find(*offset); it != constantsByOffset.end()) {
      if (it->second.second != value) {
        InFlightDiagnostic diag = constant.emitError()
                                  << "constant at constants offset " << *offset
                                  << " differs from the constant already placed there";
        diag.attachNote(it->second.first->getLoc()) << "the other constant";
        return diag;
      }
      return constantIndexByOffset[*offset];
    }

    pb::Constant c;
    c.set_offset(*offset);
    if (failed(setTensorType(constant.getLoc(), constant.getType(), "the constant",
                             c.mutable_type())))
      return failure();
    int64_t bytes = tensorBytes(c.type());
    if (*offset < 0 || *offset + bytes > out.device_arena().constants())
      return constant.emitError() << "constant of " << bytes << " bytes at offset " << *offset
                                  << " does not fit the device constants region ("
                                  << out.device_arena().constants() << " bytes)";
    if (failed(constantData(constant, c.type(), *c.mutable_data())))
      return failure();
    if (static_cast<int64_t>(c.data().size()) != bytes)
      return constant.emitError() << "constant data has " << c.data().size()
                                  << " bytes; expected " << bytes;

    int32_t index = static_cast<int32_t>(out.constants_size());
    *out.add_constants() = std::move(c);
    constantsByOffset[*offset] = {constant, value};
    constantIndexByOffset[*offset] = index;
    return index;
  }

  /// The little-endian element bytes of `constant` (i1 as one byte per element; a splat
  /// expanded to every element).
  LogicalResult constantData(graph::ConstantOp constant, const pb::TensorType &type,
                             std::string &data) {
    Attribute value = constant.getValue();
    int64_t elementBytes = dtypeBytes(type.dtype());
    if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
      int64_t n = dense.getNumElements();
      data.reserve(static_cast<size_t>(n * elementBytes));
      if (type.dtype() == pb::I1) {
        for (bool b : dense.getValues<bool>())
          data.push_back(b ? 1 : 0);
        return success();
      }
      ArrayRef<char> raw = dense.getRawData();
      if (llvm::endianness::native == llvm::endianness::little && !dense.isSplat() &&
          static_cast<int64_t>(raw.size()) == n * elementBytes) {
        data.assign(raw.begin(), raw.end());
        return success();
      }
      if (isa<FloatType>(dense.getElementType())) {
        for (const APFloat &f : dense.getValues<APFloat>())
          appendLittleEndian(f.bitcastToAPInt(), data);
      } else {
        for (const APInt &i : dense.getValues<APInt>())
          appendLittleEndian(i, data);
      }
      return success();
    }
    if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
      AsmResourceBlob *blob = resource.getRawHandle().getBlob();
      if (!blob)
        return constant.emitError() << "the data of dense_resource constant '"
                                    << resource.getRawHandle().getKey()
                                    << "' is not available";
      if (llvm::endianness::native != llvm::endianness::little)
        return constant.emitError() << "dense_resource constants are exported on "
                                       "little-endian hosts only";
      ArrayRef<char> raw = blob->getData();
      data.assign(raw.begin(), raw.end());
      return success();
    }
    return constant.emitError() << "constant " << value
                                << " cannot be exported: expected dense or dense_resource elements";
  }

  // ---- host buffers, stages, optimizer steps ----

  LogicalResult exportHostBuffers() {
    for (schedule::HostBufferOp buffer : plan.getHostBuffers()) {
      bufferIndex[buffer.getSymName()] = out.host_buffers_size();
      pb::HostBuffer *b = out.add_host_buffers();
      b->set_name(buffer.getSymName().str());
      switch (buffer.getKind()) {
      case schedule::BufferKind::input:
        b->set_kind(pb::INPUT);
        break;
      case schedule::BufferKind::activation:
        b->set_kind(pb::ACTIVATION);
        break;
      case schedule::BufferKind::cotangent:
        b->set_kind(pb::COTANGENT);
        break;
      case schedule::BufferKind::loss:
        b->set_kind(pb::LOSS);
        break;
      case schedule::BufferKind::loss_seed:
        b->set_kind(pb::LOSS_SEED);
        break;
      }
      if (std::optional<StringRef> name = buffer.getName())
        b->set_input_name(name->str());
      if (failed(setTensorType(buffer.getLoc(), buffer.getType(),
                               "host buffer @" + buffer.getSymName(), b->mutable_type())))
        return failure();
      FailureOr<int64_t> offset = requiredI64(buffer, buffer.getOffsetAttr(), "offset");
      if (failed(offset))
        return failure();
      b->set_offset(*offset);
    }
    return success();
  }

  LogicalResult exportStages() {
    for (schedule::StageOp stage : plan.getStages())
      stageIndex[stage.getSymName()] = static_cast<int32_t>(stageIndex.size());
    for (schedule::StageOp stage : plan.getStages())
      if (failed(exportStage(stage, out.add_stages())))
        return failure();
    return success();
  }

  LogicalResult exportStage(schedule::StageOp stage, pb::Stage *s) {
    s->set_name(stage.getSymName().str());
    switch (stage.getKind()) {
    case schedule::StageKind::forward:
      s->set_kind(pb::FORWARD);
      break;
    case schedule::StageKind::fused_tail:
      s->set_kind(pb::FUSED_TAIL);
      break;
    case schedule::StageKind::backward:
      s->set_kind(pb::BACKWARD);
      break;
    }
    int64_t begin = static_cast<int64_t>(stage.getBegin());
    int64_t end = static_cast<int64_t>(stage.getEnd());
    int64_t numLayers = static_cast<int64_t>(layers.size());
    if (begin >= end || end > numLayers)
      return stage.emitError() << "stage @" << stage.getSymName() << " has layers [" << begin
                               << ", " << end << "); expected a non-empty range within [0, "
                               << numLayers << ")";
    s->set_begin(static_cast<int32_t>(begin));
    s->set_end(static_cast<int32_t>(end));

    // The stage's host ranges start at its first param (weights) and first trainable param
    // (gradient slots): rp-plan-memory lays params out in layer order.
    std::optional<int64_t> weightOffset, stateOffset;
    for (int64_t l = begin; l < end; ++l)
      for (int32_t p : out.layers(static_cast<int>(l)).params()) {
        const pb::Param &param = out.params(p);
        if (!weightOffset)
          weightOffset = param.weight_offset();
        if (!stateOffset && param.trainable())
          stateOffset = param.grad_offset();
      }
    s->set_weight_offset(weightOffset.value_or(0));
    s->set_state_offset(stateOffset.value_or(0));

    FailureOr<int64_t> weightBytes = requiredI64(stage, stage.getWeightBytesAttr(), "weight_bytes");
    FailureOr<int64_t> activationBytes =
        requiredI64(stage, stage.getActivationBytesAttr(), "activation_bytes");
    FailureOr<int64_t> workspaceBytes =
        requiredI64(stage, stage.getWorkspaceBytesAttr(), "workspace_bytes");
    FailureOr<int64_t> peakBytes = requiredI64(stage, stage.getPeakBytesAttr(), "peak_bytes");
    if (failed(weightBytes) || failed(activationBytes) || failed(workspaceBytes) ||
        failed(peakBytes))
      return failure();
    s->set_weight_bytes(*weightBytes);
    s->set_grad_bytes(stage.getGradBytesAttr() ? stage.getGradBytesAttr().getInt() : 0);
    s->set_activation_bytes(*activationBytes);
    s->set_workspace_bytes(*workspaceBytes);
    s->set_peak_bytes(*peakBytes);

    auto microBatches = stage.getBody().front().getOps<schedule::MicroBatchOp>();
    if (!llvm::hasSingleElement(microBatches))
      return stage.emitError() << "stage @" << stage.getSymName()
                               << " must hold exactly one schedule.micro_batch";
    return exportMicroBatch(stage, *microBatches.begin(), s);
  }

  LogicalResult exportMicroBatch(schedule::StageOp stage, schedule::MicroBatchOp body,
                                 pb::Stage *s) {
    llvm::DenseMap<Value, int64_t> offsets;
    auto offsetOf = [&](Operation *user, Value value) -> FailureOr<int64_t> {
      auto it = offsets.find(value);
      if (it == offsets.end())
        return user->emitError() << "'" << user->getName()
                                 << "' reads a value that no upload or call of the micro-batch "
                                    "body defines";
      return it->second;
    };

    for (Operation &op : body.getBody().front()) {
      pb::Step *step = s->add_body();
      if (auto upload = dyn_cast<schedule::UploadOp>(op)) {
        pb::Upload *u = step->mutable_upload();
        auto buffer = bufferIndex.find(upload.getBuffer());
        if (buffer == bufferIndex.end())
          return upload.emitError() << "upload of @" << upload.getBuffer()
                                    << ", which is not a schedule.host_buffer of the plan";
        u->set_buffer(buffer->second);
        u->set_after_stage(-1);
        if (std::optional<StringRef> after = upload.getAfter()) {
          auto producer = stageIndex.find(*after);
          if (producer == stageIndex.end())
            return upload.emitError() << "upload after @" << *after
                                      << ", which is not a schedule.stage of the plan";
          u->set_after_stage(producer->second);
        }
        FailureOr<int64_t> offset = requiredI64(upload, upload.getOffsetAttr(), "offset");
        if (failed(offset))
          return failure();
        u->set_offset(*offset);
        offsets[upload.getResult()] = *offset;
      } else if (auto download = dyn_cast<schedule::DownloadOp>(op)) {
        pb::Download *d = step->mutable_download();
        auto buffer = bufferIndex.find(download.getBuffer());
        if (buffer == bufferIndex.end())
          return download.emitError() << "download to @" << download.getBuffer()
                                      << ", which is not a schedule.host_buffer of the plan";
        d->set_buffer(buffer->second);
        FailureOr<int64_t> offset = offsetOf(download, download.getValue());
        if (failed(offset))
          return failure();
        d->set_offset(*offset);
      } else if (auto call = dyn_cast<schedule::CallOp>(op)) {
        pb::Call *c = step->mutable_call();
        auto function = functionIndex.find(call.getCallee());
        if (function == functionIndex.end())
          return call.emitError() << "call of @" << call.getCallee()
                                  << ", which no schedule.layer names";
        c->set_function(function->second);
        for (Value arg : call.getArgs()) {
          FailureOr<int64_t> offset = offsetOf(call, arg);
          if (failed(offset))
            return failure();
          c->add_arg_offsets(*offset);
        }
        std::optional<ArrayRef<int64_t>> resultOffsets = call.getOffsets();
        if (!resultOffsets)
          return call.emitError() << "'schedule.call' has no 'offsets'; run rp-plan-memory first";
        if (resultOffsets->size() != call.getNumResults())
          return call.emitError() << "'offsets' has " << resultOffsets->size()
                                  << " entries; expected one per result ("
                                  << call.getNumResults() << ")";
        for (auto [result, offset] : llvm::zip_equal(call.getResults(), *resultOffsets)) {
          c->add_result_offsets(offset);
          offsets[result] = offset;
        }
      } else if (auto accumulate = dyn_cast<schedule::AccumulateOp>(op)) {
        pb::Accumulate *a = step->mutable_accumulate();
        std::optional<int32_t> param;
        for (int32_t l = s->begin(); l < s->end() && !param; ++l) {
          if (accumulate.getLayer() && layers[l].getSymName() != *accumulate.getLayer())
            continue;
          auto it = layerParams[l].find(accumulate.getParam());
          if (it != layerParams[l].end() && out.params(it->second).trainable())
            param = it->second;
        }
        if (!param)
          return accumulate.emitError()
                 << "accumulate into @" << accumulate.getParam()
                 << ", which is not a trainable param of a layer of stage @"
                 << stage.getSymName();
        a->set_param(*param);
        FailureOr<int64_t> offset = offsetOf(accumulate, accumulate.getValue());
        if (failed(offset))
          return failure();
        a->set_offset(*offset);
      } else if (isa<schedule::PrefetchNextOp>(op)) {
        step->mutable_prefetch_next();
      } else {
        return op.emitError() << "'" << op.getName()
                              << "' cannot be exported from a micro-batch body";
      }
    }
    return success();
  }

  LogicalResult exportOptimizerSteps() {
    for (schedule::OptimizerStepOp step : plan.getOptimizerSteps()) {
      pb::OptimizerStep *o = out.add_optimizer_steps();
      auto layer = layerIndex.find(step.getLayer());
      if (layer == layerIndex.end())
        return step.emitError() << "optimizer step of @" << step.getLayer()
                                << ", which is not a schedule.layer of the plan";
      o->set_layer(layer->second);
      auto grads = stageIndex.find(step.getGrads());
      if (grads == stageIndex.end())
        return step.emitError() << "optimizer step waits for @" << step.getGrads()
                                << ", which is not a schedule.stage of the plan";
      o->set_grads_stage(grads->second);
      for (auto ref : step.getUploads().getAsRange<FlatSymbolRefAttr>()) {
        auto upload = stageIndex.find(ref.getValue());
        if (upload == stageIndex.end())
          return step.emitError() << "optimizer step waits for @" << ref.getValue()
                                  << ", which is not a schedule.stage of the plan";
        o->add_upload_stages(upload->second);
      }
      if (ArrayAttr shared = step.getSharedGradsAttr())
        for (auto ref : shared.getAsRange<FlatSymbolRefAttr>()) {
          auto stage = stageIndex.find(ref.getValue());
          if (stage == stageIndex.end())
            return step.emitError() << "optimizer step waits for @" << ref.getValue()
                                    << ", which is not a schedule.stage of the plan";
          o->add_shared_grads_stages(stage->second);
        }
    }
    return success();
  }

  ModuleOp module;
  schedule::PlanOp plan;
  pb::Plan &out;
  SymbolTable moduleSymbols;

  SmallVector<schedule::LayerOp> layers;
  llvm::StringMap<int32_t> layerIndex;
  /// Per layer: param symbol -> Plan.params index.
  SmallVector<llvm::StringMap<int32_t>> layerParams;
  /// Trainable param symbol -> its owner's (first) Plan.params entry.
  llvm::StringMap<int32_t> trainableEntry;
  /// Plan.functions in order, the layer of each, and name -> index.
  SmallVector<func::FuncOp> functions;
  SmallVector<int32_t> functionLayer;
  llvm::StringMap<int32_t> functionIndex;
  /// Constants: offset -> (first op placed there, its value), offset -> Plan.constants index.
  llvm::DenseMap<int64_t, std::pair<Operation *, Attribute>> constantsByOffset;
  llvm::DenseMap<int64_t, int32_t> constantIndexByOffset;
  llvm::StringMap<int32_t> bufferIndex;
  llvm::StringMap<int32_t> stageIndex;
};

} // namespace

FailureOr<::rp::plan::Plan> exportPlan(ModuleOp module, const PlanExportOptions &options) {
  SmallVector<schedule::PlanOp> plans(module.getOps<schedule::PlanOp>());
  if (plans.size() != 1)
    return module.emitError() << "expected one schedule.plan in the module, found "
                              << plans.size();
  ::rp::plan::Plan plan;
  plan.set_producer(options.producer);
  plan.set_model(options.model);
  plan.set_weights_file(options.weightsFile);
  Exporter exporter(module, plans.front(), plan);
  if (failed(exporter.run()))
    return failure();
  return plan;
}

} // namespace mlir::rp
