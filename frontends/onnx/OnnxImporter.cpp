//===- OnnxImporter.cpp - ONNX ModelProto -> graph dialect ----------------===//
//
// The driver: model checks, graph inputs and initializers, the (op_type, since_version)
// handler table (torch-mlir's DefaultDomain tables are the model), constant folding of what
// the handlers build, and graph outputs. The handlers live in Ops*.cpp.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxImporter.h"

#include "dialects/Graph/Eval/Evaluator.h"
#include "dialects/Graph/IR/GraphDialect.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/ShapeInference.h"
#include "frontends/onnx/ImportContext.h"
#include "frontends/onnx/Initializers.h"
#include "frontends/onnx/TiedWeights.h"
#include "kernels/cpu/Cast.h"
#include "base/ParamInit.h"

#include "onnx/defs/schema.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <cmath>

using ::rp::base::DType;
using ::rp::base::HostTensor;

namespace mlir::rp::onnx {

//===----------------------------------------------------------------------===//
// NodeContext
//===----------------------------------------------------------------------===//

LogicalResult NodeContext::fail(const llvm::Twine &message) {
  return emitError(loc) << message << " at node '" << name << "'";
}

int NodeContext::numInputs() const { return node.input_size(); }

bool NodeContext::hasInput(int i) const { return i < node.input_size() && !node.input(i).empty(); }

FailureOr<Value> NodeContext::input(int i) {
  if (!hasInput(i))
    return fail("missing input " + llvm::Twine(i) + " of '" + node.op_type() + "'");
  auto it = values.find(node.input(i));
  if (it == values.end())
    return fail("input '" + node.input(i) + "' is not defined before its use");
  return it->second;
}

RankedTensorType NodeContext::inputType(int i) {
  auto it = values.find(node.input(i));
  return it == values.end() ? RankedTensorType() : cast<RankedTensorType>(it->second.getType());
}

FailureOr<SmallVector<Value>> NodeContext::sequenceInput(int i) {
  if (!hasInput(i))
    return fail("missing input " + llvm::Twine(i) + " of '" + node.op_type() + "'");
  if (!sequences || !sequences->count(node.input(i)))
    return fail("input '" + node.input(i) + "' is not a sequence defined before its use");
  return sequences->lookup(node.input(i));
}

void NodeContext::setSequenceOutput(int i, SmallVector<Value> elements) {
  if (sequences && i < node.output_size() && !node.output(i).empty())
    (*sequences)[node.output(i)] = std::move(elements);
}

bool NodeContext::outputUsed(int i) const { return i < node.output_size() && !node.output(i).empty(); }

void NodeContext::setOutput(int i, Value v) {
  if (outputUsed(i))
    values[node.output(i)] = v;
}

const ::onnx::AttributeProto *NodeContext::attr(llvm::StringRef name) const {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t NodeContext::attrInt(llvm::StringRef name, int64_t dflt) const {
  const auto *a = attr(name);
  return a ? a->i() : dflt;
}

double NodeContext::attrFloat(llvm::StringRef name, double dflt) const {
  const auto *a = attr(name);
  return a ? static_cast<double>(a->f()) : dflt;
}

std::string NodeContext::attrString(llvm::StringRef name, llvm::StringRef dflt) const {
  const auto *a = attr(name);
  return a ? a->s() : dflt.str();
}

std::optional<std::vector<int64_t>> NodeContext::attrInts(llvm::StringRef name) const {
  const auto *a = attr(name);
  if (!a)
    return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::optional<DenseElementsAttr> NodeContext::constantOf(Value v) {
  DenseElementsAttr attr;
  if (v && matchPattern(v, m_Constant(&attr)))
    return attr;
  return std::nullopt;
}

FailureOr<SmallVector<int64_t>> NodeContext::constInts(int i, llvm::StringRef what) {
  FailureOr<Value> v = input(i);
  if (failed(v))
    return failure();
  std::optional<DenseElementsAttr> c = constantOf(*v);
  if (!c || !isa<IntegerType>(c->getElementType()))
    return fail("'" + node.op_type() + "' needs its " + what +
                " input as a constant known at import time (it is computed at run time)");
  SmallVector<int64_t> out;
  for (const APInt &x : c->getValues<APInt>())
    out.push_back(x.getSExtValue());
  return out;
}

FailureOr<double> NodeContext::constScalar(int i, llvm::StringRef what) {
  FailureOr<Value> v = input(i);
  if (failed(v))
    return failure();
  std::optional<DenseElementsAttr> c = constantOf(*v);
  if (!c || c->getNumElements() != 1)
    return fail("'" + node.op_type() + "' needs its " + what +
                " input as a scalar constant known at import time");
  if (isa<FloatType>(c->getElementType()))
    return (*c->getValues<APFloat>().begin()).convertToDouble();
  if (c->getElementType().isInteger(1))
    return *c->getValues<bool>().begin() ? 1.0 : 0.0;
  return static_cast<double>((*c->getValues<APInt>().begin()).getSExtValue());
}

FailureOr<int64_t> NodeContext::constInt(int i, llvm::StringRef what) {
  FailureOr<double> v = constScalar(i, what);
  if (failed(v))
    return failure();
  // Integers up to 2^53 convert exactly both ways; anything else (a fraction, an infinity,
  // NaN, a huge value) would make the cast to int64 undefined (found by fuzzing).
  constexpr double kExact = 9007199254740992.0; // 2^53
  if (!(std::fabs(*v) <= kExact) || *v != std::trunc(*v))
    return fail("'" + node.op_type() + "' needs its " + what +
                " input as an integer of magnitude at most 2^53, not " + formatScalar(*v));
  return static_cast<int64_t>(*v);
}

FailureOr<int64_t> NodeContext::axis(int64_t value, int64_t rank, llvm::StringRef what) {
  if (value < -rank || value >= rank)
    return fail(what + " " + llvm::Twine(value) + " is out of range for rank " +
                llvm::Twine(rank) + " (expected [" + llvm::Twine(-rank) + ", " +
                llvm::Twine(rank) + "))");
  return value < 0 ? value + rank : value;
}

Value NodeContext::constant(DenseElementsAttr attr) {
  return graph::ConstantOp::create(b, loc, attr.getType(), attr);
}

Value NodeContext::scalar(Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  if (auto ft = dyn_cast<FloatType>(elementType)) {
    APFloat v(value);
    bool lost;
    v.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    return constant(DenseElementsAttr::get(type, v));
  }
  if (elementType.isInteger(1))
    return constant(DenseElementsAttr::get(type, value != 0.0));
  return constant(DenseElementsAttr::get(
      type, APInt(elementType.getIntOrFloatBitWidth(), static_cast<int64_t>(value), true)));
}

Value NodeContext::reshape(Value v, llvm::ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getShape() == shape)
    return v;
  return graph::ReshapeOp::create(b, loc, type.clone(shape), v);
}

FailureOr<Type> NodeContext::elementType(int onnxType) {
  MLIRContext *ctx = b.getContext();
  switch (onnxType) {
  case ::onnx::TensorProto::FLOAT:
    return Type(Float32Type::get(ctx));
  case ::onnx::TensorProto::FLOAT16:
    return Type(Float16Type::get(ctx));
  case ::onnx::TensorProto::BFLOAT16:
    return Type(BFloat16Type::get(ctx));
  case ::onnx::TensorProto::INT64:
    return Type(IntegerType::get(ctx, 64));
  case ::onnx::TensorProto::INT32:
    return Type(IntegerType::get(ctx, 32));
  case ::onnx::TensorProto::BOOL:
    return Type(IntegerType::get(ctx, 1));
  default:
    return fail("unsupported element type '" + onnxTypeName(onnxType) + "'");
  }
}

HostTensor narrowF64(HostTensor tensor) {
  if (tensor.dtype() != DType::F64)
    return tensor;
  HostTensor out(DType::F32, tensor.shape());
  (void)::rp::kernels::cpu::cast(tensor, out); // same shape: cannot fail; rounds to nearest even
  return out;
}

DenseElementsAttr toAttr(MLIRContext *ctx, const HostTensor &tensor) {
  Type element;
  switch (tensor.dtype()) {
  case DType::F32:
    element = Float32Type::get(ctx);
    break;
  case DType::F16:
    element = Float16Type::get(ctx);
    break;
  case DType::BF16:
    element = BFloat16Type::get(ctx);
    break;
  case DType::F64:
    element = Float64Type::get(ctx);
    break;
  case DType::I64:
    element = IntegerType::get(ctx, 64);
    break;
  case DType::I32:
    element = IntegerType::get(ctx, 32);
    break;
  case DType::I1:
    element = IntegerType::get(ctx, 1);
    break;
  case DType::U8:
    element = IntegerType::get(ctx, 8, IntegerType::Unsigned);
    break;
  }
  auto type = RankedTensorType::get(tensor.shape(), element);
  if (tensor.dtype() == DType::I1) {
    SmallVector<bool> bits(tensor.data<uint8_t>(), tensor.data<uint8_t>() + tensor.numElements());
    return DenseElementsAttr::get(type, ArrayRef<bool>(bits));
  }
  return DenseElementsAttr::getFromRawBuffer(
      type, ArrayRef<char>(static_cast<const char *>(tensor.raw()), tensor.byteSize()));
}

//===----------------------------------------------------------------------===//
// The handler table
//===----------------------------------------------------------------------===//

namespace {

/// All handlers keyed by op type, each list sorted by since_version.
const llvm::StringMap<SmallVector<OpEntry>> &opTable() {
  static const llvm::StringMap<SmallVector<OpEntry>> table = [] {
    llvm::StringMap<SmallVector<OpEntry>> t;
    for (auto family : {elementwiseOps(), shapeOps(), nnOps(), generatorOps(), foldOnlyOps()})
      for (const OpEntry &e : family)
        t[e.opType].push_back(e);
    for (auto &kv : t)
      llvm::sort(kv.second, [](const OpEntry &a, const OpEntry &b) { return a.since < b.since; });
    return t;
  }();
  return table;
}

/// The handler of `opType` for `opset`: the entry with the largest since_version <= opset.
Handler lookup(llvm::StringRef opType, int64_t opset) {
  auto it = opTable().find(opType);
  if (it == opTable().end())
    return nullptr;
  Handler h = nullptr;
  for (const OpEntry &e : it->second)
    if (e.since <= opset)
      h = e.handler;
  return h;
}

/// ONNX's type constraints that our op builders rely on: inputs bound to the same type
/// parameter of the op's schema (e.g. both "T" of MatMul, every input of a variadic Concat)
/// must have the same element type. The graph ops infer their result types from their
/// operands and cannot build mixed ones, so the importer refuses them with a message first
/// (found by fuzzing: test/fuzz-corpus/onnx/). Optional inputs that are absent are skipped.
LogicalResult checkTypeConstraints(const ::onnx::NodeProto &node, int64_t opset,
                                   const llvm::StringMap<Value> &values, Location loc,
                                   llvm::StringRef nodeName) {
  const ::onnx::OpSchema *schema = ::onnx::OpSchemaRegistry::Schema(
      node.op_type(), static_cast<int>(opset), ::onnx::ONNX_DOMAIN);
  if (!schema)
    return success();
  const auto &formals = schema->inputs();
  llvm::StringMap<std::pair<int, Type>> bound; // type parameter -> (first input, element type)
  for (int i = 0; i < node.input_size(); ++i) {
    if (formals.empty())
      break;
    const ::onnx::OpSchema::FormalParameter &formal =
        formals[std::min<size_t>(static_cast<size_t>(i), formals.size() - 1)];
    if (static_cast<size_t>(i) >= formals.size() &&
        (formal.GetOption() != ::onnx::OpSchema::Variadic || !formal.GetIsHomogeneous()))
      break;
    auto it = values.find(node.input(i));
    if (node.input(i).empty() || it == values.end())
      continue;
    auto type = dyn_cast<RankedTensorType>(it->second.getType());
    if (!type)
      continue;
    auto [entry, inserted] =
        bound.try_emplace(formal.GetTypeStr(), std::make_pair(i, type.getElementType()));
    if (!inserted && entry->second.second != type.getElementType())
      return emitError(loc) << "inputs " << entry->second.first << " and " << i << " of '"
                            << node.op_type() << "' at node '" << nodeName
                            << "' must have the same element type (" << formal.GetTypeStr()
                            << "), not " << entry->second.second << " and "
                            << type.getElementType();
  }
  return success();
}

} // namespace

std::vector<std::pair<std::string, int>> supportedOps() {
  std::vector<std::pair<std::string, int>> out;
  for (const auto &kv : opTable())
    for (const OpEntry &e : kv.second)
      out.emplace_back(e.opType, e.since);
  std::sort(out.begin(), out.end());
  return out;
}

bool isSupportedOp(llvm::StringRef opType) { return opTable().count(opType) != 0; }

void registerImporterDialects(MLIRContext &context) {
  context.loadDialect<graph::GraphDialect, func::FuncDialect>();
}

//===----------------------------------------------------------------------===//
// The importer
//===----------------------------------------------------------------------===//

namespace {

class Importer {
public:
  Importer(MLIRContext &ctx, const OnnxModel &model, const ImportOptions &options)
      : ctx(ctx), model(model), options(options), builder(&ctx),
        fileLoc(FileLineColLoc::get(&ctx, model.path, 0, 0)) {}

  OwningOpRef<ModuleOp> run();

private:
  LogicalResult checkOpsets();
  FailureOr<RankedTensorType> valueType(const ::onnx::ValueInfoProto &info);
  LogicalResult importInitializers(ModuleOp module);
  void foldConstants(ArrayRef<Operation *> created, const ::onnx::NodeProto &node);
  static std::string nodeName(const ::onnx::NodeProto &node, size_t index) {
    return node.name().empty() ? node.op_type() + "_" + std::to_string(index) : node.name();
  }
  Location nodeLoc(const ::onnx::NodeProto &node, size_t index) {
    return NameLoc::get(StringAttr::get(&ctx, nodeName(node, index)), fileLoc);
  }

  MLIRContext &ctx;
  const OnnxModel &model;
  const ImportOptions &options;
  OpBuilder builder;
  Location fileLoc;
  int64_t opset = 0;
  llvm::StringMap<Value> values;
  llvm::StringMap<SmallVector<Value>> sequences;
  /// Initializers by name (the graph inputs they shadow are not function arguments).
  llvm::StringMap<const ::onnx::TensorProto *> initializers;
  /// Initializers imported as constants (integer tensors, float scalars).
  llvm::StringMap<DenseElementsAttr> constantInits;
};

LogicalResult Importer::checkOpsets() {
  for (const auto &imp : model.proto->opset_import()) {
    if (imp.domain().empty() || imp.domain() == "ai.onnx")
      opset = imp.version();
  }
  if (opset == 0)
    return emitError(fileLoc) << "the model imports no opset of the default ONNX domain";
  if (opset < kMinOpset || opset > kMaxOpset)
    return emitError(fileLoc) << "unsupported ONNX opset " << opset << " (supported: "
                              << kMinOpset << " to " << kMaxOpset
                              << "); re-export with opset_version in that range";
  return success();
}

FailureOr<RankedTensorType> Importer::valueType(const ::onnx::ValueInfoProto &info) {
  const std::string &name = info.name();
  if (!info.type().has_tensor_type())
    return emitError(fileLoc) << "graph value '" << name << "' is not a tensor";
  const auto &tt = info.type().tensor_type();
  NodeContext types(builder, ::onnx::NodeProto::default_instance(), opset, values, fileLoc, "");
  FailureOr<Type> element = types.elementType(tt.elem_type());
  if (failed(element))
    return emitError(fileLoc) << "graph value '" << name << "' has an unsupported element type";
  SmallVector<int64_t> shape;
  auto given = options.inputShapes.find(name);
  if (given != options.inputShapes.end()) {
    shape.assign(given->second.begin(), given->second.end());
    if (tt.has_shape() && tt.shape().dim_size() != static_cast<int>(shape.size()))
      return emitError(fileLoc) << "--input-shape " << name << " has rank " << shape.size()
                                << ", the model declares rank " << tt.shape().dim_size();
    if (!graph::isSupportedShape(shape))
      return emitError(fileLoc) << "--input-shape " << name << " has more than 2^48 elements";
    return RankedTensorType::get(shape, *element);
  }
  if (!tt.has_shape())
    return emitError(fileLoc) << "graph value '" << name
                              << "' has no shape: pass --input-shape " << name << "=AxBx...";
  for (const auto &dim : tt.shape().dim()) {
    if (dim.has_dim_value() && dim.dim_value() >= 0) {
      shape.push_back(dim.dim_value());
      continue;
    }
    if (dim.has_dim_param()) {
      auto bound = options.dims.find(dim.dim_param());
      if (bound == options.dims.end())
        return emitError(fileLoc)
               << "unbound symbolic dimension '" << dim.dim_param() << "' of '" << name
               << "': pass --dim " << dim.dim_param() << "=N";
      shape.push_back(bound->second);
      continue;
    }
    return emitError(fileLoc) << "graph value '" << name << "' has an unknown dimension: pass "
                              << "--input-shape " << name << "=AxBx...";
  }
  if (!graph::isSupportedShape(shape))
    return emitError(fileLoc) << "graph value '" << name << "' has more than 2^48 elements";
  return RankedTensorType::get(shape, *element);
}

LogicalResult Importer::importInitializers(ModuleOp module) {
  OpBuilder::InsertionGuard guard(builder);
  // Which initializers are trainable params, which constants (Initializers.h): every
  // parameter of the exported module whatever its size; buffers and lifted constants fold.
  const llvm::StringSet<> params = parameterInitializers(*model.proto);
  // A tied embedding is named as Hugging Face checkpoints store it (TiedWeights.h).
  llvm::StringMap<std::string> tied = tiedEmbeddingNames(model.proto->graph());
  for (const auto &init : model.proto->graph().initializer()) {
    initializers[init.name()] = &init;
    NodeContext types(builder, ::onnx::NodeProto::default_instance(), opset, values, fileLoc, "");
    SmallVector<int64_t> shape(init.dims().begin(), init.dims().end());
    if (llvm::any_of(shape, [](int64_t d) { return d < 0; }))
      return emitError(fileLoc) << "initializer '" << init.name() << "' has a negative dimension";
    if (params.contains(init.name())) {
      FailureOr<Type> element = types.elementType(init.data_type());
      if (failed(element))
        return failure();
      if (llvm::Error e = checkExternalData(init, model.directory))
        return emitError(fileLoc) << llvm::toString(std::move(e));
      builder.setInsertionPointToEnd(module.getBody());
      auto type = RankedTensorType::get(shape, *element);
      auto renamed = tied.find(init.name());
      graph::ParamOp::create(builder, fileLoc,
                             renamed == tied.end() ? init.name() : renamed->second, type,
                             /*trainable=*/true, builder.getStringAttr(init.name()),
                             graph::ParamInitAttr(), /*quant=*/nullptr,
                             /*stored_type=*/nullptr, /*quant_axis=*/nullptr);
      continue;
    }
    llvm::Expected<HostTensor> tensor = readTensor(init, model.directory);
    if (!tensor)
      return emitError(fileLoc) << llvm::toString(tensor.takeError());
    constantInits[init.name()] = toAttr(&ctx, narrowF64(std::move(*tensor)));
  }
  return success();
}

void Importer::foldConstants(ArrayRef<Operation *> created, const ::onnx::NodeProto &node) {
  OpBuilder::InsertionGuard guard(builder);
  llvm::DenseMap<Value, Value> replaced;
  llvm::SmallPtrSet<Operation *, 8> folded;
  for (Operation *op : created) {
    if (isa<graph::ConstantOp, graph::LoadParamOp>(op) || op->getNumResults() == 0)
      continue;
    if (!llvm::all_of(op->getOperands(),
                      [](Value v) { return NodeContext::constantOf(v).has_value(); }))
      continue;
    int64_t total = 0;
    for (Type t : op->getResultTypes())
      total += cast<RankedTensorType>(t).getNumElements();
    if (total > options.foldLimit)
      continue;
    SmallVector<HostTensor> operands;
    for (Value v : op->getOperands())
      operands.push_back(graph::tensorFromAttr(*NodeContext::constantOf(v),
                                               graph::EvalPrecision::F32));
    SmallVector<const HostTensor *> ptrs;
    for (const HostTensor &t : operands)
      ptrs.push_back(&t);
    std::string error;
    auto results = graph::evaluateOp(op, ptrs, graph::EvalPrecision::F32, error);
    if (failed(results))
      continue; // left for run time (and rp-ref reports the error there)
    builder.setInsertionPoint(op);
    for (auto [result, tensor] : llvm::zip(op->getResults(), *results)) {
      auto type = cast<RankedTensorType>(result.getType());
      Value c = graph::ConstantOp::create(builder, op->getLoc(), type,
                                          graph::attrFromTensor(tensor, type));
      result.replaceAllUsesWith(c);
      replaced[result] = c;
    }
    folded.insert(op);
  }
  for (const std::string &name : node.output()) {
    auto it = values.find(name);
    if (it != values.end())
      if (Value v = replaced.lookup(it->second))
        it->second = v;
  }
  // Erase the folded ops, last first (an earlier folded op may feed a later one).
  for (Operation *op : llvm::reverse(created))
    if (folded.contains(op))
      op->erase();
}

/// Records the ops a handler creates.
struct CreatedOps : public OpBuilder::Listener {
  SmallVector<Operation *> ops;
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    ops.push_back(op);
  }
};

OwningOpRef<ModuleOp> Importer::run() {
  if (failed(checkOpsets()))
    return nullptr;
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  const ::onnx::GraphProto &g = model.proto->graph();
  if (failed(importInitializers(*module)))
    return nullptr;

  // Function arguments: graph inputs that are not initializers and not bound as constants.
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  for (const auto &in : g.input()) {
    if (initializers.count(in.name()))
      continue;
    FailureOr<RankedTensorType> type = valueType(in);
    if (failed(type))
      return nullptr;
    if (options.constantInputs.count(in.name()))
      continue;
    argTypes.push_back(*type);
    argNames.push_back(in.name());
  }
  builder.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(builder, fileLoc, options.functionName,
                                   builder.getFunctionType(argTypes, {}));
  Block *body = func.addEntryBlock();
  for (auto [i, name] : llvm::enumerate(argNames)) {
    values[name] = body->getArgument(i);
    func.setArgAttr(i, "graph.name", builder.getStringAttr(name));
  }
  builder.setInsertionPointToStart(body);
  for (const auto &[name, tensor] : options.constantInputs)
    values[name] = graph::ConstantOp::create(builder, fileLoc, toAttr(&ctx, tensor).getType(),
                                             toAttr(&ctx, tensor));
  for (auto &kv : constantInits)
    values[kv.getKey()] =
        graph::ConstantOp::create(builder, fileLoc, kv.getValue().getType(), kv.getValue());
  for (auto param : module->getOps<graph::ParamOp>())
    values[param.getInitializer().value_or(param.getSymName())] = graph::LoadParamOp::create(
        builder, fileLoc, param.getType(), FlatSymbolRefAttr::get(param.getSymNameAttr()));

  for (auto [index, node] : llvm::enumerate(g.node())) {
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      emitError(nodeLoc(node, index))
          << "unsupported ONNX op '" << node.op_type() << "' of domain '" << node.domain()
          << "' at node '" << nodeName(node, index) << "'";
      return nullptr;
    }
    Handler handler = lookup(node.op_type(), opset);
    Location loc = nodeLoc(node, index);
    if (!handler) {
      emitError(loc) << "unsupported ONNX op '" << node.op_type() << "' (opset " << opset
                     << ") at node '" << nodeName(node, index) << "'";
      return nullptr;
    }
    if (failed(checkTypeConstraints(node, opset, values, loc, nodeName(node, index))))
      return nullptr;
    CreatedOps created;
    builder.setListener(&created);
    NodeContext nc(builder, node, opset, values, loc, nodeName(node, index));
    nc.sequences = &sequences;
    LogicalResult ok = handler(nc);
    builder.setListener(nullptr);
    if (failed(ok))
      return nullptr;
    for (int i = 0; i < node.output_size(); ++i)
      if (!node.output(i).empty() && !values.count(node.output(i)) &&
          !sequences.count(node.output(i))) {
        emitError(loc) << "output " << i << " of '" << node.op_type()
                       << "' is not supported at node '" << nodeName(node, index) << "'";
        return nullptr;
      }
    // Every value the importer creates has a supported shape, so later size arithmetic
    // (here, in the passes and in the plan) cannot overflow.
    for (int i = 0; i < node.output_size(); ++i) {
      auto it = values.find(node.output(i));
      if (it == values.end())
        continue;
      auto type = dyn_cast<RankedTensorType>(it->second.getType());
      if (type && !graph::isSupportedShape(type.getShape())) {
        emitError(loc) << "output " << i << " of '" << node.op_type() << "' at node '"
                       << nodeName(node, index) << "' has shape " << type
                       << ", more than 2^48 elements";
        return nullptr;
      }
    }
    foldConstants(created.ops, node);
  }

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const auto &out : g.output()) {
    auto it = values.find(out.name());
    if (it == values.end()) {
      emitError(fileLoc) << "graph output '" << out.name() << "' is never computed";
      return nullptr;
    }
    results.push_back(it->second);
    resultTypes.push_back(it->second.getType());
  }
  func::ReturnOp::create(builder, fileLoc, results);
  func.setType(builder.getFunctionType(argTypes, resultTypes));
  for (auto [i, out] : llvm::enumerate(g.output()))
    func.setResultAttr(i, "graph.name", builder.getStringAttr(out.name()));
  // Drop constants and param loads nothing uses.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*body)))
    if (isa<graph::ConstantOp, graph::LoadParamOp>(op) && op.use_empty())
      op.erase();
  if (failed(mlir::verify(*module)))
    return nullptr;
  return module;
}

} // namespace

