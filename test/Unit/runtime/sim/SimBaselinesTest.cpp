//===- SimBaselinesTest.cpp - Schedules against hand-computed timelines ---===//
//
// (a) Every schedule on a small case (2 GPUs, 2 micro-batches, 3 or 4 layers of integer costs)
//     against a timeline worked out by hand in the comments: the exact start and end of every
//     compute span.
// (b) The paper replay: the profiles of examples/profiles (the RoundPipe artifact's measured
//     times, 8 GPUs, 16 micro-batches) against the bubble ratios of the authors' simulator
//     (ITcarrot/RoundPipe-artifact pp-simulate/log), within 1.5 points.
//
// Costs of the small cases, per micro-batch: every block fwd 1, bwd 2 (recompute = fwd 1);
// the tail fwd 1, bwd 2. A block's classic backward is recompute + bwd = 3; the tail's work
// (fwd + bwd = 3) rounds to 1 unit of a block's work (4), so every layer is one unit.
// comm_ms = 2 means each hop is a 1 ms device-to-host copy then a 1 ms host-to-device copy.
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/Baselines.h"
#include "runtime/sim/Compare.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>

#ifndef RP_SOURCE_DIR
#error "RP_SOURCE_DIR must point at the repository root"
#endif

namespace {

using namespace rp::sim;
using rp::partition::LayerProfile;
using rp::partition::Profile;

/// `blocks` blocks (fwd 1, bwd 2) and the tail (fwd 1, bwd 2); comm_ms when >= 0.
Profile smallProfile(int blocks, double commMs, uint64_t paramBytes = 0) {
  Profile p;
  for (int i = 0; i <= blocks; ++i) {
    LayerProfile l;
    l.name = i == blocks ? "tail" : "block_" + std::to_string(i);
    l.fwdMs = 1;
    l.bwdMs = 2;
    l.recomputeMs = 1;
    l.paramBytes = paramBytes;
    l.actBytes = 1000;
    p.layers.push_back(l);
  }
  if (commMs >= 0)
    p.commMs = commMs;
  return p;
}

CompareOptions smallOptions() {
  CompareOptions o;
  o.gpus = 2;
  o.microBatches = 2;
  return o;
}

/// Compute spans by (device, label) -> (start, end).
std::map<std::pair<int, std::string>, std::pair<double, double>>
computeSpans(const Timeline &t) {
  std::map<std::pair<int, std::string>, std::pair<double, double>> out;
  for (const Span &s : t.spans)
    if (s.lane == Lane::Compute)
      out[{s.device, s.label}] = {s.startMs, s.endMs};
  return out;
}

struct Expected {
  int device;
  const char *label;
  double start, end;
};

/// Checks that the compute spans are exactly `expected` (no more, no fewer).
void expectCompute(const ScheduleResult &r, const std::vector<Expected> &expected) {
  auto spans = computeSpans(r.timeline);
  EXPECT_EQ(spans.size(), expected.size()) << r.name;
  for (const Expected &e : expected) {
    auto it = spans.find({e.device, e.label});
    ASSERT_NE(it, spans.end()) << r.name << ": no span '" << e.label << "' on GPU " << e.device;
    EXPECT_DOUBLE_EQ(it->second.first, e.start) << r.name << " " << e.label << " start";
    EXPECT_DOUBLE_EQ(it->second.second, e.end) << r.name << " " << e.label << " end";
  }
}

ScheduleResult run(const std::string &name, const Profile &p, const CompareOptions &o) {
  auto r = simulateSchedule(name, p, o);
  EXPECT_TRUE(r.ok()) << r.status().toString();
  return r.ok() ? *r : ScheduleResult{};
}

//===----------------------------------------------------------------------===//
// (a) Small cases
//===----------------------------------------------------------------------===//

// 3 layers on 2 GPUs: 3 units, 1 + 2 extra on the last: stage 0 = block0 (F 1, B 1+2 = 3),
// stage 1 = block1 + tail (F 1+1 = 2, B = recompute 1 + bwd 2+2 = 5).
TEST(SimBaselinesTest, LayerSplitAndUnits) {
  Profile p = smallProfile(2, 2);
  EXPECT_EQ(layerUnits(p), (std::vector<int>{1, 1, 1}));
  auto stages = splitLayers(p, 2);
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0].begin, 0);
  EXPECT_EQ(stages[0].end, 1);
  EXPECT_EQ(stages[1].begin, 1);
  EXPECT_EQ(stages[1].end, 3);
  // More stages than units: the leading stages stay empty.
  auto five = splitLayers(p, 5);
  EXPECT_EQ(five[0].size() + five[1].size(), 0);
  EXPECT_EQ(five[2].size() + five[3].size() + five[4].size(), 3);
  EXPECT_EQ(defaultChunks(p, 2), 1);
}

