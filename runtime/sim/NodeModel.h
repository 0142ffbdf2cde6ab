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
//   chain (default; what rp-run does under mpirun, runtime/dist: rank 0 sends its gradient to
//   rank 1, which adds its own and sends the sum on, ... to rank R - 1, in k = ceil(B / c)
//   chunks of c = 4 MiB (1 Mi floats) that pipeline along the chain; rank R - 1 sends each
//   chunk's sums straight back down the chain, R - 1 -> ... -> 0, while later chunks still
//   flow forward: the links are full duplex; the sum is in rank order, bitwise the same on
//   every rank). One chunk time is L + 8 (B / k) / G:
//       bytes per node per direction = B for R = 2, 2 B for R > 2 (a middle rank sends every
//           chunk once forward and once back)
//       time = (k + 1) chunk times for R = 2 (chunk k - 1 leaves rank 0 after k - 1 chunk
//           times and takes 2 (R - 1) hops),
//           max(k + 2 R - 3, 2 k + 2 R - 5) chunk times for R > 2 (the second: rank R - 2's
//           NIC sends 2 k chunks, from its first chunk's arrival at R - 2 chunk times, and the
//           last sums then take R - 3 hops more to rank 0); chainChunkTimes
//   allgather (every rank receives every other rank's B bytes, R - 1 messages, and sums in
//   rank order itself; a reduce to one root followed by a broadcast moves as much through the
//   root's link):
//       bytes per node per direction = (R - 1) B
//       time = (R - 1) (L + 8 B / G)
//   ring (reduce-scatter + allgather, 2 (R - 1) messages of B / R; not rank-ordered):
//       bytes per node per direction = 2 (R - 1) B / R
//       time = 2 (R - 1) (L + 8 B / (R G))
//
// In ms: L / 1000 + 8 bytes / (G * 1e6). R = 1 reduces nothing (0 bytes, 0 ms), and the
// simulators then add no node-link task at all: their results are those of one node.
//
// Where the reductions run (NodeLink::commThread): by default on a thread of their own, as
// rp-run does (its communication thread, runtime/exec/Executor.h), so that layer l + 1's
// reduction overlaps layer l's AdamW; with commThread = false (--node-reduce-on-optimizer), on
// the host optimizer thread (each layer: its reduction, then its AdamW, then the next layer's
// reduction: how rp-run reduced before it had the thread). Either way one reduction at a time,
// in the optimizer's layer order, and a layer's AdamW waits for its reduction.
//
//===----------------------------------------------------------------------===//
#ifndef RP_RUNTIME_SIM_NODEMODEL_H
#define RP_RUNTIME_SIM_NODEMODEL_H

#include "base/Status.h"

#include <cstdint>
#include <string>

namespace rp::sim {

/// How the nodes reduce a layer's gradient (see the file comment).
enum class NodeReduction { Chain, AllGather, Ring };

/// The chunk of the chain reduction, bytes: 1 Mi floats (runtime/dist).
inline constexpr double kNodeChainChunkBytes = 4.0 * 1024 * 1024;

/// "chain", "allgather", "ring".
const char *nodeReductionName(NodeReduction reduction);

/// Parses "chain" / "allgather" / "ring". Errors (InvalidArgument): any other name.
base::StatusOr<NodeReduction> parseNodeReduction(const std::string &name);

/// R nodes and the link between them.
struct NodeLink {
  int nodes = 1;          ///< R >= 1; 1 = a single node (no reduction).
  double linkGbit = 0;    ///< Per node per direction, Gb/s (1e9 bits/s); > 0 when nodes > 1.
  double latencyUs = 0;   ///< Per message, microseconds, >= 0.
  NodeReduction reduction = NodeReduction::Chain;
  /// Reductions on a thread of their own (overlapping the previous layer's AdamW; rp-run's
  /// way); false: on the optimizer thread, each before its layer's AdamW.
  bool commThread = true;

  /// Whether there is anything to reduce (nodes > 1).
  bool active() const { return nodes > 1; }
};

/// Checks `link`. Errors (InvalidArgument, naming the flag): nodes < 1, a bandwidth that is
/// not a positive finite number when nodes > 1 (a negative or non-finite one in any case), a
/// negative or non-finite latency.
base::Status validateNodeLink(const NodeLink &link);

/// Chunk times of the pipelined chain reduction of `chunks` chunks over `nodes` nodes (the file
/// comment): k + 1 for R = 2, max(k + 2 R - 3, 2 k + 2 R - 5) for R > 2; 0 for R < 2.
double chainChunkTimes(int nodes, double chunks);

/// Messages a middle node sends to reduce a gradient of `bytes` bytes: chain 2 ceil(bytes / c)
/// (1 per chunk per phase; R = 2: ceil(bytes / c)), allgather R - 1, ring 2 (R - 1); 0 for R = 1.
int64_t reductionMessages(const NodeLink &link, double bytes);

/// Bytes one node sends (and receives) to reduce a gradient of `bytes` bytes, at the busiest
/// node: chain bytes (R = 2) or 2 bytes (R > 2), allgather (R - 1) bytes, ring
/// 2 (R - 1) bytes / R; 0 for R = 1.
double reductionBytesPerNode(const NodeLink &link, double bytes);

/// Time to reduce a gradient of `bytes` bytes over the node link, ms (the file comment's
/// formulas); 0 for R = 1 or bytes <= 0. Requires validateNodeLink(link).
double reductionMs(const NodeLink &link, double bytes);

/// Scaling efficiency of R nodes, %: tokens/s of R nodes / (R x tokens/s of one node) =
/// 100 x oneNodeStepMs / stepMs (every node processes the same tokens per step). 0 when
/// stepMs <= 0.
double scalingEfficiencyPercent(double oneNodeStepMs, double stepMs);

} // namespace rp::sim

#endif // RP_RUNTIME_SIM_NODEMODEL_H
