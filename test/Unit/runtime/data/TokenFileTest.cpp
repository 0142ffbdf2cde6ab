//===- TokenFileTest.cpp - llm.c token files and text as byte tokens ------===//
//
// runtime/data/TokenFile.h: round trips of both llm.c versions, a file built byte by byte from
// the format description, every rejection of the reader (code and file name), text mode, the
// Auto detection and checkVocabulary's message.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/TokenFile.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace rp::runtime {
namespace {

class TokenFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "rp-tokens-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path(const std::string &name) const { return (dir_ / name).string(); }
  static void writeBytes(const std::string &p, const std::string &bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  static std::string readBytes(const std::string &p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  /// An llm.c header (magic, version, count, then zeros) followed by `payload`.
  static std::string header(int32_t magic, int32_t version, int32_t count) {
    std::string h(1024, '\0');
    const int32_t words[3] = {magic, version, count};
    for (int w = 0; w < 3; ++w)
      for (int i = 0; i < 4; ++i)
        h[4 * w + i] = static_cast<char>((static_cast<uint32_t>(words[w]) >> (8 * i)) & 0xff);
    return h;
  }

  /// Reads `bytes` written to `name` as a token file, expecting `code` and a message holding
  /// the path and `text`.
  void expectRejected(const std::string &name, const std::string &bytes, StatusCode code,
                      const std::string &text) {
    const std::string p = path(name);
    writeBytes(p, bytes);
    StatusOr<TokenData> d = readTokenFile(p);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), code) << d.status().toString();
    EXPECT_NE(d.status().message().find(p), std::string::npos) << d.status().message();
    EXPECT_NE(d.status().message().find(text), std::string::npos)
        << "expected: " << text << "\nactual:   " << d.status().message();
  }

  std::filesystem::path dir_;
};

TEST_F(TokenFileTest, FormatNames) {
  for (DataFormat f :
       {DataFormat::Auto, DataFormat::Tokens, DataFormat::Text, DataFormat::NanoGpt}) {
    StatusOr<DataFormat> parsed = parseDataFormat(dataFormatName(f));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, f);
  }
  StatusOr<DataFormat> bad = parseDataFormat("bin");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'bin'"), std::string::npos);
}

TEST_F(TokenFileTest, RoundTripUint16) {
  const std::vector<uint32_t> tokens = {0, 1, 50256, 65535, 7};
  const std::string p = path("u16.bin");
  ASSERT_TRUE(writeTokenFile(p, tokens, 2).ok());
  EXPECT_EQ(std::filesystem::file_size(p), 1024u + 2 * tokens.size());
  StatusOr<TokenData> d = readTokenFile(p);
  ASSERT_TRUE(d.ok()) << d.status().toString();
  EXPECT_EQ(d->path, p);
  EXPECT_EQ(d->format, DataFormat::Tokens);
  EXPECT_EQ(d->tokenBytes, 2);
  EXPECT_EQ(d->tokens, tokens);
}

TEST_F(TokenFileTest, RoundTripUint32) {
  std::vector<uint32_t> tokens = {128000, 0, 4294967295u, 3};
  // Enough tokens to cross the reader's 1 MiB chunk.
  for (uint32_t i = 0; i < 300000; ++i)
    tokens.push_back(i * 2654435761u);
  const std::string p = path("u32.bin");
  ASSERT_TRUE(writeTokenFile(p, tokens, 4).ok());
  StatusOr<TokenData> d = readTokens(p, DataFormat::Auto);
  ASSERT_TRUE(d.ok()) << d.status().toString();
  EXPECT_EQ(d->format, DataFormat::Tokens);
  EXPECT_EQ(d->tokenBytes, 4);
  EXPECT_EQ(d->tokens, tokens);
}

