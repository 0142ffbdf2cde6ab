//===- Evaluator.h - evaluate graph ops on the CPU reference kernels ---*- C++ -*-===//
//
// Executes `graph` ops on host tensors through kernels/cpu, the numeric reference of the
// project. Used by the ONNX importer (folding shape subgraphs to constants) and by rp-ref
// (running a whole function).
//
// Storage: integer and i1 values are stored as I64/I32/I1 tensors. Floating-point values are
// stored in the evaluation precision (F32, or F64 for the float64 reference) whatever their IR
// type; values of f16/bf16 type are rounded to that type after every op that produces them,
// so results match a computation in that type with f32 (or f64) arithmetic inside each op.
//
//===----------------------------------------------------------------------===//

#ifndef RP_DIALECTS_GRAPH_EVAL_EVALUATOR_H
#define RP_DIALECTS_GRAPH_EVAL_EVALUATOR_H

#include "base/HostTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>

namespace mlir::rp::graph {

class ParamOp;

/// Floating-point precision of an evaluation.
enum class EvalPrecision { F32, F64 };

/// The storage dtype of values of element type `type` under `precision`.
::rp::base::DType storageDType(Type type, EvalPrecision precision);

/// The dtype of element type `type` itself (bf16 -> BF16), as in files.
::rp::base::DType irDType(Type type);

/// Converts an elements attribute to a host tensor in storage form.
::rp::base::HostTensor tensorFromAttr(ElementsAttr attr, EvalPrecision precision);

/// Converts a host tensor in storage form to an attribute of `type` (rounding floats to the
/// element type).
DenseElementsAttr attrFromTensor(const ::rp::base::HostTensor &tensor, RankedTensorType type);

/// Converts a storage-form tensor to the dtype of `type` itself (f32 stays f32, bf16 becomes
/// BF16 bits, f64 storage of an f32 value becomes F32), for writing results out.
::rp::base::HostTensor tensorInIRType(const ::rp::base::HostTensor &tensor,
                                         RankedTensorType type);

/// Converts a tensor of any dtype to the storage form of `type` (e.g. BF16 bits -> F32).
::rp::base::HostTensor tensorToStorage(const ::rp::base::HostTensor &tensor,
                                          RankedTensorType type, EvalPrecision precision);

/// Evaluates one op of the graph dialect (any but graph.param and graph.load_param) on
/// operands in storage form. On failure `error` holds a one-line message.
FailureOr<SmallVector<::rp::base::HostTensor>>
evaluateOp(Operation *op, ArrayRef<const ::rp::base::HostTensor *> operands,
           EvalPrecision precision, std::string &error);

/// Runs `func` (graph ops, func.return) on `args` in storage form. `loadParam` provides each
/// `graph.param`'s value (any dtype; converted to storage form). Errors are emitted at the
/// failing op.
FailureOr<SmallVector<::rp::base::HostTensor>>
runFunction(func::FuncOp func, ArrayRef<::rp::base::HostTensor> args,
            llvm::function_ref<FailureOr<::rp::base::HostTensor>(ParamOp)> loadParam,
            EvalPrecision precision);

} // namespace mlir::rp::graph

#endif // RP_DIALECTS_GRAPH_EVAL_EVALUATOR_H