OwningOpRef<ModuleOp> importOnnxModel(MLIRContext &context, const OnnxModel &model,
                                      const ImportOptions &options) {
  registerImporterDialects(context);
  Importer importer(context, model, options);
  return importer.run();
}

} // namespace mlir::rp::onnx

namespace mlir::rp::onnx {

InitializerTable::InitializerTable(const OnnxModel &model) : model(model) {
  for (const auto &init : model.proto->graph().initializer())
    byName[init.name()] = &init;
}

FailureOr<HostTensor> InitializerTable::load(graph::ParamOp param) const {
  if (auto init = param.getInit()) {
    // Params without stored values (LoRA adapters) start as their `init` says.
    RankedTensorType type = param.getTensorType();
    HostTensor t(graph::irDType(type.getElementType()),
                 std::vector<int64_t>(type.getShape().begin(), type.getShape().end()));
    ::rp::base::Status s = ::rp::base::initParam(
        *init == graph::ParamInit::zeros ? ::rp::base::ParamInit::Zeros
                                         : ::rp::base::ParamInit::KaimingUniform,
        param.getSymName().str(), t);
    if (!s.ok())
      return param.emitError() << s.message();
    return t;
  }
  llvm::StringRef key = param.getInitializer().value_or(param.getSymName());
  auto it = byName.find(key);
  if (it == byName.end())
    return param.emitError() << "no initializer '" << key << "' in " << model.path;
  llvm::Expected<HostTensor> t = readTensor(*it->second, model.directory);
  if (!t)
    return param.emitError() << llvm::toString(t.takeError());
  return std::move(*t);
}

FailureOr<std::optional<InitializerTable::External>>
InitializerTable::external(graph::ParamOp param) const {
  if (param.getInit())
    return std::optional<External>();
  auto it = byName.find(param.getInitializer().value_or(param.getSymName()));
  if (it == byName.end())
    return std::optional<External>();
  llvm::Expected<std::optional<ExternalRange>> range =
      externalDataRange(*it->second, model.directory);
  if (!range)
    return param.emitError() << llvm::toString(range.takeError());
  if (!*range)
    return std::optional<External>();
  llvm::Expected<::rp::base::DType> dtype = dtypeFromOnnx(it->second->data_type());
  if (!dtype)
    return param.emitError() << llvm::toString(dtype.takeError());
  return std::optional<External>(External{std::move(**range), *dtype});
}

llvm::Error parseDimBinding(llvm::StringRef text, ImportOptions &options) {
  auto [name, value] = text.split('=');
  int64_t n;
  if (name.empty() || value.empty() || value.getAsInteger(10, n) || n < 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "invalid dimension binding '" + text.str() +
                                       "': expected NAME=N with N >= 0 (e.g. batch=4)");
  options.dims[name.str()] = n;
  return llvm::Error::success();
}

llvm::Error parseInputShape(llvm::StringRef text, ImportOptions &options) {
  auto [name, dims] = text.split('=');
  std::vector<int64_t> shape;
  bool ok = !name.empty() && text.contains('=');
  if (ok && !dims.empty()) {
    SmallVector<llvm::StringRef> parts;
    dims.split(parts, 'x');
    for (llvm::StringRef p : parts) {
      int64_t n;
      if (p.getAsInteger(10, n) || n < 0) {
        ok = false;
        break;
      }
      shape.push_back(n);
    }
  }
  if (!ok)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "invalid input shape '" + text.str() +
                                       "': expected NAME=AxBx... (e.g. input_ids=4x128)");
  options.inputShapes[name.str()] = shape;
  return llvm::Error::success();
}

} // namespace mlir::rp::onnx
