//===- InputGuards.cpp - What a run must not start from or write over ----===//

#include "runtime/train/InputGuards.h"

#include <filesystem>

namespace rp::runtime {

namespace fs = std::filesystem;

std::optional<std::string> placeholderWeightsNote(const rp::plan::Plan &plan,
                                                  const std::string &planPath) {
  if (plan.placeholder_weights().empty())
    return std::nullopt;
  const std::string model = plan.checkpoint_dir().empty()
                                ? std::string("the model")
                                : "the model in " + plan.checkpoint_dir();
  return planPath + " holds placeholder weights (" + plan.placeholder_weights() + ") of " +
         model + ", not its weights";
}

Status checkInitialWeights(const rp::plan::Plan &plan, const std::string &planPath,
                           bool weightsGiven, bool fromScratch,
                           const std::string &fromScratchFlag) {
  std::optional<std::string> note = placeholderWeightsNote(plan, planPath);
  if (!note || weightsGiven)
    return okStatus();
  const bool random = plan.placeholder_weights() == "random";
  if (random && fromScratch)
    return okStatus();
  const std::string dir =
      plan.checkpoint_dir().empty() ? std::string("DIR") : plan.checkpoint_dir();
  std::string message = *note + ": pass --weights " + dir + " to start from its weights";
  if (random && !fromScratchFlag.empty())
    message += ", or " + fromScratchFlag + " to train from the random initial weights";
  return invalidArgument(message);
}

namespace {

/// `path` made absolute and normal (symbolic links resolved where it exists).
fs::path normal(const std::string &path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec)
    p = fs::absolute(path).lexically_normal();
  if (p.filename().empty())
    p = p.parent_path();
  return p;
}

/// Whether `inner` is `outer` or lies inside it.
bool within(const fs::path &inner, const fs::path &outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i)
    if (i == inner.end() || *i != *o)
      return false;
  return true;
}

} // namespace

Status checkExportOutsideInputs(const std::string &dir, const std::string &flag,
                                const RunInputs &inputs) {
  if (dir.empty())
    return okStatus();
  const fs::path target = normal(dir);
  std::error_code ec;
  std::vector<std::pair<std::string, std::string>> dirs; // (what, path)
  if (!inputs.weights.empty()) {
    // A checkpoint directory, or the directory of its index: the shards and the tokenizer
    // beside them are the model's too.
    const bool index = inputs.weights.size() >= 5 &&
                       inputs.weights.compare(inputs.weights.size() - 5, 5, ".json") == 0;
    if (fs::is_directory(inputs.weights, ec))
      dirs.push_back({"the --weights checkpoint directory", inputs.weights});
    else if (index)
      dirs.push_back({"the --weights checkpoint directory",
                      normal(inputs.weights).parent_path().string()});
  }
  if (!inputs.resumeDir.empty())
    dirs.push_back({"the --resume checkpoint directory", inputs.resumeDir});
  for (const auto &[what, path] : dirs) {
    const fs::path p = normal(path);
    if (within(target, p) || within(p, target))
      return invalidArgument(flag + " " + dir + " would write " +
                             (target == p ? "over" : within(target, p) ? "into" : "around") +
                             " " + what + " " + path +
                             ", replacing the model's files: choose a directory outside it");
  }
  std::vector<std::string> files = inputs.files;
  if (!inputs.weights.empty() && !fs::is_directory(inputs.weights, ec))
    files.push_back(inputs.weights);
  for (const std::string &file : files)
    if (!file.empty() && within(normal(file), target))
      return invalidArgument(flag + " " + dir + " holds the input file " + file +
                             ", which the export would delete: choose another directory");
  return okStatus();
}

} // namespace rp::runtime
