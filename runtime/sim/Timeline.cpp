//===- Timeline.cpp - Statistics, Chrome trace and SVG Gantt of a run -----===//
//
// Busy times are lengths of unions of intervals (overlapping spans of one lane count once);
// the exposed transfer time is |transfer union \ compute union| per device. The SVG is plain
// SVG 1.1 text with no scripts or external references.
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/Timeline.h"

#include "base/AtomicFile.h"
#include "runtime/trace/Trace.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <utility>

namespace rp::sim {

using base::Status;

const char *laneName(Lane lane) {
  switch (lane) {
  case Lane::Compute:
    return "compute";
  case Lane::ActivationUpload:
    return "h2d activations";
  case Lane::WeightUpload:
    return "h2d weights";
  case Lane::Download:
    return "d2h";
  case Lane::Host:
    return "host";
  case Lane::NodeLink:
    return "node link";
  }
  return "unknown";
}

namespace {

using Interval = std::pair<double, double>;

/// Sorts and merges intervals into disjoint ones (empty intervals dropped).
std::vector<Interval> mergeIntervals(std::vector<Interval> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](const Interval &i) { return !(i.second > i.first); }),
          v.end());
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval &i : v) {
    if (!out.empty() && i.first <= out.back().second)
      out.back().second = std::max(out.back().second, i.second);
    else
      out.push_back(i);
  }
  return out;
}

double totalLength(const std::vector<Interval> &merged) {
  double sum = 0;
  for (const Interval &i : merged)
    sum += i.second - i.first;
  return sum;
}

/// Length of the intersection of two merged interval lists.
double intersectionLength(const std::vector<Interval> &a, const std::vector<Interval> &b) {
  double sum = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    double lo = std::max(a[i].first, b[j].first);
    double hi = std::min(a[i].second, b[j].second);
    if (hi > lo)
      sum += hi - lo;
    if (a[i].second < b[j].second)
      ++i;
    else
      ++j;
  }
  return sum;
}

std::string xmlEscape(const std::string &s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      // Control characters are not allowed in XML 1.0 text.
      if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n')
        out += c;
      break;
    }
  }
  return out;
}

std::string fmt(double v, int decimals = 2) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

/// Fill color of a span category; unknown categories cycle through a fixed palette in order of
/// first appearance (deterministic for a given timeline).
class CategoryColors {
public:
  std::string color(const std::string &category) {
    static const std::map<std::string, std::string> kKnown = {
        {"forward", "#4F81BD"},   {"backward", "#C0504D"},     {"recompute", "#F79646"},
        {"fused", "#8064A2"},     {"weight-grad", "#D4A6A4"},  {"weights", "#9BBB59"},
        {"activations", "#4BACC6"}, {"gradients", "#E6B422"}, {"optimizer", "#7F7F7F"}};
    auto it = kKnown.find(category);
    if (it != kKnown.end())
      return it->second;
    auto found = extra_.find(category);
    if (found != extra_.end())
      return found->second;
    static const char *kPalette[] = {"#2E8B57", "#B8860B", "#6A5ACD", "#CD5C5C", "#20B2AA",
                                     "#DA70D6", "#708090", "#8B4513"};
    std::string c = kPalette[extra_.size() % (sizeof(kPalette) / sizeof(kPalette[0]))];
    extra_[category] = c;
    return c;
  }

private:
  std::map<std::string, std::string> extra_;
};

/// A "nice" tick step (1, 2 or 5 x 10^k) giving at most about `target` ticks over `range`.
double niceStep(double range, int target) {
  if (!(range > 0))
    return 1;
  double raw = range / target;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw)
      return m * mag;
  return 10 * mag;
}

/// The row device of a span: its device, or for Lane::Host its host thread (-2: the weights
/// writer, any other value: the optimizer, -1); the node link's row is -1.
int rowDevice(const Span &s) {
  if (s.lane == Lane::NodeLink)
    return -1;
  if (s.lane != Lane::Host)
    return s.device;
  return s.device == -2 ? -2 : -1;
}

bool hostSide(Lane lane) { return lane == Lane::Host || lane == Lane::NodeLink; }

/// The (device, lane) rows that hold spans, devices ascending then lanes, host-side rows last
/// (the optimizer, the weights writer, then the node link).
std::vector<std::pair<int, Lane>> rowsOf(const Timeline &timeline) {
  // Sort key: devices by index, then the host rows after every device.
  auto key = [&](int device, Lane lane) {
    if (lane == Lane::NodeLink)
      return std::make_pair(timeline.numDevices + 3, static_cast<int>(lane));
    if (lane == Lane::Host)
      return std::make_pair(timeline.numDevices - device, static_cast<int>(lane));
    return std::make_pair(device, static_cast<int>(lane));
  };
  std::set<std::pair<int, int>> keys;
  for (const Span &s : timeline.spans)
    if (hostSide(s.lane) || (s.device >= 0 && s.device < timeline.numDevices))
      keys.insert(key(rowDevice(s), s.lane));
  std::vector<std::pair<int, Lane>> rows;
  for (const auto &[d, l] : keys) {
    const Lane lane = static_cast<Lane>(l);
    rows.push_back({lane == Lane::NodeLink ? -1
                    : lane == Lane::Host   ? timeline.numDevices - d
                                           : d,
                    lane});
  }
  return rows;
}

