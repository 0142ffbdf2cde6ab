//===- PaperFlopsTest.cpp - The paper schedule's FLOPs on hand-built functions ===//
//
// runtime/plan/PaperFlops.h: F_l and B_l of forward functions counted by hand (which operands
// are active, the matmul and attention adjoints), and the per-stage sums of the two-layer plan
// of PlanTestUtil.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/PaperFlops.h"

#include "test/Unit/support/PlanTestUtil.h"

#include <gtest/gtest.h>

namespace rp::runtime {
namespace {

using rp::testing::addInstruction;
using rp::testing::makeValidPlan;
using rp::testing::ref;
using rp::testing::tensorType;
using S = rp::plan::BufferRef;
namespace pb = rp::plan;

TEST(PaperFlopsTest, AdjointsCountOnlyActiveOperands) {
  const pb::TensorType x = tensorType(pb::F32, {2, 4}), w = tensorType(pb::F32, {4, 4});
  const pb::TensorType qkv = tensorType(pb::F32, {1, 2, 4, 8});
  pb::Function f;
  // Param 0 frozen, param 1 trainable; ARG 0 and ARG 1 float (the layer's activations).
  const std::vector<bool> trainable = {false, true};
  // x @ frozen: 64 FLOPs, adjoint dX only: 64.
  addInstruction(&f, "matmul", {ref(S::ARG, 0, x), ref(S::PARAM, 0, w)}, {ref(S::WORKSPACE, 0, x)});
  // (active) @ trainable: 64, adjoints dX and dW: 128.
  addInstruction(&f, "matmul", {ref(S::WORKSPACE, 0, x), ref(S::PARAM, 1, w)},
                 {ref(S::WORKSPACE, 256, x)});
  // constant @ frozen: 64, inactive: no adjoint; its result is inactive too.
  addInstruction(&f, "matmul", {ref(S::CONSTANT, 0, x), ref(S::PARAM, 0, w)},
                 {ref(S::WORKSPACE, 512, x)});
  addInstruction(&f, "matmul", {ref(S::WORKSPACE, 512, x), ref(S::PARAM, 0, w)},
                 {ref(S::RESULT, 0, x)});
  // A causal attention of active q, k, v: 2 * 2 heads * 10 pairs * 16 = 640; its adjoint is
  // attention_vjp's count, 2.5 x: 1600.
  pb::Instruction *att = addInstruction(
      &f, "attention", {ref(S::ARG, 1, qkv), ref(S::ARG, 1, qkv), ref(S::ARG, 1, qkv)},
      {ref(S::WORKSPACE, 1024, qkv)});
  (*att->mutable_attrs())["causal"].set_b(true);
  // A matmul whose active operand was overwritten in place by an inactive value reads inactive.
  addInstruction(&f, "copy", {ref(S::CONSTANT, 0, x)}, {ref(S::WORKSPACE, 256, x)});
  addInstruction(&f, "matmul", {ref(S::WORKSPACE, 256, x), ref(S::PARAM, 0, w)},
                 {ref(S::WORKSPACE, 2048, x)});
  EXPECT_EQ(forwardFlops(f), 64.0 * 5 + 640);
  EXPECT_EQ(backwardRuleFlops(f, trainable), 64.0 + 128 + 1600);
  // An integer argument carries no gradient.
  pb::Function ids;
  const pb::TensorType i = tensorType(pb::I64, {2, 4});
  addInstruction(&ids, "matmul", {ref(S::ARG, 0, i), ref(S::PARAM, 0, w)}, {ref(S::RESULT, 0, x)});
  EXPECT_EQ(backwardRuleFlops(ids, trainable), 0.0);
}

TEST(PaperFlopsTest, StagesOfTheTwoLayerPlan) {
  const pb::Plan plan = makeValidPlan();
  // block_0: x @ w (trainable) = 64, backward 128; tail: rms_norm (no FLOPs, active from x)
  // then @ lm_head (trainable) [2,4] x [4,8] = 128, backward 256.
  const std::vector<double> stages = paperStageFlops(plan);
  ASSERT_EQ(stages.size(), 3u);
  EXPECT_EQ(stages[0], 64.0);        // F0: block_0 forward
  EXPECT_EQ(stages[1], 128.0 + 256); // B0 (fused tail): tail forward + backward
  EXPECT_EQ(stages[2], 64.0 + 128);  // B1: block_0 recomputed + backward
}

} // namespace
} // namespace rp::runtime
