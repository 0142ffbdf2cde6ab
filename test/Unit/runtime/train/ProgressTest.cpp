//===- ProgressTest.cpp - progress bar and JSON-lines metrics -------------===//
//
// ProgressBar (runtime/train/Progress.h) with the terminal mode forced both ways into a
// temporary file: the plain line format and interval, the in-place redraw with '\r',
// messages above the bar; formatDuration / formatRate. MetricsLog
// (runtime/train/MetricsLog.h): every line parses as JSON, the loss round-trips bit for bit,
// NaN becomes null, summary lines, errors, a resumed run's log (openResumed).
//
//===----------------------------------------------------------------------===//

#include "runtime/train/Progress.h"
#include "runtime/train/MetricsLog.h"

#include "test/Unit/support/TempDirTest.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace rp::runtime {
namespace {

namespace fs = std::filesystem;

/// Everything written to `f` so far.
std::string contents(FILE *f) {
  std::fflush(f);
  long end = std::ftell(f);
  std::rewind(f);
  std::string s(static_cast<size_t>(end), '\0');
  size_t n = std::fread(s.data(), 1, s.size(), f);
  s.resize(n);
  std::fseek(f, 0, SEEK_END);
  return s;
}

std::vector<std::string> splitLines(const std::string &s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

size_t countOf(const std::string &s, const std::string &needle) {
  size_t n = 0;
  for (size_t pos = s.find(needle); pos != std::string::npos; pos = s.find(needle, pos + 1))
    ++n;
  return n;
}

class ProgressTest : public ::testing::Test {
protected:
  void SetUp() override {
    out_ = std::tmpfile();
    ASSERT_NE(out_, nullptr);
  }
  void TearDown() override {
    if (out_)
      std::fclose(out_);
  }
  FILE *out_ = nullptr;
};

TEST_F(ProgressTest, FormatDuration) {
  EXPECT_EQ(formatDuration(0), "0s");
  EXPECT_EQ(formatDuration(42.4), "42s");
  EXPECT_EQ(formatDuration(59.6), "1m00s");
  EXPECT_EQ(formatDuration(185), "3m05s");
  EXPECT_EQ(formatDuration(3599.4), "59m59s");
  EXPECT_EQ(formatDuration(3720), "1h02m");
  EXPECT_EQ(formatDuration(360000), "100h00m");
  EXPECT_EQ(formatDuration(-5), "0s");
  EXPECT_EQ(formatDuration(std::nan("")), "?");
  EXPECT_EQ(formatDuration(std::numeric_limits<double>::infinity()), "?");
}

TEST_F(ProgressTest, FormatRate) {
  EXPECT_EQ(formatRate(0), "0");
  EXPECT_EQ(formatRate(987.2), "987");
  EXPECT_EQ(formatRate(1234), "1.23k");
  EXPECT_EQ(formatRate(41234.5), "41.2k");
  EXPECT_EQ(formatRate(999999), "1.00M");
  EXPECT_EQ(formatRate(1234567), "1.23M");
  EXPECT_EQ(formatRate(2.5e9), "2.50G");
  EXPECT_EQ(formatRate(std::nan("")), "?");
}

TEST_F(ProgressTest, PlainLinesEveryTwentiethAndLast) {
  ProgressBar bar(out_, 45, 0, /*tty=*/false);
  EXPECT_FALSE(bar.tty());
  EXPECT_EQ(bar.every(), 2);
  for (int64_t step = 1; step <= 45; ++step)
    bar.update(step, 3.0 - 0.01 * static_cast<double>(step), 41234.5);
  bar.finish();
  std::string text = contents(out_);
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(text.find('\033'), std::string::npos);
  std::vector<std::string> lines = splitLines(text);
  ASSERT_EQ(lines.size(), 23u); // steps 2, 4, ..., 44 and the last step 45
  const std::regex format(R"(step +\d+/45  loss \d+\.\d{4}  41\.2k tok/s  elapsed \S+  ETA \S+)");
  for (const std::string &line : lines)
    EXPECT_TRUE(std::regex_match(line, format)) << line;
  EXPECT_EQ(lines.front().rfind("step  2/45  loss 2.9800  ", 0), 0u) << lines.front();
  EXPECT_EQ(lines.back().rfind("step 45/45  loss 2.5500  ", 0), 0u) << lines.back();
  EXPECT_NE(lines.back().find("ETA 0s"), std::string::npos) << lines.back();
}

TEST_F(ProgressTest, PlainSmallTotalAndMessages) {
  ProgressBar bar(out_, 3, 0, /*tty=*/false);
  EXPECT_EQ(bar.every(), 1);
  bar.update(1, 2.5, 100);
  bar.message("eval loss 2.4000");
  bar.update(2, 2.25, 100);
  bar.update(3, 2.0, 100);
  bar.message("saved checkpoint to ckpt/ (step 3)");
  bar.finish();
  std::vector<std::string> lines = splitLines(contents(out_));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0].rfind("step 1/3  loss 2.5000  100 tok/s  elapsed ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1], "eval loss 2.4000");
  EXPECT_EQ(lines[4], "saved checkpoint to ckpt/ (step 3)");
}

TEST_F(ProgressTest, ResumedRunHasNoEtaBeforeItsFirstStep) {
  ProgressBar bar(out_, 100, 50, /*tty=*/false);
  EXPECT_EQ(bar.every(), 2); // 50 steps to run
  bar.update(50, 1.0, 1000);
  bar.update(52, 1.0, 1000);
  std::vector<std::string> lines = splitLines(contents(out_));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("ETA ?"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1].find("ETA ?"), std::string::npos) << lines[1];
}

// Plain lines every 1/20 of the steps this run does, counted from where it resumed.
TEST_F(ProgressTest, ResumedRunPrintsEveryTwentiethOfItsOwnSteps) {
  ProgressBar bar(out_, 1040, 1000, /*tty=*/false);
  EXPECT_EQ(bar.every(), 2);
  for (int64_t step = 1001; step <= 1040; ++step)
    bar.update(step, 1.0, 1000);
  std::vector<std::string> lines = splitLines(contents(out_));
  ASSERT_EQ(lines.size(), 20u);
  EXPECT_EQ(lines.front().rfind("step 1002/1040", 0), 0u) << lines.front();
  EXPECT_EQ(lines.back().rfind("step 1040/1040", 0), 0u) << lines.back();
}

TEST_F(ProgressTest, TtyRedrawsInPlace) {
  ProgressBar bar(out_, 4, 0, /*tty=*/true);
  EXPECT_TRUE(bar.tty());
  bar.update(1, 3.5, 41234.5);
  bar.update(2, 3.25, 41234.5);
  std::string text = contents(out_);
  EXPECT_EQ(countOf(text, "\r"), 2u);
  EXPECT_EQ(text.find('\n'), std::string::npos); // one line, redrawn
  EXPECT_NE(text.find("\r[###############...............] 2/4  loss 3.2500  41.2k tok/s  ETA "),
            std::string::npos)
      << text;

  bar.message("eval loss 3.1000");
  text = contents(out_);
  // The message clears the bar's line, gets its own line, and the bar is drawn again below.
  EXPECT_NE(text.find("\r\033[Keval loss 3.1000\n\r[###############"), std::string::npos) << text;

  bar.update(4, 3.0, 41234.5);
  bar.finish();
  bar.finish(); // idempotent
  text = contents(out_);
  EXPECT_NE(text.find("\r[##############################] 4/4  loss 3.0000"), std::string::npos)
      << text;
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(countOf(text, "\n"), 2u); // the message's and finish()'s

  // After finish(), a message does not redraw the bar.
  bar.message("done");
  EXPECT_EQ(contents(out_).substr(text.size()), "done\n");
}

TEST_F(ProgressTest, DefaultModeOfAFileIsPlain) {
  ProgressBar bar(out_, 10);
  EXPECT_FALSE(bar.tty());
}

class MetricsLogTest : public rp::testing::TempDirTest {};

TEST_F(MetricsLogTest, LinesParseAndLossRoundTrips) {
  {
    std::ofstream old(path("metrics.jsonl"));
    old << "an old run's line\n";
  }
  StatusOr<MetricsLog> log = MetricsLog::open(path("metrics.jsonl"));
  ASSERT_TRUE(log.ok()) << log.status().toString();
  EXPECT_EQ(log->path(), path("metrics.jsonl"));

  // Losses with all 53 mantissa bits in use.
  const double losses[] = {3.8712340831756592, 1.0 / 3.0, std::nextafter(2.0, 3.0)};
  for (int i = 0; i < 3; ++i) {
    StepMetrics m;
    m.step = i + 1;
    m.loss = losses[i];
    m.lr = 3e-4;
    m.tokens = 512;
    m.stepSeconds = 0.0123;
    m.tokensPerSecond = 512 / 0.0123;
    if (i == 1)
      m.evalLoss = 0.1 + 0.2;
    ASSERT_TRUE(log->write(m).ok());
    // Flushed per line: visible to a reader at once.
    EXPECT_EQ(splitLines(readBytes(path("metrics.jsonl"))).size(), size_t(i + 1));
  }
  ASSERT_TRUE(log->writeRaw("{\"summary\": {\n  \"steps\": 3,\n  \"final_loss\": 2.0\n}}").ok());
  ASSERT_TRUE(log->close().ok());

  std::vector<std::string> lines = splitLines(readBytes(path("metrics.jsonl")));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].rfind("{\"step\":1,\"loss\":3.871234083175659,\"lr\":0.0003,\"tokens\":512,"
                           "\"step_s\":0.0123,\"tokens_per_s\":",
                           0),
            0u)
      << lines[0];
  for (int i = 0; i < 3; ++i) {
    nlohmann::json j = nlohmann::json::parse(lines[static_cast<size_t>(i)]);
    EXPECT_EQ(j["step"], i + 1);
    double loss = j["loss"].get<double>();
    EXPECT_EQ(std::memcmp(&loss, &losses[i], sizeof(double)), 0) << lines[static_cast<size_t>(i)];
    EXPECT_EQ(j["lr"].get<double>(), 3e-4);
    EXPECT_EQ(j["tokens"], 512);
    EXPECT_EQ(j.contains("eval_loss"), i == 1);
  }
  EXPECT_EQ(nlohmann::json::parse(lines[1])["eval_loss"].get<double>(), 0.1 + 0.2);
  EXPECT_EQ(lines[3], "{\"summary\":{\"steps\":3,\"final_loss\":2.0}}"); // compact, key order kept
}

