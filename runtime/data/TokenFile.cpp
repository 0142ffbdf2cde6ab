//===- TokenFile.cpp - Training data as token ids -------------------------===//

#include "runtime/data/TokenFile.h"

#include "base/AtomicFile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

namespace rp::runtime {
namespace {

/// Bytes read per pread while decoding tokens.
constexpr size_t kChunkBytes = size_t(1) << 20;

std::string sysError() { return std::strerror(errno); }

/// An open, regular, read-only file and its size.
class InputFile {
public:
  ~InputFile() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  InputFile() = default;
  InputFile(const InputFile &) = delete;
  InputFile &operator=(const InputFile &) = delete;

  /// `where` names the file in messages ("token file 'x.bin'").
  Status open(const std::string &path, const std::string &where) {
    where_ = where;
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      std::string msg = "cannot open " + where + ": " + sysError();
      return errno == ENOENT ? notFound(msg) : unavailable(msg);
    }
    struct stat st;
    if (::fstat(fd_, &st) != 0)
      return unavailable("cannot stat " + where + ": " + sysError());
    if (!S_ISREG(st.st_mode))
      return invalidArgument(where + " is not a regular file");
    size_ = static_cast<uint64_t>(st.st_size);
    return okStatus();
  }

  uint64_t size() const { return size_; }

  /// Reads exactly `n` bytes at `offset`; a short read (the file shrank) is DataLoss.
  Status read(void *buf, size_t n, uint64_t offset) const {
    char *p = static_cast<char *>(buf);
    while (n > 0) {
      ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR)
        continue;
      if (got < 0)
        return unavailable("cannot read " + where_ + ": " + sysError());
      if (got == 0)
        return dataLoss(where_ + " ended early while reading (did it change while being read?)");
      p += got;
      n -= static_cast<size_t>(got);
      offset += static_cast<uint64_t>(got);
    }
    return okStatus();
  }

private:
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string where_;
};

int32_t loadI32LE(const unsigned char *b) {
  uint32_t u = uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24;
  return static_cast<int32_t>(u);
}

void storeLE(std::string &out, uint32_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

bool endsWith(const std::string &s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(),
                                                suffix.data(), suffix.size()) == 0;
}

std::string notATokenFileMessage(const std::string &path) {
  return path + ": not a token file (no llm.c header, magic " + std::to_string(kTokenFileMagic) +
         " or " + std::to_string(kTokenFileMagicU32) +
         "); pass --data-format text to read raw text as byte tokens, or --data-format nanogpt "
         "for nanoGPT's headerless uint16 train.bin";
}

bool isTokenFileMagic(int32_t magic) {
  return magic == kTokenFileMagic || magic == kTokenFileMagicU32 || magic == kMaskedTokenFileMagic;
}

/// Decodes `n` little-endian ids of `tokenBytes` (1, 2 or 4) bytes.
void decodeIds(const unsigned char *b, size_t n, int tokenBytes, uint32_t *out) {
  if (tokenBytes == 1) {
    std::copy(b, b + n, out);
  } else if (tokenBytes == 2) {
    for (size_t i = 0; i < n; ++i)
      out[i] = uint32_t(b[2 * i]) | uint32_t(b[2 * i + 1]) << 8;
  } else {
    for (size_t i = 0; i < n; ++i)
      out[i] = static_cast<uint32_t>(loadI32LE(b + 4 * i));
  }
}

/// Reads out.size() ids of `tokenBytes` bytes from `file` at byte `offset`, a chunk of at most
/// kChunkBytes at a time.
Status readIds(const InputFile &file, uint64_t offset, int tokenBytes, std::vector<uint32_t> &out) {
  const size_t bytes = static_cast<size_t>(tokenBytes);
  std::vector<unsigned char> chunk(std::min<uint64_t>(kChunkBytes, out.size() * bytes));
  const size_t perChunk = chunk.size() / bytes;
  for (size_t done = 0; done < out.size();) {
    const size_t n = std::min(perChunk, out.size() - done);
    RP_RETURN_IF_ERROR(file.read(chunk.data(), n * bytes, offset + done * bytes));
    decodeIds(chunk.data(), n, tokenBytes, out.data() + done);
    done += n;
  }
  return okStatus();
}

} // namespace

