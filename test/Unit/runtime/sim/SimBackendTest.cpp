//===- SimBackendTest.cpp - The simulator backend driven by the executor --===//
//
// Runs the hand-written plan of PlanTestUtil.h (F0 forward [0, 1), B0 fused tail [1, 2), B1
// backward [0, 1); M = 2) through the executor on the simulator backend and checks the virtual
// timeline against one computed by hand (2 GPUs, 3 stages, 2 micro-batches), the difference
// between sync and async updates, determinism (runs and pool sizes), the executor's transfer
// order, host waits that block until their event's time is known, the roofline costs, and the
// shared host uplink.
//
// The hand-computed case. Profile: block_0 fwd 2, bwd 4 (recompute 2); tail fwd 3, bwd 5;
// comm_ms 2 (a hop: its download and its upload take 1 ms each). Link 32e-6 GB/s = 32 bytes/ms
// per direction, so weights F0 64 B = 2 ms, B0 144 B = 4.5 ms, B1 64 B = 2 ms (prefetched: 2
// chunks of 1 ms); inputs x 32 B = 1 ms, labels 16 B = 0.5 ms; loss 4 B = 0.125 ms; gradients
// B0 128 B = 4 ms, B1 64 B = 2 ms. Host AdamW 1 ms per layer (weight copies 0). No clipping.
//
//===----------------------------------------------------------------------===//

#include "test/Unit/support/PlanTestUtil.h"
#include "test/Unit/support/TempDirTest.h"

#include "runtime/exec/Executor.h"
#include "runtime/exec/HostArena.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/sim/Roofline.h"
#include "runtime/sim/SimBackend.h"
#include "runtime/sim/Simulate.h"
#include "runtime/trace/Trace.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <thread>
#include <tuple>
#include <vector>

#include <unistd.h>

