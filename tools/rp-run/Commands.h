//===- Commands.h - rp-run's subcommands: train, check, simulate, export -*- C++ -*-===//
//
// Each job of rp-run is a CLI11 subcommand that owns exactly the flags its job reads, bound to
// that job's options (runtime/driver/Driver.h), and runs the job once they are parsed:
//
//   train     the plan, the training flags and the --export-hf group (export after training)
//   check     the plan, --weights, --allow-extra-weights, --report, --report-json,
//             --backend cpu|cuda|sim, --gpus
//   simulate  the plan or --profile, the simulator's flags, --gpus, --steps (default 3),
//             --trace
//   export    the plan, --weights, --allow-extra-weights, --resume and the --export-hf group
//
// A flag given to another job is refused by the subcommand's parser.
//
//===----------------------------------------------------------------------===//
#ifndef RP_TOOLS_RP_RUN_COMMANDS_H
#define RP_TOOLS_RP_RUN_COMMANDS_H

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

namespace rp::rprun {

/// How the command line asked for a job.
struct Invocation {
  /// The job's name in messages: "rp-run check", or in the old flat spelling the flag that
  /// picked the job ("--check"; OldSpelling.h).
  std::string job;
  /// The old flat spelling: `--node-link-gbps` is in Gb/s there.
  bool oldSpelling = false;
};

/// One job as a subcommand of rp-run's App: its flags, and the job.
class Command {
public:
  virtual ~Command() = default;

  /// The subcommand's parser.
  CLI::App &app() const { return *app_; }

  /// Runs the job on the flags `app()` parsed; returns rp-run's exit code (Driver.h).
  virtual int run(const Invocation &how) = 0;

protected:
  explicit Command(CLI::App *app) : app_(app) {}

private:
  CLI::App *app_;
};

/// Each adds its subcommand to `rpRun` and returns it.
std::unique_ptr<Command> addTrainCommand(CLI::App &rpRun);
std::unique_ptr<Command> addCheckCommand(CLI::App &rpRun);
std::unique_ptr<Command> addSimulateCommand(CLI::App &rpRun);
std::unique_ptr<Command> addExportCommand(CLI::App &rpRun);

} // namespace rp::rprun

#endif // RP_TOOLS_RP_RUN_COMMANDS_H
