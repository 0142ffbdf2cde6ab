//===- SafetensorsTest.cpp - safetensors reader and writer ----------------===//
//
// readSafetensors / writeSafetensors (runtime/io/Safetensors.h): a round trip, a file built
// byte by byte from the format description, every rejection of the reader, the writer's
// argument checks and its all-or-nothing writes.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/Safetensors.h"

#include "test/Unit/support/PlanTestUtil.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <string>
#include <sys/resource.h>
#include <vector>

namespace rp::runtime {
namespace {

class SafetensorsTest : public rp::testing::TempDirTest {
protected:
  /// A file: the 8-byte little-endian length of `header`, `header`, then `data`.
  std::string makeFile(const std::string &name, const std::string &header,
                       const std::string &data) {
    std::string bytes;
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i)
      bytes.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    bytes += header;
    bytes += data;
    std::string p = path(name);
    writeBytes(p, bytes);
    return p;
  }

  /// Reads a file made of `header` and `data`, expecting an error with `code` whose message
  /// contains `message`.
  void expectRejected(const std::string &header, const std::string &data, StatusCode code,
                      const std::string &message) {
    std::string p = makeFile("bad.safetensors", header, data);
    StatusOr<SafetensorsFile> f = readSafetensors(p);
    ASSERT_FALSE(f.ok()) << "accepted: " << header;
    EXPECT_EQ(f.status().code(), code) << f.status().message();
    EXPECT_NE(f.status().message().find(message), std::string::npos)
        << "expected: " << message << "\nactual:   " << f.status().message();
    EXPECT_NE(f.status().message().find(p), std::string::npos) << f.status().message();
  }
};

TEST_F(SafetensorsTest, DTypeNames) {
  for (const char *name : {"BOOL", "U8", "I8", "I16", "F16", "BF16", "I32", "F32", "F64", "I64"}) {
    StatusOr<SafetensorsDType> d = parseSafetensorsDType(name);
    ASSERT_TRUE(d.ok()) << name;
    EXPECT_STREQ(safetensorsDTypeName(*d), name);
  }
  EXPECT_EQ(safetensorsDTypeSize(SafetensorsDType::BF16), 2u);
  EXPECT_EQ(safetensorsDTypeSize(SafetensorsDType::I64), 8u);
  EXPECT_EQ(toRuntimeDType(SafetensorsDType::BOOL), DType::I1);
  EXPECT_EQ(toRuntimeDType(SafetensorsDType::U8), DType::U8);
  EXPECT_EQ(toRuntimeDType(SafetensorsDType::I8), std::nullopt);
  EXPECT_EQ(fromRuntimeDType(DType::BF16), SafetensorsDType::BF16);
  EXPECT_FALSE(parseSafetensorsDType("Q4").ok());
}

TEST_F(SafetensorsTest, RoundTrip) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6};
  const std::vector<int64_t> ids = {-1, 0, 7, int64_t(1) << 40};
  const uint16_t scalar = 0x3f80; // bf16 1.0
  const std::vector<uint8_t> mask = {1, 0, 1};
  std::vector<SafetensorsTensor> tensors = {
      {"layers.0.w", SafetensorsDType::F32, {2, 3}, a.data(), a.size() * 4},
      {"ids", SafetensorsDType::I64, {4}, ids.data(), ids.size() * 8},
      {"scale", SafetensorsDType::BF16, {}, &scalar, 2},
      {"empty", SafetensorsDType::F32, {0, 5}, nullptr, 0},
      {"mask", SafetensorsDType::BOOL, {3}, mask.data(), 3},
  };
  const std::string p = path("model.safetensors");
  ASSERT_TRUE(writeSafetensors(p, tensors, {{"format", "pt"}, {"step", "10"}}).ok());
  EXPECT_EQ(listDir(), std::vector<std::string>{"model.safetensors"});

  // The header is padded to a multiple of 8 bytes with spaces.
  std::string bytes = readBytes(p);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes[8], '{');
  EXPECT_EQ(bytes.size(), 8 + n + 24 + 32 + 2 + 0 + 3);

  StatusOr<SafetensorsFile> f = readSafetensors(p);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->path(), p);
  EXPECT_EQ(f->fileSize(), bytes.size());
  EXPECT_EQ(f->metadata(), (std::map<std::string, std::string>{{"format", "pt"}, {"step", "10"}}));
  // Data-buffer order is the given order ("empty" has the same offset as "mask": name order).
  std::vector<std::string> names;
  for (const SafetensorsTensorView &t : f->tensors())
    names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"layers.0.w", "ids", "scale", "empty", "mask"}));

  const SafetensorsTensorView *w = f->find("layers.0.w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, SafetensorsDType::F32);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(w->size, 24u);
  EXPECT_EQ(std::memcmp(w->data, a.data(), 24), 0);
  const SafetensorsTensorView *i = f->find("ids");
  ASSERT_NE(i, nullptr);
  EXPECT_EQ(i->offset, 24u);
  EXPECT_EQ(std::memcmp(i->data, ids.data(), 32), 0);
  const SafetensorsTensorView *s = f->find("scale");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->shape.empty());
  EXPECT_EQ(std::memcmp(s->data, &scalar, 2), 0);
  const SafetensorsTensorView *e = f->find("empty");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->size, 0u);
  EXPECT_EQ(e->data, nullptr);
  EXPECT_EQ(f->find("missing"), nullptr);

  // Moving keeps the views valid.
  SafetensorsFile moved = std::move(*f);
  EXPECT_EQ(std::memcmp(moved.find("mask")->data, mask.data(), 3), 0);
}

