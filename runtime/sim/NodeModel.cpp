//===- NodeModel.cpp - R RoundPipe nodes in data parallelism over a node link --===//

#include "runtime/sim/NodeModel.h"

#include <cmath>
#include <cstdio>

namespace rp::sim {

using runtime::invalidArgument;
using runtime::Status;
using runtime::StatusOr;

namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

} // namespace

const char *nodeReductionName(NodeReduction reduction) {
  return reduction == NodeReduction::Ring ? "ring" : "allgather";
}

StatusOr<NodeReduction> parseNodeReduction(const std::string &name) {
  if (name == "allgather")
    return NodeReduction::AllGather;
  if (name == "ring")
    return NodeReduction::Ring;
  return invalidArgument("--node-reduction must be allgather or ring (got '" + name + "')");
}

Status validateNodeLink(const NodeLink &link) {
  if (link.nodes < 1)
    return invalidArgument("--nodes must be at least 1 (got " + std::to_string(link.nodes) + ")");
  if (!std::isfinite(link.linkGbit) || link.linkGbit < 0)
    return invalidArgument("--node-link-gbps must be a positive number of Gb/s (got " +
                           number(link.linkGbit) + ")");
  if (link.active() && !(link.linkGbit > 0))
    return invalidArgument("--nodes " + std::to_string(link.nodes) +
                           " needs --node-link-gbps G, the node link's bandwidth in Gb/s per "
                           "direction (e.g. 25 or 100)");
  if (!std::isfinite(link.latencyUs) || link.latencyUs < 0)
    return invalidArgument("--node-link-latency-us must be a non-negative number of "
                           "microseconds (got " + number(link.latencyUs) + ")");
  return Status();
}

int reductionMessages(const NodeLink &link) {
  if (!link.active())
    return 0;
  const int r = link.nodes - 1;
  return link.reduction == NodeReduction::Ring ? 2 * r : r;
}

double reductionBytesPerNode(const NodeLink &link, double bytes) {
  if (!link.active())
    return 0;
  const double r = link.nodes;
  return link.reduction == NodeReduction::Ring ? 2 * (r - 1) * bytes / r : (r - 1) * bytes;
}

double reductionMs(const NodeLink &link, double bytes) {
  if (!link.active())
    return 0;
  // Gb/s = 1e9 bits/s = 1e6 bits per ms.
  return reductionMessages(link) * link.latencyUs / 1000.0 +
         8.0 * reductionBytesPerNode(link, bytes) / (link.linkGbit * 1e6);
}

double scalingEfficiencyPercent(double oneNodeStepMs, double stepMs) {
  return stepMs > 0 ? 100.0 * oneNodeStepMs / stepMs : 0;
}

} // namespace rp::sim
