//===- OldSpelling.h - rp-run's flat command line, mapped onto subcommands -*- C++ -*-===//
//
// Before subcommands, one flag set picked the job, and these command lines still work:
//
//   rp-run MODEL.rpplan --data FILE --steps N ...         train
//   rp-run MODEL.rpplan --check [--report] ...            check (also --report or --report-json
//                                                         alone)
//   rp-run MODEL.rpplan --backend sim ...                 simulate
//   rp-run --backend sim --profile FILE ...
//   rp-run MODEL.rpplan --export-hf DIR ...               export (without --data and --steps)
//
// The job is picked by the rules rp-run always used: --backend sim without --check, --report,
// --report-json and --export-hf simulates; else --check, --report or --report-json checks;
// else --export-hf without --data and --steps exports; else it trains. The arguments then go
// to that subcommand's parser, less the flags that only picked the job (--check, --backend
// sim) and, for a simulation, --data (a training command line with --backend sim simulates
// it; the old spelling ignored its data), so a flag of another job is refused by that parser.
// In the simulation, --node-link-gbps keeps its old unit, Gb/s (Invocation::oldSpelling).
//
//===----------------------------------------------------------------------===//
#ifndef RP_TOOLS_RP_RUN_OLDSPELLING_H
#define RP_TOOLS_RP_RUN_OLDSPELLING_H

#include <string>
#include <vector>

namespace rp::rprun {

/// An old-spelling command line as a subcommand's.
struct OldSpellingCall {
  std::string command;           ///< "train", "check", "simulate" or "export".
  std::string job;               ///< The job's name in messages (Invocation::job), as before.
  std::vector<std::string> args; ///< The subcommand's arguments (after its name).
};

/// `args` (argv after the program name; the caller found no subcommand name first) mapped
/// onto the subcommand that runs the same job (see the file comment).
OldSpellingCall mapOldSpelling(const std::vector<std::string> &args);

} // namespace rp::rprun

#endif // RP_TOOLS_RP_RUN_OLDSPELLING_H
