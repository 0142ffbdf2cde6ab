//===- PackedMaskTest.cpp - recognising block-diagonal causal masks -------===//
//
// Each case is `func.func @f(%pos: tensor<2x8xi64>) -> tensor<...>` parsed from MLIR text, the
// mask computed from the position ids by the ops the dynamo exporter writes for transformers'
// packed rows (find_packed_sequence_indices: a cumulative sum of the position steps that are
// not +1; the causal and window conditions on the remapped positions). The analysis
// (passes/Analysis/PackedMask.h) must take the block-diagonal causal mask, with and without a
// sliding window, boolean and additive, and refuse the near misses: documents that see the
// earlier documents, documents told apart by a restart at 0 instead of by their steps, a window
// off by one, a mask that reads a param.
//
//===----------------------------------------------------------------------===//

#include "passes/Analysis/PackedMask.h"

#include "compiler/InitAll.h"
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir;

namespace {

/// The documents of %pos as transformers computes them: %doc = cumsum(cast(not(diff == 1))),
/// diff prepended with pos[:, :1] - 1; then %dq [2,1,8,1] and %dk [2,1,1,8], and the remapped
/// positions %pq, %pk likewise.
const char *kDocuments = R"(
    %one = graph.constant dense<1> : tensor<i64>
    %first = graph.slice %pos {axes = array<i64: 1>, ends = array<i64: 1>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<2x8xi64>) -> tensor<2x1xi64>
    %before = graph.sub %first, %one : (tensor<2x1xi64>, tensor<i64>) -> tensor<2x1xi64>
    %padded = graph.concat %before, %pos {axis = 1 : i64} : (tensor<2x1xi64>, tensor<2x8xi64>) -> tensor<2x9xi64>
    %prev = graph.slice %padded {axes = array<i64: 1>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<2x9xi64>) -> tensor<2x8xi64>
    %diff = graph.sub %pos, %prev : (tensor<2x8xi64>, tensor<2x8xi64>) -> tensor<2x8xi64>
    %step = graph.compare eq, %diff, %one : (tensor<2x8xi64>, tensor<i64>) -> tensor<2x8xi1>
    %new = graph.logical_not %step : tensor<2x8xi1>
    %newi = graph.cast %new : tensor<2x8xi1> to tensor<2x8xi64>
    %doc = graph.cumsum %newi {axis = 1 : i64} : tensor<2x8xi64>
    %dq = graph.reshape %doc : tensor<2x8xi64> to tensor<2x1x8x1xi64>
    %dk = graph.reshape %doc : tensor<2x8xi64> to tensor<2x1x1x8xi64>
    %pq = graph.reshape %pos : tensor<2x8xi64> to tensor<2x1x8x1xi64>
    %pk = graph.reshape %pos : tensor<2x8xi64> to tensor<2x1x1x8xi64>
    %same = graph.compare eq, %dq, %dk : (tensor<2x1x8x1xi64>, tensor<2x1x1x8xi64>) -> tensor<2x1x8x8xi1>
    %causal = graph.compare le, %pk, %pq : (tensor<2x1x1x8xi64>, tensor<2x1x8x1xi64>) -> tensor<2x1x8x8xi1>
)";

/// The query and key indices %qi [8, 1] and %ki [1, 8].
const char *kIndices = R"(
    %qi = graph.constant dense<[[0], [1], [2], [3], [4], [5], [6], [7]]> : tensor<8x1xi64>
    %ki = graph.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>
)";

/// The plain causal mask of the indices, %tri [8, 8] (after kIndices).
const char *kTriangle = R"(
    %tri = graph.compare le, %ki, %qi : (tensor<1x8xi64>, tensor<8x1xi64>) -> tensor<8x8xi1>
)";

/// pos[q] - pos[k] < `window` as %inwin.
std::string windowOf(int window) {
  return R"(
    %w = graph.constant dense<)" + std::to_string(window) + R"(> : tensor<i64>
    %dist = graph.sub %pq, %pk : (tensor<2x1x8x1xi64>, tensor<2x1x1x8xi64>) -> tensor<2x1x8x8xi64>
    %inwin = graph.compare lt, %dist, %w : (tensor<2x1x8x8xi64>, tensor<i64>) -> tensor<2x1x8x8xi1>
)";
}

