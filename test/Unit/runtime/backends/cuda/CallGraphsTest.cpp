//===- CallGraphsTest.cpp - The CUDA-graph cache of plan-function calls -----===//
//
// CallGraphCache's policy over a fake GraphDriver (no GPU): which calls capture, which
// replay, what a failed capture or launch leaves behind, and that every graph is destroyed.
// The fake records what the cache asks of it; "capture" runs the enqueue callback as CUDA
// stream capture would (the launches are recorded, not run).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CallGraphs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace rp::runtime {
namespace {

class FakeDriver final : public GraphDriver {
public:
  StatusOr<Graph> capture(cudaStream_t stream, const std::function<Status()> &enqueue) override {
    (void)stream;
    ++captures;
    inCapture = true;
    const Status s = enqueue();
    inCapture = false;
    if (!s.ok())
      return s;
    if (failNextCapture) {
      failNextCapture = false;
      return internal("cudaStreamEndCapture: fake failure");
    }
    graphs.push_back(static_cast<int>(graphs.size()) + 1);
    return static_cast<Graph>(&graphs.back());
  }
  Status launch(Graph graph, cudaStream_t stream) override {
    (void)stream;
    launched.push_back(*static_cast<int *>(graph));
    return failLaunch ? internal("cudaGraphLaunch: fake failure") : okStatus();
  }
  void destroy(Graph graph) override { destroyed.push_back(*static_cast<int *>(graph)); }

  int captures = 0;
  bool inCapture = false, failNextCapture = false, failLaunch = false;
  std::vector<int> launched, destroyed;
  std::vector<int> graphs; // graph ids, 1, 2, ...; reserved so the handles stay valid

  FakeDriver() { graphs.reserve(64); }
};

CallFrame frame(int function, int64_t slot, int64_t set) {
  CallFrame f;
  f.function = function;
  f.slotOffset = slot;
  f.args = {set + 0, set + 256};
  f.results = {set + 512};
  return f;
}

/// An enqueue callback that counts its direct runs and its runs under capture.
struct Launches {
  FakeDriver &driver;
  int direct = 0, captured = 0;
  Status fail = okStatus();
  std::function<Status()> fn() {
    return [this] {
      (driver.inCapture ? captured : direct) += 1;
      return fail;
    };
  }
};

TEST(CallGraphCacheTest, ShortFunctionsLaunchDirectly) {
  FakeDriver driver;
  Launches l{driver};
  CallGraphCache cache(driver, 2);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(cache.run(CallGraphKey::of(frame(0, 0, 4096)), 1, nullptr, l.fn()).ok());
  EXPECT_EQ(l.direct, 3);
  EXPECT_EQ(driver.captures, 0);
  EXPECT_TRUE(driver.launched.empty());
  EXPECT_EQ(cache.graphs(), 0u);
  EXPECT_EQ(cache.replays(), 0);
}

TEST(CallGraphCacheTest, FirstCallCapturesLaterCallsReplay) {
  FakeDriver driver;
  Launches l{driver};
  CallGraphCache cache(driver, 2);
  const CallGraphKey key = CallGraphKey::of(frame(3, 0, 4096));
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(cache.run(key, 5, nullptr, l.fn()).ok());
  EXPECT_EQ(l.direct, 0);   // never launched outside a graph
  EXPECT_EQ(l.captured, 1); // captured once
  EXPECT_EQ(driver.launched, (std::vector<int>{1, 1, 1, 1}));
  EXPECT_EQ(cache.graphs(), 1u);
  EXPECT_EQ(cache.replays(), 4);
}

TEST(CallGraphCacheTest, EachFrameHasItsOwnGraph) {
  FakeDriver driver;
  Launches l{driver};
  CallGraphCache cache(driver, 2);
  // Two weight slots x two activation sets, as a worker alternates them, then repeats.
  const std::vector<CallFrame> frames = {frame(1, 0, 4096), frame(1, 0, 8192),
                                         frame(1, 1024, 4096), frame(1, 1024, 8192)};
  for (int round = 0; round < 3; ++round)
    for (const CallFrame &f : frames)
      ASSERT_TRUE(cache.run(CallGraphKey::of(f), 3, nullptr, l.fn()).ok());
  EXPECT_EQ(cache.graphs(), 4u);
  EXPECT_EQ(l.captured, 4);
  EXPECT_EQ(driver.launched, (std::vector<int>{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4}));
  // Another function on the same frame, and the same function with other results, differ.
  CallFrame other = frame(1, 0, 4096);
  other.results = {4096 + 768};
  ASSERT_TRUE(cache.run(CallGraphKey::of(other), 3, nullptr, l.fn()).ok());
  ASSERT_TRUE(cache.run(CallGraphKey::of(frame(2, 0, 4096)), 3, nullptr, l.fn()).ok());
  EXPECT_EQ(cache.graphs(), 6u);
}

TEST(CallGraphCacheTest, AFailedCaptureIsReportedAndNotCached) {
  FakeDriver driver;
  Launches l{driver};
  CallGraphCache cache(driver, 2);
  const CallGraphKey key = CallGraphKey::of(frame(0, 0, 4096));
  l.fail = internal("instruction 1: launch failed");
  Status s = cache.run(key, 4, nullptr, l.fn());
  EXPECT_EQ(s.message(), "instruction 1: launch failed");
  EXPECT_EQ(cache.graphs(), 0u);
  EXPECT_TRUE(driver.launched.empty());

  l.fail = okStatus();
  driver.failNextCapture = true;
  s = cache.run(key, 4, nullptr, l.fn());
  EXPECT_NE(s.message().find("cudaStreamEndCapture"), std::string::npos) << s.toString();
  EXPECT_EQ(cache.graphs(), 0u);

  ASSERT_TRUE(cache.run(key, 4, nullptr, l.fn()).ok()); // captures again, then works
  EXPECT_EQ(driver.captures, 3);
  EXPECT_EQ(cache.graphs(), 1u);
  EXPECT_EQ(driver.launched, (std::vector<int>{1}));
}

TEST(CallGraphCacheTest, LaunchErrorsPropagate) {
  FakeDriver driver;
  Launches l{driver};
  CallGraphCache cache(driver, 2);
  driver.failLaunch = true;
  const Status s = cache.run(CallGraphKey::of(frame(0, 0, 0)), 2, nullptr, l.fn());
  EXPECT_NE(s.message().find("cudaGraphLaunch"), std::string::npos) << s.toString();
}

TEST(CallGraphCacheTest, DestroysEveryGraph) {
  FakeDriver driver;
  Launches l{driver};
  {
    CallGraphCache cache(driver, 2);
    for (int f = 0; f < 3; ++f)
      ASSERT_TRUE(cache.run(CallGraphKey::of(frame(f, 0, 0)), 2, nullptr, l.fn()).ok());
  }
  std::vector<int> destroyed = driver.destroyed;
  std::sort(destroyed.begin(), destroyed.end());
  EXPECT_EQ(destroyed, (std::vector<int>{1, 2, 3}));
}

} // namespace
} // namespace rp::runtime