// GPipe, comm 2 (hop = D2H 1 + H2D 1):
//   GPU0 F0 mb0 [0,1], F0 mb1 [1,2]; D2H [1,2] [2,3]; GPU1 H2D [2,3] [3,4]
//   GPU1 F1 mb0 [3,5], F1 mb1 max(5,4) = [5,7], B1 mb0 [7,12], B1 mb1 [12,17]
//   GPU1 D2H B1 mb0 out [12,13] -> GPU0 H2D [13,14]: B0 mb0 [14,17]
//   B1 mb1 out [17,18] -> [18,19]: B0 mb1 max(17,19) = [19,22]
TEST(SimBaselinesTest, GpipeByHand) {
  ScheduleResult r = run("gpipe", smallProfile(2, 2), smallOptions());
  expectCompute(r, {{0, "F0 mb0", 0, 1},
                    {0, "F0 mb1", 1, 2},
                    {1, "F1 mb0", 3, 5},
                    {1, "F1 mb1", 5, 7},
                    {1, "B1 mb0", 7, 12},
                    {1, "B1 mb1", 12, 17},
                    {0, "B0 mb0", 14, 17},
                    {0, "B0 mb1", 19, 22}});
  // Busy 8 + 14 = 22 of 2 x 22.
  EXPECT_DOUBLE_EQ(r.stats.makespanMs, 22);
  EXPECT_DOUBLE_EQ(r.bubblePercent, 50);
  EXPECT_EQ(r.description, "2 stages: 1,1+tail");
}

// 1F1B: GPU0 (rank 0) warms up with 2 forwards, GPU1 with 1: F1 mb0, B1 mb0, F1 mb1, B1 mb1.
//   GPU0 F0 mb0 [0,1], F0 mb1 [1,2]; GPU1 F1 mb0 [3,5], B1 mb0 [5,10],
//   F1 mb1 (input there at 4) [10,12], B1 mb1 [12,17]
//   B1 mb0 out D2H [10,11], H2D [11,12]: B0 mb0 [12,15]; B1 mb1 out [17,18], [18,19]:
//   B0 mb1 [19,22]
TEST(SimBaselinesTest, OneFOneBByHand) {
  ScheduleResult r = run("1f1b", smallProfile(2, 2), smallOptions());
  expectCompute(r, {{0, "F0 mb0", 0, 1},
                    {0, "F0 mb1", 1, 2},
                    {1, "F1 mb0", 3, 5},
                    {1, "B1 mb0", 5, 10},
                    {1, "F1 mb1", 10, 12},
                    {1, "B1 mb1", 12, 17},
                    {0, "B0 mb0", 12, 15},
                    {0, "B0 mb1", 19, 22}});
  EXPECT_DOUBLE_EQ(r.stats.makespanMs, 22);
}

