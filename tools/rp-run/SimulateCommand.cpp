//===- SimulateCommand.cpp - rp-run simulate: the simulator's flags -------===//
//
//   rp-run simulate MODEL.rpplan [--gpus N] [--steps K] [--profile FILE.json] [simulator flags]
//   rp-run simulate --profile FILE.json --gpus N --micro-batches M [--update sync|async]
//          [simulator flags]
//
// Simulator flags: [--target T] [--link-gbps X] [--host-uplink-gbps Y]
// [--optimizer-ms Z | --adamw-gbps W] [--trace FILE.json] [--gantt FILE.svg] [--compare]
// [--nodes R --node-link-gbps B [--node-link-latency-us L] [--node-reduction chain|allgather|ring]
// [--node-reduce-on-optimizer]]. Every bandwidth is in GB/s (1e9 bytes/s); the old spelling
// (`rp-run --backend sim --node-link-gbps G`) read the node link in Gb/s and still does.
//
//===----------------------------------------------------------------------===//

#include "base/FormatBytes.h"
#include "runtime/driver/Driver.h"
#include "runtime/sim/Simulate.h"
#include "tools/rp-run/Commands.h"
#include "tools/rp-run/Flags.h"

#include <cmath>
#include <cstdio>

namespace rp::rprun {

namespace {

using runtime::SimulateOptions;

class SimulateCommand final : public Command {
public:
  explicit SimulateCommand(CLI::App &rpRun)
      : Command(rpRun.add_subcommand("simulate", "Simulate a plan or a layer profile on N "
                                                 "virtual GPUs (and the baseline schedules)")) {
    CLI::App &app = this->app();
    addPlanArgument(app, options_.planPath, /*required=*/false);
    addGpusFlag(app, options_.gpus,
                "Virtual GPUs (default: the plan's; required with a profile alone)");
    app.add_option("--steps", options_.steps, "Iterations to simulate")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    app.add_option("--trace", options_.tracePath,
                   "Write a Chrome trace (Perfetto) of the simulated run to FILE");
    addCostFlags();
    addNodeFlags();
    app.add_option("--gantt", options_.ganttPath, "Write an SVG Gantt chart of the run");
    app.add_flag("--compare", options_.compare,
                 "Also compare with GPipe, 1F1B, interleaved 1F1B, Looped-BFS, ZB-H1 and Mobius "
                 "on the same costs");
    app.callback([this] { requireInput(); });
  }

  int run(const Invocation &how) override {
    if (optimizerMs_->count())
      options_.optimizerMs = optimizerMsValue_;
    if (adamwGbps_->count())
      options_.adamwGbps = adamwGbpsValue_;
    if (nodes_->count())
      options_.nodes = nodesValue_;
    if (nodeLinkLatencyUs_->count())
      options_.nodeLinkLatencyUs = nodeLinkLatencyUsValue_;
    if (nodeLinkGbps_->count())
      options_.nodeLinkGbps = nodeLinkGbpsValue_;
    if (how.oldSpelling)
      readNodeLinkInGigabits();
    return runtime::runSimulate(options_, how.job);
  }

private:
  /// The plan or the profile: without either there is nothing to simulate.
  void requireInput() const {
    if (options_.planPath.empty() && options_.profilePath.empty())
      throw CLI::RequiredError("rp-run simulate needs a plan (MODEL.rpplan) or a --profile "
                               "FILE.json",
                               CLI::ExitCodes::RequiredError);
  }

  /// The old spelling's --node-link-gbps is in Gb/s: converted, and said so on stderr (unless
  /// the value is refused: the error gives it in Gb/s).
  void readNodeLinkInGigabits() {
    options_.nodeLinkInGigabits = true;
    if (!options_.nodeLinkGbps)
      return;
    const double gigabits = *options_.nodeLinkGbps;
    options_.nodeLinkGbps = gigabits / 8;
    if (!(std::isfinite(gigabits) && gigabits > 0))
      return;
    std::fprintf(stderr,
                 "rp-run: note: --backend sim --node-link-gbps %s is read in Gb/s (gigabits per "
                 "second), as before; rp-run simulate takes GB/s as every bandwidth flag: "
                 "--node-link-gbps %s\n",
                 formatNumber(gigabits).c_str(), formatNumber(gigabits / 8).c_str());
  }