class PackedMaskTest : public ::testing::Test {
protected:
  PackedMaskTest() {
    DialectRegistry registry;
    mlir::rp::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// @f(%pos) with `body` (which defines %mask of `type`) returning %mask; the mask value.
  Value parse(const std::string &body, const std::string &type = "tensor<2x1x8x8xi1>",
              const std::string &prefix = "") {
    std::string text = prefix + "func.func @f(%pos: tensor<2x8xi64>) -> " + type + " {\n" +
                       body + "    return %mask : " + type + "\n}\n";
    module = parseSourceString<ModuleOp>(text, &context);
    EXPECT_TRUE(module) << text;
    if (!module)
      return {};
    auto func = module->lookupSymbol<func::FuncOp>("f");
    return func.getBody().front().getTerminator()->getOperand(0);
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

// transformers' packed causal mask: same document and causal.
TEST_F(PackedMaskTest, BooleanCausal) {
  Value mask = parse(std::string(kDocuments) +
                     "    %mask = graph.logical_and %same, %causal : (tensor<2x1x8x8xi1>, "
                     "tensor<2x1x8x8xi1>) -> tensor<2x1x8x8xi1>\n");
  std::optional<mlir::rp::PackedMask> packed = mlir::rp::packedKeepMask(mask, 8);
  ASSERT_TRUE(packed);
  EXPECT_EQ(packed->window, 0);
  EXPECT_EQ(packed->positions, module->lookupSymbol<func::FuncOp>("f").getArgument(0));
}

// With a sliding window of 3 on the remapped positions.
TEST_F(PackedMaskTest, BooleanWindow) {
  Value mask = parse(std::string(kDocuments) + windowOf(3) + R"(
    %band = graph.logical_and %causal, %inwin : (tensor<2x1x8x8xi1>, tensor<2x1x8x8xi1>) -> tensor<2x1x8x8xi1>
    %mask = graph.logical_and %same, %band : (tensor<2x1x8x8xi1>, tensor<2x1x8x8xi1>) -> tensor<2x1x8x8xi1>
)");
  std::optional<mlir::rp::PackedMask> packed = mlir::rp::packedKeepMask(mask, 8);
  ASSERT_TRUE(packed);
  EXPECT_EQ(packed->window, 3);
}

// The additive form where(keep, 0, -inf).
TEST_F(PackedMaskTest, Additive) {
  Value mask = parse(std::string(kDocuments) + R"(
    %keep = graph.logical_and %same, %causal : (tensor<2x1x8x8xi1>, tensor<2x1x8x8xi1>) -> tensor<2x1x8x8xi1>
    %zero = graph.constant dense<0.0> : tensor<f32>
    %ninf = graph.constant dense<0xFF800000> : tensor<f32>
    %mask = graph.where %keep, %zero, %ninf : (tensor<2x1x8x8xi1>, tensor<f32>, tensor<f32>) -> tensor<2x1x8x8xf32>
)",
                     "tensor<2x1x8x8xf32>");
  std::optional<mlir::rp::PackedMask> packed = mlir::rp::packedAdditiveMask(mask, 8);
  ASSERT_TRUE(packed);
  EXPECT_EQ(packed->window, 0);
  EXPECT_FALSE(mlir::rp::packedKeepMask(mask, 8)); // not a boolean mask
}

// Near miss: each document also sees the earlier documents (doc[k] <= doc[q]).
TEST_F(PackedMaskTest, DocumentsThatSeeEachOtherAreRefused) {
  Value mask = parse(std::string(kDocuments) + R"(
    %earlier = graph.compare le, %dk, %dq : (tensor<2x1x1x8xi64>, tensor<2x1x8x1xi64>) -> tensor<2x1x8x8xi1>
)" + std::string(kIndices) + kTriangle + R"(
    %mask = graph.logical_and %earlier, %tri : (tensor<2x1x8x8xi1>, tensor<8x8xi1>) -> tensor<2x1x8x8xi1>
)");
  EXPECT_FALSE(mlir::rp::packedKeepMask(mask, 8));
}

// Near miss: documents told apart by a position of 0 (cumsum(pos == 0)) instead of by their
// steps: equal while every document starts at 0, different when one starts elsewhere.
TEST_F(PackedMaskTest, RestartAtZeroIsNotTheDefinition) {
  Value mask = parse(R"(
    %zero = graph.constant dense<0> : tensor<i64>
    %start = graph.compare eq, %pos, %zero : (tensor<2x8xi64>, tensor<i64>) -> tensor<2x8xi1>
    %starti = graph.cast %start : tensor<2x8xi1> to tensor<2x8xi64>
    %doc = graph.cumsum %starti {axis = 1 : i64} : tensor<2x8xi64>
    %dq = graph.reshape %doc : tensor<2x8xi64> to tensor<2x1x8x1xi64>
    %dk = graph.reshape %doc : tensor<2x8xi64> to tensor<2x1x1x8xi64>
    %same = graph.compare eq, %dq, %dk : (tensor<2x1x8x1xi64>, tensor<2x1x1x8xi64>) -> tensor<2x1x8x8xi1>
)" + std::string(kIndices) + kTriangle + R"(
    %mask = graph.logical_and %same, %tri : (tensor<2x1x8x8xi1>, tensor<8x8xi1>) -> tensor<2x1x8x8xi1>
)");
  EXPECT_FALSE(mlir::rp::packedKeepMask(mask, 8));
}

// Near miss: a window that is 3 on the last row of the one-document probe but 4 elsewhere
// (pos[q] - pos[k] < 4, except the last query's band of 3) is refused.
TEST_F(PackedMaskTest, WindowOffByOneIsRefused) {
  Value mask = parse(std::string(kDocuments) + windowOf(4) + R"(
)" + std::string(kIndices) + R"(
    %seven = graph.constant dense<7> : tensor<i64>
    %four = graph.constant dense<4> : tensor<i64>
    %lastq = graph.compare eq, %qi, %seven : (tensor<8x1xi64>, tensor<i64>) -> tensor<8x1xi1>
    %k4 = graph.compare eq, %ki, %four : (tensor<1x8xi64>, tensor<i64>) -> tensor<1x8xi1>
    %cut = graph.logical_and %lastq, %k4 : (tensor<8x1xi1>, tensor<1x8xi1>) -> tensor<8x8xi1>
    %keepcut = graph.logical_not %cut : tensor<8x8xi1>
    %band = graph.logical_and %causal, %inwin : (tensor<2x1x8x8xi1>, tensor<2x1x8x8xi1>) -> tensor<2x1x8x8xi1>
    %banded = graph.logical_and %band, %keepcut : (tensor<2x1x8x8xi1>, tensor<8x8xi1>) -> tensor<2x1x8x8xi1>
    %mask = graph.logical_and %same, %banded : (tensor<2x1x8x8xi1>, tensor<2x1x8x8xi1>) -> tensor<2x1x8x8xi1>
)");
  EXPECT_FALSE(mlir::rp::packedKeepMask(mask, 8));
}

// A plain causal mask of constants reads no positions: not a packed mask (CausalMask.h's).
TEST_F(PackedMaskTest, ConstantCausalIsNotPacked) {
  Value mask = parse(R"(
)" + std::string(kIndices) + kTriangle + R"(
    %mask = graph.reshape %tri : tensor<8x8xi1> to tensor<1x1x8x8xi1>
)",
                     "tensor<1x1x8x8xi1>");
  EXPECT_FALSE(mlir::rp::packedKeepMask(mask, 8));
}

// The mask exactly as rpc-compile imports the dynamo export of a packed Qwen3 (two rows of 16
// tokens; test/Frontends/onnx/Inputs/packed-exports/qwen3-packed-dynamo, --emit=graph): the
// documents, then vmap's index gathers of them and of the positions.
TEST_F(PackedMaskTest, ImportedQwen3Mask) {
  const std::string text = R"(func.func @f(%arg2: tensor<2x16xi64>) -> tensor<2x1x16x16xi1> {
    %27 = graph.constant dense<1> : tensor<i64>
    %28 = graph.slice %arg2 {axes = array<i64: 1>, ends = array<i64: 1>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<2x16xi64>) -> tensor<2x1xi64>
    %29 = graph.sub %28, %27 : (tensor<2x1xi64>, tensor<i64>) -> tensor<2x1xi64>
    %30 = graph.concat %29, %arg2 {axis = 1 : i64} : (tensor<2x1xi64>, tensor<2x16xi64>) -> tensor<2x17xi64>
    %31 = graph.slice %30 {axes = array<i64: 1>, ends = array<i64: 16>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<2x17xi64>) -> tensor<2x16xi64>
    %32 = graph.slice %30 {axes = array<i64: 1>, ends = array<i64: 17>, starts = array<i64: 1>, steps = array<i64: 1>} : (tensor<2x17xi64>) -> tensor<2x16xi64>
    %33 = graph.sub %32, %31 : (tensor<2x16xi64>, tensor<2x16xi64>) -> tensor<2x16xi64>
    %34 = graph.compare eq, %33, %27 : (tensor<2x16xi64>, tensor<i64>) -> tensor<2x16xi1>
    %35 = graph.logical_not %34 : tensor<2x16xi1>
    %36 = graph.cast %35 : tensor<2x16xi1> to tensor<2x16xi64>
    %37 = graph.cumsum %36 {axis = 1 : i64} : tensor<2x16xi64>
    %39 = graph.constant dense<true> : tensor<i1>
    %40 = graph.transpose %37 {permutation = array<i64: 0, 1>} : (tensor<2x16xi64>) -> tensor<2x16xi64>
    %41 = graph.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]> : tensor<32xi64>
    %42 = graph.reshape %40 : tensor<2x16xi64> to tensor<32xi64>
    %43 = graph.gather %42, %41 {axis = 0 : i64} : (tensor<32xi64>, tensor<32xi64>) -> tensor<32xi64>
    %44 = graph.reshape %43 : tensor<32xi64> to tensor<2x1x16x1xi64>
    %45 = graph.transpose %44 {permutation = array<i64: 0, 1, 2, 3>} : (tensor<2x1x16x1xi64>) -> tensor<2x1x16x1xi64>
    %46 = graph.transpose %37 {permutation = array<i64: 0, 1>} : (tensor<2x16xi64>) -> tensor<2x16xi64>
    %47 = graph.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]> : tensor<32xi64>
    %48 = graph.reshape %46 : tensor<2x16xi64> to tensor<32xi64>
    %49 = graph.gather %48, %47 {axis = 0 : i64} : (tensor<32xi64>, tensor<32xi64>) -> tensor<32xi64>
    %50 = graph.reshape %49 : tensor<32xi64> to tensor<2x1x1x16xi64>
    %51 = graph.transpose %50 {permutation = array<i64: 0, 1, 2, 3>} : (tensor<2x1x1x16xi64>) -> tensor<2x1x1x16xi64>
    %52 = graph.compare eq, %45, %51 : (tensor<2x1x16x1xi64>, tensor<2x1x1x16xi64>) -> tensor<2x1x16x16xi1>
    %53 = graph.logical_and %39, %52 : (tensor<i1>, tensor<2x1x16x16xi1>) -> tensor<2x1x16x16xi1>
    %54 = graph.transpose %arg2 {permutation = array<i64: 0, 1>} : (tensor<2x16xi64>) -> tensor<2x16xi64>
    %55 = graph.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]> : tensor<32xi64>
    %56 = graph.reshape %54 : tensor<2x16xi64> to tensor<32xi64>
    %57 = graph.gather %56, %55 {axis = 0 : i64} : (tensor<32xi64>, tensor<32xi64>) -> tensor<32xi64>
    %58 = graph.reshape %57 : tensor<32xi64> to tensor<2x1x16x1xi64>
    %59 = graph.transpose %58 {permutation = array<i64: 0, 1, 2, 3>} : (tensor<2x1x16x1xi64>) -> tensor<2x1x16x1xi64>
    %60 = graph.transpose %arg2 {permutation = array<i64: 0, 1>} : (tensor<2x16xi64>) -> tensor<2x16xi64>
    %61 = graph.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]> : tensor<32xi64>
    %62 = graph.reshape %60 : tensor<2x16xi64> to tensor<32xi64>
    %63 = graph.gather %62, %61 {axis = 0 : i64} : (tensor<32xi64>, tensor<32xi64>) -> tensor<32xi64>
    %64 = graph.reshape %63 : tensor<32xi64> to tensor<2x1x1x16xi64>
    %65 = graph.transpose %64 {permutation = array<i64: 0, 1, 2, 3>} : (tensor<2x1x1x16xi64>) -> tensor<2x1x1x16xi64>
    %66 = graph.compare le, %65, %59 : (tensor<2x1x1x16xi64>, tensor<2x1x16x1xi64>) -> tensor<2x1x16x16xi1>
    %67 = graph.logical_and %53, %66 : (tensor<2x1x16x16xi1>, tensor<2x1x16x16xi1>) -> tensor<2x1x16x16xi1>
    return %67 : tensor<2x1x16x16xi1>
}
)";
  module = parseSourceString<ModuleOp>(text, &context);
  ASSERT_TRUE(module);
  auto func = module->lookupSymbol<func::FuncOp>("f");
  Value mask = func.getBody().front().getTerminator()->getOperand(0);
  std::optional<mlir::rp::PackedMask> packed = mlir::rp::packedKeepMask(mask, 16);
  ASSERT_TRUE(packed);
  EXPECT_EQ(packed->window, 0);
  EXPECT_EQ(packed->positions, func.getArgument(0));
}
}  // namespace