// ZB-H1 with W = 1/2 of bwd: stage 0 B = 1 + 1 = 2, W = 1; stage 1 B = 1 + 2 = 3, W = 2.
// GPU0 (r = 0): F F B0 W0 B1 W1; GPU1 (r = 1, W one micro-batch late): F B F B W0 W1.
//   GPU1 F1 mb0 [3,5], B1 mb0 [5,8], F1 mb1 [8,10], B1 mb1 [10,13], W1 mb0 [13,15],
//   W1 mb1 [15,17]
//   B1 mb0 out [8,9] -> [9,10]: GPU0 B0 mb0 [10,12], W0 mb0 [12,13]
//   B1 mb1 out [13,14] -> [14,15]: B0 mb1 [15,17], W0 mb1 [17,18]
TEST(SimBaselinesTest, ZbH1ByHand) {
  ScheduleResult r = run("zb-h1", smallProfile(2, 2), smallOptions());
  expectCompute(r, {{0, "F0 mb0", 0, 1},
                    {0, "F0 mb1", 1, 2},
                    {1, "F1 mb0", 3, 5},
                    {1, "B1 mb0", 5, 8},
                    {1, "F1 mb1", 8, 10},
                    {1, "B1 mb1", 10, 13},
                    {1, "W1 mb0", 13, 15},
                    {1, "W1 mb1", 15, 17},
                    {0, "B0 mb0", 10, 12},
                    {0, "W0 mb0", 12, 13},
                    {0, "B0 mb1", 15, 17},
                    {0, "W0 mb1", 17, 18}});
  EXPECT_DOUBLE_EQ(r.stats.makespanMs, 18);
}

// 4 layers (3 blocks + tail), v = 2: one layer per virtual stage, stage s on GPU s mod 2.
// F = 1 everywhere; B = 3 for blocks, 2 for the tail (no recompute). comm 0.
CompareOptions twoChunks() {
  CompareOptions o = smallOptions();
  o.chunks = 2;
  return o;
}

// Looped-BFS: GPU0 F0 F0 F2 F2 B2(mb1) B2(mb0) B0(mb1) B0(mb0); GPU1 likewise with 1 and 3.
//   GPU0 F0 [0,1] [1,2]; GPU1 F1 [1,2] [2,3]; GPU0 F2 [2,3] [3,4]; GPU1 F3 [3,4] [4,5]
//   GPU1 B3 mb1 [5,7], B3 mb0 [7,9]; GPU0 B2 mb1 [7,10], B2 mb0 [10,13]
//   GPU1 B1 mb1 [10,13], B1 mb0 [13,16]; GPU0 B0 mb1 [13,16], B0 mb0 [16,19]
TEST(SimBaselinesTest, LoopedBfsByHand) {
  ScheduleResult r = run("looped-bfs", smallProfile(3, 0), twoChunks());
  expectCompute(r, {{0, "F0 mb0", 0, 1},   {0, "F0 mb1", 1, 2},   {1, "F1 mb0", 1, 2},
                    {1, "F1 mb1", 2, 3},   {0, "F2 mb0", 2, 3},   {0, "F2 mb1", 3, 4},
                    {1, "F3 mb0", 3, 4},   {1, "F3 mb1", 4, 5},   {1, "B3 mb1", 5, 7},
                    {1, "B3 mb0", 7, 9},   {0, "B2 mb1", 7, 10},  {0, "B2 mb0", 10, 13},
                    {1, "B1 mb1", 10, 13}, {1, "B1 mb0", 13, 16}, {0, "B0 mb1", 13, 16},
                    {0, "B0 mb0", 16, 19}});
  EXPECT_DOUBLE_EQ(r.stats.makespanMs, 19);
}