  /// Where the costs come from: the profile or the roofline on a target, links, the optimizer.
  void addCostFlags() {
    CLI::App &app = this->app();
    app.add_option("--profile", options_.profilePath,
                   "Layer profile JSON (the partitioner's format): kernel times instead of the "
                   "roofline; without a plan, simulate the profile alone");
    app.add_option("--target", options_.target,
                   "GPU: rtx4090, rtx5090, h100 (presets), a target JSON file or "
                   "name=..,peak_tflops=..,hbm_gbps=..,pcie_gbps=..,memory_bytes=.. (default: "
                   "rtx4090, 165 TFLOP/s, 1008 GB/s, 25 GB/s PCIe)");
    app.add_option("--micro-batches", options_.microBatches,
                   "Micro-batches per iteration (profile without a plan)")
        ->check(CLI::PositiveNumber);
    app.add_option("--update", options_.update,
                   "sync | async (profile without a plan; a plan fixes its own)")
        ->check(CLI::IsMember({"sync", "async"}));
    app.add_option("--link-gbps", options_.linkGbps,
                   "Host<->GPU link per GPU per direction, GB/s (default: the target's)")
        ->check(finiteNumber(true));
    app.add_option("--host-uplink-gbps", options_.hostUplinkGbps,
                   "A host uplink all GPUs share, per direction, GB/s (default: none)")
        ->check(finiteNumber(true));
    optimizerMs_ = app.add_option("--optimizer-ms", optimizerMsValue_,
                                  "Host AdamW time per trainable layer, ms")
                       ->check(finiteNumber(false));
    adamwGbps_ = app.add_option("--adamw-gbps", adamwGbpsValue_,
                                "Host AdamW throughput, GB/s of fp32 params (default 8)")
                     ->check(finiteNumber(true));
  }

  /// Data parallelism across nodes (runtime/sim/NodeModel.h).
  void addNodeFlags() {
    auto *group = app().add_option_group(
        "nodes", "R nodes in data parallelism, each running this schedule on its own GPUs and "
                 "data; each layer's gradient is reduced over the node link before its host "
                 "AdamW");
    nodes_ = group->add_option("--nodes", nodesValue_, "R nodes (default 1)");
    nodeLinkGbps_ = group->add_option(
        "--node-link-gbps", nodeLinkGbpsValue_,
        "Link between nodes, per node per direction, GB/s as every bandwidth flag (a 25 Gb/s "
        "NIC: 3.125); required with --nodes R > 1");
    nodeLinkLatencyUs_ =
        group->add_option("--node-link-latency-us", nodeLinkLatencyUsValue_,
                          "Latency per message on the node link, microseconds (default 0)");
    group->add_option("--node-reduction", options_.nodeReduction,
                      "chain (default, rp-run's: a rank-order chain in 4 MiB chunks, then a "
                      "broadcast) | allgather (R - 1 messages of a layer's gradient) | ring "
                      "(reduce-scatter + allgather)");
    group->add_flag("--node-reduce-on-optimizer", options_.nodeReduceOnOptimizer,
                    "Reductions on the host optimizer thread, each before its layer's AdamW "
                    "(default: on a thread of their own, overlapping the previous layer's "
                    "AdamW, as rp-run)");
  }

  SimulateOptions options_;
  double optimizerMsValue_ = 0, adamwGbpsValue_ = 0, nodeLinkGbpsValue_ = 0;
  double nodeLinkLatencyUsValue_ = 0;
  int nodesValue_ = 0;
  CLI::Option *optimizerMs_ = nullptr, *adamwGbps_ = nullptr, *nodes_ = nullptr;
  CLI::Option *nodeLinkGbps_ = nullptr, *nodeLinkLatencyUs_ = nullptr;
};

} // namespace

std::unique_ptr<Command> addSimulateCommand(CLI::App &rpRun) {
  return std::make_unique<SimulateCommand>(rpRun);
}

} // namespace rp::rprun
