//===- InstructionTest.cpp - Typed reads of a plan instruction ------------===//
//
// runtime/plan/Instruction.h: the attribute readers' defaults (absent, or another kind), the
// shapes, dtypes and byte counts, and instructionFlops against kernels::kernelFlops for each
// kernel with a FLOP rule and each attribute that changes the count.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/Instruction.h"

#include "test/Unit/support/PlanTestUtil.h"
#include "kernels/FlopRules.h"

#include <gtest/gtest.h>

#include <limits>

namespace rp::runtime {
namespace {

using rp::testing::addInstruction;
using rp::testing::ref;
using rp::testing::setFloat;
using rp::testing::setInt;
using rp::testing::setInts;
using rp::testing::setString;
using rp::testing::tensorType;
namespace pb = rp::plan;

pb::BufferRef arg(int index, std::vector<int64_t> shape, pb::DType dtype = pb::F32) {
  return ref(pb::BufferRef::ARG, index, tensorType(dtype, std::move(shape)));
}

pb::BufferRef result(int index, std::vector<int64_t> shape, pb::DType dtype = pb::F32) {
  return ref(pb::BufferRef::RESULT, index, tensorType(dtype, std::move(shape)));
}

void setBool(pb::Instruction *ins, const std::string &name, bool v) {
  (*ins->mutable_attrs())[name].set_b(v);
}

/// q, k, v and the output of the attentions below: [B = 1, H = 2, S = 8, D = 4].
const std::vector<int64_t> kQ = {1, 2, 8, 4};

/// An attention of q = k = v = kQ (not causal) appended to `f`.
pb::Instruction *addAttention(pb::Function &f) {
  pb::Instruction *att =
      addInstruction(&f, "attention", {arg(0, kQ), arg(1, kQ), arg(2, kQ)}, {result(0, kQ)});
  setFloat(att, "scale", 0.5);
  return att;
}

TEST(InstructionTest, AttributesReadTheirKindOrTheDefault) {
  pb::Function f;
  pb::Instruction *ins = addInstruction(&f, "attention", {}, {});
  setBool(ins, "causal", true);
  setInt(ins, "window", 4);
  setFloat(ins, "scale", 0.25);
  setString(ins, "reduction", "mean");
  setInts(ins, "axes", {0, 2});
  EXPECT_TRUE(boolAttr(*ins, "causal"));
  EXPECT_EQ(intAttr(*ins, "window"), 4);
  EXPECT_EQ(floatAttr(*ins, "scale"), 0.25);
  EXPECT_EQ(stringAttr(*ins, "reduction"), "mean");
  EXPECT_EQ(intsAttr(*ins, "axes"), (std::vector<int64_t>{0, 2}));
  ASSERT_NE(findAttr(*ins, "window"), nullptr);
  EXPECT_EQ(findAttr(*ins, "window")->i(), 4);
  // Absent: the default.
  EXPECT_EQ(findAttr(*ins, "transpose_a"), nullptr);
  EXPECT_FALSE(boolAttr(*ins, "transpose_a"));
  EXPECT_EQ(intAttr(*ins, "axis"), 0);
  EXPECT_EQ(intAttr(*ins, "ignore_index", -100), -100);
  EXPECT_EQ(floatAttr(*ins, "epsilon", 1e-6), 1e-6);
  EXPECT_EQ(stringAttr(*ins, "approximate", "exact"), "exact");
  EXPECT_TRUE(intsAttr(*ins, "starts").empty());
  // Another kind: the default too (the validator reports it; readers never fail).
  EXPECT_FALSE(boolAttr(*ins, "window"));
  EXPECT_EQ(intAttr(*ins, "causal", 7), 7);
  EXPECT_EQ(floatAttr(*ins, "window", 1.5), 1.5);
  EXPECT_EQ(stringAttr(*ins, "scale"), "");
  EXPECT_TRUE(intsAttr(*ins, "reduction").empty());
}

TEST(InstructionTest, TypesShapesAndBytes) {
  pb::Function f;
  pb::Instruction *ins = addInstruction(
      &f, "matmul", {arg(0, {2, 8, 4}, pb::BF16), arg(1, {4, 16}, pb::BF16)},
      {result(0, {2, 8, 16}, pb::BF16)});
  EXPECT_EQ(operandShapes(*ins), (std::vector<kernels::Shape>{{2, 8, 4}, {4, 16}}));
  EXPECT_EQ(resultShapes(*ins), (std::vector<kernels::Shape>{{2, 8, 16}}));
  const pb::TensorType &out = ins->results(0).type();
  EXPECT_EQ(dtypeOf(out), DType::BF16);
  EXPECT_EQ(elementCount(out), 256.0);
  EXPECT_EQ(byteCount(out), 512);
  EXPECT_EQ(typeText(out), "bf16[2,8,16]");
  EXPECT_EQ(typeText(tensorType(pb::I64, {})), "i64[]");
  EXPECT_EQ(elementCount(tensorType(pb::I64, {})), 1.0);
  EXPECT_EQ(byteCount(tensorType(pb::I64, {})), 8);
  // An unknown dtype has no size; an overflowing one saturates.
  EXPECT_EQ(dtypeOf(tensorType(pb::DTYPE_UNSPECIFIED, {4})), std::nullopt);
  EXPECT_EQ(byteCount(tensorType(pb::DTYPE_UNSPECIFIED, {4})), 0);
  EXPECT_EQ(typeText(tensorType(pb::DTYPE_UNSPECIFIED, {4})), "?[4]");
  EXPECT_EQ(byteCount(tensorType(pb::F32, {int64_t(1) << 40, int64_t(1) << 40})),
            std::numeric_limits<int64_t>::max());
}

// instructionFlops reads the attributes the FLOP rules take: causal (pairs on or below the
// diagonal, not half the square), the sliding window, transpose_a; a LM head's bias operand.
TEST(InstructionTest, FlopsFollowTheKernelRules) {
  pb::Function f;
  pb::Instruction *att = addAttention(f);
  EXPECT_EQ(instructionFlops(*att), 2.0 * 2 * 8 * 8 * (4 + 4));
  setBool(att, "causal", true);
  EXPECT_EQ(instructionFlops(*att), 2.0 * 2 * kernels::causalPairs(8, 8) * (4 + 4)); // 36 pairs
  setInt(att, "window", 3);
  EXPECT_EQ(instructionFlops(*att), 2.0 * 2 * kernels::windowPairs(8, 8, 3) * (4 + 4));
  EXPECT_EQ(instructionFlops(*att),
            kernels::kernelFlops("attention", {kQ, kQ, kQ}, {kQ}, true, false, 3));

  pb::Instruction *mm = addInstruction(&f, "matmul", {arg(0, {6, 4}), arg(1, {6, 5})},
                                       {result(0, {4, 5})});
  EXPECT_EQ(instructionFlops(*mm), 2.0 * 4 * 5 * 4); // K = 4: the last dim of A
  setBool(mm, "transpose_a", true);
  EXPECT_EQ(instructionFlops(*mm), 2.0 * 4 * 5 * 6); // K = 6: A is [K, M]

  pb::Instruction *head = addInstruction(
      &f, "linear_cross_entropy", {arg(0, {8, 4}), arg(1, {10, 4}), arg(2, {8}, pb::I64)},
      {result(0, {})});
  EXPECT_EQ(instructionFlops(*head), 2.0 * 8 * 4 * 10);
  *head->add_operands() = arg(3, {10});
  EXPECT_EQ(instructionFlops(*head), 2.0 * 8 * 4 * 10 + 8 * 10); // + one add per logit

  pb::Instruction *add = addInstruction(&f, "add", {arg(0, {4}), arg(1, {4})}, {result(0, {4})});
  EXPECT_EQ(instructionFlops(*add), 0.0);
}

// A FlopQuery counts another call from the same instruction: the report's non-causal model
// FLOPs and the paper FLOPs' attention_vjp.
TEST(InstructionTest, FlopQueryCountsAnotherCall) {
  pb::Function f;
  pb::Instruction *att = addAttention(f);
  setBool(att, "causal", true);
  FlopQuery query = flopQuery(*att);
  EXPECT_EQ(query.kernel, "attention");
  EXPECT_TRUE(query.causal);
  EXPECT_FALSE(query.transposeA);
  EXPECT_EQ(query.window, 0);
  EXPECT_EQ(query.flops(), instructionFlops(*att));
  query.causal = false;
  EXPECT_EQ(query.flops(), 2.0 * 2 * 8 * 8 * (4 + 4));
  query.causal = true;
  query.kernel = "attention_vjp";
  query.operands = {kQ, kQ, kQ, kQ, kQ};
  EXPECT_EQ(query.flops(), 2.5 * instructionFlops(*att));
}

} // namespace
} // namespace rp::runtime
