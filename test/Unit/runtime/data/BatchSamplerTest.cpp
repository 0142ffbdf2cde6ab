//===- BatchSamplerTest.cpp - causal-LM batches and the eval split --------===//
//
// runtime/data/BatchSampler.h on data holding 0, 1, ..., N-1, so a window's contents are its
// start plus 0..seq: labels are tokens shifted by one, the draw is deterministic and follows
// the documented formula, outputs in i32 and i64, the train / eval split, and the errors.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/BatchSampler.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <set>
#include <vector>

namespace rp::runtime {
namespace {

TokenData iota(int64_t n) {
  TokenData d{"iota.bin", DataFormat::Tokens, 4, std::vector<uint32_t>(static_cast<size_t>(n))};
  std::iota(d.tokens.begin(), d.tokens.end(), 0u);
  return d;
}

/// The window starts of a filled batch (data is iota, so a row's first token is its start);
/// checks each row is consecutive and labels are tokens shifted by one.
std::vector<int64_t> rowStarts(const std::vector<int64_t> &tokens,
                               const std::vector<int64_t> &labels, int64_t batch, int64_t seq) {
  std::vector<int64_t> starts;
  for (int64_t r = 0; r < batch; ++r) {
    const int64_t s = tokens[static_cast<size_t>(r * seq)];
    for (int64_t j = 0; j < seq; ++j) {
      EXPECT_EQ(tokens[static_cast<size_t>(r * seq + j)], s + j);
      EXPECT_EQ(labels[static_cast<size_t>(r * seq + j)], s + j + 1);
    }
    starts.push_back(s);
  }
  return starts;
}

TEST(BatchSamplerTest, LabelsAreTokensShiftedByOne) {
  TokenData data = iota(1000);
  StatusOr<BatchSampler> s = BatchSampler::create(data, 4, 16, 42);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(s->trainTokens(), 900);
  EXPECT_EQ(s->evalTokens(), 100);
  std::vector<int64_t> tokens(64), labels(64);
  for (int64_t step = 0; step < 20; ++step) {
    ASSERT_TRUE(s->fillTrain(step, 1, DType::I64, tokens.data(), labels.data()).ok());
    for (int64_t start : rowStarts(tokens, labels, 4, 16)) {
      EXPECT_GE(start, 0);
      EXPECT_LE(start + 16, 899); // the label of the last position is still a train token
    }
  }
}

// The draw is the formula of the header: a resumed run can recompute it.
TEST(BatchSamplerTest, DrawFollowsTheDocumentedFormula) {
  TokenData data = iota(5000);
  const uint64_t seed = 1234;
  StatusOr<BatchSampler> s = BatchSampler::create(data, 3, 8, seed);
  ASSERT_TRUE(s.ok());
  std::vector<int64_t> tokens(24), labels(24);
  ASSERT_TRUE(s->fillTrain(7, 2, DType::I64, tokens.data(), labels.data()).ok());
  const uint64_t range = static_cast<uint64_t>(s->trainTokens() - 8);
  for (uint64_t r = 0; r < 3; ++r) {
    uint64_t h = splitmix64(splitmix64(splitmix64(splitmix64(seed) ^ 7u) ^ 2u) ^ r);
    __extension__ typedef unsigned __int128 U128;
    const auto start = static_cast<int64_t>((static_cast<U128>(h) * range) >> 64);
    EXPECT_EQ(tokens[r * 8], start) << "row " << r;
  }
  // splitmix64 reference value (Vigna's splitmix64.c with state 0: first output).
  EXPECT_EQ(splitmix64(0), 0xE220A8397B1DCDAFull);
}

TEST(BatchSamplerTest, Deterministic) {
  TokenData data = iota(100000);
  StatusOr<BatchSampler> a = BatchSampler::create(data, 8, 32, 7);
  StatusOr<BatchSampler> b = BatchSampler::create(data, 8, 32, 7);
  StatusOr<BatchSampler> c = BatchSampler::create(data, 8, 32, 8);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  std::vector<int64_t> t1(256), l1(256), t2(256), l2(256);
  ASSERT_TRUE(a->fillTrain(5, 3, DType::I64, t1.data(), l1.data()).ok());
  ASSERT_TRUE(b->fillTrain(5, 3, DType::I64, t2.data(), l2.data()).ok());
  EXPECT_EQ(t1, t2);
  EXPECT_EQ(l1, l2);
  // Another step, micro-batch or seed draws other windows.
  ASSERT_TRUE(a->fillTrain(6, 3, DType::I64, t2.data(), l2.data()).ok());
  EXPECT_NE(t1, t2);
  ASSERT_TRUE(a->fillTrain(5, 4, DType::I64, t2.data(), l2.data()).ok());
  EXPECT_NE(t1, t2);
  ASSERT_TRUE(c->fillTrain(5, 3, DType::I64, t2.data(), l2.data()).ok());
  EXPECT_NE(t1, t2);
  // Rows of one micro-batch differ.
  std::vector<int64_t> starts = rowStarts(t1, l1, 8, 32);
  EXPECT_GT(std::set<int64_t>(starts.begin(), starts.end()).size(), 1u);
}

TEST(BatchSamplerTest, I32AndI64Agree) {
  TokenData data = iota(3000);
  StatusOr<BatchSampler> s = BatchSampler::create(data, 2, 10, 99);
  ASSERT_TRUE(s.ok());
  std::vector<int64_t> t64(20), l64(20);
  std::vector<int32_t> t32(20), l32(20);
  ASSERT_TRUE(s->fillTrain(3, 0, DType::I64, t64.data(), l64.data()).ok());
  ASSERT_TRUE(s->fillTrain(3, 0, DType::I32, t32.data(), l32.data()).ok());
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(t32[i], t64[i]);
    EXPECT_EQ(l32[i], l64[i]);
  }
  Status bad = s->fillTrain(3, 0, DType::F32, t32.data(), l32.data());
  EXPECT_EQ(bad.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(s->fillTrain(-1, 0, DType::I32, t32.data(), l32.data()).code(),
            StatusCode::InvalidArgument);
  EXPECT_EQ(s->fillTrain(0, 0, DType::I32, nullptr, l32.data()).code(),
            StatusCode::InvalidArgument);
}

// Token ids and labels each in their own dtype; each buffer gets exactly batch * seq elements
// (a guard after each catches an overrun), for training and eval batches.
TEST(BatchSamplerTest, TokensAndLabelsInDifferentDTypes) {
  TokenData data = iota(3000);
  StatusOr<BatchSampler> s = BatchSampler::create(data, 2, 10, 99);
  ASSERT_TRUE(s.ok());
  std::vector<int64_t> t64(20), l64(20);
  ASSERT_TRUE(s->fillTrain(3, 1, DType::I64, t64.data(), l64.data()).ok());
  std::vector<int64_t> tWide(21, -7);
  std::vector<int32_t> lNarrow(21, -7);
  ASSERT_TRUE(s->fillTrain(3, 1, DType::I64, tWide.data(), DType::I32, lNarrow.data()).ok());
  std::vector<int32_t> tNarrow(21, -7);
  std::vector<int64_t> lWide(21, -7);
  ASSERT_TRUE(s->fillTrain(3, 1, DType::I32, tNarrow.data(), DType::I64, lWide.data()).ok());
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(tWide[i], t64[i]);
    EXPECT_EQ(lNarrow[i], l64[i]);
    EXPECT_EQ(tNarrow[i], t64[i]);
    EXPECT_EQ(lWide[i], l64[i]);
  }
  EXPECT_EQ(tWide[20], -7);
  EXPECT_EQ(lNarrow[20], -7);
  EXPECT_EQ(tNarrow[20], -7);
  EXPECT_EQ(lWide[20], -7);

