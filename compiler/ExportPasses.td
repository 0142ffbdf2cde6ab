//===- ExportPasses.td - plan export ----------------------*- tablegen -*-===//
//
// The compiler's own passes: they call the plan exporter (compiler/PlanExport.h), which the
// passes of passes/ do not link. Generated into compiler/ExportPasses.h.inc, registered by
// compiler/InitAll.
//
//===----------------------------------------------------------------------===//

#ifndef RP_COMPILER_EXPORTPASSES_TD
#define RP_COMPILER_EXPORTPASSES_TD

include "mlir/Pass/PassBase.td"

def ExportPlan : Pass<"rp-export-plan", "::mlir::ModuleOp"> {
  let summary = "Writes the plan of a memory-planned module (rp::plan::Plan protobuf)";
  let description = [{
    Runs the plan exporter (compiler/PlanExport.h) on the module's one `schedule.plan` after
    `rp-plan-memory` and writes the result to `output`: the `.rpplan` file (the envelope of
    runtime/plan/PlanFile.h, written atomically), or with `text` the protobuf text format
    (`-` for stdout). The module is not changed. It is what `rpc-compile --emit=plan-text`
    prints, for lit tests and for inspection.

    Input (abridged):
    ```mlir
    graph.param @w trainable : tensor<4x4xf32>
    func.func @block_0(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {schedule.workspace_bytes = 0 : i64} {
      %w = graph.load_param @w : tensor<4x4xf32>
      %y = graph.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      return %y : tensor<2x4xf32>
    }
    schedule.plan @train ... attributes {device_arena = ..., host_arena = ...} { ... }
    ```
    Output (`--rp-export-plan="output=- text=true"`, abridged):
    ```
    functions {
      name: "block_0"
      body {
        kernel: "matmul"
        operands { space: ARG type { dtype: F32 shape: 2 shape: 4 } }
        operands { space: PARAM index: 0 type { dtype: F32 shape: 4 shape: 4 } }
        results { space: RESULT type { dtype: F32 shape: 2 shape: 4 } }
      }
    }
    ```
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the plan (\"-\": stdout, text only)">,
    Option<"text", "text", "bool", /*default=*/"false",
           "Write the protobuf text format instead of the binary .rpplan file">,
    Option<"producer", "producer", "std::string", /*default=*/"\"rpc-compile\"",
           "Plan.producer">,
    Option<"model", "model", "std::string", /*default=*/"\"\"",
           "Plan.model: the model file the plan was compiled from">,
    Option<"weightsFile", "weights-file", "std::string", /*default=*/"\"\"",
           "Plan.weights_file: the safetensors file beside the plan">,
  ];
}

#endif // RP_COMPILER_EXPORTPASSES_TD