TEST_F(MetricsLogTest, NonFiniteValuesAreNull) {
  StatusOr<MetricsLog> log = MetricsLog::open(path("m.jsonl"));
  ASSERT_TRUE(log.ok());
  StepMetrics m;
  m.step = 1;
  m.loss = std::nan("");
  m.tokensPerSecond = std::numeric_limits<double>::infinity();
  ASSERT_TRUE(log->write(m).ok());
  ASSERT_TRUE(log->close().ok());
  nlohmann::json j = nlohmann::json::parse(splitLines(readBytes(path("m.jsonl"))).at(0));
  EXPECT_TRUE(j["loss"].is_null());
  EXPECT_TRUE(j["tokens_per_s"].is_null());
  EXPECT_EQ(j["lr"].get<double>(), 0.0);
}

TEST_F(MetricsLogTest, Errors) {
  StatusOr<MetricsLog> missing = MetricsLog::open(path("no/such/dir/m.jsonl"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::Unavailable);
  EXPECT_NE(missing.status().message().find(path("no/such/dir/m.jsonl")), std::string::npos)
      << missing.status().message();

  StatusOr<MetricsLog> log = MetricsLog::open(path("m.jsonl"));
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->writeRaw("{\"summary\": ").code(), StatusCode::InvalidArgument);
  EXPECT_EQ(log->writeRaw("[1, 2]").code(), StatusCode::InvalidArgument);
  EXPECT_EQ(readBytes(path("m.jsonl")), "");

  // A moved log keeps writing to the same file.
  MetricsLog moved = std::move(*log);
  ASSERT_TRUE(moved.writeRaw("{\"a\":1}").ok());
  ASSERT_TRUE(moved.close().ok());
  EXPECT_TRUE(moved.close().ok()); // idempotent
  Status s = moved.write(StepMetrics{});
  EXPECT_EQ(s.code(), StatusCode::Unavailable);
  EXPECT_EQ(readBytes(path("m.jsonl")), "{\"a\":1}\n");
}

