//===- SimTimelineTest.cpp - Statistics and outputs of simulated timelines ===//
//
// computeStats on hand-made timelines (values worked out in the comments), the engine's
// in-order queues, lead work and shared uplinks, and the Chrome trace and SVG Gantt writers
// (parsed back, written atomically).
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/ScheduleSim.h"
#include "runtime/sim/Timeline.h"

#include "test/Unit/support/TempDirTest.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

namespace {

using namespace rp::sim;

Span span(int device, Lane lane, double s, double e, std::string label = "x",
          std::string category = "forward") {
  return Span{device, lane, s, e, std::move(label), std::move(category), 0, {}};
}

/// Two devices and the host:
///   dev0 compute [0,4] [3,6]  -> union [0,6]: busy 6, idle 4, fill 0, drain 4
///   dev0 h2d act [5,7], d2h [6,8] -> transfer union [5,8] = 3; outside compute: [6,8] = 2
///   dev1 compute [2,5] [6,7]  -> busy 4, idle 6, fill 2, drain 3
///   host [0,10]               -> makespan 10
Timeline handMade() {
  Timeline t;
  t.schedule = "hand";
  t.numDevices = 2;
  t.spans = {span(0, Lane::Compute, 0, 4),          span(0, Lane::Compute, 3, 6),
             span(0, Lane::ActivationUpload, 5, 7, "in", "activations"),
             span(0, Lane::Download, 6, 8, "out", "activations"),
             span(1, Lane::Compute, 2, 5, "B0 mb0", "backward"), span(1, Lane::Compute, 6, 7),
             span(-1, Lane::Host, 0, 10, "adamw layer 0", "optimizer")};
  return t;
}

TEST(SimTimelineTest, LaneNames) {
  EXPECT_STREQ(laneName(Lane::Compute), "compute");
  EXPECT_STREQ(laneName(Lane::ActivationUpload), "h2d activations");
  EXPECT_STREQ(laneName(Lane::WeightUpload), "h2d weights");
  EXPECT_STREQ(laneName(Lane::Download), "d2h");
  EXPECT_STREQ(laneName(Lane::Host), "host");
}

TEST(SimTimelineTest, StatsOfHandMadeTimeline) {
  TimelineStats s = computeStats(handMade());
  EXPECT_DOUBLE_EQ(s.makespanMs, 10);
  EXPECT_EQ(s.numSteps, 1);
  EXPECT_DOUBLE_EQ(s.stepMs, 10);
  ASSERT_EQ(s.devices.size(), 2u);
  EXPECT_DOUBLE_EQ(s.devices[0].computeBusyMs, 6);
  EXPECT_DOUBLE_EQ(s.devices[0].computeIdleMs, 4);
  EXPECT_DOUBLE_EQ(s.devices[0].transferBusyMs, 3);
  EXPECT_DOUBLE_EQ(s.devices[0].exposedTransferMs, 2);
  EXPECT_DOUBLE_EQ(s.devices[0].fillMs, 0);
  EXPECT_DOUBLE_EQ(s.devices[0].drainMs, 4);
  EXPECT_DOUBLE_EQ(s.devices[1].computeBusyMs, 4);
  EXPECT_DOUBLE_EQ(s.devices[1].computeIdleMs, 6);
  EXPECT_DOUBLE_EQ(s.devices[1].exposedTransferMs, 0);
  EXPECT_DOUBLE_EQ(s.devices[1].fillMs, 2);
  EXPECT_DOUBLE_EQ(s.devices[1].drainMs, 3);
  EXPECT_DOUBLE_EQ(s.computeBusyMs, 10);
  EXPECT_DOUBLE_EQ(s.computeIdleMs, 10);
  EXPECT_DOUBLE_EQ(s.hostBusyMs, 10);
  // Bubble 10 / (2 * 10); steady (10 - fill 2 - drain 7) / 20; exposed 2 / 20.
  EXPECT_DOUBLE_EQ(s.bubblePercent, 50);
  EXPECT_DOUBLE_EQ(s.steadyBubblePercent, 5);
  EXPECT_DOUBLE_EQ(s.exposedTransferPercent, 10);
}

TEST(SimTimelineTest, EmptyAndIdleDevices) {
  Timeline empty;
  empty.numDevices = 3;
  TimelineStats s = computeStats(empty);
  EXPECT_EQ(s.makespanMs, 0);
  EXPECT_EQ(s.bubblePercent, 0);
  ASSERT_EQ(s.devices.size(), 3u);

  // A device with no compute is idle the whole run (all of it fill); spans of devices outside
  // [0, N) are ignored; the step count comes from Span::step.
  Timeline t;
  t.numDevices = 2;
  t.spans = {span(0, Lane::Compute, 0, 8), span(7, Lane::Compute, 0, 100)};
  t.spans[0].step = 1;
  s = computeStats(t);
  EXPECT_DOUBLE_EQ(s.makespanMs, 8);
  EXPECT_EQ(s.numSteps, 2);
  EXPECT_DOUBLE_EQ(s.stepMs, 4);
  EXPECT_DOUBLE_EQ(s.devices[1].fillMs, 8);
  EXPECT_DOUBLE_EQ(s.devices[1].drainMs, 0);
  EXPECT_DOUBLE_EQ(s.bubblePercent, 50);
  EXPECT_DOUBLE_EQ(s.steadyBubblePercent, 0);
}

TEST(SimEngineTest, InOrderQueuesLeadAndLatency) {
  TaskGraph g;
  // a: dev0 [0,3]. b: dev0 after a in queue order, no deps: [3,5].
  int a = g.add(SimTask{0, Lane::Compute, 3, 0, {}, {}, -1, "a", "forward", "", "", 0});
  int b = g.add(SimTask{0, Lane::Compute, 2, 0, {}, {}, -1, "b", "forward", "", "", 0});
  // c: dev1, 4 ms of which 3 lead; deps a + latency 1 -> main part may start at 4, so the
  // lead starts at 1: [1,4] lead, [4,5] main.
  int c = g.add(SimTask{1, Lane::Compute, 4, 3, {{a, 1}}, {}, -1, "c", "backward", "rc",
                        "recompute", 0});
  // d: dev1 download after c, needs b (5): [5,7].
  int d = g.add(SimTask{1, Lane::Download, 2, 0, {{b, 0}, {c, 0}}, {}, -1, "d", "activations",
                        "", "", 0});
  auto r = simulate(g, 2, "unit");
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_DOUBLE_EQ(r->startMs[a], 0);
  EXPECT_DOUBLE_EQ(r->endMs[a], 3);
  EXPECT_DOUBLE_EQ(r->startMs[b], 3);
  EXPECT_DOUBLE_EQ(r->endMs[b], 5);
  EXPECT_DOUBLE_EQ(r->startMs[c], 1);
  EXPECT_DOUBLE_EQ(r->endMs[c], 5);
  EXPECT_DOUBLE_EQ(r->startMs[d], 5);
  EXPECT_DOUBLE_EQ(r->endMs[d], 7);
  // Spans: a, b, lead of c, rest of c, d.
  ASSERT_EQ(r->timeline.spans.size(), 5u);
  EXPECT_EQ(r->timeline.spans[2].label, "rc");
  EXPECT_DOUBLE_EQ(r->timeline.spans[2].endMs, 4);
  EXPECT_EQ(r->timeline.spans[3].label, "c");
  EXPECT_DOUBLE_EQ(r->timeline.spans[3].startMs, 4);
}

TEST(SimEngineTest, SharedUplinkIsFirstComeFirstServed) {
  // Two devices upload 2 ms each through one uplink: dev1's is ready at 0, dev0's at 1 (after
  // its compute), so dev1 goes [0,2] and dev0 waits: [2,4].
  TaskGraph g;
  int k = g.add(SimTask{0, Lane::Compute, 1, 0, {}, {}, -1, "k", "forward", "", "", 0});
  int u0 = g.add(SimTask{0, Lane::ActivationUpload, 2, 0, {{k, 0}}, {}, 0, "u0", "activations",
                         "", "", 0});
  int u1 = g.add(SimTask{1, Lane::ActivationUpload, 2, 0, {}, {}, 0, "u1", "activations", "",
                         "", 0});
  auto r = simulate(g, 2, "uplink");
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->startMs[u1], 0);
  EXPECT_DOUBLE_EQ(r->startMs[u0], 2);
  EXPECT_DOUBLE_EQ(r->endMs[u0], 4);
}