// A file laid out by hand as llm.c's write_datafile does: little-endian header and tokens.
TEST_F(TokenFileTest, ReadsHandBuiltFile) {
  const std::string p = path("hand.bin");
  writeBytes(p, header(20240520, 1, 3) + std::string("\x01\x00\x00\x01\xff\xff", 6));
  StatusOr<TokenData> d = readTokenFile(p);
  ASSERT_TRUE(d.ok()) << d.status().toString();
  EXPECT_EQ(d->tokens, (std::vector<uint32_t>{1, 256, 65535}));
}

// llm.c's uint32 files (write_datafile(..., model_desc="llama-3")): magic 20240801, version 7.
// The writer writes that header; rpc's earlier uint32 header (20240520, version 2) still reads.
TEST_F(TokenFileTest, ReadsLlmcLlama3AndLegacyUint32Headers) {
  const std::string ids("\x00\xf4\x01\x00\x01\x00\x00\x00", 8); // 128000, 1
  const std::string llama3 = path("llama3.bin");
  writeBytes(llama3, header(20240801, 7, 2) + ids);
  StatusOr<TokenData> d = readTokens(llama3, DataFormat::Auto);
  ASSERT_TRUE(d.ok()) << d.status().toString();
  EXPECT_EQ(d->tokenBytes, 4);
  EXPECT_EQ(d->tokens, (std::vector<uint32_t>{128000, 1}));
  const std::string legacy = path("legacy.bin");
  writeBytes(legacy, header(20240520, 2, 2) + ids);
  d = readTokenFile(legacy);
  ASSERT_TRUE(d.ok()) << d.status().toString();
  EXPECT_EQ(d->tokens, (std::vector<uint32_t>{128000, 1}));

  const std::string written = path("written.bin");
  ASSERT_TRUE(writeTokenFile(written, {128000, 1}, 4).ok());
  EXPECT_EQ(readBytes(written), header(20240801, 7, 2) + ids);
  // A version that does not go with its magic.
  expectRejected("mixed.bin", header(20240801, 1, 0), StatusCode::InvalidArgument,
                 "unknown llm.c token file version 1 for magic 20240801");
}

// nanoGPT's train.bin: headerless uint16, read only when asked for (--data-format nanogpt).
TEST_F(TokenFileTest, NanoGptFiles) {
  const std::string p = path("train.bin");
  writeBytes(p, std::string("\x01\x00\x00\x01\xff\xff", 6));
  StatusOr<TokenData> d = readTokens(p, DataFormat::NanoGpt);
  ASSERT_TRUE(d.ok()) << d.status().toString();
  EXPECT_EQ(d->format, DataFormat::NanoGpt);
  EXPECT_EQ(d->tokenBytes, 2);
  EXPECT_EQ(d->tokens, (std::vector<uint32_t>{1, 256, 65535}));
  EXPECT_EQ(readTokens(p, DataFormat::Auto).status().code(), StatusCode::InvalidArgument);
  const std::string odd = path("odd.bin");
  writeBytes(odd, std::string("\x01\x00\x02", 3));
  StatusOr<TokenData> bad = readNanoGptFile(odd);
  EXPECT_EQ(bad.status().code(), StatusCode::DataLoss);
  EXPECT_NE(bad.status().message().find("3 bytes, not a whole number of uint16 ids"),
            std::string::npos)
      << bad.status().message();
  const std::string empty = path("empty.bin");
  writeBytes(empty, "");
  EXPECT_EQ(readNanoGptFile(empty).status().code(), StatusCode::InvalidArgument);
}

TEST_F(TokenFileTest, EmptyTokenFileIsValid) {
  const std::string p = path("empty.bin");
  ASSERT_TRUE(writeTokenFile(p, {}, 2).ok());
  StatusOr<TokenData> d = readTokenFile(p);
  ASSERT_TRUE(d.ok()) << d.status().toString();
  EXPECT_TRUE(d->tokens.empty());
}

TEST_F(TokenFileTest, RejectsBadMagic) {
  expectRejected("magic.bin", header(12345, 1, 0), StatusCode::InvalidArgument,
                 "not a token file");
}

TEST_F(TokenFileTest, RejectsUnknownVersion) {
  expectRejected("version.bin", header(20240520, 3, 0), StatusCode::InvalidArgument,
                 "unknown llm.c token file version 3");
}

