//===- Flags.h - Flags several rp-run subcommands take -----------*- C++ -*-===//
//
// The plan argument, --weights / --allow-extra-weights, --gpus and the number checks, written
// once for the subcommands that take them (Commands.h).
//
//===----------------------------------------------------------------------===//
#ifndef RP_TOOLS_RP_RUN_FLAGS_H
#define RP_TOOLS_RP_RUN_FLAGS_H

#include <CLI/CLI.hpp>

#include <string>

namespace rp::rprun {

/// A number flag that must be finite and > 0 (`positive`) or >= 0. CLI11's PositiveNumber
/// accepts nan and prints DBL_MAX in full when it refuses.
CLI::Validator finiteNumber(bool positive);

/// The plan file, MODEL.rpplan, as the positional argument.
CLI::Option *addPlanArgument(CLI::App &app, std::string &planPath, bool required);

/// The plan, required, with --weights PATH and --allow-extra-weights: the weights it loads
/// with (train, check, export).
void addPlanWithWeights(CLI::App &app, std::string &planPath, std::string &weightsPath,
                        bool &allowExtraWeights);

/// --gpus N, 1 to kMaxWorkers (runtime/train/Trainer.h); `help` says what N is to the job.
void addGpusFlag(CLI::App &app, int &devices, const std::string &help);

} // namespace rp::rprun

#endif // RP_TOOLS_RP_RUN_FLAGS_H
