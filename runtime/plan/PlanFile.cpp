//===- PlanFile.cpp - Reading and writing .rpplan files -------------------===//

#include "runtime/plan/PlanFile.h"

#include "base/AtomicFile.h"
#include "base/ParamInit.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rp::runtime {
namespace {

/// The first bytes of every plan file: the tag of PlanFile.magic (field 1, wire type 5:
/// fixed32) and the magic, little-endian. Protobuf writes fields in field-number order, so a
/// file that does not start with these is not a plan file.
constexpr unsigned char kPlanPrefix[] = {0x0d, 0x52, 0x50, 0x4c, 0x4e};

constexpr const char *kCorrupted = "the plan file is corrupted or truncated";

/// The whole file, or an error naming `path`.
StatusOr<std::string> readWholeFile(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::string msg = "cannot open plan file '" + path + "': " + std::strerror(errno);
    return errno == ENOENT ? notFound(msg) : unavailable(msg);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalidArgument("plan file '" + path + "' is not a regular file");
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > kMaxPlanFileBytes) {
    ::close(fd);
    return invalidArgument("plan file '" + path + "' is " + std::to_string(size) +
                           " bytes, more than the 2 GiB a plan may have");
  }
  std::string bytes(static_cast<size_t>(size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      std::string msg = "cannot read plan file '" + path + "': " + std::strerror(errno);
      ::close(fd);
      return unavailable(msg);
    }
    if (n == 0)
      break; // the file shrank while we read it: the checks below report it
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

} // namespace

uint64_t planContentHash(std::string_view bytes) { return fnv1a64(bytes); }

Status writePlanFile(const std::string &path, const rp::plan::Plan &plan) {
  if (plan.ByteSizeLong() > static_cast<size_t>(INT_MAX))
    return internal("cannot write plan file '" + path + "': the plan is " +
                    std::to_string(plan.ByteSizeLong()) + " bytes, more than protobuf's 2 GiB");
  std::string planBytes;
  {
    google::protobuf::io::StringOutputStream stream(&planBytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!plan.SerializeToCodedStream(&coded))
      return internal("cannot serialize the plan for '" + path + "'");
  }
  rp::plan::PlanFile envelope;
  envelope.set_magic(kPlanMagic);
  envelope.set_schema_version(kSchemaVersion);
  envelope.set_content_hash(planContentHash(planBytes));
  envelope.set_plan(std::move(planBytes));
  std::string fileBytes;
  if (envelope.ByteSizeLong() > static_cast<size_t>(INT_MAX) ||
      !envelope.SerializeToString(&fileBytes))
    return internal("cannot serialize the plan file envelope for '" + path + "'");
  return writeFileAtomic(path, fileBytes.data(), fileBytes.size());
}

StatusOr<rp::plan::Plan> readPlanFile(const std::string &path) {
  RP_ASSIGN_OR_RETURN(std::string bytes, readWholeFile(path));
  const std::string where = "plan file '" + path + "'";

  // The prefix tells a plan file (possibly cut short) from anything else.
  if (bytes.empty())
    return dataLoss(where + " is empty: " + kCorrupted);
  size_t prefix = std::min(bytes.size(), sizeof(kPlanPrefix));
  if (std::memcmp(bytes.data(), kPlanPrefix, prefix) != 0)
    return invalidArgument(where + ": not an rpc plan file (no \"RPLN\" magic number)");

  rp::plan::PlanFile envelope;
  if (bytes.size() < sizeof(kPlanPrefix) || !envelope.ParseFromString(bytes))
    return dataLoss(where + ": cannot parse the envelope: " + kCorrupted);
  if (envelope.magic() != kPlanMagic)
    return invalidArgument(where + ": not an rpc plan file (no \"RPLN\" magic number)");
  // Versions start at 1: 0 means the field is absent (the file ends after the magic).
  if (envelope.schema_version() == 0)
    return dataLoss(where + ": the envelope has no schema version: " + kCorrupted);
  if (envelope.schema_version() != kSchemaVersion)
    return invalidArgument(where + ": plan schema version " +
                           std::to_string(envelope.schema_version()) +
                           ", this rp-run reads version " + std::to_string(kSchemaVersion) +
                           ": recompile the model with this rpc-compile");
  uint64_t hash = planContentHash(envelope.plan());
  if (hash != envelope.content_hash())
    return dataLoss(where + ": content hash mismatch: " + kCorrupted);

  rp::plan::Plan plan;
  if (!plan.ParseFromString(envelope.plan()))
    return dataLoss(where + ": the plan does not parse although its hash matches: the file was "
                            "written by an incompatible rpc-compile");
  return plan;
}

std::string planToText(const rp::plan::Plan &plan) {
  std::string text;
  google::protobuf::TextFormat::Printer printer;
  printer.PrintToString(plan, &text);
  return text;
}

} // namespace rp::runtime
