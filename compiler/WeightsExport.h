//===- WeightsExport.h - The initial weights beside a plan -------*- C++ -*-===//
//
// rpc-compile writes two files: the plan (PlanExport.h) and the initial values of its params
// as safetensors (runtime/io/Safetensors.h), keyed by the graph.param symbol, which is what
// Plan.params[i].name refers to. Floating-point params are stored as f32 whatever their dtype
// in the model (the runtime keeps fp32 master weights and converts to the compute dtype
// itself); integer and boolean params keep their dtype. The file is a plain safetensors file,
// loadable by `safetensors.torch.load_file`.
//
//===----------------------------------------------------------------------===//

#ifndef RP_COMPILER_WEIGHTSEXPORT_H
#define RP_COMPILER_WEIGHTSEXPORT_H

#include "base/HostTensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>

namespace mlir::rp {
namespace graph {
class ParamOp;
} // namespace graph

/// Reads the initial value of a param (e.g. onnx::InitializerTable::load, which also fills
/// the `init zeros|kaiming_uniform` params of LoRA from base/ParamInit.h); emits an
/// error at the param and fails when it cannot.
using ParamLoader = llvm::function_ref<FailureOr<::rp::base::HostTensor>(graph::ParamOp)>;

/// Writes every graph.param that the layers of the module's one `schedule.plan` name (each
/// once, in plan order: layer by layer, in each layer's `params` order) to the safetensors file
/// `path`, with metadata {"format": "pt", "producer": "rpc-compile"}. Floating-point values
/// (f16, bf16, f32, f64) are written as f32, exactly (f64 rounds to nearest even).
/// The file is written atomically: on failure nothing is left at `path`. The values are read
/// and written one param at a time (peak memory: the largest param, twice), not the file.
///
/// Errors (emitted, then failure): no or several plans; a layer naming a symbol that is not a
/// graph.param; `loadParam` failing; a loaded value whose shape differs from the param's type,
/// or that is floating-point for an integer param or the other way round; the file not being
/// writable (at the plan, with the path).
LogicalResult writeInitialWeights(ModuleOp module, ParamLoader loadParam, const std::string &path);

} // namespace mlir::rp

#endif // RP_COMPILER_WEIGHTSEXPORT_H