  ASSERT_GT(s->evalBatches(), 0);
  ASSERT_TRUE(s->fillEval(0, DType::I64, t64.data(), l64.data()).ok());
  ASSERT_TRUE(s->fillEval(0, DType::I32, tNarrow.data(), DType::I64, lWide.data()).ok());
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(tNarrow[i], t64[i]);
    EXPECT_EQ(lWide[i], l64[i]);
  }
  EXPECT_EQ(s->fillTrain(3, 1, DType::I32, tNarrow.data(), DType::F32, lWide.data()).code(),
            StatusCode::InvalidArgument);
}

TEST(BatchSamplerTest, ShortDataIsAnError) {
  TokenData data = iota(8);
  StatusOr<BatchSampler> s = BatchSampler::create(data, 1, 8, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(s.status().message(), "iota.bin holds 8 tokens; one window of --seq 8 needs 9");
  EXPECT_EQ(BatchSampler::create(data, 0, 4, 0).status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(BatchSampler::create(data, 1, 0, 0).status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(BatchSampler::create(data, 1, 4, 0, 1.0).status().code(),
            StatusCode::InvalidArgument);
}

// Exactly one window: no eval split, the only window is [0, seq].
TEST(BatchSamplerTest, OneWindowTrainsOnEverything) {
  TokenData data = iota(9);
  StatusOr<BatchSampler> s = BatchSampler::create(data, 2, 8, 5);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(s->evalTokens(), 0);
  EXPECT_EQ(s->evalBatches(), 0);
  EXPECT_EQ(s->trainTokens(), 9);
  std::vector<int32_t> t(16), l(16);
  ASSERT_TRUE(s->fillTrain(0, 0, DType::I32, t.data(), l.data()).ok());
  EXPECT_EQ(t[8], 0);
  EXPECT_EQ(l[15], 8);
  EXPECT_EQ(s->fillEval(0, DType::I32, t.data(), l.data()).code(), StatusCode::OutOfRange);
}

TEST(BatchSamplerTest, EvalSplitIsTheLastTenPercentAndDisjoint) {
  const int64_t n = 10000, batch = 4, seq = 16;
  TokenData data = iota(n);
  StatusOr<BatchSampler> s = BatchSampler::create(data, batch, seq, 3);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->evalTokens(), 1000);
  EXPECT_EQ(s->trainTokens(), 9000);
  // (1000 - 1) / 16 = 62 windows: 15 full batches of 4.
  ASSERT_EQ(s->evalBatches(), 15);
  std::vector<int64_t> t(batch * seq), l(batch * seq);
  int64_t expectedStart = 9000;
  for (int64_t b = 0; b < s->evalBatches(); ++b) {
    ASSERT_TRUE(s->fillEval(b, DType::I64, t.data(), l.data()).ok());
    for (int64_t start : rowStarts(t, l, batch, seq)) {
      EXPECT_EQ(start, expectedStart); // consecutive windows, overlapping by one token
      EXPECT_GE(start, 9000);
      EXPECT_LT(start + seq, n);
      expectedStart += seq;
    }
  }
  EXPECT_EQ(s->fillEval(15, DType::I64, t.data(), l.data()).code(), StatusCode::OutOfRange);
  // Training windows never reach into the eval split.
  for (int64_t step = 0; step < 200; ++step) {
    ASSERT_TRUE(s->fillTrain(step, 0, DType::I64, t.data(), l.data()).ok());
    for (int64_t start : rowStarts(t, l, batch, seq))
      EXPECT_LT(start + seq, 9000);
  }
}

// An eval part too small for one eval batch gives no split.
TEST(BatchSamplerTest, NoSplitWhenEvalHoldsNoBatch) {
  TokenData data = iota(200); // eval part: 20 tokens < 4 * 8 + 1
  StatusOr<BatchSampler> s = BatchSampler::create(data, 4, 8, 3);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->evalTokens(), 0);
  EXPECT_EQ(s->trainTokens(), 200);
  StatusOr<BatchSampler> none = BatchSampler::create(data, 1, 8, 3, 0.0);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->evalBatches(), 0);
}

