//===- SimNodesTest.cpp - Data parallelism across nodes in the simulator --===//
//
// The node model (runtime/sim/NodeModel.h): the reduction's bytes and time formulas against
// hand-computed values, the validation of its inputs, and its effect on both simulators:
//  - the schedule simulator (profile mode, roundpipe-sync / -async): R = 1 gives exactly the
//    single-node timeline, each layer's reduction waits for its gradients and its AdamW for
//    the reduction, a slower link never gives a faster step, the last layer's reduction is
//    exposed;
//  - the simulator backend driven by the executor (plan mode): the same properties on the
//    hand-written plan of PlanTestUtil.h, with the times of SimBackendTest's hand-computed case.
//
//===----------------------------------------------------------------------===//

#include "test/Unit/support/PlanTestUtil.h"

#include "runtime/exec/Executor.h"
#include "runtime/exec/HostArena.h"
#include "runtime/sim/Compare.h"
#include "runtime/sim/NodeModel.h"
#include "runtime/sim/SimBackend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace rp::runtime {
namespace {

namespace pb = rp::plan;
using rp::partition::LayerProfile;
using rp::partition::Profile;
using rp::sim::CompareOptions;
using rp::sim::Lane;
using rp::sim::NodeLink;
using rp::sim::NodeReduction;
using rp::sim::Span;
using rp::sim::Timeline;

NodeLink link(int nodes, double gbit, double latencyUs = 0,
              NodeReduction reduction = NodeReduction::Chain, bool commThread = true) {
  NodeLink l;
  l.nodes = nodes;
  l.linkGbit = gbit;
  l.latencyUs = latencyUs;
  l.reduction = reduction;
  l.commThread = commThread;
  return l;
}

std::string describe(const Timeline &t) {
  std::ostringstream o;
  for (const Span &s : t.spans)
    o << s.device << " " << rp::sim::laneName(s.lane) << " [" << s.startMs << ", " << s.endMs
      << "] " << s.label << " (" << s.category << ")\n";
  return o.str();
}

const Span *find(const Timeline &t, const std::string &label) {
  for (const Span &s : t.spans)
    if (s.label == label)
      return &s;
  return nullptr;
}

std::vector<const Span *> lane(const Timeline &t, Lane l) {
  std::vector<const Span *> out;
  for (const Span &s : t.spans)
    if (s.lane == l)
      out.push_back(&s);
  return out;
}

void expectSameTimeline(const Timeline &a, const Timeline &b) {
  ASSERT_EQ(a.spans.size(), b.spans.size()) << describe(a) << "---\n" << describe(b);
  for (size_t i = 0; i < a.spans.size(); ++i) {
    const Span &x = a.spans[i], &y = b.spans[i];
    EXPECT_EQ(x.label, y.label);
    EXPECT_EQ(x.lane, y.lane) << x.label;
    EXPECT_EQ(x.device, y.device) << x.label;
    EXPECT_EQ(x.startMs, y.startMs) << x.label; // exactly: the same simulation
    EXPECT_EQ(x.endMs, y.endMs) << x.label;
  }
}

//===----------------------------------------------------------------------===//
// The formulas
//===----------------------------------------------------------------------===//

TEST(SimNodesTest, BytesAndTimeFormulas) {
  using rp::sim::reductionBytesPerNode;
  using rp::sim::reductionMessages;
  using rp::sim::reductionMs;
  const NodeReduction gather = NodeReduction::AllGather, ring = NodeReduction::Ring;
  // 1 GB of gradient on 4 nodes, 100 Gb/s (1e8 bits per ms: 1 GB in 80 ms), 10 us.
  // Allgather: 3 messages of 1 GB = 3 GB per node; 3 x (0.01 + 80) ms.
  EXPECT_EQ(reductionMessages(link(4, 100, 10, gather), 1e9), 3);
  EXPECT_DOUBLE_EQ(reductionBytesPerNode(link(4, 100, 10, gather), 1e9), 3e9);
  EXPECT_DOUBLE_EQ(reductionMs(link(4, 100, 10, gather), 1e9), 240.03);
  // Ring: 6 messages of 250 MB = 1.5 GB per node; 6 x (0.01 + 20) ms.
  EXPECT_EQ(reductionMessages(link(4, 100, 10, ring), 1e9), 6);
  EXPECT_DOUBLE_EQ(reductionBytesPerNode(link(4, 100, 10, ring), 1e9), 1.5e9);
  EXPECT_DOUBLE_EQ(reductionMs(link(4, 100, 10, ring), 1e9), 120.06);
  // Chain (the default): 10 MiB = 2.5 chunks of 4 MiB -> k = 3 chunks of 10 MiB / 3; on 4
  // nodes max(k + 2R - 3, 2k + 2R - 5) = max(8, 9) = 9 chunk times of 0.01 + 8 x 3495253.33 /
  // 1e8 ms (rank 2's NIC sends 6 chunks from time 2, then one hop to rank 0).
  const double mib10 = 10.0 * 1024 * 1024;
  EXPECT_EQ(link(4, 100).reduction, NodeReduction::Chain);
  EXPECT_EQ(reductionMessages(link(4, 100, 10), mib10), 6);
  EXPECT_DOUBLE_EQ(reductionBytesPerNode(link(4, 100, 10), mib10), 2 * mib10);
  EXPECT_NEAR(reductionMs(link(4, 100, 10), mib10), 9 * (0.01 + 8 * mib10 / 3 / 1e8), 1e-12);
  EXPECT_NEAR(reductionMs(link(4, 100, 10), mib10), 2.6065824, 1e-9);
  // Chain on 2 nodes: B one way while the sums come back: k messages each way, k + 1 chunk
  // times (the sums of chunk i return while chunk i + 1 goes out).
  EXPECT_EQ(reductionMessages(link(2, 100, 10), mib10), 3);
  EXPECT_DOUBLE_EQ(reductionBytesPerNode(link(2, 100, 10), mib10), mib10);
  EXPECT_NEAR(reductionMs(link(2, 100, 10), mib10), 4 * (0.01 + 8 * mib10 / 3 / 1e8), 1e-12);
  // One chunk: 2 (R - 1) hops of the whole gradient; the chain's bytes do not grow with R.
  EXPECT_DOUBLE_EQ(reductionMs(link(2, 25), 1e6), 0.64); // 2 x 8e6 bits / 25e6 bits per ms
  EXPECT_DOUBLE_EQ(reductionMs(link(16, 25), 1e6), 2 * 15 * 0.32);
  EXPECT_DOUBLE_EQ(reductionBytesPerNode(link(16, 25), 1e6), 2e6);
  // Two nodes: every algorithm sends the whole gradient once per node and direction.
  EXPECT_DOUBLE_EQ(reductionBytesPerNode(link(2, 25, 0, gather), 1e6), 1e6);
  EXPECT_DOUBLE_EQ(reductionMs(link(2, 25, 0, gather), 1e6), 0.32);
  EXPECT_DOUBLE_EQ(reductionBytesPerNode(link(2, 25, 0, ring), 1e6), 1e6);
  // Allgather's bytes grow as R - 1, the ring's approach 2 B.
  EXPECT_DOUBLE_EQ(reductionBytesPerNode(link(16, 25, 0, gather), 1e6), 15e6);
  EXPECT_DOUBLE_EQ(reductionBytesPerNode(link(16, 25, 0, ring), 1e6), 2 * 15e6 / 16);
  // One node reduces nothing, whatever the link; nor does an empty gradient.
  for (NodeReduction r : {NodeReduction::Chain, gather, ring}) {
    EXPECT_EQ(reductionMessages(link(1, 25, 10, r), 1e9), 0);
    EXPECT_EQ(reductionBytesPerNode(link(1, 25, 10, r), 1e9), 0);
    EXPECT_EQ(reductionMs(link(1, 0, 10, r), 1e9), 0);
    EXPECT_EQ(reductionMs(link(4, 25, 10, r), 0), 0);
  }
  EXPECT_DOUBLE_EQ(rp::sim::scalingEfficiencyPercent(100, 125), 80);
  EXPECT_EQ(rp::sim::scalingEfficiencyPercent(100, 0), 0);
}

TEST(SimNodesTest, ValidationNamesTheFlag) {
  auto message = [](const NodeLink &l) { return rp::sim::validateNodeLink(l).message(); };
  EXPECT_TRUE(rp::sim::validateNodeLink(NodeLink()).ok());
  EXPECT_TRUE(rp::sim::validateNodeLink(link(1, 0)).ok()); // one node needs no link
  EXPECT_TRUE(rp::sim::validateNodeLink(link(8, 25, 5)).ok());
  EXPECT_NE(message(link(0, 25)).find("--nodes must be at least 1 (got 0)"), std::string::npos);
  EXPECT_NE(message(link(-3, 25)).find("--nodes must be at least 1"), std::string::npos);
  EXPECT_NE(message(link(2, 0)).find("needs --node-link-gbps"), std::string::npos);
  EXPECT_NE(message(link(2, -25)).find("--node-link-gbps must be a positive number"),
            std::string::npos);
  EXPECT_NE(message(link(1, -25)).find("--node-link-gbps"), std::string::npos);
  EXPECT_NE(message(link(2, std::numeric_limits<double>::infinity())).find("--node-link-gbps"),
            std::string::npos);
  EXPECT_NE(message(link(2, 25, -1)).find("--node-link-latency-us"), std::string::npos);
  EXPECT_NE(message(link(2, 25, std::nan(""))).find("--node-link-latency-us"), std::string::npos);
  EXPECT_EQ(rp::sim::parseNodeReduction("ring").value(), NodeReduction::Ring);
  EXPECT_EQ(rp::sim::parseNodeReduction("allgather").value(), NodeReduction::AllGather);
  EXPECT_EQ(rp::sim::parseNodeReduction("chain").value(), NodeReduction::Chain);
  EXPECT_NE(rp::sim::parseNodeReduction("tree").status().message().find(
                "chain, allgather or ring"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Profile mode: the schedule simulator
//===----------------------------------------------------------------------===//

/// 4 blocks and the tail (fwd 1, bwd 2, recompute 1), comm_ms 2; every layer 1 MB of 16-bit
/// gradients (2 MB reduced in fp32), weights 1 MB; host AdamW `optimizerMs` per layer.
Profile nodesProfile() {
  Profile p;
  for (int i = 0; i <= 4; ++i) {
    LayerProfile l;
    l.name = i == 4 ? "tail" : "block_" + std::to_string(i);
    l.fwdMs = 1;
    l.bwdMs = 2;
    l.recomputeMs = 1;
    l.paramBytes = 1000000;
    l.trainableBytes = 1000000;
    l.actBytes = 1000;
    p.layers.push_back(l);
  }
  p.commMs = 2;
  return p;
}

CompareOptions nodesOptions(const NodeLink &nodes, double optimizerMs = 0.5) {
  CompareOptions o;
  o.gpus = 2;
  o.microBatches = 4;
  o.linkGbps = 25;
  o.optimizerMsPerLayer = optimizerMs;
  o.nodes = nodes;
  return o;
}

rp::sim::ScheduleResult schedule(const std::string &name, const CompareOptions &o) {
  auto r = rp::sim::simulateSchedule(name, nodesProfile(), o);
  EXPECT_TRUE(r.ok()) << r.status().toString();
  return r.ok() ? r.value() : rp::sim::ScheduleResult();
}

TEST(SimNodesTest, ProfileOneNodeIsExactlyTheSingleNodeRun) {
  for (const char *name : {"roundpipe-sync", "roundpipe-async"}) {
    const auto plain = schedule(name, nodesOptions(NodeLink()));
    const auto one = schedule(name, nodesOptions(link(1, 25, 10)));
    EXPECT_EQ(one.stepMs, plain.stepMs) << name;
    EXPECT_EQ(one.bubblePercent, plain.bubblePercent) << name;
    expectSameTimeline(one.timeline, plain.timeline);
    EXPECT_TRUE(lane(one.timeline, Lane::NodeLink).empty());
  }
}

TEST(SimNodesTest, ProfileReductionSitsBetweenGradientsAndAdamW) {
  // 2 MB fp32, one chunk: 2 x (1 + 2) x (0.02 + 1.6) = 9.72 ms per layer.
  const NodeLink nodes = link(4, 10, 20, NodeReduction::Chain, /*commThread=*/false);
  const auto r = schedule("roundpipe-sync", nodesOptions(nodes));
  const std::vector<const Span *> reductions = lane(r.timeline, Lane::NodeLink);
  ASSERT_EQ(reductions.size(), 5u) << describe(r.timeline);
  double previousEnd = 0, previousAdamW = 0;
  for (const Span *s : reductions) {
    EXPECT_EQ(s->category, "reduction");
    EXPECT_NEAR(s->endMs - s->startMs, 9.72, 1e-9) << s->label;
    EXPECT_GE(s->startMs, previousEnd - 1e-9) << "one reduction at a time: " << s->label;
    // On the optimizer thread: after the previous layer's AdamW.
    EXPECT_GE(s->startMs, previousAdamW - 1e-9) << s->label;
    previousEnd = s->endMs;
    const std::string layer = s->label.substr(std::string("reduce layer ").size());
    const Span *adamw = find(r.timeline, "adamw layer " + layer);
    ASSERT_NE(adamw, nullptr) << layer;
    EXPECT_GE(adamw->startMs, s->endMs - 1e-9) << "AdamW of layer " << layer;
    previousAdamW = adamw->endMs;
  }
  // Every reduction starts after its stage's gradient downloads: the last backward stage's
  // gradients are the last download of the run.
  double lastGrads = 0;
  for (const Span &s : r.timeline.spans)
    if (s.category == "gradients")
      lastGrads = std::max(lastGrads, s.endMs);
  EXPECT_GE(reductions.back()->startMs, lastGrads - 1e-9);
}

TEST(SimNodesTest, ProfileSlowerLinkNeverFaster) {
  for (const char *name : {"roundpipe-sync", "roundpipe-async"})
    for (NodeReduction red : {NodeReduction::Chain, NodeReduction::AllGather, NodeReduction::Ring})
      for (int nodes : {2, 3, 8}) {
        double previous = schedule(name, nodesOptions(NodeLink())).stepMs;
        for (double gbit : {10000.0, 400.0, 100.0, 25.0, 10.0, 1.0}) {
          const double step = schedule(name, nodesOptions(link(nodes, gbit, 5, red))).stepMs;
          EXPECT_GE(step, previous - 1e-9) << name << " R=" << nodes << " " << gbit << " Gb/s";
          previous = step;
        }
      }
  // More nodes on the same link (chain: more hops to fill), never a faster step.
  double previous = 0;
  for (int nodes : {1, 2, 4, 8, 16}) {
    const double step = schedule("roundpipe-sync", nodesOptions(link(nodes, 25))).stepMs;
    EXPECT_GE(step, previous) << nodes;
    previous = step;
  }
}

TEST(SimNodesTest, ProfileLastReductionIsExposed) {
  // Without host AdamW the one-node step ends with the last gradient download; with R nodes it
  // ends with the last reduction, which nothing can overlap: the step grows by at least it.
  const double oneNode = schedule("roundpipe-sync", nodesOptions(NodeLink(), 0)).stepMs;
  const NodeLink nodes = link(2, 25, 10); // 2 MB: 2 x (0.01 + 0.64) ms per layer
  const auto r = schedule("roundpipe-sync", nodesOptions(nodes, 0));
  const std::vector<const Span *> reductions = lane(r.timeline, Lane::NodeLink);
  ASSERT_FALSE(reductions.empty());
  const double last = rp::sim::reductionMs(nodes, 2e6);
  EXPECT_NEAR(last, 1.3, 1e-12);
  EXPECT_EQ(reductions.back()->endMs, r.stats.makespanMs) << describe(r.timeline);
  EXPECT_GE(r.stepMs, oneNode + last - 1e-9);
  EXPECT_NEAR(r.stats.nodeLinkBusyMs, 5 * last, 1e-9);
}

TEST(SimNodesTest, ChainChunkTimesByHand) {
  using rp::sim::chainChunkTimes;
  // R = 2: chunk k - 1 leaves at k - 1 and comes back 2 hops later.
  EXPECT_EQ(chainChunkTimes(2, 1), 2);
  EXPECT_EQ(chainChunkTimes(2, 10), 11);
  // R = 3, k = 2: 0->1 [0,1] [1,2]; 1->2 [1,2] [2,3]; 2->1 [2,3] [3,4]; 1->0 [3,4] [4,5].
  EXPECT_EQ(chainChunkTimes(3, 2), 5);
  // One chunk: 2 (R - 1) hops, as the unpipelined chain.
  EXPECT_EQ(chainChunkTimes(3, 1), 4);
  EXPECT_EQ(chainChunkTimes(16, 1), 30);
  // R = 4, k = 2: rank 2 sends c0, c1 forward [2,4], their sums back [4,6]; rank 1 sends the
  // last sums to rank 0 in [6,7] (the two bounds meet: k + 2R - 3 = 2k + 2R - 5 = 7).
  EXPECT_EQ(chainChunkTimes(4, 2), 7);
  // Many chunks over middle ranks: the middle NIC's 2 k sends dominate.
  EXPECT_EQ(chainChunkTimes(3, 10), 21);
  EXPECT_EQ(chainChunkTimes(16, 10), 47);
  // Never slower than the chain followed by a broadcast, 2 (k + R - 2); 0 without a peer.
  for (int r = 2; r <= 16; ++r)
    for (int k = 1; k <= 64; ++k)
      EXPECT_LE(chainChunkTimes(r, k), 2.0 * (k + r - 2)) << r << " nodes, " << k << " chunks";
  EXPECT_LT(chainChunkTimes(2, 64), 2.0 * 64);
  EXPECT_EQ(chainChunkTimes(1, 5), 0);
}

TEST(SimNodesTest, ProfileAsyncStepIsAtLeastTheLinkBusyTime) {
  // Chain, one chunk of 2 MB at 1 Gb/s: 2 x 7 x 16 = 224 ms per layer, 1120 per step.
  // On the optimizer thread the AdamWs (5 x 0.5 ms) come on top; on their own thread not.
  const NodeLink own = link(8, 1, 0); // the default: a thread of their own
  EXPECT_NEAR(schedule("roundpipe-async", nodesOptions(own)).stepMs, 1120, 1e-9);
  NodeLink slow = own;
  slow.commThread = false;
  const auto r = schedule("roundpipe-async", nodesOptions(slow));
  EXPECT_NEAR(r.stepMs, 5 * rp::sim::reductionMs(slow, 2e6) + 5 * 0.5, 1e-9);
  EXPECT_NEAR(r.stepMs, 1122.5, 1e-9);
}

TEST(SimNodesTest, ProfileCommThreadOverlapsTheOptimizer) {
  // AdamW 5 ms per layer, reductions 2 x (0.64) ms: on the optimizer thread each layer takes
  // reduction + AdamW in turn; on their own thread the reductions run ahead of the AdamWs.
  EXPECT_TRUE(NodeLink().commThread); // the default, as rp-run's communication thread
  const auto serial = schedule("roundpipe-sync",
                               nodesOptions(link(2, 25, 0, NodeReduction::Chain, false), 5));
  const auto own = schedule("roundpipe-sync", nodesOptions(link(2, 25), 5));
  EXPECT_LT(own.stepMs, serial.stepMs);
  const std::vector<const Span *> reductions = lane(own.timeline, Lane::NodeLink);
  ASSERT_EQ(reductions.size(), 5u);
  // The second layer's reduction (same backward stage as the first: the gradients are there)
  // starts when the first one ends, before the first AdamW ends.
  const std::string first = reductions[0]->label.substr(std::string("reduce layer ").size());
  const Span *adamw = find(own.timeline, "adamw layer " + first);
  ASSERT_NE(adamw, nullptr);
  EXPECT_LT(reductions[1]->startMs, adamw->endMs) << describe(own.timeline);
}

TEST(SimNodesTest, OnlyRoundPipeModelsNodes) {
  const CompareOptions o = nodesOptions(link(2, 25));
  auto cmp = rp::sim::compareSchedules(nodesProfile(), o);
  ASSERT_FALSE(cmp.ok());
  EXPECT_NE(cmp.status().message().find("do not model data parallelism"), std::string::npos);
  auto gpipe = rp::sim::simulateSchedule("gpipe", nodesProfile(), o);
  ASSERT_FALSE(gpipe.ok());
  EXPECT_NE(gpipe.status().message().find("gpipe does not model"), std::string::npos);
  EXPECT_TRUE(rp::sim::compareSchedules(nodesProfile(), nodesOptions(link(1, 25))).ok());
  auto bad = rp::sim::simulateSchedule("roundpipe-sync", nodesProfile(), nodesOptions(link(0, 25)));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--nodes"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// Plan mode: the simulator backend driven by the executor
//===----------------------------------------------------------------------===//

pb::Plan testPlan(pb::UpdateMode mode = pb::SYNC) {
  pb::Plan plan = rp::testing::makeValidPlan();
  plan.mutable_config()->set_update(mode);
  plan.mutable_config()->mutable_optimizer()->set_grad_clip(0);
  return plan;
}

/// SimBackendTest's hand-computed case (B0's gradients are on the host at 28.625, B1's at
/// 33.625; AdamW 1 ms per layer) with `nodes`.
SimConfig testConfig(const NodeLink &nodes) {
  rp::partition::Profile profile;
  profile.layers.push_back({"block_0", 2, 4, 2, 64, 64, 32, 0});
  profile.layers.push_back({"tail", 3, 5, 3, 144, 128, 0, 0});
  profile.commMs = 2;
  SimConfig c;
  c.devices = 2;
  c.profile = profile;
  c.linkGbps = 32e-6; // 32 bytes per ms
  c.optimizerMs = 1;
  c.nodes = nodes;
  return c;
}

Timeline run(const pb::Plan &plan, const SimConfig &config, int64_t steps) {
  StatusOr<HostArena> arena = HostArena::create(plan);
  EXPECT_TRUE(arena.ok()) << arena.status().toString();
  SimBackend backend(config);
  Executor executor(arena.value(), backend, ExecutorOptions{});
  Status started = executor.start();
  EXPECT_TRUE(started.ok()) << started.toString();
  if (!started.ok())
    return {};
  for (int64_t k = 0; k < steps; ++k) {
    EXPECT_TRUE(executor.waitInputsWritable(k).ok());
    EXPECT_TRUE(executor.dispatch(k, steps).ok());
    if (k > 0) {
      EXPECT_TRUE(executor.losses(k - 1).ok());
    }
  }
  Status drained = executor.drain();
  EXPECT_TRUE(drained.ok()) << drained.toString();
  return backend.timeline();
}

/// fp32 gradient bytes of `layer` in the plan (its trainable params that run AdamW).
double layerGradBytes(const pb::Plan &plan, int layer) {
  double bytes = 0;
  for (const pb::Param &p : plan.params())
    if (p.trainable() && !p.has_primary() && p.layer() == layer) {
      double n = 4;
      for (int64_t d : p.type().shape())
        n *= static_cast<double>(d);
      bytes += n;
    }
  return bytes;
}

TEST(SimNodesTest, PlanOneNodeIsExactlyTheSingleNodeRun) {
  for (pb::UpdateMode mode : {pb::SYNC, pb::ASYNC}) {
    const Timeline plain = run(testPlan(mode), testConfig(NodeLink()), 3);
    const Timeline one = run(testPlan(mode), testConfig(link(1, 25, 10)), 3);
    expectSameTimeline(one, plain);
    EXPECT_TRUE(lane(one, Lane::NodeLink).empty());
  }
}

TEST(SimNodesTest, PlanReductionSitsBetweenGradientsAndAdamW) {
  const pb::Plan plan = testPlan();
  // A slow link so that the reductions are visible: 2 nodes, 1e-5 Gb/s = 1.25 bytes per ms.
  const NodeLink nodes = link(2, 1e-5, 100, NodeReduction::Chain, /*commThread=*/false);
  const Timeline t = run(plan, testConfig(nodes), 1);
  const double tailMs = rp::sim::reductionMs(nodes, layerGradBytes(plan, 1));
  const double blockMs = rp::sim::reductionMs(nodes, layerGradBytes(plan, 0));
  ASSERT_GT(tailMs, 1);
  ASSERT_GT(blockMs, 1);
  const Span *tail = find(t, "s0 reduce tail");
  const Span *block = find(t, "s0 reduce block_0");
  ASSERT_NE(tail, nullptr) << describe(t);
  ASSERT_NE(block, nullptr) << describe(t);
  EXPECT_EQ(tail->lane, Lane::NodeLink);
  EXPECT_EQ(tail->device, -1);
  EXPECT_EQ(tail->category, "reduction");
  // The tail's gradients are on the host at 28.625 (SimBackendTest), block_0's at 33.625. No
  // AdamW runs before every gradient of the step is known finite on every rank (the flags of
  // all downloads, gathered over the ranks), so on the optimizer thread the reductions start
  // at 33.625; block_0's also waits for the tail's AdamW and weight copy.
  const Span *adamwTail = find(t, "s0 adamw tail");
  const Span *copyTail = find(t, "s0 copy tail");
  const Span *adamwBlock = find(t, "s0 adamw block_0");
  ASSERT_NE(adamwTail, nullptr);
  ASSERT_NE(copyTail, nullptr);
  ASSERT_NE(adamwBlock, nullptr);
  EXPECT_DOUBLE_EQ(tail->startMs, 33.625);
  EXPECT_DOUBLE_EQ(tail->endMs, 33.625 + tailMs);
  EXPECT_DOUBLE_EQ(adamwTail->startMs, tail->endMs);
  EXPECT_DOUBLE_EQ(adamwTail->endMs, tail->endMs + 1);
  EXPECT_DOUBLE_EQ(block->startMs, std::max(33.625, copyTail->endMs));
  EXPECT_DOUBLE_EQ(block->endMs, block->startMs + blockMs);
  EXPECT_DOUBLE_EQ(adamwBlock->startMs, block->endMs);
}

TEST(SimNodesTest, PlanReductionOverlapsThePreviousAdamW) {
  // With a fast link and a slow AdamW, block_0's reduction follows the tail's on the
  // communication thread, not the optimizer thread's AdamW of the tail, which it overlaps:
  // 2 nodes, 1e-3 Gb/s (the tail: ~2 ms). Both wait for the step's non-finite flags, known once
  // block_0's gradients are on the host (33.625).
  const pb::Plan plan = testPlan();
  SimConfig config = testConfig(link(2, 1e-3)); // the default: a thread of their own
  config.optimizerMs = 8; // the tail's AdamW runs past block_0's gradients (33.625)
  const Timeline t = run(plan, config, 1);
  const Span *tail = find(t, "s0 adamw tail");
  const Span *reduceTail = find(t, "s0 reduce tail");
  const Span *block = find(t, "s0 reduce block_0");
  ASSERT_NE(tail, nullptr) << describe(t);
  ASSERT_NE(reduceTail, nullptr) << describe(t);
  ASSERT_NE(block, nullptr) << describe(t);
  EXPECT_DOUBLE_EQ(reduceTail->startMs, 33.625) << describe(t);
  EXPECT_DOUBLE_EQ(block->startMs, reduceTail->endMs) << describe(t);
  EXPECT_LT(block->startMs, tail->endMs) << describe(t);
  // On the optimizer thread (--node-reduce-on-optimizer) it waits for the tail's AdamW
  // instead.
  config.nodes.commThread = false;
  const Timeline serial = run(plan, config, 1);
  const Span *serialTail = find(serial, "s0 adamw tail");
  const Span *serialBlock = find(serial, "s0 reduce block_0");
  ASSERT_NE(serialTail, nullptr) << describe(serial);
  ASSERT_NE(serialBlock, nullptr) << describe(serial);
  EXPECT_DOUBLE_EQ(serialBlock->startMs, serialTail->endMs) << describe(serial);
}

TEST(SimNodesTest, PlanSlowerLinkNeverFaster) {
  for (pb::UpdateMode mode : {pb::SYNC, pb::ASYNC}) {
    double previous = rp::sim::computeStats(run(testPlan(mode), testConfig(NodeLink()), 3)).makespanMs;
    for (double gbit : {1.0, 1e-3, 1e-4, 1e-5, 1e-6}) {
      const Timeline t = run(testPlan(mode), testConfig(link(3, gbit, 10)), 3);
      const double makespan = rp::sim::computeStats(t).makespanMs;
      EXPECT_GE(makespan, previous) << gbit;
      previous = makespan;
    }
  }
}

TEST(SimNodesTest, PlanConfigValidation) {
  SimConfig config = testConfig(link(2, -1));
  EXPECT_NE(validateSimConfig(config).message().find("--node-link-gbps"), std::string::npos);
  config.nodes = link(0, 25);
  EXPECT_NE(validateSimConfig(config).message().find("--nodes"), std::string::npos);
}

} // namespace
} // namespace rp::runtime
