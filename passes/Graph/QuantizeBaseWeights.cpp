//===- QuantizeBaseWeights.cpp - frozen GEMM weights held quantized -------===//
//
// rp-quantize-base-weights: QLoRA's base weights (Dettmers et al. 2023, §3): the frozen
// weights the GEMMs read are held quantized and dequantized per layer into the GEMM's operand
// (graph.dequantize); Passes.td has the rules.
//
//===----------------------------------------------------------------------===//

#include "passes/Graph/Passes.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/ShapeInference.h"
#include "kernels/Quantization.h"
#include "passes/Graph/FusionUtils.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::rp {

#define GEN_PASS_DEF_QUANTIZEBASEWEIGHTS
#include "passes/Graph/Passes.h.inc"

namespace {

/// The input axis (the one the GEMM contracts) of a weight of rank `rank` read by `user` as
/// operand `operand`, `swapped` when a transpose of the last two dimensions came between; nullopt
/// when `user` does not read it as a GEMM weight.
std::optional<int64_t> gemmInputAxis(Operation *user, unsigned operand, int64_t rank,
                                     bool swapped) {
  bool lastIsIn; // before any transpose: is the last dimension the contracted one?
  if (auto mm = dyn_cast<graph::MatMulOp>(user)) {
    // rhs [.., K, N] (transpose_b: [.., N, K]); lhs [.., M, K] (transpose_a: [.., K, M]).
    lastIsIn = operand == 1 ? mm.getTransposeB() : !mm.getTransposeA();
  } else if (auto gm = dyn_cast<graph::GroupedMatMulOp>(user); gm && operand == 1) {
    lastIsIn = gm.getTransposeB();
  } else {
    return std::nullopt;
  }
  if (swapped)
    lastIsIn = !lastIsIn;
  return lastIsIn ? rank - 1 : rank - 2;
}

/// Where the dequantized copy of `load`'s weight is made: just before its first reader in the
/// load's block, so that the full-precision copy is live only from there to its last reader
/// (a layer's peak memory then holds one dequantized weight at a time, not every weight the
/// layer loads at its start); right after the load when a reader sits in another block.
Operation *firstUserInBlock(graph::LoadParamOp load) {
  Operation *first = nullptr;
  for (Operation *user : load->getUsers()) {
    Operation *inBlock = load->getBlock()->findAncestorOpInBlock(*user);
    if (!inBlock)
      return load->getNextNode();
    if (!first || inBlock->isBeforeInBlock(first))
      first = inBlock;
  }
  return first ? first : load->getNextNode();
}

/// The input axis of frozen weight `load`'s value when every use is a GEMM weight read
/// (directly or through a last-two transpose), nullopt otherwise.
std::optional<int64_t> onlyGemmReads(graph::LoadParamOp load, int64_t rank) {
  std::optional<int64_t> axis;
  for (OpOperand &use : load.getResult().getUses()) {
    Operation *user = use.getOwner();
    std::optional<int64_t> a;
    auto t = dyn_cast<graph::TransposeOp>(user);
    if (t && fusion::swapsLastTwo(t.getPermutation())) {
      for (OpOperand &tuse : t.getResult().getUses()) {
        a = gemmInputAxis(tuse.getOwner(), tuse.getOperandNumber(), rank, true);
        if (!a)
          return std::nullopt;
      }
    } else {
      a = gemmInputAxis(user, use.getOperandNumber(), rank, false);
    }
    if (!a)
      return std::nullopt;
    if (!axis)
      axis = a;
  }
  return axis;
}

struct QuantizeBaseWeights : impl::QuantizeBaseWeightsBase<QuantizeBaseWeights> {
  using QuantizeBaseWeightsBase::QuantizeBaseWeightsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<::rp::kernels::QuantFormat> kformat = ::rp::kernels::parseQuantFormat(format);
    if (!kformat) {
      emitError(module.getLoc()) << "rp-quantize-base-weights: unknown format '" << format
                                 << "'; expected nf4, nf4-fp32-absmax, int8 or fp8";
      return signalPassFailure();
    }
    const auto gformat = static_cast<graph::QuantFormat>(static_cast<int>(*kformat));

    // Every load of each frozen float param of rank >= 2, in module order.
    llvm::MapVector<StringRef, SmallVector<graph::LoadParamOp>> loads;
    llvm::StringMap<graph::ParamOp> params;
    for (graph::ParamOp p : module.getOps<graph::ParamOp>())
      if (!p.getTrainable() && !p.getQuant() && p.getTensorType().getRank() >= 2 &&
          isa<FloatType>(p.getTensorType().getElementType()))
        params[p.getSymName()] = p;
    module.walk([&](graph::LoadParamOp load) {
      if (params.count(load.getParam()))
        loads[load.getParam()].push_back(load);
    });

    int quantized = 0;
    for (auto &[name, uses] : loads) {
      graph::ParamOp param = params.lookup(name);
      const int64_t rank = param.getTensorType().getRank();
      std::optional<int64_t> axis;
      bool gemmOnly = true;
      for (graph::LoadParamOp load : uses) {
        std::optional<int64_t> a = onlyGemmReads(load, rank);
        if (!a) {
          gemmOnly = false;
          break;
        }
        if (!axis)
          axis = a;
      }
      if (!gemmOnly || !axis)
        continue;
      RankedTensorType stored = param.getTensorType();
      const bool hasAxis = ::rp::kernels::quantFormatHasAxis(*kformat);
      llvm::Expected<int64_t> bytes =
          graph::quantizedBytes(static_cast<int>(*kformat), stored.getShape(), *axis);
      if (!bytes) {
        param.emitError() << "rp-quantize-base-weights: frozen weight @" << name << " "
                          << llvm::toString(bytes.takeError()).substr(std::string("a weight ").size());
        return signalPassFailure();
      }
      auto storage = RankedTensorType::get(
          {*bytes}, IntegerType::get(&getContext(), 8, IntegerType::Unsigned));
      param.setType(storage);
      param.setQuant(gformat);
      param.setStoredType(stored);
      if (hasAxis)
        param.setQuantAxis(*axis);
      for (graph::LoadParamOp load : uses) {
        OpBuilder b(load.getContext());
        b.setInsertionPoint(firstUserInBlock(load));
        load.getResult().setType(storage);
        auto dq = graph::DequantizeOp::create(
            b, load.getLoc(), stored, load.getResult(), gformat,
            hasAxis ? b.getI64IntegerAttr(*axis) : IntegerAttr());
        load.getResult().replaceAllUsesExcept(dq.getResult(), dq);
      }
      ++quantized;
    }
    if (quantized == 0) {
      emitError(module.getLoc())
          << "rp-quantize-base-weights: --base-weights " << format
          << " holds the frozen weights the GEMMs read quantized, but no frozen weight of "
             "rank 2 or more is read only by GEMMs (every weight trains: add LoRA adapters "
             "with --lora-rank, or freeze weights with --freeze)";
      return signalPassFailure();
    }
  }
};

} // namespace
} // namespace mlir::rp
