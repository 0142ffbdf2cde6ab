//===- Checkpoint.cpp - Crash-safe training checkpoint directories --------===//
//
// The save order (tensor files, directory fsync, checkpoint.json, directory fsync, removal of
// other steps' files) is what makes a checkpoint directory crash-safe: checkpoint.json is the
// single commit point, replaced by rename (base/AtomicFile.h), and the files it names
// are durable before it is. The same scheme as PyTorch Lightning / Orbax "write then commit".
//
//===----------------------------------------------------------------------===//

#include "runtime/train/Checkpoint.h"

#include "base/AbortCleanup.h"
#include "base/AtomicFile.h"
#include "base/Checksum.h"
#include "runtime/io/JsonNumbers.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

namespace rp::runtime {
namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

std::string sysError() { return std::strerror(errno); }

/// `dir`/`name`, without doubling a trailing '/'.
std::string joinPath(const std::string &dir, const std::string &name) {
  if (dir.empty())
    return name;
  if (dir.back() == '/')
    return dir + name;
  return dir + "/" + name;
}

/// The parent of `path` ("" for a relative path of one component, "/" for "/x").
std::string parentOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return "";
  size_t end = path.find_last_not_of('/', slash);
  if (end == std::string::npos)
    return "/";
  return path.substr(0, end + 1);
}

/// Creates `dir` and its missing parents (mode 0755), appending each directory it created to
/// `created` (shallowest first). False with `reason` set on a failure; `created` then still
/// lists what was created, for the caller to remove.
bool makeDirs(const std::string &dir, std::vector<std::string> &created, std::string &reason) {
  if (dir.empty()) {
    reason = "the path is empty";
    return false;
  }
  std::string p = dir;
  while (p.size() > 1 && p.back() == '/')
    p.pop_back();
  std::vector<std::string> missing; // deepest first
  while (!p.empty()) {
    struct stat st;
    if (::stat(p.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        reason = "'" + p + "' is not a directory";
        return false;
      }
      break;
    }
    if (errno != ENOENT) {
      reason = "'" + p + "': " + sysError();
      return false;
    }
    missing.push_back(p);
    p = parentOf(p);
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0755) == 0) {
      created.push_back(*it);
      continue;
    }
    int err = errno;
    struct stat st;
    if (err == EEXIST && ::stat(it->c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      continue; // created concurrently by someone else
    reason = "cannot create directory '" + *it + "': " + std::strerror(err);
    return false;
  }
  return true;
}

/// Removes the directories makeDirs created, deepest first (best effort).
void removeCreatedDirs(const std::vector<std::string> &created) {
  for (auto it = created.rbegin(); it != created.rend(); ++it)
    ::rmdir(it->c_str());
}

/// Flushes the directory entries of `dir` (the renames in it) to disk.
Status fsyncDir(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return unavailable("cannot open checkpoint directory '" + dir + "': " + sysError());
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  // Some file systems do not support fsync on directories; that is not a failure of the save.
  if (rc != 0 && err != EINVAL && err != ENOTSUP)
    return unavailable("cannot flush checkpoint directory '" + dir + "': " + std::strerror(err));
  return okStatus();
}

