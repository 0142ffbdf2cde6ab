//===- RefTrain.h - rp-ref --train: the non-pipelined training oracle -----===//
//
// Trains a model the plain way: the whole model's forward and backward in one function
// (@train_step, built by rp-autodiff after the same fusion passes rpc-compile runs), run by
// the reference interpreter on the CPU kernels, one micro-batch after another, each backward
// seeded with the micro-batch's token weight M n_m / N as rp-run seeds the fused tail
// (runtime/train/TokenWeights.h; masked token files set n_m), with the
// gradients accumulated in fp32 in micro-batch order (set at m = 0, added after) and the
// runtime's AdamW (runtime/optim/AdamW.h), data sampler and checkpoint writer. It is the
// reference the pipelined executor (rp-run) must match bit for bit in sync mode, and the
// staleness-1 recurrence it must match in async mode:
//   sync   g_i = grad f(W_i; batch_i),            W_{i+1} = AdamW(W_i, g_i)
//   async  g_i = grad f(W_{max(i-1,0)}; batch_i), W_{i+1} = AdamW(W_i, g_i)
// (arXiv 2604.27085 §4.3; runtime/exec/Executor.h).
//
//===----------------------------------------------------------------------===//
#ifndef RP_TOOLS_RP_REF_REFTRAIN_H
#define RP_TOOLS_RP_REF_REFTRAIN_H

#include "frontends/onnx/OnnxImporter.h"
#include "runtime/data/TokenFile.h"
#include "runtime/optim/AdamW.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <string>

namespace mlir::rp {

struct RefTrainOptions {
  std::string dataPath;
  ::rp::runtime::DataFormat dataFormat = ::rp::runtime::DataFormat::Auto;
  int64_t steps = 1;
  int64_t microBatches = 1;
  bool async = false;
  double lr = 3e-4, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0, gradClip = 0;
  int64_t warmup = 0;
  ::rp::runtime::LrDecay lrDecay = ::rp::runtime::LrDecay::Constant; ///< over `steps`
  double minLr = 0;
  uint64_t seed = 0;
  std::string logPath; ///< JSON lines as rp-run writes them ("" : none).
  std::string saveDir; ///< A checkpoint as rp-run writes it ("" : none).
  /// Testing: step K's (1-based) backward seeds are +inf, as rp-run's flag. 0: never.
  int64_t injectNonFiniteStep = 0;
};

/// Trains `trainStep` (loss and gradient results, graph.grad_of) from the model's initial
/// params; prints one line per step. A step with a non-finite gradient (after the shared
/// params' sums) is skipped as rp-run skips it: no AdamW, the weights unchanged ("skipped"). Returns the process exit code (0, or 2 for bad input
/// with a message on stderr).
int runReferenceTraining(func::FuncOp trainStep, const onnx::InitializerTable &initializers,
                         const RefTrainOptions &options);

} // namespace mlir::rp

#endif // RP_TOOLS_RP_REF_REFTRAIN_H
