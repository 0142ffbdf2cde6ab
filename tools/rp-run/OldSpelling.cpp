//===- OldSpelling.cpp - rp-run's flat command line, mapped onto subcommands ===//

#include "tools/rp-run/OldSpelling.h"

#include <optional>
#include <set>

namespace rp::rprun {

namespace {

/// A flag of the command line: its name, its value (`--name=value`, or the next argument for
/// the flags that pick the job and take one), and the arguments it spans.
struct Flag {
  std::string name;
  std::optional<std::string> value;
  size_t first = 0, end = 0;
};

/// The flags that pick the job and take a value.
bool pickingFlagTakesValue(const std::string &name) {
  static const std::set<std::string> names = {"--backend", "--data", "--export-hf", "--report-json",
                                              "--steps"};
  return names.count(name) != 0;
}

/// The flags of `args` (up to a "--"), in order.
std::vector<Flag> scanFlags(const std::vector<std::string> &args) {
  std::vector<Flag> flags;
  for (size_t i = 0; i < args.size() && args[i] != "--"; ++i) {
    const std::string &arg = args[i];
    if (arg.rfind("--", 0) != 0)
      continue;
    Flag flag;
    flag.first = i;
    const size_t eq = arg.find('=');
    flag.name = arg.substr(0, eq);
    if (eq != std::string::npos)
      flag.value = arg.substr(eq + 1);
    else if (pickingFlagTakesValue(flag.name) && i + 1 < args.size())
      flag.value = args[++i];
    flag.end = i + 1;
    flags.push_back(std::move(flag));
  }
  return flags;
}

bool nonEmpty(const Flag &flag) { return flag.value && !flag.value->empty(); }

/// The job the old spelling picks (the file comment's rules), with its name in messages.
OldSpellingCall pickJob(const std::vector<Flag> &flags) {
  bool check = false, exportHf = false, data = false, steps = false;
  std::string backend;
  for (const Flag &f : flags) {
    check |=
        f.name == "--check" || f.name == "--report" || (f.name == "--report-json" && nonEmpty(f));
    exportHf |= f.name == "--export-hf" && nonEmpty(f);
    data |= f.name == "--data" && nonEmpty(f);
    steps |= f.name == "--steps";
    if (f.name == "--backend" && f.value)
      backend = *f.value;
  }
  if (backend == "sim" && !check && !exportHf)
    return {"simulate", "--backend sim", {}};
  if (check)
    return {"check", "--check", {}};
  if (exportHf && !data && !steps)
    return {"export", "--export-hf without training", {}};
  return {"train", "training", {}};
}

/// Whether `flag` only served the old spelling's job choice for `command` and is left out.
bool leftOut(const Flag &flag, const std::string &command) {
  if (command == "check")
    return flag.name == "--check";
  if (command == "simulate")
    return (flag.name == "--backend" && flag.value == "sim") || flag.name == "--data";
  return false;
}

} // namespace

OldSpellingCall mapOldSpelling(const std::vector<std::string> &args) {
  const std::vector<Flag> flags = scanFlags(args);
  OldSpellingCall call = pickJob(flags);
  std::vector<bool> keep(args.size(), true);
  for (const Flag &flag : flags)
    if (leftOut(flag, call.command))
      for (size_t i = flag.first; i < flag.end; ++i)
        keep[i] = false;
  for (size_t i = 0; i < args.size(); ++i)
    if (keep[i])
      call.args.push_back(args[i]);
  return call;
}

} // namespace rp::rprun
