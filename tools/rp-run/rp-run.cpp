//===- rp-run.cpp - train with a compiled RoundPipe plan ------------------===//
//
//   rp-run train MODEL.rpplan --data FILE --steps N [training flags] [--export-hf DIR ...]
//   rp-run check MODEL.rpplan [--report] [--report-json FILE] [--backend cpu|cuda] ...
//   rp-run simulate [MODEL.rpplan] [--profile FILE.json] [simulator flags]
//   rp-run export MODEL.rpplan --export-hf DIR [--weights PATH | --resume DIR] ...
//
// Trains with a plan (rpc-compile -o MODEL.rpplan) on the CPU or CUDA backend, checks it,
// simulates it or a layer profile on N virtual GPUs, or exports weights in the Hugging Face
// layout. `rp-run COMMAND --help` lists a command's flags (Commands.h); the work is
// runtime/driver/Driver.h's, with its exit codes: 0 success, 1 a failure during training or
// simulation, 2 bad input (flags included), 130 a training run stopped by SIGINT / SIGTERM.
// The old flat spelling (`rp-run MODEL.rpplan --data ...`, `--check`, `--backend sim`,
// `--export-hf` alone) still runs the same jobs (OldSpelling.h). Runtime world: no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#include "runtime/driver/Driver.h"
#include "tools/rp-run/Commands.h"
#include "tools/rp-run/OldSpelling.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace rp::rprun {

namespace {

/// CLI11's error as "rp-run: error: ...", and where the flags of the command are listed.
/// The arguments a command did not expect are listed in their order (CLI11 2.1 reverses them).
std::string formatParseError(const CLI::App *rpRun, const CLI::Error &error) {
  const std::vector<CLI::App *> commands = rpRun->get_subcommands();
  if (commands.empty())
    return "rp-run: error: " + std::string(error.what()) +
           "\nRun rp-run --help for the commands.\n";
  const CLI::App &command = *commands.front();
  std::string message = error.what();
  const std::vector<std::string> extras = command.remaining();
  if (dynamic_cast<const CLI::ExtrasError *>(&error) && !extras.empty()) {
    message = extras.size() > 1 ? "The following arguments were not expected:"
                                : "The following argument was not expected:";
    for (const std::string &arg : extras)
      message += " " + arg;
  }
  return "rp-run: error: " + message + "\nRun rp-run " + command.get_name() +
         " --help for its flags.\n";
}

/// rp-run's parser: the subcommands, --help and --version.
class RpRun {
public:
  RpRun()
      : app_("rp-run: train with a compiled RoundPipe plan (rpc-compile -o MODEL.rpplan), "
             "check it, simulate it or a layer profile on N virtual GPUs, or export weights in "
             "the Hugging Face layout",
             "rp-run") {
    app_.set_version_flag("--version", std::string("rp-run ") + RP_VERSION);
    app_.require_subcommand(0, 1);
    app_.failure_message(formatParseError);
    commands_.push_back(addTrainCommand(app_));
    commands_.push_back(addCheckCommand(app_));
    commands_.push_back(addSimulateCommand(app_));
    commands_.push_back(addExportCommand(app_));
    // After the commands, which would inherit it.
    app_.footer("The old flat spelling still runs the same jobs: rp-run MODEL.rpplan --data FILE "
                "--steps N (train), --check or --report (check), --backend sim (simulate; "
                "--node-link-gbps in Gb/s there), --export-hf DIR without --data and --steps "
                "(export).");
  }

  /// Parses `args` (argv after the program name) and runs the command they name.
  int run(std::vector<std::string> args) {
    if (args.empty()) {
      std::fputs(app_.help().c_str(), stderr);
      std::fputs("rp-run: error: no command (train, check, simulate or export)\n", stderr);
      return runtime::kExitBadInput;
    }
    Invocation how;
    if (!startsWithCommand(args)) {
      OldSpellingCall call = mapOldSpelling(args);
      args = std::move(call.args);
      args.insert(args.begin(), call.command);
      how = {call.job, /*oldSpelling=*/true};
    }
    std::reverse(args.begin(), args.end()); // CLI11 consumes them from the back
    try {
      app_.parse(args);
    } catch (const CLI::ParseError &e) {
      return app_.exit(e) == 0 ? runtime::kExitOk : runtime::kExitBadInput;
    }
    for (const std::unique_ptr<Command> &command : commands_)
      if (command->app().parsed()) {
        if (how.job.empty())
          how.job = "rp-run " + command->app().get_name();
        return command->run(how);
      }
    return runtime::kExitBadInput; // unreachable: a command or --help/--version was given
  }

private:
  /// Whether `args` name a command first, or ask for rp-run's --help or --version: anything
  /// else is the old flat spelling.
  bool startsWithCommand(const std::vector<std::string> &args) const {
    const std::string &first = args.front();
    if (first == "-h" || first == "--help" || first == "--version")
      return true;
    return std::any_of(commands_.begin(), commands_.end(),
                       [&](const auto &c) { return c->app().get_name() == first; });
  }

  CLI::App app_;
  std::vector<std::unique_ptr<Command>> commands_;
};

} // namespace

} // namespace rp::rprun

int main(int argc, char **argv) {
  rp::rprun::RpRun rpRun;
  return rpRun.run(std::vector<std::string>(argv + 1, argv + argc));
}