// Interleaved 1F1B (PyTorch): rounds = max(1, 2/2) = 1 of 2 micro-batches; warmup
// min((v-1)*2 + 2*(N-1-r), 4) = 4 on GPU0, 2 on GPU1.
//   GPU0: F0 F0 F2 F2 B2 B2 B0 B0 (micro-batches ascending)
//   GPU1: F1 F1 F3(mb0) B3(mb0) F3(mb1) B3(mb1) B1 B1
//   GPU0 F0 [0,1] [1,2]; GPU1 F1 [1,2] [2,3]; GPU0 F2 [2,3] [3,4]
//   GPU1 F3 mb0 [3,4], B3 mb0 [4,6], F3 mb1 [6,7], B3 mb1 [7,9]
//   GPU0 B2 mb0 [6,9], B2 mb1 [9,12]; GPU1 B1 mb0 [9,12], B1 mb1 [12,15]
//   GPU0 B0 mb0 [12,15], B0 mb1 [15,18]
TEST(SimBaselinesTest, InterleavedByHand) {
  ScheduleResult r = run("interleaved-1f1b", smallProfile(3, 0), twoChunks());
  expectCompute(r, {{0, "F0 mb0", 0, 1},   {0, "F0 mb1", 1, 2},   {1, "F1 mb0", 1, 2},
                    {1, "F1 mb1", 2, 3},   {0, "F2 mb0", 2, 3},   {0, "F2 mb1", 3, 4},
                    {1, "F3 mb0", 3, 4},   {1, "B3 mb0", 4, 6},   {1, "F3 mb1", 6, 7},
                    {1, "B3 mb1", 7, 9},   {0, "B2 mb0", 6, 9},   {0, "B2 mb1", 9, 12},
                    {1, "B1 mb0", 9, 12},  {1, "B1 mb1", 12, 15}, {0, "B0 mb0", 12, 15},
                    {0, "B0 mb1", 15, 18}});
  EXPECT_DOUBLE_EQ(r.stats.makespanMs, 18);
}

// Mobius-like: the Looped-BFS order, each job's weights (1e6 bytes per layer at 1 GB/s =
// 1 ms) uploaded into one of two slots (job k waits for job k - 2). comm 0.
//   GPU0 weights: F0 [0,1], F2 [1,2], B2 after job F0 ends (3): [3,4], B0 after F2 (5): [5,6]
//   GPU1 weights: F1 [0,1], F3 [1,2], B3 after F1 (4): [4,5], B1 after F3 (6): [6,7]
//   GPU0 F0 [1,2] [2,3]; GPU1 F1 [2,3] [3,4]; GPU0 F2 [3,4] [4,5]; GPU1 F3 [4,5] [5,6]
//   GPU1 B3 mb1 [6,8], mb0 [8,10]; GPU0 B2 mb1 [8,11], mb0 [11,14]
//   GPU1 B1 mb1 [11,14], mb0 [14,17]; GPU0 B0 mb1 [14,17], mb0 [17,20]
TEST(SimBaselinesTest, MobiusByHand) {
  CompareOptions o = twoChunks();
  o.linkGbps = 1;
  ScheduleResult r = run("mobius", smallProfile(3, 0, /*paramBytes=*/1000000), o);
  expectCompute(r, {{0, "F0 mb0", 1, 2},   {0, "F0 mb1", 2, 3},   {1, "F1 mb0", 2, 3},
                    {1, "F1 mb1", 3, 4},   {0, "F2 mb0", 3, 4},   {0, "F2 mb1", 4, 5},
                    {1, "F3 mb0", 4, 5},   {1, "F3 mb1", 5, 6},   {1, "B3 mb1", 6, 8},
                    {1, "B3 mb0", 8, 10},  {0, "B2 mb1", 8, 11},  {0, "B2 mb0", 11, 14},
                    {1, "B1 mb1", 11, 14}, {1, "B1 mb0", 14, 17}, {0, "B0 mb1", 14, 17},
                    {0, "B0 mb0", 17, 20}});
  std::map<std::pair<int, std::string>, std::pair<double, double>> weights;
  for (const Span &s : r.timeline.spans)
    if (s.lane == Lane::WeightUpload)
      weights[{s.device, s.label}] = {s.startMs, s.endMs};
  EXPECT_EQ(weights.size(), 8u);
  EXPECT_EQ(weights[std::make_pair(0, std::string("B2 weights"))], std::make_pair(3.0, 4.0));
  EXPECT_EQ(weights[std::make_pair(1, std::string("B1 weights"))], std::make_pair(6.0, 7.0));
  EXPECT_DOUBLE_EQ(r.stats.makespanMs, 20);
}