TEST_F(MetricsLogTest, ResumedLogKeepsTheCheckpointsStepsAndAppends) {
  // An interrupted run's log: steps 1-5 written, its checkpoint at step 4, a torn last line.
  writeBytes(path("m.jsonl"), "{\"step\":1,\"loss\":1}\n{\"step\":2,\"loss\":2}\n"
                              "{\"summary\":{\"steps\":2}}\n{\"step\":4,\"loss\":4}\n"
                              "{\"step\":5,\"loss\":5}\n{\"step\":6,\"lo");
  StatusOr<MetricsLog> log = MetricsLog::openResumed(path("m.jsonl"), 4);
  ASSERT_TRUE(log.ok()) << log.status().toString();
  StepMetrics m;
  m.step = 5;
  m.loss = 0.5;
  ASSERT_TRUE(log->write(m).ok());
  ASSERT_TRUE(log->close().ok());
  std::vector<std::string> lines = splitLines(readBytes(path("m.jsonl")));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0], "{\"step\":1,\"loss\":1}");
  EXPECT_EQ(lines[2], "{\"summary\":{\"steps\":2}}"); // lines without a step are kept
  EXPECT_EQ(lines[3], "{\"step\":4,\"loss\":4}");
  EXPECT_EQ(nlohmann::json::parse(lines[4])["loss"].get<double>(), 0.5);

  // Nothing to drop: the file is appended to as it is; a missing file starts empty.
  StatusOr<MetricsLog> again = MetricsLog::openResumed(path("m.jsonl"), 5);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(again->writeRaw("{\"a\":1}").ok());
  ASSERT_TRUE(again->close().ok());
  EXPECT_EQ(splitLines(readBytes(path("m.jsonl"))).size(), 6u);
  StatusOr<MetricsLog> fresh = MetricsLog::openResumed(path("new.jsonl"), 3);
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE(fresh->close().ok());
  EXPECT_EQ(readBytes(path("new.jsonl")), "");
  StatusOr<MetricsLog> bad = MetricsLog::openResumed(path("no/such/dir/m.jsonl"), 3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::Unavailable);
}

} // namespace
} // namespace rp::runtime
