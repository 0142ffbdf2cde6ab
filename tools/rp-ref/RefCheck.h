//===- RefCheck.h - rp-ref --reference: compare with a PyTorch sidecar ----===//
//
// The exporters' oracle: examples/export/export_model.py writes, next to each ONNX
// training graph, a safetensors sidecar computed by PyTorch on one seeded batch:
//
//   input.<graph input name>   the batch (e.g. input.input_ids, input.labels; int64)
//   loss                       float32, shape [] (or [1])
//   grad.<param name>          float32, the gradient of every parameter (torch.autograd);
//                              also accepted under the name of the param's ONNX initializer
//                              (a tied embedding rpc names after the embedding, a sidecar
//                              written from the exporter's initializers after the LM head)
//
// rp-ref runs the training function (@train_step from rp-autodiff with the loss seed as its
// last argument) on that batch with the reference interpreter (f32) and compares:
//   loss   |loss - loss_ref| / |loss_ref|                              <= lossRtol
//   grads  max_i |g_i - g_ref_i| / max_i |g_ref_i|  for every param   <= gradRtol
// The gradient error is normalised by the tensor's largest reference magnitude (elementwise
// relative errors are meaningless where a gradient is near zero). Every trainable param must
// have a reference gradient and every reference gradient a trainable param.
//
// With microBatches M > 1 the sidecar's batch is M times the model's (dimension 0 of every
// input): rp-ref splits it into M micro-batches of consecutive rows and computes what the
// runtime's optimizer sees (runtime/train/TokenWeights.h): each micro-batch seeded with
// M n_m / N (n_m: its labels other than the cross-entropy's ignore_index), the gradients
// summed in fp32 and scaled by 1/M, the loss sum n_m loss_m / N. PyTorch's reference is the
// mean cross-entropy over the whole batch: the same quantity (export_sft_reference.py).
//
//===----------------------------------------------------------------------===//
#ifndef RP_TOOLS_RP_REF_REFCHECK_H
#define RP_TOOLS_RP_REF_REFCHECK_H

#include "frontends/onnx/OnnxImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>

namespace mlir::rp {

struct RefCheckOptions {
  std::string sidecarPath;
  double lossRtol = 1e-4;
  double gradRtol = 1e-3;
  int64_t microBatches = 1; ///< The sidecar's batch holds this many micro-batches.
};

/// Runs `trainStep` on the sidecar's batch and compares loss and gradients (see the file
/// comment); prints a report on stdout. Returns the process exit code: 0 within tolerance,
/// 1 outside it (the worst params named on stderr), 2 bad input (a missing or malformed
/// sidecar, a missing input, a shape or dtype mismatch, a param without a reference gradient).
int checkAgainstReference(func::FuncOp trainStep, const onnx::InitializerTable &initializers,
                          const RefCheckOptions &options);

} // namespace mlir::rp

#endif // RP_TOOLS_RP_REF_REFCHECK_H