TEST_F(TokenFileTest, RejectsShortHeader) {
  expectRejected("short.bin", header(20240520, 1, 0).substr(0, 100), StatusCode::DataLoss,
                 "is 100 bytes, shorter than the 1024-byte llm.c header");
}

TEST_F(TokenFileTest, RejectsTruncatedTokens) {
  expectRejected("truncated.bin", header(20240520, 2, 4) + std::string(15, '\0'),
                 StatusCode::DataLoss, "truncated");
}

TEST_F(TokenFileTest, RejectsCountMismatch) {
  // More bytes than the count says.
  expectRejected("long.bin", header(20240520, 1, 2) + std::string(6, '\0'), StatusCode::DataLoss,
                 "the header says 2 tokens of 2 bytes (1028 bytes with the header) but the file "
                 "is 1030 bytes");
  // A huge count is rejected against the file size, before anything is allocated.
  expectRejected("huge.bin", header(20240520, 2, 2147483647), StatusCode::DataLoss, "truncated");
  expectRejected("negative.bin", header(20240520, 2, -5), StatusCode::DataLoss,
                 "negative token count -5");
}

TEST_F(TokenFileTest, MissingFileIsNotFound) {
  const std::string p = path("missing.bin");
  for (DataFormat f : {DataFormat::Auto, DataFormat::Tokens, DataFormat::Text}) {
    StatusOr<TokenData> d = readTokens(p, f);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), StatusCode::NotFound) << dataFormatName(f);
    EXPECT_NE(d.status().message().find(p), std::string::npos) << d.status().message();
  }
}

TEST_F(TokenFileTest, TextIsByteTokens) {
  const std::string p = path("tiny.txt");
  writeBytes(p, std::string("Hi!\n\xff\x00", 6));
  StatusOr<TokenData> d = readTokens(p, DataFormat::Auto);
  ASSERT_TRUE(d.ok()) << d.status().toString();
  EXPECT_EQ(d->format, DataFormat::Text);
  EXPECT_EQ(d->tokenBytes, 1);
  EXPECT_EQ(d->tokens, (std::vector<uint32_t>{'H', 'i', '!', '\n', 255, 0}));
}

TEST_F(TokenFileTest, EmptyTextIsAnError) {
  const std::string p = path("empty.txt");
  writeBytes(p, "");
  StatusOr<TokenData> d = readTextFile(p);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(d.status().message().find(p), std::string::npos) << d.status().message();
  EXPECT_NE(d.status().message().find("is empty"), std::string::npos) << d.status().message();
}

// Auto: the magic wins over the name; other files need --data-format text.
TEST_F(TokenFileTest, AutoDetection) {
  const std::string tokensNamedTxt = path("tokens.txt");
  ASSERT_TRUE(writeTokenFile(tokensNamedTxt, {5, 6}, 2).ok());
  StatusOr<TokenData> d = readTokens(tokensNamedTxt, DataFormat::Auto);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->format, DataFormat::Tokens);

  const std::string raw = path("input.bin");
  writeBytes(raw, "hello");
  StatusOr<TokenData> bad = readTokens(raw, DataFormat::Auto);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(bad.status().message(),
            raw + ": not a token file (no llm.c header, magic 20240520 or 20240801); pass "
                  "--data-format text to read raw text as byte tokens, or --data-format nanogpt "
                  "for nanoGPT's headerless uint16 train.bin");
  StatusOr<TokenData> text = readTokens(raw, DataFormat::Text);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->tokens.size(), 5u);
}

TEST_F(TokenFileTest, WriterChecksArguments) {
  const std::string p = path("out.bin");
  Status s = writeTokenFile(p, {1, 70000}, 2);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("token 70000 at position 1"), std::string::npos) << s.message();
  EXPECT_EQ(writeTokenFile(p, {1}, 3).code(), StatusCode::InvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(p));
}