const char *dataFormatName(DataFormat format) {
  switch (format) {
  case DataFormat::Auto:
    return "auto";
  case DataFormat::Tokens:
    return "tokens";
  case DataFormat::Text:
    return "text";
  case DataFormat::NanoGpt:
    return "nanogpt";
  }
  return "unknown";
}

StatusOr<DataFormat> parseDataFormat(std::string_view name) {
  for (DataFormat f : {DataFormat::Auto, DataFormat::Tokens, DataFormat::Text, DataFormat::NanoGpt})
    if (name == dataFormatName(f))
      return f;
  return invalidArgument("unknown data format '" + std::string(name) +
                         "' (expected auto, tokens, text or nanogpt)");
}

StatusOr<TokenData> readMaskedTokenFile(const std::string &path) {
  const std::string where = "masked token file '" + path + "'";
  InputFile file;
  RP_RETURN_IF_ERROR(file.open(path, where));
  const uint64_t fileSize = file.size();
  if (fileSize < static_cast<uint64_t>(kTokenFileHeaderBytes))
    return dataLoss(where + " is " + std::to_string(fileSize) + " bytes, shorter than the " +
                    std::to_string(kTokenFileHeaderBytes) + "-byte header: truncated");
  unsigned char header[kTokenFileHeaderBytes];
  RP_RETURN_IF_ERROR(file.read(header, sizeof(header), 0));
  const int32_t magic = loadI32LE(header), version = loadI32LE(header + 4);
  const int32_t count = loadI32LE(header + 8), maskCount = loadI32LE(header + 12);
  if (magic != kMaskedTokenFileMagic)
    return invalidArgument(where + ": magic " + std::to_string(magic) + " is not " +
                           std::to_string(kMaskedTokenFileMagic) + " (a masked token file)");
  if (version != 1 && version != 2)
    return invalidArgument(where + ": unknown version " + std::to_string(version) +
                           " (1: uint16 tokens, 2: uint32 tokens)");
  const int tokenBytes = version == 1 ? 2 : 4;
  if (count < 0 || maskCount < 0)
    return dataLoss(where + ": negative count in the header: corrupt");
  if (maskCount != count)
    return dataLoss(where + ": the header says " + std::to_string(count) + " tokens but " +
                    std::to_string(maskCount) + " loss-mask bytes; expected one per token");
  const uint64_t expected = static_cast<uint64_t>(kTokenFileHeaderBytes) +
                            static_cast<uint64_t>(count) * (tokenBytes + 1);
  if (expected != fileSize)
    return dataLoss(where + ": the header says " + std::to_string(count) + " tokens of " +
                    std::to_string(tokenBytes) + " bytes and as many mask bytes (" +
                    std::to_string(expected) + " bytes with the header) but the file is " +
                    std::to_string(fileSize) + " bytes: " +
                    (fileSize < expected ? "truncated" : "trailing bytes, corrupt"));
  TokenData data{path, DataFormat::Tokens, tokenBytes, {}, {}};
  data.tokens.resize(static_cast<size_t>(count));
  RP_RETURN_IF_ERROR(readIds(file, sizeof(header), tokenBytes, data.tokens));
  data.lossMask.resize(static_cast<size_t>(count));
  if (count > 0)
    RP_RETURN_IF_ERROR(file.read(data.lossMask.data(), data.lossMask.size(),
                                 sizeof(header) + static_cast<uint64_t>(count) * tokenBytes));
  for (size_t i = 0; i < data.lossMask.size(); ++i)
    if (data.lossMask[i] > 1)
      return invalidArgument(where + ": loss-mask byte " + std::to_string(data.lossMask[i]) +
                             " at position " + std::to_string(i) + " is not 0 or 1");
  return data;
}

