//===- rp-run.cpp - execute a compiled RoundPipe plan ---------------------===//
//
//   rp-run MODEL.rpplan --check [--weights FILE.safetensors]
//
// Loads MODEL.rpplan and its initial weights (runtime/plan/PlanLoader.h): the schema version,
// the content hash, every index, offset and size against the arenas, and every param's tensor
// in the weights file. `--check` stops there and prints a summary of the plan. Training
// (--data, --steps, the executor and its backends) is issue 7 and not built yet: without
// --check, rp-run says so and exits with 2. Runtime world: no LLVM/MLIR.
//
// Exit codes: 0 success, 2 bad input (unreadable, corrupted, truncated or mismatched plan or
// weights; bad flags).
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/PlanLoader.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

namespace {
constexpr int kBadInput = 2;
} // namespace

int main(int argc, char **argv) {
  CLI::App app{"rp-run: execute a compiled RoundPipe plan (rpc-compile -o MODEL.rpplan)"};
  app.set_version_flag("--version", std::string("rp-run ") + RP_VERSION);
  std::string planPath, weightsPath;
  bool check = false;
  app.add_option("plan", planPath, "The plan file (MODEL.rpplan)")->required();
  app.add_option("--weights", weightsPath,
                 "Initial weights (default: the safetensors file the plan names, beside it)");
  app.add_flag("--check", check, "Validate the plan and its weights, print a summary, and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kBadInput;
  }

  rp::runtime::StatusOr<rp::runtime::LoadedPlan> loaded =
      rp::runtime::loadPlan(planPath, weightsPath);
  if (!loaded.ok()) {
    std::fprintf(stderr, "rp-run: error: %s\n", loaded.status().message().c_str());
    return kBadInput;
  }
  if (!check) {
    std::fprintf(stderr, "rp-run: error: training is not implemented yet (issue 7); "
                         "use --check to validate the plan\n");
    return kBadInput;
  }
  std::fputs(rp::runtime::describePlan(loaded.value()).c_str(), stdout);
  std::printf("rp-run: %s is valid\n", planPath.c_str());
  return 0;
}
