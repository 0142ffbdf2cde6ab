//===- ExportCommand.cpp - rp-run export: weights to the Hugging Face layout ===//
//
//   rp-run export MODEL.rpplan --export-hf DIR [--weights PATH | --resume DIR]
//          [--allow-extra-weights] [--export-dtype f32|bf16|f16] [--export-shard-size SIZE]
//          [--hf-config FILE] [--export-merged] [--lora-alpha A] [--base-model NAME]
//          [--export-force]
//
//===----------------------------------------------------------------------===//

#include "runtime/driver/Driver.h"
#include "tools/rp-run/Commands.h"
#include "tools/rp-run/ExportFlags.h"
#include "tools/rp-run/Flags.h"

namespace rp::rprun {

namespace {

class ExportCommand final : public Command {
public:
  explicit ExportCommand(CLI::App &rpRun)
      : Command(rpRun.add_subcommand("export",
                                     "Write a plan's weights or a checkpoint in the Hugging "
                                     "Face layout, without training")),
        exportFlags_(app(), options_.hf, /*required=*/true) {
    CLI::App &app = this->app();
    addPlanWithWeights(app, options_.planPath, options_.weightsPath, options_.allowExtraWeights);
    app.add_option("--resume", options_.resumeDir,
                   "Export the checkpoint in DIR (an rp-run --save directory) instead of the "
                   "weights");
  }

  int run(const Invocation &how) override {
    if (Status s = exportFlags_.resolve(); !s.ok())
      return runtime::reportError(s);
    return runtime::runExport(options_, how.job);
  }

private:
  runtime::ExportOptions options_;
  ExportFlags exportFlags_;
};

} // namespace

std::unique_ptr<Command> addExportCommand(CLI::App &rpRun) {
  return std::make_unique<ExportCommand>(rpRun);
}

} // namespace rp::rprun
