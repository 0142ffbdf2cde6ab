//===- InstructionRules.cpp - A plan instruction against the kernel registry ===//

#include "runtime/plan/InstructionRules.h"

#include "runtime/plan/Instruction.h"

#include <algorithm>
#include <vector>

namespace rp::runtime {

namespace pb = rp::plan;
using kernels::AttrKind;
using kernels::AttrSpec;

const char *attrValueName(pb::Attribute::ValueCase value, ValueWording wording) {
  const bool article = wording == ValueWording::Article;
  switch (value) {
  case pb::Attribute::kI:
    return article ? "an int" : "int";
  case pb::Attribute::kF:
    return article ? "a float" : "float";
  case pb::Attribute::kS:
    return article ? "a string" : "string";
  case pb::Attribute::kInts:
    return "ints";
  case pb::Attribute::kB:
    return article ? "a bool" : "bool";
  case pb::Attribute::VALUE_NOT_SET:
    break;
  }
  return "no value";
}

bool attrKindMatches(AttrKind kind, pb::Attribute::ValueCase value) {
  switch (kind) {
  case AttrKind::Int:
    return value == pb::Attribute::kI;
  case AttrKind::Float:
    return value == pb::Attribute::kF;
  case AttrKind::String:
    return value == pb::Attribute::kS;
  case AttrKind::Ints:
    return value == pb::Attribute::kInts;
  case AttrKind::Bool:
    return value == pb::Attribute::kB;
  case AttrKind::IntOrFloat:
    return value == pb::Attribute::kI || value == pb::Attribute::kF;
  }
  return false;
}

std::optional<std::string> attributeProblem(const kernels::KernelInfo &info,
                                            const pb::Instruction &ins, ValueWording wording) {
  for (const AttrSpec &spec : info.attrs) {
    const pb::Attribute *attr = findAttr(ins, spec.name);
    if (!attr) {
      if (spec.required)
        return "missing required attribute '" + std::string(spec.name) + "' (" +
               kernels::attrKindName(spec.kind) + ")";
      continue;
    }
    if (!attrKindMatches(spec.kind, attr->value_case()))
      return "attribute '" + std::string(spec.name) + "' holds " +
             attrValueName(attr->value_case(), wording) + ", expected " +
             kernels::attrKindName(spec.kind);
  }
  // Sorted, so that the first unknown name reported does not depend on map order.
  std::vector<std::string> names;
  for (const auto &entry : ins.attrs())
    names.push_back(entry.first);
  std::sort(names.begin(), names.end());
  for (const std::string &name : names)
    if (!info.findAttr(name)) {
      std::string takes;
      for (const AttrSpec &spec : info.attrs)
        takes += (takes.empty() ? "" : ", ") + std::string(spec.name);
      return "unknown attribute '" + name + "' (the kernel takes " +
             (takes.empty() ? std::string("none") : takes) + ")";
    }
  return std::nullopt;
}

} // namespace rp::runtime