TEST_F(SafetensorsTest, HandMadeFileFromTheSpec) {
  // The example of the safetensors README: one I32 [2, 2] tensor and metadata; the header
  // has no padding and the tensors' keys come after "__metadata__".
  std::string data;
  for (int32_t v : {1, -2, 3, 0x7fffffff})
    data.append(reinterpret_cast<const char *>(&v), 4);
  std::string p = makeFile(
      "spec.safetensors",
      R"({"__metadata__":{"foo":"bar"},"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})",
      data);
  StatusOr<SafetensorsFile> f = readSafetensors(p);
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_EQ(f->tensors().size(), 1u);
  const SafetensorsTensorView &t = f->tensors()[0];
  EXPECT_EQ(t.name, "test");
  EXPECT_EQ(t.dtype, SafetensorsDType::I32);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 2}));
  int32_t values[4];
  std::memcpy(values, t.data, 16);
  EXPECT_EQ(values[1], -2);
  EXPECT_EQ(values[3], 0x7fffffff);
  EXPECT_EQ(f->metadata().at("foo"), "bar");
}

TEST_F(SafetensorsTest, GapsAndTrailingBytesAreAccepted) {
  std::string p = makeFile(
      "gaps.safetensors",
      R"({"b":{"dtype":"U8","shape":[2],"data_offsets":[6,8]},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
      std::string(12, 'x'));
  StatusOr<SafetensorsFile> f = readSafetensors(p);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->tensors()[0].name, "a");
  EXPECT_EQ(f->tensors()[1].name, "b");
}

TEST_F(SafetensorsTest, RejectsShortFiles) {
  std::string p = path("short.safetensors");
  writeBytes(p, "abc");
  StatusOr<SafetensorsFile> f = readSafetensors(p);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::DataLoss);
  EXPECT_NE(f.status().message().find("shorter than the 8-byte header length"), std::string::npos);

  f = readSafetensors(path("missing.safetensors"));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::NotFound);
  EXPECT_NE(f.status().message().find("missing.safetensors"), std::string::npos);
}

TEST_F(SafetensorsTest, RejectsHeaderPastTheFile) {
  // The length field says 200 bytes; the file holds 20 after it.
  std::string bytes = std::string("\xc8\0\0\0\0\0\0\0", 8) + std::string(20, ' ');
  std::string p = path("long-header.safetensors");
  writeBytes(p, bytes);
  StatusOr<SafetensorsFile> f = readSafetensors(p);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::DataLoss);
  EXPECT_NE(f.status().message().find("header length 200 runs past the end of the file (28 bytes)"),
            std::string::npos)
      << f.status().message();

  // A length over the 100 MB limit is refused before anything is read.
  bytes = std::string("\0\0\0\x10\0\0\0\0", 8) + "{}";
  writeBytes(p, bytes);
  f = readSafetensors(p);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("exceeds the limit of 100000000 bytes"), std::string::npos)
      << f.status().message();
}

TEST_F(SafetensorsTest, RejectsBadJson) {
  expectRejected(R"({"a": {"dtype": "F32", )", "", StatusCode::InvalidArgument,
                 "the header is not valid JSON");
  expectRejected("[1, 2]", "", StatusCode::InvalidArgument, "the header is not a JSON object");
  expectRejected(R"({"a": [1]})", "", StatusCode::InvalidArgument,
                 "tensor 'a': the header entry is not an object");
  expectRejected(R"({"a": {"shape": [1], "data_offsets": [0, 4]}})", "1234",
                 StatusCode::InvalidArgument, "tensor 'a': missing or non-string \"dtype\"");
  expectRejected(R"({"__metadata__": {"n": 1}})", "", StatusCode::InvalidArgument,
                 "\"__metadata__\" entry 'n' is not a string");
  expectRejected(
      R"({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, "a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}})",
      "xy", StatusCode::InvalidArgument, "the header names 'a' twice");
}