// RoundPipe, 3 layers, forward [block0, block1] (F0 = 2), fused tail B0 = tail fwd + bwd = 3,
// B1 = block1 (recompute 1 + bwd 2), B2 = block0 (1 + 2). Jobs F0, B0, B1, B2 on GPUs
// 0, 1, 0, 1. comm 2 (D2H 1 + H2D 1).
//   GPU0 F0 mb0 [0,2], F0 mb1 [2,4]; out [2,3], [4,5]; GPU1 in [3,4], [5,6]
//   GPU1 B0 mb0 [4,7], B0 mb1 [7,10]; out [7,8], [10,11]; GPU0 in [8,9], [11,12]
//   GPU0 B1 mb0: gradient at 9, recompute placed right before: R1 [8,9], B1 [9,11];
//        B1 mb1: gradient at 12, GPU free at 11: R1 [11,12], B1 [12,14]; out [11,12], [14,15]
//   GPU1 in [12,13], [15,16]; B2 mb0: R2 [12,13], B2 [13,15]; B2 mb1: R2 [15,16], B2 [16,18]
// With AdamW 1 ms per layer on the host (sync): tail after B0's gradients (11) [11,12],
// layer 1 after B1's (15) [15,16], layer 0 after B2's (18) [18,19].
std::vector<Expected> roundPipeSpans() {
  return {{0, "F0 mb0", 0, 2},   {0, "F0 mb1", 2, 4},   {1, "B0 mb0", 4, 7},
          {1, "B0 mb1", 7, 10},  {0, "R1 mb0", 8, 9},   {0, "B1 mb0", 9, 11},
          {0, "R1 mb1", 11, 12}, {0, "B1 mb1", 12, 14}, {1, "R2 mb0", 12, 13},
          {1, "B2 mb0", 13, 15}, {1, "R2 mb1", 15, 16}, {1, "B2 mb1", 16, 18}};
}

CompareOptions roundPipeOptions() {
  CompareOptions o = smallOptions();
  o.roundPipeForward = {2};
  o.roundPipeBackward = {1, 1, 1};
  o.optimizerMsPerLayer = 1;
  return o;
}

TEST(SimBaselinesTest, RoundPipeSyncByHand) {
  ScheduleResult r = run("roundpipe-sync", smallProfile(2, 2), roundPipeOptions());
  expectCompute(r, roundPipeSpans());
  std::map<std::string, std::pair<double, double>> host;
  for (const Span &s : r.timeline.spans)
    if (s.lane == Lane::Host)
      host[s.label] = {s.startMs, s.endMs};
  EXPECT_EQ(host["adamw layer 2"], std::make_pair(11.0, 12.0));
  EXPECT_EQ(host["adamw layer 1"], std::make_pair(15.0, 16.0));
  EXPECT_EQ(host["adamw layer 0"], std::make_pair(18.0, 19.0));
  // The host's last update ends the step: busy 10 + 12 of 2 x 19.
  EXPECT_DOUBLE_EQ(r.stepMs, 19);
  EXPECT_NEAR(r.bubblePercent, 100.0 * 16 / 38, 1e-9);
}

// Async: the same GPU timeline without the host's updates; step = (2 x 18 - fill 4 (GPU1)
// - drain 4 (GPU0)) / 2 = 14, bubble = (36 - 22 - 8) / 36.
TEST(SimBaselinesTest, RoundPipeAsyncByHand) {
  ScheduleResult r = run("roundpipe-async", smallProfile(2, 2), roundPipeOptions());
  expectCompute(r, roundPipeSpans());
  for (const Span &s : r.timeline.spans)
    EXPECT_NE(s.lane, Lane::Host);
  EXPECT_DOUBLE_EQ(r.stats.makespanMs, 18);
  EXPECT_DOUBLE_EQ(r.stepMs, 14);
  EXPECT_NEAR(r.bubblePercent, 100.0 * 6 / 36, 1e-9);
}

