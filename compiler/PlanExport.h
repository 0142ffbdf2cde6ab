//===- PlanExport.h - schedule IR -> rp::plan::Plan -------------*- C++ -*-===//
//
// The last step of rpc-compile: the module after rp-plan-memory (one `schedule.plan`, its layer
// functions in the graph dialect, every offset assigned) becomes the protobuf plan that rp-run
// executes (runtime/plan/plan.proto). Nothing is decided here: every size and offset comes
// from the IR; the exporter only numbers things (params, functions, constants, host buffers,
// stages) and turns graph ops into kernel instructions of the registry (kernels/Registry.h).
//
//   FailureOr<::rp::plan::Plan> plan = exportPlan(module, {"rpc-compile 0.1.0", "model.onnx",
//                                                          "model.safetensors"});
//
// What becomes what:
//   graph.param (per layer that names it)   -> Plan.params (type f32 for floating-point params,
//                                              as the weights file stores them; `init` for LoRA
//                                              adapters; a frozen param named by two layers
//                                              gives two entries with the same name)
//   schedule.layer                          -> Plan.layers
//   func.func named by a layer              -> Plan.functions (first-reference order: layer 0
//                                              forward, layer 0 backward, layer 1 forward, ...)
//   graph op in a function                  -> Instruction {kernel = op name without "graph."}
//   graph.load_param / graph.constant       -> no instruction: PARAM / CONSTANT buffer refs
//   graph.constant (distinct schedule.offset) -> Plan.constants
//   schedule.host_buffer / stage / optimizer_step -> host_buffers / stages / optimizer_steps
//
// Buffer references inside a function: argument i -> {ARG, i}; a value the function returns at
// position j -> {RESULT, j} (the op writes straight into the caller's buffer); any other op
// result -> {WORKSPACE, its `schedule.offsets` entry}. A returned argument, param or constant,
// or a value returned twice, is copied into the extra result with a `copy` instruction.
//
//===----------------------------------------------------------------------===//

#ifndef RP_COMPILER_PLANEXPORT_H
#define RP_COMPILER_PLANEXPORT_H

#include "runtime/plan/plan.pb.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::rp {

/// What the plan says about where it came from (Plan.producer, .model, .weights_file).
struct PlanExportOptions {
  /// "rpc-compile <version>".
  std::string producer = "rpc-compile";
  /// The model file the plan was compiled from: its file name, without the directory
  /// (rpc-compile), so that plans do not embed the paths of the machine that compiled them.
  std::string model;
  /// The safetensors file of initial weights beside the plan: a file name, no directory.
  std::string weightsFile;
};

/// Exports the one `schedule.plan` of `module` and the functions its layers name.
///
/// Expects the IR of rp-plan-memory: the plan's `device_arena` and `host_arena`, every
/// layer's `weight_offsets`/`state_offsets`, host buffer and upload `offset`, call `offsets`,
/// the stage sizes, and in every layer function `schedule.workspace_bytes`, `schedule.offsets`
/// on every op that needs workspace and `schedule.offset` on every constant.
///
/// Errors (emitted at the offending op, then failure): no or several plans; a missing
/// attribute of the memory plan; an op that is not a graph op, or whose kernel id, operand
/// counts or attributes the kernel registry does not accept ("no kernel for 'graph.xxx' in
/// the kernel registry"); an attribute or element type the plan cannot express; a param a
/// function reads that its layer does not list, or reads in a floating-point dtype other than
/// the compute dtype (the weight slot holds that); a function named by two layers; a value of
/// a micro-batch body without an offset; an intermediate outside its function's workspace or
/// a constant outside the constants region; two different constants at one offset.
FailureOr<::rp::plan::Plan> exportPlan(ModuleOp module, const PlanExportOptions &options);

} // namespace mlir::rp

#endif // RP_COMPILER_PLANEXPORT_H