TEST_F(SafetensorsTest, RejectsUnknownDType) {
  expectRejected(R"({"w": {"dtype": "Q4", "shape": [2], "data_offsets": [0, 1]}})", "x",
                 StatusCode::InvalidArgument, "tensor 'w': unknown safetensors dtype 'Q4'");
}

TEST_F(SafetensorsTest, RejectsBadShapes) {
  expectRejected(R"({"w": {"dtype": "F32", "shape": [2, -3], "data_offsets": [0, 24]}})",
                 std::string(24, 'x'), StatusCode::InvalidArgument,
                 "tensor 'w': shape [2,-3] has a dimension that is not a non-negative integer: -3");
  expectRejected(R"({"w": {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 8]}})",
                 std::string(8, 'x'), StatusCode::InvalidArgument, "not a non-negative integer");
  expectRejected(
      R"({"w": {"dtype": "F64", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]}})",
      std::string(8, 'x'), StatusCode::InvalidArgument, "overflows");
}

TEST_F(SafetensorsTest, RejectsSizeMismatch) {
  expectRejected(R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}})",
                 std::string(24, 'x'), StatusCode::InvalidArgument,
                 "tensor 'w': shape [2, 3] F32 needs 24 bytes, but data_offsets [0,20] hold 20");
  expectRejected(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})",
                 std::string(8, 'x'), StatusCode::InvalidArgument, "begin <= end");
}

TEST_F(SafetensorsTest, RejectsRangePastTheData) {
  expectRejected(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})",
                 std::string(16, 'x'), StatusCode::DataLoss,
                 "tensor 'w': data_offsets [8,24] run past the end of the data buffer (16 bytes)");
}

TEST_F(SafetensorsTest, RejectsOverlappingRanges) {
  expectRejected(
      R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
      std::string(12, 'x'), StatusCode::InvalidArgument,
      "the data of tensor 'b' [4, 12) overlaps tensor 'a' [0, 8)");
  // A tensor inside a larger one.
  expectRejected(
      R"({"a": {"dtype": "U8", "shape": [10], "data_offsets": [0, 10]}, "b": {"dtype": "U8", "shape": [2], "data_offsets": [8, 10]}, "c": {"dtype": "U8", "shape": [1], "data_offsets": [3, 4]}})",
      std::string(10, 'x'), StatusCode::InvalidArgument, "overlaps tensor 'a' [0, 10)");
  // Empty tensors overlap nothing.
  std::string p = makeFile(
      "empty.safetensors",
      R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}, "b": {"dtype": "U8", "shape": [0], "data_offsets": [2, 2]}})",
      "abcd");
  EXPECT_TRUE(readSafetensors(p).ok());
}

TEST_F(SafetensorsTest, RejectsTruncatedData) {
  std::vector<float> v(16, 1.0f);
  const std::string p = path("model.safetensors");
  ASSERT_TRUE(writeSafetensors(p, {{"w", SafetensorsDType::F32, {4, 4}, v.data(), 64}}).ok());
  std::string bytes = readBytes(p);
  for (size_t cut : {bytes.size() - 1, bytes.size() - 60, size_t(20), size_t(7)}) {
    writeBytes(p, bytes.substr(0, cut));
    StatusOr<SafetensorsFile> f = readSafetensors(p);
    ASSERT_FALSE(f.ok()) << cut;
    EXPECT_EQ(f.status().code(), StatusCode::DataLoss) << cut << ": " << f.status().message();
  }
}

