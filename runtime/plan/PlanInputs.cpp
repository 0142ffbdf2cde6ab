//===- PlanInputs.cpp - What a plan's model inputs hold -------------------===//

#include "runtime/plan/PlanInputs.h"

#include "runtime/plan/Instruction.h"

#include <set>
#include <utility>

namespace rp::runtime {

namespace pb = rp::plan;

const char *inputRoleName(InputRole role) {
  switch (role) {
  case InputRole::Tokens:
    return "tokens";
  case InputRole::Labels:
    return "labels";
  case InputRole::Positions:
    return "positions";
  case InputRole::Other:
    return "other";
  }
  return "?";
}

namespace {

/// The export contract's position input (runtime/data/BatchSampler.h, kPositionIdsInput, which
/// this layer may not include).
constexpr const char *kPositionInputName = "position_ids";

/// A buffer of a function's frame: (space, index) for ARG/RESULT, (space, offset) otherwise.
std::pair<int, int64_t> bufferKey(const pb::BufferRef &ref) {
  const bool indexed = ref.space() == pb::BufferRef::ARG || ref.space() == pb::BufferRef::RESULT;
  return {static_cast<int>(ref.space()), indexed ? ref.index() : ref.offset()};
}

/// `input` holds the labels of the loss `inst` over `classes` classes (its ignore_index and
/// reduction attributes).
void labelsOf(const pb::Instruction &inst, int64_t classes, PlanInput &input) {
  input.role = InputRole::Labels;
  input.vocabSize = classes;
  input.ignoreIndex = intAttr(inst, "ignore_index", input.ignoreIndex);
  if (findAttr(inst, "reduction"))
    input.meanLoss = stringAttr(inst, "reduction") == "mean";
}

/// The role of argument `arg` of `function`, from its uses in program order, following the
/// value through kernels that only move or relabel it (reshape, copy, cast, transpose, expand).
void classifyArgument(const pb::Function &function, int64_t arg, PlanInput &input) {
  std::set<std::pair<int, int64_t>> value{{static_cast<int>(pb::BufferRef::ARG), arg}};
  for (const pb::Instruction &inst : function.body()) {
    const std::string &k = inst.kernel();
    const bool moves = k == "reshape" || k == "copy" || k == "cast" || k == "transpose" ||
                       k == "expand";
    if (inst.operands_size() >= 2 && value.count(bufferKey(inst.operands(1)))) {
      const kernels::Shape data = shapeOf(inst.operands(0).type());
      const int64_t rank = static_cast<int64_t>(data.size());
      if (k == "gather") {
        int64_t axis = intAttr(inst, "axis", 0);
        if (axis < 0)
          axis += rank;
        if (axis >= 0 && axis < rank) {
          input.role = InputRole::Tokens;
          input.vocabSize = data[static_cast<size_t>(axis)];
          return;
        }
      } else if (k == "cross_entropy" && rank > 0) {
        labelsOf(inst, data.back(), input);
        return;
      }
    }
    // The fused LM head's labels are operand 2; its weight [V, H] gives the classes.
    if ((k == "linear_cross_entropy" || k == "linear_cross_entropy_vjp") &&
        inst.operands_size() >= 3 && value.count(bufferKey(inst.operands(2)))) {
      const kernels::Shape weight = shapeOf(inst.operands(1).type());
      if (!weight.empty()) {
        labelsOf(inst, weight[0], input);
        return;
      }
    }
    const bool fromValue = moves && inst.operands_size() >= 1 &&
                           value.count(bufferKey(inst.operands(0)));
    for (const pb::BufferRef &r : inst.results()) {
      if (fromValue)
        value.insert(bufferKey(r));
      else
        value.erase(bufferKey(r)); // the buffer now holds another value
    }
  }
}

} // namespace

std::vector<PlanInput> analyzeInputs(const pb::Plan &plan) {
  std::vector<PlanInput> inputs;
  for (int b = 0; b < plan.host_buffers_size(); ++b) {
    const pb::HostBuffer &buffer = plan.host_buffers(b);
    if (buffer.kind() != pb::INPUT)
      continue;
    PlanInput input;
    input.buffer = b;
    input.name = buffer.input_name().empty() ? buffer.name() : buffer.input_name();
    input.dtype = dtypeOf(buffer.type()).value_or(DType::I64);
    input.shape = shapeOf(buffer.type());
    for (const pb::Stage &stage : plan.stages()) {
      for (const pb::Step &step : stage.body()) {
        if (!step.has_upload() || step.upload().buffer() != b)
          continue;
        // The calls that read the uploaded value, until one overwrites its offset.
        const int64_t offset = step.upload().offset();
        for (const pb::Step &use : stage.body()) {
          if (!use.has_call())
            continue;
          const pb::Call &call = use.call();
          for (int a = 0; a < call.arg_offsets_size(); ++a)
            if (call.arg_offsets(a) == offset && input.role == InputRole::Other)
              classifyArgument(plan.functions(call.function()), a, input);
          bool overwritten = false;
          for (int64_t r : call.result_offsets())
            overwritten |= r == offset;
          if (overwritten)
            break;
        }
      }
    }
    if (input.name == kPositionInputName) {
      if (input.role != InputRole::Tokens) // a gather's table bounds the positions
        input.vocabSize = 0;
      input.role = InputRole::Positions;
      input.ignoreIndex = -100;
      input.meanLoss = true;
    }
    inputs.push_back(std::move(input));
  }
  return inputs;
}

} // namespace rp::runtime
