//===- NodeModel.h - R RoundPipe nodes in data parallelism over a node link -*- C++ -*-===//
//
// The simulator's model of data parallelism across nodes (docs/SIMULATOR.md, "Data
// parallelism across nodes"): R nodes each run the same RoundPipe schedule on their own GPU
// pool and their own shard of the data, so one node is simulated. Each layer's fp32 gradient,
// once it is in host memory, is reduced across the nodes over the node link (one NIC per node,
// full duplex), one layer at a time in the optimizer's layer order (a serial resource: the
// node-link lane), and the layer's host AdamW waits for its reduction.
//
// A reduction of a gradient of B bytes, on a link of G Gb/s (1e9 bits/s per direction) with
// a latency of L us per message:
//
//   allgather (default; what the runtime does: every rank receives every other rank's B bytes
//   and sums the R gradients in rank order, so every rank holds the bitwise same sum; a ring
//   allgather sends R - 1 messages of B bytes; a reduce to one rank then a broadcast moves the
//   same (R - 1) B through the root's link):
//       bytes per node per direction = (R - 1) B
//       time = (R - 1) (L + 8 B / G)
//   ring (reduce-scatter + allgather, 2 (R - 1) messages of B / R; not bitwise rank-ordered):
//       bytes per node per direction = 2 (R - 1) B / R
//       time = 2 (R - 1) (L + 8 B / (R G))
//
// In ms: L / 1000 + 8 bytes / (G * 1e6). R = 1 reduces nothing (0 bytes, 0 ms), and the
// simulators then add no node-link task at all: their results are those of one node.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_SIM_NODEMODEL_H
#define RP_RUNTIME_SIM_NODEMODEL_H

#include "runtime/core/Status.h"

#include <string>

namespace rp::sim {

/// How the nodes reduce a layer's gradient (see the file comment).
enum class NodeReduction { AllGather, Ring };

/// "allgather", "ring".
const char *nodeReductionName(NodeReduction reduction);

/// Parses "allgather" / "ring". Errors (InvalidArgument): any other name.
runtime::StatusOr<NodeReduction> parseNodeReduction(const std::string &name);

/// R nodes and the link between them.
struct NodeLink {
  int nodes = 1;          ///< R >= 1; 1 = a single node (no reduction).
  double linkGbit = 0;    ///< Per node per direction, Gb/s (1e9 bits/s); > 0 when nodes > 1.
  double latencyUs = 0;   ///< Per message, microseconds, >= 0.
  NodeReduction reduction = NodeReduction::AllGather;

  /// Whether there is anything to reduce (nodes > 1).
  bool active() const { return nodes > 1; }
};

/// Checks `link`. Errors (InvalidArgument, naming the flag): nodes < 1, a bandwidth that is
/// not a positive finite number when nodes > 1 (a negative or non-finite one in any case), a
/// negative or non-finite latency.
runtime::Status validateNodeLink(const NodeLink &link);

/// Messages one node sends per reduced gradient: allgather R - 1, ring 2 (R - 1); 0 for R = 1.
int reductionMessages(const NodeLink &link);

/// Bytes one node sends (and receives) to reduce a gradient of `bytes` bytes: allgather
/// (R - 1) bytes, ring 2 (R - 1) bytes / R; 0 for R = 1.
double reductionBytesPerNode(const NodeLink &link, double bytes);

/// Time to reduce a gradient of `bytes` bytes over the node link, ms: messages x latency plus
/// reductionBytesPerNode x 8 / link; 0 for R = 1. Requires validateNodeLink(link).
double reductionMs(const NodeLink &link, double bytes);

/// Scaling efficiency of R nodes, %: tokens/s of R nodes / (R x tokens/s of one node) =
/// 100 x oneNodeStepMs / stepMs (every node processes the same tokens per step). 0 when
/// stepMs <= 0.
double scalingEfficiencyPercent(double oneNodeStepMs, double stepMs);

} // namespace rp::sim

#endif // RP_RUNTIME_SIM_NODEMODEL_H