TEST_F(TokenFileTest, CheckVocabulary) {
  TokenData d{"data.bin", DataFormat::Tokens, 2, {1, 2, 47, 50001, 60000}};
  EXPECT_TRUE(checkVocabulary(d, 60001).ok());
  Status s = checkVocabulary(d, 48);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(s.message(),
            "data.bin: token 50001 at position 3 is >= the model's vocabulary size 48");
  d.format = DataFormat::Text;
  d.tokens = {65, 200};
  s = checkVocabulary(d, 128);
  EXPECT_NE(s.message().find("token 200 at position 1"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("byte tokens"), std::string::npos) << s.message();
  EXPECT_EQ(checkVocabulary(d, 0).code(), StatusCode::InvalidArgument);
}

/// A masked token file's header: magic 20251126, version, token count, mask count.
std::string maskedHeader(int32_t version, int32_t count, int32_t maskCount) {
  std::string h(1024, '\0');
  const int32_t words[4] = {kMaskedTokenFileMagic, version, count, maskCount};
  for (int w = 0; w < 4; ++w)
    for (int i = 0; i < 4; ++i)
      h[4 * w + i] = static_cast<char>((static_cast<uint32_t>(words[w]) >> (8 * i)) & 0xff);
  return h;
}

TEST_F(TokenFileTest, MaskedRoundTripsAndAutoDetects) {
  const std::vector<uint32_t> tokens = {5, 6, 7, 70000};
  const std::vector<uint8_t> mask = {0, 0, 1, 1};
  const std::string p = path("sft.bin");
  ASSERT_TRUE(writeMaskedTokenFile(p, tokens, mask, 4).ok());
  EXPECT_EQ(std::filesystem::file_size(p), 1024u + 5 * tokens.size());
  for (DataFormat f : {DataFormat::Auto, DataFormat::Tokens}) {
    StatusOr<TokenData> d = readTokens(p, f);
    ASSERT_TRUE(d.ok()) << d.status().toString();
    EXPECT_EQ(d->tokens, tokens);
    EXPECT_EQ(d->lossMask, mask);
    EXPECT_EQ(d->tokenBytes, 4);
  }
  // A file built from the format description: version 1 (uint16), tokens, then the mask.
  const std::string q = path("hand.bin");
  writeBytes(q, maskedHeader(1, 2, 2) + std::string("\x09\x00\x01\x01", 4) +
                    std::string("\x00\x01", 2));
  StatusOr<TokenData> d = readMaskedTokenFile(q);
  ASSERT_TRUE(d.ok()) << d.status().toString();
  EXPECT_EQ(d->tokens, (std::vector<uint32_t>{9, 257}));
  EXPECT_EQ(d->lossMask, (std::vector<uint8_t>{0, 1}));
  // Plain llm.c files have no mask.
  ASSERT_TRUE(writeTokenFile(q, {1, 2}, 2).ok());
  EXPECT_TRUE(readTokenFile(q)->lossMask.empty());
}

TEST_F(TokenFileTest, MaskedRejections) {
  const std::string body = std::string("\x01\x00\x02\x00", 4) + std::string("\x00\x01", 2);
  expectRejected("short", maskedHeader(1, 2, 2).substr(0, 600), StatusCode::DataLoss,
                 "shorter than the 1024-byte llm.c header: not a token file, or truncated");
  expectRejected("mismatch", maskedHeader(1, 2, 3) + body, StatusCode::DataLoss,
                 "the header says 2 tokens but 3 loss-mask bytes; expected one per token");
  expectRejected("truncated", maskedHeader(1, 2, 2) + body.substr(0, 5), StatusCode::DataLoss,
                 "but the file is 1029 bytes: truncated");
  expectRejected("trailing", maskedHeader(1, 2, 2) + body + "x", StatusCode::DataLoss,
                 "trailing bytes, corrupt");
  expectRejected("version", maskedHeader(7, 2, 2) + body, StatusCode::InvalidArgument,
                 "unknown version 7 (1: uint16 tokens, 2: uint32 tokens; packed rows with "
                 "positions 3: uint16, 4: uint32)");
  expectRejected("negative", maskedHeader(1, -1, -1) + body, StatusCode::DataLoss,
                 "negative count");
  expectRejected("byte", maskedHeader(1, 2, 2) + body.substr(0, 5) + "\x02",
                 StatusCode::InvalidArgument, "loss-mask byte 2 at position 1 is not 0 or 1");
  // The masked reader called on another file names the magic it expected.
  const std::string p = path("llmc.bin");
  ASSERT_TRUE(writeTokenFile(p, {1, 2}, 2).ok());
  StatusOr<TokenData> d = readMaskedTokenFile(p);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("magic 20240520 is not 20251126"), std::string::npos)
      << d.status().message();
}

