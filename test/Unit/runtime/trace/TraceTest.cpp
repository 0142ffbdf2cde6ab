//===- TraceTest.cpp - Chrome trace format recorder -----------------------===//
//
// TraceRecorder (runtime/trace/Trace.h): the written file parses as JSON with the thread names
// and the events sorted per track, the output is reproducible, concurrent recording loses no
// event, and a disabled recorder records and writes nothing.
//
//===----------------------------------------------------------------------===//

#include "runtime/trace/Trace.h"

#include "test/Unit/support/TempDirTest.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace rp::runtime {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

class TraceTest : public rp::testing::TempDirTest {
protected:
  /// Records a fixed set of events (explicit times, out of order) into `trace`.
  static void recordFixed(TraceRecorder &trace) {
    int compute = trace.track("device 0 compute");
    int optimizer = trace.track("optimizer");
    trace.complete(optimizer, "adamw", "optimizer", 300.0, 50.0, {{"params", "12"}});
    trace.complete(compute, "B0", "compute", 120.5, 80.25);
    trace.complete(compute, "F0", "compute", 10.0, 100.0, {{"micro_batch", "0"}, {"stage", "F0"}});
  }

};

TEST_F(TraceTest, WriteParsesWithThreadNamesAndSortedEvents) {
  TraceRecorder trace;
  EXPECT_TRUE(trace.enabled());
  recordFixed(trace);
  EXPECT_EQ(trace.track("device 0 compute"), 1); // the same name, the same track
  EXPECT_EQ(trace.eventCount(), 3u);
  ASSERT_TRUE(trace.write(path("trace.json")).ok());

  json doc = json::parse(readBytes(path("trace.json")));
  EXPECT_EQ(doc["displayTimeUnit"], "ms");
  ASSERT_TRUE(doc["traceEvents"].is_array());
  std::map<int, std::string> threadNames;
  std::string processName;
  std::vector<json> events;
  for (const json &e : doc["traceEvents"]) {
    EXPECT_EQ(e["pid"], 1);
    if (e["ph"] == "M" && e["name"] == "thread_name")
      threadNames[e["tid"].get<int>()] = e["args"]["name"].get<std::string>();
    else if (e["ph"] == "M" && e["name"] == "process_name")
      processName = e["args"]["name"].get<std::string>();
    else if (e["ph"] == "X")
      events.push_back(e);
  }
  EXPECT_EQ(processName, "rp-run");
  EXPECT_EQ(threadNames, (std::map<int, std::string>{{1, "device 0 compute"}, {2, "optimizer"}}));
  ASSERT_EQ(events.size(), 3u);
  // Sorted by (track, start).
  EXPECT_EQ(events[0]["name"], "F0");
  EXPECT_EQ(events[0]["tid"], 1);
  EXPECT_EQ(events[0]["cat"], "compute");
  EXPECT_DOUBLE_EQ(events[0]["ts"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(events[0]["dur"].get<double>(), 100.0);
  EXPECT_EQ(events[0]["args"]["micro_batch"], "0");
  EXPECT_EQ(events[0]["args"]["stage"], "F0");
  EXPECT_EQ(events[1]["name"], "B0");
  EXPECT_DOUBLE_EQ(events[1]["ts"].get<double>(), 120.5);
  EXPECT_DOUBLE_EQ(events[1]["dur"].get<double>(), 80.25);
  EXPECT_FALSE(events[1].contains("args"));
  EXPECT_EQ(events[2]["name"], "adamw");
  EXPECT_EQ(events[2]["tid"], 2);
  EXPECT_EQ(events[2]["args"]["params"], "12");
}

TEST_F(TraceTest, OutputIsReproducible) {
  TraceRecorder a, b;
  recordFixed(a);
  recordFixed(b);
  ASSERT_TRUE(a.write(path("a.json")).ok());
  ASSERT_TRUE(b.write(path("b.json")).ok());
  EXPECT_EQ(readBytes(path("a.json")), readBytes(path("b.json")));
}

TEST_F(TraceTest, ConcurrentRecording) {
  TraceRecorder trace;
  constexpr int kThreads = 4, kEvents = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&trace, t] {
      int track = trace.track("device " + std::to_string(t));
      for (int i = 0; i < kEvents; ++i) {
        double start = trace.nowUs();
        trace.complete(track, "stage", "compute", start, trace.nowUs() - start,
                       {{"i", std::to_string(i)}});
      }
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(trace.eventCount(), size_t(kThreads * kEvents));
  ASSERT_TRUE(trace.write(path("trace.json")).ok());
  json doc = json::parse(readBytes(path("trace.json")));
  size_t complete = 0;
  std::map<int, double> lastStart;
  for (const json &e : doc["traceEvents"]) {
    if (e["ph"] != "X")
      continue;
    ++complete;
    int tid = e["tid"].get<int>();
    double ts = e["ts"].get<double>();
    if (lastStart.count(tid)) {
      EXPECT_LE(lastStart[tid], ts);
    }
    lastStart[tid] = ts;
    EXPECT_GE(e["dur"].get<double>(), 0.0);
  }
  EXPECT_EQ(complete, size_t(kThreads * kEvents));
  EXPECT_EQ(lastStart.size(), size_t(kThreads));
}

TEST_F(TraceTest, ScopeAndClock) {
  TraceRecorder trace;
  double t0 = trace.nowUs();
  EXPECT_GE(t0, 0.0);
  int track = trace.track("optimizer");
  {
    TraceScope scope(trace, track, "adamw", "optimizer");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_GT(trace.nowUs(), t0);
  ASSERT_EQ(trace.eventCount(), 1u);
  ASSERT_TRUE(trace.write(path("trace.json")).ok());
  json doc = json::parse(readBytes(path("trace.json")));
  const json &last = doc["traceEvents"].back();
  EXPECT_EQ(last["name"], "adamw");
  EXPECT_GE(last["dur"].get<double>(), 2000.0);
}

TEST_F(TraceTest, NonUtf8NamesStillParse) {
  TraceRecorder trace;
  int track = trace.track("bad \xff track");
  trace.complete(track, "bad \xfe name", "c", 0, 1, {{"k\xff", "v\xfe"}});
  ASSERT_TRUE(trace.write(path("trace.json")).ok());
  json doc = json::parse(readBytes(path("trace.json")), nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(doc.is_discarded());
  EXPECT_EQ(doc["traceEvents"].back()["name"], "bad \xEF\xBF\xBD name"); // U+FFFD
}

TEST_F(TraceTest, DisabledRecorderRecordsAndWritesNothing) {
  TraceRecorder trace(false);
  EXPECT_FALSE(trace.enabled());
  EXPECT_EQ(trace.track("device 0 compute"), 0);
  trace.complete(0, "F0", "compute", 0, 1);
  { TraceScope scope(trace, 0, "adamw", "optimizer"); }
  EXPECT_EQ(trace.eventCount(), 0u);
  ASSERT_TRUE(trace.write(path("trace.json")).ok());
  EXPECT_FALSE(fs::exists(path("trace.json")));
}

TEST_F(TraceTest, WriteErrorNamesPath) {
  TraceRecorder trace;
  recordFixed(trace);
  Status s = trace.write(path("missing/trace.json"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::Unavailable);
  EXPECT_NE(s.message().find(path("missing/trace.json")), std::string::npos) << s.message();
}

} // namespace
} // namespace rp::runtime
