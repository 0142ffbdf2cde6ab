//===- FlopRulesTest.cpp - FLOPs of a kernel call against hand counts -----===//

#include "kernels/FlopRules.h"

#include "kernels/Registry.h"

#include <gtest/gtest.h>

namespace rp::kernels {
namespace {

TEST(FlopRulesTest, MatmulIsTwoMnk) {
  // [4, 8] x [8, 16] -> [4, 16]: 4 * 16 outputs, 8 multiply-adds each = 1024 FLOPs.
  EXPECT_EQ(kernelFlops("matmul", {{4, 8}, {8, 16}}, {{4, 16}}, false), 1024.0);
  // Batched with broadcasting: [2, 3, 5, 7] x [7, 11] -> [2, 3, 5, 11]: 2*3*5*11*7*2 = 4620.
  EXPECT_EQ(kernelFlops("matmul", {{2, 3, 5, 7}, {7, 11}}, {{2, 3, 5, 11}}, false), 4620.0);
  // Batched on both sides: [2, 4, 6] x [2, 6, 3] -> [2, 4, 3]: 2*4*3 outputs * 6 * 2 = 288.
  EXPECT_EQ(kernelFlops("matmul", {{2, 4, 6}, {2, 6, 3}}, {{2, 4, 3}}, false), 288.0);
  // Vector operands: [5] x [5, 3] -> [3]: 3 * 5 * 2 = 30; [4, 5] x [5] -> [4]: 40.
  EXPECT_EQ(kernelFlops("matmul", {{5}, {5, 3}}, {{3}}, false), 30.0);
  EXPECT_EQ(kernelFlops("matmul", {{4, 5}, {5}}, {{4}}, false), 40.0);
  // A transposed first operand (the weight gradient x^T dy): [2, 8, 4]^T x [2, 8, 16] ->
  // [2, 4, 16], K = 8: 2 * 4 * 16 * 8 * 2 = 2048; transpose_b changes nothing (K from a).
  EXPECT_EQ(kernelFlops("matmul", {{2, 8, 4}, {2, 8, 16}}, {{2, 4, 16}}, false, true), 2048.0);
  EXPECT_EQ(kernelFlops("matmul", {{4, 8}, {16, 8}}, {{4, 16}}, false), 1024.0);
  // Qwen3-1.7B's LM head on 4 x 1024 tokens: 2 * 4096 * 151936 * 2048 (exact in a double).
  EXPECT_EQ(kernelFlops("matmul", {{4, 1024, 2048}, {2048, 151936}}, {{4, 1024, 151936}}, false),
            2.0 * 4096 * 151936 * 2048);
}

TEST(FlopRulesTest, AttentionCountsBothContractions) {
  // B=2, Hq=4, S=Sk=8, D=Dv=16, not causal: 2 * (2*4) * 64 pairs * 32 = 32768.
  const std::vector<Shape> ops = {{2, 4, 8, 16}, {2, 4, 8, 16}, {2, 4, 8, 16}};
  EXPECT_EQ(kernelFlops("attention", ops, {{2, 4, 8, 16}}, false), 32768.0);
  // Causal: 8 * 9 / 2 = 36 pairs per head: 2 * 8 * 36 * 32 = 18432.
  EXPECT_EQ(kernelFlops("attention", ops, {{2, 4, 8, 16}}, true), 18432.0);
  // Grouped-query (Hk = 2 < Hq = 4) costs as many FLOPs as Hq heads; Dv != D.
  // B=1, Hq=4, S=3, Sk=5, D=8, Dv=4: 2 * 4 * 15 * 12 = 1440.
  EXPECT_EQ(kernelFlops("attention", {{1, 4, 3, 8}, {1, 2, 5, 8}, {1, 2, 5, 4}}, {{1, 4, 3, 4}},
                        false),
            1440.0);
}

TEST(FlopRulesTest, AttentionVjpIsTwoAndAHalfForwards) {
  // q, k, v, out, dout of the forward above: 2.5 * 32768 = 81920; causal 2.5 * 18432 = 46080.
  const Shape q{2, 4, 8, 16};
  const std::vector<Shape> ops = {q, q, q, q, q};
  EXPECT_EQ(kernelFlops("attention_vjp", ops, {q, q, q}, false), 81920.0);
  EXPECT_EQ(kernelFlops("attention_vjp", ops, {q, q, q}, true), 46080.0);
  // Grouped-query: as many FLOPs as the Hq heads (2.5 * 1440 with the GQA shapes above, Dv = D).
  const Shape gq{1, 4, 3, 8}, gk{1, 2, 3, 8};
  EXPECT_EQ(kernelFlops("attention_vjp", {gq, gk, gk, gq, gq}, {gq, gk, gk}, false),
            2.5 * 2 * 4 * 9 * 16);
  // Not five operands: 0.
  EXPECT_EQ(kernelFlops("attention_vjp", {q, q, q}, {q, q, q}, false), 0.0);
}

TEST(FlopRulesTest, SlidingWindowCountsTheBand) {
  // S = Sk = 8, window 3: rows 0..2 see 1, 2, 3 keys, rows 3..7 see 3: 6 + 15 = 21 pairs.
  EXPECT_EQ(windowPairs(8, 8, 3), 21.0);
  EXPECT_EQ(windowPairs(8, 8, 1), 8.0);
  // A window of at least S (or none) is causal: 36 pairs.
  EXPECT_EQ(windowPairs(8, 8, 8), 36.0);
  EXPECT_EQ(windowPairs(8, 8, 100), 36.0);
  EXPECT_EQ(windowPairs(8, 8, 0), 36.0);
  // Fewer keys than queries (S = 6, Sk = 3, window 2): rows 0..2 see 1, 2, 2; row 3 sees key
  // 2 only; rows 4, 5 none: 6 pairs.
  EXPECT_EQ(windowPairs(6, 3, 2), 6.0);
  // The kernel rule: B=2, Hq=4, D=Dv=16: 2 * 8 * 21 * 32 = 10752; the VJP 2.5 times that.
  const Shape q{2, 4, 8, 16};
  EXPECT_EQ(kernelFlops("attention", {q, q, q}, {q}, true, false, 3), 10752.0);
  EXPECT_EQ(kernelFlops("attention_vjp", {q, q, q, q, q}, {q, q, q}, true, false, 3),
            2.5 * 10752.0);
  // A window of 8 = S costs the causal count.
  EXPECT_EQ(kernelFlops("attention", {q, q, q}, {q}, true, false, 8), 18432.0);
}

TEST(FlopRulesTest, CausalPairs) {
  EXPECT_EQ(causalPairs(1, 1), 1.0);
  EXPECT_EQ(causalPairs(4, 4), 10.0);     // 1 + 2 + 3 + 4
  EXPECT_EQ(causalPairs(4, 10), 10.0);    // keys beyond the last query are masked
  EXPECT_EQ(causalPairs(5, 3), 12.0);     // 1 + 2 + 3 + 3 + 3
  EXPECT_EQ(causalPairs(0, 4), 0.0);
  EXPECT_EQ(causalPairs(64, 64), 2080.0); // 64 * 65 / 2
}

// hidden [N, H], weight [V, H]: the logits 2 N H V; the VJP adds dhidden and dweight (6 N H V),
// the head's forward and backward products, with the logits computed once.
TEST(FlopRulesTest, LinearCrossEntropyIsTheHeadsProducts) {
  const double logits = 2.0 * 4096 * 2048 * 151936;
  EXPECT_EQ(kernelFlops("linear_cross_entropy", {{4096, 2048}, {151936, 2048}, {4096}}, {{}},
                        false),
            logits);
  EXPECT_EQ(kernelFlops("linear_cross_entropy_vjp",
                        {{4096, 2048}, {151936, 2048}, {4096}, {}},
                        {{}, {4096, 2048}, {151936, 2048}}, false),
            3 * logits);
  // The matmul + cross_entropy it replaces: the same forward count.
  EXPECT_EQ(kernelFlops("matmul", {{4096, 2048}, {2048, 151936}}, {{4096, 151936}}, false),
            logits);
  EXPECT_EQ(kernelFlops("linear_cross_entropy", {{4096}, {151936, 2048}}, {{}}, false), 0.0);
}

TEST(FlopRulesTest, GroupedMatmulCountsEveryRoutedRow) {
  // 6 rows of K = 4 against 3 experts' [4, 5] matrices: 2 * 6 * 4 * 5.
  EXPECT_EQ(kernelFlops("grouped_matmul", {{6, 4}, {3, 4, 5}, {4}}, {{6, 5}}, false), 240.0);
  EXPECT_EQ(kernelFlops("grouped_matmul", {{6, 4}, {3, 5, 4}, {4}}, {{6, 5}}, false), 240.0);
  EXPECT_EQ(kernelFlops("grouped_matmul_wgrad", {{6, 4}, {6, 5}, {4}}, {{3, 4, 5}}, false),
            240.0);
  EXPECT_EQ(kernelFlops("grouped_matmul", {{6, 4}, {3, 4, 5}}, {{6, 5}}, false), 0.0);
}

TEST(FlopRulesTest, OtherKernelsAndMalformedCallsCountZero) {
  EXPECT_EQ(kernelFlops("add", {{4, 8}, {4, 8}}, {{4, 8}}, false), 0.0);
  EXPECT_EQ(kernelFlops("softmax", {{4, 8}}, {{4, 8}}, false), 0.0);
  EXPECT_EQ(kernelFlops("matmul", {{4, 8}}, {{4, 16}}, false), 0.0);       // one operand
  EXPECT_EQ(kernelFlops("matmul", {{}, {8, 16}}, {{16}}, false), 0.0);     // a scalar
  EXPECT_EQ(kernelFlops("attention", {{8, 16}, {8, 16}}, {{8, 16}}, false), 0.0);
  EXPECT_EQ(kernelFlops("attention", {{16}, {8, 16}, {8, 16}}, {{8, 16}}, false), 0.0);
  // Every registry id has a rule: the contractions count, nothing else does.
  for (const KernelInfo &k : allKernels()) {
    if (k.id != "matmul" && k.id != "attention" && k.id != "linear_cross_entropy" &&
        k.id != "linear_cross_entropy_vjp" && k.id != "grouped_matmul" &&
        k.id != "grouped_matmul_wgrad") {
      EXPECT_EQ(kernelFlops(k.id, {{2, 2}, {2, 2}, {2, 2}}, {{2, 2}}, true), 0.0) << k.id;
    }
  }
}

} // namespace
} // namespace rp::kernels