StatusOr<TokenData> readTokenFile(const std::string &path) {
  const std::string where = "token file '" + path + "'";
  InputFile file;
  RP_RETURN_IF_ERROR(file.open(path, where));
  const uint64_t fileSize = file.size();
  if (fileSize < static_cast<uint64_t>(kTokenFileHeaderBytes))
    return dataLoss(where + " is " + std::to_string(fileSize) + " bytes, shorter than the " +
                    std::to_string(kTokenFileHeaderBytes) +
                    "-byte llm.c header: not a token file, or truncated");
  unsigned char header[kTokenFileHeaderBytes];
  RP_RETURN_IF_ERROR(file.read(header, sizeof(header), 0));
  const int32_t magic = loadI32LE(header);
  const int32_t version = loadI32LE(header + 4);
  const int32_t count = loadI32LE(header + 8);
  if (magic == kMaskedTokenFileMagic)
    return readMaskedTokenFile(path);
  if (!isTokenFileMagic(magic))
    return invalidArgument(notATokenFileMessage(path) + " (found magic " +
                           std::to_string(magic) + ")");
  int tokenBytes = 0;
  if (magic == kTokenFileMagic && (version == 1 || version == 2))
    tokenBytes = version == 1 ? 2 : 4;
  else if (magic == kTokenFileMagicU32 && version == 7)
    tokenBytes = 4;
  else
    return invalidArgument(where + ": unknown llm.c token file version " + std::to_string(version) +
                           " for magic " + std::to_string(magic) +
                           " (20240520: version 1, uint16 tokens; 20240801: version 7, uint32 "
                           "tokens)");
  if (count < 0)
    return dataLoss(where + ": negative token count " + std::to_string(count) +
                    " in the header: corrupt");
  const uint64_t expected =
      static_cast<uint64_t>(kTokenFileHeaderBytes) + static_cast<uint64_t>(count) * tokenBytes;
  if (expected != fileSize)
    return dataLoss(where + ": the header says " + std::to_string(count) + " tokens of " +
                    std::to_string(tokenBytes) + " bytes (" + std::to_string(expected) +
                    " bytes with the header) but the file is " + std::to_string(fileSize) +
                    " bytes: " + (fileSize < expected ? "truncated" : "trailing bytes, corrupt"));

  TokenData data{path, DataFormat::Tokens, tokenBytes, {}, {}};
  data.tokens.resize(static_cast<size_t>(count));
  RP_RETURN_IF_ERROR(readIds(file, sizeof(header), tokenBytes, data.tokens));
  return data;
}

StatusOr<TokenData> readNanoGptFile(const std::string &path) {
  const std::string where = "nanoGPT token file '" + path + "'";
  InputFile file;
  RP_RETURN_IF_ERROR(file.open(path, where));
  if (file.size() == 0)
    return invalidArgument(where + " is empty: there is nothing to train on");
  if (file.size() % 2 != 0)
    return dataLoss(where + " is " + std::to_string(file.size()) +
                    " bytes, not a whole number of uint16 ids: truncated, or not nanoGPT's "
                    "format");
  if (file.size() / 2 > std::numeric_limits<size_t>::max() / sizeof(uint32_t))
    return resourceExhausted(where + " is too large to read into memory");
  TokenData data{path, DataFormat::NanoGpt, 2, {}, {}};
  data.tokens.resize(static_cast<size_t>(file.size() / 2));
  RP_RETURN_IF_ERROR(readIds(file, 0, 2, data.tokens));
  return data;
}

StatusOr<TokenData> readTextFile(const std::string &path) {
  const std::string where = "text file '" + path + "'";
  InputFile file;
  RP_RETURN_IF_ERROR(file.open(path, where));
  if (file.size() == 0)
    return invalidArgument(where + " is empty: there is nothing to train on");
  if (file.size() > std::numeric_limits<size_t>::max() / sizeof(uint32_t))
    return resourceExhausted(where + " is too large to read into memory");
  TokenData data{path, DataFormat::Text, 1, {}, {}};
  data.tokens.resize(static_cast<size_t>(file.size()));
  RP_RETURN_IF_ERROR(readIds(file, 0, 1, data.tokens));
  return data;
}

StatusOr<TokenData> readTokens(const std::string &path, DataFormat format) {
  switch (format) {
  case DataFormat::Tokens:
    return readTokenFile(path);
  case DataFormat::Text:
    return readTextFile(path);
  case DataFormat::NanoGpt:
    return readNanoGptFile(path);
  case DataFormat::Auto:
    break;
  }
  // Auto: look at the first four bytes.
  InputFile file;
  RP_RETURN_IF_ERROR(file.open(path, "data file '" + path + "'"));
  unsigned char magic[4] = {0, 0, 0, 0};
  if (file.size() >= sizeof(magic))
    RP_RETURN_IF_ERROR(file.read(magic, sizeof(magic), 0));
  if (file.size() >= sizeof(magic) && isTokenFileMagic(loadI32LE(magic)))
    return readTokenFile(path);
  if (endsWith(path, ".txt"))
    return readTextFile(path);
  return invalidArgument(notATokenFileMessage(path));
}

