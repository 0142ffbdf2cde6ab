//===- LayerCosts.h - per-layer costs of the grouped IR ---------*- C++ -*-===//
//
// The cost model of the compiler side: a layer profile estimated from the
// layer functions that rp-group-layers made, for when no measured profile is given. Per
// layer: forward FLOPs (matmul 2*M*N*K per batch element, grouped_matmul 2*R*K*N for the R =
// T*k routed rows, each against one expert (the active FLOPs, not E times them), moe_combine
// 2 per element of its [T*k, N] rows, attention 2*B*Hq*P*(D + Dv) over the P (query, key)
// pairs its kernels compute (kernels/FlopRules.h; causal: the lower triangle), 1 per element
// for other elementwise ops,
// 5 per input element for reductions, softmax and norms), backward = 2x forward (the paper's
// rule; recomputation is counted by the partitioner), parameter and trainable bytes (each
// param the layer reads, once), boundary activation bytes (the layer's results), peak working
// memory (the activations live at once in the forward; the partitioner adds the largest one of
// a stage to its memory), saved bytes (what rp-split-gradient's backward of the layer takes
// from its forward: residuals and read inputs, in the compute dtype; a backward stage holds
// them for all its layers). Times are FLOPs / (peak TFLOP/s x efficiency).
//
//===----------------------------------------------------------------------===//

#ifndef RP_PASSES_SCHEDULE_LAYERCOSTS_H
#define RP_PASSES_SCHEDULE_LAYERCOSTS_H

#include "runtime/partition/Profile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::rp {

/// FLOPs of one forward execution of `func` (see the file comment).
double forwardFlops(func::FuncOp func);

/// Peak bytes of the values live at once while `func` runs (params excluded), from a liveness
/// walk over its ops in order: the layer's working memory for one micro-batch; float tensors
/// at `floatBytes` per element (the compute dtype).
int64_t peakLiveBytes(func::FuncOp func, int64_t floatBytes);

/// The saved bytes of every layer of `graph.layers`, in order (layerResidualBytes of each with
/// the lowering's configuration, layerGradientConfig; the last layer is the loss). Float
/// tensors count `floatBytes` per element (the compute dtype). Fails (after emitting) when
/// the module has not been grouped or a layer cannot be differentiated.
FailureOr<SmallVector<uint64_t>> estimateSavedBytes(ModuleOp module, int64_t floatBytes);

/// Estimates a profile of the layers listed in `graph.layers`; fails (with an error at the
/// module) when the module has not been grouped or the target has no peak TFLOP/s. Sizes in
/// the compute dtype: float tensors at `floatBytes` per element (param, activation, working
/// and saved bytes), integer tensors in the IR's types; trainable bytes at 4 per element
/// (gradients are downloaded from fp32 accumulators).
FailureOr<::rp::partition::Profile> estimateProfile(ModuleOp module,
                                                    const ::rp::partition::TargetSpec &target,
                                                    double efficiency = 0.5,
                                                    int64_t floatBytes = 4);

} // namespace mlir::rp

#endif // RP_PASSES_SCHEDULE_LAYERCOSTS_H