TEST(SimBaselinesTest, Errors) {
  CompareOptions o = smallOptions();
  auto r = simulateSchedule("pipedream", smallProfile(2, 0), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("roundpipe-async"), std::string::npos);
  o.gpus = 0;
  EXPECT_FALSE(simulateSchedule("gpipe", smallProfile(2, 0), o).ok());
  o = smallOptions();
  o.roundPipeForward = {2};
  o.roundPipeBackward = {1, 1}; // layers 0-1 below the tail, the backward stages cover 1
  r = simulateSchedule("roundpipe-sync", smallProfile(2, 0), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("backward stages cover"), std::string::npos);
  o = smallOptions();
  // Interleaved 1F1B: 5 micro-batches on 2 GPUs make max(1, 5 / 2) = 2 rounds, which 5 is
  // not a multiple of (PyTorch refuses it too).
  o.microBatches = 5;
  o.chunks = 2;
  r = simulateSchedule("interleaved-1f1b", smallProfile(3, 0), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("multiple of the number of rounds"), std::string::npos);
}

TEST(SimBaselinesTest, CompareTable) {
  CompareOptions o = roundPipeOptions();
  auto all = compareSchedules(smallProfile(2, 2), o);
  ASSERT_TRUE(all.ok()) << all.status().toString();
  ASSERT_EQ(all->size(), scheduleNames().size());
  std::string table = formatCompareTable(*all);
  EXPECT_NE(table.find("schedule"), std::string::npos);
  EXPECT_NE(table.find("RP-async speedup"), std::string::npos);
  // gpipe: 22 ms; RoundPipe sync 19, async 14 -> 1.16x and 1.57x.
  EXPECT_NE(table.find("gpipe                      22.0       50.0             1.16x"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("1.57x"), std::string::npos) << table;
  // Without RoundPipe rows the speedup columns read "-".
  std::vector<ScheduleResult> only(all->begin(), all->begin() + 1);
  EXPECT_NE(formatCompareTable(only).find(" -"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// (b) The paper replay
//===----------------------------------------------------------------------===//

struct Published {
  const char *schedule;
  double bubble;     ///< %, pp-simulate/log (RoundPipe async: switch + intra).
  double makespanMs; ///< pp-simulate/log; 0 = not published.
};

void replay(const char *file, const std::vector<Published> &published) {
  auto profile = rp::partition::loadProfile(std::string(RP_SOURCE_DIR) + "/examples/profiles/" +
                                            file);
  ASSERT_TRUE(profile.ok()) << profile.status().toString();
  CompareOptions o;
  o.gpus = 8;
  o.microBatches = 16;
  for (const Published &p : published) {
    auto r = simulateSchedule(p.schedule, *profile, o);
    ASSERT_TRUE(r.ok()) << r.status().toString();
    EXPECT_NEAR(r->bubblePercent, p.bubble, 1.5) << file << " " << p.schedule;
    // Same model, same numbers: the makespans agree to the log's 4 decimals.
    if (p.makespanMs > 0) {
      EXPECT_NEAR(r->stats.makespanMs, p.makespanMs, 0.01) << file << " " << p.schedule;
    }
  }
}

TEST(SimReplayTest, Qwen3_1_7B) {
  replay("qwen3-1.7b-4090.json", {{"1f1b", 35.1906, 2854.7220},
                                  {"gpipe", 36.1346, 2896.9170},
                                  {"interleaved-1f1b", 27.7520, 2560.8020},
                                  {"looped-bfs", 25.0131, 2467.2710},
                                  {"roundpipe-sync", 19.0676, 2286.0170},
                                  {"roundpipe-async", 4.0495, 0}});
}

TEST(SimReplayTest, Llama3_1_8B) {
  replay("llama3.1-8b-4090.json", {{"1f1b", 42.0793, 9028.1120},
                                   {"gpipe", 42.0793, 9028.1120},
                                   {"interleaved-1f1b", 30.6407, 7539.2180},
                                   {"looped-bfs", 29.1982, 7385.6180},
                                   {"roundpipe-sync", 14.2839, 6100.5450},
                                   {"roundpipe-async", 1.2910, 0}});
}

} // namespace
