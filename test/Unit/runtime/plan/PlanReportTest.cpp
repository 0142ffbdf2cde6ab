//===- PlanReportTest.cpp - The plan report on hand-built plans -----------===//
//
// The two-layer plan of PlanTestUtil.h (M = 2; F0 forward, B0 fused tail, B1 backward), every
// number counted by hand from its instructions and buffers.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/PlanReport.h"

#include "test/Unit/support/PlanTestUtil.h"

#include <gtest/gtest.h>

namespace rp::runtime {
namespace {

using rp::testing::addCall;
using rp::testing::addInstruction;
using rp::testing::addParam;
using rp::testing::makeValidPlan;
using rp::testing::ref;
using rp::testing::tensorType;
using S = rp::plan::BufferRef;
namespace pb = rp::plan;

TEST(PlanReportTest, FlopsTransfersAndBuffersOfTheTwoLayerPlan) {
  const pb::Plan plan = makeValidPlan();
  const PlanReport r = computePlanReport(plan);
  ASSERT_EQ(r.stages.size(), 3u);
  EXPECT_EQ(r.microBatches, 2);
  // F0 runs block_0: x [2,4] @ w [4,4] = 2 * 8 * 4 = 64 FLOPs (the add counts nothing).
  EXPECT_EQ(r.stages[0].kind, "forward");
  EXPECT_EQ(r.stages[0].calls, 1);
  EXPECT_EQ(r.stages[0].flops.forward, 64.0);
  EXPECT_EQ(r.stages[0].flops.backward, 0.0);
  // B0 runs tail_fused: [2,4] @ lm_head [4,8] = 2 * 16 * 4 = 128, a backward function.
  EXPECT_EQ(r.stages[1].kind, "fused_tail");
  EXPECT_EQ(r.stages[1].flops.forward, 0.0);
  EXPECT_EQ(r.stages[1].flops.backward, 128.0);
  // B1 runs block_0_vjp: x^T [4,2] @ dy [2,4] = 2 * 16 * 2 = 64 and dy @ w^T = 64.
  EXPECT_EQ(r.stages[2].flops.backward, 128.0);
  EXPECT_EQ(r.stages[2].flops.recompute, 0.0);
  EXPECT_EQ(r.executedFlops(), 2 * (64.0 + 128 + 128));
  // Bytes: F0 uploads x (32) and downloads block_0#0 (32); B0 uploads block_0#0 and labels
  // (16), downloads the loss (4) and the cotangent (32); B1 uploads x and the cotangent.
  EXPECT_EQ(r.stages[0].activationUpload, 32);
  EXPECT_EQ(r.stages[0].activationDownload, 32);
  EXPECT_EQ(r.stages[1].activationUpload, 48);
  EXPECT_EQ(r.stages[1].activationDownload, 36);
  EXPECT_EQ(r.stages[2].activationUpload, 64);
  EXPECT_EQ(r.stages[2].activationDownload, 0);
  EXPECT_EQ(r.stages[0].gradDownload, 0);
  EXPECT_EQ(r.uploadBytes(), (64 + 144 + 64) + 2 * (32 + 48 + 64));
  EXPECT_EQ(r.downloadBytes(), (128 + 64) + 2 * (32 + 36));
  // No embedding gather: the tokens, and so the model FLOPs, are unknown.
  EXPECT_EQ(r.tokensPerMicroBatch, 0);
  EXPECT_EQ(r.modelFlops(), 0.0);
  EXPECT_EQ(r.params, 16.0 + 32 + 4);
  EXPECT_EQ(r.nonEmbeddingParams, 52.0);
  // The largest values of the called functions (not `tail`, which no stage calls): the
  // tail_fused copy of lm_head (128 bytes), then the 64-byte ones in plan order.
  ASSERT_EQ(r.largestBuffers.size(), 5u);
  EXPECT_EQ(r.largestBuffers[0].bytes, 128);
  EXPECT_EQ(r.largestBuffers[0].function, "tail_fused");
  EXPECT_EQ(r.largestBuffers[0].kernel, "copy");
  EXPECT_EQ(r.largestBuffers[0].space, "activation");
  EXPECT_EQ(r.largestBuffers[0].type, "f32[4,8]");
  EXPECT_EQ(r.largestBuffers[1].function, "block_0_vjp");
  EXPECT_EQ(r.largestBuffers[1].kernel, "matmul");
  EXPECT_EQ(r.largestBuffers[2].kernel, "transpose");
  EXPECT_EQ(r.largestBuffers[2].space, "workspace");
  EXPECT_EQ(r.largestBuffers[3].function, "tail_fused");
  EXPECT_EQ(r.largestBuffers[3].location, "test.onnx:matmul");
  EXPECT_EQ(r.largestBuffers[4].bytes, 32);
  EXPECT_EQ(computePlanReport(plan, 2).largestBuffers.size(), 2u);
  const std::string text = formatPlanReport(r, plan);
  EXPECT_NE(text.find("executed FLOPs per step: 640 (640 FLOP)"), std::string::npos) << text;
  EXPECT_NE(text.find("model FLOPs per step: unknown"), std::string::npos) << text;
}

TEST(PlanReportTest, RecomputationEmbeddingsSharedParamsAndModelFlops) {
  pb::Plan plan = makeValidPlan();
  // An embedding (param 3, [4,4], layer 0) gathered by block_0 with 2 token ids, and its copy
  // (param 4, layer 1) read by a matmul in tail_fused, as a tied LM head.
  addParam(plan, "embed", tensorType(pb::F32, {4, 4}), true, 0, 0, 0);
  addParam(plan, "embed", tensorType(pb::F32, {4, 4}), true, 1, 0, 0)->set_primary(3);
  const pb::TensorType ids = tensorType(pb::I64, {2}), x = tensorType(pb::F32, {2, 4});
  addInstruction(plan.mutable_functions(0), "gather",
                 {ref(S::PARAM, 3, tensorType(pb::F32, {4, 4})), ref(S::ARG, 0, ids)},
                 {ref(S::WORKSPACE, 128, x)});
  addInstruction(plan.mutable_functions(3), "matmul",
                 {ref(S::WORKSPACE, 0, x), ref(S::PARAM, 4, tensorType(pb::F32, {4, 4}))},
                 {ref(S::WORKSPACE, 128, x)});
  // An attention product in block_0: [1,2,3] @ [1,3,2] = 2 * 4 * 3 = 24 FLOPs.
  addInstruction(plan.mutable_functions(0), "matmul",
                 {ref(S::WORKSPACE, 0, tensorType(pb::F32, {1, 2, 3})),
                  ref(S::WORKSPACE, 32, tensorType(pb::F32, {1, 3, 2}))},
                 {ref(S::WORKSPACE, 64, tensorType(pb::F32, {1, 2, 2}))});
  // B1 recomputes block_0 before its backward.
  addCall(plan.mutable_stages(2), 0, {0}, {32});
  const PlanReport r = computePlanReport(plan);
  EXPECT_EQ(r.stages[0].flops.forward, 64.0 + 24);
  EXPECT_EQ(r.stages[1].flops.backward, 128.0 + 64);
  EXPECT_EQ(r.stages[2].flops.recompute, 64.0 + 24);
  EXPECT_EQ(r.stages[2].flops.forward, 0.0);
  EXPECT_EQ(r.executedFlops(), 2 * (88.0 + 192 + 88 + 128));
  // params: 52 + the embedding once; N: without the gathered entry, with its matmul copy.
  EXPECT_EQ(r.params, 52.0 + 16);
  EXPECT_EQ(r.nonEmbeddingParams, 52.0 + 16);
  EXPECT_EQ(r.tokensPerMicroBatch, 2);
  // 6 N T + 3 A: T = M x 2 = 4 tokens, A = M x 24 (the batched matmul, non-causal).
  EXPECT_EQ(r.modelAttentionFlops, 48.0);
  EXPECT_EQ(r.modelFlops(), 6 * 68.0 * 4 + 3 * 48);
}

TEST(PlanReportTest, CausalAttentionExecutesHalfOfWhatTheModelCounts) {
  pb::Plan plan = makeValidPlan();
  const pb::TensorType qkv = tensorType(pb::F32, {1, 2, 4, 8}); // B 1, H 2, S 4, D 8
  pb::Instruction *att = addInstruction(
      plan.mutable_functions(0), "attention",
      {ref(S::WORKSPACE, 0, qkv), ref(S::WORKSPACE, 0, qkv), ref(S::WORKSPACE, 0, qkv)},
      {ref(S::WORKSPACE, 0, qkv)});
  (*att->mutable_attrs())["causal"].set_b(true);
  const PlanReport r = computePlanReport(plan);
  // Executed: 2 * 2 heads * 10 pairs * 16 = 640; the model: 2 * 2 * 16 pairs * 16 = 1024.
  EXPECT_EQ(r.stages[0].flops.forward, 64.0 + 640);
  EXPECT_EQ(r.modelAttentionFlops, 2 * 1024.0);
}

TEST(PlanReportTest, SavingForwardsCountPerLayerAndThePaperRatio) {
  pb::Plan plan = makeValidPlan();
  // The tail's saving forward is function 2 (its forward function: 128 FLOPs), called by the
  // fused tail B0 before tail_fused: the layer's first forward of the step. block_0's saving
  // forward is function 0, called again by B1: a recomputation, since F0 ran block_0 first.
  plan.mutable_layers(1)->set_saving(2);
  plan.mutable_layers(0)->set_saving(0);
  pb::Stage *b0 = plan.mutable_stages(1);
  addCall(b0, 2, {0, 32}, {64});
  addCall(plan.mutable_stages(2), 0, {0}, {32});
  const PlanReport r = computePlanReport(plan);
  EXPECT_EQ(r.stages[1].flops.forward, 128.0);
  EXPECT_EQ(r.stages[1].flops.backward, 128.0);
  EXPECT_EQ(r.stages[2].flops.recompute, 64.0);
  // The paper's schedule (PaperFlops.h): F0 64; B0 the tail's forward 128 + backward 256 (dX
  // and dW); B1 block_0's forward 64 + backward 128. This hand-built plan's tail_fused runs
  // one product of its backward: B0 executes 256 of 384.
  EXPECT_EQ(r.stages[0].paperFlops, 64.0);
  EXPECT_EQ(r.stages[1].paperFlops, 384.0);
  EXPECT_EQ(r.stages[2].paperFlops, 192.0);
  EXPECT_DOUBLE_EQ(r.stages[1].executedOverPaper(), 256.0 / 384);
  EXPECT_EQ(r.stages[2].executedOverPaper(), 1.0);
  EXPECT_EQ(r.paperFlops(), 2 * (64.0 + 384 + 192));
  const std::string text = formatPlanReport(r, plan);
  EXPECT_NE(text.find("paper schedule FLOPs per step: 1280 (1.28 KFLOP)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("0.6667"), std::string::npos) << text;
}

// Every function's FLOPs, instruction by instruction (what the simulator's trace lists too):
// the stage FLOPs are their sums over the calls.
TEST(PlanReportTest, EveryFunctionsInstructionFlops) {
  const pb::Plan plan = makeValidPlan();
  const PlanReport r = computePlanReport(plan);
  ASSERT_EQ(r.functions.size(), 4u);
  EXPECT_EQ(r.functions[0].name, "block_0");
  EXPECT_EQ(r.functions[0].instructions, (std::vector<double>{64, 0}));
  EXPECT_EQ(r.functions[1].name, "block_0_vjp");
  EXPECT_EQ(r.functions[1].instructions, (std::vector<double>{0, 64, 0, 64, 0}));
  EXPECT_EQ(r.functions[1].total(), r.stages[2].flops.backward);
  EXPECT_EQ(formatInstructionFlops(r.functions[1].instructions), "1:64 3:64");
  EXPECT_EQ(formatInstructionFlops(r.functions[2].instructions), "1:128"); // tail, not called
  EXPECT_EQ(formatInstructionFlops(r.functions[3].instructions), "2:128");
  EXPECT_EQ(formatInstructionFlops({0, 0}), "");
  EXPECT_EQ(formatInstructionFlops({0, 1.5e17}), "1:150000000000000000");
  const std::string json = formatPlanReportJson(r, plan);
  EXPECT_NE(json.find(R"("name": "block_0_vjp",)" "\n"
                      R"(   "flops": 128,)" "\n"
                      R"(   "instruction_flops": "1:64 3:64")"),
            std::string::npos)
      << json;
}

TEST(PlanReportTest, TextKeepsLongLocationsWhole) {
  pb::Plan plan = makeValidPlan();
  const std::string location(3000, 'x'); // longer than any fixed line buffer
  plan.mutable_functions(3)->mutable_body(0)->set_location(location + "!");
  const PlanReport r = computePlanReport(plan, 100);
  const std::string text = formatPlanReport(r, plan);
  EXPECT_NE(text.find(location + "!\n"), std::string::npos);
}

} // namespace
} // namespace rp::runtime