TEST(SimEngineTest, Errors) {
  TaskGraph bad;
  bad.add(SimTask{2, Lane::Compute, 1, 0, {}, {}, -1, "x", "", "", "", 0});
  auto r = simulate(bad, 2, "bad");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("device 2"), std::string::npos);

  TaskGraph lead;
  lead.add(SimTask{0, Lane::Compute, 1, 2, {}, {}, -1, "x", "", "", "", 0});
  EXPECT_FALSE(simulate(lead, 1, "lead").ok());

  // A cycle through queue order: a waits for b, b is behind a in the same queue.
  TaskGraph cycle;
  cycle.add(SimTask{0, Lane::Compute, 1, 0, {{1, 0}}, {}, -1, "a", "", "", "", 0});
  cycle.add(SimTask{0, Lane::Compute, 1, 0, {}, {}, -1, "b", "", "", "", 0});
  r = simulate(cycle, 1, "cycle");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), rp::base::StatusCode::Internal);
  EXPECT_NE(r.status().message().find("deadlock"), std::string::npos);
  EXPECT_NE(r.status().message().find("'a'"), std::string::npos);
}

class SimOutputTest : public rp::testing::TempDirTest {};

TEST_F(SimOutputTest, ChromeTraceHasOneTrackPerLane) {
  std::string p = path("trace.json");
  ASSERT_TRUE(writeChromeTrace(handMade(), p).ok());
  auto j = nlohmann::json::parse(readBytes(p));
  std::vector<std::string> threads;
  int complete = 0;
  for (const auto &e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name")
      threads.push_back(e["args"]["name"]);
    if (e["ph"] == "X") {
      ++complete;
      if (e["name"] == "B0 mb0") {
        EXPECT_EQ(e["cat"], "backward");
        EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 2000.0); // 2 ms in µs
        EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 3000.0);
      }
    }
  }
  EXPECT_EQ(complete, 7);
  std::vector<std::string> expected = {"device 0 compute", "device 0 h2d activations",
                                       "device 0 d2h", "device 1 compute", "host"};
  EXPECT_EQ(threads, expected);
  EXPECT_EQ(listDir(), std::vector<std::string>{"trace.json"}); // no temporary left behind
}

