//===- Base.td - graph dialect type constraints and op base ----*- tablegen -*-===//

#ifndef RP_GRAPH_BASE_TD
#define RP_GRAPH_BASE_TD

include "dialects/Graph/IR/Dialect.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/CommonAttrConstraints.td"

// Every graph value is a ranked tensor with a static shape.
def Graph_Tensor : StaticShapeTensorOf<[F32, F16, BF16, I64, I32, I1]>;
def Graph_FloatTensor : StaticShapeTensorOf<[F32, F16, BF16]>;
def Graph_NumericTensor : StaticShapeTensorOf<[F32, F16, BF16, I64, I32]>;
def Graph_IndexTensor : StaticShapeTensorOf<[I64, I32]>;
def Graph_BoolTensor : StaticShapeTensorOf<[I1]>;
// The storage of a quantized frozen weight (graph.param ... quant, graph.dequantize).
def Graph_QuantStorageTensor : 1DTensorOf<[UI8]>;
// What a param may hold: any graph value type, or quantized storage.
def Graph_ParamTensor : StaticShapeTensorOf<[F32, F16, BF16, I64, I32, I1, UI8]>;

// A non-negative axis (the importer normalises negative ONNX axes).
def Graph_AxisAttr : ConfinedAttr<I64Attr, [IntNonNegative]>;

class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, traits>;

#endif // RP_GRAPH_BASE_TD