bool startsWith(const std::string &s, const std::string &prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

/// True for the files a save owns: "model-step<digits>[-1].safetensors",
/// "optimizer-step<digits>[-1].safetensors", either followed by a writeFileAtomic temporary
/// suffix ".tmp.XXXXXX", and "checkpoint.json.tmp.XXXXXX".
bool isSaveOwnedFile(const std::string &name) {
  static const std::string kTmp = ".tmp.";
  if (startsWith(name, std::string(kCheckpointManifestName) + kTmp))
    return true;
  size_t pos;
  if (startsWith(name, "model-step"))
    pos = std::strlen("model-step");
  else if (startsWith(name, "optimizer-step"))
    pos = std::strlen("optimizer-step");
  else
    return false;
  size_t digits = pos;
  while (digits < name.size() && std::isdigit(static_cast<unsigned char>(name[digits])))
    ++digits;
  if (digits == pos)
    return false;
  if (name.compare(digits, 2, "-1") == 0)
    digits += 2;
  static const std::string kExt = ".safetensors";
  if (name.compare(digits, kExt.size(), kExt) != 0)
    return false;
  size_t rest = digits + kExt.size();
  return rest == name.size() || name.compare(rest, kTmp.size(), kTmp) == 0;
}

/// Removes the files of other steps and stale temporaries from `dir`, keeping `keep` (best
/// effort: the checkpoint is already committed, so a file that cannot be removed is left).
void removeStaleFiles(const std::string &dir, const std::vector<std::string> &keep) {
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return;
  std::vector<std::string> stale;
  while (struct dirent *e = ::readdir(d)) {
    std::string name = e->d_name;
    if (isSaveOwnedFile(name) && std::find(keep.begin(), keep.end(), name) == keep.end())
      stale.push_back(name);
  }
  ::closedir(d);
  for (const std::string &name : stale)
    ::unlink(joinPath(dir, name).c_str());
}

std::vector<SafetensorsTensor> sortedByName(const std::vector<SafetensorsTensor> &tensors) {
  std::vector<SafetensorsTensor> sorted = tensors;
  std::stable_sort(
      sorted.begin(), sorted.end(),
      [](const SafetensorsTensor &a, const SafetensorsTensor &b) { return a.name < b.name; });
  return sorted;
}

/// A file name checkpoint.json may name: a plain name inside the directory.
bool isPlainFileName(const std::string &name) {
  return !name.empty() && name.find('/') == std::string::npos &&
         name.find('\\') == std::string::npos && name.find('\0') == std::string::npos &&
         name.find("..") == std::string::npos && name != ".";
}

/// Reads the whole file at `path`; errno is kept for the caller on failure.
bool readWholeFile(const std::string &path, std::string &out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  out.clear();
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      errno = err;
      return false;
    }
    if (n == 0)
      break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

/// Reads one tensor file named by checkpoint.json; a missing file is data loss.
StatusOr<SafetensorsFile> readTensorFile(const std::string &dir, const std::string &manifest,
                                         const char *role, const std::string &name) {
  StatusOr<SafetensorsFile> file = readSafetensors(joinPath(dir, name));
  if (file.ok())
    return file;
  std::string prefix = "checkpoint '" + manifest + "' names " + role + " file '" + name + "'";
  if (file.status().code() == StatusCode::NotFound)
    return dataLoss(prefix + ", which is missing: " + file.status().message());
  return Status(file.status().code(), prefix + ": " + file.status().message());
}

} // namespace

std::string checkpointModelFileName(int64_t step, int generation) {
  return "model-step" + std::to_string(step) + (generation ? "-1" : "") + ".safetensors";
}

std::string checkpointOptimizerFileName(int64_t step, int generation) {
  return "optimizer-step" + std::to_string(step) + (generation ? "-1" : "") + ".safetensors";
}

namespace {

/// The tensor files the committed checkpoint.json of `dir` names (none when it is missing or
/// unreadable: then no file of `dir` is part of a loadable checkpoint).
std::vector<std::string> committedFiles(const std::string &dir) {
  std::vector<std::string> names;
  std::string text;
  if (!readWholeFile(joinPath(dir, kCheckpointManifestName), text))
    return names;
  json manifest = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!manifest.is_object())
    return names;
  for (const char *role : {"model", "optimizer"}) {
    auto it = manifest.find(role);
    if (it != manifest.end() && it->is_string())
      names.push_back(it->get<std::string>());
  }
  return names;
}

/// The tensor files a save has written and not yet committed: removed when the save fails
/// (destroyed before commit()), and registered for removal by a second interrupt meanwhile.
class GenerationFiles {
public:
  GenerationFiles() = default;
  GenerationFiles(const GenerationFiles &) = delete;
  GenerationFiles &operator=(const GenerationFiles &) = delete;
  ~GenerationFiles() {
    for (const auto &[path, slot] : files_) {
      unregisterAbortCleanup(slot);
      if (!committed_)
        ::unlink(path.c_str());
    }
  }
  void add(const std::string &path) { files_.emplace_back(path, registerAbortCleanup(path)); }
  /// checkpoint.json names them now: they stay.
  void commit() { committed_ = true; }

private:
  std::vector<std::pair<std::string, int>> files_;
  bool committed_ = false;
};