std::string rowName(int device, Lane lane) {
  if (lane == Lane::NodeLink)
    return "node link";
  if (lane == Lane::Host)
    return device == -2 ? "host weights writer" : "host";
  return "device " + std::to_string(device) + " " + laneName(lane);
}

} // namespace

TimelineStats computeStats(const Timeline &timeline) {
  TimelineStats st;
  const int n = std::max(timeline.numDevices, 0);
  std::vector<std::vector<Interval>> compute(static_cast<size_t>(n)), transfer(static_cast<size_t>(n));
  std::vector<Interval> host, nodeLink;
  int maxStep = 0;
  for (const Span &s : timeline.spans) {
    bool valid = hostSide(s.lane) || (s.device >= 0 && s.device < n);
    if (!valid)
      continue;
    st.makespanMs = std::max(st.makespanMs, s.endMs);
    maxStep = std::max(maxStep, s.step);
    Interval iv{s.startMs, s.endMs};
    if (s.lane == Lane::Host)
      host.push_back(iv);
    else if (s.lane == Lane::NodeLink)
      nodeLink.push_back(iv);
    else if (s.lane == Lane::Compute)
      compute[static_cast<size_t>(s.device)].push_back(iv);
    else
      transfer[static_cast<size_t>(s.device)].push_back(iv);
  }
  st.numSteps = maxStep + 1;
  st.stepMs = st.makespanMs / st.numSteps;
  st.hostBusyMs = totalLength(mergeIntervals(std::move(host)));
  st.nodeLinkBusyMs = totalLength(mergeIntervals(std::move(nodeLink)));
  st.devices.resize(static_cast<size_t>(n));
  for (size_t d = 0; d < static_cast<size_t>(n); ++d) {
    DeviceStats &ds = st.devices[d];
    std::vector<Interval> c = mergeIntervals(std::move(compute[d]));
    std::vector<Interval> t = mergeIntervals(std::move(transfer[d]));
    ds.computeBusyMs = totalLength(c);
    ds.computeIdleMs = std::max(st.makespanMs - ds.computeBusyMs, 0.0);
    ds.transferBusyMs = totalLength(t);
    ds.exposedTransferMs = std::max(ds.transferBusyMs - intersectionLength(c, t), 0.0);
    if (c.empty()) {
      ds.fillMs = st.makespanMs;
      ds.drainMs = 0;
    } else {
      ds.fillMs = c.front().first;
      ds.drainMs = std::max(st.makespanMs - c.back().second, 0.0);
    }
    st.computeBusyMs += ds.computeBusyMs;
    st.computeIdleMs += ds.computeIdleMs;
    st.fillMs += ds.fillMs;
    st.drainMs += ds.drainMs;
    st.exposedTransferMs += ds.exposedTransferMs;
  }
  double capacity = st.makespanMs * n;
  if (capacity > 0) {
    st.bubblePercent = 100.0 * st.computeIdleMs / capacity;
    st.steadyBubblePercent =
        100.0 * std::max(st.computeIdleMs - st.fillMs - st.drainMs, 0.0) / capacity;
    st.exposedTransferPercent = 100.0 * st.exposedTransferMs / capacity;
  }
  return st;
}

Status writeChromeTrace(const Timeline &timeline, const std::string &path) {
  runtime::TraceRecorder trace(true);
  std::map<std::pair<int, int>, int> tracks;
  for (const auto &[device, lane] : rowsOf(timeline))
    tracks[{device, static_cast<int>(lane)}] = trace.track(rowName(device, lane));
  for (const Span &s : timeline.spans) {
    auto it = tracks.find({rowDevice(s), static_cast<int>(s.lane)});
    if (it == tracks.end())
      continue;
    std::vector<std::pair<std::string, std::string>> args = {
        {"step", std::to_string(s.step)},
        {"device", std::to_string(s.device)},
        {"schedule", timeline.schedule}};
    args.insert(args.end(), s.args.begin(), s.args.end());
    trace.complete(it->second, s.label, s.category, s.startMs * 1000.0,
                   (s.endMs - s.startMs) * 1000.0, std::move(args));
  }
  return trace.write(path);
}

