//===- CheckCommand.cpp - rp-run check: the plan-validation flags ---------===//
//
//   rp-run check MODEL.rpplan [--weights PATH] [--allow-extra-weights] [--report]
//          [--report-json FILE] [--backend cpu|cuda|sim] [--gpus N]
//
//===----------------------------------------------------------------------===//

#include "runtime/driver/Driver.h"
#include "tools/rp-run/Commands.h"
#include "tools/rp-run/Flags.h"

namespace rp::rprun {

namespace {

class CheckCommand final : public Command {
public:
  explicit CheckCommand(CLI::App &rpRun)
      : Command(rpRun.add_subcommand(
            "check", "Validate a plan and its weights, print a summary (and the plan report)")) {
    CLI::App &app = this->app();
    addPlanWithWeights(app, options_.planPath, options_.weightsPath, options_.allowExtraWeights);
    app.add_flag("--report", options_.report,
                 "Also print the plan report (FLOPs, bytes moved and device memory per stage "
                 "and step)");
    app.add_option("--report-json", options_.reportJsonPath,
                   "Also write the plan report as JSON to FILE");
    app.add_option("--backend", options_.backend,
                   "cpu | cuda: decode every instruction for that backend's kernels and check "
                   "the host memory it needs to train here (default: the CPU backend's memory "
                   "check only); sim: neither (the simulator needs no host memory)")
        ->check(CLI::IsMember({"cpu", "cuda", "sim"}));
    addGpusFlag(app, options_.devices,
                "The pool the memory check counts (the CPU backend keeps a device arena per "
                "worker in host memory; default: the plan's)");
  }

  int run(const Invocation &how) override { return runtime::runCheck(options_, how.job); }

private:
  runtime::CheckOptions options_;
};

} // namespace

std::unique_ptr<Command> addCheckCommand(CLI::App &rpRun) {
  return std::make_unique<CheckCommand>(rpRun);
}

} // namespace rp::rprun
