//===- Initializers.h - which ONNX initializers are trainable params -*- C++ -*-===//
//
// ONNX stores a module's parameters, its buffers and the constants an exporter lifts out of
// the graph alike, as initializers. Every `nn.Parameter` of the exported module is a trainable
// param whatever its size (a learnable scalar temperature or gate, a `[1]` activation
// coefficient); buffers and constants are not. Each initializer is decided in this order:
//  1. Integer and boolean initializers are constants.
//  2. Initializers listed in the model metadata `rp.buffers` (comma-separated; the export
//     script, examples/export/export_model.py, lists the module's buffers) are constants.
//  3. The dynamo exporter records what each initializer was in the PyTorch program, in the
//     metadata of the initializer's value info (`pkg.torch.export.graph_signature.InputSpec.
//     kind`): PARAMETER is a param; BUFFER and CONSTANT_TENSOR (a plain tensor attribute or a
//     `torch.tensor(...)` in forward) are constants.
//  4. Initializers an exporter created and named itself (a folded value) are parameters only
//     when they hold more than one element (a weight's folded transpose keeps training; a
//     lifted epsilon or scale folds as a constant): in a dynamo export, those without the
//     annotation of rule 3 (the ONNX optimizer's results, `val_12`); elsewhere TorchScript's
//     names for node outputs, `onnx::Mul_12` (constant folding) and `/model/Constant_output_0`.
//  5. Every other floating-point initializer carries the name its module gave it
//     (TorchScript keeps the state-dict names; a hand-written model names its own weights):
//     a trainable param.
//
//===----------------------------------------------------------------------===//
#ifndef RP_FRONTENDS_ONNX_INITIALIZERS_H
#define RP_FRONTENDS_ONNX_INITIALIZERS_H

#include "llvm/ADT/StringSet.h"

namespace onnx {
class ModelProto;
} // namespace onnx

namespace mlir::rp::onnx {

/// The names of the initializers of `model` that are trainable params (rules above).
llvm::StringSet<> parameterInitializers(const ::onnx::ModelProto &model);

} // namespace mlir::rp::onnx

#endif // RP_FRONTENDS_ONNX_INITIALIZERS_H
