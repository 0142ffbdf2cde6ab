//===- Flags.cpp - Flags several rp-run subcommands take ------------------===//

#include "tools/rp-run/Flags.h"

#include "runtime/train/Trainer.h"

#include <cmath>
#include <cstdlib>

namespace rp::rprun {

CLI::Validator finiteNumber(bool positive) {
  return CLI::Validator(
      [positive](std::string &text) -> std::string {
        char *end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool parsed = !text.empty() && end && *end == '\0';
        if (parsed && std::isfinite(v) && (positive ? v > 0 : v >= 0))
          return "";
        return positive ? "must be a positive finite number, not '" + text + "'"
                        : "must be a finite number >= 0, not '" + text + "'";
      },
      positive ? "POSITIVE" : "NONNEGATIVE");
}

CLI::Option *addPlanArgument(CLI::App &app, std::string &planPath, bool required) {
  CLI::Option *plan =
      app.add_option("MODEL.rpplan", planPath, "The plan file (rpc-compile -o MODEL.rpplan)");
  return required ? plan->required() : plan;
}

void addPlanWithWeights(CLI::App &app, std::string &planPath, std::string &weightsPath,
                        bool &allowExtraWeights) {
  addPlanArgument(app, planPath, /*required=*/true);
  app.add_option("--weights", weightsPath,
                 "Initial weights (default: the safetensors file the plan names, beside it): a "
                 "safetensors file, a sharded checkpoint's model.safetensors.index.json, or a "
                 "Hugging Face checkpoint directory; F32, F16 or BF16, keyed by param name");
  app.add_flag("--allow-extra-weights", allowExtraWeights,
               "Ignore --weights tensors that no param of the plan names (default: refuse them)");
}

void addGpusFlag(CLI::App &app, int &devices, const std::string &help) {
  app.add_option("--gpus", devices, help)->check(CLI::Range(1, runtime::kMaxWorkers));
}

} // namespace rp::rprun
