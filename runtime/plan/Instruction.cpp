//===- Instruction.cpp - Typed reads of a plan instruction ----------------===//

#include "runtime/plan/Instruction.h"

#include "runtime/plan/PlanValidator.h"

#include <limits>

namespace rp::runtime {

namespace pb = rp::plan;

kernels::Shape shapeOf(const pb::TensorType &type) {
  return kernels::Shape(type.shape().begin(), type.shape().end());
}

std::optional<DType> dtypeOf(const pb::TensorType &type) { return fromPlanDType(type.dtype()); }

double elementCount(const pb::TensorType &type) {
  double n = 1;
  for (int64_t d : type.shape())
    n *= static_cast<double>(d);
  return n;
}

int64_t byteCount(const pb::TensorType &type) {
  const std::optional<DType> dtype = dtypeOf(type);
  int64_t n = dtype ? static_cast<int64_t>(dtypeSize(*dtype)) : 0;
  for (int64_t d : type.shape())
    if (__builtin_mul_overflow(n, d, &n))
      return std::numeric_limits<int64_t>::max();
  return n;
}

std::string typeText(const pb::TensorType &type) {
  const std::optional<DType> dtype = dtypeOf(type);
  std::string s = dtype ? dtypeName(*dtype) : "?";
  s += "[";
  for (int i = 0; i < type.shape_size(); ++i)
    s += (i ? "," : "") + std::to_string(type.shape(i));
  return s + "]";
}

namespace {

using BufferRefs = google::protobuf::RepeatedPtrField<pb::BufferRef>;

std::vector<kernels::Shape> shapesOf(const BufferRefs &refs) {
  std::vector<kernels::Shape> shapes;
  shapes.reserve(static_cast<size_t>(refs.size()));
  for (const pb::BufferRef &r : refs)
    shapes.push_back(shapeOf(r.type()));
  return shapes;
}

/// Attribute `name` of `ins` when it holds `kind`, else null.
const pb::Attribute *attrOfKind(const pb::Instruction &ins, std::string_view name,
                                pb::Attribute::ValueCase kind) {
  const pb::Attribute *a = findAttr(ins, name);
  return a && a->value_case() == kind ? a : nullptr;
}

} // namespace

std::vector<kernels::Shape> operandShapes(const pb::Instruction &ins) {
  return shapesOf(ins.operands());
}

std::vector<kernels::Shape> resultShapes(const pb::Instruction &ins) {
  return shapesOf(ins.results());
}

const pb::Attribute *findAttr(const pb::Instruction &ins, std::string_view name) {
  auto it = ins.attrs().find(std::string(name));
  return it == ins.attrs().end() ? nullptr : &it->second;
}

bool boolAttr(const pb::Instruction &ins, std::string_view name) {
  const pb::Attribute *a = attrOfKind(ins, name, pb::Attribute::kB);
  return a && a->b();
}

int64_t intAttr(const pb::Instruction &ins, std::string_view name, int64_t fallback) {
  const pb::Attribute *a = attrOfKind(ins, name, pb::Attribute::kI);
  return a ? a->i() : fallback;
}

double floatAttr(const pb::Instruction &ins, std::string_view name, double fallback) {
  const pb::Attribute *a = attrOfKind(ins, name, pb::Attribute::kF);
  return a ? a->f() : fallback;
}

std::string stringAttr(const pb::Instruction &ins, std::string_view name,
                       std::string_view fallback) {
  const pb::Attribute *a = attrOfKind(ins, name, pb::Attribute::kS);
  return a ? a->s() : std::string(fallback);
}

std::vector<int64_t> intsAttr(const pb::Instruction &ins, std::string_view name) {
  const pb::Attribute *a = attrOfKind(ins, name, pb::Attribute::kInts);
  if (!a)
    return {};
  return std::vector<int64_t>(a->ints().values().begin(), a->ints().values().end());
}

double FlopQuery::flops() const {
  return kernels::kernelFlops(kernel, operands, results, causal, transposeA, window);
}

FlopQuery flopQuery(const pb::Instruction &ins) {
  FlopQuery q;
  q.kernel = ins.kernel();
  q.operands = operandShapes(ins);
  q.results = resultShapes(ins);
  q.causal = boolAttr(ins, "causal");
  q.transposeA = boolAttr(ins, "transpose_a");
  q.window = intAttr(ins, "window", 0);
  return q;
}

double instructionFlops(const pb::Instruction &ins) { return flopQuery(ins).flops(); }

} // namespace rp::runtime