TEST(BatchSamplerTest, MaskedLabelsBecomeTheIgnoreIndex) {
  TokenData d = iota(200);
  d.lossMask.assign(200, 0);
  for (size_t i = 0; i < d.lossMask.size(); ++i)
    d.lossMask[i] = i % 3 == 0 ? 1 : 0; // token i is trained as a label iff i % 3 == 0
  StatusOr<BatchSampler> s = BatchSampler::create(d, 3, 5, 11, 0.0);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  s->setIgnoreIndex(-7);
  for (DType dtype : {DType::I64, DType::I32}) {
    std::vector<int64_t> tokens(15), labels(15);
    std::vector<int32_t> labels32(15);
    void *l = dtype == DType::I64 ? static_cast<void *>(labels.data()) : labels32.data();
    int64_t trained = -1;
    ASSERT_TRUE(s->fillTrain(4, 1, DType::I64, tokens.data(), dtype, l, &trained).ok());
    int64_t expected = 0;
    for (int64_t j = 0; j < 15; ++j) {
      const int64_t next = tokens[static_cast<size_t>(j)] + 1; // the label's token (iota data)
      const int64_t label = dtype == DType::I64 ? labels[static_cast<size_t>(j)]
                                                : labels32[static_cast<size_t>(j)];
      EXPECT_EQ(label, next % 3 == 0 ? next : -7) << "position " << j;
      expected += next % 3 == 0;
    }
    EXPECT_EQ(trained, expected);
  }
  // Without a mask every label is trained.
  TokenData plain = iota(200);
  StatusOr<BatchSampler> p = BatchSampler::create(plain, 3, 5, 11, 0.0);
  ASSERT_TRUE(p.ok());
  std::vector<int64_t> tokens(15), labels(15);
  int64_t trained = -1;
  ASSERT_TRUE(p->fillTrain(0, 0, DType::I64, tokens.data(), DType::I64, labels.data(), &trained).ok());
  EXPECT_EQ(trained, 15);
  // A mask of another length than the tokens is refused.
  d.lossMask.pop_back();
  EXPECT_EQ(BatchSampler::create(d, 3, 5, 11).status().code(), StatusCode::InvalidArgument);
}