TEST_F(SafetensorsTest, WriterRejectsBadTensors) {
  const float v[4] = {};
  const std::string p = path("w.safetensors");
  Status s = writeSafetensors(p, {{"w", SafetensorsDType::F32, {2, 3}, v, 16}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tensor 'w': shape [2, 3] F32 needs 24 bytes, but 16 were given"),
            std::string::npos)
      << s.message();
  s = writeSafetensors(
      p, {{"w", SafetensorsDType::F32, {1}, v, 4}, {"w", SafetensorsDType::F32, {1}, v, 4}});
  EXPECT_NE(s.message().find("tensor 'w' is given twice"), std::string::npos) << s.message();
  s = writeSafetensors(p, {{"__metadata__", SafetensorsDType::F32, {1}, v, 4}});
  EXPECT_FALSE(s.ok());
  s = writeSafetensors(p, {{"w", SafetensorsDType::F32, {-1}, v, 4}});
  EXPECT_FALSE(s.ok());
  s = writeSafetensors(p, {{std::string("\xff\xfe"), SafetensorsDType::F32, {1}, v, 4}});
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(listDir().empty());
}

TEST_F(SafetensorsTest, FailedWriteKeepsThePreviousFile) {
  const float v[2] = {1, 2};
  // A name whose temporary sibling ("<name>.tmp.XXXXXX") is longer than NAME_MAX: the write
  // fails before it touches anything (this works as root too, unlike a read-only directory).
  const std::string longName = std::string(250, 'w') + ".st";
  const std::string p = path(longName);
  writeBytes(p, "previous");
  Status s = writeSafetensors(p, {{"w", SafetensorsDType::F32, {2}, v, 8}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(readBytes(p), "previous");
  EXPECT_EQ(listDir(), std::vector<std::string>{longName});
}

TEST_F(SafetensorsTest, WriteFailingMidwayKeepsThePreviousFile) {
  // A file-size limit below the new file's size: the temporary is created and partly written,
  // then write() fails (EFBIG, for root too). The temporary is removed, the target untouched.
  const std::vector<float> big(4096, 1.5f);
  const std::string p = path("model.safetensors");
  writeBytes(p, "previous");
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  struct rlimit low = saved;
  low.rlim_cur = 1024;
  void (*oldHandler)(int) = std::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &low), 0);
  Status s = writeSafetensors(p, {{"w", SafetensorsDType::F32, {4096}, big.data(), 4096 * 4}});
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
  std::signal(SIGXFSZ, oldHandler);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::Unavailable) << s.toString();
  EXPECT_NE(s.message().find("cannot write"), std::string::npos) << s.message();
  EXPECT_EQ(readBytes(p), "previous");
  EXPECT_EQ(listDir(), std::vector<std::string>{"model.safetensors"});
}

// The streamed writer makes the same file as the in-memory one, with each tensor's bytes
// given in pieces; a fill that gives too few or too many bytes, or fails, leaves nothing.
TEST_F(SafetensorsTest, StreamedWriterMatchesTheInMemoryWriter) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6};
  const std::vector<int64_t> ids = {-1, 0, 7};
  const std::vector<SafetensorsTensor> tensors = {
      {"a", SafetensorsDType::F32, {2, 3}, a.data(), a.size() * 4},
      {"empty", SafetensorsDType::F32, {0}, nullptr, 0},
      {"ids", SafetensorsDType::I64, {3}, ids.data(), ids.size() * 8},
  };
  const std::map<std::string, std::string> meta = {{"producer", "test"}};
  ASSERT_TRUE(writeSafetensors(path("whole.safetensors"), tensors, meta).ok());
  std::vector<SafetensorsTensor> headers = tensors;
  for (SafetensorsTensor &t : headers)
    t.data = nullptr; // not read
  std::vector<size_t> order;
  Status s = writeSafetensorsStreamed(
      path("streamed.safetensors"), headers, meta,
      [&](size_t i, const std::function<Status(const void *, size_t)> &append) -> Status {
        order.push_back(i);
        const uint8_t *bytes = static_cast<const uint8_t *>(tensors[i].data);
        for (size_t k = 0; k < tensors[i].size; k += 5) // in pieces of at most 5 bytes
          RP_RETURN_IF_ERROR(append(bytes + k, std::min<size_t>(5, tensors[i].size - k)));
        return okStatus();
      });
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(readBytes(path("streamed.safetensors")), readBytes(path("whole.safetensors")));

  auto give = [&](size_t bytes) {
    return [&, bytes](size_t i, const std::function<Status(const void *, size_t)> &append) {
      return i == 0 ? append(a.data(), bytes) : append(tensors[i].data, tensors[i].size);
    };
  };
  s = writeSafetensorsStreamed(path("short.safetensors"), headers, meta, give(20));
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("tensor 'a': 20 of its 24 bytes were given"), std::string::npos)
      << s.message();
  std::vector<float> more = {1, 2, 3, 4, 5, 6, 7};
  s = writeSafetensorsStreamed(
      path("long.safetensors"), headers, meta,
      [&](size_t, const std::function<Status(const void *, size_t)> &append) {
        return append(more.data(), 28);
      });
  EXPECT_NE(s.message().find("tensor 'a': more than its 24 bytes were given"), std::string::npos)
      << s.message();
  s = writeSafetensorsStreamed(
      path("failed.safetensors"), headers, meta,
      [&](size_t i, const std::function<Status(const void *, size_t)> &append) {
        return i == 2 ? internal("the value of 'ids' is gone") : append(tensors[i].data, tensors[i].size);
      });
  EXPECT_EQ(s.message(), "the value of 'ids' is gone");
  EXPECT_EQ(listDir(), (std::vector<std::string>{"streamed.safetensors", "whole.safetensors"}));
}

} // namespace
} // namespace rp::runtime