constexpr const char kManifestChecksumKey[] = "manifest_checksum";

} // namespace

std::string sealCheckpointManifest(const std::string &text) {
  const std::string body = text.substr(0, text.rfind('}'));
  std::string trimmed = body;
  while (!trimmed.empty() && trimmed.back() == '\n')
    trimmed.pop_back();
  return trimmed + ",\n  \"" + kManifestChecksumKey + "\": \"" +
         formatChecksum(checksumBytes(trimmed.data(), trimmed.size())) + "\"\n}\n";
}

namespace {

/// Checks a version 2 manifest's own checksum against its raw bytes. Errors: DataLoss.
Status checkManifestChecksum(const std::string &text, const json &manifest,
                             const std::string &where) {
  const std::string marker = std::string(",\n  \"") + kManifestChecksumKey + "\": ";
  const size_t at = text.rfind(marker);
  auto it = manifest.find(kManifestChecksumKey);
  const std::optional<uint64_t> recorded =
      it != manifest.end() && it->is_string() ? parseChecksum(it->get<std::string>())
                                              : std::nullopt;
  if (at == std::string::npos || !recorded)
    return dataLoss(where + " is damaged: its \"" + kManifestChecksumKey +
                    "\" member is missing or malformed");
  if (checksumBytes(text.data(), at) != *recorded)
    return dataLoss(where + " is damaged: its bytes do not match its \"" +
                    kManifestChecksumKey + "\"");
  return okStatus();
}

/// Checks the `role` ("model", "optimizer") tensor file `name` of `dir` against its
/// "checksums" entry. Errors: DataLoss naming the file (no entry, a mismatch, a missing file),
/// the reader's errors.
Status checkTensorFileChecksum(const std::string &dir, const json &manifest,
                               const std::string &where, const char *role,
                               const std::string &name) {
  auto sums = manifest.find("checksums");
  std::optional<uint64_t> recorded;
  if (sums != manifest.end() && sums->is_object()) {
    auto it = sums->find(name);
    if (it != sums->end() && it->is_string())
      recorded = parseChecksum(it->get<std::string>());
  }
  if (!recorded)
    return dataLoss(where + " records no valid checksum for '" + name + "' (\"checksums\")");
  StatusOr<uint64_t> actual = checksumFile(joinPath(dir, name));
  if (!actual.ok()) {
    if (actual.status().code() == StatusCode::NotFound)
      return dataLoss(where + " names " + role + " file '" + name + "', which is missing");
    return actual.status();
  }
  if (actual.value() != *recorded)
    return dataLoss("checkpoint file '" + joinPath(dir, name) + "' is damaged: its checksum " +
                    formatChecksum(actual.value()) + " is not the " + formatChecksum(*recorded) +
                    " recorded in " + kCheckpointManifestName);
  return okStatus();
}

} // namespace

