//===- PaperFlops.cpp - FLOPs of RoundPipe's schedule for a partition -----===//

#include "runtime/plan/PaperFlops.h"

#include "kernels/FlopRules.h"
#include "base/DType.h"
#include "runtime/plan/PlanValidator.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace rp::runtime {

namespace pb = rp::plan;

namespace {

kernels::Shape shapeOf(const pb::TensorType &t) {
  return kernels::Shape(t.shape().begin(), t.shape().end());
}

bool boolAttr(const pb::Instruction &ins, const char *name) {
  auto it = ins.attrs().find(name);
  return it != ins.attrs().end() && it->second.value_case() == pb::Attribute::kB && it->second.b();
}

/// An int attribute's value, 0 when absent (attention's sliding `window`).
int64_t intAttr(const pb::Instruction &ins, const char *name) {
  auto it = ins.attrs().find(name);
  return it != ins.attrs().end() && it->second.value_case() == pb::Attribute::kI ? it->second.i()
                                                                                  : 0;
}

double flopsOf(const pb::Instruction &ins, const char *kernel,
               const std::vector<kernels::Shape> &operands) {
  std::vector<kernels::Shape> results;
  for (const pb::BufferRef &r : ins.results())
    results.push_back(shapeOf(r.type()));
  return kernels::kernelFlops(kernel, operands, results, boolAttr(ins, "causal"),
                              boolAttr(ins, "transpose_a"),
                              intAttr(ins, "window"));
}

std::vector<kernels::Shape> operandShapes(const pb::Instruction &ins) {
  std::vector<kernels::Shape> operands;
  for (const pb::BufferRef &r : ins.operands())
    operands.push_back(shapeOf(r.type()));
  return operands;
}

/// The activity of the values a function writes, by place: the latest write overlapping a
/// read decides (a view written where its source lies reads as its source).
class Activity {
public:
  bool read(const pb::BufferRef &r, const std::vector<bool> &trainable) const {
    switch (r.space()) {
    case pb::BufferRef::ARG:
      return isPlanFloat(r.type().dtype());
    case pb::BufferRef::PARAM:
      return r.index() >= 0 && static_cast<size_t>(r.index()) < trainable.size() &&
             trainable[static_cast<size_t>(r.index())];
    case pb::BufferRef::CONSTANT:
      return false;
    default:
      break;
    }
    const auto [begin, end] = range(r);
    for (auto it = writes_.rbegin(); it != writes_.rend(); ++it)
      if (it->space == r.space() && it->begin < end && begin < it->end)
        return it->active;
    return false;
  }
  void write(const pb::BufferRef &r, bool active) {
    const auto [begin, end] = range(r);
    writes_.push_back({r.space(), begin, end, active});
  }

private:
  struct Write {
    int space;
    int64_t begin, end;
    bool active;
  };
  /// Workspace values by byte range; results by index (one unit each).
  static std::pair<int64_t, int64_t> range(const pb::BufferRef &r) {
    if (r.space() != pb::BufferRef::WORKSPACE)
      return {r.index(), r.index() + 1};
    const std::optional<DType> dtype = fromPlanDType(r.type().dtype());
    int64_t bytes = dtype ? static_cast<int64_t>(dtypeSize(*dtype)) : 1;
    for (int64_t d : r.type().shape())
      bytes *= std::max<int64_t>(d, 1);
    return {r.offset(), r.offset() + std::max<int64_t>(bytes, 1)};
  }
  std::vector<Write> writes_;
};

} // namespace

double forwardFlops(const pb::Function &f) {
  double flops = 0;
  for (const pb::Instruction &ins : f.body())
    flops += flopsOf(ins, ins.kernel().c_str(), operandShapes(ins));
  return flops;
}

double backwardRuleFlops(const pb::Function &f, const std::vector<bool> &trainable) {
  Activity activity;
  double flops = 0;
  for (const pb::Instruction &ins : f.body()) {
    std::vector<bool> active; // read before the results are written (in place or not)
    for (const pb::BufferRef &r : ins.operands())
      active.push_back(activity.read(r, trainable));
    const int numActive = static_cast<int>(std::count(active.begin(), active.end(), true));
    for (const pb::BufferRef &r : ins.results())
      activity.write(r, numActive > 0);
    if (numActive == 0)
      continue;
    const std::vector<kernels::Shape> operands = operandShapes(ins);
    if (ins.kernel() == "matmul") {
      // One product of the forward's size per operand with a gradient.
      int withGrad = 0;
      for (size_t i = 0; i < std::min<size_t>(active.size(), 2); ++i)
        withGrad += active[i] ? 1 : 0;
      flops += withGrad * flopsOf(ins, "matmul", operands);
    } else if (ins.kernel() == "attention") {
      if ((operands.size() == 3 || operands.size() == 4) && ins.results_size() == 1) {
        const kernels::Shape out = shapeOf(ins.results(0).type());
        flops += flopsOf(ins, "attention_vjp",
                         {operands[0], operands[1], operands[2], out, out});
      }
    } else {
      flops += 2 * flopsOf(ins, ins.kernel().c_str(), operands);
    }
  }
  return flops;
}

std::vector<double> paperStageFlops(const pb::Plan &plan) {
  std::vector<bool> trainable;
  for (const pb::Param &p : plan.params())
    trainable.push_back(p.trainable());
  std::vector<double> fwd, bwd;
  for (const pb::Layer &layer : plan.layers()) {
    const pb::Function &f = plan.functions(layer.forward());
    fwd.push_back(forwardFlops(f));
    bwd.push_back(backwardRuleFlops(f, trainable));
  }
  std::vector<double> stages;
  for (const pb::Stage &st : plan.stages()) {
    double flops = 0;
    for (int l = st.begin(); l < st.end(); ++l)
      flops += fwd[static_cast<size_t>(l)] +
               (st.kind() == pb::FORWARD ? 0.0 : bwd[static_cast<size_t>(l)]);
    stages.push_back(flops);
  }
  return stages;
}

} // namespace rp::runtime
