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

/// "loss-mask byte B at position I is not 0 or 1" for the first mask byte above 1, or "".
std::string badMaskByte(const std::vector<uint8_t> &mask) {
  for (size_t i = 0; i < mask.size(); ++i)
    if (mask[i] > 1)
      return "loss-mask byte " + std::to_string(mask[i]) + " at position " + std::to_string(i) +
             " is not 0 or 1";
  return "";
}

/// What is wrong with the first position that breaks the packed rule (each row of `rowLength`
/// starts at 0; within it each position is 0 or the previous one plus 1), or "".
std::string badPosition(const std::vector<uint32_t> &positions, int64_t rowLength) {
  for (size_t i = 0; i < positions.size(); ++i) {
    const bool rowStart = static_cast<int64_t>(i) % rowLength == 0;
    if (rowStart ? positions[i] == 0 : positions[i] == 0 || positions[i] == positions[i - 1] + 1)
      continue;
    return "position " + std::to_string(positions[i]) + " at index " + std::to_string(i) +
           (rowStart ? " starts a row of " + std::to_string(rowLength) +
                           " tokens (a row starts a document at position 0)"
                     : " follows " + std::to_string(positions[i - 1]) +
                           " (expected 0, a new document, or " +
                           std::to_string(positions[i - 1] + 1) + ")");
  }
  return "";
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
  if (version < 1 || version > 4)
    return invalidArgument(where + ": unknown version " + std::to_string(version) +
                           " (1: uint16 tokens, 2: uint32 tokens; packed rows with positions "
                           "3: uint16, 4: uint32)");
  const bool packed = version >= 3;
  const int tokenBytes = version % 2 == 1 ? 2 : 4;
  const int32_t positionCount = packed ? loadI32LE(header + 16) : count;
  const int32_t rowLength = packed ? loadI32LE(header + 20) : 0;
  const int32_t evalRows = packed ? loadI32LE(header + 24) : 0;
  if (count < 0 || maskCount < 0 || positionCount < 0)
    return dataLoss(where + ": negative count in the header: corrupt");
  if (maskCount != count)
    return dataLoss(where + ": the header says " + std::to_string(count) + " tokens but " +
                    std::to_string(maskCount) + " loss-mask bytes; expected one per token");
  if (positionCount != count)
    return dataLoss(where + ": the header says " + std::to_string(count) + " tokens but " +
                    std::to_string(positionCount) + " positions; expected one per token");
  if (packed && (rowLength < 1 || count % rowLength != 0))
    return dataLoss(where + ": row length " + std::to_string(rowLength) +
                    " does not divide the " + std::to_string(count) + " tokens into rows: corrupt");
  if (packed && (evalRows < 0 || evalRows > count / rowLength))
    return dataLoss(where + ": " + std::to_string(evalRows) + " eval rows of " +
                    std::to_string(count / rowLength) + ": corrupt");
  const uint64_t perToken = static_cast<uint64_t>(tokenBytes) + 1 + (packed ? tokenBytes : 0);
  const uint64_t expected =
      static_cast<uint64_t>(kTokenFileHeaderBytes) + static_cast<uint64_t>(count) * perToken;
  if (expected != fileSize)
    return dataLoss(where + ": the header says " + std::to_string(count) + " tokens of " +
                    std::to_string(tokenBytes) + " bytes and as many mask bytes" +
                    (packed ? " and positions" : "") + " (" + std::to_string(expected) +
                    " bytes with the header) but the file is " + std::to_string(fileSize) +
                    " bytes: " + (fileSize < expected ? "truncated" : "trailing bytes, corrupt"));
  TokenData data{path, DataFormat::Tokens, tokenBytes, {}, {}};
  data.tokens.resize(static_cast<size_t>(count));
  RP_RETURN_IF_ERROR(readIds(file, sizeof(header), tokenBytes, data.tokens));
  const uint64_t maskOffset = sizeof(header) + static_cast<uint64_t>(count) * tokenBytes;
  data.lossMask.resize(static_cast<size_t>(count));
  if (count > 0)
    RP_RETURN_IF_ERROR(file.read(data.lossMask.data(), data.lossMask.size(), maskOffset));
  if (std::string bad = badMaskByte(data.lossMask); !bad.empty())
    return invalidArgument(where + ": " + bad);
  if (!packed)
    return data;
  data.positions.resize(static_cast<size_t>(count));
  RP_RETURN_IF_ERROR(readIds(file, maskOffset + static_cast<uint64_t>(count), tokenBytes,
                             data.positions));
  if (std::string bad = badPosition(data.positions, rowLength); !bad.empty())
    return dataLoss(where + ": " + bad);
  data.rowLength = rowLength;
  data.evalRows = evalRows;
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

namespace {

/// The bytes of a masked (positions empty, rowLength 0) or packed token file, after checking
/// the arguments (writeMaskedTokenFile, writePackedTokenFile).
StatusOr<std::string> maskedFileBytes(const std::string &where,
                                      const std::vector<uint32_t> &tokens,
                                      const std::vector<uint8_t> &mask,
                                      const std::vector<uint32_t> &positions, int64_t rowLength,
                                      int64_t evalRows, int tokenBytes) {
  const bool packed = rowLength > 0;
  if (mask.size() != tokens.size())
    return invalidArgument(where + ": " + std::to_string(mask.size()) + " loss-mask bytes for " +
                           std::to_string(tokens.size()) + " tokens");
  if (std::string bad = badMaskByte(mask); !bad.empty())
    return invalidArgument(where + ": " + bad);
  if (tokenBytes != 2 && tokenBytes != 4)
    return invalidArgument(where + ": token size " + std::to_string(tokenBytes) +
                           " bytes is not 2 or 4");
  if (tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return invalidArgument(where + ": " + std::to_string(tokens.size()) +
                           " tokens exceed the header's int32 count");
  const int64_t count = static_cast<int64_t>(tokens.size());
  if (packed) {
    if (positions.size() != tokens.size())
      return invalidArgument(where + ": " + std::to_string(positions.size()) +
                             " positions for " + std::to_string(count) + " tokens");
    if (count % rowLength != 0 || rowLength > std::numeric_limits<int32_t>::max())
      return invalidArgument(where + ": row length " + std::to_string(rowLength) +
                             " does not divide the " + std::to_string(count) + " tokens");
    if (evalRows < 0 || evalRows > count / rowLength)
      return invalidArgument(where + ": " + std::to_string(evalRows) + " eval rows of " +
                             std::to_string(count / rowLength));
    if (std::string bad = badPosition(positions, rowLength); !bad.empty())
      return invalidArgument(where + ": " + bad);
  } else if (rowLength < 0) {
    return invalidArgument(where + ": negative row length");
  }
  std::string bytes;
  bytes.reserve(static_cast<size_t>(kTokenFileHeaderBytes) +
                tokens.size() * (tokenBytes + 1 + (packed ? tokenBytes : 0)));
  storeLE(bytes, static_cast<uint32_t>(kMaskedTokenFileMagic), 4);
  storeLE(bytes, (tokenBytes == 2 ? 1 : 2) + (packed ? 2 : 0), 4);
  storeLE(bytes, static_cast<uint32_t>(count), 4);
  storeLE(bytes, static_cast<uint32_t>(count), 4);
  if (packed) {
    storeLE(bytes, static_cast<uint32_t>(count), 4);
    storeLE(bytes, static_cast<uint32_t>(rowLength), 4);
    storeLE(bytes, static_cast<uint32_t>(evalRows), 4);
  }
  bytes.resize(static_cast<size_t>(kTokenFileHeaderBytes), '\0');
  for (const std::vector<uint32_t> *ids : {&tokens, &positions}) {
    if (ids == &positions) {
      bytes.append(reinterpret_cast<const char *>(mask.data()), mask.size());
      if (!packed)
        break;
    }
    const char *what = ids == &tokens ? "token " : "position ";
    for (size_t i = 0; i < ids->size(); ++i) {
      if (tokenBytes == 2 && (*ids)[i] > 0xffff)
        return invalidArgument(where + ": " + what + std::to_string((*ids)[i]) + " at index " +
                               std::to_string(i) + " does not fit in 2 bytes (use 4-byte tokens)");
      storeLE(bytes, (*ids)[i], tokenBytes);
    }
  }
  return bytes;
}

} // namespace

Status writeMaskedTokenFile(const std::string &path, const std::vector<uint32_t> &tokens,
                            const std::vector<uint8_t> &mask, int tokenBytes) {
  RP_ASSIGN_OR_RETURN(const std::string bytes,
                      maskedFileBytes("masked token file '" + path + "'", tokens, mask, {}, 0, 0,
                                      tokenBytes));
  return writeFileAtomic(path, bytes.data(), bytes.size());
}

Status writePackedTokenFile(const std::string &path, const std::vector<uint32_t> &tokens,
                            const std::vector<uint8_t> &mask,
                            const std::vector<uint32_t> &positions, int64_t rowLength,
                            int64_t evalRows, int tokenBytes) {
  if (rowLength < 1)
    return invalidArgument("packed token file '" + path + "': row length " +
                           std::to_string(rowLength) + " is not positive");
  RP_ASSIGN_OR_RETURN(const std::string bytes,
                      maskedFileBytes("packed token file '" + path + "'", tokens, mask,
                                      positions, rowLength, evalRows, tokenBytes));
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