TEST_F(TokenFileTest, MaskedWriterChecksArguments) {
  const std::string p = path("w.bin");
  EXPECT_EQ(writeMaskedTokenFile(p, {1, 2}, {1}, 2).code(), StatusCode::InvalidArgument);
  EXPECT_EQ(writeMaskedTokenFile(p, {1, 2}, {1, 3}, 2).code(), StatusCode::InvalidArgument);
  EXPECT_EQ(writeMaskedTokenFile(p, {1, 70000}, {1, 1}, 2).code(), StatusCode::InvalidArgument);
  EXPECT_EQ(writeMaskedTokenFile(p, {1, 2}, {1, 1}, 3).code(), StatusCode::InvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(p));
}

/// A packed token file's header: magic 20251126, version, token, mask and position counts,
/// row length, eval rows.
std::string packedHeader(int32_t version, int32_t count, int32_t rowLength, int32_t evalRows,
                         int32_t positionCount = -1) {
  std::string h(1024, '\0');
  const int32_t words[7] = {kMaskedTokenFileMagic, version, count, count,
                            positionCount < 0 ? count : positionCount, rowLength, evalRows};
  for (int w = 0; w < 7; ++w)
    for (int i = 0; i < 4; ++i)
      h[4 * w + i] = static_cast<char>((static_cast<uint32_t>(words[w]) >> (8 * i)) & 0xff);
  return h;
}

/// Little-endian uint16 ids.
std::string u16(std::initializer_list<uint32_t> ids) {
  std::string out;
  for (uint32_t id : ids)
    out += std::string{static_cast<char>(id & 0xff), static_cast<char>(id >> 8)};
  return out;
}

TEST_F(TokenFileTest, PackedRoundTripsAndAutoDetects) {
  // Two rows of 4: [doc a (3 tokens), pad], [doc b (2), doc c (2)]; the last row held out.
  const std::vector<uint32_t> tokens = {5, 6, 7, 0, 8, 70000, 10, 11};
  const std::vector<uint8_t> mask = {0, 1, 1, 0, 0, 1, 0, 1};
  const std::vector<uint32_t> positions = {0, 1, 2, 0, 0, 1, 0, 1};
  const std::string p = path("packed.bin");
  ASSERT_TRUE(writePackedTokenFile(p, tokens, mask, positions, 4, 1, 4).ok());
  EXPECT_EQ(std::filesystem::file_size(p), 1024u + 9 * tokens.size());
  for (DataFormat f : {DataFormat::Auto, DataFormat::Tokens}) {
    StatusOr<TokenData> d = readTokens(p, f);
    ASSERT_TRUE(d.ok()) << d.status().toString();
    EXPECT_TRUE(d->packed());
    EXPECT_EQ(d->tokens, tokens);
    EXPECT_EQ(d->lossMask, mask);
    EXPECT_EQ(d->positions, positions);
    EXPECT_EQ(d->rowLength, 4);
    EXPECT_EQ(d->evalRows, 1);
    EXPECT_EQ(d->tokenBytes, 4);
  }
  // A file built from the format description: version 3 (uint16), tokens, mask, positions.
  const std::string q = path("hand.bin");
  writeBytes(q, packedHeader(3, 4, 2, 0) + u16({9, 257, 3, 4}) + std::string("\x00\x01\x00\x01", 4) +
                    u16({0, 1, 0, 1}));
  StatusOr<TokenData> d = readMaskedTokenFile(q);
  ASSERT_TRUE(d.ok()) << d.status().toString();
  EXPECT_EQ(d->tokens, (std::vector<uint32_t>{9, 257, 3, 4}));
  EXPECT_EQ(d->lossMask, (std::vector<uint8_t>{0, 1, 0, 1}));
  EXPECT_EQ(d->positions, (std::vector<uint32_t>{0, 1, 0, 1}));
  EXPECT_EQ(d->rowLength, 2);
  EXPECT_EQ(d->evalRows, 0);
  // Masked files of versions 1 and 2 are not packed.
  ASSERT_TRUE(writeMaskedTokenFile(q, {1, 2}, {0, 1}, 2).ok());
  StatusOr<TokenData> m = readTokenFile(q);
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->packed());
  EXPECT_TRUE(m->positions.empty());
}