/// Packed data of `rows` rows of 8 tokens: row r holds token ids 100 r + j; each row has a
/// document of 3 tokens, one of 4 and a padding token (mask: the first token of each document
/// untrained, the padding untrained); the last `evalRows` rows are held out.
TokenData packedRows(int64_t rows, int64_t evalRows) {
  TokenData d{"packed.bin", DataFormat::Tokens, 4, {}, {}};
  const uint32_t pos[8] = {0, 1, 2, 0, 1, 2, 3, 0};
  const uint8_t mask[8] = {0, 1, 1, 0, 1, 1, 1, 0};
  for (int64_t r = 0; r < rows; ++r)
    for (uint32_t j = 0; j < 8; ++j) {
      d.tokens.push_back(static_cast<uint32_t>(100 * r) + j);
      d.positions.push_back(pos[j]);
      d.lossMask.push_back(mask[j]);
    }
  d.rowLength = 8;
  d.evalRows = evalRows;
  return d;
}

// A window is a row; labels never cross into another document or row; positions are the
// row's.
TEST(BatchSamplerTest, PackedWindowsAreRows) {
  TokenData d = packedRows(20, 4);
  StatusOr<BatchSampler> s = BatchSampler::create(d, 2, 8, 5);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(s->trainTokens(), 16 * 8);
  EXPECT_EQ(s->evalTokens(), 4 * 8);
  EXPECT_EQ(s->evalBatches(), 2);
  s->setIgnoreIndex(-100);
  const int64_t expectedLabels[8] = {1, 2, -100, 4, 5, 6, -100, -100}; // + 100 r when >= 0
  std::set<int64_t> rowsSeen;
  for (int64_t step = 0; step < 40; ++step) {
    std::vector<int64_t> t(16), l(16), p(16);
    int64_t trained = -1;
    ASSERT_TRUE(s->fillTrain(step, 0, DType::I64, t.data(), DType::I64, l.data(), &trained,
                             DType::I64, p.data())
                    .ok());
    EXPECT_EQ(trained, 2 * 5);
    for (int64_t r = 0; r < 2; ++r) {
      const int64_t row = t[static_cast<size_t>(8 * r)] / 100;
      EXPECT_LT(row, 16) << "a training row is held out";
      rowsSeen.insert(row);
      for (int64_t j = 0; j < 8; ++j) {
        const size_t i = static_cast<size_t>(8 * r + j);
        EXPECT_EQ(t[i], 100 * row + j);
        EXPECT_EQ(p[i], d.positions[static_cast<size_t>(j)]);
        EXPECT_EQ(l[i], expectedLabels[j] < 0 ? -100 : 100 * row + expectedLabels[j])
            << "row " << row << " position " << j;
      }
    }
  }
  EXPECT_GT(rowsSeen.size(), 8u);
  // Eval batch 1 holds eval rows 2 and 3: file rows 18 and 19, in i32.
  std::vector<int32_t> t(16), l(16), p(16);
  ASSERT_TRUE(s->fillEval(1, DType::I32, t.data(), DType::I32, l.data(), nullptr, DType::I32,
                          p.data())
                  .ok());
  EXPECT_EQ(t[0], 1800);
  EXPECT_EQ(t[8], 1900);
  EXPECT_EQ(p[5], 2);
  EXPECT_EQ(l[15], -100);
  EXPECT_EQ(s->fillEval(2, DType::I32, t.data(), l.data()).code(), StatusCode::OutOfRange);
}