Status saveCheckpoint(const std::string &dir, const CheckpointData &data) {
  if (data.step < 0)
    return invalidArgument("saving checkpoint to '" + dir + "': step " + std::to_string(data.step) +
                           " is negative");
  // A save of the step the directory's committed checkpoint holds writes the other generation
  // of names, so that a failure before the commit leaves that checkpoint's files intact.
  const std::vector<std::string> committed = committedFiles(dir);
  auto isCommitted = [&](const std::string &name) {
    return std::find(committed.begin(), committed.end(), name) != committed.end();
  };
  int generation = 0;
  if (isCommitted(checkpointModelFileName(data.step)) ||
      isCommitted(checkpointOptimizerFileName(data.step)))
    generation = 1;
  const std::string modelName = checkpointModelFileName(data.step, generation);
  const std::string optimizerName = checkpointOptimizerFileName(data.step, generation);

  // checkpoint.json's fields first, so that bad metadata fails before anything is written.
  ordered_json manifest = ordered_json::object();
  manifest["format"] = kCheckpointFormat;
  manifest["version"] = kCheckpointVersion;
  manifest["step"] = data.step;
  manifest["model"] = modelName;
  manifest["optimizer"] = optimizerName;
  ordered_json metadata = ordered_json::object();
  for (const auto &[key, value] : data.metadata)
    metadata[key] = value;
  manifest["metadata"] = std::move(metadata);
  try {
    (void)manifest.dump();
  } catch (const nlohmann::json::exception &) {
    return invalidArgument("saving checkpoint to '" + dir +
                           "': a metadata key or value is not valid UTF-8");
  }

  std::vector<std::string> created;
  std::string reason;
  if (!makeDirs(dir, created, reason))
    return unavailable("cannot create checkpoint directory '" + dir + "': " + reason);

  // The generation's files, removed again if the save fails before its commit (and by a
  // second interrupt while it runs).
  GenerationFiles files;
  const std::map<std::string, std::string> fileMetadata = {{"format", "pt"},
                                                           {"step", std::to_string(data.step)}};
  uint64_t modelSum = 0, optimizerSum = 0;
  RP_RETURN_IF_ERROR(writeSafetensors(joinPath(dir, modelName), sortedByName(data.model),
                                      fileMetadata, &modelSum));
  files.add(joinPath(dir, modelName));
  RP_RETURN_IF_ERROR(writeSafetensors(joinPath(dir, optimizerName),
                                      sortedByName(data.optimizer), fileMetadata, &optimizerSum));
  files.add(joinPath(dir, optimizerName));
  RP_RETURN_IF_ERROR(fsyncDir(dir));
  ordered_json checksums = ordered_json::object();
  checksums[modelName] = formatChecksum(modelSum);
  checksums[optimizerName] = formatChecksum(optimizerSum);
  manifest["checksums"] = std::move(checksums);
  const std::string manifestText = sealCheckpointManifest(manifest.dump(2));
  RP_RETURN_IF_ERROR(writeFileAtomic(joinPath(dir, kCheckpointManifestName), manifestText.data(),
                                     manifestText.size()));
  files.commit();
  RP_RETURN_IF_ERROR(fsyncDir(dir));
  removeStaleFiles(dir, {modelName, optimizerName});
  return okStatus();
}

Status checkCheckpointDir(const std::string &dir) {
  const std::string prefix = "cannot write checkpoints to " + dir + ": ";
  std::vector<std::string> created;
  std::string reason;
  if (!makeDirs(dir, created, reason)) {
    removeCreatedDirs(created);
    return invalidArgument(prefix + reason);
  }
  std::string probe = joinPath(dir, ".rpc-checkpoint-probe.XXXXXX");
  int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    std::string message = prefix + "cannot create a file in it: " + sysError();
    removeCreatedDirs(created);
    return invalidArgument(message);
  }
  static const char kBytes[] = "rpc checkpoint probe\n";
  ssize_t n;
  do {
    n = ::write(fd, kBytes, sizeof(kBytes) - 1);
  } while (n < 0 && errno == EINTR);
  int writeErr = n < 0 ? errno : 0;
  bool closed = ::close(fd) == 0;
  int closeErr = errno;
  bool unlinked = ::unlink(probe.c_str()) == 0;
  int unlinkErr = errno;
  std::string failure;
  if (n != static_cast<ssize_t>(sizeof(kBytes) - 1))
    failure = std::string("cannot write a file in it: ") +
              (writeErr ? std::strerror(writeErr) : "short write");
  else if (!closed)
    failure = std::string("cannot write a file in it: ") + std::strerror(closeErr);
  else if (!unlinked)
    failure = std::string("cannot remove a file in it: ") + std::strerror(unlinkErr);
  if (!failure.empty()) {
    removeCreatedDirs(created);
    return invalidArgument(prefix + failure);
  }
  return okStatus();
}

