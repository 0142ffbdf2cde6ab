//===- WriteTestPlan.cpp - Write a small valid plan and its weights --------===//
//
// rp-write-test-plan DIR: writes DIR/tiny.rpplan, the hand-built two-layer plan of
// test/Unit/support/PlanTestUtil.h (makeValidPlan: the plan the validator tests start from), and
// DIR/tiny.safetensors, the weights it names (zeros, fp32: layers.0.w [4,4], lm_head [4,8],
// norm.scale [4]). The install test (install-test.sh) checks it with the installed rp-run
// where no rpc-compile is built (RP_ENABLE_COMPILER=OFF). Exit code 0, or 1 with the error
// on stderr.
//
//===----------------------------------------------------------------------===//

#include "test/Unit/support/PlanTestUtil.h"
#include "runtime/io/Safetensors.h"
#include "runtime/plan/PlanFile.h"

#include <cstdio>
#include <string>
#include <vector>

namespace {

using rp::runtime::SafetensorsDType;
using rp::runtime::SafetensorsTensor;
using rp::base::Status;

/// Writes makeValidPlan() and its zero weights into `dir` (which must exist).
Status writeTestPlan(const std::string &dir) {
  const rp::plan::Plan plan = rp::testing::makeValidPlan();
  if (Status s = rp::runtime::writePlanFile(dir + "/tiny.rpplan", plan); !s.ok())
    return s;
  std::vector<std::vector<char>> storage;
  std::vector<SafetensorsTensor> tensors;
  storage.reserve(plan.params_size());
  for (const rp::plan::Param &p : plan.params()) {
    std::vector<int64_t> shape(p.type().shape().begin(), p.type().shape().end());
    size_t bytes = sizeof(float);
    for (int64_t d : shape)
      bytes *= static_cast<size_t>(d);
    storage.emplace_back(bytes, 0);
    tensors.push_back({p.name(), SafetensorsDType::F32, shape, storage.back().data(), bytes});
  }
  return rp::runtime::writeSafetensors(dir + "/" + plan.weights_file(), tensors);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: rp-write-test-plan DIR\n");
    return 1;
  }
  Status s = writeTestPlan(argv[1]);
  if (!s.ok()) {
    std::fprintf(stderr, "rp-write-test-plan: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
