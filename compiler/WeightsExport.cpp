//===- WeightsExport.cpp - The initial weights beside a plan --------------===//

#include "compiler/WeightsExport.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Schedule/IR/ScheduleOps.h"
#include "base/DType.h"
#include "base/Float16.h"
#include "runtime/io/Safetensors.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"

#include <map>
#include <vector>

namespace mlir::rp {
namespace {

using ::rp::base::DType;
using ::rp::base::HostTensor;

/// `tensor` as f32 when it is floating-point (exact for f16 and bf16, f64 rounded to nearest);
/// integer and boolean tensors are returned as they are.
HostTensor toStorage(HostTensor tensor) {
  if (!::rp::base::isFloat(tensor.dtype()) || tensor.dtype() == DType::F32)
    return tensor;
  HostTensor f32(DType::F32, tensor.shape());
  float *dst = f32.data<float>();
  int64_t n = tensor.numElements();
  switch (tensor.dtype()) {
  case DType::F16: {
    const uint16_t *src = tensor.data<uint16_t>();
    for (int64_t i = 0; i < n; ++i)
      dst[i] = ::rp::base::halfToFloat(src[i]);
    break;
  }
  case DType::BF16: {
    const uint16_t *src = tensor.data<uint16_t>();
    for (int64_t i = 0; i < n; ++i)
      dst[i] = ::rp::base::bf16ToFloat(src[i]);
    break;
  }
  case DType::F64: {
    const double *src = tensor.data<double>();
    for (int64_t i = 0; i < n; ++i)
      dst[i] = static_cast<float>(src[i]);
    break;
  }
  default:
    break;
  }
  return f32;
}

/// The stored dtype of a param of element type `element`: f32 for every float type, else the
/// integer's own (i64, i32, i1).
DType storedDType(Type element) {
  if (isa<FloatType>(element))
    return DType::F32;
  if (element.isInteger(1))
    return DType::I1;
  return element.isInteger(32) ? DType::I32 : DType::I64;
}

} // namespace

LogicalResult writeInitialWeights(ModuleOp module, ParamLoader loadParam,
                                  const std::string &path) {
  SmallVector<schedule::PlanOp> plans(module.getOps<schedule::PlanOp>());
  if (plans.size() != 1)
    return module.emitError() << "expected one schedule.plan in the module, found "
                              << plans.size();
  schedule::PlanOp plan = plans.front();
  SymbolTable symbols(module);

  // Every param once, in plan order (a frozen param named by two layers is written once):
  // the header first, from the params' types; then the values, one tensor at a time.
  llvm::StringSet<> seen;
  SmallVector<graph::ParamOp> params;
  std::vector<::rp::runtime::SafetensorsTensor> tensors;
  for (schedule::LayerOp layer : plan.getLayers()) {
    for (auto ref : layer.getParams().getAsRange<FlatSymbolRefAttr>()) {
      if (!seen.insert(ref.getValue()).second)
        continue;
      auto param = symbols.lookup<graph::ParamOp>(ref.getValue());
      if (!param)
        return layer.emitError() << "layer @" << layer.getSymName() << " names @"
                                 << ref.getValue() << ", which is not a graph.param of the module";
      RankedTensorType type = param.getStoredTensorType();
      DType dtype = storedDType(type.getElementType());
      std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
      params.push_back(param);
      tensors.push_back({param.getSymName().str(), ::rp::runtime::fromRuntimeDType(dtype), shape,
                         nullptr,
                         static_cast<size_t>(type.getNumElements()) *
                             ::rp::base::dtypeSize(dtype)});
    }
  }

  bool reported = false; // a param's error is emitted at the param
  auto fill = [&](size_t i, const std::function<::rp::base::Status(const void *, size_t)>
                                &append) -> ::rp::base::Status {
    graph::ParamOp param = params[i];
    FailureOr<HostTensor> value = loadParam(param);
    if (failed(value)) {
      reported = true;
      return ::rp::base::invalidArgument("cannot load @" + param.getSymName().str());
    }
    RankedTensorType type = param.getStoredTensorType();
    bool floatParam = isa<FloatType>(type.getElementType());
    if (value->shape() != tensors[i].shape || floatParam != ::rp::base::isFloat(value->dtype())) {
      param.emitError() << "the initial value of @" << param.getSymName() << " is "
                        << value->typeString() << "; expected the param's type " << type;
      reported = true;
      return ::rp::base::invalidArgument("wrong type");
    }
    HostTensor stored = toStorage(std::move(*value));
    if (::rp::runtime::fromRuntimeDType(stored.dtype()) != tensors[i].dtype) {
      param.emitError() << "the initial value of @" << param.getSymName() << " is "
                        << stored.typeString() << "; expected the param's type " << type;
      reported = true;
      return ::rp::base::invalidArgument("wrong type");
    }
    return append(stored.raw(), stored.byteSize());
  };
  const std::map<std::string, std::string> metadata = {{"format", "pt"},
                                                       {"producer", "rpc-compile"}};
  ::rp::base::Status status =
      ::rp::runtime::writeSafetensorsStreamed(path, tensors, metadata, fill);
  if (reported)
    return failure();
  if (!status.ok())
    return plan.emitError() << "cannot write the initial weights to '" << path
                            << "': " << status.message();
  return success();
}

} // namespace mlir::rp
