//===- Driver.h - rpc-compile's driver --------------------------*- C++ -*-===//
//
// What rpc-compile does once its command line is parsed: reads the model, runs the compile
// pipeline up to the level --emit asks for, and writes the result (IR, the stage table, the
// plan as text, or the plan file with its initial weights), never leaving a half-written
// file behind.
//
//===----------------------------------------------------------------------===//

#ifndef RP_COMPILER_DRIVER_H
#define RP_COMPILER_DRIVER_H

#include "compiler/CompileOptions.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::rp {

/// What rpc-compile writes (--emit).
enum class EmitLevel {
  Auto,     ///< Plan when the output ends in .rpplan, else Graph.
  Graph,    ///< The imported graph dialect (func @forward), after freeze/LoRA when given.
  Train,    ///< + the training function @train_step.
  Layers,   ///< The layer functions (@prefix, @block_N, @tail).
  Stages,   ///< The stage partition as a table, with each stage's planned peak device memory.
  Schedule, ///< The planned schedule IR (schedule.plan).
  PlanText, ///< The plan in protobuf text format.
  Report,   ///< The plan report (runtime/plan/PlanReport.h): FLOPs, transfers, device memory.
  ReportJson, ///< The plan report as JSON.
  Plan,     ///< The plan file and the initial weights (.safetensors beside it).
};

/// Everything rpc-compile's command line sets.
struct DriverOptions {
  std::string inputPath;        ///< model.onnx or model.onnxtext
  std::string outputPath = "-"; ///< "-": standard output
  EmitLevel emit = EmitLevel::Auto;
  std::vector<std::string> dims;        ///< NAME=N: symbolic dimension bindings
  std::vector<std::string> inputShapes; ///< NAME=AxB: graph input shapes
  /// Import-time constant folding: results with at most this many elements fold
  /// (onnx::ImportOptions::foldLimit). Tests lower it so that small models keep their
  /// attention masks as runtime ops, as long sequences do.
  int64_t foldLimit = int64_t{1} << 16;
  /// -o: always write the initial weights beside the plan (MODEL.safetensors, f32). Without
  /// it they are written only when some stored param is not ONNX external data; otherwise
  /// the plan lists the external data ranges and rp-run reads them in place.
  bool writeWeights = false;
  CompileOptions compile;
  std::string producer; ///< Plan.producer, e.g. "rpc-compile 0.1.0"
};

/// rpc-compile's exit codes.
constexpr int kExitOk = 0;
constexpr int kExitInternalError = 1;
constexpr int kExitBadInput = 2;

/// Compiles `options.inputPath` as rpc-compile does and returns its exit code: kExitOk, or
/// kExitBadInput for an unreadable or malformed model, an unsupported op, a bad option value,
/// a failing pass or an unwritable output. Errors go to stderr as "rpc-compile: error: ..."
/// or as MLIR diagnostics at the model's location. The plan's `model` field is the model's
/// file name, without its directory. Text outputs and the plan file are written atomically;
/// the weights (when written: DriverOptions::writeWeights) are written before the plan and
/// removed again when the plan cannot be written.
int runCompileDriver(const DriverOptions &options);

} // namespace mlir::rp

#endif // RP_COMPILER_DRIVER_H