TEST_F(TokenFileTest, PackedRejections) {
  const std::string body = u16({1, 2, 3, 4}) + std::string("\x00\x01\x00\x01", 4);
  expectRejected("positions", packedHeader(3, 4, 2, 0, 3) + body + u16({0, 1, 0, 1}),
                 StatusCode::DataLoss, "4 tokens but 3 positions; expected one per token");
  expectRejected("rows", packedHeader(3, 4, 3, 0) + body + u16({0, 1, 2, 0}),
                 StatusCode::DataLoss, "row length 3 does not divide the 4 tokens");
  expectRejected("zero", packedHeader(3, 4, 0, 0) + body + u16({0, 1, 0, 1}),
                 StatusCode::DataLoss, "row length 0 does not divide");
  expectRejected("eval", packedHeader(3, 4, 2, 3) + body + u16({0, 1, 0, 1}),
                 StatusCode::DataLoss, "3 eval rows of 2");
  expectRejected("truncated", packedHeader(3, 4, 2, 0) + body + u16({0, 1, 0}),
                 StatusCode::DataLoss, "but the file is 1042 bytes: truncated");
  expectRejected("start", packedHeader(3, 4, 2, 0) + body + u16({0, 1, 2, 3}),
                 StatusCode::DataLoss,
                 "position 2 at index 2 starts a row of 2 tokens (a row starts a document at "
                 "position 0)");
  expectRejected("jump", packedHeader(4, 2, 2, 0) + std::string(8, '\x01') +
                             std::string("\x00\x01", 2) + std::string("\x00\0\0\0\x05\0\0\0", 8),
                 StatusCode::DataLoss, "position 5 at index 1 follows 0 (expected 0, a new "
                                       "document, or 1)");
}

TEST_F(TokenFileTest, PackedWriterChecksArguments) {
  const std::string p = path("w.bin");
  const std::vector<uint32_t> t = {1, 2, 3, 4};
  const std::vector<uint8_t> m = {0, 1, 0, 1};
  EXPECT_EQ(writePackedTokenFile(p, t, m, {0, 1, 0}, 2, 0, 2).code(),
            StatusCode::InvalidArgument);
  EXPECT_EQ(writePackedTokenFile(p, t, m, {0, 1, 0, 1}, 3, 0, 2).code(),
            StatusCode::InvalidArgument);
  EXPECT_EQ(writePackedTokenFile(p, t, m, {0, 1, 0, 1}, 0, 0, 2).code(),
            StatusCode::InvalidArgument);
  EXPECT_EQ(writePackedTokenFile(p, t, m, {0, 1, 0, 1}, 2, 3, 2).code(),
            StatusCode::InvalidArgument);
  Status s = writePackedTokenFile(p, t, m, {0, 1, 1, 2}, 2, 0, 2);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("position 1 at index 2 starts a row"), std::string::npos)
      << s.message();
  EXPECT_EQ(writePackedTokenFile(p, t, {0, 1, 0, 2}, {0, 1, 0, 1}, 2, 0, 2).code(),
            StatusCode::InvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(p));
}

} // namespace
} // namespace rp::runtime
