//===- NodeModel.cpp - R RoundPipe nodes in data parallelism over a node link --===//

#include "runtime/sim/NodeModel.h"

#include "base/FormatBytes.h"

#include <algorithm>
#include <cmath>

namespace rp::sim {

using base::formatNumber;
using base::invalidArgument;
using base::Status;
using base::StatusOr;

const char *nodeReductionName(NodeReduction reduction) {
  switch (reduction) {
  case NodeReduction::Chain:
    return "chain";
  case NodeReduction::AllGather:
    return "allgather";
  case NodeReduction::Ring:
    return "ring";
  }
  return "chain";
}

StatusOr<NodeReduction> parseNodeReduction(const std::string &name) {
  if (name == "chain")
    return NodeReduction::Chain;
  if (name == "allgather")
    return NodeReduction::AllGather;
  if (name == "ring")
    return NodeReduction::Ring;
  return invalidArgument("--node-reduction must be chain, allgather or ring (got '" + name + "')");
}

Status validateNodeLink(const NodeLink &link) {
  if (link.nodes < 1)
    return invalidArgument("--nodes must be at least 1 (got " + std::to_string(link.nodes) + ")");
  if (!std::isfinite(link.linkGbit) || link.linkGbit < 0)
    return invalidArgument("--node-link-gbps must be a positive number of Gb/s (got " +
                           formatNumber(link.linkGbit) + ")");
  if (link.active() && !(link.linkGbit > 0))
    return invalidArgument("--nodes " + std::to_string(link.nodes) +
                           " needs --node-link-gbps G, the node link's bandwidth in Gb/s per "
                           "direction (e.g. 25 or 100)");
  if (!std::isfinite(link.latencyUs) || link.latencyUs < 0)
    return invalidArgument("--node-link-latency-us must be a non-negative number of "
                           "microseconds (got " + formatNumber(link.latencyUs) + ")");
  return Status();
}

namespace {

/// Chunks of the chain reduction: ceil(bytes / c), at least 1.
double chainChunks(double bytes) {
  return std::max(1.0, std::ceil(bytes / kNodeChainChunkBytes));
}

} // namespace

double chainChunkTimes(int nodes, double chunks) {
  if (nodes < 2)
    return 0;
  const double r = nodes, k = chunks;
  const double hops = k + 2 * r - 3; // the last chunk's 2 (R - 1) hops after k - 1 chunk times
  return nodes == 2 ? hops : std::max(hops, 2 * k + 2 * r - 5); // middle rank R - 2's NIC
}

int64_t reductionMessages(const NodeLink &link, double bytes) {
  if (!link.active())
    return 0;
  const int64_t r = link.nodes - 1;
  switch (link.reduction) {
  case NodeReduction::Chain:
    return static_cast<int64_t>(chainChunks(bytes)) * (link.nodes == 2 ? 1 : 2);
  case NodeReduction::AllGather:
    return r;
  case NodeReduction::Ring:
    return 2 * r;
  }
  return 0;
}

double reductionBytesPerNode(const NodeLink &link, double bytes) {
  if (!link.active())
    return 0;
  const double r = link.nodes;
  switch (link.reduction) {
  case NodeReduction::Chain:
    return link.nodes == 2 ? bytes : 2 * bytes;
  case NodeReduction::AllGather:
    return (r - 1) * bytes;
  case NodeReduction::Ring:
    return 2 * (r - 1) * bytes / r;
  }
  return 0;
}

double reductionMs(const NodeLink &link, double bytes) {
  if (!link.active() || !(bytes > 0))
    return 0;
  const double r = link.nodes;
  const double latencyMs = link.latencyUs / 1000.0;
  auto wire = [&](double b) { return 8.0 * b / (link.linkGbit * 1e6); }; // Gb/s = 1e6 bits/ms
  switch (link.reduction) {
  case NodeReduction::Chain: {
    const double k = chainChunks(bytes);
    return chainChunkTimes(link.nodes, k) * (latencyMs + wire(bytes / k));
  }
  case NodeReduction::AllGather:
    return (r - 1) * (latencyMs + wire(bytes));
  case NodeReduction::Ring:
    return 2 * (r - 1) * (latencyMs + wire(bytes / r));
  }
  return 0;
}

double scalingEfficiencyPercent(double oneNodeStepMs, double stepMs) {
  return stepMs > 0 ? 100.0 * oneNodeStepMs / stepMs : 0;
}

} // namespace rp::sim
