//===- PaperFlops.cpp - FLOPs of RoundPipe's schedule for a partition -----===//

#include "runtime/plan/PaperFlops.h"

#include "base/DType.h"
#include "runtime/plan/Instruction.h"
#include "runtime/plan/PlanValidator.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace rp::runtime {

namespace pb = rp::plan;

namespace {

/// The FLOPs of the attention_vjp of attention instruction `ins` on the same q, k, v (its
/// output as the VJP's out and dout, same attributes); 0 for a malformed attention.
double attentionVjpFlops(const pb::Instruction &ins) {
  FlopQuery q = flopQuery(ins);
  if ((q.operands.size() != 3 && q.operands.size() != 4) || q.results.size() != 1)
    return 0;
  q.kernel = "attention_vjp";
  q.operands = {q.operands[0], q.operands[1], q.operands[2], q.results[0], q.results[0]};
  return q.flops();
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
    const std::optional<DType> dtype = dtypeOf(r.type());
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
    flops += instructionFlops(ins);
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
    if (ins.kernel() == "matmul") {
      // One product of the forward's size per operand with a gradient.
      int withGrad = 0;
      for (size_t i = 0; i < std::min<size_t>(active.size(), 2); ++i)
        withGrad += active[i] ? 1 : 0;
      flops += withGrad * instructionFlops(ins);
    } else if (ins.kernel() == "attention") {
      flops += attentionVjpFlops(ins);
    } else {
      flops += 2 * instructionFlops(ins);
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