StatusOr<LoadedCheckpoint> loadCheckpoint(const std::string &dir) {
  const std::string manifestPath = joinPath(dir, kCheckpointManifestName);
  std::string text;
  if (!readWholeFile(manifestPath, text)) {
    if (errno == ENOENT || errno == ENOTDIR)
      return notFound(dir + " holds no checkpoint (checkpoint.json missing)");
    return unavailable("cannot read checkpoint file '" + manifestPath + "': " + sysError());
  }
  json manifest;
  try {
    manifest = json::parse(text);
  } catch (const json::exception &e) {
    // parse_error, and out_of_range for a number too large for any JSON number type (found
    // by fuzzing: test/fuzz-corpus/checkpoint/).
    return dataLoss("checkpoint file '" + manifestPath + "' is not valid JSON: " + e.what());
  }
  const std::string where = "checkpoint file '" + manifestPath + "'";
  if (!manifest.is_object())
    return invalidArgument(where + " is not a JSON object");

  auto field = [&](const char *name) -> const json * {
    auto it = manifest.find(name);
    return it == manifest.end() ? nullptr : &*it;
  };
  const json *format = field("format");
  if (!format || !format->is_string() || format->get<std::string>() != kCheckpointFormat)
    return invalidArgument(where + ": \"format\" is " + (format ? format->dump() : "missing") +
                           ", expected \"" + kCheckpointFormat + "\"");
  const json *version = field("version");
  if (!version || !version->is_number_integer() ||
      (version->get<int64_t>() != kCheckpointVersion && version->get<int64_t>() != 1))
    return invalidArgument(where + ": \"version\" is " + (version ? version->dump() : "missing") +
                           ", expected " + std::to_string(kCheckpointVersion) +
                           " (or 1; written by another version of rpc?)");
  const bool checksummed = version->get<int64_t>() == kCheckpointVersion;
  if (checksummed)
    RP_RETURN_IF_ERROR(checkManifestChecksum(text, manifest, where));
  else if (field("checksums") || field(kManifestChecksumKey))
    return dataLoss(where + " is damaged: a version 1 checkpoint has no checksums");

  LoadedCheckpoint ckpt;
  const json *step = field("step");
  std::optional<int64_t> stepValue = step ? jsonNonNegativeInt(*step) : std::nullopt;
  if (!stepValue)
    return invalidArgument(where + ": \"step\" is " + (step ? step->dump() : "missing") +
                           ", expected a non-negative integer");
  ckpt.step = *stepValue;

  std::string fileNames[2];
  const char *roles[2] = {"model", "optimizer"};
  for (int i = 0; i < 2; ++i) {
    const json *name = field(roles[i]);
    if (!name || !name->is_string())
      return invalidArgument(where + ": \"" + roles[i] + "\" is " +
                             (name ? name->dump() : "missing") + ", expected a file name");
    fileNames[i] = name->get<std::string>();
    if (!isPlainFileName(fileNames[i]))
      return invalidArgument(where + ": \"" + roles[i] + "\" is " + name->dump() +
                             ", expected a plain file name inside the checkpoint directory "
                             "(no '/', no '..')");
  }

  if (const json *metadata = field("metadata")) {
    if (!metadata->is_object())
      return invalidArgument(where + ": \"metadata\" is " + metadata->dump() +
                             ", expected an object of strings");
    for (auto it = metadata->begin(); it != metadata->end(); ++it) {
      if (!it.value().is_string())
        return invalidArgument(where + ": \"metadata\" entry '" + it.key() + "' is " +
                               it.value().dump() + ", expected a string");
      ckpt.metadata[it.key()] = it.value().get<std::string>();
    }
  }

  if (checksummed)
    for (int i = 0; i < 2; ++i)
      RP_RETURN_IF_ERROR(checkTensorFileChecksum(dir, manifest, where, roles[i], fileNames[i]));
  RP_ASSIGN_OR_RETURN(ckpt.model, readTensorFile(dir, manifestPath, "model", fileNames[0]));
  RP_ASSIGN_OR_RETURN(ckpt.optimizer, readTensorFile(dir, manifestPath, "optimizer", fileNames[1]));
  return ckpt;
}

} // namespace rp::runtime
