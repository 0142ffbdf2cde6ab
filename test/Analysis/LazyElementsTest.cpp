//===- LazyElementsTest.cpp - LazyElements against the interpreter --------===//
//
// Each case is a function of constants only, `func.func @f() -> tensor<...>`, parsed from
// MLIR text. The reference interpreter (dialects/Graph/Eval, float32 precision: every op's
// result rounded to its element type) computes the whole result; LazyElements (passes/
// Analysis/LazyElements.h) evaluates it one element at a time, and every element must be equal
// (exactly: both round each op's result to its element type), one at a time and row by row.
// The cases cover every op
// LazyElements supports, broadcasting, reshapes that merge dimensions, f32, bf16, i64 and i1.
// Values that depend on an argument, or ops it does not support, give no evaluator.
//
//===----------------------------------------------------------------------===//

#include "passes/Analysis/LazyElements.h"

#include "compiler/InitAll.h"
#include "dialects/Graph/Eval/Evaluator.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "kernels/cpu/Cast.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace mlir;
using ::rp::base::DType;
using ::rp::base::HostTensor;

namespace {

class LazyElementsTest : public ::testing::Test {
protected:
  LazyElementsTest() {
    DialectRegistry registry;
    mlir::rp::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Parses `body` as the module and returns @f's result value.
  Value parseResult(const std::string &body) {
    module = parseSourceString<ModuleOp>(body, &context);
    EXPECT_TRUE(module) << body;
    if (!module)
      return {};
    func = module->lookupSymbol<func::FuncOp>("f");
    return func.getBody().front().getTerminator()->getOperand(0);
  }

  /// The interpreter's result of @f, widened to f64.
  std::vector<double> interpret() {
    auto results = mlir::rp::graph::runFunction(
        func, {}, [](mlir::rp::graph::ParamOp) -> FailureOr<HostTensor> { return failure(); },
        mlir::rp::graph::EvalPrecision::F32);
    EXPECT_TRUE(succeeded(results));
    const HostTensor &r = (*results)[0];
    HostTensor wide(DType::F64, r.shape());
    EXPECT_TRUE(::rp::kernels::cpu::cast(r, wide).ok());
    return std::vector<double>(wide.data<double>(), wide.data<double>() + wide.numElements());
  }

  /// Every element of @f's result by LazyElements equals the interpreter's.
  void expectMatches(const std::string &body) {
    Value root = parseResult(body);
    ASSERT_TRUE(root);
    std::optional<mlir::rp::LazyElements> lazy = mlir::rp::LazyElements::build(root);
    ASSERT_TRUE(lazy.has_value()) << body;
    std::vector<double> expected = interpret();
    ArrayRef<int64_t> shape = lazy->shape();
    std::vector<int64_t> index(shape.size(), 0);
    for (size_t n = 0; n < expected.size(); ++n) {
      int64_t rest = static_cast<int64_t>(n);
      for (size_t d = shape.size(); d-- > 0;) {
        index[d] = rest % shape[d];
        rest /= shape[d];
      }
      ASSERT_EQ(lazy->at(index), expected[n]) << "element " << n << " of\n" << body;
    }
    // Row by row: the same values.
    int64_t width = shape.empty() ? 1 : shape.back();
    std::vector<double> row(width);
    for (size_t n = 0; !shape.empty() && n < expected.size(); n += width) {
      int64_t rest = static_cast<int64_t>(n);
      for (size_t d = shape.size(); d-- > 0;) {
        index[d] = rest % shape[d];
        rest /= shape[d];
      }
      lazy->row(index, row);
      for (int64_t j = 0; j < width; ++j)
        ASSERT_EQ(row[j], expected[n + j]) << "row element " << n + j << " of\n" << body;
    }
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
};

TEST_F(LazyElementsTest, CausalMaskOfTheDynamoExporter) {
  std::string body = R"mlir(
func.func @f() -> tensor<2x1x4x4xf32> {
  %b0 = graph.constant dense<0> : tensor<2x1x4x1xi64>
  %b1 = graph.constant dense<0> : tensor<2x1x1x4xi64>
  %same = graph.compare eq, %b0, %b1 : (tensor<2x1x4x1xi64>, tensor<2x1x1x4xi64>) -> tensor<2x1x4x4xi1>
  %r = graph.range {start = 0 : i64, limit = 4 : i64, delta = 1 : i64} : tensor<4xi64>
  %i = graph.reshape %r : tensor<4xi64> to tensor<1x1x4x1xi64>
  %j = graph.reshape %r : tensor<4xi64> to tensor<1x1x1x4xi64>
  %le = graph.compare le, %j, %i : (tensor<1x1x1x4xi64>, tensor<1x1x4x1xi64>) -> tensor<1x1x4x4xi1>
  %keep = graph.logical_and %same, %le : (tensor<2x1x4x4xi1>, tensor<1x1x4x4xi1>) -> tensor<2x1x4x4xi1>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %min = graph.constant dense<-3.40282347E+38> : tensor<f32>
  %m = graph.where %keep, %zero, %min : (tensor<2x1x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<2x1x4x4xf32>
  return %m : tensor<2x1x4x4xf32>
}
)mlir";
  expectMatches(body);
  // The batch comparison is the same everywhere: only the query and key dims vary.
  std::optional<mlir::rp::LazyElements> lazy = mlir::rp::LazyElements::build(parseResult(body));
  ASSERT_TRUE(lazy.has_value());
  EXPECT_FALSE(lazy->varyingDims().test(0));
  EXPECT_FALSE(lazy->varyingDims().test(1));
  EXPECT_TRUE(lazy->varyingDims().test(2));
  EXPECT_TRUE(lazy->varyingDims().test(3));
}

TEST_F(LazyElementsTest, FloatArithmeticCastsAndBroadcasts) {
  expectMatches(R"mlir(
func.func @f() -> tensor<2x3x4xf32> {
  %r = graph.range {start = 1.5 : f64, limit = 5.5 : f64, delta = 1.0 : f64} : tensor<4xf32>
  %c = graph.constant dense<[[0.1], [-0.7], [3.0]]> : tensor<3x1xf32>
  %a = graph.add %r, %c : (tensor<4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  %three = graph.constant dense<3.0> : tensor<f32>
  %d = graph.div %a, %three : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %n = graph.neg %d : tensor<3x4xf32>
  %s = graph.sub %n, %c : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  %m = graph.mul %s, %d : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %gt = graph.compare gt, %m, %three : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xi1>
  %f = graph.cast %gt : tensor<3x4xi1> to tensor<3x4xf32>
  %w = graph.where %gt, %m, %f : (tensor<3x4xi1>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %e = graph.expand %w : tensor<3x4xf32> to tensor<2x3x4xf32>
  return %e : tensor<2x3x4xf32>
}
)mlir");
}

TEST_F(LazyElementsTest, ReshapesTransposesAndSlices) {
  expectMatches(R"mlir(
func.func @f() -> tensor<3x2x2xi64> {
  %r = graph.range {start = 0 : i64, limit = 24 : i64, delta = 1 : i64} : tensor<24xi64>
  %a = graph.reshape %r : tensor<24xi64> to tensor<2x3x4xi64>
  %t = graph.transpose %a {permutation = array<i64: 1, 2, 0>} : (tensor<2x3x4xi64>) -> tensor<3x4x2xi64>
  %b = graph.reshape %t : tensor<3x4x2xi64> to tensor<3x2x4xi64>
  %s = graph.slice %b {axes = array<i64: 2>, starts = array<i64: 3>, ends = array<i64: -1>, steps = array<i64: -2>} : (tensor<3x2x4xi64>) -> tensor<3x2x2xi64>
  %k = graph.constant dense<[7, -2]> : tensor<2xi64>
  %m = graph.mul %s, %k : (tensor<3x2x2xi64>, tensor<2xi64>) -> tensor<3x2x2xi64>
  %x = graph.sub %m, %s : (tensor<3x2x2xi64>, tensor<3x2x2xi64>) -> tensor<3x2x2xi64>
  return %x : tensor<3x2x2xi64>
}
)mlir");
}

TEST_F(LazyElementsTest, RowsThroughShapeOpsThatKeepTheLastDim) {
  expectMatches(R"mlir(
func.func @f() -> tensor<2x3x2x5xf32> {
  %r = graph.range {start = 0 : i64, limit = 60 : i64, delta = 1 : i64} : tensor<60xi64>
  %r2 = graph.reshape %r : tensor<60xi64> to tensor<12x5xi64>
  %a = graph.reshape %r2 : tensor<12x5xi64> to tensor<3x2x2x5xi64>
  %p = graph.transpose %a {permutation = array<i64: 1, 2, 0, 3>} : (tensor<3x2x2x5xi64>) -> tensor<2x2x3x5xi64>
  %t = graph.reshape %p : tensor<2x2x3x5xi64> to tensor<4x3x5xi64>
  %s = graph.slice %t {axes = array<i64: 0>, starts = array<i64: 1>, ends = array<i64: 4>, steps = array<i64: 2>} : (tensor<4x3x5xi64>) -> tensor<2x3x5xi64>
  %f = graph.cast %s : tensor<2x3x5xi64> to tensor<2x3x5xf32>
  %b = graph.reshape %f : tensor<2x3x5xf32> to tensor<2x3x1x5xf32>
  %e = graph.expand %b : tensor<2x3x1x5xf32> to tensor<2x3x2x5xf32>
  %u = graph.trilu %e {k = 1 : i64, upper} : tensor<2x3x2x5xf32>
  %h = graph.constant dense<0.5> : tensor<f32>
  %m = graph.mul %u, %h : (tensor<2x3x2x5xf32>, tensor<f32>) -> tensor<2x3x2x5xf32>
  return %m : tensor<2x3x2x5xf32>
}
)mlir");
}

TEST_F(LazyElementsTest, TriluAndLogicalOps) {
  expectMatches(R"mlir(
func.func @f() -> tensor<2x5x5xi1> {
  %one = graph.constant dense<true> : tensor<5x5xi1>
  %lower = graph.trilu %one {k = -1 : i64} : tensor<5x5xi1>
  %upper = graph.trilu %one {k = 2 : i64, upper} : tensor<5x5xi1>
  %or = graph.logical_or %lower, %upper : (tensor<5x5xi1>, tensor<5x5xi1>) -> tensor<5x5xi1>
  %not = graph.logical_not %or : tensor<5x5xi1>
  %pad = graph.constant dense<[[[true, true, true, false, true]], [[false, true, true, true, true]]]> : tensor<2x1x5xi1>
  %and = graph.logical_and %not, %pad : (tensor<5x5xi1>, tensor<2x1x5xi1>) -> tensor<2x5x5xi1>
  return %and : tensor<2x5x5xi1>
}
)mlir");
}

TEST_F(LazyElementsTest, Bf16RoundsEachOp) {
  expectMatches(R"mlir(
func.func @f() -> tensor<8xbf16> {
  %r = graph.range {start = 0 : i64, limit = 8 : i64, delta = 1 : i64} : tensor<8xi64>
  %f = graph.cast %r : tensor<8xi64> to tensor<8xbf16>
  %c = graph.constant dense<0.3> : tensor<bf16>
  %m = graph.mul %f, %c : (tensor<8xbf16>, tensor<bf16>) -> tensor<8xbf16>
  %big = graph.constant dense<255.0> : tensor<bf16>
  %a = graph.add %m, %big : (tensor<8xbf16>, tensor<bf16>) -> tensor<8xbf16>
  return %a : tensor<8xbf16>
}
)mlir");
}

TEST_F(LazyElementsTest, ArgumentsAndUnsupportedOpsGiveNoEvaluator) {
  Value fromArg = parseResult(R"mlir(
func.func @f(%pad: tensor<4xi1>) -> tensor<4xi1> {
  %t = graph.constant dense<true> : tensor<4xi1>
  %a = graph.logical_and %t, %pad : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return %a : tensor<4xi1>
}
)mlir");
  ASSERT_TRUE(fromArg);
  EXPECT_FALSE(mlir::rp::LazyElements::build(fromArg).has_value());
  Value softmax = parseResult(R"mlir(
func.func @f() -> tensor<4xf32> {
  %c = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %s = graph.softmax %c {axis = 0 : i64} : tensor<4xf32>
  return %s : tensor<4xf32>
}
)mlir");
  ASSERT_TRUE(softmax);
  EXPECT_FALSE(mlir::rp::LazyElements::build(softmax).has_value());
}

} // namespace