TEST_F(SimOutputTest, SvgGanttIsSelfContained) {
  std::string p = path("gantt.svg");
  writeBytes(p, "old contents that must disappear");
  ASSERT_TRUE(writeSvgGantt(handMade(), p).ok());
  std::string svg = readBytes(p);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(svg.find("</svg>\n"), std::string::npos);
  EXPECT_EQ(svg.find("old contents"), std::string::npos);
  for (const char *row : {">device 0 compute<", ">device 0 d2h<", ">device 1 compute<", ">host<",
                          ">time (ms)<", ">hand<", "makespan 10.0 ms, bubble 50.0 %"})
    EXPECT_NE(svg.find(row), std::string::npos) << row;
  for (const char *legend : {">forward<", ">backward<", ">activations<", ">optimizer<"})
    EXPECT_NE(svg.find(legend), std::string::npos) << legend;
  EXPECT_NE(svg.find("<title>B0 mb0 [2.000, 5.000] ms</title>"), std::string::npos);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_EQ(listDir(), std::vector<std::string>{"gantt.svg"});
}

TEST_F(SimOutputTest, LabelsAreEscaped) {
  Timeline t;
  t.schedule = "a<b>&\"c\"";
  t.numDevices = 1;
  t.spans = {span(0, Lane::Compute, 0, 1, "F<0> & mb\"1\"", "forward")};
  std::string p = path("esc.svg");
  ASSERT_TRUE(writeSvgGantt(t, p).ok());
  std::string svg = readBytes(p);
  EXPECT_NE(svg.find("a&lt;b&gt;&amp;&quot;c&quot;"), std::string::npos);
  EXPECT_NE(svg.find("F&lt;0&gt; &amp; mb&quot;1&quot;"), std::string::npos);
}

TEST_F(SimOutputTest, WriteErrorsLeaveNothing) {
  std::string p = path("missing-dir/out.svg");
  rp::base::Status s = writeSvgGantt(handMade(), p);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("missing-dir"), std::string::npos);
  EXPECT_FALSE(writeChromeTrace(handMade(), path("missing-dir/t.json")).ok());
  EXPECT_TRUE(listDir().empty());
}

} // namespace