namespace rp::runtime {
namespace {

namespace pb = rp::plan;
using rp::sim::Lane;
using rp::sim::Span;
using rp::sim::Timeline;

pb::Plan testPlan(pb::UpdateMode mode = pb::SYNC) {
  pb::Plan plan = rp::testing::makeValidPlan();
  plan.mutable_config()->set_update(mode);
  plan.mutable_config()->mutable_optimizer()->set_grad_clip(0);
  return plan;
}

SimConfig testConfig(int devices) {
  rp::partition::Profile profile;
  profile.layers.push_back({"block_0", 2, 4, 2, 64, 64, 32, 0});
  profile.layers.push_back({"tail", 3, 5, 3, 144, 128, 0, 0});
  profile.commMs = 2;
  SimConfig c;
  c.devices = devices;
  c.profile = profile;
  c.linkGbps = 32e-6; // 32 bytes per ms
  c.optimizerMs = 1;
  return c;
}

/// Runs `steps` iterations as rp-run does (dispatch k, then read the losses of k - 1).
Timeline run(const pb::Plan &plan, const SimConfig &config, int64_t steps,
             TraceRecorder *trace = nullptr) {
  StatusOr<HostArena> arena = HostArena::create(plan);
  EXPECT_TRUE(arena.ok()) << arena.status().toString();
  SimBackend backend(config);
  if (trace)
    backend.setTrace(trace);
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

std::string describe(const Span &s) {
  std::ostringstream o;
  o << s.device << " " << rp::sim::laneName(s.lane) << " [" << s.startMs << ", " << s.endMs
    << "] " << s.label << " (" << s.category << ", step " << s.step << ")";
  return o.str();
}

std::string describe(const Timeline &t) {
  std::string out;
  for (const Span &s : t.spans)
    out += describe(s) + "\n";
  return out;
}

const Span *find(const Timeline &t, const std::string &label) {
  for (const Span &s : t.spans)
    if (s.label == label)
      return &s;
  return nullptr;
}

struct Expected {
  int device;
  Lane lane;
  double start, end;
  const char *label;
  const char *category;
};

TEST(SimBackendTest, OneStepMatchesTheHandComputedTimeline) {
  const Timeline t = run(testPlan(), testConfig(2), 1);
  // Jobs: F0 on gpu0, B0 (fused tail) on gpu1, B1 on gpu0; B1's weights are prefetched by F0.
  // Each GPU's H2D link serves its two upload queues first come, first served (ties:
  // activations first).
  const std::vector<Expected> expected = {
      // gpu0 compute. F0 mb0 waits for its weights (uploaded [1, 3] behind x mb0 [0, 1]);
      // mb1 follows. B1 mb0 waits for B0's cotangent of mb0: B0 downloads it at
      // [15.625, 16.625], gpu0 uploads it [16.625, 17.625]; B1 runs the layer's backward
      // function, which recomputes its forward: 2 + 4 = 6 ms. mb1's cotangent arrives at 25.625.
      {0, Lane::Compute, 3, 5, "F0 s0 mb0 block_0", "forward"},
      {0, Lane::Compute, 5, 7, "F0 s0 mb1 block_0", "forward"},
      {0, Lane::Compute, 17.625, 23.625, "B1 s0 mb0 block_0_vjp", "backward"},
      {0, Lane::Compute, 23.625, 23.625, "B1 s0 mb0 accumulate layers.0.w", "backward"},
      {0, Lane::Compute, 25.625, 31.625, "B1 s0 mb1 block_0_vjp", "backward"},
      {0, Lane::Compute, 31.625, 31.625, "B1 s0 mb1 accumulate layers.0.w", "backward"},
      // gpu1 compute: the fused tail (3 + 5 = 8 ms) after its weights (4.5) and F0's
      // activation of mb0 (downloaded [5, 6], uploaded [6, 7]) and the labels ([7, 7.5]).
      {1, Lane::Compute, 7.5, 15.5, "B0 s0 mb0 tail_fused", "fused"},
      {1, Lane::Compute, 15.5, 15.5, "B0 s0 mb0 accumulate lm_head", "fused"},
      {1, Lane::Compute, 15.5, 23.5, "B0 s0 mb1 tail_fused", "fused"},
      {1, Lane::Compute, 23.5, 23.5, "B0 s0 mb1 accumulate lm_head", "fused"},
      // gpu0 activation uploads. x mb1 becomes ready at 1 but the weights were ready at 0:
      // [3, 4]. B1 mb0's x waits for activation set 0 (freed by F0's download of mb0 at 6).
      {0, Lane::ActivationUpload, 0, 1, "F0 s0 mb0 x", "activations"},
      {0, Lane::ActivationUpload, 3, 4, "F0 s0 mb1 x", "activations"},
      {0, Lane::ActivationUpload, 6, 7, "B1 s0 mb0 x", "activations"},
      {0, Lane::ActivationUpload, 16.625, 17.625, "B1 s0 mb0 block_0#0.grad", "activations"},
      {0, Lane::ActivationUpload, 17.625, 18.625, "B1 s0 mb1 x", "activations"},
      {0, Lane::ActivationUpload, 24.625, 25.625, "B1 s0 mb1 block_0#0.grad", "activations"},
      // gpu1 activation uploads: after F0's downloads (6 and 8).
      {1, Lane::ActivationUpload, 6, 7, "B0 s0 mb0 block_0#0", "activations"},
      {1, Lane::ActivationUpload, 7, 7.5, "B0 s0 mb0 labels", "activations"},
      {1, Lane::ActivationUpload, 8, 9, "B0 s0 mb1 block_0#0", "activations"},
      {1, Lane::ActivationUpload, 9, 9.5, "B0 s0 mb1 labels", "activations"},
      // Weights. F0's are not prefetched (the first job); B1's two chunks go behind F0's
      // activation uploads of mb0 and mb1 and after them on the link: [4, 5], [5, 6].
      {0, Lane::WeightUpload, 1, 3, "F0 s0 weights", "weights"},
      {0, Lane::WeightUpload, 4, 5, "B1 s0 weights chunk 0", "weights"},
      {0, Lane::WeightUpload, 5, 6, "B1 s0 weights chunk 1", "weights"},
      {1, Lane::WeightUpload, 0, 4.5, "B0 s0 weights", "weights"},
      // Downloads: activations after each micro-batch's compute, gradients at the job's end.
      {0, Lane::Download, 5, 6, "F0 s0 mb0 block_0#0", "activations"},
      {0, Lane::Download, 7, 8, "F0 s0 mb1 block_0#0", "activations"},
      {0, Lane::Download, 31.625, 33.625, "B1 s0 grads", "gradients"},
      {1, Lane::Download, 15.5, 15.625, "B0 s0 mb0 loss", "activations"},
      {1, Lane::Download, 15.625, 16.625, "B0 s0 mb0 block_0#0.grad", "activations"},
      {1, Lane::Download, 23.5, 23.625, "B0 s0 mb1 loss", "activations"},
      {1, Lane::Download, 23.625, 24.625, "B0 s0 mb1 block_0#0.grad", "activations"},
      {1, Lane::Download, 24.625, 28.625, "B0 s0 grads", "gradients"},
      // Host (sync): once every gradient of the step is on the host (B1's at 33.625) and known
      // finite, the AdamW and weight copy of each layer in the order the next step uploads
      // them: block_0 (F0), then the tail (B0).
      {-1, Lane::Host, 33.625, 34.625, "s0 adamw block_0", "optimizer"},
      {-1, Lane::Host, 34.625, 34.625, "s0 copy block_0", "optimizer"},
      {-1, Lane::Host, 34.625, 35.625, "s0 adamw tail", "optimizer"},
      {-1, Lane::Host, 35.625, 35.625, "s0 copy tail", "optimizer"},
  };
  ASSERT_EQ(t.spans.size(), expected.size()) << describe(t);
  for (const Expected &e : expected) {
    const Span *s = find(t, e.label);
    ASSERT_NE(s, nullptr) << e.label << "\n" << describe(t);
    EXPECT_EQ(s->device, e.device) << describe(*s);
    EXPECT_EQ(s->lane, e.lane) << describe(*s);
    EXPECT_EQ(s->startMs, e.start) << describe(*s);
    EXPECT_EQ(s->endMs, e.end) << describe(*s);
    EXPECT_EQ(s->category, e.category) << describe(*s);
    EXPECT_EQ(s->step, 0) << describe(*s);
  }
  EXPECT_EQ(t.numDevices, 2);
  EXPECT_EQ(t.schedule, "roundpipe-sync");
}

TEST(SimBackendTest, SyncWaitsForTheOptimizerAsyncDoesNot) {
  // Step 1's F0 runs on gpu1 (job 3). Sync: its weights wait for step 0's AdamW of block_0,
  // whose weight copy ends at 34.625 (above); the two prefetched chunks take [34.625, 36.625].
  const Timeline sync = run(testPlan(pb::SYNC), testConfig(2), 2);
  const Span *f = find(sync, "F0 s1 mb0 block_0");
  ASSERT_NE(f, nullptr) << describe(sync);
  EXPECT_EQ(f->device, 1);
  EXPECT_EQ(f->startMs, 36.625) << describe(sync);
  // Async: step 0's copy of block_0's master weights (W_0) is due once step 0's uploads of the
  // layer are done (B1's weights at 6), so the chunks go early; F0 s1 runs as soon as gpu1's
  // compute is free after B0 s0 (23.5).
  const Timeline async = run(testPlan(pb::ASYNC), testConfig(2), 2);
  f = find(async, "F0 s1 mb0 block_0");
  ASSERT_NE(f, nullptr) << describe(async);
  EXPECT_EQ(f->startMs, 23.5) << describe(async);
  EXPECT_EQ(async.schedule, "roundpipe-async");
}

// Async: the weights writer (host row -2) copies each layer once its step's uploads are done;
// the optimizer (row -1) runs a layer's AdamW once its grads and its own copy are there; the
// two threads overlap. Host work costs bytes / throughput here (1 ms per 32 bytes).
TEST(SimBackendTest, AsyncWeightsWriterRunsBesideTheOptimizer) {
  SimConfig config = testConfig(2);
  config.optimizerMs.reset();
  config.adamwGbps = 32e-6;    // AdamW 1 ms per 32 fp32 bytes
  config.hostCopyGbps = 32e-6; // copies 1 ms per 32 bytes
  const Timeline t = run(testPlan(pb::ASYNC), config, 2);
  const Span *copyTail = find(t, "s0 copy tail");
  const Span *copyBlock = find(t, "s0 copy block_0");
  const Span *adamwTail = find(t, "s0 adamw tail");
  const Span *adamwBlock = find(t, "s0 adamw block_0");
  ASSERT_TRUE(copyTail && copyBlock && adamwTail && adamwBlock) << describe(t);
  EXPECT_EQ(copyTail->device, -2);
  EXPECT_EQ(copyBlock->device, -2);
  EXPECT_EQ(adamwTail->device, -1);
  // Each AdamW after its own layer's copy (W_0 captured before the update) ...
  EXPECT_GE(adamwTail->startMs, copyTail->endMs) << describe(t);
  EXPECT_GE(adamwBlock->startMs, copyBlock->endMs) << describe(t);
  // Step 1's copy of a layer follows step 0's AdamW of it (W_1 is the updated master) ...
  const Span *copyTail1 = find(t, "s1 copy tail");
  ASSERT_NE(copyTail1, nullptr) << describe(t);
  EXPECT_GE(copyTail1->startMs, adamwTail->endMs) << describe(t);
  // ... and runs while step 0's AdamW of block_0 still does: one host thread doing both would
  // have started step 1's copies only after step 0's last AdamW.
  EXPECT_LT(copyTail1->startMs, adamwBlock->endMs) << describe(t);
  EXPECT_GT(copyTail1->endMs, adamwBlock->startMs) << describe(t);
}

TEST(SimBackendTest, DeterministicAcrossRunsAndPoolSizes) {
  for (pb::UpdateMode mode : {pb::SYNC, pb::ASYNC})
    for (int devices = 1; devices <= 4; ++devices) {
      const Timeline a = run(testPlan(mode), testConfig(devices), 3);
      const Timeline b = run(testPlan(mode), testConfig(devices), 3);
      EXPECT_EQ(describe(a), describe(b)) << devices << " devices";
      // Every command ran: per step 38 spans (34 device commands with prefetched weights in
      // M = 2 chunks, 4 host), less one for each of the first N jobs (weights in one copy).
      EXPECT_EQ(a.spans.size(), 3u * 38 - static_cast<size_t>(devices))
          << devices << " devices\n" << describe(a);
      // Queues are in order and every span is well formed.
      std::map<std::pair<int, int>, double> lastEnd;
      for (const Span &s : a.spans) {
        EXPECT_LE(s.startMs, s.endMs) << describe(s);
        // Host rows: the optimizer (-1) and, async, the weights writer (-2).
        EXPECT_GE(s.device, s.lane == Lane::Host && mode == pb::ASYNC ? -2 : -1);
        EXPECT_LT(s.device, devices);
        auto key = std::make_pair(s.device, static_cast<int>(s.lane));
        EXPECT_GE(s.startMs, lastEnd[key]) << describe(s); // sorted by start within a lane
        lastEnd[key] = s.endMs;
      }
    }
}

TEST(SimBackendTest, TransfersFollowTheExecutorsOrder) {
  for (int devices = 1; devices <= 4; ++devices) {
    const Timeline t = run(testPlan(), testConfig(devices), 3);
    // A consumer's upload of a boundary value starts after the producer's download of the same
    // value, step and micro-batch ("<stage> s<k> mb<m> <buffer>").
    std::map<std::string, double> downloaded; // "s<k> mb<m> <buffer>" -> end
    auto key = [](const std::string &label) { return label.substr(label.find(' ') + 1); };
    for (const Span &s : t.spans)
      if (s.lane == Lane::Download && s.category == "activations")
        downloaded[key(s.label)] = s.endMs;
    int hops = 0;
    for (const Span &s : t.spans) {
      if (s.lane != Lane::ActivationUpload || s.label.find("block_0#0") == std::string::npos)
        continue;
      auto it = downloaded.find(key(s.label));
      ASSERT_NE(it, downloaded.end()) << describe(s);
      EXPECT_GE(s.startMs, it->second) << describe(s);
      ++hops;
    }
    EXPECT_EQ(hops, 3 * 2 * 2); // per step and micro-batch: the activation and its cotangent
    // Each GPU's H2D link carries one copy at a time (activation and weight queues share it).
    for (int d = 0; d < devices; ++d) {
      std::vector<std::pair<double, double>> h2d;
      for (const Span &s : t.spans)
        if (s.device == d && (s.lane == Lane::ActivationUpload || s.lane == Lane::WeightUpload))
          h2d.push_back({s.startMs, s.endMs});
      std::sort(h2d.begin(), h2d.end());
      for (size_t i = 1; i < h2d.size(); ++i)
        EXPECT_GE(h2d[i].first, h2d[i - 1].second) << "gpu" << d;
    }
  }
}

TEST(SimBackendTest, HostWaitBlocksUntilTheEventsTimeIsKnown) {
  const pb::Plan plan = testPlan();
  SimConfig config = testConfig(1);
  config.optimizerMs = 5;
  for (bool sleep : {true, false}) {
    SimBackend backend(config);
    ASSERT_TRUE(backend.prepare(plan).ok());
    // The weight queue waits for a host event, then copies 64 bytes (2 ms) and records `done`.
    Event host = backend.newEvent(), done = backend.newEvent();
    backend.wait(0, Queue::WeightUpload, host);
    backend.copyToDevice(0, Queue::WeightUpload, nullptr, 0, 64, "W s0 weights");
    backend.record(0, Queue::WeightUpload, done);
    std::atomic<bool> returned{false};
    std::thread waiter([&] {
      EXPECT_TRUE(backend.hostWait(done).ok());
      returned = true;
    });
    if (sleep) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      EXPECT_FALSE(returned.load()); // `done`'s time depends on `host`, not yet signalled
    }
    // This thread works for 5 virtual ms (AdamW of layer 0), then signals: the copy starts at 5.
    backend.hostWork(HostTask::AdamW, 0, 0);
    backend.signal(host);
    waiter.join();
    EXPECT_TRUE(returned.load());
    ASSERT_TRUE(backend.finish().ok());
    const Timeline t = backend.timeline();
    const Span *copy = find(t, "W s0 weights");
    ASSERT_NE(copy, nullptr) << describe(t);
    EXPECT_EQ(copy->startMs, 5) << describe(t);
    EXPECT_EQ(copy->endMs, 7) << describe(t);
    const Span *adamw = find(t, "s0 adamw block_0");
    ASSERT_NE(adamw, nullptr) << describe(t);
    EXPECT_EQ(adamw->startMs, 0);
    EXPECT_EQ(adamw->endMs, 5);
  }
}

TEST(SimBackendTest, DeviceWorkIssuedAfterAHostWaitStartsAfterIt) {
  // The dispatching thread's clock: a copy issued after hostWait(e) does not start before e.
  const pb::Plan plan = testPlan(); // outlives the backend, which keeps a pointer to it
  SimBackend backend(testConfig(2));
  ASSERT_TRUE(backend.prepare(plan).ok());
  Event e = backend.newEvent();
  backend.copyToDevice(0, Queue::ActivationUpload, nullptr, 0, 320, "A s0 mb0 x"); // [0, 10]
  backend.record(0, Queue::ActivationUpload, e);
  ASSERT_TRUE(backend.hostWait(e).ok());
  backend.copyToDevice(1, Queue::ActivationUpload, nullptr, 0, 32, "B s0 mb0 x");
  ASSERT_TRUE(backend.finish().ok());
  const Timeline t = backend.timeline();
  const Span *b = find(t, "B s0 mb0 x");
  ASSERT_NE(b, nullptr) << describe(t);
  EXPECT_EQ(b->startMs, 10) << describe(t);
  EXPECT_EQ(b->endMs, 11) << describe(t);
}

TEST(SimBackendTest, RooflineCostsFromThePlansInstructions) {
  // 1 FLOP/ms at 50% efficiency -> 0.5 FLOP/ms; 2 bytes/ms of HBM.
  SimConfig config;
  config.devices = 1;
  config.target = rp::partition::makeTarget("slow", 1e-9, 2e-6, 32e-6, 1 << 20).value();
  const pb::Plan plan = testPlan();
  SimBackend backend(config);
  ASSERT_TRUE(backend.prepare(plan).ok());
  // block_0 (stage F0, function 0): matmul [2,4] x [4,4] = 64 FLOP -> 128 ms (its 128 bytes
  // take 64 ms); add of 3 x 32 bytes -> 48 ms.
  EXPECT_DOUBLE_EQ(backend.callMs(0, 0), 128 + 48);
  // block_0_vjp (stage B1, function 1): transpose 64 B -> 32; matmul [4,2] x [2,4] = 64 FLOP
  // -> 128; transpose 128 B -> 64; matmul [2,4] x [4,4] -> 128; add 96 B -> 48.
  EXPECT_DOUBLE_EQ(backend.callMs(2, 1), 32 + 128 + 64 + 128 + 48);
  // A target without peak or HBM bandwidth cannot cost a plan without a profile.
  SimConfig bad = config;
  bad.target = rp::partition::makeTarget("pcie-only", 0, 0, 32, 1 << 20).value();
  SimBackend none(bad);
  Status s = none.prepare(plan);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("peak_tflops and hbm_gbps"), std::string::npos) << s.toString();
}

TEST(SimBackendTest, ProfileOfAnotherModelIsRejected) {
  SimConfig config = testConfig(2);
  config.profile->layers.push_back(config.profile->layers.back());
  const pb::Plan plan = testPlan(); // the arena and the executor refer to it
  StatusOr<HostArena> arena = HostArena::create(plan);
  ASSERT_TRUE(arena.ok());
  SimBackend backend(config);
  Executor executor(arena.value(), backend, ExecutorOptions{});
  Status s = executor.start();
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(s.message(), "the profile has 3 layers, the plan 2 (a profile of another model?)");
}

TEST(SimBackendTest, SharedHostUplinkSplitsItsBandwidth) {
  // Uplink = one link (32 B/ms), shared by both GPUs' H2D copies, each at 16 B/ms while two
  // are in flight. gpu1 uploads B0's weights (144 B) from 0; on gpu0's link, one at a time:
  //   [0, 2]  x mb0 (32 B)                 B0's weights: 112 B left
  //   [2, 6]  F0's weights (64 B)          48 B left
  //   [6, 8]  x mb1 (32 B; ready at 2, after the weights that were ready at 0)   16 B left
  //   [8, 9]  B1's weight chunk 0          B0's weights end at 9
  SimConfig config = testConfig(2);
  config.hostUplinkGbps = 32e-6;
  const Timeline t = run(testPlan(), config, 1);
  const Span *x0 = find(t, "F0 s0 mb0 x");
  const Span *x1 = find(t, "F0 s0 mb1 x");
  const Span *w0 = find(t, "F0 s0 weights");
  const Span *w1 = find(t, "B0 s0 weights");
  ASSERT_TRUE(x0 && x1 && w0 && w1) << describe(t);
  EXPECT_DOUBLE_EQ(x0->startMs, 0);
  EXPECT_DOUBLE_EQ(x0->endMs, 2);
  EXPECT_DOUBLE_EQ(w0->startMs, 2);
  EXPECT_DOUBLE_EQ(w0->endMs, 6);
  EXPECT_DOUBLE_EQ(x1->startMs, 6);
  EXPECT_DOUBLE_EQ(x1->endMs, 8);
  EXPECT_DOUBLE_EQ(w1->startMs, 0);
  EXPECT_DOUBLE_EQ(w1->endMs, 9);
}

TEST(SimBackendTest, ForwardsEachSpanToTheTraceOnce) {
  TraceRecorder trace(true);
  const pb::Plan plan = testPlan(); // the arena and the executor refer to it
  StatusOr<HostArena> arena = HostArena::create(plan);
  ASSERT_TRUE(arena.ok());
  SimBackend backend(testConfig(2));
  backend.setTrace(&trace);
  Executor executor(arena.value(), backend, ExecutorOptions{});
  ASSERT_TRUE(executor.start().ok());
  ASSERT_TRUE(executor.dispatch(0, 1).ok());
  ASSERT_TRUE(executor.drain().ok());
  const Timeline t = backend.timeline();
  EXPECT_EQ(trace.eventCount(), t.spans.size());
  backend.timeline();
  EXPECT_EQ(trace.eventCount(), t.spans.size());
}

// A roofline run's trace gives each call its function, the FLOPs the roofline charged and
// those of each instruction, as the plan report's JSON lists them.
using SimTraceTest = rp::testing::TempDirTest;
TEST_F(SimTraceTest, TraceGivesTheRooflineFlopsOfEachCall) {
  TraceRecorder trace(true);
  SimConfig config;
  config.devices = 2;
  config.optimizerMs = 1;
  const pb::Plan plan = testPlan(); // the arena and the executor refer to it
  const Timeline t = run(plan, config, 1, &trace);
  const Span *call = find(t, "F0 s0 mb0 block_0");
  ASSERT_NE(call, nullptr) << describe(t);
  const SimBackend::TraceArgs args = {
      {"function", "block_0"}, {"flops", "64"}, {"instruction_flops", "0:64"}};
  EXPECT_EQ(call->args, args);
  ASSERT_TRUE(trace.write(path("roofline.json")).ok());
  const std::string text = readBytes(path("roofline.json"));
  // block_0: the matmul [2,4] x [4,4] (instruction 0), 64 FLOP; block_0_vjp: its two matmuls
  // (instructions 1 and 3).
  EXPECT_NE(text.find(R"("function":"block_0","flops":"64","instruction_flops":"0:64")"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"("function":"block_0_vjp","flops":"128","instruction_flops":"1:64 3:64")"),
            std::string::npos)
      << text;
  // With a profile the roofline charges nothing: the calls carry their step only.
  TraceRecorder profiled(true);
  run(plan, testConfig(2), 1, &profiled);
  ASSERT_TRUE(profiled.write(path("profile.json")).ok());
  const std::string other = readBytes(path("profile.json"));
  EXPECT_EQ(other.find("instruction_flops"), std::string::npos) << other;
}

TEST(SimBackendTest, BadConfigurations) {
  SimConfig c = testConfig(0);
  EXPECT_EQ(validateSimConfig(c).message(), "the simulator needs at least 1 GPU (got 0)");
  c = testConfig(1);
  c.adamwGbps = 0;
  EXPECT_EQ(validateSimConfig(c).code(), StatusCode::InvalidArgument);
  c = testConfig(1);
  c.optimizerMs = -1;
  EXPECT_EQ(validateSimConfig(c).code(), StatusCode::InvalidArgument);
  c = testConfig(1);
  c.profile->layers[0].fwdMs = -1;
  EXPECT_EQ(validateSimConfig(c).code(), StatusCode::InvalidArgument);
  EXPECT_TRUE(validateSimConfig(testConfig(3)).ok());
}

// rp-run --backend sim --compare on a plan: the executor's row next to the analytic ones, and
// the note on their difference (which read a pointer into the result vector after a push_back
// moved it; found by ASan, docs/FUZZING.md; this test catches it under the sanitizer build).
TEST(SimBackendTest, PlanModeComparisonReport) {
  std::string dirTemplate =
      (std::filesystem::temp_directory_path() / "rp-sim-compare-XXXXXX").string();
  char *dir = ::mkdtemp(dirTemplate.data());
  ASSERT_NE(dir, nullptr);
  const std::string planPath = std::string(dir) + "/model.rpplan";
  ASSERT_TRUE(writePlanFile(planPath, testPlan()).ok());
  SimulateOptions options;
  options.planPath = planPath;
  options.profilePath.clear();
  options.optimizerMs = 1;
  options.compare = true;
  char *text = nullptr;
  size_t size = 0;
  std::FILE *out = ::open_memstream(&text, &size);
  ASSERT_NE(out, nullptr);
  Status s = simulate(options, out);
  std::fclose(out);
  const std::string report(text, size);
  std::free(text);
  std::remove(planPath.c_str());
  ::rmdir(dir);
  ASSERT_TRUE(s.ok()) << s.toString();
  EXPECT_NE(report.find("roundpipe-sync"), std::string::npos) << report;
  EXPECT_NE(report.find("executor-sync"), std::string::npos) << report;
}

// The fused LM head's roofline: compute-bound at the 1.7B shape, 2 N H V FLOPs for the
// forward op and 6 N H V for the one-pass VJP (kernels/FlopRules.h).
TEST(SimRoofline, LinearCrossEntropyCountsTheHeadsProducts) {
  using rp::testing::ref;
  using rp::testing::tensorType;
  rp::partition::TargetSpec target;
  target.peakTflops = 1000;
  target.hbmGbps = 3000;
  auto hidden = tensorType(pb::BF16, {4096, 2048}), weight = tensorType(pb::BF16, {151936, 2048});
  auto labels = tensorType(pb::I64, {4096}), scalar = tensorType(pb::BF16, {});
  const double products = 2.0 * 4096 * 2048 * 151936;
  for (bool vjp : {false, true}) {
    pb::Function f;
    pb::Instruction *ins = f.add_body();
    ins->set_kernel(vjp ? "linear_cross_entropy_vjp" : "linear_cross_entropy");
    *ins->add_operands() = ref(pb::BufferRef::ARG, 0, hidden);
    *ins->add_operands() = ref(pb::BufferRef::ARG, 1, weight);
    *ins->add_operands() = ref(pb::BufferRef::ARG, 2, labels);
    *ins->add_results() = ref(pb::BufferRef::RESULT, 0, scalar);
    if (vjp) {
      *ins->add_operands() = ref(pb::BufferRef::ARG, 3, scalar);
      *ins->add_results() = ref(pb::BufferRef::RESULT, 1, hidden);
      *ins->add_results() = ref(pb::BufferRef::RESULT, 2, weight);
    }
    const double flops = (vjp ? 3 : 1) * products;
    EXPECT_DOUBLE_EQ(rooflineMs(f, target, 0.5), flops / (1000 * 0.5 * 1e9)) << ins->kernel();
  }
}

/// A target of 100 TFLOP/s whose HBM is so fast that the FLOPs decide every roofline time.
rp::partition::TargetSpec flopBoundTarget() {
  rp::partition::TargetSpec target;
  target.peakTflops = 100;
  target.hbmGbps = 1e9; // memory time negligible: the FLOPs decide
  return target;
}

// A causal attention is charged its unmasked (query, key) pairs, S (S + 1) / 2 per head, as
// the kernels compute them and the plan report counts them (kernels/FlopRules.h), not half of
// the S x S square; a sliding window only the pairs in its band.
TEST(SimRoofline, CausalAttentionCountsTheUnmaskedPairs) {
  using rp::testing::ref;
  const rp::partition::TargetSpec target = flopBoundTarget();
  const int64_t heads = 2 * 16, s = 2048, d = 128;
  const pb::TensorType q = rp::testing::tensorType(pb::BF16, {2, 16, s, d});
  for (int64_t window : {int64_t(0), int64_t(512)}) {
    pb::Function f;
    pb::Instruction *ins = f.add_body();
    ins->set_kernel("attention");
    for (int j = 0; j < 3; ++j)
      *ins->add_operands() = ref(pb::BufferRef::ARG, j, q);
    *ins->add_results() = ref(pb::BufferRef::RESULT, 0, q);
    (*ins->mutable_attrs())["scale"].set_f(0.125);
    (*ins->mutable_attrs())["causal"].set_b(true);
    if (window)
      (*ins->mutable_attrs())["window"].set_i(window);
    const double pairs = window ? 512.0 * 513 / 2 + (s - 512.0) * 512 : s * (s + 1.0) / 2;
    const double flops = 2.0 * heads * pairs * (d + d);
    EXPECT_EQ(instructionCost(f.body(0), target, 0.5).flops, flops) << window;
    EXPECT_DOUBLE_EQ(rooflineMs(f, target, 0.5), flops / (100 * 0.5 * 1e9)) << window;
  }
}

// Routed experts (Qwen3-30B-A3B's shape: 4096 tokens x top-8 = 32768 rows, 128 experts of
// 2048 -> 768): compute-bound at 2 R K N, the active FLOPs; the [E, K, N] weights (and the
// wgrad's [E, K, N] result) count only as bytes, never as E times the FLOPs.
TEST(SimRoofline, GroupedMatMulCountsTheActiveRows) {
  using rp::testing::ref;
  using rp::testing::tensorType;
  const rp::partition::TargetSpec target = flopBoundTarget();
  const int64_t rows = 4096 * 8, k = 2048, n = 768, experts = 128;
  auto lhs = tensorType(pb::BF16, {rows, k}), out = tensorType(pb::BF16, {rows, n});
  auto weights = tensorType(pb::BF16, {experts, k, n}), offsets = tensorType(pb::I64, {experts + 1});
  const double flops = 2.0 * rows * k * n; // 1.03e11
  for (bool wgrad : {false, true}) {
    pb::Function f;
    pb::Instruction *ins = f.add_body();
    ins->set_kernel(wgrad ? "grouped_matmul_wgrad" : "grouped_matmul");
    *ins->add_operands() = ref(pb::BufferRef::ARG, 0, lhs);
    *ins->add_operands() = ref(pb::BufferRef::ARG, 1, wgrad ? out : weights);
    *ins->add_operands() = ref(pb::BufferRef::ARG, 2, offsets);
    *ins->add_results() = ref(pb::BufferRef::RESULT, 0, wgrad ? weights : out);
    // 2.06 ms of compute against < 1e-6 ms of memory traffic; E x the FLOPs would be 264 ms.
    EXPECT_DOUBLE_EQ(rooflineMs(f, target, 0.5), flops / (100 * 0.5 * 1e9)) << ins->kernel();
  }
}

} // namespace
} // namespace rp::runtime