TEST(BatchSamplerTest, PackedEvalSplitAndErrors) {
  // No eval rows recorded: the last 10% of rows when they hold a batch.
  TokenData d = packedRows(40, 0);
  StatusOr<BatchSampler> s = BatchSampler::create(d, 2, 8, 5);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->evalTokens(), 4 * 8);
  StatusOr<BatchSampler> big = BatchSampler::create(d, 5, 8, 5);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->evalTokens(), 0);
  // Windows other than the rows, and files that hold only eval rows, are refused.
  Status wrong = BatchSampler::create(d, 2, 16, 5).status();
  EXPECT_EQ(wrong.code(), StatusCode::InvalidArgument);
  EXPECT_NE(wrong.message().find("packed into rows of 8 tokens, but the plan's sequence is 16 "
                                 "(prepare the data with --seq 16)"),
            std::string::npos)
      << wrong.message();
  TokenData all = packedRows(3, 3);
  EXPECT_EQ(BatchSampler::create(all, 1, 8, 5).status().code(), StatusCode::InvalidArgument);
  // Positions for data that is not packed: 0..seq-1 in every window.
  TokenData plain = iota(100);
  StatusOr<BatchSampler> u = BatchSampler::create(plain, 2, 5, 1, 0.0);
  ASSERT_TRUE(u.ok());
  std::vector<int64_t> t(10), l(10), p(10);
  ASSERT_TRUE(u->fillTrain(0, 0, DType::I64, t.data(), DType::I64, l.data(), nullptr, DType::I64,
                           p.data())
                  .ok());
  EXPECT_EQ(p, (std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4}));
  EXPECT_EQ(u->fillTrain(0, 0, DType::I64, t.data(), DType::I64, l.data(), nullptr, DType::F32,
                         p.data())
                .code(),
            StatusCode::InvalidArgument);
}

TEST(BatchSamplerTest, PackedDataNeedsAPositionInput) {
  TokenData d = packedRows(4, 0);
  Status s = checkPositionFeed(d, false, 0, 8);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("packed.bin packs several documents into each row of 8 tokens, but "
                             "the model has no `position_ids` input"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(checkPositionFeed(d, true, 0, 8).ok());
  EXPECT_TRUE(checkPositionFeed(d, true, 4, 8).ok()); // the longest document has 4 positions
  EXPECT_EQ(checkPositionFeed(d, true, 3, 8).code(), StatusCode::InvalidArgument);
  TokenData plain = iota(100);
  EXPECT_TRUE(checkPositionFeed(plain, false, 0, 8).ok());
  EXPECT_TRUE(checkPositionFeed(plain, true, 8, 8).ok());
  EXPECT_EQ(checkPositionFeed(plain, true, 7, 8).code(), StatusCode::InvalidArgument);
}

} // namespace
} // namespace rp::runtime