Status writeSvgGantt(const Timeline &timeline, const std::string &path) {
  const TimelineStats stats = computeStats(timeline);
  const std::vector<std::pair<int, Lane>> rows = rowsOf(timeline);
  const double left = 190, right = 30, top = 56, rowH = 22, plotW = 1200;
  const double makespan = stats.makespanMs > 0 ? stats.makespanMs : 1.0;
  const double scale = plotW / makespan;
  const double plotH = rowH * static_cast<double>(std::max<size_t>(rows.size(), 1));
  const double axisY = top + plotH;
  const double legendY = axisY + 44;

  // Categories in order of first appearance, for the legend.
  CategoryColors colors;
  std::vector<std::string> categories;
  for (const Span &s : timeline.spans)
    if (std::find(categories.begin(), categories.end(), s.category) == categories.end())
      categories.push_back(s.category);
  const double legendRows = std::ceil(categories.size() / 6.0);
  const double width = left + plotW + right;
  const double height = legendY + 22 * std::max(legendRows, 1.0) + 10;

  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << fmt(width, 0) << "\" height=\""
    << fmt(height, 0) << "\" viewBox=\"0 0 " << fmt(width, 0) << " " << fmt(height, 0)
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << fmt(left, 0) << "\" y=\"24\" font-size=\"16\" font-weight=\"bold\">"
    << xmlEscape(timeline.schedule.empty() ? std::string("timeline") : timeline.schedule)
    << "</text>\n"
    << "<text x=\"" << fmt(left, 0) << "\" y=\"42\">makespan " << fmt(stats.makespanMs, 1)
    << " ms, bubble " << fmt(stats.bubblePercent, 1) << " %, exposed transfer "
    << fmt(stats.exposedTransferPercent, 2) << " %, " << timeline.numDevices
    << " devices</text>\n";

  // Gridlines and the time axis.
  const double step = niceStep(makespan, 10);
  o << "<g stroke=\"#DDDDDD\" stroke-width=\"1\">\n";
  for (double t = 0; t <= makespan + 1e-9; t += step)
    o << "<line x1=\"" << fmt(left + t * scale) << "\" y1=\"" << fmt(top) << "\" x2=\""
      << fmt(left + t * scale) << "\" y2=\"" << fmt(axisY) << "\"/>\n";
  o << "</g>\n<g fill=\"#333333\" text-anchor=\"middle\">\n";
  for (double t = 0; t <= makespan + 1e-9; t += step)
    o << "<text x=\"" << fmt(left + t * scale) << "\" y=\"" << fmt(axisY + 16) << "\">"
      << fmt(t, step < 1 ? 2 : 0) << "</text>\n";
  o << "</g>\n<text x=\"" << fmt(left + plotW / 2) << "\" y=\"" << fmt(axisY + 32)
    << "\" text-anchor=\"middle\">time (ms)</text>\n"
    << "<line x1=\"" << fmt(left) << "\" y1=\"" << fmt(axisY) << "\" x2=\"" << fmt(left + plotW)
    << "\" y2=\"" << fmt(axisY) << "\" stroke=\"black\"/>\n";

  // Rows: a label, a light background, the spans.
  std::map<std::pair<int, int>, size_t> rowIndex;
  for (size_t r = 0; r < rows.size(); ++r) {
    rowIndex[{rows[r].first, static_cast<int>(rows[r].second)}] = r;
    double y = top + rowH * static_cast<double>(r);
    o << "<rect x=\"" << fmt(left) << "\" y=\"" << fmt(y) << "\" width=\"" << fmt(plotW)
      << "\" height=\"" << fmt(rowH) << "\" fill=\"" << (r % 2 ? "#F7F7F7" : "#FFFFFF")
      << "\" fill-opacity=\"0.6\"/>\n"
      << "<text x=\"" << fmt(left - 8) << "\" y=\"" << fmt(y + rowH * 0.7)
      << "\" text-anchor=\"end\">" << xmlEscape(rowName(rows[r].first, rows[r].second))
      << "</text>\n";
  }
  for (const Span &s : timeline.spans) {
    auto it = rowIndex.find({rowDevice(s), static_cast<int>(s.lane)});
    if (it == rowIndex.end() || !(s.endMs > s.startMs))
      continue;
    double y = top + rowH * static_cast<double>(it->second) + 2;
    o << "<rect x=\"" << fmt(left + s.startMs * scale, 3) << "\" y=\"" << fmt(y) << "\" width=\""
      << fmt(std::max((s.endMs - s.startMs) * scale, 0.3), 3) << "\" height=\"" << fmt(rowH - 4)
      << "\" fill=\"" << colors.color(s.category)
      << "\" stroke=\"black\" stroke-width=\"0.3\"><title>" << xmlEscape(s.label) << " ["
      << fmt(s.startMs, 3) << ", " << fmt(s.endMs, 3) << "] ms</title></rect>\n";
  }

  // Legend.
  for (size_t i = 0; i < categories.size(); ++i) {
    double x = left + 180.0 * static_cast<double>(i % 6);
    double y = legendY + 22.0 * static_cast<double>(i / 6);
    o << "<rect x=\"" << fmt(x) << "\" y=\"" << fmt(y) << "\" width=\"14\" height=\"14\" fill=\""
      << colors.color(categories[i]) << "\" stroke=\"black\" stroke-width=\"0.3\"/>\n"
      << "<text x=\"" << fmt(x + 20) << "\" y=\"" << fmt(y + 12) << "\">"
      << xmlEscape(categories[i].empty() ? std::string("(none)") : categories[i]) << "</text>\n";
  }
  o << "</svg>\n";
  std::string text = o.str();
  return base::writeFileAtomic(path, text.data(), text.size());
}

} // namespace rp::sim
