//===- ImportContext.h - state shared by the ONNX op handlers ---*- C++ -*-===//
//
// Internal to frontends/onnx. One NodeContext per imported node gives a handler its operands,
// attributes, known constant values, a builder at the node's location, and error reporting
// that names the node.
//
//===----------------------------------------------------------------------===//

#ifndef RP_FRONTENDS_ONNX_IMPORTCONTEXT_H
#define RP_FRONTENDS_ONNX_IMPORTCONTEXT_H

#include "dialects/Graph/IR/GraphOps.h"
#include "frontends/onnx/OnnxImporter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringMap.h"

#include "onnx/onnx_pb.h"

#include <cstdio>
#include <optional>
#include <string>

namespace mlir::rp::onnx {

/// A number for messages: "%g" ("0", "1e+30", "0.5").
inline std::string formatScalar(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

class NodeContext;
using Handler = LogicalResult (*)(NodeContext &);

/// One handler: ONNX op `opType` as defined since opset `since`.
struct OpEntry {
  const char *opType;
  int since;
  Handler handler;
};

/// Handler tables, one per op family (OpsElementwise.cpp, OpsShape.cpp, OpsNN.cpp,
/// OpsGenerators.cpp, OpsFoldOnly.cpp).
llvm::ArrayRef<OpEntry> elementwiseOps();
llvm::ArrayRef<OpEntry> shapeOps();
llvm::ArrayRef<OpEntry> nnOps();
llvm::ArrayRef<OpEntry> generatorOps();
llvm::ArrayRef<OpEntry> foldOnlyOps();

/// The operands, attributes and results of the node being imported.
class NodeContext {
public:
  NodeContext(OpBuilder &builder, const ::onnx::NodeProto &node, int64_t opset,
              llvm::StringMap<Value> &values, Location loc, std::string name)
      : b(builder), node(node), opset(opset), values(values), loc(loc), name(std::move(name)) {}

  OpBuilder &b;
  const ::onnx::NodeProto &node;
  int64_t opset;
  llvm::StringMap<Value> &values;
  /// ONNX sequence values (SplitToSequence), by name; null when the caller keeps none.
  llvm::StringMap<SmallVector<Value>> *sequences = nullptr;
  Location loc;
  /// The node's name, or `<op_type>_<index>` for unnamed nodes.
  std::string name;

  // ---- errors ----
  /// Emits `error: <message> at node '<name>'` and returns failure.
  LogicalResult fail(const llvm::Twine &message);

  // ---- operands and results ----
  int numInputs() const;
  /// Whether input `i` is present (ONNX marks omitted optional inputs with an empty name).
  bool hasInput(int i) const;
  /// Input `i`; fails (with a message) when it is missing.
  FailureOr<Value> input(int i);
  RankedTensorType inputType(int i);
  int numOutputs() const { return node.output_size(); }
  bool outputUsed(int i) const;
  void setOutput(int i, Value v);
  /// The elements of sequence input `i` (fails with a message when it is not a sequence).
  FailureOr<SmallVector<Value>> sequenceInput(int i);
  /// Defines output `i` as a sequence of tensors.
  void setSequenceOutput(int i, SmallVector<Value> elements);

  // ---- attributes ----
  const ::onnx::AttributeProto *attr(llvm::StringRef name) const;
  int64_t attrInt(llvm::StringRef name, int64_t dflt) const;
  double attrFloat(llvm::StringRef name, double dflt) const;
  std::string attrString(llvm::StringRef name, llvm::StringRef dflt) const;
  std::optional<std::vector<int64_t>> attrInts(llvm::StringRef name) const;

  // ---- known constants ----
  /// The value of `v` if it is a `graph.constant`.
  static std::optional<DenseElementsAttr> constantOf(Value v);
  /// Input `i` as integers; it must be a known constant (`what` names it in the message).
  FailureOr<SmallVector<int64_t>> constInts(int i, llvm::StringRef what);
  /// Input `i` as a float scalar; it must be a known constant.
  FailureOr<double> constScalar(int i, llvm::StringRef what);
  /// Input `i` as an integer scalar constant (constScalar, then an exact integer of magnitude
  /// at most 2^53); fails with a message otherwise.
  FailureOr<int64_t> constInt(int i, llvm::StringRef what);

  // ---- helpers ----
  /// Normalises an ONNX axis in [-rank, rank) to [0, rank).
  FailureOr<int64_t> axis(int64_t value, int64_t rank, llvm::StringRef what = "axis");
  /// A `graph.constant` holding `attr`.
  Value constant(DenseElementsAttr attr);
  /// A 0-D constant of `elementType` with `value`.
  Value scalar(Type elementType, double value);
  /// `graph.reshape` of `v` to `shape` (no op when the shape already matches).
  Value reshape(Value v, llvm::ArrayRef<int64_t> shape);
  /// The MLIR element type of an ONNX data type, or failure with a message.
  FailureOr<Type> elementType(int onnxType);
};

/// The `reduction` attribute of ScatterElements and ScatterND: false for "none", true for
/// "add" (float data only); fails with a message naming the op for the others (mul, max, min)
/// and for add on other data.
FailureOr<bool> scatterAdds(NodeContext &c);

/// Converts a host tensor to an elements attribute of the matching MLIR type.
DenseElementsAttr toAttr(MLIRContext *ctx, const ::rp::base::HostTensor &tensor);

/// `tensor` with float64 elements rounded to float32 (other dtypes unchanged). The graph dialect
/// computes in f32/f16/bf16; exporters emit f64 constants for scalars only (TorchScript's
/// attention scale, cast to float right after), so constants are narrowed once, on import.
::rp::base::HostTensor narrowF64(::rp::base::HostTensor tensor);

} // namespace mlir::rp::onnx

#endif // RP_FRONTENDS_ONNX_IMPORTCONTEXT_H