Status writeTokenFile(const std::string &path, const std::vector<uint32_t> &tokens,
                      int tokenBytes) {
  if (tokenBytes != 2 && tokenBytes != 4)
    return invalidArgument("token file '" + path + "': token size " + std::to_string(tokenBytes) +
                           " bytes is not 2 (llm.c's uint16 files) or 4 (uint32 files)");
  if (tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return invalidArgument("token file '" + path + "': " + std::to_string(tokens.size()) +
                           " tokens exceed the llm.c header's int32 count");
  if (tokenBytes == 2) {
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] > 0xffff)
        return invalidArgument("token file '" + path + "': token " + std::to_string(tokens[i]) +
                               " at position " + std::to_string(i) +
                               " does not fit in 2 bytes (use 4-byte tokens)");
  }
  std::string bytes;
  bytes.reserve(static_cast<size_t>(kTokenFileHeaderBytes) + tokens.size() * tokenBytes);
  storeLE(bytes, static_cast<uint32_t>(tokenBytes == 2 ? kTokenFileMagic : kTokenFileMagicU32), 4);
  storeLE(bytes, tokenBytes == 2 ? 1 : 7, 4);
  storeLE(bytes, static_cast<uint32_t>(tokens.size()), 4);
  bytes.resize(static_cast<size_t>(kTokenFileHeaderBytes), '\0');
  for (uint32_t t : tokens)
    storeLE(bytes, t, tokenBytes);
  return writeFileAtomic(path, bytes.data(), bytes.size());
}

Status writeMaskedTokenFile(const std::string &path, const std::vector<uint32_t> &tokens,
                            const std::vector<uint8_t> &mask, int tokenBytes) {
  const std::string where = "masked token file '" + path + "'";
  if (mask.size() != tokens.size())
    return invalidArgument(where + ": " + std::to_string(mask.size()) + " loss-mask bytes for " +
                           std::to_string(tokens.size()) + " tokens");
  for (size_t i = 0; i < mask.size(); ++i)
    if (mask[i] > 1)
      return invalidArgument(where + ": loss-mask byte " + std::to_string(mask[i]) +
                             " at position " + std::to_string(i) + " is not 0 or 1");
  if (tokenBytes != 2 && tokenBytes != 4)
    return invalidArgument(where + ": token size " + std::to_string(tokenBytes) +
                           " bytes is not 2 or 4");
  if (tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return invalidArgument(where + ": " + std::to_string(tokens.size()) +
                           " tokens exceed the header's int32 count");
  std::string bytes;
  bytes.reserve(static_cast<size_t>(kTokenFileHeaderBytes) + tokens.size() * (tokenBytes + 1));
  storeLE(bytes, static_cast<uint32_t>(kMaskedTokenFileMagic), 4);
  storeLE(bytes, tokenBytes == 2 ? 1 : 2, 4);
  storeLE(bytes, static_cast<uint32_t>(tokens.size()), 4);
  storeLE(bytes, static_cast<uint32_t>(tokens.size()), 4);
  bytes.resize(static_cast<size_t>(kTokenFileHeaderBytes), '\0');
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokenBytes == 2 && tokens[i] > 0xffff)
      return invalidArgument(where + ": token " + std::to_string(tokens[i]) + " at position " +
                             std::to_string(i) + " does not fit in 2 bytes (use 4-byte tokens)");
    storeLE(bytes, tokens[i], tokenBytes);
  }
  bytes.append(reinterpret_cast<const char *>(mask.data()), mask.size());
  return writeFileAtomic(path, bytes.data(), bytes.size());
}

Status checkVocabulary(const TokenData &data, int64_t vocabSize) {
  if (vocabSize < 1)
    return invalidArgument(data.path + ": vocabulary size " + std::to_string(vocabSize) +
                           " is not positive");
  for (size_t i = 0; i < data.tokens.size(); ++i) {
    if (static_cast<int64_t>(data.tokens[i]) < vocabSize)
      continue;
    std::string msg = data.path + ": token " + std::to_string(data.tokens[i]) + " at position " +
                      std::to_string(i) + " is >= the model's vocabulary size " +
                      std::to_string(vocabSize);
    if (data.format == DataFormat::Text)
      msg += " (text data is read as byte tokens 0..255 and needs a vocabulary of at least 256)";
    return invalidArgument(msg);
  }
  return okStatus();
}

} // namespace rp::runtime
